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
itself (``ComputeKNNOutlierScores`` then ``EvaluatePrecomputedOutlierScores``, one JVM each, per variant). odeval
runs each configuration as one study over all the variants on one worker; :class:`VariantMeter` attributes its
time to the variants (loading, graph, units, the variant's store transaction) and reports the per-study rest
(store, file hashing, planning) apart; the same study in a fresh process (start-up, imports, numba's kernel
cache) gives the total. It prints the times per variant and the TARGET lines of issue 16: in total (the fresh
process against ELKI's runs summed) and on every variant (each variant's share against ELKI on it), in wall and
CPU seconds, and conformant against default per variant. ``--only Glass Pima`` restricts the variants.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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


def _driver_module() -> Any:
    """The module whose ``prepare_variant`` / ``run_unit`` the study driver calls (odeval.bench.execution; the
    single module odeval.bench.runner before issue 23)."""
    try:
        from odeval.bench import execution
    except ImportError:
        from odeval.bench import runner as execution
    return execution


class VariantMeter:
    """CPU and wall seconds of one study, attributed to its variants.

    While active, it wraps the runner's per-variant work — ``prepare_variant`` (loading, kNN graph),
    ``run_unit`` (scoring and evaluation of one method at all k) and ``ResultStore.write_units`` (the store
    transaction of a variant's units) — and adds each call's time to the variant it works on. What remains of
    the study's time is per study, not per variant: opening the store, hashing the dataset files, planning,
    registering the study, closing the store. With ``workers=1`` everything runs in this process, in order.
    """

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}

    def _add(self, names: list[str], c0: float, w0: float) -> None:
        dc, dw = time.process_time() - c0, time.perf_counter() - w0
        for name in names:
            self.cpu[name] = self.cpu.get(name, 0.0) + dc / len(names)
            self.wall[name] = self.wall.get(name, 0.0) + dw / len(names)

    def __enter__(self) -> VariantMeter:
        from odeval.bench.store import ResultStore

        runner = _driver_module()

        # write_units: the store transaction of a variant's units (odeval before 2026-11-26: write_unit per unit)
        self._writer = "write_units" if hasattr(ResultStore, "write_units") else "write_unit"
        self._saved = (runner.prepare_variant, runner.run_unit, getattr(ResultStore, self._writer))
        prepare, unit, write = self._saved

        def prepare_variant(ref, *args, **kwargs):
            c0, w0 = time.process_time(), time.perf_counter()
            try:
                return prepare(ref, *args, **kwargs)
            finally:
                self._add([ref.name], c0, w0)

        def run_unit(prepared, *args, **kwargs):
            c0, w0 = time.process_time(), time.perf_counter()
            try:
                return unit(prepared, *args, **kwargs)
            finally:
                self._add([prepared.facts["name"]], c0, w0)

        def write_units(store, results, **kwargs):
            c0, w0 = time.process_time(), time.perf_counter()
            try:
                return write(store, results, **kwargs)
            finally:
                self._add([r.dataset["name"] for r in (results if isinstance(results, list) else [results])], c0, w0)

        runner.prepare_variant, runner.run_unit = prepare_variant, run_unit
        setattr(ResultStore, self._writer, write_units)
        return self

    def __exit__(self, *exc: object) -> None:
        from odeval.bench.store import ResultStore

        runner = _driver_module()

        runner.prepare_variant, runner.run_unit = self._saved[:2]
        setattr(ResultStore, self._writer, self._saved[2])


def metered_study(files: list[Path], k_max: int, methods: list[dict]) -> tuple[VariantMeter, float, float]:
    """One study over ``files`` on one worker into a fresh store: (per-variant meter, study CPU s, study wall s)."""
    with VariantMeter() as meter:
        c0, w0 = time.process_time(), time.perf_counter()
        run_grid(files, k_max, 1, methods)
        return meter, time.process_time() - c0, time.perf_counter() - w0


COLD_STUDY = """
import sys, tempfile
from pathlib import Path
from odeval.bench import run_study, study_from_dict
from odeval.bench.demo import {conf}
files = sys.argv[1:]
study = study_from_dict({{"study": {{"name": "cold", "k": "1..{k_max}"}}, "datasets": [{{"path": f}} for f in files],
                         "methods": [dict(m) for m in {conf}]}}, source="benchmarks/study.py")
with tempfile.TemporaryDirectory() as tmp:
    s = run_study(study, Path(tmp) / "cold.duckdb", workers=1, progress="none")
assert not s.failed, s.failed
"""


def cold_study(files: list[Path], k_max: int, conf: str) -> tuple[float, float]:
    """(wall, CPU) seconds of a fresh Python process running one study over ``files`` (interpreter start,
    imports, numba's kernel cache, store, every variant): what a user pays for ``odeval study run``."""
    import subprocess

    import odeval

    code = COLD_STUDY.format(conf=conf, k_max=k_max)
    src = str(Path(odeval.__file__).resolve().parents[1])  # the odeval this benchmark imported
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *map(str, files)], check=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def run_conformant(files: list[Path], k_max: int, workers: int | None, skip_elki: bool,
                   elki_from_fixtures: bool = False, only: list[str] | None = None) -> None:
    """Defaults vs the ELKI-batch-tool configuration vs ELKI's batch tool on one variant of each base dataset,
    and the targets of issue 16 (conformant ≥ 10× faster than ELKI's batch tool in total and on every variant;
    no variant more than 5× the default configuration's time).

    odeval: each configuration as **one study over all variants** (one worker, fresh store), its time attributed
    to the variants by :class:`VariantMeter` (per variant: loading, graph, every unit, the store transaction of
    the variant's units); the rest is per study. In total: the same study in a **fresh process**
    (:func:`cold_study`: start-up, imports, kernel cache and store included). ELKI: per variant
    ``ComputeKNNOutlierScores`` then ``EvaluatePrecomputedOutlierScores`` (two JVMs, as the fixture script runs
    them), each timed with ``/usr/bin/time``.
    """
    from odeval.bench.demo import CAMPOS_CKS_METHODS, CAMPOS_METHODS
    from odeval.data import load_dataset

    if workers not in (None, 1):
        print("  --conformant measures one worker (per-variant attribution needs one process); --workers ignored")
    subset = elki_subset(files, n=len({f.parent.name for f in files}))
    if only:
        subset = [f for f in subset if f.parent.name in only or f.stem in only]
    recorded = fixture_elki_seconds() if elki_from_fixtures else {}
    # load every numba kernel of both configurations before timing (not counted: per process, see the cold run)
    small = [f for f in subset if f.stat().st_size < 200_000]
    for conf in (CAMPOS_METHODS, CAMPOS_CKS_METHODS):
        run_grid(small or subset[:1], k_max, 1, [dict(m) for m in conf])
    meters = {}
    for label, conf in (("default", CAMPOS_METHODS), ("conformant", CAMPOS_CKS_METHODS)):
        meter, cpu, wall = metered_study(subset, k_max, [dict(m) for m in conf])
        fixed_c, fixed_w = cpu - sum(meter.cpu.values()), wall - sum(meter.wall.values())
        meters[label] = meter
        print(f"  {label}: one study over {len(subset)} variants in this process: {wall:.2f}s wall / {cpu:.2f}s CPU, "
              f"of which per study (store, hashing, planning; not per variant) {fixed_w:.2f}s / {fixed_c:.2f}s",
              flush=True)
    cold_w, cold_c = cold_study(subset, k_max, "CAMPOS_CKS_METHODS")
    print(f"  conformant, one fresh process for the whole study (start-up, imports, kernel cache, store): "
          f"{cold_w:.2f}s wall / {cold_c:.2f}s CPU", flush=True)

    rows = []
    for f in subset:
        name = f.stem
        d_c, c_c = meters["default"].cpu[name], meters["conformant"].cpu[name]
        d_w, c_w = meters["default"].wall[name], meters["conformant"].wall[name]
        e = {"cks_w": float("nan"), "cks_c": float("nan"), "eval_w": float("nan"), "eval_c": float("nan")}
        if elki_from_fixtures:
            e["cks_w"] = recorded.get(name, float("nan"))
        elif not skip_elki:
            from detectors import run_elki

            ds = load_dataset(f)
            res = run_elki(ds.numeric_matrix(), ds.y, min(k_max, ds.n_objects - 1), timeout=4 * 3600, evaluate=True)
            if res:
                e = {"cks_w": res["total"], "cks_c": res.get("cpu", float("nan")),
                     "eval_w": res.get("eval_total", float("nan")), "eval_c": res.get("eval_cpu", float("nan"))}
        rows.append({"name": name, "def_w": d_w, "def_c": d_c, "cks_w": c_w, "cks_c": c_c, **{
            f"elki_{k}": v for k, v in e.items()}})
        r = rows[-1]
        print(f"  {name}: default {d_w:.3f}s wall / {d_c:.3f}s CPU, conformant {c_w:.3f}s / {c_c:.3f}s "
              f"({c_c / d_c:.1f}x the default, CPU); ELKI CKS {r['elki_cks_w']:.2f}s / {r['elki_cks_c']:.2f}s CPU "
              f"+ EvaluatePrecomputed {r['elki_eval_w']:.2f}s / {r['elki_eval_c']:.2f}s CPU", flush=True)

    def elki(r: dict, unit: str, with_eval: bool = True) -> float:
        base = r[f"elki_cks_{unit}"]
        if not with_eval or elki_from_fixtures:
            return base
        return base + r[f"elki_eval_{unit}"]

    src = ("ELKI: CKS seconds recorded by make_cks_fixtures.py (-verbose, load as it was then; no "
           "EvaluatePrecomputed)" if elki_from_fixtures else "ELKI run now" if not skip_elki else "ELKI skipped")
    try:
        load = "load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())
    except OSError:
        load = "load average unknown"
    print(f"({src}; {load} at the end)")
    have = [r for r in rows if elki(r, "w") == elki(r, "w")]
    what = "CKS" if elki_from_fixtures else "CKS + EvaluatePrecomputed"
    for unit in ("w", "c") if not elki_from_fixtures else ("w",):
        label = {"w": "wall", "c": "CPU"}[unit]
        if not have:
            print(f"TARGET conformant >= 10x faster than ELKI's batch tool ({label}): no ELKI times")
            break
        e_tot = sum(elki(r, unit) for r in have)
        cold = cold_w if unit == "w" else cold_c
        ok = e_tot / cold >= 10 and len(have) == len(rows)
        print(f"TARGET conformant >= 10x faster than ELKI's batch tool in total ({label}; one fresh odeval process "
              f"for all {len(rows)} variants, start-up included, vs {len(have)} ELKI {what} runs): ELKI "
              f"{e_tot:.1f}s, odeval {cold:.2f}s: {e_tot / cold:.1f}x: {'MET' if ok else 'NOT MET'}")
        ratios = [(elki(r, unit) / r[f"cks_{unit}"], r["name"]) for r in have]
        low, low_name = min(ratios)
        ok = low >= 10 and len(have) == len(rows)
        print(f"TARGET conformant >= 10x faster than ELKI's batch tool on every variant ({label}; the variant's share "
              f"of one study vs ELKI {what} on it): lowest {low:.1f}x ({low_name}), "
              f"{len(have)} of {len(rows)} variants with an ELKI time: {'MET' if ok else 'NOT MET'}")
        if not elki_from_fixtures:
            low_cks = min((r[f"elki_cks_{unit}"] / r[f"cks_{unit}"], r["name"]) for r in have)
            print(f"  (against ComputeKNNOutlierScores alone, {label}: lowest {low_cks[0]:.1f}x ({low_cks[1]}))")
    for label, d, c in (("wall", "def_w", "cks_w"), ("CPU", "def_c", "cks_c")):
        worst = max(rows, key=lambda r: r[c] / r[d])
        print(f"TARGET no variant > 5x the default configuration ({label}): highest {worst[c] / worst[d]:.1f}x "
              f"({worst['name']}), total {sum(r[c] for r in rows) / sum(r[d] for r in rows):.1f}x: "
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
    ap.add_argument("--only", nargs="+", default=None,
                    help="with --conformant: only these base datasets (or variant names), for quick iterations")
    ap.add_argument("--elki-from-fixtures", action="store_true",
                    help="with --conformant: take ELKI's times from tests/fixtures/elki_cks/*.json instead of "
                         "running it")
    args = ap.parse_args()

    files = grid_files()
    if not files:
        raise SystemExit(f"no withoutdupl_norm files under {SHARED / 'dami'}")
    if args.conformant:
        run_conformant(files, args.kmax, args.workers, args.skip_elki, args.elki_from_fixtures, args.only)
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
