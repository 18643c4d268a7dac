"""The partitioned (Dask) graph and scoring: 1 vs 2 worker processes, index-range vs spatial blocks (issues 17, 28).

For each block assignment (``--assign index,spatial``: ranges of object numbers, or a k-d split of the data) and
each worker count W a fresh ``LocalCluster(n_workers=W, processes=True, threads_per_worker=1)`` (numba: one thread
per worker, so W workers use W cores) scores the same data — in random order, as a table usually is: the exact
graph by blocks (2 per worker), then each method for every k. The kernels are loaded in every worker on a tiny data
set first (not timed). Prints wall seconds and the CPU seconds of every worker process (``client.run(process_time)``),
so that on a loaded machine the parallel cost can be read without the wall clock: "critical path" = the largest
worker CPU. Prints the exchanged volume: the halo objects of all blocks (what one per-object exchange ships; 8 B per
float) and the graph entries crossing blocks (counted on the blocks), and the bytes the Dask workers actually sent
each other per method (``transfer_outgoing_bytes_total``). The scores of every configuration are compared bit for
bit. Also prints the per-object costs that docs/scaling.md uses for 10⁸ objects. The load average is printed at
the start and end of every configuration.

Usage: python benchmarks/dask_blocks.py [--n 200000] [--d 10] [--k 1:100] [--methods LOF,kNN] [--workers 1,2]
       [--assign index,spatial]
Target lines: "speed-up W=2 vs W=1 (ASSIGN): wall …×, CPU critical path …×", "exchange spatial vs index: …".
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


def _sent(dask_worker) -> int:
    return dask_worker.transfer_outgoing_bytes_total


def run(X: np.ndarray, workers: int, ks: str, methods: list[str], blocks_per_worker: int,
        assign: str = "spatial") -> dict:
    from distributed import Client, LocalCluster, wait

    from odeval.bench.distributed import PartitionedGraph, partitioned
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import required_graph_k, score_ks

    dets = [get_detector(m) for m in methods]
    k_graph = max(required_graph_k(d, ks, len(X)) for d in dets)
    out: dict = {"workers": workers, "assign": assign, "load0": os.getloadavg()[0]}
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR, env={"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}) as cl, \
            Client(cl) as client:
        # load (or compile) every kernel in every worker, untimed
        Xw = X[:: max(1, len(X) // 400)][:400]
        with PartitionedGraph(client, Xw, min(k_graph, 50), n_blocks=2 * workers, assign=assign) as gw:
            for d in dets:
                score_ks(partitioned(d, gw), gw, f"1..{min(k_graph, 50)}")
        cpu0 = client.run(_cpu)
        t0 = time.perf_counter()
        g = PartitionedGraph(client, X, k_graph, n_blocks=blocks_per_worker * workers, assign=assign)
        wait(g.bases)
        out["graph_wall"] = time.perf_counter() - t0
        cpu1 = client.run(_cpu)
        out["graph_cpu"] = {w: cpu1[w] - cpu0[w] for w in cpu0}
        out["volume"] = g.exchange_volume()  # (counted on the workers; not timed as a method)
        digest = hashlib.sha256()
        for d in dets:
            t1 = time.perf_counter()
            c0, s0 = client.run(_cpu), client.run(_sent)
            scored = score_ks(partitioned(d, g), g, ks)
            c1, s1 = client.run(_cpu), client.run(_sent)
            out[f"{d.info.name}_wall"] = time.perf_counter() - t1
            out[f"{d.info.name}_cpu"] = {w: c1[w] - c0[w] for w in c0}
            out[f"{d.info.name}_sent"] = sum(s1[w] - s0.get(w, 0) for w in s1)
            digest.update(np.ascontiguousarray(scored.scores).tobytes())
        cpu2 = client.run(_cpu)
        out["total_wall"] = time.perf_counter() - t0
        out["cpu"] = {w: cpu2[w] - cpu0[w] for w in cpu0}
        out["sha256"] = digest.hexdigest()
        out["k_graph"] = k_graph
    out["load1"] = os.getloadavg()[0]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", default="1:100")
    ap.add_argument("--methods", default="LOF,kNN")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--blocks-per-worker", type=int, default=2)
    ap.add_argument("--assign", default="index,spatial")
    a = ap.parse_args()
    X, _ = data(a.n, a.d)
    X = X[np.random.default_rng(0).permutation(len(X))]  # a table in random order (the generator groups clusters)
    methods = a.methods.split(",")
    print(f"N={a.n} d={a.d} k={a.k} methods={methods}; load {os.getloadavg()[0]:.1f} at start "
          f"({os.cpu_count()} cores)", flush=True)
    res = []
    for assign in a.assign.split(","):
        for w in (int(v) for v in a.workers.split(",")):
            r = run(X, w, a.k, methods, a.blocks_per_worker, assign)
            res.append(r)
            cpus = sorted(r["cpu"].values())
            v = r["volume"]
            print(f"{assign} W={w}: wall {r['total_wall']:.1f} s (graph {r['graph_wall']:.1f} s"
                  + "".join(f", {m} {r[m + '_wall']:.1f} s" for m in (_name(d) for d in methods))
                  + f"); worker CPU s {[round(c, 1) for c in cpus]} (sum {sum(cpus):.1f}); graph CPU "
                  f"{sum(r['graph_cpu'].values()):.1f} s; halo {v['halo_total']:,} objects "
                  f"({100 * v['halo_fraction']:.1f} % of N·(P−1)), cross edges {v['cross_edges']:,} of "
                  f"{v['edges']:,}; sent by the workers (with the scores to the driver)"
                  + "".join(f" {m} {r[_name(m) + '_sent'] / 1e6:.1f} MB" for m in methods)
                  + f"; scores sha256 {r['sha256'][:16]}; load {r['load0']:.1f}→{r['load1']:.1f}", flush=True)
    first = res[0]
    for assign in dict.fromkeys(r["assign"] for r in res):
        mine = [r for r in res if r["assign"] == assign]
        base = mine[0]
        for r in mine[1:]:
            print(f"speed-up W={r['workers']} vs W={base['workers']} ({assign}): wall "
                  f"{base['total_wall'] / r['total_wall']:.2f}×, "
                  f"CPU critical path {max(base['cpu'].values()) / max(r['cpu'].values()):.2f}×; "
                  f"total CPU ratio {sum(r['cpu'].values()) / sum(base['cpu'].values()):.2f}")
    same = all(r["sha256"] == first["sha256"] for r in res)
    print(f"scores of all {len(res)} configurations: {'bit-identical' if same else 'DIFFERENT'}")
    by = {(r["assign"], r["workers"]): r for r in res}
    w_max = max(r["workers"] for r in res)
    if ("index", w_max) in by and ("spatial", w_max) in by:
        i, s = by[("index", w_max)], by[("spatial", w_max)]
        iv, sv = i["volume"], s["volume"]
        print(f"exchange spatial vs index (W={w_max}, {len(iv['halo_objects'])} blocks): halo objects "
              f"{sv['halo_total']:,} vs {iv['halo_total']:,} ({iv['halo_total'] / max(sv['halo_total'], 1):.1f}× "
              f"fewer), cross edges {sv['cross_edges']:,} vs {iv['cross_edges']:,}; "
              "sent by the workers (with the scores)"
              + "".join(f" {m} {s[_name(m) + '_sent'] / 1e6:.1f} vs {i[_name(m) + '_sent'] / 1e6:.1f} MB"
                        for m in methods)
              + f"; worker CPU critical path {max(s['cpu'].values()):.1f} vs {max(i['cpu'].values()):.1f} s")
    base = res[0]
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
