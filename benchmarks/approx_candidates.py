"""Approximate kNN graph: faiss HNSW (the backend) against the former pynndescent candidates, side by side.

    nice python benchmarks/approx_candidates.py [N] [d] [k_max]     (default 100000 10 100)

Both candidate sets go through the same exact post-processing (``_candidate_parts``); recall against brute force
on 200 seeded objects. Prints one line per generator with wall and CPU seconds (pynndescent's include its numba
compilation, which every new process pays); pynndescent is skipped if it is not installed.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from odeval.neighbors import knn_graph, resolve_metric
from odeval.neighbors.graph import _assemble, _block_rows, _candidate_parts, _select_rows


def _recall(X, g, spec, k_max, block, seed=0, size=200):
    sample = np.sort(np.random.default_rng(seed).choice(X.shape[0], size=size, replace=False)).astype(np.int64)
    hits = []
    for rr, _, ii, cc in _select_rows(X, spec, sample, k_max, block):
        for r, i, c in zip(rr, ii, cc, strict=True):
            exact = set(i[:c].tolist())
            hits.append(len(exact & set(g.indices[r, : g.counts[r]].tolist())) / len(exact))
    return float(np.mean(hits))


def main(n=100_000, d=10, k_max=100):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(n // 2, d)), rng.normal(3.0, 1.0, size=(n - n // 2, d))])
    spec, block = resolve_metric("euclidean"), _block_rows(n, None)
    w0, c0 = time.perf_counter(), time.process_time()
    g = knn_graph(X, k_max, backend="approx", recall_sample=0)
    w1, c1 = time.perf_counter(), time.process_time()
    print(f"faiss HNSW   N={n} d={d} k_max={k_max}: wall {w1 - w0:.1f} s, cpu {c1 - c0:.1f} s, "
          f"recall {_recall(X, g, spec, k_max, block):.4f}", flush=True)
    try:
        from pynndescent import NNDescent
    except ImportError:
        print("pynndescent not installed: skipped")
        return
    w0, c0 = time.perf_counter(), time.process_time()
    width = min(n, k_max + 1 + max(5, k_max // 10))
    cand, _ = NNDescent(X, n_neighbors=width, random_state=0).neighbor_graph
    g = _assemble(X, k_max, spec, _candidate_parts(X, k_max, spec, cand, block), "approx")
    w1, c1 = time.perf_counter(), time.process_time()
    print(f"pynndescent  N={n} d={d} k_max={k_max}: wall {w1 - w0:.1f} s, cpu {c1 - c0:.1f} s (with numba "
          f"compilation), recall {_recall(X, g, spec, k_max, block):.4f}", flush=True)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
