"""The partitioned (Dask) graph and scoring: 1 vs 2 worker processes, side by side in one run (issue 17).

For each worker count W a fresh ``LocalCluster(n_workers=W, processes=True, threads_per_worker=1)`` (numba: one
thread per worker, so W workers use W cores) scores the same data: the exact graph by blocks (2 per worker), then
each method for every k. The kernels are loaded in every worker on a tiny data set first (not timed). Prints wall
seconds and the CPU seconds of every worker process (``client.run(process_time)``), so that on a loaded machine
the parallel cost can be read without the wall clock: "critical path" = the largest worker CPU. The scores of W = 1
and W = 2 are compared bit for bit. Also prints the per-object costs that docs/scaling.md uses for 10⁸ objects.

Usage: python benchmarks/dask_blocks.py [--n 200000] [--d 10] [--k 1:100] [--methods LOF,kNN] [--workers 1,2]
Target line: "speed-up W=2 vs W=1: wall …×, CPU critical path …×".
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import data  # (the same Gaussian mixture as benchmarks/scale.py)


def _cpu() -> float:
    return time.process_time()


def run(X: np.ndarray, workers: int, ks: str, methods: list[str], blocks_per_worker: int) -> dict:
    from distributed import Client, LocalCluster, wait

    from odeval.bench.distributed import PartitionedGraph, partitioned
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import required_graph_k, score_ks

    dets = [get_detector(m) for m in methods]
    k_graph = max(required_graph_k(d, ks, len(X)) for d in dets)
    out: dict = {"workers": workers}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR, env={"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}) as cl, \
            Client(cl) as client:
        # load (or compile) every kernel in every worker, untimed
        Xw = X[:: max(1, len(X) // 400)][:400]
        with PartitionedGraph(client, Xw, min(k_graph, 50), n_blocks=2 * workers) as gw:
            for d in dets:
                score_ks(partitioned(d, gw), gw, f"1..{min(k_graph, 50)}")
        cpu0 = client.run(_cpu)
        t0 = time.perf_counter()
        g = PartitionedGraph(client, X, k_graph, n_blocks=blocks_per_worker * workers)
        wait(g.bases)
        out["graph_wall"] = time.perf_counter() - t0
        cpu1 = client.run(_cpu)
        out["graph_cpu"] = {w: cpu1[w] - cpu0[w] for w in cpu0}
        digest = hashlib.sha256()
        for d in dets:
            t1 = time.perf_counter()
            c0 = client.run(_cpu)
            scored = score_ks(partitioned(d, g), g, ks)
            c1 = client.run(_cpu)
            out[f"{d.info.name}_wall"] = time.perf_counter() - t1
            out[f"{d.info.name}_cpu"] = {w: c1[w] - c0[w] for w in c0}
            digest.update(np.ascontiguousarray(scored.scores).tobytes())
        cpu2 = client.run(_cpu)
        out["total_wall"] = time.perf_counter() - t0
        out["cpu"] = {w: cpu2[w] - cpu0[w] for w in cpu0}
        out["sha256"] = digest.hexdigest()
        out["k_graph"] = k_graph
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", default="1:100")
    ap.add_argument("--methods", default="LOF,kNN")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--blocks-per-worker", type=int, default=2)
    a = ap.parse_args()
    X, _ = data(a.n, a.d)
    methods = a.methods.split(",")
    print(f"N={a.n} d={a.d} k={a.k} methods={methods}; load {os.getloadavg()[0]:.1f} at start", flush=True)
    res = []
    for w in (int(v) for v in a.workers.split(",")):
        r = run(X, w, a.k, methods, a.blocks_per_worker)
        res.append(r)
        cpus = sorted(r["cpu"].values())
        print(f"W={w}: wall {r['total_wall']:.1f} s (graph {r['graph_wall']:.1f} s"
              + "".join(f", {m} {r[m + '_wall']:.1f} s" for m in (d for d in methods for d in [_name(d)]))
              + f"); worker CPU s {[round(c, 1) for c in cpus]} (sum {sum(cpus):.1f}); graph CPU "
              f"{sum(r['graph_cpu'].values()):.1f} s; scores sha256 {r['sha256'][:16]}", flush=True)
    base = res[0]
    for r in res[1:]:
        same = "bit-identical" if r["sha256"] == base["sha256"] else "DIFFERENT"
        print(f"speed-up W={r['workers']} vs W={base['workers']}: wall {base['total_wall'] / r['total_wall']:.2f}×, "
              f"CPU critical path {max(base['cpu'].values()) / max(r['cpu'].values()):.2f}×; "
              f"total CPU ratio {sum(r['cpu'].values()) / sum(base['cpu'].values()):.2f}; scores {same}")
    n = a.n
    g_cpu = sum(base["graph_cpu"].values())
    print(f"per object (W={base['workers']}): graph {g_cpu / n * 1e6:.1f} µs CPU at N={n} "
          f"(∝ N: {g_cpu / n / n * 1e12:.3f} ps per object pair)"
          + "".join(f", {m} {sum(base[_name(m) + '_cpu'].values()) / n * 1e6:.1f} µs" for m in methods)
          + f"; load {os.getloadavg()[0]:.1f} at end")


def _name(m: str) -> str:
    from odeval.detectors import get_detector

    return get_detector(m).info.name


if __name__ == "__main__":
    main()
