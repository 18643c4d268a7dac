"""The full Campos grid through the study runner, and ELKI's batch tool on a 10-variant subset for the ratio.

Run from the repository root::

    .venv/bin/python benchmarks/study.py                  # full grid + ELKI subset
    .venv/bin/python benchmarks/study.py --limit 10       # only the first 10 variants (quick look)
    .venv/bin/python benchmarks/study.py --skip-elki
    .venv/bin/python benchmarks/study.py --conformant [--skip-elki]   # the ELKI-batch-tool configuration
    .venv/bin/python benchmarks/study.py --conformant --workers 1 --elki-from-fixtures   # ELKI's recorded times

The grid is every ``*withoutdupl_norm*`` ARFF file in ``../shared/datasets/dami``, the 12 methods of Campos et
al., k = 1..100, all measures, into a fresh DuckDB store, on all local cores. It prints units/s, total wall
time and the peak memory of this process and its workers; then it runs ELKI 0.7.1 ``ComputeKNNOutlierScores``
(one JVM per variant, followed by nothing else — ELKI's own evaluation is not timed) on 10 variants of
the same grid (one variant of each of the first 10 base datasets) and odeval's runner on the same 10, and prints
the ratio.

``--conformant`` instead runs the 15 shared reference variants (one per base dataset) three ways, side by side:
odeval's default configuration, the ELKI-batch-tool configuration ``odeval.bench.demo.CAMPOS_CKS_METHODS``
(which reproduces ``ComputeKNNOutlierScores`` cell by cell) and — unless ``--skip-elki`` — ELKI's batch tool
itself, and prints the times per variant and the ratios.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ODEVAL_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

METHODS = ["kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "FastABOD", "KDEOS", "LDF", "INFLO", "COF"]


def grid_files() -> list[Path]:
    return sorted((SHARED / "dami").glob("*/*withoutdupl_norm*.arff"))


def elki_subset(files: list[Path], n: int = 10) -> list[Path]:
    """One variant (the first by name) of each of the first ``n`` base datasets: sizes from ~50 to ~10^4
    objects, as in the grid, rather than ten draws of the same large base dataset."""
    first: dict[str, Path] = {}
    for f in files:
        first.setdefault(f.parent.name, f)
    return list(first.values())[:n]


def study_dict(files: list[Path], k_max: int, methods: list[dict] | None = None) -> dict:
    return {
        "study": {"name": "campos-grid", "k": f"1..{k_max}"},
        "datasets": [{"path": str(f)} for f in files],
        "methods": methods if methods is not None else [{"name": m} for m in METHODS],
    }


def peak_mb() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    return own, children


def run_grid(files: list[Path], k_max: int, workers: int | None,
             methods: list[dict] | None = None) -> tuple[float, int]:
    from odeval.bench import run_study, study_from_dict

    study = study_from_dict(study_dict(files, k_max, methods), source="benchmarks/study.py")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        summary = run_study(study, Path(tmp) / "grid.duckdb", workers=workers, progress="none")
        wall = time.perf_counter() - t0
    if summary.failed:
        print(f"  {len(summary.failed)} failed units, e.g. {summary.failed[0]}")
    return wall, summary.computed


def _timed_grid(files: list[Path], k_max: int, workers: int | None, methods: list[dict]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run_grid call; CPU = this process plus finished worker processes."""
    c0 = time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    wall, _ = run_grid(files, k_max, workers, methods)
    c1 = time.process_time() + resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    return wall, c1 - c0


def fixture_elki_seconds() -> dict[str, float]:
    """ELKI's ComputeKNNOutlierScores wall seconds per source file, as recorded by
    tests/fixtures/elki_cks/make_cks_fixtures.py (``elki_cks_seconds``; with ``-verbose``, load as it was)."""
    import json

    out = {}
    for f in (ROOT / "tests" / "fixtures" / "elki_cks").glob("*.json"):
        meta = json.loads(f.read_text())
        if "elki_cks_seconds" in meta:
            out[Path(meta["source"]).stem] = float(meta["elki_cks_seconds"])
    return out


def run_conformant(files: list[Path], k_max: int, workers: int | None, skip_elki: bool,
                   elki_from_fixtures: bool = False) -> None:
    """Defaults vs the ELKI-batch-tool configuration (vs ELKI) on one variant of each base dataset, and the
    two targets of issue 16 (conformant ≥ 10× faster than ELKI's batch tool in total and on every variant;
    no variant more than 5× the default configuration's time)."""
    from odeval.bench.demo import CAMPOS_CKS_METHODS, CAMPOS_METHODS
    from odeval.data import load_dataset

    subset = elki_subset(files, n=len({f.parent.name for f in files}))
    recorded = fixture_elki_seconds() if elki_from_fixtures else {}
    # compile/load every numba kernel of both configurations before timing (not counted)
    smallest = min(subset, key=lambda f: f.stat().st_size)
    for conf in (CAMPOS_METHODS, CAMPOS_CKS_METHODS):
        run_grid([smallest], k_max, workers, [dict(m) for m in conf])
    rows = []
    for f in subset:
        t_def, c_def = _timed_grid([f], k_max, workers, [dict(m) for m in CAMPOS_METHODS])
        t_cks, c_cks = _timed_grid([f], k_max, workers, [dict(m) for m in CAMPOS_CKS_METHODS])
        t_elki = c_elki = float("nan")
        if elki_from_fixtures:
            t_elki = recorded.get(f.stem, float("nan"))
        elif not skip_elki:
            from detectors import run_elki

            ds = load_dataset(f)
            res = run_elki(ds.numeric_matrix(), ds.y, min(k_max, ds.n_objects - 1), timeout=4 * 3600)
            t_elki = res["total"] if res else float("nan")
            c_elki = res.get("cpu", float("nan")) if res else float("nan")
        rows.append((f.stem, t_def, t_cks, t_elki, c_def, c_cks, c_elki))
        print(f"  {f.stem}: default {t_def:.2f}s wall / {c_def:.2f}s CPU, conformant {t_cks:.2f}s / {c_cks:.2f}s "
              f"({t_cks / t_def:.1f}x the default), ELKI {t_elki:.1f}s / {c_elki:.1f}s CPU "
              f"({t_elki / t_cks:.1f}x the conformant)", flush=True)
    tot = [sum(r[i] for r in rows) for i in (1, 2, 4, 5)]
    with_elki = [r for r in rows if r[3] == r[3]]
    e_tot, c_tot = sum(r[3] for r in with_elki), sum(r[2] for r in with_elki)
    print(f"total: default {tot[0]:.1f}s wall / {tot[2]:.1f}s CPU, conformant {tot[1]:.1f}s / {tot[3]:.1f}s "
          f"({tot[1] / tot[0]:.1f}x); on the {len(with_elki)} variants with an ELKI time: ELKI {e_tot:.1f}s, "
          f"conformant {c_tot:.1f}s" + (f" ({e_tot / c_tot:.1f}x)" if c_tot else ""))
    src = ("ELKI seconds recorded by make_cks_fixtures.py (-verbose, load as it was then)" if elki_from_fixtures
           else "ELKI run now" if not skip_elki else "ELKI skipped")
    try:
        load = "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    except OSError:
        load = "load average unknown"
    print(f"({src}; {load} at the end)")

    def target(label: str, col_c: int, col_e: int) -> None:
        have = [r for r in rows if r[col_e] == r[col_e]]
        if not have:
            print(f"TARGET conformant >= 10x faster than ELKI's batch tool ({label}): no ELKI times")
            return
        worst = min(have, key=lambda r: r[col_e] / r[col_c])
        tot_ratio = sum(r[col_e] for r in have) / sum(r[col_c] for r in have)
        ok = tot_ratio >= 10 and worst[col_e] / worst[col_c] >= 10 and len(have) == len(rows)
        print(f"TARGET conformant >= 10x faster than ELKI's batch tool, total and every variant ({label}): total "
              f"{tot_ratio:.1f}x, lowest {worst[col_e] / worst[col_c]:.1f}x ({worst[0]}), {len(have)} of {len(rows)} "
              f"variants with an ELKI time: {'MET' if ok else 'NOT MET'}")

    if not skip_elki or elki_from_fixtures:
        target("wall", 2, 3)
        if not elki_from_fixtures:
            target("CPU", 5, 6)
    for label, d, c in (("wall", 1, 2), ("CPU", 4, 5)):
        worst = max(rows, key=lambda r: r[c] / r[d])
        print(f"TARGET no variant > 5x the default configuration ({label}): highest {worst[c] / worst[d]:.1f}x "
              f"({worst[0]}), total {sum(r[c] for r in rows) / sum(r[d] for r in rows):.1f}x: "
              f"{'MET' if worst[c] / worst[d] <= 5 else 'NOT MET'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kmax", type=int, default=100)
    ap.add_argument("--limit", type=int, default=None, help="only the first N variants of the grid")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--skip-elki", action="store_true")
    ap.add_argument("--skip-grid", action="store_true", help="only the ELKI subset and odeval on the same subset")
    ap.add_argument("--conformant", action="store_true",
                    help="defaults vs the ELKI-batch-tool configuration (vs ELKI) on one variant per base dataset")
    ap.add_argument("--elki-from-fixtures", action="store_true",
                    help="with --conformant: take ELKI's times from tests/fixtures/elki_cks/*.json instead of "
                         "running it")
    args = ap.parse_args()

    files = grid_files()
    if not files:
        raise SystemExit(f"no withoutdupl_norm files under {SHARED / 'dami'}")
    if args.conformant:
        run_conformant(files, args.kmax, args.workers, args.skip_elki, args.elki_from_fixtures)
        return
    if args.limit:
        files = files[: args.limit]
    if not args.skip_grid:
        print(f"grid: {len(files)} variants × {len(METHODS)} methods, k = 1..{args.kmax}")
        wall, units = run_grid(files, args.kmax, args.workers)
        own, children = peak_mb()
        print(f"odeval runner: {units} units in {wall:.1f}s = {units / wall:.2f} units/s; "
              f"peak RSS main {own:.0f} MB, largest worker {children:.0f} MB")

    if args.skip_elki:
        return
    from detectors import run_elki  # same ELKI invocation as benchmarks/detectors.py
    from odeval.data import load_dataset

    subset = elki_subset(files)
    t_elki = 0.0
    for f in subset:
        ds = load_dataset(f)
        k_max = min(args.kmax, ds.n_objects - 1)
        res = run_elki(ds.numeric_matrix(), ds.y, k_max, timeout=4 * 3600)
        if res is None:
            return
        t_elki += res["total"]
        print(f"  ELKI {f.stem} ({ds.n_objects} x {ds.n_attributes}): {res['total']:.1f}s", flush=True)
    wall_sub, _ = run_grid(subset, args.kmax, args.workers)
    print(f"10-variant subset: ELKI ComputeKNNOutlierScores {t_elki:.1f}s (one JVM per variant, scores only); "
          f"odeval runner {wall_sub:.1f}s incl. evaluation and store; ratio {t_elki / wall_sub:.1f}x")


if __name__ == "__main__":
    main()
