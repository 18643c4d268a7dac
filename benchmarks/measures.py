"""Speed of ``odeval.measures.evaluate`` (all measures) against scikit-learn's roc_auc_score + average_precision_score.

Random scores with ties (rounded to 3 decimals), 5 % outliers, on 10^3, 10^5 and 10^7 objects. Each timing is the
best of several repeats (fewer for large inputs). Also checks that the shared numbers agree.

    .venv/bin/python benchmarks/measures.py [--sizes 1000 100000 10000000] [--seed 0]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

from odeval.measures import evaluate


def best_time(fn, repeat: int) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10**3, 10**5, 10**7])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--decimals", type=int, default=3, help="round scores to this many decimals (ties)")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{'N':>10} {'distinct':>9} {'odeval evaluate':>16} {'sklearn AUC+AP':>15} {'speed-up':>9}  max |diff|")
    for n in args.sizes:
        y = rng.random(n) < 0.05
        y[:2] = (True, False)
        s = np.round(rng.normal(size=n) + 1.5 * y, args.decimals)
        repeat = 20 if n <= 10**4 else (5 if n <= 10**6 else 2)
        res = evaluate(y, s)
        ref = (roc_auc_score(y, s), average_precision_score(y, s))
        diff = max(abs(res["roc_auc"] - ref[0]), abs(res["average_precision"] - ref[1]))
        t_ours = best_time(lambda: evaluate(y, s), repeat)  # noqa: B023
        t_sk = best_time(lambda: (roc_auc_score(y, s), average_precision_score(y, s)), repeat)  # noqa: B023
        print(
            f"{n:>10} {np.unique(s).size:>9} {t_ours * 1e3:>13.2f} ms {t_sk * 1e3:>12.2f} ms "
            f"{t_sk / t_ours:>8.1f}x  {diff:.1e}"
        )


if __name__ == "__main__":
    main()
