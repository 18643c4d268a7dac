"""The ``odeval`` command line. Each subcommand is a thin shell over a library function."""

from __future__ import annotations

from pathlib import Path

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
    import json
    from pathlib import Path

    from rich.console import Console

    from odeval.data import DatasetFormatError, dataset_info, load_dataset
    from odeval.data._info import render_info
    from odeval.data.loaders import SUPPORTED_FORMATS, dataset_format

    files: list[Path] = []
    failed = False
    for p in map(Path, paths):
        if p.is_dir():
            found = []
            for f in sorted(p.rglob("*")):
                try:
                    if f.is_file() and dataset_format(f) in SUPPORTED_FORMATS:
                        found.append(f)
                except DatasetFormatError:
                    continue
            if not found:
                failed = True
                click.echo(f"error: no dataset files ({', '.join('.' + x for x in SUPPORTED_FORMATS)}) in {p}",
                           err=True)
            files.extend(found)
        else:
            files.append(p)
    console = Console(highlight=False)
    out: list[dict] = []
    for i, f in enumerate(files):
        options: dict = {}
        try:
            fmt = dataset_format(f)
            if unlabelled:
                options["label"] = None
            elif label is not None:
                options["label"] = label
            if positive is not None and fmt in ("arff", "csv"):
                options["positive"] = positive
            info = dataset_info(load_dataset(f, **options))
        except (ValueError, ImportError, OSError) as exc:  # DatasetFormatError is a ValueError
            failed = True
            out.append({"path": str(f), "error": str(exc)})
            if not as_json:
                click.echo(f"error: {exc}", err=True)
            continue
        out.append(info)
        if not as_json:
            if i:
                console.print()
            render_info(info, console, max_rows=max_rows)
    if as_json:
        click.echo(json.dumps(out, indent=2))
    if failed:
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
    from odeval.data import DatasetFormatError, load_dataset
    from odeval.data.prepare import prepare
    from odeval.data.writers import write_dataset

    if rate is not None and n_outliers is not None:
        raise click.UsageError("give at most one of --downsample and --n-outliers")
    options: dict = {}
    if outlier_classes:
        options["label"] = label  # None: unlabelled, the class attribute defines the outliers
    elif label is not None:
        options["label"] = label
    try:
        ds = load_dataset(raw, **options)
        variants = prepare(
            ds, outlier_classes=[c.strip() for c in outlier_classes.split(",")] if outlier_classes else None,
            class_column=class_column, missing=missing, max_missing_fraction=max_missing, dedup=dedup,
            on_conflict=on_conflict, categorical=categorical, rate=rate, n_outliers=n_outliers, repeats=repeats,
            normalization=normalization, seed=seed, base=base)
    except (DatasetFormatError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    for v in variants:
        try:
            arff, side = write_dataset(v, out_dir)
        except OSError as exc:
            raise click.ClickException(_os_error(exc)) from None
        click.echo(f"{arff}  N={v.n_objects} |O|={v.n_outliers} d={v.n_attributes}  (+ {side.name})")
    for step in variants[0].provenance.get("steps", []):
        res = step["result"]
        note = {
            "handle_missing": lambda r: f"dropped {len(r['dropped_attributes'])} attribute(s), "
                                        f"{r['dropped_objects']['count']} object(s)",
            "remove_duplicates": lambda r: f"removed {r['n_removed']} duplicate(s) "
                                           f"({r.get('removed_outliers', 0)} outliers, "
                                           f"{r['n_label_conflicts']} label conflict(s))",
            "encode_categorical": lambda r: f"{len(r['encoded_attributes'])} nominal attribute(s) → "
                                            f"{r['n_attributes_after']} attributes",
            "define_outliers": lambda r: f"{r['n_outliers']} outliers, {r['n_inliers']} inliers",
        }.get(step["step"])
        if note:
            click.echo(f"  {step['step']}: {note(res)}")


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
    import json

    from odeval.data import catalogue as cat

    try:
        if files or base or variant or pct or version_ or as_json:
            found = cat.select(data_dir, base=base or None, variant=variant or None, pct=pct or None,
                               version=version_ or None, collection=collection or None)
            if as_json:
                click.echo(json.dumps([v.to_dict() for v in found], indent=2))
                return
            if not found:
                raise cat.CatalogueError("no dataset matches these filters")
            for v in found:
                flags = [v.variant or v.collection]
                if v.outlier_pct is not None:
                    flags.append(f"{v.outlier_pct}%")
                if v.version is not None:
                    flags.append(f"v{v.version:02d}")
                click.echo(f"{v.name:45s} {v.base:14s} {' '.join(flags):28s} {v.path}")
            click.echo(f"{len(found)} file(s)")
            return
        rep = cat.presence(data_dir)
    except cat.CatalogueError as exc:
        raise click.ClickException(str(exc)) from None
    if rep["vendored"]:
        click.echo(f"no data directory found (--data-dir, ${cat.ENV_VAR}, ../shared/datasets); showing the vendored "
                   f"datasets in {cat.vendored_dir()}")
    else:
        click.echo(f"datasets in {rep['where']}")
    current = None
    for entry in rep["bases"]:
        b = entry["base"]
        if collection and b.collection not in collection:
            continue
        if b.collection != current:
            current = b.collection
            click.echo(f"\n{current}:")
        n_exp = len(b.files)
        status = "ok" if not entry["missing"] else ("MISSING" if not entry["present"] else "incomplete")
        if rep["vendored"]:
            status = "vendored"
        size = f"N={b.n_objects} |O|={b.n_outliers} d={b.n_attributes}"
        click.echo(f"  {b.name:22s} {len(entry['present']):3d}/{n_exp:<3d} {status:10s} {size}")
        if rep["vendored"]:
            for name in entry["present"]:
                click.echo(f"      {name}")
        elif entry["missing"] and (show_missing or len(entry["missing"]) <= 3):
            for m in entry["missing"]:
                click.echo(f"      missing: {m}")
        elif entry["missing"]:
            click.echo(f"      missing: {entry['missing'][0]} ... ({len(entry['missing'])} files; --missing lists all)")
    if rep["unregistered"]:
        click.echo(f"\nnot in the catalogue: {', '.join(rep['unregistered'])}")


@main.group()
def study() -> None:
    """Declare and run studies: datasets × methods × k into a results store."""


@study.command("run")
@click.argument("study_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--store", type=click.Path(dir_okay=False), default=None,
              help="DuckDB results store [default: results.duckdb next to the study file].")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Local worker processes [default: all cores].")
@click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
              help="Run on a Dask distributed cluster (needs the 'dask' extra).")
@click.option("--quiet", "-q", is_flag=True, help="No live display: one log line per unit on stderr.")
@click.option("--retry-failed", is_flag=True, help="Recompute units that ended with an error before.")
@click.option("--wait", type=click.FloatRange(min=0), default=0.0, metavar="SECONDS",
              help="Wait up to SECONDS for a store another process is using [default: fail at once].")
def study_run(study_file: str, store: str | None, workers: int | None, scheduler: str | None, quiet: bool,
              retry_failed: bool, wait: float) -> None:
    """Run STUDY_FILE (TOML), computing only what the store does not hold yet.

    The whole file is validated first; every problem is reported before any work starts. Exit code 0 when
    every unit succeeded, 1 when some unit failed (listed at the end), 2 for an invalid study.
    """
    from pathlib import Path

    from odeval.bench import StudyError, load_study

    try:
        spec = load_study(study_file)
    except StudyError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(2) from None
    store_path = Path(store) if store else Path(study_file).resolve().parent / "results.duckdb"
    summary = _run_study_cli(spec, store_path, workers=workers, scheduler=scheduler, quiet=quiet,
                             retry_failed=retry_failed, wait=wait,
                             resume=["odeval", "study", "run", study_file, "--store", str(store_path)])
    click.echo(f"study {spec.name!r} ({spec.study_hash}): {summary.total_units} units, "
               f"{summary.already_done} already in the store, {summary.ok} computed, {len(summary.failed)} failed, "
               f"{summary.wall_s:.1f}s → {store_path}")
    if summary.replaced:
        click.echo(f"  {summary.replaced} unit(s) of an older scoring version of their method were replaced")
    if summary.variant_tasks_total:
        click.echo(f"  per-variant tasks: {summary.variant_tasks_total}, {summary.variant_tasks_done} already in the "
                   f"store, {summary.variant_tasks_ok} computed (failures listed with the units)")
    for f in summary.failed:
        click.echo(f"  FAILED {f['dataset']} {f['method']} {f['params']}: {f['error']}", err=True)
    if summary.failed:
        raise SystemExit(1)


@study.command("check")
@click.argument("study_file", type=click.Path(exists=True, dir_okay=False))
def study_check(study_file: str) -> None:
    """Validate STUDY_FILE and print what it would run."""
    from odeval.bench import StudyError, load_study

    try:
        spec = load_study(study_file)
    except StudyError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(2) from None
    from odeval.bench.config import method_k_plans

    n_units = len(spec.datasets) * len(spec.methods)
    click.echo(f"study {spec.name!r}: {len(spec.datasets)} dataset variants × {len(spec.methods)} methods = "
               f"{n_units} units, k up to {spec.k_max}, metric {spec.metric}")
    for m, runs, skipped in method_k_plans(spec):
        click.echo(f"  {m.name} {m.params} k={runs} ({runs.count()} values)")
        for ks, reason in skipped.items():
            click.echo(f"    skipped k={ks}: {reason}")
    from odeval._krange import format_ks
    from odeval.bench.config import study_k_plans
    from odeval.detectors.scoring import skipped_lines

    click.echo("  per dataset variant (the k that will run; skipped k as the runner records them in units.skipped):")
    for v in study_k_plans(spec):
        if v.error is not None:
            click.echo(f"  {v.ref.name}: cannot be read: {v.error}")
            continue
        click.echo(f"  {v.ref.name} (N={v.n_objects}, kNN graph k={v.graph_k}):")
        for m, plan in v.plans:
            click.echo(f"    {m.name} {m.params} k={format_ks(plan.ks) or 'none'} ({len(plan.ks)} values)"
                       + ("" if plan.ks else ": nothing to compute, the unit will fail"))
            for line in skipped_lines(m.name, plan.skipped):
                click.echo(f"      {line}")
    if spec.internal:
        from odeval.bench.config import emmv_not_applicable

        click.echo(f"  internal measures {list(spec.internal)} {spec.internal_options}")
        for m in spec.methods:
            if (why := emmv_not_applicable(m)) is not None:
                click.echo(f"    {m.name}: no {'/'.join(x.upper() for x in spec.internal)} ({why})")
    if spec.variant_step is not None:  # odeval.bench.variant_step: one task per variant and kind
        step = spec.variant_step
        if step.ireos is not None:
            click.echo(f"  per variant: IREOS of every candidate, one gamma_max per variant {step.ireos}")
        if step.selectors is not None:
            modes = " and ".join(step.selection_modes)
            click.echo(f"  per variant: selectors {list(step.selectors)}, candidates {modes}")


@main.command()
@click.option("-o", "--out", "out_dir", type=click.Path(file_okay=False), default="demo-out", show_default=True,
              help="Folder for the results store and the report.")
@click.option("--workers", type=click.IntRange(min=1), default=None, help="Worker processes [default: all cores].")
@click.option("--k", "k_range", default="1..100", show_default=True, help="k range of the demo study.")
@click.option("--quiet", "-q", is_flag=True, help="No live display.")
def demo(out_dir: str, workers: int | None, k_range: str, quiet: bool) -> None:
    """Run the built-in demo: a real study on the vendored Campos datasets, all 12 methods, k = 1..100.

    Writes OUT/results.duckdb and the HTML report OUT/report/index.html, and prints the method ranking.
    Runs without the shared benchmark folder; running it again reuses the stored results.
    """
    from pathlib import Path

    from odeval.bench import ResultStore, study_from_dict
    from odeval.bench.demo import demo_study

    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.ClickException(_os_error(exc)) from None
    spec = study_from_dict(demo_study(k_range), source="odeval demo")
    store_path = out / "results.duckdb"
    click.echo(f"demo study: {len(spec.datasets)} vendored datasets × {len(spec.methods)} methods, k = {k_range}")
    summary = _run_study_cli(spec, store_path, workers=workers, scheduler=None, quiet=quiet, retry_failed=False,
                             resume=["odeval", "demo", "-o", out_dir, "--k", k_range])
    click.echo(f"{summary.ok} units computed, {summary.already_done} reused, {len(summary.failed)} failed "
               f"in {summary.wall_s:.1f}s → {store_path}")
    with ResultStore(store_path, read_only=True) as rs:
        runs = rs.runs(status="ok")
    from odeval.analysis import aggregate_datasets, per_variant_summary

    # the report's ranking (Campos et al. Fig. 2): best k per variant, variants of a base dataset averaged first
    coll = aggregate_datasets(per_variant_summary(runs, measures=["roc_auc"]))
    best = coll.set_index("config")["best"].sort_values(ascending=False)
    click.echo("\nROC AUC at each method's best k, mean over base datasets (variants of a base dataset averaged "
               "first, as in the report):")
    for method, value in best.items():
        click.echo(f"  {method:14s} {value:.3f}")
    _demo_report(store_path, out / "report")
    if summary.failed:
        raise SystemExit(1)


def _demo_report(store_path: Path, report_dir: Path) -> None:
    """Write the demo's HTML report (figures need matplotlib: the 'plot' extra)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        click.echo("\nno report: matplotlib is missing (pip install 'odeval[plot]')", err=True)
        return
    from odeval.report import report_from_store

    try:
        index, _ = report_from_store(store_path, report_dir, title="odeval demo study")
    except OSError as exc:
        raise click.ClickException(_os_error(exc)) from None
    click.echo(f"\nreport: {index.resolve()}")


@main.group()
def results() -> None:
    """Read and export a results store."""


@results.command("export")
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet", show_default=True)
@click.option("--table", type=click.Choice(["runs", "units", "outlier_ranks", "scores", "studies", "study_units",
                                            "labels", "internal_measures"]), default="runs", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Output file [default: STORE's folder/<table>.<format>].")
def results_export(store: str, fmt: str, table: str, output: str | None) -> None:
    """Export one table of a results STORE to Parquet or CSV."""
    from pathlib import Path

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
    import json

    from odeval._validation import check_labels
    from odeval.measures import evaluate_scoring
    from odeval.measures._io import is_score_table, read_score_table, read_vector

    if labels_file is not None and dataset_file is not None:
        raise click.UsageError("give at most one of --labels and --dataset")
    try:
        if is_score_table(scores_file):
            table = read_score_table(scores_file)
            names, matrix = _select_table_columns(scores_file, table.columns, table.scores, columns)
            labels, labels_src = table.labels, f"{scores_file} (label column)"
        else:
            if len(columns) > 1:
                raise click.UsageError("several --column values need a table written by 'odeval score'")
            if labels_file is None and dataset_file is None:
                raise click.UsageError("give --labels or --dataset (only an 'odeval score' table carries labels)")
            names = [None]
            matrix = read_vector(scores_file, what="scores", column=columns[0] if columns else None)[None, :]
            labels = None
        if labels_file is not None:
            labels, labels_src = read_vector(labels_file, what="labels"), labels_file
        elif dataset_file is not None:
            from odeval.data import load_dataset

            ds = load_dataset(dataset_file)
            if ds.y is None:
                raise ValueError(f"{dataset_file}: the dataset has no labels")
            labels, labels_src = ds.y, dataset_file
        elif labels is None:
            raise click.UsageError(f"{scores_file} has no 'label' column: give --labels or --dataset")
        labels = check_labels(labels, name=f"{labels_src}: the labels")
        if labels.size != matrix.shape[1]:
            raise ValueError(f"{labels_src} and {scores_file} differ in length: {labels.size} labels, "
                             f"{matrix.shape[1]} scores (both must list the same objects in the same order)")
        if ascending:
            from odeval.detectors import orient

            matrix = orient(matrix, True)
        results = [evaluate_scoring(labels, row, n=n)[0] for row in matrix]
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    n_out = int(sum(labels))
    header = f"N = {matrix.shape[1]}, |O| = {n_out}" + (f", n = {n}" if n is not None else "")
    if names == [None]:
        if as_json:
            click.echo(json.dumps({"n_objects": matrix.shape[1], "n_outliers": n_out, "n": n,
                                   "measures": results[0]}, indent=2))
            return
        click.echo(header)
        width = max(map(len, results[0]))
        for name, value in results[0].items():
            click.echo(f"{name:<{width}}  {value:.6f}")
        return
    if as_json:
        click.echo(json.dumps({"n_objects": matrix.shape[1], "n_outliers": n_out, "n": n,
                               "results": [{"column": c, "measures": r} for c, r in zip(names, results, strict=True)]},
                              indent=2))
        return
    click.echo(header)
    measures = list(results[0])
    width = max(len("column"), *map(len, names))
    widths = {m: max(len(m), 9) for m in measures}
    click.echo(f"{'column':<{width}}  " + "  ".join(f"{m:>{widths[m]}}" for m in measures))
    for name, result in zip(names, results, strict=True):
        click.echo(f"{name:<{width}}  " + "  ".join(f"{result[m]:>{widths[m]}.6f}" for m in measures))


def _select_table_columns(path: str, names: list[str], scores, wanted: tuple[str, ...]):
    """The requested columns (all by default) of an ``odeval score`` table, public orientation: raw columns
    (``METHOD-kNNN-raw``) of methods where low = outlier are negated via the detector's metadata."""
    import numpy as np

    from odeval.detectors import get_detector, orient

    if wanted:
        picked = []
        for w in wanted:
            if w in names:
                picked.append(names.index(w))
            elif w.isdigit() and int(w) < len(names):
                picked.append(int(w))
            else:
                raise ValueError(f"{path}: no score column {w!r} (columns: {', '.join(names)})")
    else:
        picked = list(range(len(names)))
    rows = []
    for i in picked:
        row = scores[i]
        if names[i].endswith("-raw"):
            method = names[i].rsplit("-", 2)[0]
            try:
                info = get_detector(method).info
            except ValueError:
                raise ValueError(f"{path}: raw column {names[i]!r} of an unknown method {method!r}: its "
                                 "orientation is not known (write public scores, without --raw)") from None
            row = orient(row, info)
        rows.append(row)
    return [names[i] for i in picked], np.vstack(rows)


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
                   "ODIN, FastABOD, KDEOS, LDF, INFLO, COF, ... (an unknown name lists all).")
@click.option("--k", "k_spec", default="1:100", show_default=True,
              help="k values: K, A..B or A:B (inclusive), A..B:STEP, or a list 1,5,10; capped at N − 1.")
@click.option("--metric", default="euclidean", show_default=True,
              help="Distance: euclidean, manhattan, chebyshev, cosine, minkowski (with --p), or another scipy metric.")
@click.option("--p", "p", type=float, default=None, help="Minkowski exponent.")
@click.option("--backend", type=click.Choice(["auto", "exact", "brute", "tree", "approx"]), default="auto",
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
def score_cmd(dataset: str, methods: tuple[str, ...], k_spec: str, metric: str, p: float | None, backend: str,
              seed: int, param_items: tuple[str, ...], raw: bool, label_column: str | None, unlabelled: bool,
              output: str, scheduler: str | None = None, n_blocks: int | None = None) -> None:
    """Score DATASET with kNN detectors for every k from one exact kNN graph.

    Output table: one row per object (columns object, id, label) and one column per method and k, named
    METHOD-kNNN (e.g. LOF-007); public scores (higher = more outlying), or with --raw the method's own
    scores in columns named METHOD-kNNN-raw. A k that cannot be computed (below a method's minimum, e.g.
    KDEOS: 2; k ≥ N) is skipped with a note on stderr, as in studies; nothing computable is an error.
    .npz holds arrays scores (rows = columns of the table), columns, ks, labels.
    Example: odeval score Waveform.arff -m LOF -m KNN --k 1:100 -o s.parquet
    """
    from pathlib import Path

    import numpy as np

    from odeval._krange import parse_k_range
    from odeval.data import load_dataset
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import required_graph_k, skipped_lines, stream_ks
    from odeval.neighbors import knn_graph

    out = Path(output)
    if out.suffix.lower() not in (".parquet", ".csv", ".npz"):
        raise click.BadParameter(f"{output}: the extension must be .parquet, .csv or .npz", param_hint="-o")
    if unlabelled and label_column is not None:
        raise click.UsageError("give at most one of --label-column and --unlabelled")
    try:
        k_range = parse_k_range(k_spec)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--k") from None
    method_list = list(dict.fromkeys(methods))
    params = _parse_params(param_items, method_list)
    options: dict = {"label": None} if unlabelled else ({"label": label_column} if label_column else {})
    try:
        detectors = {m: get_detector(m, **params[m]) for m in method_list}
        ds = load_dataset(dataset, **options)
        X = ds.numeric_matrix()
        n = X.shape[0]
        k_graph = max(required_graph_k(det, k_range, n) for det in detectors.values())
        if scheduler:  # the blocks' graph and scoring on the cluster (bench.distributed)
            from odeval.bench.distributed import PartitionedGraph, check_partitionable, partitioned

            if backend not in ("auto", "exact", "brute"):
                raise click.UsageError(f"--scheduler computes the exact graph by brute force; drop --backend {backend}")
            check_partitionable(detectors.values())
            graph = PartitionedGraph.connect(X, k_graph, scheduler, metric=metric, p=p, n_blocks=n_blocks)
            detectors = {m: partitioned(d, graph) for m, d in detectors.items()}
        elif n_blocks is not None:
            raise click.UsageError("--blocks needs --scheduler")
        else:
            graph = knn_graph(X, k_graph, metric=metric, p=p, backend=backend, seed=seed)
        click.echo(f"kNN graph: {graph.search} ({graph.search_reason})", err=True)
        if graph.approx_recall is not None:
            click.echo(f"note: approximate kNN graph, recall {graph.approx_recall:.4f} on a sample", err=True)
        columns: list[str] = []
        computed_ks: set[int] = set()
        streams = [(det, *stream_ks(det, graph, k_range, raw=raw)) for det in detectors.values()]
        # the output matrix is filled k by k (streamed chunks of k): no second copy of it is ever made
        scores = np.empty((sum(len(plan.ks) for _, plan, _ in streams), n))
        for det, plan, produced in streams:
            for k, row in produced:
                scores[len(columns)] = row
                computed_ks.add(k)
                columns.append(f"{det.info.name}-{k:03d}" + ("-raw" if raw else ""))
            for line in skipped_lines(det.info.name, plan.skipped):
                click.echo(f"note: {line}", err=True)
    except (ValueError, ImportError) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if scheduler and "graph" in locals():
            graph.close()
    if not columns:
        raise click.ClickException(f"nothing to compute: no requested k ({k_spec}) can be scored by "
                                   f"{', '.join(method_list)} on {dataset} (N = {n}); see the notes above")
    scores = scores[:len(columns)]  # a k with NaN scores was skipped
    labels = None if ds.y is None else np.asarray(ds.y, dtype=bool)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".npz":
        extra = {} if labels is None else {"labels": labels}
        np.savez_compressed(out, scores=scores, columns=np.array(columns), ks=np.array(sorted(computed_ks)),
                            **extra)
    else:
        import pandas as pd

        table = {"object": np.arange(n)}
        if getattr(ds, "ids", None) is not None and len(ds.ids) == n:
            table["id"] = np.asarray(ds.ids)
        if labels is not None:
            table["label"] = labels
        frame = pd.concat([pd.DataFrame(table), pd.DataFrame(scores.T, columns=columns)], axis=1)
        if out.suffix.lower() == ".csv":
            frame.to_csv(out, index=False, float_format="%.17g")
        else:
            try:
                frame.to_parquet(out, index=False)
            except ImportError as exc:
                raise click.ClickException(
                    f"writing Parquet needs pyarrow (pip install pyarrow): {exc}") from None
    click.echo(f"{out}: {n} objects × {len(columns)} score columns ({', '.join(method_list)}; k {k_spec}; "
               f"{graph.metric})")


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
              help="Only these methods (comma-separated or repeated) [default: all stored].")
@click.option("--k-range", default=None, metavar="A..B[:STEP]", help="Only these k [default: all stored].")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def ensemble_cmd(store: str, dataset: str, rate: float, measure: str, rule: str, n_random: int, seed: int,
                 methods: tuple[str, ...], k_range: str | None, as_json: bool) -> None:
    """Greedy outlier ensemble of the stored scorings of one dataset (Schubert et al. 2012, Sect. 4.3).

    Reads the score vectors the study kept (study option keep_scores = true), normalises each with
    odeval.scaling.unify, selects the ensemble without labels and prints a Table-4-style comparison with the
    best single scoring, the naive ensemble of all scorings and random ensembles of the same size.
    """
    import json

    from odeval._krange import parse_k_range
    from odeval.bench.ensembles import ensemble_from_store, format_ensemble

    try:
        ks = parse_k_range(k_range).values() if k_range is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--k-range") from None
    wanted = [m.strip() for item in methods for m in item.split(",") if m.strip()] or None
    try:
        result = ensemble_from_store(store, dataset, rate=rate, measure=measure, rule=rule, n_random=n_random,
                                     seed=seed, methods=wanted, ks=ks)
    except ValueError as exc:  # StoreError is a ValueError: missing, not DuckDB, in use by PID N, old schema
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, allow_nan=True))
    else:
        click.echo(format_ensemble(result))


@main.command("report")
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder to write the report to (index.html, datasets/, tables/).")
@click.option("--measure", default="roc_auc", show_default=True, help="Measure of the ranking, tests and plots.")
@click.option("--statistic", type=click.Choice(["best", "window_mean", "mean_over_k"]), default="best",
              show_default=True, help="Aggregate compared by the Friedman / Nemenyi tests.")
@click.option("--study-hash", default=None, help="Report only this study of the store.")
@click.option("--title", default="odeval study report", show_default=True)
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
def report_cmd(store: str, out_dir: str, measure: str, statistic: str, study_hash: str | None, title: str,
               simulations: int, seed: int, permutations: int, min_outlier_pct: float | None,
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
            selection=selection)
    except ValueError as exc:  # StoreError is a ValueError: missing, not DuckDB, in use by PID N, old schema
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(_os_error(exc)) from None
    for message in messages:
        click.echo(f"warning: {message}", err=True)
    click.echo(f"report written to {index}")


@main.command("emmv")
@click.argument("dataset", type=click.Path(exists=True, dir_okay=False))
@click.option("--detector", "-d", required=True, metavar="iforest|ocsvm|lof|METHOD",
              help="Detector refitted on every feature draw: scikit-learn iforest / ocsvm / lof (novelty=True), or "
                   "an odeval method with a novelty form (kNN, kNNW, LOF, SimplifiedLOF, LoOP, LDOF).")
@click.option("--k", type=click.IntRange(min=1), default=20, show_default=True, help="k of lof / odeval methods.")
@click.option("--setting", type=click.Choice(["novelty", "unsupervised"]), default="novelty", show_default=True,
              help="novelty: fit on normal training data, EM/MV on normal test data; unsupervised: polluted data.")
@click.option("--split/--no-split", default=True, show_default=True,
              help="50/50 train/test split; --no-split (unsupervised only): fit and evaluate on the same data.")
@click.option("--draws", "-m", type=int, default=50, show_default=True, help="Feature draws m (when d > --max-dim).")
@click.option("--features", type=int, default=5, show_default=True, help="Features per draw d'.")
@click.option("--max-dim", type=click.IntRange(min=0), default=8, show_default=True,
              help="Largest d evaluated with all features (no sub-sampling).")
@click.option("--n-generated", type=int, default=100_000, show_default=True, help="Uniform points per evaluation.")
@click.option("--integration", type=click.Choice(["grid", "exact"]), default="grid", show_default=True,
              help="grid: the authors' t / alpha grids; exact: exact integrals of the empirical curves.")
@click.option("--max-outlier-ratio", type=float, default=0.1, show_default=True,
              help="Cap the outliers at this fraction of the inliers (the chapter: 10 %).")
@click.option("--min-distinct", type=click.IntRange(min=0), default=10, show_default=True,
              help="Drop attributes with fewer distinct values (the chapter: 10; 0 keeps all).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds split, draws, uniform points, detector.")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=1, show_default=True,
              help="Feature draws evaluated in parallel (same result for any value).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def emmv_cmd(dataset: str, detector: str, k: int, setting: str, split: bool, draws: int, features: int,
             max_dim: int, n_generated: int, integration: str, max_outlier_ratio: float, min_distinct: int,
             seed: int, jobs: int, as_json: bool) -> None:
    """Label-free Excess-Mass / Mass-Volume criteria of a detector on DATASET (Goix 2016).

    The chapter's protocol: outliers capped, non-continuous attributes dropped, standardised, 50/50 split;
    feature sub-sampling (m draws of d' features) when d > --max-dim. EM: larger = better; MV: smaller =
    better. ROC / PR AUC of the test half are shown next to them. See docs/emmv.md.
    """
    import json
    import sys

    from odeval.measures.internal.emmv_algorithm import chapter_split, evaluate_split

    try:
        if draws < 1:
            raise ValueError(f"--draws must be at least 1, got {draws}")
        if features < 1:
            raise ValueError(f"--features must be at least 1, got {features}")
        from odeval.data import load_dataset

        ds = load_dataset(dataset)
        X = ds.numeric_matrix()
        sp = chapter_split(X, ds.y, setting=setting, seed=seed, max_outlier_ratio=max_outlier_ratio,
                           min_distinct=min_distinct, split=split)
        d = sp.features.size
        if d > max_dim and features > d:
            raise ValueError(f"--features {features} exceeds the {d} attributes kept")
        with click.progressbar(length=draws if d > max_dim else 1, label=f"EM/MV {detector}",
                               file=sys.stderr, hidden=as_json) as bar:
            res, labelled = evaluate_split(detector, sp, k=k, seed=seed, draws=draws, features=features,
                                           max_dim=max_dim, n_generated=n_generated, integration=integration,
                                           n_jobs=jobs, progress=lambda i, m: bar.update(1))
    except (ValueError, ImportError, OSError) as exc:
        raise click.ClickException(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    out = res.to_dict() | labelled | {"dataset": Path(dataset).name, "setting": setting,
                                      "attributes": sp.features.size, "integration": integration}
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    fmt = "{:.4g}".format
    click.echo(f"{out['dataset']} ({setting}, {sp.features.size} attributes, train {res.n_train}, evaluated "
               f"{res.n_test}) — {res.detector}")
    sub = f"{res.draws} draws of {res.features[0].size} features" if res.subsampled else "all features"
    click.echo(f"  EM {fmt(res.em)} (larger = better)   MV {fmt(res.mv)} (smaller = better)   [{sub}, "
               f"{res.n_generated} uniform points, seed {res.seed}]")
    if labelled:
        click.echo(f"  ROC AUC {labelled['roc_auc']:.3f}   PR (average precision) {labelled['average_precision']:.3f}")
    if res.em_failed or res.mv_failed:
        click.echo(f"  not estimable: EM in {res.em_failed}, MV in {res.mv_failed} of {res.draws} draw(s): "
                   f"{'; '.join(res.reasons)}")


@main.command("ireos")
@click.argument("dataset", type=click.Path(exists=True, dir_okay=False))
@click.option("--scores", "scores_src", type=click.Path(exists=True, dir_okay=False), required=True,
              help="A table written by 'odeval score' (.parquet/.csv/.npz) or a results STORE (DuckDB) that kept "
                   "score vectors (study option keep_scores).")
@click.option("--column", "columns", multiple=True, help="Evaluate only these columns/scorings (repeatable).")
@click.option("--store-dataset", default=None, help="Variant name in the STORE [default: DATASET's file stem].")
@click.option("--candidates", type=click.IntRange(min=2), default=None,
              help="Keep this many candidates spread over ROC AUC (needs labels; Sect. 4.2 of the paper uses 10).")
@click.option("--mcl", default="1", show_default=True, help="Maximum clump size: 1, sqrt5 (= sqrt(5%% N)) or a number.")
@click.option("--adjust", is_flag=True, help="Adjust for chance (Eq. 13); m_cl = 1 classifies every object.")
@click.option("--pvalue", is_flag=True, help="One-sided p-values against random solutions.")
@click.option("--knn", type=click.IntRange(min=1), default=None,
              help="Train each classifier on the object's k nearest neighbours (the paper: 250) [default: exact].")
@click.option("--quadrature", type=click.Choice(["adaptive", "fixed"]), default="adaptive", show_default=True)
@click.option("--n-gamma", type=click.IntRange(min=2), default=100, show_default=True, help="Points of the fixed grid.")
@click.option("--tol", type=click.FloatRange(min=0, min_open=True), default=0.001, show_default=True,
              help="Error tolerance of the adaptive quadrature (Eq. 14).")
@click.option("--gamma-max", type=float, default=None, help="Upper kernel width [default: searched, Sect. 3.4].")
@click.option("--gamma-max-quantile", type=click.FloatRange(min=0, max=1, min_open=True), default=1.0,
              show_default=True, help="Search gamma_max until this fraction of the candidates' outliers is "
              "separable (1 = the paper's rule; lower for near-duplicates, see docs/ireos.md).")
@click.option("--C", "cost", type=click.FloatRange(min=0, min_open=True), default=100.0, show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Classifier workers (threads; local processes with --processes).")
@click.option("--processes", is_flag=True, help="Run the classifiers in --jobs local processes.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run the classifiers on a Dask cluster (tcp://host:port), as `study run --scheduler`.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def ireos_cmd(dataset: str, scores_src: str, columns: tuple[str, ...], store_dataset: str | None,
              candidates: int | None, mcl: str, adjust: bool, pvalue: bool, knn: int | None, quadrature: str,
              n_gamma: int, tol: float, gamma_max: float | None, gamma_max_quantile: float, cost: float, jobs: int,
              processes: bool, scheduler: str | None, seed: int, as_json: bool) -> None:
    """IREOS of candidate outlier scorings of DATASET, without labels (Marques et al. 2020; docs/ireos.md).

    Prints one row per scoring: the index, and with --adjust / --pvalue the chance-adjusted index and the
    p-value; ROC AUC too when labels are known (for comparison only: IREOS never uses them).

    Example: odeval ireos wbc.arff --scores scores.parquet --mcl sqrt5 --adjust --pvalue
    """
    import json

    import numpy as np

    from odeval.analysis.selection import paper_candidates
    from odeval.data import load_dataset
    from odeval.measures import roc_auc
    from odeval.measures._io import is_score_table, read_score_table
    from odeval.measures.internal import ireos

    try:
        ds = load_dataset(dataset)
        X = ds.numeric_matrix()
        if is_score_table(scores_src):
            table = read_score_table(scores_src)
            names, matrix, labels = list(table.columns), table.scores, table.labels
        else:
            from odeval.bench.ensembles import read_scorings

            stored = read_scorings(scores_src, store_dataset or Path(dataset).stem)
            names, matrix, labels = list(stored.runs["name"]), stored.scores, stored.labels
        if labels is None:
            labels = ds.y
        if columns:
            missing = [c for c in columns if c not in names]
            if missing:
                raise ValueError(f"{scores_src}: no column(s) {', '.join(missing)}; columns: {', '.join(names)}")
            keep = [names.index(c) for c in columns]
            names, matrix = [names[i] for i in keep], matrix[keep]
        if matrix.shape[1] != X.shape[0]:
            raise ValueError(f"{scores_src}: scorings have {matrix.shape[1]} objects, {dataset} has {X.shape[0]}")
        finite = np.isfinite(matrix).all(axis=1)
        if not finite.all():
            click.echo(f"warning: skipped {int((~finite).sum())} scoring(s) with NaN/inf: "
                       + ", ".join(n for n, f in zip(names, finite, strict=True) if not f), err=True)
            names, matrix = [n for n, f in zip(names, finite, strict=True) if f], matrix[finite]
        aucs = (np.array([roc_auc(labels, row) for row in matrix]) if labels is not None and 0 < labels.sum()
                < labels.size else None)
        if candidates is not None:
            if aucs is None:
                raise ValueError("--candidates needs labels (in the scores table, the store or DATASET)")
            keep = paper_candidates(aucs, candidates)
            names, matrix, aucs = [names[i] for i in keep], matrix[keep], aucs[keep]
        mcl_value: object = int(mcl) if mcl.isdigit() else mcl
        res = _with_progress(lambda progress: ireos(
            X, list(matrix), m_cl=mcl_value, C=cost, gamma_max=gamma_max, gamma_max_quantile=gamma_max_quantile,
            quadrature=quadrature, n_gamma=n_gamma, tol=tol, knn=knn, adjust=adjust, p_values=pvalue, seed=seed,
            n_jobs=jobs, progress=progress,
            executor=scheduler or ("processes" if processes else None)),
            quiet=as_json)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None
    rows = [{"column": n, "ireos": float(res.index[i]),
             **({"adjusted": float(res.adjusted[i])} if adjust else {}),
             **({"p_value": float(res.p_value[i])} if pvalue else {}),
             **({"roc_auc": float(aucs[i])} if aucs is not None else {})} for i, n in enumerate(names)]
    if as_json:
        click.echo(json.dumps({"dataset": dataset, "n_objects": int(X.shape[0]), "m_cl": res.m_cl,
                               "gamma_max": res.gamma_max, "n_fits": res.n_fits, "results": rows}, indent=2))
        return
    click.echo(f"{dataset}: N = {X.shape[0]}, m_cl = {res.m_cl:g}, gamma_max = {res.gamma_max:.6g}, "
               f"{res.n_fits} classifiers")
    keys = [k for k in rows[0] if k != "column"]
    width = max(len("column"), *map(len, names))
    click.echo(f"{'column':<{width}}  " + "  ".join(f"{k:>10}" for k in keys))
    for r in rows:
        click.echo(f"{r['column']:<{width}}  " + "  ".join(f"{r[k]:>10.4g}" for k in keys))


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
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def select_audit_cmd(store: str, candidates: str, selectors: tuple[str, ...], only: tuple[str, ...], measure: str,
                     blocks: str, seed: int, per_variant: bool, report_dir: str | None, compute_missing: bool,
                     as_json: bool) -> None:
    """Audit label-free model selection on a study STORE.

    Every selector (model centrality, HITS, SELECT, ensembles, fixed defaults, random) picks a candidate of each
    variant without labels; the labels then judge the pick against the candidates (min / mean / max,
    percentile), with Wilcoxon tests against the baselines and Friedman + Nemenyi across selectors. Uses the
    picks a study stored (its [selection] table) when there are any, else computes them from the kept score
    vectors. See docs/model-selection.md.
    """
    import json

    from odeval.analysis.selection import audit_store, format_audit
    from odeval.compare.selection import get_selector

    if candidates != "all" and not (candidates.isdigit() and int(candidates) > 0):
        raise click.BadParameter(f"use 'all' or a positive integer, got {candidates!r}", param_hint="--candidates")
    wanted = [s.strip() for item in selectors for s in item.split(",") if s.strip()] or None
    keep = [d.strip() for item in only for d in item.split(",") if d.strip()] or None
    try:
        for s in wanted or []:
            get_selector(s)
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("[bold]variants"), BarColumn(), TimeElapsedColumn(),
                      TextColumn("{task.fields[current]}"), transient=True, disable=as_json) as prog:
            task = prog.add_task("variants", total=None, current="")
            audit, source, messages = audit_store(
                store, wanted, candidates=candidates, measure=measure, seed=seed, blocks=blocks, datasets=keep,
                compute_missing=compute_missing, progress=lambda d: prog.update(task, advance=1, current=d))
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None
    if keep:
        missing = sorted(set(keep) - set(audit.picks["dataset"]))
        if missing:
            raise click.ClickException(f"{store}: no stored picks or kept scores of variant(s) {', '.join(missing)}")
    for message in messages:
        click.echo(f"warning: {message}", err=True)
    if report_dir is not None:
        from odeval.report.selection import write_selection_report

        index = write_selection_report(audit, report_dir)
    if as_json:
        click.echo(json.dumps(audit.to_dict() | {"source": source}, indent=2, allow_nan=False))
    else:
        click.echo(f"picks: {source}")
        click.echo(format_audit(audit, per_variant=per_variant))
        if report_dir is not None:
            click.echo(f"report written to {index}")


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
@click.option("--jobs", "-j", type=int, default=-1, show_default=True,
              help="Worker processes (-1: all local cores); results do not depend on it.")
@click.option("--normalize", type=click.Choice(["minmax", "zscore", "none"]), default="minmax", show_default=True,
              help="Normalisation fitted on the clean training objects.")
@click.option("--stratify", is_flag=True, help="Stratified train/test splits.")
@click.option("--label", default=None, help="Label attribute/key of the dataset file (loader default otherwise).")
@click.option("-o", "--output", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Directory for table1.csv, runs.csv, sweep.csv and sweep.png.")
@click.option("--json", "as_json", is_flag=True, help="Print Table 1 as JSON rows instead of text.")
def protocol_audit_cmd(dataset: str, detector: str, param_items: tuple[str, ...], k: int | None, runs: int,
                       sweep_runs: int, seed: int, jobs: int, normalize: str, stratify: bool, label: str | None,
                       out_dir: str, as_json: bool) -> None:
    """Audit how train/test protocols inflate F1 and AVPR (Fourure et al. 2021).

    Runs Table 1's four settings (Algorithm 1 at 20 % test size; Algorithm 2 at 20 % and 5 %; the F1-optimal
    threshold at 5 %) with DETECTOR on DATASET, writes the contamination sweep (Fig. 4) as CSV and PNG, and
    states which reported numbers a protocol inflates and by how much.
    """
    from odeval.protocols.cli import run_protocol_audit

    params = _parse_params(param_items, [detector])[detector]
    try:
        run_protocol_audit(dataset, detector, params, k=k, runs=runs, sweep_runs=sweep_runs, seed=seed, jobs=jobs,
                           normalize=None if normalize == "none" else normalize, stratify=stratify, label=label,
                           out_dir=out_dir, as_json=as_json)
    except (ValueError, FileNotFoundError, ImportError, TypeError) as exc:
        raise click.ClickException(str(exc)) from None


def _os_error(exc: OSError, verb: str = "cannot write") -> str:
    """One line naming the path and the cause of a file-system error (no traceback)."""
    cause = exc.strerror.rstrip(".").lower() if exc.strerror else str(exc)
    where = exc.filename if exc.filename is not None else "(no file name)"
    return f"{verb} {where}: {cause}".lstrip()


def _run_study_cli(spec, store_path: Path, *, workers: int | None, scheduler: str | None, quiet: bool,
                   retry_failed: bool, resume: list[str], wait: float = 0.0):
    """Run a study for ``study run`` and ``demo``: one-line store errors; Ctrl-C says what is saved and how to
    resume (exit code 130)."""
    import shlex

    from odeval.bench import run_study
    from odeval.bench.runner import StudyInterrupted
    from odeval.bench.store import StoreError

    try:
        return run_study(spec, store_path, workers=workers, scheduler=scheduler,
                         progress="log" if quiet else "rich", retry_failed=retry_failed, wait=wait)
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    except StudyInterrupted as exc:
        s = exc.summary
        command = list(resume)
        if workers is not None:
            command += ["--workers", str(workers)]
        if scheduler:
            command += ["--scheduler", scheduler]
        click.echo(f"\ninterrupted: {s.computed} unit(s) computed in this run are saved in {store_path} "
                   f"({s.already_done + s.computed} of {s.total_units} units of the study are stored); units in "
                   "progress were dropped.", err=True)
        click.echo(f"resume with: {shlex.join(command)}", err=True)
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
@click.option("--k-max", type=click.IntRange(min=1), default=100, show_default=True, help="Largest k of the pool.")
@click.option("--top-n", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--resamples", type=click.IntRange(min=0), default=3, show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="IREOS classifier threads.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (one JSON object).")
def select_cmd(data: str, check_labels: str | None, out_dir: str | None, fmt: str, normalize: str, missing: str,
               categorical: str, dedup: bool, drop_constant: bool, primary: str, no_ireos: bool, k_max: int,
               top_n: int, resamples: int, jobs: int, seed: int, as_json: bool) -> None:
    """Recommend a detector and k for DATA without labels, with how far to trust it (docs/select.md).

    DATA: CSV, TSV, Parquet, ARFF, NPZ or MAT; a label column is left out of the features.

    Example: odeval select table.csv --check-labels outlier -o select-out
    """
    import json

    from odeval.labelfree.guarded import GuardedSettings
    from odeval.labelfree.recommend import SelectSettings
    from odeval.labelfree.table import select_file, write_outputs
    from odeval.render.select import format_recommendation, select_progress
    from odeval.report.select_page import write_select_page

    try:
        settings = SelectSettings(normalize=None if normalize == "none" else normalize, missing=missing,
                                  categorical=categorical, dedup=dedup, constant="drop" if drop_constant else "refuse",
                                  primary=primary, ireos=not no_ireos, k_max=k_max, top_n=top_n, resamples=resamples,
                                  seed=seed, guarded=GuardedSettings(n_jobs=jobs), details=out_dir is not None)
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


@main.command("warmup")
@click.option("--method", "-m", "methods", multiple=True,
              help="Detector to compile (repeatable) [default: all]; the kNN graph kernels are always compiled.")
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
