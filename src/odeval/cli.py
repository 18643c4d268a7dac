"""The ``odeval`` command line. Each subcommand is a thin shell over a library function."""

from __future__ import annotations

from pathlib import Path

import click

from odeval import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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
        arff, side = write_dataset(v, out_dir)
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
def study_run(study_file: str, store: str | None, workers: int | None, scheduler: str | None, quiet: bool,
              retry_failed: bool) -> None:
    """Run STUDY_FILE (TOML), computing only what the store does not hold yet.

    The whole file is validated first; every problem is reported before any work starts. Exit code 0 when
    every unit succeeded, 1 when some unit failed (listed at the end), 2 for an invalid study.
    """
    from pathlib import Path

    from odeval.bench import StudyError, load_study, run_study

    try:
        spec = load_study(study_file)
    except StudyError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(2) from None
    store_path = Path(store) if store else Path(study_file).resolve().parent / "results.duckdb"
    summary = run_study(spec, store_path, workers=workers, scheduler=scheduler,
                        progress="log" if quiet else "rich", retry_failed=retry_failed)
    click.echo(f"study {spec.name!r} ({spec.study_hash}): {summary.total_units} units, "
               f"{summary.already_done} already in the store, {summary.ok} computed, {len(summary.failed)} failed, "
               f"{summary.wall_s:.1f}s → {store_path}")
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
    n_units = len(spec.datasets) * len(spec.methods)
    click.echo(f"study {spec.name!r}: {len(spec.datasets)} dataset variants × {len(spec.methods)} methods = "
               f"{n_units} units, k up to {spec.k_max}, metric {spec.metric}")
    for m in spec.methods:
        click.echo(f"  {m.name} {m.params} k={m.ks[0]}..{m.ks[-1]} ({len(m.ks)} values)")


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

    from odeval.bench import ResultStore, run_study, study_from_dict
    from odeval.bench.demo import demo_study

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = study_from_dict(demo_study(k_range), source="odeval demo")
    store_path = out / "results.duckdb"
    click.echo(f"demo study: {len(spec.datasets)} vendored datasets × {len(spec.methods)} methods, k = {k_range}")
    summary = run_study(spec, store_path, workers=workers, progress="log" if quiet else "rich")
    click.echo(f"{summary.ok} units computed, {summary.already_done} reused, {len(summary.failed)} failed "
               f"in {summary.wall_s:.1f}s → {store_path}")
    with ResultStore(store_path, read_only=True) as rs:
        runs = rs.runs(status="ok")
    best = (runs.groupby(["dataset", "method"])["roc_auc"].max().groupby("method").mean()
            .sort_values(ascending=False))
    click.echo("\nmean over datasets of the best ROC AUC over k:")
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

    index, _ = report_from_store(store_path, report_dir, title="odeval demo study")
    click.echo(f"\nreport: {index.resolve()}")


@main.group()
def results() -> None:
    """Read and export a results store."""


@results.command("export")
@click.argument("store", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["parquet", "csv"]), default="parquet", show_default=True)
@click.option("--table", type=click.Choice(["runs", "units", "outlier_ranks", "scores", "studies"]), default="runs",
              show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
              help="Output file [default: STORE's folder/<table>.<format>].")
def results_export(store: str, fmt: str, table: str, output: str | None) -> None:
    """Export one table of a results STORE to Parquet or CSV."""
    from pathlib import Path

    from odeval.bench import ResultStore

    out = Path(output) if output else Path(store).resolve().parent / f"{table}.{fmt}"
    with ResultStore(store, read_only=True) as rs:
        rs.export(table, out, fmt)
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

    from odeval.measures import evaluate
    from odeval.measures._io import is_score_table, read_score_table, read_vector

    if labels_file is not None and dataset_file is not None:
        raise click.UsageError("give at most one of --labels and --dataset")
    try:
        if is_score_table(scores_file):
            table = read_score_table(scores_file)
            names, matrix = _select_table_columns(scores_file, table.columns, table.scores, columns)
            labels = table.labels
        else:
            if len(columns) > 1:
                raise click.UsageError("several --column values need a table written by 'odeval score'")
            if labels_file is None and dataset_file is None:
                raise click.UsageError("give --labels or --dataset (only an 'odeval score' table carries labels)")
            names = [None]
            matrix = read_vector(scores_file, what="scores", column=columns[0] if columns else None)[None, :]
            labels = None
        if labels_file is not None:
            labels = read_vector(labels_file, what="labels")
        elif dataset_file is not None:
            from odeval.data import load_dataset

            ds = load_dataset(dataset_file)
            if ds.y is None:
                raise ValueError(f"{dataset_file}: the dataset has no labels")
            labels = ds.y
        elif labels is None:
            raise click.UsageError(f"{scores_file} has no 'label' column: give --labels or --dataset")
        if ascending:
            matrix = -matrix
        results = [evaluate(labels, row, n=n) for row in matrix]
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


def _parse_ks(spec: str) -> list[int]:
    """"1:100" (inclusive), "1:100:5" (step), "10" or "1,2,5,10" → sorted unique k values."""
    out: set[int] = set()
    try:
        for part in spec.split(","):
            part = part.strip()
            if ":" in part:
                bits = [int(b) for b in part.split(":")]
                if len(bits) not in (2, 3) or (len(bits) == 3 and bits[2] < 1):
                    raise ValueError
                out.update(range(bits[0], bits[1] + 1, bits[2] if len(bits) == 3 else 1))
            else:
                out.add(int(part))
    except ValueError:
        raise click.BadParameter(f"{spec!r}: use K, K1:K2, K1:K2:STEP or a comma-separated list") from None
    if not out or min(out) < 1:
        raise click.BadParameter(f"{spec!r}: k values must be ≥ 1")
    return sorted(out)


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


def _make_detector(name: str, params: dict):
    import inspect

    from odeval.detectors import get_detector

    try:
        return get_detector(name, **params)
    except TypeError:
        accepted = [a for a in inspect.signature(type(get_detector(name)).__init__).parameters
                    if a not in ("self", "args", "kwargs")]
        unknown = sorted(set(params) - set(accepted)) or sorted(params)
        raise ValueError(f"{name}: unknown parameter(s) {', '.join(unknown)}; accepted: "
                         f"{', '.join(accepted) or 'none'}") from None


@main.command("score")
@click.argument("dataset", type=click.Path(exists=True, dir_okay=False))
@click.option("--method", "-m", "methods", multiple=True, required=True,
              help="Detector name (repeatable, case-insensitive): KNN, KNNW, LOF, SimplifiedLOF, LoOP, LDOF, "
                   "ODIN, FastABOD, KDEOS, LDF, INFLO, COF, ... (an unknown name lists all).")
@click.option("--k", "k_spec", default="1:100", show_default=True,
              help="k values: K, K1:K2 (inclusive), K1:K2:STEP or a comma-separated list.")
@click.option("--metric", default="euclidean", show_default=True,
              help="Distance: euclidean, manhattan, chebyshev, cosine, minkowski (with --p), or another scipy metric.")
@click.option("--p", "p", type=float, default=None, help="Minkowski exponent.")
@click.option("--backend", type=click.Choice(["auto", "exact", "brute", "tree", "approx"]), default="auto",
              show_default=True,
              help="kNN search: auto (exact k-d tree or brute force by dimensionality; NN-descent only where exact "
                   "cannot keep up), exact, brute, tree, or approx (NN-descent, odeval[approx]; recall reported).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the approximate backend.")
@click.option("--param", "param_items", multiple=True, metavar="[METHOD.]NAME=VALUE",
              help="Detector parameter (repeatable), e.g. LoOP.lam=2.0 or variant=elki-0.7.1 (one method).")
@click.option("--raw", is_flag=True, help="Write raw scores (the method's orientation: ODIN low = outlier).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Output file: .parquet, .csv or .npz (by extension).")
def score_cmd(dataset: str, methods: tuple[str, ...], k_spec: str, metric: str, p: float | None, backend: str,
              seed: int, param_items: tuple[str, ...], raw: bool, output: str) -> None:
    """Score DATASET with kNN detectors for every k from one exact kNN graph.

    Output table: one row per object (columns object, id, label) and one column per method and k, named
    METHOD-kNNN (e.g. LOF-007); public scores (higher = more outlying), or with --raw the method's own
    scores in columns named METHOD-kNNN-raw. A k below a method's
    minimum (KDEOS: 2) is skipped for that method with a note. .npz holds arrays scores (rows = columns of
    the table), columns, ks, labels. Example: odeval score Waveform.arff -m LOF -m KNN --k 1:100 -o s.parquet
    """
    from pathlib import Path

    import numpy as np

    from odeval.data import load_dataset
    from odeval.neighbors import knn_graph

    out = Path(output)
    if out.suffix.lower() not in (".parquet", ".csv", ".npz"):
        raise click.BadParameter(f"{output}: the extension must be .parquet, .csv or .npz", param_hint="-o")
    ks = _parse_ks(k_spec)
    method_list = list(dict.fromkeys(methods))
    params = _parse_params(param_items, method_list)
    try:
        ds = load_dataset(dataset)
        X = ds.numeric_matrix()
        detectors = {m: _make_detector(m, params[m]) for m in method_list}
        n = X.shape[0]
        if max(ks) >= n:
            raise ValueError(f"k={max(ks)} needs more than {n} objects (k counts neighbours other than the query)")
        k_max = max(det.required_k_max(max(ks)) for det in detectors.values())
        graph = knn_graph(X, k_max, metric=metric, p=p, backend=backend, seed=seed)
        click.echo(f"kNN graph: {graph.search} ({graph.search_reason})", err=True)
        if graph.approx_recall is not None:
            click.echo(f"note: approximate kNN graph, recall {graph.approx_recall:.4f} on a sample", err=True)
        columns: list[str] = []
        blocks = []
        for det in detectors.values():
            use = [k for k in ks if k >= det.info.min_k]
            if len(use) < len(ks):
                click.echo(f"note: {det.info.name} is defined for k ≥ {det.info.min_k}; skipped "
                           f"{len(ks) - len(use)} smaller k", err=True)
            if not use:
                continue
            S = det.raw_scores_all_k(graph, use) if raw else det.score_all_k(graph, use)
            blocks.append(S)
            columns += [f"{det.info.name}-{k:03d}" + ("-raw" if raw else "") for k in use]
    except (ValueError, ImportError) as exc:
        raise click.ClickException(str(exc)) from None
    scores = np.vstack(blocks) if blocks else np.empty((0, X.shape[0]))
    labels = None if ds.y is None else np.asarray(ds.y, dtype=bool)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".npz":
        extra = {} if labels is None else {"labels": labels}
        np.savez_compressed(out, scores=scores, columns=np.array(columns), ks=np.array(ks), **extra)
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
                    f"writing Parquet needs pyarrow (pip install 'odeval[parquet]'): {exc}") from None
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

    from odeval.bench import parse_k_range
    from odeval.bench.ensembles import ensemble_from_store, format_ensemble

    try:
        ks = parse_k_range(k_range) if k_range is not None else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--k-range") from None
    wanted = [m.strip() for item in methods for m in item.split(",") if m.strip()] or None
    try:
        result = ensemble_from_store(store, dataset, rate=rate, measure=measure, rule=rule, n_random=n_random,
                                     seed=seed, methods=wanted, ks=ks)
    except (ValueError, FileNotFoundError) as exc:
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
def report_cmd(store: str, out_dir: str, measure: str, statistic: str, study_hash: str | None, title: str,
               simulations: int, seed: int, permutations: int, min_outlier_pct: float | None,
               max_outlier_pct: float | None, normalized: bool | None, deduplicated: bool | None,
               ensembles: bool) -> None:
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
            max_outlier_pct=max_outlier_pct, normalized=normalized, deduplicated=deduplicated, ensembles=ensembles)
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from exc
    for message in messages:
        click.echo(f"warning: {message}", err=True)
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
    click.echo(f"kernels compiled and cached in {time.perf_counter() - t:.1f}s")

if __name__ == "__main__":  # pragma: no cover
    main()
