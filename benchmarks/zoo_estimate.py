"""The run time of examples/model-selection-zoo.toml, estimated from a small timed sample (issue 25).

Run (from the repository root)::

    .venv/bin/python benchmarks/zoo_estimate.py                     # the default sample of six variants
    .venv/bin/python benchmarks/zoo_estimate.py --sample Hepatitis_withoutdupl_norm_05_v01 WBC_withoutdupl_norm_v01

After a warm-up pass on the smallest sample variant (imports, numba compilation), it times, in this process (one
core, as one study worker), every unit the zoo study runs on a few sample variants
of increasing size — the twelve kNN-method units (on the variant's kNN graph, built once and timed apart) and
every estimator configuration with its first seed (the other seeds cost the same) — through
:func:`odeval.bench.execution.run_unit`, as a worker does. Then, per configuration, it interpolates the time
linearly in log N – log time between the sample sizes (the last segment's slope beyond the largest) and sums the
prediction over the N of every variant of the study. It prints the sample's times per family and the estimate
per family, in CPU minutes, and the wall time on ``--workers`` cores (the units spread evenly; the per-unit store
writes and the dataset loads are left out: seconds per variant).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "examples" / "model-selection-zoo.toml"
SAMPLE = ["Hepatitis_withoutdupl_norm_05_v01", "WBC_withoutdupl_norm_v01", "Pima_withoutdupl_norm_05_v01",
          "Waveform_withoutdupl_norm_v01", "Annthyroid_withoutdupl_norm_05_v01", "PenDigits_withoutdupl_norm_v01"]


def predict(ns: np.ndarray, ts: np.ndarray, n: float) -> float:
    """Piecewise-linear interpolation of log t over log N (the end segments extended)."""
    x, y = np.log(ns), np.log(np.maximum(ts, 1e-5))
    i = int(np.clip(np.searchsorted(x, np.log(n)) - 1, 0, len(x) - 2))
    slope = (y[i + 1] - y[i]) / (x[i + 1] - x[i])
    return float(np.exp(y[i] + slope * (np.log(n) - x[i])))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default=str(STUDY))
    ap.add_argument("--sample", nargs="+", default=SAMPLE)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    from odeval.bench import load_study
    from odeval.bench.execution import run_unit
    from odeval.bench.planning import prepare_variant
    from odeval.data import load_dataset

    study = load_study(args.study)
    by_name = {d.name: d for d in study.datasets}
    sizes = {d.name: int(load_dataset(d.path).X.shape[0]) for d in study.datasets}
    first_seed = [m for m in study.methods if m.seed in (None, 0)]
    repeats = {id(m): sum(1 for o in study.methods if o.configuration_key() == m.configuration_key())
               for m in first_seed}
    # warm-up: imports and the compiled kernels of odeval and of the PyOD models (numba), outside the timings
    smallest = min(args.sample, key=lambda s: sizes[s])
    warm = prepare_variant(by_name[smallest], [m for m in first_seed if m.is_knn] or first_seed, study.metric)
    for m in first_seed:
        run_unit(warm, "warm-up", m, study.metric, study.measures, study.keep_scores)
    times: dict[str, list[tuple[int, float]]] = defaultdict(list)  # configuration → (N, seconds of one seed)
    family_of = {}
    for name in sorted(args.sample, key=lambda s: sizes[s]):
        ref = by_name[name]
        t0 = time.process_time()
        knn = [m for m in first_seed if m.is_knn]
        prepared = prepare_variant(ref, knn or first_seed, study.metric)
        graph_s = time.process_time() - t0
        times["kNN graph"].append((sizes[name], graph_s))
        family_of["kNN graph"] = "kNN graph"
        per_family: dict[str, float] = defaultdict(float)
        for m in first_seed:
            t0 = time.process_time()
            res = run_unit(prepared, "sample", m, study.metric, study.measures, study.keep_scores)
            spent = time.process_time() - t0
            key = m.configuration_key()
            times[key].append((sizes[name], spent))
            family_of[key] = "twelve kNN methods" if m.is_knn else m.name
            per_family[family_of[key]] += spent * repeats[id(m)]
            if res.status != "ok":
                print(f"  {name} {key}: failed ({res.error[:100]})")
        line = ", ".join(f"{f} {s:.1f}" for f, s in sorted(per_family.items(), key=lambda x: -x[1]))
        print(f"{name} (N={sizes[name]}): graph {graph_s:.1f} s; units (all seeds) {sum(per_family.values()):.1f} "
              f"CPU-s: {line}", flush=True)
    totals: dict[str, float] = defaultdict(float)
    for key, points in times.items():
        ns = np.array([p[0] for p in points], dtype=float)
        ts = np.array([p[1] for p in points], dtype=float)
        mult = next((repeats[id(m)] for m in first_seed if m.configuration_key() == key), 1)
        totals[family_of[key]] += mult * sum(predict(ns, ts, n) for n in sizes.values())
    total = sum(totals.values())
    print(f"\nestimate for {len(study.datasets)} variants, {len(study.datasets) * len(study.methods)} units:")
    for family, s in sorted(totals.items(), key=lambda x: -x[1]):
        print(f"  {family:<20}{s / 60:>8.1f} CPU-min")
    print(f"  {'total':<20}{total / 60:>8.1f} CPU-min ≈ {total / 3600 / args.workers:.1f} h wall on {args.workers} "
          "cores")


if __name__ == "__main__":
    main()
