"""Speed of odeval's Excess-Mass / Mass-Volume estimators against the chapter's loop over every unique score.

Part 1 — estimators. 10^5 scored points (a 5-d standard normal, scored by its density) and 10^5 uniform points
in their bounding box. The reference below is a faithful transcription of the chapter's estimator as its
authors computed it (EMMV_benchmarks, ``em.py``): EM = running maximum over every unique data score ``u`` of
``P_n(s ≥ u) − t·Leb(s ≥ u)`` on the 10,000-point t grid, integrated up to the first t with EM ≤ 0.9; MV = the
loop over the α grid that adds one object at a time. (The authors' ``em`` uses strict ``>`` sets; the reference
uses ``≥`` as the chapter's definition and odeval do.) Both must give the same values; the script prints the
largest differences of curves and criteria.

Part 2 — feature sub-sampling. ``emmv`` with IsolationForest, m = 50 draws of d' = 5 features, 10^5 uniform
points per draw, on arrhythmia (452 × 274, ODDS; constant attributes dropped, standardised; fitted and
evaluated on all objects), with 1 and 2 worker processes.

    .venv/bin/python benchmarks/emmv.py [--n 100000] [--n-uniform 100000] [--skip-reference] [--skip-arrhythmia]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import auc

from odeval.measures.internal import emmv, excess_mass, mass_volume


def reference_em(t, t_max, volume_support, s_unif, s_X, n_generated):
    """The chapter's EM estimator, one pass per unique score (s = normality: higher = more normal)."""
    EM_t = np.zeros(t.shape[0])
    n_samples = s_X.shape[0]
    for u in np.unique(s_X):
        EM_t = np.maximum(EM_t, 1.0 / n_samples * (s_X >= u).sum()
                          - t * (s_unif >= u).sum() / n_generated * volume_support)
    amax = np.argmax(EM_t <= t_max) + 1
    if amax == 1:  # never reached t_max
        return np.nan, EM_t
    return auc(t[:amax], EM_t[:amax]), EM_t


def reference_mv(axis_alpha, volume_support, s_unif, s_X, n_generated):
    """The chapter's MV estimator: walk down the sorted scores until the mass reaches each α."""
    n_samples = s_X.shape[0]
    s_X_argsort = s_X.argsort()
    mass = 0
    cpt = 0
    u = s_X[s_X_argsort[-1]]
    mv = np.zeros(axis_alpha.shape[0])
    for i in range(axis_alpha.shape[0]):
        while mass < axis_alpha[i]:
            cpt += 1
            u = s_X[s_X_argsort[-cpt]]
            mass = 1.0 / n_samples * cpt
        mv[i] = float((s_unif >= u).sum()) / n_generated * volume_support
    return auc(axis_alpha, mv), mv


def best_of(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def part_estimators(n, n_uniform, seed, skip_reference):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    lo, hi = X.min(0), X.max(0)
    volume = float(np.prod(hi - lo))
    U = rng.uniform(lo, hi, size=(n_uniform, 5))

    def density(Z):
        return np.exp(-0.5 * (Z**2).sum(1))

    s_x, s_u = -density(X), -density(U)  # odeval orientation: higher = more outlying
    excess_mass(s_x[:100], s_u[:100], volume)  # numba kernel: compile / load from cache outside the timing
    t_ode, (em, mv) = best_of(lambda: (excess_mass(s_x, s_u, volume), mass_volume(s_x, s_u, volume)), 3)
    print(f"estimators: {n} scored + {n_uniform} uniform points, {np.unique(s_x).size} distinct scores")
    print(f"  odeval   EM + MV: {t_ode:8.3f} s   EM = {em.criterion:.10g}  MV = {mv.criterion:.10g}")
    if skip_reference:
        return
    t0 = time.perf_counter()
    em_ref, em_curve = reference_em(em.t, 0.9, volume, -s_u, -s_x, n_uniform)
    mv_ref, mv_curve = reference_mv(mv.alpha, volume, -s_u, -s_x, n_uniform)
    t_ref = time.perf_counter() - t0
    print(f"  chapter  EM + MV: {t_ref:8.3f} s   EM = {em_ref:.10g}  MV = {mv_ref:.10g}")
    print(f"  speed-up {t_ref / t_ode:.0f}x; max |ΔEM curve| = {np.max(np.abs(em_curve - em.em)):.3g}, "
          f"max |ΔMV curve| = {np.max(np.abs(mv_curve - mv.mv)):.3g}, "
          f"ΔEM = {abs(em_ref - em.criterion):.3g}, ΔMV = {abs(mv_ref - mv.criterion):.3g}")


def part_arrhythmia(datasets, seed):
    from odeval.data import load_dataset

    path = datasets / "odds" / "arrhythmia.mat"
    if not path.is_file():
        print(f"arrhythmia: {path} not found, skipped")
        return
    X = load_dataset(path).numeric_matrix()
    print(f"arrhythmia: {X.shape[0]} x {X.shape[1]}", end="")
    X = X[:, X.std(0) > 0]
    X = (X - X.mean(0)) / X.std(0)
    print(f" ({X.shape[1]} non-constant attributes kept)")
    emmv("iforest", X[:, :5], draws=1, n_generated=1000, max_dim=0)  # warm-up (imports, numba)
    rng = np.random.default_rng(seed)
    s_x, s_u = rng.normal(size=X.shape[0]), rng.normal(size=100_000)
    t0 = time.perf_counter()
    for _ in range(50):
        excess_mass(s_x, s_u, 1.0, warn=False)
        mass_volume(s_x, s_u, 1.0, warn=False)
    print(f"  of which odeval's EM + MV estimators, 50 draws: {time.perf_counter() - t0:.1f} s "
          "(the rest: the detector's fits and scoring 10^5 uniform points per draw)")
    for jobs in (1, 2):
        t0 = time.perf_counter()
        res = emmv("iforest", X, draws=50, features=5, seed=seed, n_jobs=jobs)
        dt = time.perf_counter() - t0
        print(f"  iForest, m = 50, d' = 5, 10^5 uniform points/draw, n_jobs = {jobs}: {dt:6.1f} s   "
              f"EM = {res.em:.4g}  MV = {res.mv:.4g}  (failed draws: EM {res.em_failed}, MV {res.mv_failed})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--n-uniform", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--skip-arrhythmia", action="store_true")
    args = ap.parse_args()
    print(f"load average: {os.getloadavg()[0]:.1f} (2 cores)")
    part_estimators(args.n, args.n_uniform, args.seed, args.skip_reference)
    if not args.skip_arrhythmia:
        root = Path(__file__).resolve().parents[1]
        datasets = Path(os.environ.get("ODEVAL_SHARED_DATASETS", root.parent / "shared" / "datasets"))
        part_arrhythmia(datasets, args.seed)
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
