"""Cost of the whole all-k pipeline as N grows: graph, the 12 methods for k = 1..100, every measure (issue 17).

Each N runs in its own child process (so its peak RSS is its own), with, side by side in that process:

* odeval: one kNN graph for k_max, then each of the 12 methods of Campos et al. (2016) scored for k = 1..100
  and evaluated k by k as a study unit does (:func:`odeval.bench.runner.evaluate_unit`: streamed scores,
  the eight measures and the outliers' ranks of every k); GLOSH is *not* included — it is not one of the 12
  and its MST is quadratic in N (docs/scaling.md);
* scikit-learn's ``LocalOutlierFactor`` at one k (k = 10) and PyOD's LOF at one k; a study over k = 1..100
  refits PyOD per k, so its cost is × 100 (extrapolated, labelled so).

Data: a 10-dimensional Gaussian mixture (5 clusters) with 1 % uniform outliers, seed 0. For every step: wall
seconds, CPU seconds (user + sys of the process, all threads: honest on a loaded machine) and the process's
peak RSS; the load average is printed with each N.

Usage::

    python benchmarks/scale.py 1000000 --no-baselines-above 300000   # the issue 28 target run, one command
    python benchmarks/scale.py 100000 300000 1000000 [--backend exact|auto|leaves|approx] [--no-baselines-above N]
    python benchmarks/scale.py --report a.json b.json      # the table of earlier runs (written with --json)

The last line is the target line of issue 28 for the largest N: all 12 methods, k = 1..100, every measure
(graph included), against 12 min wall and 6 GB peak RSS on 2 cores (issue 17's were 30 min and 8 GB), with the
ratios to both targets, the graph's search and the load average.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

import numpy as np

#: The 12 methods of Campos et al. (2016); GLOSH (quadratic) is left out.
METHODS = ["kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "KDEOS", "LDF", "INFLO", "COF",
           "FastABOD"]
KS = "1..100"
TARGET_WALL_S, TARGET_RSS_GB = 12 * 60, 6.0  # issue 28 (issue 17: 30 min, 8 GB)


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def data(n: int, d: int = 10, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_out = max(1, n // 100)
    centres = rng.uniform(-10, 10, size=(5, d))
    X = centres[rng.integers(0, 5, size=n - n_out)] + rng.normal(size=(n - n_out, d))
    O = rng.uniform(-14, 14, size=(n_out, d))
    y = np.r_[np.zeros(n - n_out, bool), np.ones(n_out, bool)]
    return np.vstack([X, O]), y


class Clock:
    """Wall and CPU seconds of a step, and the peak RSS after it."""

    def __init__(self, out: dict, name: str):
        self.out, self.name = out, name

    def __enter__(self) -> Clock:
        self.w, self.c = time.perf_counter(), cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.out[self.name] = {"wall": time.perf_counter() - self.w, "cpu": cpu() - self.c, "rss": rss_gb()}
        print(f"  {self.name}: wall {self.out[self.name]['wall']:.1f}s cpu {self.out[self.name]['cpu']:.1f}s "
              f"peak RSS {self.out[self.name]['rss']:.2f} GB, load {os.getloadavg()[0]:.1f}", file=sys.stderr,
              flush=True)


def one(n: int, backend: str, baselines: bool) -> dict:
    """All steps for one N, in this process."""
    from odeval.bench.runner import Prepared, evaluate_unit
    from odeval.bench.store import UnitResult
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import required_graph_k
    from odeval.measures import MEASURES
    from odeval.neighbors import knn_graph

    X, y = data(n)
    steps: dict = {}
    load = [os.getloadavg()[0]]
    dets = {m: get_detector(m) for m in METHODS}
    k_max = max(required_graph_k(det, KS, n) for det in dets.values())
    t_all, c_all = time.perf_counter(), cpu()
    with Clock(steps, "graph"):
        graph = knn_graph(X, k_max, backend=backend)
        graph.neighborhood_sizes()
    info = {"search": graph.search, "recall": graph.approx_recall, "width": int(graph.distances.shape[1]),
            "graph_gb": graph.memory_bytes() / 2**30}
    prepared = Prepared(facts={"name": "mixture", "n_objects": n}, labels=y, graph=graph)
    rank_rows = 0
    for name, det in dets.items():
        res = UnitResult(unit_id="u", dataset=prepared.facts, method=name, params="{}", metric="euclidean",
                         status="ok")
        with Clock(steps, name):
            evaluate_unit(res, det, prepared, KS, MEASURES, False)
        rank_rows += sum(r[1].size for r in res.ranks)
        load.append(os.getloadavg()[0])
    steps["odeval total"] = {"wall": time.perf_counter() - t_all, "cpu": cpu() - c_all, "rss": rss_gb()}
    info["rank_rows"] = rank_rows
    del graph, prepared
    if baselines:
        from sklearn.neighbors import LocalOutlierFactor

        with Clock(steps, "sklearn LOF k=10"):
            LocalOutlierFactor(n_neighbors=10).fit(X)
        try:
            from pyod.models.lof import LOF
        except ImportError:
            pass
        else:
            with Clock(steps, "PyOD LOF k=10"):
                LOF(n_neighbors=10).fit(X)
            s = steps["PyOD LOF k=10"]
            steps["PyOD LOF k=1..100 (×100, extrap.)"] = {"wall": 100 * s["wall"], "cpu": 100 * s["cpu"],
                                                          "rss": s["rss"]}
    info["load"] = [min(load), max(load)]
    return {"n": n, "steps": steps, "info": info}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ns", nargs="*", type=int, default=[100_000, 300_000, 1_000_000])
    ap.add_argument("--backend", default="auto",
                    help="knn_graph backend: auto (default, the CLI's: exact 'leaves' search at 10⁶ × 10), exact, "
                         "leaves, brute, approx")
    ap.add_argument("--no-baselines-above", type=int, default=None, metavar="N",
                    help="skip scikit-learn / PyOD for N above this (they are then not reported)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None, help="also write the results to this JSON file")
    ap.add_argument("--report", nargs="+", default=None, metavar="JSON",
                    help="only print the table of earlier runs' JSON files (in the order given)")
    args = ap.parse_args()
    if args.report:
        results = []
        for path in args.report:
            with open(path) as fh:
                results += json.load(fh)
        report(results)
        return
    if args.one:
        baselines = args.no_baselines_above is None or args.ns[0] <= args.no_baselines_above
        print(json.dumps(one(args.ns[0], args.backend, baselines)))
        return
    from odeval.detectors.warmup import warmup

    warmup(methods=METHODS, novelty=False)  # compile the kernels once: no N pays for it
    results = []
    for n in args.ns:
        print(f"N={n} (backend {args.backend}) ...", file=sys.stderr, flush=True)
        cmd = [sys.executable, __file__, str(n), "--one", "--backend", args.backend]
        if args.no_baselines_above is not None:
            cmd += ["--no-baselines-above", str(args.no_baselines_above)]
        out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(results, fh, indent=1)
    report(results)


def report(results: list[dict]) -> None:
    ns = [r["n"] for r in results]
    print(f"10-d Gaussian mixture, 1 % outliers, k = {KS}, {len(METHODS)} methods (GLOSH excluded: quadratic), "
          f"{os.cpu_count()} cores")
    for r in results:
        i = r["info"]
        rec = "" if i["recall"] is None else f", recall {i['recall']:.4f} on 200 objects"
        print(f"N={r['n']}: graph {i['search']}{rec}, width {i['width']}, graph arrays {i['graph_gb']:.2f} GB, "
              f"outlier-rank rows to the store {i['rank_rows']}, load {i['load'][0]:.1f}–{i['load'][1]:.1f}")
    keys = list(dict.fromkeys(k for r in results for k in r["steps"]))
    head = f"{'step':36s}" + "".join(f"{'N=' + str(n) + ' wall/CPU s':>26s}" for n in ns) + f"{'CPU exp.':>9s}"
    print(head)
    for key in keys:
        row, cpus = f"{key:36s}", []
        for r in results:
            s = r["steps"].get(key)
            row += f"{'—':>26s}" if s is None else f"{s['wall']:14.1f} /{s['cpu']:9.1f}"
            cpus.append(None if s is None else s["cpu"])
        pts = [(n, c) for n, c in zip(ns, cpus, strict=True) if c]
        if len(pts) > 1 and pts[0][1] > 0:
            row += f"{math.log(pts[-1][1] / pts[0][1]) / math.log(pts[-1][0] / pts[0][0]):9.2f}"
        print(row)
    print(f"{'peak RSS (GB)':36s}" + "".join(f"{r['steps']['odeval total']['rss']:26.2f}" for r in results))
    for r in results:
        s = r["steps"]
        if "sklearn LOF k=10" in s:
            print(f"N={r['n']}: odeval 12 methods × 100 k, every measure = "
                  f"{s['odeval total']['cpu'] / s['sklearn LOF k=10']['cpu']:.1f} × sklearn LOF at one k (CPU)"
                  + (f"; PyOD LOF refit per k / odeval = "
                     f"{s['PyOD LOF k=1..100 (×100, extrap.)']['cpu'] / s['odeval total']['cpu']:.1f}"
                     if "PyOD LOF k=10" in s else ""))
    last = results[-1]
    tot = last["steps"]["odeval total"]
    ok = tot["wall"] <= TARGET_WALL_S and tot["rss"] <= TARGET_RSS_GB
    i = last["info"]
    rec = "exact" if i["recall"] is None else f"recall {i['recall']:.4f}"
    print(f"TARGET N={last['n']} × 10, 12 methods, k=1..100, every measure, graph {i['search']} ({rec}): "
          f"wall {tot['wall'] / 60:.1f} min (CPU {tot['cpu'] / 60:.1f} min), peak RSS {tot['rss']:.2f} GB, "
          f"{os.cpu_count()} cores, load {i['load'][0]:.1f}–{i['load'][1]:.1f} — wall/target "
          f"{tot['wall'] / TARGET_WALL_S:.2f}, RSS/target {tot['rss'] / TARGET_RSS_GB:.2f} — target "
          f"{TARGET_WALL_S // 60} min and {TARGET_RSS_GB:.0f} GB: {'MET' if ok else 'NOT MET'}")


if __name__ == "__main__":
    main()
