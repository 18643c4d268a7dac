"""The ``odeval`` command line. Each subcommand is a thin shell over a library function."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from odeval import __version__


class _OneLineErrors(click.Group):
    """The root group: a file-system or results-store failure escaping any command is one line, never a
    traceback (the commands catch what they expect; this is the safety net)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except OSError as exc:
            raise click.ClickException(_os_error(exc, "")) from None
        except ValueError as exc:
            from odeval.bench.store import StoreError

            if isinstance(exc, StoreError):
                raise click.ClickException(str(exc)) from None
            raise


def _echo_lines(lines: list[str], *, err: bool = False) -> None:
    """Print each line (nothing for an empty list)."""
    for line in lines:
        click.echo(line, err=err)


def _workers_option(default: int, help_text: str, *, short: bool = True):
    """``--workers`` (``-j``): the degree of parallelism (-1: every core), as ``workers=`` of the library; the
    old name ``--jobs`` stays a hidden alias for one release."""
    import functools

    def check(ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
        if value is not None and (value == 0 or value < -1):
            raise click.BadParameter(f"must be an integer ≥ 1 or -1 (every core), got {value}")
        return value

    def decorate(fn):
        @functools.wraps(fn)
        def merged(*args, workers: int, old_jobs: int | None, **kwargs):
            if old_jobs is not None:
                ctx = click.get_current_context()
                if ctx.get_parameter_source("workers") is not click.core.ParameterSource.DEFAULT:
                    raise click.UsageError("give --workers or its old name --jobs, not both")
                workers = old_jobs
            return fn(*args, workers=workers, **kwargs)

        merged = click.option("--jobs", "old_jobs", type=int, default=None, hidden=True, callback=check)(merged)
        names = ["--workers", "-j"] if short else ["--workers"]
        return click.option(*names, "workers", type=int, default=default, show_default=True, callback=check,
                            help=help_text)(merged)

    return decorate


@click.group(cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="odeval")
def main() -> None:
    """odeval — evaluate unsupervised outlier detection.

    From a folder of datasets to a report: load and prepare benchmark datasets, score them with twelve
    kNN-based detectors over every k, evaluate with every external measure of the literature, and compare.
    """


@main.group()
def datasets() -> None:
    """Inspect, list and prepare outlier datasets."""


@datasets.command("info")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: a JSON list, one object per file.")
@click.option("--label", default=None,
              help="Label attribute / column / variable [default: 'outlier' (ARFF, CSV), 'y' (MAT, NPZ)].")
@click.option("--positive", default=None, help="Label value that marks an outlier (ARFF nominal label, CSV).")
@click.option("--unlabelled", is_flag=True, help="Load without labels.")
@click.option("--max-rows", type=click.IntRange(min=0), default=20, show_default=True,
              help="Attribute table rows per file (0 = all); consecutive attributes with equal ranges share a row.")
def datasets_info(paths: tuple[str, ...], as_json: bool, label: str | None, positive: str | None, unlabelled: bool,
                  max_rows: int) -> None:
    """Print N, d, |O|, outlier %, duplicates, missing values, nominal attributes and attribute ranges.

    PATHS are dataset files (.arff, .mat, .npz, .csv, optionally .gz) or folders (searched recursively).
    Exit code 1 if some file could not be loaded (the others are still shown).
    """
    from rich.console import Console

    from odeval.data import dataset_infos
    from odeval.render.datasets import infos_json, render_info

    infos = dataset_infos(paths, label=label, positive=positive, unlabelled=unlabelled)
    _echo_lines([f"error: {problem}" for problem in infos.problems] + [f"note: {n}" for n in infos.notes], err=True)
    if as_json:
        click.echo(infos_json(infos))
    else:
        console = Console(highlight=False)
        for i, entry in enumerate(infos.entries):
            if "error" in entry:
                click.echo(f"error: {entry['error']}", err=True)
                continue
            if i:
                console.print()
            render_info(entry, console, max_rows=max_rows)
    if infos.failed:
        raise SystemExit(1)


@datasets.command("prepare")
@click.argument("raw", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Output folder: one ARFF (published layout) + one JSON provenance sidecar per variant.")
@click.option("--outlier-classes", default=None, metavar="A,B,...",
              help="Classification data: these classes (comma-separated) are the outliers.")
@click.option("--class-column", default="class", show_default=True, help="Class attribute for --outlier-classes.")
@click.option("--label", default=None, help="Label attribute of RAW [default: 'outlier'; none if --outlier-classes].")
@click.option("--missing", is_flag=True,
              help="Missing values (§4.1): drop the objects missing an attribute if < 10 % miss it, "
                   "else the attribute.")
@click.option("--max-missing", type=click.FloatRange(0, 1, min_open=True), default=0.10, show_default=True,
              help="Attribute-dropping threshold of --missing.")
@click.option("--dedup", is_flag=True, help="Remove repeated feature vectors (first occurrence kept).")
@click.option("--on-conflict", type=click.Choice(["error", "first", "outlier", "inlier", "drop"]), default="error",
              show_default=True, help="When copies of a vector carry different labels.")
@click.option("--categorical", type=click.Choice(["remove", "onehot", "idf", "catremoved", "1ofn"]), default=None,
              help="Nominal attributes: drop, 1-of-n, or IDF ln(N/f_t).")
@click.option("--downsample", "rate", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="Downsample the outliers to this rate r, keeping all inliers: |O| = floor(r/(1-r)|I|).")
@click.option("--n-outliers", type=click.IntRange(min=1), default=None, help="Downsample to this many outliers.")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True,
              help="Independent downsamplings (v01, v02, ...).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the downsampling.")
@click.option("--normalize", "normalization", type=click.Choice(["minmax", "zscore"]), is_flag=False,
              flag_value="minmax", default=None,
              help="Attribute-wise normalisation, last: minmax to [0, 1] (the bare flag) or zscore.")
@click.option("--base", default=None, help="Base name of the variants [default: RAW's name without variant tokens].")
def datasets_prepare(raw: str, out_dir: str, outlier_classes: str | None, class_column: str, label: str | None,
                     missing: bool, max_missing: float, dedup: bool, on_conflict: str, categorical: str | None,
                     rate: float | None, n_outliers: int | None, repeats: int, seed: int,
                     normalization: str | None, base: str | None) -> None:
    """Prepare RAW step by step and write the variants (ARFF + JSON provenance) into OUTPUT.

    Steps run in the order the Campos et al. (2016) collection was made: outlier classes, missing values,
    duplicates, categorical attributes, downsampling (REPEATS draws), normalisation. Example:
    odeval datasets prepare Annthyroid_07.arff --dedup --normalize --downsample 0.05 --repeats 10 -o out/
    """
    from odeval.data import DatasetFormatError, label_note, write_dataset
    from odeval.data.prepare import prepare_file
    from odeval.render.datasets import prepared_steps, prepared_variant

    if rate is not None and n_outliers is not None:
        raise click.UsageError("give at most one of --downsample and --n-outliers")
    try:
        variants = prepare_file(
            raw, label=label, outlier_classes=outlier_classes, class_column=class_column, missing=missing,
            max_missing_fraction=max_missing, dedup=dedup, on_conflict=on_conflict, categorical=categorical,
            rate=rate, n_outliers=n_outliers, repeats=repeats, normalization=normalization, seed=seed, base=base)
    except (DatasetFormatError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    for v in variants:
        try:
            arff, side = write_dataset(v, out_dir)
        except OSError as exc:
            raise click.ClickException(_os_error(exc)) from None
        click.echo(prepared_variant(v, arff, side))
    _echo_lines(prepared_steps(variants[0]))
    _echo_lines([f"note: {raw}: {note}"] if (note := label_note(variants[0])) else [], err=True)


@datasets.command("list")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Data directory [default: $ODEVAL_DATA, else ../shared/datasets; vendored data if none].")
@click.option("--base", multiple=True, help="Base dataset name or glob (repeatable).")
@click.option("--variant", multiple=True, help="Preparation flags, e.g. withoutdupl_norm, withoutdupl, raw.")
@click.option("--pct", type=float, multiple=True, help="Outlier percentage (5 or 0.05).")
@click.option("--version", "version_", type=int, multiple=True, help="Downsampling draw (1..10).")
@click.option("--collection", type=click.Choice(["campos", "odds", "adbench"]), multiple=True)
@click.option("--files", is_flag=True, help="One line per file (implied by any filter).")
@click.option("--missing", "show_missing", is_flag=True, help="Name every missing variant.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (implies --files).")
def datasets_list(data_dir: str | None, base: tuple[str, ...], variant: tuple[str, ...], pct: tuple[float, ...],
                  version_: tuple[int, ...], collection: tuple[str, ...], files: bool, show_missing: bool,
                  as_json: bool) -> None:
    """List the catalogue's datasets present in the data directory, and what is missing."""
    from odeval.data import catalogue as cat
    from odeval.render.datasets import catalogue_presence, variant_lines, variants_json

    try:
        if files or base or variant or pct or version_ or as_json:
            found = cat.select(data_dir, base=base or None, variant=variant or None, pct=pct or None,
                               version=version_ or None, collection=collection or None)
            if as_json:
                click.echo(variants_json(found))
                return
            if not found:
                raise cat.CatalogueError("no dataset matches these filters")
            _echo_lines(variant_lines(found))
            return
        rep = cat.presence(data_dir)
    except cat.CatalogueError as exc:
        raise click.ClickException(str(exc)) from None
    _echo_lines(catalogue_presence(rep, collections=collection, show_missing=show_missing))


@main.group()
def study() -> None:
    """Declare and run studies: datasets × methods × k into a results store."""


@study.command("run")
@click.argument("study_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--store", type=click.Path(dir_okay=False), default=None,
              help="DuckDB results store [default: results.duckdb next to the study file].")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Local worker processes [default: all cores].")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT|local:N", callback=lambda c, p, v: _scheduler(v),
              help="Run on a Dask distributed cluster, or on a Dask LocalCluster of N worker processes started for "
                   "this run (needs the 'dask' extra); the same results.")
@click.option("--quiet", "-q", is_flag=True, help="No live display: one log line per unit on stderr.")
@click.option("--retry-failed", is_flag=True, help="Recompute units that ended with an error before.")
@click.option("--wait", type=click.FloatRange(min=0), default=0.0, metavar="SECONDS",
              help="Wait up to SECONDS for a store another process is using [default: fail at once].")
@click.option("--no-workers-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="With --scheduler: end the run (the store resumes) when the cluster has had no worker for "
                   "SECONDS [default: 120].")
def study_run(study_file: str, store: str | None, workers: int | None, scheduler: str | None, quiet: bool,
              retry_failed: bool, wait: float, no_workers_timeout: float | None) -> None:
    """Run STUDY_FILE (TOML), computing only what the store does not hold yet.

    The whole file is validated first; every problem is reported before any work starts. Exit code 0 when
    every unit succeeded, 1 when some unit failed (listed at the end), 2 for an invalid study.
    """
    if no_workers_timeout is not None and not scheduler:
        raise click.UsageError("--no-workers-timeout is for a Dask cluster: it needs --scheduler")
    from odeval.bench import StudyError, load_study
    from odeval.render.study import failure_lines, run_summary_lines

    try:
        spec = load_study(study_file)
    except StudyError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(2) from None
    store_path = Path(store) if store else Path(study_file).resolve().parent / "results.duckdb"
    summary = _run_study_cli(spec, store_path, workers=workers, scheduler=scheduler, quiet=quiet,
                             retry_failed=retry_failed, wait=wait, no_workers_timeout=no_workers_timeout,
                             resume=["odeval", "study", "run", study_file, "--store", str(store_path)])
    _echo_lines(run_summary_lines(spec, summary, store_path))
    _echo_lines(failure_lines(summary), err=True)
    if summary.failed:
        raise SystemExit(1)


@study.command("check")
@click.argument("study_file", type=click.Path(exists=True, dir_okay=False))
def study_check(study_file: str) -> None:
    """Validate STUDY_FILE and print what it would run."""
    from odeval.bench import StudyError
    from odeval.bench.study_check import check_study
    from odeval.render.study import check_lines

    try:
        check = check_study(study_file)
    except StudyError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(2) from None
    _echo_lines(check_lines(check))


@main.command()
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default="demo-out", show_default=True,
              help="Folder for the results store and the report.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores].")
@click.option("--k", "k_range", default="1..100", show_default=True, help="k range of the demo study.")
@click.option("--quiet", "-q", is_flag=True, help="No live display.")
@click.option("--select/--no-select", "with_select", default=True, show_default=True,
              help="Also the label-free half: odeval select on a vendored dataset with its labels held back.")
def demo(out_dir: str, workers: int | None, k_range: str, quiet: bool, with_select: bool) -> None:
    """Run the built-in demo: a real study on the vendored Campos datasets, all 12 methods, k = 1..100, and
    odeval select on one of them with its labels held back.

    Writes OUT/results.duckdb, the HTML report OUT/report/index.html and the select page
    OUT/report/select/select.html (linked from the report), and prints the method ranking, the recommendation and
    its check against the held-back labels. Runs without the shared benchmark folder; running it again reuses the
    stored results (the selection is rerun: seconds).
    """
    from odeval.analysis.aggregate import store_ranking
    from odeval.bench import study_from_dict
    from odeval.bench.demo import demo_study
    from odeval.render.study import demo_header, demo_summary, ranking_lines

    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.ClickException(_os_error(exc)) from None
    spec = study_from_dict(demo_study(k_range), source="odeval demo")
    store_path = out / "results.duckdb"
    click.echo(demo_header(spec, k_range))
    summary = _run_study_cli(spec, store_path, workers=workers, scheduler=None, quiet=quiet, retry_failed=False,
                             resume=["odeval", "demo", "-o", out_dir, "--k", k_range])
    click.echo(demo_summary(summary, store_path))
    # the report's ranking (Campos et al. Fig. 2): best k per variant, variants of a base dataset averaged first
    _echo_lines(ranking_lines(store_ranking(store_path, "roc_auc")))
    pages = _demo_select(out / "report" / "select") if with_select else []
    _demo_report(store_path, out / "report", pages)
    if summary.failed:
        raise SystemExit(1)


def _demo_select(select_dir: Path) -> list[tuple[str, str, str]]:
    """The demo's label-free half (:func:`odeval.bench.demo.demo_select`): print it, return the report's link."""
    from odeval.bench.demo import demo_select, demo_select_command
    from odeval.render.select import demo_select_lines
    from odeval.report.select_page import write_select_page

    try:
        rec, _, written = demo_select(select_dir, page=write_select_page)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    page = next((p for p in written if p.suffix == ".html"), None)
    _echo_lines(demo_select_lines(rec, demo_select_command(), None if page is None else str(page.resolve())))
    if page is None:
        return []
    check = rec.check["recommended"]
    return [(f"{select_dir.name}/{page.name}", f"odeval select on {rec.dataset['name']} (labels held back)",
             f"recommendation {rec.recommended}; checked afterwards against the labels: ROC AUC "
             f"{check['roc_auc']:.3f}, percentile {check['percentile']:.0f} among the candidates")]


def _demo_report(store_path: Path, report_dir: Path, pages: list[tuple[str, str, str]]) -> None:
    """Write the demo's HTML report (figures need matplotlib: the 'plot' extra)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        click.echo("\nno report: matplotlib is missing (pip install 'odeval[plot]')", err=True)
        return
    from odeval.report import report_from_store

    try:
        index, _ = report_from_store(store_path, report_dir, pages=pages)  # titled by the study's name
    except OSError as exc:
        raise click.ClickException(_os_error(exc)) from None
    click.echo(f"\nreport: {index.resolve()}")


@main.group()
def results() -> None:
    """Read and export a results store."""


@results.command("studies")
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (a JSON list).")
def results_studies(store: str, as_json: bool) -> None:
    """List the studies of a results STORE: hash, units, dataset variants, when, name (oldest first).

    A store holding several studies is reported together unless `odeval report --study HASH|NAME` picks one.
    """
    from odeval.bench import ResultStore
    from odeval.bench.store import StoreError
    from odeval.render.results import studies_json, studies_lines

    try:
        with ResultStore(store, read_only=True) as rs:
            studies = rs.studies()
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(studies_json(studies))
    else:
        _echo_lines(studies_lines(studies, store))


@results.command("export")
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet", show_default=True)
@click.option("--table", type=click.Choice(["runs", "units", "outlier_ranks", "scores", "studies", "study_units",
                                            "labels", "internal_measures"]), default="runs", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Output file [default: STORE's folder/<table>.<format>].")
def results_export(store: str, fmt: str, table: str, output: str | None) -> None:
    """Export one table of a results STORE to Parquet or CSV."""
    from odeval.bench import ResultStore
    from odeval.bench.store import StoreError

    out = Path(output) if output else Path(store).resolve().parent / f"{table}.{fmt}"
    try:
        with ResultStore(store, read_only=True) as rs:
            rs.export(table, out, fmt)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(str(out))


@main.command("evaluate")
@click.option("--scores", "scores_file", type=click.Path(exists=True, dir_okay=False), required=True,
              help="Scores: one per line, a CSV column (see --column), a .npy array, or a table written by "
                   "'odeval score' (.parquet, .csv, .npz: every score column is evaluated); higher = more outlying.")
@click.option("--labels", "labels_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Ground truth: 0/1 per line (a one-column CSV or a .npy array), 1 = outlier.")
@click.option("--dataset", "dataset_file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Take the ground truth from a dataset file (.arff, .mat, .npz, .csv) instead of --labels.")
@click.option("--column", "columns", multiple=True,
              help="Column of a multi-column scores file (header name or 0-based index); repeatable for a table "
                   "written by 'odeval score'.")
@click.option("--n", "n", type=click.IntRange(min=1), default=None, help="Also report P@n and adjusted P@n.")
@click.option("--ascending", is_flag=True, help="Lower score = more outlying (e.g. raw ODIN, FastABOD): negate.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def evaluate_cmd(scores_file: str, labels_file: str | None, dataset_file: str | None, columns: tuple[str, ...],
                 n: int | None, ascending: bool, as_json: bool) -> None:
    """Print every external measure of a scoring (ELKI 0.7.1 tie rules; see docs/measures.md).

    SCORES is a single scoring, or a table written by 'odeval score', whose score columns are all evaluated
    (one row each) with the labels stored in the table unless --labels or --dataset is given. Raw columns of
    methods where low = outlier ('odeval score --raw', e.g. ODIN-005-raw) are negated first.

    Examples: odeval evaluate --scores lof.txt --labels labels.txt --n 10;
    odeval evaluate --scores scores.parquet
    """
    from odeval.measures.files import EvaluationInputError, evaluate_files
    from odeval.render.scores import evaluation_json, evaluation_lines

    if labels_file is not None and dataset_file is not None:
        raise click.UsageError("give at most one of --labels and --dataset")
    try:
        ev = evaluate_files(scores_file, labels_file=labels_file, dataset_file=dataset_file, columns=columns, n=n,
                            ascending=ascending)
    except EvaluationInputError as exc:
        raise click.UsageError(str(exc)) from None
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(evaluation_json(ev))
    else:
        _echo_lines(evaluation_lines(ev))


def _parse_params(items: tuple[str, ...], methods: list[str]) -> dict[str, dict]:
    import json

    params: dict[str, dict] = {m: {} for m in methods}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r}: use NAME=VALUE or METHOD.NAME=VALUE", param_hint="--param")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        method, dot, name = key.rpartition(".")
        if not dot:
            if len(methods) > 1:
                raise click.BadParameter(f"{item!r}: with several methods write METHOD.{key}=VALUE",
                                         param_hint="--param")
            method, name = methods[0], key
        match = [m for m in methods if m.lower() == method.lower()]
        if not match:
            raise click.BadParameter(f"{item!r}: method {method!r} is not among --method {methods}",
                                     param_hint="--param")
        params[match[0]][name] = value
    return params


@main.command("score")
@click.argument("dataset", type=click.Path(exists=True, dir_okay=False))
@click.option("--method", "-m", "methods", multiple=True, required=True,
              help="Detector name (repeatable, case-insensitive): KNN, KNNW, LOF, SimplifiedLOF, LoOP, LDOF, "
                   "ODIN, FastABOD, KDEOS, LDF, INFLO, COF, ... (an unknown name lists all); 'all': every one.")
@click.option("--k", "k_spec", default="1:100", show_default=True,
              help="k values: K, A..B or A:B (inclusive), A..B:STEP, or a list 1,5,10; capped at N − 1.")
@click.option("--metric", default="euclidean", show_default=True,
              help="Distance: euclidean, manhattan, chebyshev, cosine, minkowski (with --p), or another scipy metric.")
@click.option("--p", "p", type=float, default=None, help="Minkowski exponent.")
@click.option("--backend", type=click.Choice(["auto", "exact", "brute", "leaves", "tree", "approx"]), default="auto",
              show_default=True,
              help="kNN search: auto (exact k-d tree or brute force by dimensionality; HNSW only where exact "
                   "cannot keep up), exact, brute, tree, or approx (faiss HNSW, odeval[approx]; recall reported).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the approximate backend.")
@click.option("--param", "param_items", multiple=True, metavar="[METHOD.]NAME=VALUE",
              help="Detector parameter (repeatable), e.g. LoOP.lam=2.0 or variant=elki-0.7.1 (one method).")
@click.option("--raw", is_flag=True, help="Write raw scores (the method's orientation: ODIN low = outlier).")
@click.option("--label-column", "label_column", default=None, metavar="NAME",
              help="Label attribute / column / variable [default: 'outlier' (ARFF, CSV), 'y' (MAT, NPZ)].")
@click.option("--unlabelled", is_flag=True, help="Load DATASET without labels (the table gets no label column).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output file: .parquet, .csv or .npz (by extension).")
@click.option("--scheduler", default=None, metavar="ADDRESS|local:N",
              help="Compute the exact graph and the scores by blocks of objects on a Dask cluster (tcp://HOST:PORT, "
                   "or local:N worker processes); the same numbers as one process (docs/scaling.md).")
@click.option("--blocks", "n_blocks", type=click.IntRange(min=1), default=None,
              help="Blocks of objects with --scheduler [default: 2 per worker].")
@click.option("--no-workers-timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="With --scheduler: stop (one line) when the cluster has had no worker for SECONDS [default: 120].")
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda|cuda:N",
              help="Where the exact kNN graph is computed: cpu, or cuda (PyTorch, odeval[gpu]; the same graph bit "
                   "for bit; Euclidean, Manhattan, Chebyshev). Scoring runs on the CPU.")
def score_cmd(dataset: str, methods: tuple[str, ...], k_spec: str, metric: str, p: float | None, backend: str,
              seed: int, param_items: tuple[str, ...], raw: bool, label_column: str | None, unlabelled: bool,
              output: str, scheduler: str | None = None, n_blocks: int | None = None, device: str = "cpu",
              no_workers_timeout: float | None = None) -> None:
    """Score DATASET with kNN detectors for every k from one exact kNN graph.

    Output table: one row per object (columns object, id, label) and one column per method and k, named
    METHOD-kNNN (e.g. LOF-007); public scores (higher = more outlying), or with --raw the method's own
    scores in columns named METHOD-kNNN-raw. A k that cannot be computed (below a method's minimum, e.g.
    KDEOS: 2; k ≥ N) is skipped with a note on stderr, as in studies; nothing computable is an error.
    .npz holds arrays scores (rows = columns of the table), columns, ks, labels.
    Example: odeval score Waveform.arff -m LOF -m KNN --k 1:100 -o s.parquet
    """
    from odeval.bench.score_file import score_file
    from odeval.detectors import expand_methods
    from odeval.executor import ClusterLostError
    from odeval.render.scores import graph_notes, scored_file_line, skipped_notes

    _check_score_options(output, unlabelled, label_column, k_spec, scheduler, backend, n_blocks, device)
    if no_workers_timeout is not None and not scheduler:
        raise click.UsageError("--no-workers-timeout is for a Dask cluster: it needs --scheduler")
    method_list = expand_methods(methods)
    params = _parse_params(param_items, method_list)
    try:
        scored = score_file(
            dataset, method_list, output, k=k_spec, params=params, metric=metric, p=p, backend=backend, seed=seed,
            raw=raw, load_options={"label": None} if unlabelled else ({"label": label_column} if label_column else {}),
            scheduler=scheduler, n_blocks=n_blocks, device=device, no_workers_timeout=no_workers_timeout,
            on_graph=lambda graph: _echo_lines(graph_notes(graph), err=True),
            on_skipped=lambda method, skipped: _echo_lines(skipped_notes(method, skipped), err=True))
    except (ValueError, ImportError, ClusterLostError) as exc:
        raise click.ClickException(str(exc)) from None
    _echo_lines([f"note: {dataset}: {scored.label_note}"] if scored.label_note else [], err=True)
    click.echo(scored_file_line(scored))


def _check_score_options(output: str, unlabelled: bool, label_column: str | None, k_spec: str,
                         scheduler: str | None, backend: str, n_blocks: int | None, device: str = "cpu") -> None:
    """The usage errors of ``odeval score``: options that do not go together, a bad extension or k."""
    from odeval._krange import parse_k_range
    from odeval.data.score_files import SCORE_TABLE_SUFFIXES

    if Path(output).suffix.lower() not in SCORE_TABLE_SUFFIXES:
        raise click.BadParameter(f"{output}: the extension must be .parquet, .csv or .npz", param_hint="-o")
    if unlabelled and label_column is not None:
        raise click.UsageError("give at most one of --label-column and --unlabelled")
    try:
        parse_k_range(k_spec)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--k") from None
    if scheduler and backend not in ("auto", "exact", "brute"):
        raise click.UsageError(f"--scheduler computes the exact graph by brute force; drop --backend {backend}")
    if not scheduler and n_blocks is not None:
        raise click.UsageError("--blocks needs --scheduler")
    if scheduler and device != "cpu":
        raise click.UsageError(f"--scheduler computes the graph on the Dask workers' CPUs; drop --device {device}")


@main.command("ensemble")
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("--dataset", required=True, help="Dataset variant of the store (runs.dataset).")
@click.option("--rate", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01, show_default=True,
              help="Expected outlier rate: size of the estimated outlier set that guides the greedy search.")
@click.option("--measure", type=click.Choice(["pearson", "manhattan", "sqeuclidean"]), default="pearson",
              show_default=True, help="Weighted distance of the greedy search (pearson: 1 − weighted correlation).")
@click.option("--rule", type=click.Choice(["mean", "max", "min", "median", "product", "inverse_product", "rank"]),
              default="mean", show_default=True, help="Combination rule of the ensemble members.")
@click.option("--random", "n_random", type=click.IntRange(min=2), default=1000, show_default=True,
              help="Random ensembles of the same size (control group).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random ensembles.")
@click.option("--methods", multiple=True, metavar="M1,M2,...",
              help="Only these methods (comma-separated or repeated; 'all': every stored one) [default: all stored].")
@click.option("--k-range", default=None, metavar="A..B[:STEP]",
              help="Only these k (scorings without k stay) [default: all stored].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def ensemble_cmd(store: str, dataset: str, rate: float, measure: str, rule: str, n_random: int, seed: int,
                 methods: tuple[str, ...], k_range: str | None, as_json: bool) -> None:
    """Greedy outlier ensemble of the stored scorings of one dataset (Schubert et al. 2012, Sect. 4.3).

    Reads the score vectors the study kept (study option keep_scores = true), normalises each with
    odeval.scaling.unify, selects the ensemble without labels and prints a Table-4-style comparison with the
    best single scoring, the naive ensemble of all scorings and random ensembles of the same size.
    """
    from odeval._krange import parse_k_range
    from odeval.bench.ensembles import ensemble_from_store
    from odeval.detectors.base import ALL_METHODS
    from odeval.render.ensembles import ensemble_json, format_ensemble

    try:
        ks = parse_k_range(k_range).values() if k_range is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--k-range") from None
    wanted = [m.strip() for item in methods for m in item.split(",") if m.strip()] or None
    if wanted and ALL_METHODS in (m.lower() for m in wanted):
        wanted = None
    try:
        result = ensemble_from_store(store, dataset, rate=rate, measure=measure, rule=rule, n_random=n_random,
                                     seed=seed, methods=wanted, ks=ks)
    except ValueError as exc:  # StoreError is a ValueError: missing, not DuckDB, in use by PID N, old schema
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(ensemble_json(result))
    else:
        click.echo(format_ensemble(result))


@main.command("report")
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder to write the report to (index.html, datasets/, tables/).")
@click.option("--measure", default="roc_auc", show_default=True, help="Measure of the ranking, tests and plots.")
@click.option("--statistic", type=click.Choice(["best", "window_mean", "mean_over_k"]), default="best",
              show_default=True, help="Aggregate compared by the Friedman / Nemenyi tests.")
@click.option("--study", default=None, metavar="HASH|NAME",
              help="Report only this study of the store (its hash, a hash prefix or its name; odeval results studies).")
@click.option("--study-hash", default=None, help="Report only the study with this exact hash.")
@click.option("--title", default=None, help="Title of the report [default: the study's name].")
@click.option("--simulations", type=click.IntRange(min=1), default=200, show_default=True,
              help="Simulations of the random-ranker baselines.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the random-ranker baselines and the label permutation test.")
@click.option("--permutations", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Label permutations per variant (needs the store's best-k scores; 0 = skip the test).")
@click.option("--min-outlier-pct", type=float, default=None, help="Only variants with at least this % of outliers.")
@click.option("--max-outlier-pct", type=float, default=None, help="Only variants with at most this % of outliers.")
@click.option("--normalized/--not-normalized", default=None, help="Only (not) normalised variants [default: all].")
@click.option("--deduplicated/--with-duplicates", default=None, help="Only variants without / with duplicates.")
@click.option("--ensembles/--no-ensembles", default=True, show_default=True,
              help="Similarity matrix and greedy ensemble per base dataset (needs the store's score vectors).")
@click.option("--selection", default=None, metavar="all|N",
              help="Add the label-free model-selection audit (odeval select-audit) with these candidates.")
def report_cmd(store: str, out_dir: str, measure: str, statistic: str, study: str | None, study_hash: str | None,
               title: str | None, simulations: int, seed: int, permutations: int, min_outlier_pct: float | None,
               max_outlier_pct: float | None, normalized: bool | None, deduplicated: bool | None,
               ensembles: bool, selection: str | None) -> None:
    """Write a static HTML report of the results STORE (a DuckDB file with tables runs, outlier_ranks).

    The report opens from disk with no server or network: study summary, method ranking with Friedman and
    Nemenyi tests, dataset map, one page per base dataset, and CSV exports of every table. The label
    permutation test runs when the store kept the score vectors (study option keep_scores).
    """
    from odeval.report import report_from_store

    try:
        index, messages = report_from_store(
            store, out_dir, measure=measure, statistic=statistic, study_hash=study_hash, title=title,
            simulations=simulations, seed=seed, permutations=permutations, min_outlier_pct=min_outlier_pct,
            max_outlier_pct=max_outlier_pct, normalized=normalized, deduplicated=deduplicated, ensembles=ensembles,
            selection=selection, study=study)
    except ValueError as exc:  # StoreError is a ValueError: missing, not DuckDB, in use by PID N, old schema
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(_os_error(exc)) from None
    for message in messages:
        click.echo(f"warning: {message}", err=True)
    click.echo(f"report written to {index}")


class _SettingDefault:
    """The default of a click option: a field of a label-free settings dataclass
    (:class:`odeval.labelfree.ireos.IREOSSettings`, :class:`odeval.labelfree.emmv_algorithm.EMMVSettings`), where
    it is declared once. Read when the command runs or shows its help, not when the CLI starts: importing the
    label-free stage costs seconds that every other command would pay."""

    def __init__(self, settings: str, field: str) -> None:
        self.settings, self.field = settings, field

    def __call__(self) -> object:
        import odeval.labelfree as labelfree

        return getattr(getattr(labelfree, self.settings)(), self.field)

    def __str__(self) -> str:  # what --help shows
        return str(self())


@main.command("emmv")
@click.argument("dataset", type=click.Path(exists=True, dir_okay=False))
@click.option("--detector", "-d", required=True, metavar="iforest|ocsvm|lof|METHOD",
              help="Detector refitted on every feature draw: scikit-learn iforest / ocsvm / lof (novelty=True), or "
                   "an odeval method with a novelty form (kNN, kNNW, LOF, SimplifiedLOF, LoOP, LDOF).")
@click.option("--k", type=click.IntRange(min=1), default=20, show_default=True, help="k of lof / odeval methods.")
@click.option("--setting", type=click.Choice(["novelty", "unsupervised"]), default=None,
              help="novelty: fit on normal training data, EM/MV on normal test data (needs labels); unsupervised: "
                   "polluted data [default: novelty if DATASET has labels, else unsupervised].")
@click.option("--split/--no-split", default=True, show_default=True,
              help="50/50 train/test split; --no-split (unsupervised only): fit and evaluate on the same data.")
@click.option("--draws", "-m", type=int, default=_SettingDefault("EMMVSettings", "draws"), show_default=True,
              help="Feature draws m (when d > --max-dim).")
@click.option("--features", type=int, default=_SettingDefault("EMMVSettings", "features"), show_default=True,
              help="Features per draw d'.")
@click.option("--max-dim", type=click.IntRange(min=0), default=_SettingDefault("EMMVSettings", "max_dim"),
              show_default=True, help="Largest d evaluated with all features (no sub-sampling).")
@click.option("--n-generated", type=int, default=_SettingDefault("EMMVSettings", "n_generated"), show_default=True,
              help="Uniform points per evaluation.")
@click.option("--box", type=click.Choice(["author", "train_test"]), default=_SettingDefault("EMMVSettings", "box"),
              show_default=True, help="author: the authors' box and grids per setting (all the data when d <= "
              "--max-dim; each draw's evaluated objects, finer grids when sub-sampling); train_test: the fitted "
              "and evaluated objects, standard grids (odeval before issue 26).")
@click.option("--sampling", type=click.Choice(["auto", "uniform", "nested"]),
              default=_SettingDefault("EMMVSettings", "sampling"), show_default=True,
              help="uniform: the volume points uniform in the box (the chapter); nested: importance-weighted over "
              "nested quantile boxes of the evaluated objects (estimable on zero-inflated, skewed attributes); "
              "auto: uniform, each draw whose EM / MV is not estimable redone (EM: exact integration where the "
              "grid is the cause, then nested points), each draw's method reported.")
@click.option("--integration", type=click.Choice(["grid", "exact"]), default="grid", show_default=True,
              help="grid: the authors' t / alpha grids; exact: exact integrals of the empirical curves.")
@click.option("--max-outlier-ratio", type=float, default=0.1, show_default=True,
              help="Cap the outliers at this fraction of the inliers (the chapter: 10 %).")
@click.option("--min-distinct", type=click.IntRange(min=0), default=10, show_default=True,
              help="Drop attributes with fewer distinct values (the chapter: 10; 0 keeps all).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds split, draws, uniform points, detector.")
@_workers_option(1, "Feature draws evaluated in parallel by local processes (-1: every core; same result for "
                    "any value).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def emmv_cmd(dataset: str, detector: str, k: int, setting: str | None, split: bool, draws: int, features: int,
             max_dim: int, n_generated: int, box: str, sampling: str, integration: str, max_outlier_ratio: float,
             min_distinct: int, seed: int, workers: int, as_json: bool) -> None:
    """Label-free Excess-Mass / Mass-Volume criteria of a detector on DATASET (Goix 2016).

    The chapter's protocol: outliers capped, non-continuous attributes dropped, standardised, 50/50 split;
    feature sub-sampling (m draws of d' features) when d > --max-dim. EM: larger = better; MV: smaller =
    better. ROC / PR AUC of the test half are shown next to them. See docs/emmv.md.
    """
    from odeval.labelfree import EMMVSettings
    from odeval.protocols.emmv_chapter import evaluate_dataset
    from odeval.render.labelfree import render_emmv

    bar = _DrawsBar(f"EM/MV {detector}", hidden=as_json)
    try:
        if draws < 1:
            raise ValueError(f"--draws must be at least 1, got {draws}")
        if features < 1:
            raise ValueError(f"--features must be at least 1, got {features}")
        settings = EMMVSettings(draws=draws, features=features, max_dim=max_dim, n_generated=n_generated, box=box,
                                sampling=sampling)
        with bar:
            ev = evaluate_dataset(dataset, detector, k=k, setting=setting, split=split, settings=settings,
                                  integration=integration, max_outlier_ratio=max_outlier_ratio,
                                  min_distinct=min_distinct, seed=seed, workers=workers, progress=bar.update)
    except (ValueError, ImportError, OSError) as exc:
        raise click.ClickException(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    _echo_lines([f"note: {dataset}: {ev.label_note} (setting {ev.setting})"] if ev.label_note else [], err=True)
    click.echo(render_emmv(ev, as_json=as_json))


class _DrawsBar:
    """A click progress bar on stderr over EM/MV's feature draws, opened at the first draw (their number is known
    only once the data are prepared)."""

    def __init__(self, label: str, *, hidden: bool) -> None:
        self.label, self.hidden, self.bar = label, hidden, None

    def update(self, done: int, total: int) -> None:
        import sys

        if self.bar is None:
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr, hidden=self.hidden)
            self.bar.__enter__()
        self.bar.update(1)

    def __enter__(self) -> _DrawsBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(*exc)


@main.command("ireos")
@click.argument("dataset", type=click.Path(exists=True, dir_okay=False))
@click.option("--scores", "scores_src", type=click.Path(exists=True, dir_okay=False), required=True,
              help="A table written by 'odeval score' (.parquet/.csv/.npz) or a results STORE (DuckDB) that kept "
                   "score vectors (study option keep_scores).")
@click.option("--column", "columns", multiple=True, help="Evaluate only these columns/scorings (repeatable).")
@click.option("--store-dataset", default=None, help="Variant name in the STORE [default: DATASET's file stem].")
@click.option("--candidates", type=click.IntRange(min=2), default=None,
              help="Keep this many candidates spread over ROC AUC (needs labels; Sect. 4.2 of the paper uses 10).")
@click.option("--mcl", type=str, default=_SettingDefault("IREOSSettings", "m_cl"), show_default=True,
              help="Maximum clump size: 1, sqrt5 (= sqrt(5%% N)) or a number.")
@click.option("--adjust", is_flag=True, help="Adjust for chance (Eq. 13); m_cl = 1 classifies every object.")
@click.option("--pvalue", is_flag=True, help="One-sided p-values against random solutions.")
@click.option("--null", "null_model", type=click.Choice(["uniform", "permutation"]),
              default=_SettingDefault("IREOSSettings", "null"), show_default=True,
              help="Random scorings of --pvalue and of --adjust with m_cl > 1: i.i.d. uniform weights (the paper, "
              "App. A.1.1) or permutations of each scoring's own weights.")
@click.option("--classifier", type=click.Choice(["pinned", "optimum"]),
              default=_SettingDefault("IREOSSettings", "classifier"), show_default=True,
              help="Separabilities of the authors' reference code (its KLR with the positive multiplier pinned; "
              "reproduces their gamma_max) or of the exact KLR optimum (odeval before 2026-11).")
@click.option("--knn", type=click.IntRange(min=1), default=None,
              help="Train each classifier on the object's k nearest neighbours (the paper: 250) [default: exact up "
                   "to --exact-max objects, else 250].")
@click.option("--exact", is_flag=True, help="The exact index whatever N (each classifier costs O(N^3): hours at N = "
                                            "5,000).")
@click.option("--exact-max", type=click.IntRange(min=1),
              default=_SettingDefault("IREOSSettings", "exact_max_objects"), show_default=True,
              help="Largest N computed exactly by default; above it the kNN-subset approximation (knn = 250).")
@click.option("--quadrature", type=click.Choice(["adaptive", "fixed"]),
              default=_SettingDefault("IREOSSettings", "quadrature"), show_default=True)
@click.option("--n-gamma", type=click.IntRange(min=2), default=_SettingDefault("IREOSSettings", "n_gamma"),
              show_default=True, help="Points of the fixed grid.")
@click.option("--tol", type=click.FloatRange(min=0, min_open=True), default=_SettingDefault("IREOSSettings", "tol"),
              show_default=True, help="Error tolerance of the adaptive quadrature (Eq. 14).")
@click.option("--gamma-max", type=float, default=None, help="Upper kernel width [default: searched, Sect. 3.4].")
@click.option("--gamma-max-quantile", type=click.FloatRange(min=0, max=1, min_open=True),
              default=_SettingDefault("IREOSSettings", "gamma_max_quantile"), show_default=True,
              help="Search gamma_max until this fraction of the candidates' outliers is "
              "separable (1 = the paper's rule; lower for near-duplicates, see docs/ireos.md).")
@click.option("--C", "cost", type=click.FloatRange(min=0, min_open=True), default=_SettingDefault("IREOSSettings", "C"),
              show_default=True)
@_workers_option(1, "Classifier workers (threads; local processes with --processes; -1: every core).",
                 short=False)
@click.option("--processes", is_flag=True, help="Run the classifiers in --workers local processes.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run the classifiers on a Dask cluster (tcp://host:port), as `study run --scheduler`.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--device", default="cpu", show_default=True, metavar="cpu|cuda|cuda:N",
              help="Where the exact index's block solver runs (with --exact and the pinned classifier): cpu, or a "
                   "CUDA device through PyTorch (pip install 'odeval[gpu]').")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def ireos_cmd(dataset: str, scores_src: str, columns: tuple[str, ...], store_dataset: str | None,
              candidates: int | None, mcl: str, adjust: bool, pvalue: bool, null_model: str, classifier: str,
              knn: int | None,
              exact: bool, exact_max: int, quadrature: str,
              n_gamma: int, tol: float, gamma_max: float | None, gamma_max_quantile: float, cost: float, workers: int,
              processes: bool, scheduler: str | None, seed: int, device: str, as_json: bool) -> None:
    """IREOS of candidate outlier scorings of DATASET, without labels (Marques et al. 2020; docs/ireos.md).

    Prints one row per scoring, sorted by the index, the pick marked: the index, and with --adjust / --pvalue the
    chance-adjusted index and the p-value; ROC AUC too when labels are known (for comparison only: IREOS never uses
    them; DATASET needs no label column). Then what the p-values can tell, and a warning when gamma_max ended high.

    Example: odeval ireos wbc.arff --scores scores.parquet --mcl sqrt5 --adjust --pvalue
    """
    from odeval.analysis.labelfree import ireos_of_scorings
    from odeval.labelfree import IREOSSettings
    from odeval.render.labelfree import render_ireos

    if exact and knn is not None:
        raise click.UsageError("give at most one of --exact and --knn")
    try:
        settings = IREOSSettings(m_cl=int(mcl) if mcl.isdigit() else mcl, C=cost, gamma_max=gamma_max,
                                 gamma_max_quantile=gamma_max_quantile, quadrature=quadrature, n_gamma=n_gamma,
                                 tol=tol, knn=knn or (None if exact else "auto"), exact_max_objects=exact_max,
                                 null=null_model, classifier=classifier)
        run = _with_progress(lambda progress: ireos_of_scorings(
            dataset, scores_src, columns=columns, store_dataset=store_dataset, candidates=candidates,
            settings=settings, adjust=adjust, p_values=pvalue, seed=seed, workers=workers, progress=progress,
            executor=scheduler or ("processes" if processes else None), device=device), quiet=as_json)
    except (ValueError, OSError, ImportError) as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None
    _echo_lines([f"note: {dataset}: {note}" for note in (run.label_note, run.result.approximated) if note], err=True)
    if run.skipped:
        click.echo(f"warning: skipped {len(run.skipped)} scoring(s) with NaN/inf: " + ", ".join(run.skipped), err=True)
    click.echo(render_ireos(run, as_json=as_json))


def _with_progress(run, *, quiet: bool):
    """Run ``run(progress)`` with a live count of trained classifiers on stderr (rich), unless ``quiet``."""
    if quiet:
        return run(None)
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("IREOS {task.fields[stage]}: {task.completed} classifiers"),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("ireos", total=None, stage="")
        return run(lambda stage, n: bar.update(task, completed=n, stage=stage))


@main.command("select-audit")
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("--candidates", default="all", show_default=True, metavar="all|N",
              help="Candidates per variant: every stored method × k, or N (10: the paper's best, worst and evenly "
                   "spaced ROC AUC, Marques et al. 2020 §4.2).")
@click.option("--selectors", multiple=True, metavar="S1,S2,...",
              help="Selectors to audit (comma-separated or repeated) [default: all registered but the costly em, "
                   "mv: name them].")
@click.option("--datasets", "only", multiple=True, metavar="D1,D2,...", help="Only these variants [default: all].")
@click.option("--measure", type=click.Choice(["roc_auc", "average_precision", "adjusted_average_precision"]),
              default="roc_auc", show_default=True, help="Measure of the summary, tests and verdicts.")
@click.option("--blocks", type=click.Choice(["dataset", "base_dataset"]), default="dataset", show_default=True,
              help="Blocks of the Friedman/Nemenyi test: variants, or base datasets (variants averaged).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of randomised selectors.")
@click.option("--per-variant", is_flag=True, help="Also print the pick of every selector on every variant.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False), default=None,
              help="Also write an HTML page with the tables and figures (IREOS Fig. 9 style) to this folder.")
@click.option("--compute-missing", is_flag=True,
              help="With picks stored by a study ([selection]): compute the selectors / variants not stored from "
                   "the kept score vectors.")
@click.option("--emmv-draws", type=click.IntRange(min=1), default=_SettingDefault("EMMVSettings", "draws"),
              show_default=True, help="Feature draws of the em / mv selectors (fewer: a coarser, faster audit).")
@click.option("--emmv-n-generated", type=click.IntRange(min=1), default=_SettingDefault("EMMVSettings", "n_generated"),
              show_default=True, help="Uniform points per evaluation of the em / mv selectors.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def select_audit_cmd(store: str, candidates: str, selectors: tuple[str, ...], only: tuple[str, ...], measure: str,
                     blocks: str, seed: int, per_variant: bool, report_dir: str | None, compute_missing: bool,
                     emmv_draws: int, emmv_n_generated: int, as_json: bool) -> None:
    """Audit label-free model selection on a study STORE.

    Every selector (model centrality, HITS, SELECT, ensembles, fixed defaults, random) picks a candidate of each
    variant without labels; the labels then judge the pick against the candidates (min / mean / max,
    percentile), with Wilcoxon tests against the baselines and Friedman + Nemenyi across selectors. Uses the
    picks a study stored (its [selection] table) when there are any, else computes them from the kept score
    vectors. See docs/model-selection.md.
    """
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from odeval.analysis.selection import audit_store
    from odeval.labelfree import EMMVSettings
    from odeval.render.labelfree import render_select_audit

    if candidates != "all" and not (candidates.isdigit() and int(candidates) > 0):
        raise click.BadParameter(f"use 'all' or a positive integer, got {candidates!r}", param_hint="--candidates")
    wanted = [s.strip() for item in selectors for s in item.split(",") if s.strip()] or None
    keep = [d.strip() for item in only for d in item.split(",") if d.strip()] or None
    coarse = EMMVSettings(draws=emmv_draws, n_generated=emmv_n_generated)
    try:
        with Progress(TextColumn("[bold]variants"), BarColumn(), TimeElapsedColumn(),
                      TextColumn("{task.fields[current]}"), transient=True, disable=as_json) as prog:
            task = prog.add_task("variants", total=None, current="")
            audit, source, messages = audit_store(
                store, wanted, candidates=candidates, measure=measure, seed=seed, blocks=blocks, datasets=keep,
                compute_missing=compute_missing, progress=lambda d: prog.update(task, advance=1, current=d),
                settings={"em": coarse, "mv": coarse})
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None
    for message in messages:
        click.echo(f"warning: {message}", err=True)
    index = None
    if report_dir is not None:
        from odeval.report.selection import write_selection_report

        index = write_selection_report(audit, report_dir)
    click.echo(render_select_audit(audit, source, per_variant=per_variant, as_json=as_json, report_index=index))


@main.command("protocol-audit")
@click.argument("dataset", type=click.Path(exists=True, dir_okay=False))
@click.option("--detector", "-d", required=True,
              help="ocsvm, iforest, lof-novelty (scikit-learn) or an odeval method with a novelty form "
                   "(kNN, kNNW, LOF, SimplifiedLOF, LoOP, LDOF; needs --k).")
@click.option("--param", "param_items", multiple=True, metavar="NAME=VALUE",
              help="Detector parameter (repeatable), e.g. nu=0.9 gamma=auto (values parsed as JSON when possible).")
@click.option("--k", "k", type=int, default=None, help="Neighbourhood size of odeval methods (and lof-novelty).")
@click.option("--runs", type=int, default=100, show_default=True, help="Runs per setting.")
@click.option("--sweep-runs", type=int, default=10, show_default=True, help="Runs of the Fig. 4 sweep (0: skip).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of all runs (results are reproducible).")
@_workers_option(-1, "Worker processes (-1: all local cores); results do not depend on it.")
@click.option("--normalize", type=click.Choice(["minmax", "zscore", "none"]), default="minmax", show_default=True,
              help="Normalisation fitted on the clean training objects.")
@click.option("--stratify", is_flag=True, help="Stratified train/test splits.")
@click.option("--label", default=None, help="Label attribute/key of the dataset file (loader default otherwise).")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for table1.csv, runs.csv, sweep.csv and sweep.png.")
@click.option("--json", "as_json", is_flag=True, help="Print Table 1 as JSON rows instead of text.")
def protocol_audit_cmd(dataset: str, detector: str, param_items: tuple[str, ...], k: int | None, runs: int,
                       sweep_runs: int, seed: int, workers: int, normalize: str, stratify: bool, label: str | None,
                       out_dir: str, as_json: bool) -> None:
    """Audit how train/test protocols inflate F1 and AVPR (Fourure et al. 2021).

    Runs Table 1's four settings (Algorithm 1 at 20 % test size; Algorithm 2 at 20 % and 5 %; the F1-optimal
    threshold at 5 %) with DETECTOR on DATASET, writes the contamination sweep (Fig. 4) as CSV and PNG, and
    states which reported numbers a protocol inflates and by how much.
    """
    import sys

    from odeval.protocols.audit import audit_file
    from odeval.render.protocols import audit_json, audit_lines

    params = _parse_params(param_items, [detector])[detector]
    try:
        audited = audit_file(
            dataset, detector, params, k=k, runs=runs, sweep_runs=sweep_runs, seed=seed, workers=workers,
            normalize=None if normalize == "none" else normalize, stratify=stratify, label=label, out_dir=out_dir,
            progress_bar=lambda total: click.progressbar(length=total, label="protocol runs", file=sys.stderr))
    except (ValueError, FileNotFoundError, ImportError, TypeError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(audit_json(audited))
    else:
        _echo_lines(audit_lines(audited))


def _os_error(exc: OSError, verb: str = "cannot write") -> str:
    """One line naming the path and the cause of a file-system error (no traceback)."""
    cause = exc.strerror.rstrip(".").lower() if exc.strerror else str(exc)
    where = exc.filename if exc.filename is not None else "(no file name)"
    return f"{verb} {where}: {cause}".lstrip()


def _scheduler(value: str | None) -> str | None:
    """The --scheduler of `study run`, a bad local:N refused in one line."""
    from odeval.executor import parse_local

    try:
        parse_local(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--scheduler") from None
    return value


def _run_study_cli(spec, store_path: Path, *, workers: int | None, scheduler: str | None, quiet: bool,
                   retry_failed: bool, resume: list[str], wait: float = 0.0,
                   no_workers_timeout: float | None = None):
    """Run a study for ``study run`` and ``demo``: one-line store errors; Ctrl-C says what is saved and how to
    resume (exit code 130)."""
    from odeval.bench import run_study
    from odeval.bench.runner import StudyInterrupted
    from odeval.bench.store import StoreError
    from odeval.executor import ClusterLostError
    from odeval.render.study import interrupted_lines

    try:
        return run_study(spec, store_path, workers=workers, scheduler=scheduler,
                         progress="log" if quiet else "rich", retry_failed=retry_failed, wait=wait,
                         no_workers_timeout=no_workers_timeout)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    except ClusterLostError as exc:  # finished units are in the store: the same command resumes
        raise click.ClickException(f"{exc}; the finished units are in {store_path}: run the same command again "
                                   "(on a scheduler that is up, or without --scheduler) to compute the rest") from None
    except StudyInterrupted as exc:
        command = list(resume)
        if workers is not None:
            command += ["--workers", str(workers)]
        if scheduler:
            command += ["--scheduler", scheduler]
        _echo_lines(interrupted_lines(exc.summary, store_path, command), err=True)
        raise SystemExit(130) from None


@main.command("select")
@click.argument("data", type=click.Path(exists=True, dir_okay=False))
@click.option("--check-labels", default=None, metavar="COLUMN|FILE",
              help="Evaluate the recommendation afterwards against labels the selection never sees.")
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Write scores (pick, probability, ensemble), select.json and select.html into this new folder.")
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), default="csv", show_default=True)
@click.option("--normalize", type=click.Choice(["minmax", "zscore", "none"]), default="minmax", show_default=True)
@click.option("--missing", type=click.Choice(["refuse", "drop"]), default="refuse", show_default=True,
              help="Missing values: refuse, or drop them by the rule of Campos et al. 2016, §4.1.")
@click.option("--categorical", type=click.Choice(["onehot", "idf", "remove"]), default="onehot", show_default=True)
@click.option("--dedup", is_flag=True, help="Remove exact duplicates (always counted).")
@click.option("--drop-constant", is_flag=True, help="Drop constant attributes instead of refusing the table.")
@click.option("--selector", "primary", default="record", show_default=True,
              help="Whose choice is the recommendation: 'record' (best record on the Campos collection) or a name.")
@click.option("--no-ireos", is_flag=True, help="Skip IREOS and the guarded rule (the costly part).")
@click.option("--k-max", type=click.IntRange(min=1), default=_SettingDefault("SelectSettings", "k_max"),
              show_default=True, help="Largest k of the pool.")
@click.option("--top-n", type=click.IntRange(min=1), default=_SettingDefault("SelectSettings", "top_n"),
              show_default=True)
@click.option("--resamples", type=click.IntRange(min=0), default=_SettingDefault("SelectSettings", "resamples"),
              show_default=True)
@click.option("--method", "methods", multiple=True, metavar="SPEC",
              help="Add a detector to the pool (repeatable), spelled as a study's [[methods]] entry: a registered "
                   "name, an import path (pyod.models.iforest:IForest) or an inline table '{estimator = \"...\", "
                   "grid = {n_estimators = [50, 100]}, seeds = 3}' (docs/select.md).")
@click.option("--no-campos", is_flag=True, help="Leave the twelve Campos methods out: the pool is the --method ones.")
@_workers_option(1, "IREOS classifier threads (-1: every core).", short=False)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def select_cmd(data: str, check_labels: str | None, out_dir: str | None, fmt: str, as_json: bool,
               **options: Any) -> None:
    """Recommend a detector and k for DATA without labels, with how far to trust it (docs/select.md).

    DATA: CSV, TSV, Parquet, ARFF, NPZ or MAT; a label column is left out of the features.

    Example: odeval select table.csv --check-labels outlier -o select-out
    """
    import json

    from odeval.labelfree.table import select_file, write_outputs
    from odeval.render.select import format_recommendation, select_progress
    from odeval.report.select_page import write_select_page

    try:
        settings = _select_settings(options, details=out_dir is not None)
        if out_dir is not None and Path(out_dir).exists() and any(Path(out_dir).iterdir()):
            raise ValueError(f"{out_dir}: exists and is not an empty folder; give a new one")
        with select_progress(not as_json) as progress:
            rec, notes = select_file(data, check_labels=check_labels, settings=settings, progress=progress)
        written = write_outputs(rec, out_dir, fmt=fmt, page=write_select_page) if out_dir is not None else []
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:
        click.echo("\ninterrupted: nothing was written", err=True)
        raise SystemExit(130) from None
    if as_json:
        click.echo(json.dumps({**rec.to_dict(), "notes": notes, "written": [str(p) for p in written]}, indent=1,
                              ensure_ascii=False))
        return
    click.echo(format_recommendation(rec, notes))
    for p in written:
        click.echo(f"wrote {p}")


def _select_settings(o: dict[str, Any], *, details: bool) -> Any:
    """The :class:`odeval.labelfree.SelectSettings` of ``odeval select``'s options (``ValueError`` on bad input:
    a ``--method`` entry is named with the cause)."""
    from odeval.labelfree import GuardedSettings, SelectSettings
    from odeval.labelfree.recommend import parse_pool_methods

    parse_pool_methods(o["methods"], option="--method")  # a bad entry: one line naming --method and the cause
    return SelectSettings(normalize=None if o["normalize"] == "none" else o["normalize"], missing=o["missing"],
                          categorical=o["categorical"], dedup=o["dedup"],
                          constant="drop" if o["drop_constant"] else "refuse", primary=o["primary"],
                          ireos=not o["no_ireos"], k_max=o["k_max"], top_n=o["top_n"], resamples=o["resamples"],
                          seed=o["seed"], guarded=GuardedSettings(workers=o["workers"]), details=details,
                          methods=tuple(o["methods"]), campos=not o["no_campos"])


@main.command("warmup")
@click.option("--method", "-m", "methods", multiple=True,
              help="Detector to compile (repeatable; 'all': every one) [default: all]; the kNN graph kernels are "
                   "always compiled.")
@click.option("--no-novelty", is_flag=True, help="Skip the novelty-mode (query) kernels.")
def warmup_cmd(methods: tuple[str, ...], no_novelty: bool) -> None:
    """Compile the numba kernels once and store them in numba's on-disk cache (run at install time).

    Without it, the first run after an install pays the compilation (see docs/scaling.md, "First run").
    """
    import time

    from odeval.detectors.warmup import warmup

    t = time.perf_counter()
    try:
        warmup(list(methods) or None, novelty=not no_novelty, log=lambda line: click.echo(f"  {line}"))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    from odeval.measures import ScoringEvaluator

    t_eval = time.perf_counter()
    ScoringEvaluator([True, False, False])([1.0, 0.5, 0.5])  # the study runner's evaluation kernel
    click.echo(f"  evaluation: {time.perf_counter() - t_eval:.1f}s")
    click.echo(f"kernels compiled and cached in {time.perf_counter() - t:.1f}s")


if __name__ == "__main__":  # pragma: no cover
    main()
