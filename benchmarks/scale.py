"""Cost of the whole all-k pipeline as N grows: graph, all 12 methods for k = 1..100, every measure (issue 17).

One process, side by side: odeval (one kNN graph for k_max, then each method's scores for all k and every
external measure of each k from ``evaluate_many``), scikit-learn's ``LocalOutlierFactor`` at one k (k = 10) and
PyOD's LOF at one k (a study over k = 1..100 refits it per k: ×100, extrapolated). Data: a 10-dimensional
Gaussian mixture (5 clusters) with 1 % uniform outliers, seed 0. Costs are CPU seconds (user + sys of this
process: honest on a loaded machine); the peak RSS is the process's.

Usage: python benchmarks/scale.py N [N ...]   (e.g. 10000 30000; 100000 300000 take hours on 2 cores)
Growth exponents between the first and last N are printed, with the 10⁶ extrapolation labelled as such.
"""

from __future__ import annotations

import math
import os
import resource
import sys

import numpy as np

from odeval.detectors import available_methods, get_detector
from odeval.detectors.warmup import warmup
from odeval.measures import evaluate_many
from odeval.neighbors import knn_graph

KS = list(range(1, 101))


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def data(n: int, d: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_out = max(1, n // 100)
    centres = rng.uniform(-10, 10, size=(5, d))
    X = centres[rng.integers(0, 5, size=n - n_out)] + rng.normal(size=(n - n_out, d))
    O = rng.uniform(-14, 14, size=(n_out, d))
    y = np.r_[np.zeros(n - n_out, bool), np.ones(n_out, bool)]
    return np.vstack([X, O]), y


def run(n: int) -> dict[str, float]:
    X, y = data(n)
    costs: dict[str, float] = {}
    dets = {m: get_detector(m) for m in available_methods()}
    k_max = max(det.required_k_max(max(KS)) for det in dets.values())
    t = cpu()
    graph = knn_graph(X, k_max)
    graph.neighborhood_sizes()
    costs["graph"] = cpu() - t
    print(f"N={n}: graph {costs['graph']:.1f}s CPU", file=sys.stderr, flush=True)
    for name, det in dets.items():
        ks = [k for k in KS if k >= det.info.min_k]
        t = cpu()
        S = det.score_all_k(graph, ks)
        costs[name] = cpu() - t
        t = cpu()
        evaluate_many(y, S)
        costs[f"{name} measures"] = cpu() - t
        del S
        print(f"  {name} {costs[name]:.1f}s + measures {costs[name + ' measures']:.1f}s", file=sys.stderr, flush=True)
    costs["odeval total"] = sum(costs.values())
    from sklearn.neighbors import LocalOutlierFactor

    t = cpu()
    LocalOutlierFactor(n_neighbors=10).fit(X)
    costs["sklearn LOF k=10"] = cpu() - t
    try:
        from pyod.models.lof import LOF

        t = cpu()
        LOF(n_neighbors=10).fit(X)
        costs["PyOD LOF k=1..100 (100 refits, extrapolated)"] = 100 * (cpu() - t)
    except ImportError:
        pass
    costs["peak RSS GB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return costs


def main() -> None:
    ns = [int(a) for a in sys.argv[1:]] or [10000, 30000]
    # compile every kernel first so that no N pays it
    warmup(novelty=False)
    results = {}
    for n in ns:
        results[n] = run(n)
        print(f"N={n} done, load {os.getloadavg()[0]:.1f}: " + ", ".join(f"{k} {v:.2f}" for k, v in results[n].items()),
              file=sys.stderr, flush=True)
    head = f"{'step (CPU s)':46s}" + "".join(f"{f'N={n}':>12s}" for n in ns)
    if len(ns) > 1:
        head += f"{'exponent':>10s}{'N=1e6 (extrap.)':>17s}"
    print(head)
    for key in results[ns[0]]:
        row = f"{key:46s}" + "".join(f"{results[n][key]:12.2f}" for n in ns)
        a, b = results[ns[0]][key], results[ns[-1]][key]
        if len(ns) > 1 and a > 0 and b > 0:
            e = math.log(b / a) / math.log(ns[-1] / ns[0])
            row += f"{e:10.2f}{b * (1e6 / ns[-1]) ** e:17.0f}"
        print(row)
    print("odeval all 12 methods × k=1..100 / sklearn LOF one k: "
          + ", ".join(f"N={n}: {results[n]['odeval total'] / results[n]['sklearn LOF k=10']:.1f}" for n in ns))


if __name__ == "__main__":
    main()
