"""An imported PyOD / scikit-learn detector in a study unit vs calling it directly, side by side in one run.

Run (from the repository root)::

    .venv/bin/python benchmarks/custom_detector.py                       # Waveform (3,443 × 21), 7 repeats
    .venv/bin/python benchmarks/custom_detector.py --dataset PATH --repeats 3
    .venv/bin/python benchmarks/custom_detector.py --synthetic 20000x10  # no dataset file needed

For each detector it measures, in this process, the best of ``--repeats`` wall times (the two sides alternating)
of

- *direct*: what a user writes without odeval — construct the model, ``fit(X)`` and read the scores of ``X``
  (PyOD: ``decision_scores_``; scikit-learn: ``score_samples(X)``);
- *unit*: :func:`odeval.bench.execution.run_unit` on the prepared variant — what a study's worker does for one
  unit: import the class from its path, construct, fit, score, check the scores (NaN, length, constant), orient
  them and evaluate every measure of :data:`odeval.measures.MEASURES` plus the outlier ranks
  (:class:`odeval.measures.ScoringEvaluator`);

and prints both with their ratio (unit / direct; the target of issue 25 is ≤ 1.2). Loading the dataset (the
variant's *prepare* task, shared by all its units) and the store write (batched per variant) are outside both.
The seeds are fixed, so both sides compute the same scores (checked).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ODEVAL_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
DEFAULT = SHARED / "dami" / "Waveform" / "Waveform_withoutdupl_norm_v01.arff"

#: (study name, import path, fixed parameters, seed): the detectors measured.
DETECTORS = [
    ("IForest", "pyod.models.iforest:IForest", {"n_estimators": 100}, 0),
    ("HBOS", "pyod.models.hbos:HBOS", {"n_bins": 10}, None),
    ("ECOD", "pyod.models.ecod:ECOD", {}, None),
    ("COPOD", "pyod.models.copod:COPOD", {}, None),
    ("pyod_KNN", "pyod.models.knn:KNN", {"n_neighbors": 10}, None),
    ("IsolationForest", "sklearn.ensemble:IsolationForest", {"n_estimators": 100}, 0),
]


def direct(path: str, params: dict, seed: int | None, X: np.ndarray) -> np.ndarray:
    from odeval.detectors.imported import resolve_class

    cls = resolve_class(path)
    model = cls(**params, **({} if seed is None else {"random_state": seed}))
    model.fit(X)
    if path.startswith("pyod."):
        return np.asarray(model.decision_scores_, dtype=np.float64)
    return -model.score_samples(X)


def best_of_interleaved(fns: list, repeats: int) -> list[tuple[float, object]]:
    """The best wall time of each function over ``repeats`` rounds, the functions alternating within a round (on
    a shared machine a burst of load then hits both sides, not one)."""
    best = [float("inf")] * len(fns)
    out: list[object] = [None] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            out[i] = fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return list(zip(best, out, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=str(DEFAULT), help="a labelled dataset file (ARFF/MAT/NPZ/CSV)")
    ap.add_argument("--synthetic", default=None, help="NxD: a synthetic Gaussian dataset with 2%% outliers instead")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()

    from odeval.bench.config import MethodSpec
    from odeval.bench.execution import run_unit
    from odeval.bench.planning import Prepared
    from odeval.measures import MEASURES

    if args.synthetic:
        n, d = (int(v) for v in args.synthetic.lower().split("x"))
        rng = np.random.default_rng(0)
        X = rng.normal(size=(n, d))
        y = np.zeros(n, dtype=bool)
        y[: max(1, n // 50)] = True
        X[y] += 4.0
        name = f"synthetic {n}x{d}"
    else:
        from odeval.data import load_dataset

        ds = load_dataset(args.dataset)
        X, y, name = ds.numeric_matrix(), ds.y, Path(args.dataset).name
    facts = {"name": "bench", "base_dataset": "bench", "n_objects": len(X), "n_outliers": int(y.sum()),
             "n_attributes": X.shape[1]}
    prepared = Prepared(facts=facts, labels=y, graph=None, X=X)
    print(f"{name}: N={X.shape[0]}, d={X.shape[1]}, best of {args.repeats} (wall seconds, this process)")
    print(f"{'detector':<17}{'direct':>10}{'unit':>10}{'unit/direct':>13}")
    run_unit(prepared, "warm", MethodSpec("HBOS", {}, None, estimator="pyod.models.hbos:HBOS"), "", tuple(MEASURES),
             False)  # imports and compiled kernels once, outside the timings
    for study_name, path, params, seed in DETECTORS:
        spec = MethodSpec(study_name, params, None, seed=seed, estimator=path)
        (t_direct, ref), (t_unit, res) = best_of_interleaved(
            [lambda p=path, q=params, s=seed: direct(p, q, s, X),
             lambda m=spec: run_unit(prepared, "u", m, "", tuple(MEASURES), True)], args.repeats)
        if res.status != "ok":
            raise SystemExit(f"{study_name}: the unit failed: {res.error}")
        if not np.array_equal(res.scores[0][1], ref):
            raise SystemExit(f"{study_name}: the unit's scores differ from the direct call's")
        print(f"{study_name:<17}{t_direct:>10.4f}{t_unit:>10.4f}{t_unit / t_direct:>13.2f}")


if __name__ == "__main__":
    main()
