"""Cost of the Campos EM/MV supplement (issue 26): EM, MV and mc-kendall among the ten candidates of Marques et al.
(2020, §4.2) on Campos variants, and the estimate for all 262 variants.

Per variant: the twelve methods of ``examples/model-selection-campos.toml`` × k = min_k..min(100, N − 1) are scored
(not timed), the ten §4.2 candidates picked by ROC AUC (:func:`odeval.labelfree.selection.paper_candidates`),
then timed:
:func:`odeval.labelfree.selection.emmv_criteria` (what the ``em`` / ``mv`` selectors call once for both; 50 draws
of 5 attributes when d > 8, 100,000 uniform points) and the ``mc-kendall`` selector.

    python benchmarks/emmv_campos.py --compare HeartDisease_withoutdupl_norm_05_v01   # before vs after, one run
    python benchmarks/emmv_campos.py --sample          # one variant per base dataset → estimate for all 262

``--compare-locations`` runs the same candidates twice in one process, "before" with every feature draw through
the graph and query of all N objects (the location compression of :mod:`odeval.labelfree._emmv_locations` switched
off), "after" with today's code, and prints the CPU seconds, how many draws were compressed, whether EM / MV are
bit-identical, their largest relative difference and whether the EM, MV and mc-kendall picks are the same.

    python benchmarks/emmv_campos.py --compare-locations Annthyroid_withoutdupl_norm_02_v01

``--compare`` runs the same candidates twice in one process: "before" with novelty LDOF through the dense-block
path it had before issue 26 (``LDOF._novelty_blocks``, kept as the path of metrics without a numba kernel), "after"
with today's code, and checks that EM and MV are bit-identical. ``--sample`` times today's code on the first
variant (by name) of each base dataset and estimates the whole collection as Σ_base (CPU seconds of its sampled
variant × its number of variants) / 2 cores. Run it niced on a quiet machine; it prints CPU seconds (process time of
all threads) beside the wall time, which is the number to read on the shared machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DAMI = Path(os.environ.get("ODEVAL_SHARED_DATASETS", ROOT.parent / "shared" / "datasets")) / "dami"
METHODS = [("kNN", {}), ("kNNW", {}), ("LOF", {}), ("SimplifiedLOF", {}), ("LoOP", {}), ("LDOF", {}), ("ODIN", {}),
           ("KDEOS", {}), ("COF", {}), ("FastABOD", {}), ("LDF", {"h": 1.0, "c": 0.1}), ("INFLO", {})]


def variants() -> dict[str, list[Path]]:
    """Base dataset → its ``*_withoutdupl_norm*.arff`` variants (the 262 of the Campos study), sorted by name."""
    out: dict[str, list[Path]] = {}
    for p in sorted(DAMI.glob("*/*_withoutdupl_norm*.arff")):
        out.setdefault(p.parent.name, []).append(p)
    return out


def ten_candidates(path: Path) -> tuple[np.ndarray, np.ndarray, list]:
    """X, the ten candidates' scores (10, N) and their keys, picked by ROC AUC among all method × k (kept in
    ``$EMMV_CAMPOS_CACHE/<variant>.npz`` when that variable names a folder, so that reruns time EM/MV only)."""
    from odeval._key import ScoringKey
    from odeval.data import load_dataset

    cache = os.environ.get("EMMV_CAMPOS_CACHE")
    file = Path(cache) / f"{path.stem}.npz" if cache else None
    if file is not None and file.exists():
        z = np.load(file)
        return (load_dataset(str(path)).numeric_matrix(), z["S"],
                [ScoringKey.parse(str(k)) for k in z["keys"]])
    X, S, keys = _pick(path)
    if file is not None:
        file.parent.mkdir(parents=True, exist_ok=True)
        np.savez(file, S=S, keys=np.array([k.name for k in keys]))
    return X, S, keys


def _pick(path: Path) -> tuple[np.ndarray, np.ndarray, list]:
    from odeval._key import ScoringKey
    from odeval.data import load_dataset
    from odeval.detectors import get_detector
    from odeval.labelfree.selection import paper_candidates
    from odeval.measures._ranking import finite_for_ranking, roc_auc
    from odeval.neighbors import knn_graph

    ds = load_dataset(str(path))
    X = ds.numeric_matrix()
    n = X.shape[0]
    graph = knn_graph(X, min(100, n - 1))
    keys, scores = [], []
    for method, params in METHODS:
        det = get_detector(method, **params)
        ks = list(range(det.info.min_k, min(100, n - 1) + 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            S = det.score_all_k(graph, ks)
        for k, s in zip(ks, S, strict=True):
            keys.append(ScoringKey.make(method, params, setting={"k": k}))
            scores.append(finite_for_ranking(s))
    quality = np.array([roc_auc(ds.y, s) if np.ptp(s) > 0 else np.nan for s in scores])
    pick = paper_candidates(quality, 10)
    return X, np.array([scores[i] for i in pick]), [keys[i] for i in pick]


def warm_up() -> None:
    """Load numba's compiled kernels (cached on disk) before timing: every novelty method on and off the paths
    that depend on N (leaf search, LDOF's distance table) and on duplicates (location-compressed draws), and
    mc-kendall."""
    from odeval._key import ScoringKey
    from odeval.labelfree.selection import emmv_criteria, run_selector

    names = ["kNN-002", "kNNW-002", "LOF-002", "SimplifiedLOF-002", "LoOP-002", "LDOF-003"]
    for n in (40, 2100):
        X = np.random.default_rng(0).random((n, 10))
        emmv_criteria(names, X, draws=1, n_generated=500)
    # a draw of few distinct points: the location-compressed kernels (odeval.labelfree._emmv_locations)
    X = np.random.default_rng(0).integers(0, 2, size=(400, 10)).astype(float)
    emmv_criteria(names, X, draws=2, n_generated=500)
    S = np.random.default_rng(1).random((len(names), 40))
    run_selector("mc-kendall", S, [ScoringKey.parse(k) for k in names])


def timed(X: np.ndarray, S: np.ndarray, keys: list, draws: int = 50) -> tuple[float, float, tuple]:
    """Wall and CPU seconds of EM + MV (one emmv_criteria call) and mc-kendall, and the values."""
    from odeval.labelfree.selection import emmv_criteria, run_selector

    wall, cpu = time.perf_counter(), time.process_time()
    em, mv, excluded = emmv_criteria(keys, X, seed=0, draws=draws)
    pick = run_selector("mc-kendall", S, keys).index
    return time.perf_counter() - wall, time.process_time() - cpu, (em, mv, excluded, pick)


def _old_ldof(self, graph, query, ks):
    """Novelty LDOF as before issue 26: dense (w+1)² blocks of member distances built in Python."""
    from odeval.detectors.base import check_ks

    ks_arr = check_ks(ks, int(graph.n_objects) + 1, self.info, query.k_max)
    uniq, inverse = np.unique(ks_arr, return_inverse=True)
    sizes = np.ascontiguousarray(query.neighborhood_sizes()[:, uniq - 1].T)
    return self._novelty_blocks(graph, query, sizes)[inverse.reshape(-1)]


def compare(name: str) -> None:
    from odeval.detectors.ldof import LDOF

    path = next(p for ps in variants().values() for p in ps if p.stem == name)
    X, S, keys = ten_candidates(path)
    print(f"{name}: N = {X.shape[0]}, d = {X.shape[1]}; candidates {', '.join(k.name for k in keys)}")
    warm_up()
    new_fn = LDOF.novelty_raw_scores_all_k
    LDOF.novelty_raw_scores_all_k = _old_ldof
    try:
        w_old, c_old, v_old = timed(X, S, keys)
    finally:
        LDOF.novelty_raw_scores_all_k = new_fn
    w_new, c_new, v_new = timed(X, S, keys)
    same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(v_old[:2], v_new[:2], strict=True))
    same = same and v_old[2:] == v_new[2:]
    print(f"before: {w_old:7.1f} s wall {c_old:7.1f} s CPU")
    print(f"after:  {w_new:7.1f} s wall {c_new:7.1f} s CPU   ({c_old / c_new:.1f}x CPU)")
    print(f"EM, MV, exclusions, mc-kendall pick bit-identical: {same}")
    print("EM", v_new[0].tolist())
    print("MV", v_new[1].tolist())


def compare_locations(name: str) -> None:
    """Before (no location compression) vs after on one variant: CPU, values, picks (module docstring)."""
    from odeval.labelfree import _emmv_locations as loc

    path = next(p for ps in variants().values() for p in ps if p.stem == name)
    X, S, keys = ten_candidates(path)
    print(f"{name}: N = {X.shape[0]}, d = {X.shape[1]}; candidates {', '.join(k.name for k in keys)}", flush=True)
    warm_up()
    calls = []
    compress_draw = loc.compress_draw

    def counting(*args, **kwargs):
        out = compress_draw(*args, **kwargs)
        calls.append(out is not None)
        return out

    saved = loc.MIN_MULTIPLICITY
    loc.MIN_MULTIPLICITY = 2**62  # no draw qualifies: every draw through the graph and query of all N objects
    try:
        print(f"uptime: {os.popen('uptime').read().strip()}", flush=True)
        w_old, c_old, v_old = timed(X, S, keys)
    finally:
        loc.MIN_MULTIPLICITY = saved
    print(f"before: {w_old:7.1f} s wall {c_old:7.1f} s CPU (load {os.getloadavg()[0]:.1f})", flush=True)
    loc.compress_draw = counting
    try:
        w_new, c_new, v_new = timed(X, S, keys)
    finally:
        loc.compress_draw = compress_draw
    print(f"after:  {w_new:7.1f} s wall {c_new:7.1f} s CPU (load {os.getloadavg()[0]:.1f})   "
          f"({c_old / c_new:.1f}x CPU); draws compressed {sum(calls)} of {len(calls)}", flush=True)
    print(f"uptime: {os.popen('uptime').read().strip()}")
    same = all(np.array_equal(a, b, equal_nan=True) for a, b in zip(v_old[:2], v_new[:2], strict=True))
    rel = max(float(np.nanmax(np.abs(a - b) / np.abs(b))) if np.isfinite(b).any() else 0.0
              for a, b in zip(v_old[:2], v_new[:2], strict=True))
    picks = [(int(np.nanargmax(v[0])), int(np.nanargmin(v[1])), v[3]) for v in (v_old, v_new)]
    print(f"EM, MV bit-identical: {same}; largest relative difference {rel:.2e}; exclusions same: "
          f"{v_old[2] == v_new[2]}; EM / MV / mc-kendall picks {picks[1]} same: {picks[0] == picks[1]}")
    print("EM", v_new[0].tolist())
    print("MV", v_new[1].tolist())


def sample(bases: list[str] | None = None, draws: int = 50, per_base: int = 1) -> None:
    """Time the first ``per_base`` variants (by name) of each base dataset and estimate all its variants.

    With ``draws`` < 50, EM/MV run that many feature draws and their time is scaled by 50 / draws where the
    variant sub-samples features (d > 8; every draw costs about the same: one graph, one query, the scores); the
    values printed are then those of the shorter run."""
    by_base = variants()
    if bases:
        by_base = {b: by_base[b] for b in bases}
    est = 0.0
    warm = False
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores); draws timed: {draws} of 50", flush=True)
    for paths in by_base.values():
        cpus = []
        for path in paths[:per_base]:
            X, S, keys = ten_candidates(path)
            if not warm:
                warm_up()
                warm = True
            const = np.ptp(X, axis=0) <= 0
            note = ""
            if const.any():  # emmv_criteria refuses constant attributes (zero-width box): time it without them
                note = f" ({int(const.sum())} constant attributes dropped)"
                X = X[:, ~const]
            scale = 50 / draws if X.shape[1] > 8 else 1.0
            wall, cpu, (em, mv, _excluded, _pick) = timed(X, S, keys, draws=draws)
            cpus.append(cpu * scale)
            novelty = sum(1 for k in keys if k.method in {"kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF"})
            k_max = max((int(k.name.rsplit("-", 1)[1]) for k in keys
                         if k.method in {"kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF"}), default=0)
            finite = f"{int(np.isfinite(em).sum()):2d}/{int(np.isfinite(mv).sum()):2d}"
            print(f"{path.stem:45s} N={X.shape[0]:5d} d={X.shape[1]:3d} variants={len(paths):3d} "
                  f"novelty-capable={novelty:2d} k_max={k_max:3d} EM/MV finite={finite}  "
                  f"{wall:7.1f} s wall {cpu:7.1f} s CPU -> {cpu * scale:7.1f} CPU s for 50 draws "
                  f"(load {os.getloadavg()[0]:.1f}){note}", flush=True)
        est += float(np.mean(cpus)) * len(paths)
    total = sum(len(v) for v in by_base.values())
    print(f"ESTIMATE all {total} variants: {est / 60:.1f} CPU-min, {est / 2 / 60:.1f} min wall on 2 cores")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compare", metavar="VARIANT", help="before vs after on one variant (file stem)")
    ap.add_argument("--compare-locations", metavar="VARIANT",
                    help="without vs with the location compression of draws of few distinct points, one variant")
    ap.add_argument("--sample", action="store_true", help="one variant per base dataset, estimate for all 262")
    ap.add_argument("--bases", nargs="+", help="with --sample: only these base datasets (estimate for their variants)")
    ap.add_argument("--draws", type=int, default=50, help="with --sample: feature draws timed (scaled to 50)")
    ap.add_argument("--per-base", type=int, default=1, help="with --sample: variants timed per base dataset")
    args = ap.parse_args(argv)
    if args.compare:
        compare(args.compare)
    if args.compare_locations:
        compare_locations(args.compare_locations)
    if args.sample:
        sample(args.bases, args.draws, args.per_base)
    if not (args.compare or args.compare_locations or args.sample):
        ap.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
