"""Every GPU measurement of issue 28 in one run: the exact kNN graph on a GPU (``knn_graph(device="cuda")``)
against the CPU search on the same machine.

Run from the source tree on a CUDA machine (no network needed, nothing is installed)::

    PYTHONPATH=src python benchmarks/gpu_graph.py                 # < 5 min: identity, 10⁶ graph, all-k at 10⁶
    PYTHONPATH=src python benchmarks/gpu_graph.py --big           # a run of its own: the 10⁷ × 10 graph
    PYTHONPATH=src python benchmarks/gpu_graph.py --device cpu --small   # the script's logic on PyTorch's CPU build

Steps (each prints its line at once, so a run cut short still reports what it did):

1. **environment**: the card's name, PyTorch / CuPy / numba versions, cores, load; the numba kernels of the CPU
   graph and the twelve methods are compiled first (``odeval warmup``; timed, not counted).
2. **identity**: device graph == CPU graph, bit for bit (distances, indices, keys, widths), on the conformance
   data (tests/fixtures/elki_detectors, the vendored datasets, and the ELKI batch-tool datasets when
   ``../shared/datasets/dami`` exists) for the Euclidean, Manhattan and Chebyshev metrics, and on 10⁵ × 10
   random objects with duplicates and a lattice block (k_max = 100), timed on both (the ratio CPU / GPU).
3. **10⁶ × 10 graph** (benchmarks/scale.py's Gaussian mixture, k_max = 100), target < 10 s; the CPU search on
   the same machine for 20,000 of its rows (all cores, extrapolated × N / 20,000, labelled so), whose rows are
   also compared with the device graph's bit for bit.
4. **all-k at 10⁶**: the twelve methods for k = 1..100 and every measure (benchmarks/scale.py's study unit
   loop), graph on the device, scoring on all CPU cores; target < 3 min. The CPU-only run is not repeated (it
   is the same scoring plus the CPU graph): its time is given as the measured scoring + the extrapolated CPU
   graph, labelled so.
5. ``--big``: the 10⁷ × 10 graph alone (target < 5 min), as a run of its own: every 10th block of query rows
   (``--big-every``), its time extrapolated to the whole graph and labelled so (a device lease is 15 minutes
   in all; ``--big-every 1`` computes the whole graph as ``knn_graph`` does — device search and host assembly
   timed apart — and compares its first 2,000 rows with the CPU search's).

The last lines are the target lines. ``--json PATH`` also writes every figure to PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from scale import KS, METHODS, Clock, data  # noqa: E402  (the data and the study loop of benchmarks/scale.py)

TARGET_GRAPH_1E6_S, TARGET_ALLK_1E6_S, TARGET_GRAPH_1E7_S = 10.0, 180.0, 300.0
CPU_SAMPLE_ROWS = 20_000
RESULTS: dict = {}


def say(line: str) -> None:
    print(line, flush=True)


def record(key: str, value) -> None:
    RESULTS[key] = value


def device_graph(X: np.ndarray, k_max: int, device: str, metric: str = "euclidean"):
    """The device search: ``knn_graph(device=...)`` on CUDA; on the CPU the same code on PyTorch's CPU build."""
    from odeval.neighbors import knn_graph
    from odeval.neighbors._metrics import resolve_metric
    from odeval.neighbors.graph import device_graph as _device_graph

    if device == "cpu":
        return _device_graph(X, k_max, resolve_metric(metric).fit_to(X), "exact", "cuda", torch_device="cpu")
    return knn_graph(X, k_max, metric=metric, device=device)


def identical(a, b) -> bool:
    return (a.distances.shape == b.distances.shape and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.distances, b.distances) and np.array_equal(a.keys, b.keys))


def timed(fn, *args, **kw):
    t = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t


def sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def environment(device: str) -> None:
    import numba
    import torch

    try:
        import cupy

        cupy_version = cupy.__version__
    except Exception as exc:  # absent, or without a driver: say which
        cupy_version = f"not usable ({type(exc).__name__})"
    card = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "none (CPU build)"
    record("card", card)
    record("versions", {"torch": torch.__version__, "cupy": cupy_version, "numba": numba.__version__,
                        "numpy": np.__version__, "python": platform.python_version()})
    say(f"card: {card}; PyTorch {torch.__version__} (CUDA {torch.version.cuda}), CuPy {cupy_version}, "
        f"numba {numba.__version__}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")


def warm(device: str, small: bool) -> None:
    from odeval.detectors.warmup import warmup
    from odeval.neighbors import knn_graph

    t = time.perf_counter()
    if not small:
        warmup(methods=METHODS, novelty=False)
    X = np.random.default_rng(0).normal(size=(500, 4))
    knn_graph(X, 10)
    device_graph(X, 10, device)
    sync(device)
    record("warmup_s", time.perf_counter() - t)
    say(f"warmup (numba compilation of the graph{'' if small else ' and the 12 methods'}, CUDA context): "
        f"{time.perf_counter() - t:.1f} s — not counted")


def conformance_data() -> list[tuple[str, np.ndarray]]:
    from odeval.data import load_dataset
    from odeval.data.catalogue import vendored_dir

    out = []
    for path in sorted((HERE.parent / "tests" / "fixtures" / "elki_detectors").glob("*.npz")):
        with np.load(path, allow_pickle=False) as z:
            if "X" in z:
                out.append((path.stem, np.asarray(z["X"], dtype=np.float64)))
    sources = sorted(vendored_dir().rglob("*.arff"))
    dami = Path(os.environ.get("ODEVAL_SHARED_DATASETS", HERE.parent.parent / "shared" / "datasets")) / "dami"
    for meta in sorted((HERE.parent / "tests" / "fixtures" / "elki_cks").glob("*.json")):
        path = dami.parent / json.loads(meta.read_text())["source"]
        if path.is_file():
            sources.append(path)
    for path in sources:
        try:
            out.append((path.stem, load_dataset(path, require_labels=False).numeric_matrix()))
        except ValueError:  # nominal attributes: no matrix without an encoding
            continue
    return out


def identity(device: str, small: bool) -> None:
    from odeval.neighbors import knn_graph

    checked, bad = 0, []
    for name, X in conformance_data():
        k_max = min(100, X.shape[0] - 1)
        for metric in ("euclidean", "manhattan", "chebyshev"):
            checked += 1
            if not identical(device_graph(X, k_max, device, metric), knn_graph(X, k_max, metric=metric)):
                bad.append(f"{name}/{metric}")
    record("identity_conformance", {"checked": checked, "different": bad})
    say(f"identity, conformance data: {checked - len(bad)} of {checked} graphs identical"
        + (f"; DIFFERENT: {', '.join(bad)}" if bad else ""))
    n = 2_000 if small else 100_000
    rng = np.random.default_rng(10)
    X = rng.normal(size=(n, 10))
    X[-n // 100:] = X[:n // 100]
    X[n // 2:n // 2 + n // 50] = rng.integers(0, 3, size=(n // 50, 10))
    from odeval.neighbors import _torch_graph

    cpu, t_cpu = timed(knn_graph, X, 100)
    _torch_graph.STRATEGY = "threshold"  # the default strategy at this N is top-k: check the other one too
    same_threshold = identical(device_graph(X, 100, device), cpu)
    _torch_graph.STRATEGY = "auto"
    gpu, t_gpu = timed(device_graph, X, 100, device)
    same = identical(gpu, cpu) and same_threshold
    record("identity_random", {"n": n, "identical": same, "cpu_s": t_cpu, "device_s": t_gpu,
                               "reason": gpu.search_reason})
    say(f"identity, {n} × 10 random (1 % duplicated rows, a lattice block), k_max = 100: "
        f"{'IDENTICAL' if same else 'DIFFERENT'}; CPU {t_cpu:.2f} s, device {t_gpu:.2f} s, "
        f"ratio {t_cpu / t_gpu:.1f}; {gpu.search_reason}")


def cpu_rows(X: np.ndarray, k_max: int, rows: int):
    """The CPU search's exact rows 0..rows−1 of the graph of X (the brute-force kernel on all cores)."""
    from odeval.neighbors import graph as _graph
    from odeval.neighbors._metrics import resolve_metric

    spec = resolve_metric("euclidean").fit_to(X)
    parts = _graph._brute_parts(X, k_max, spec, 0, rows, _graph._block_rows(X.shape[0], None))
    keys, idx = _graph._stack(parts, rows)
    return keys, idx


def graph_1e6(device: str, small: bool, topk: bool = True):
    from odeval.neighbors import _torch_graph

    n = 6_000 if small else 1_000_000
    sample = 1_000 if small else CPU_SAMPLE_ROWS
    X, y = data(n)
    # both candidate strategies (at 10⁶ the default is "threshold"; the one kept is the threshold graph)
    t_topk = float("inf")
    if topk:
        _torch_graph.STRATEGY = "topk"
        g, t_topk = timed(device_graph, X, 100, device)
        del g
        record("graph_1e6_topk_s", t_topk)
        say(f"graph {n} × 10, k_max = 100, top-k strategy: device {t_topk:.2f} s")
    _torch_graph.STRATEGY = "threshold"
    g, t = timed(device_graph, X, 100, device)
    _torch_graph.STRATEGY = "auto"
    g.neighborhood_sizes()
    (keys, idx), t_cpu = timed(cpu_rows, X, 100, sample)
    w = keys.shape[1]
    same = (np.array_equal(g.keys[:sample, :w], keys) and np.array_equal(g.indices[:sample, :w], idx)
            and bool(np.all(g.indices[:sample, w:] == -1)))
    cpu_full = t_cpu * n / sample
    record("graph_1e6", {"n": n, "device_s": min(t, t_topk), "threshold_s": t, "topk_s": t_topk,
                         "cpu_rows": sample, "cpu_rows_s": t_cpu, "cpu_extrapolated_s": cpu_full,
                         "rows_identical": same, "width": int(g.distances.shape[1]), "reason": g.search_reason})
    say(f"graph {n} × 10, k_max = 100, threshold strategy: device {t:.2f} s; CPU {sample} rows {t_cpu:.2f} s → "
        f"whole graph ≈ {cpu_full:.0f} s (extrapolated), ratio ≈ {cpu_full / min(t, t_topk):.0f} (faster "
        f"strategy); those rows identical: {same}; "
        f"{g.search_reason}")
    return X, y, g


def allk(X, y, device: str, small: bool) -> None:
    from odeval.bench.runner import Prepared, evaluate_unit
    from odeval.bench.store import UnitResult
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import required_graph_k
    from odeval.measures import MEASURES

    ks = "1..10" if small else KS
    n = X.shape[0]
    dets = {m: get_detector(m) for m in METHODS}
    k_max = max(required_graph_k(det, ks, n) for det in dets.values())
    steps: dict = {}
    t_all = time.perf_counter()
    with Clock(steps, "graph"):
        graph = device_graph(X, k_max, device)
        graph.neighborhood_sizes()
    prepared = Prepared(facts={"name": "mixture", "n_objects": n}, labels=y, graph=graph)
    for name, det in dets.items():
        res = UnitResult(unit_id="u", dataset=prepared.facts, method=name, params="{}", metric="euclidean",
                         status="ok")
        with Clock(steps, name):
            evaluate_unit(res, det, prepared, ks, MEASURES, False)
    total = time.perf_counter() - t_all
    scoring = total - steps["graph"]["wall"]
    g1 = RESULTS.get("graph_1e6", {})
    cpu_est = scoring + g1.get("cpu_extrapolated_s", float("nan"))
    record("allk_1e6", {"n": n, "ks": ks, "total_s": total, "graph_s": steps["graph"]["wall"], "scoring_s": scoring,
                        "steps": steps, "cpu_total_estimate_s": cpu_est})
    say(f"all-k {n} × 10, {len(METHODS)} methods, k = {ks}, every measure: {total:.1f} s (graph "
        f"{steps['graph']['wall']:.1f} s on the device, scoring {scoring:.1f} s on {os.cpu_count()} cores); CPU-only "
        f"≈ {cpu_est:.0f} s (scoring + extrapolated CPU graph), ratio ≈ {cpu_est / total:.1f}")


def big(device: str, small: bool, every: int) -> None:
    """The 10⁷ × 10 graph: every ``every``-th block of query rows (a systematic sample), the set-up (upload,
    k-d order, leaf boxes) timed apart; the whole graph's time is extrapolated from the sampled rows, labelled so.
    The host assembly of the 10⁷-row graph is not included (it is the CPU graph's, after the search)."""
    import torch

    from odeval.neighbors import _torch_graph
    from odeval.neighbors._metrics import resolve_metric

    n = 50_000 if small else 10_000_000
    X, _ = data(n)
    spec = resolve_metric("euclidean").fit_to(X)
    target = device if device.startswith("cuda") else "cpu"
    if every == 1:
        return big_whole(X, spec, device, target, small)
    with _torch_graph._ieee_float32(torch), torch.no_grad():
        t = time.perf_counter()
        P = _torch_graph._Prepared(torch, X, spec, torch.device(target))
        sync(device)
        t_prep = time.perf_counter() - t
        del P
    stats: dict = {}
    t = time.perf_counter()
    parts = _torch_graph.torch_graph_parts(X, 100, spec, target, stats=stats, every_nth_block=every)
    sync(device)
    t_run = time.perf_counter() - t
    done = sum(int(p[0].size) for p in parts)
    est = t_prep + (t_run - t_prep) * n / done
    record("graph_1e7", {"n": n, "every_nth_block": every, "rows_done": done, "prepare_s": t_prep, "run_s": t_run,
                         "estimate_s": est, "reason": _torch_graph.stats_line(stats)})
    say(f"graph {n} × 10, k_max = 100: set-up {t_prep:.1f} s; every {every}th block of query rows ({done} rows) "
        f"{t_run:.1f} s with the set-up → whole graph ≈ {est:.0f} s (extrapolated, host assembly not included); "
        f"{_torch_graph.stats_line(stats)}")
    met = "MET" if est < TARGET_GRAPH_1E7_S else "NOT MET"
    say(f"TARGET graph {n} × 10 < {TARGET_GRAPH_1E7_S:.0f} s: ≈ {est:.0f} s (extrapolated) — {met}")


def big_whole(X: np.ndarray, spec, device: str, target: str, small: bool) -> None:
    """``--big-every 1``: the whole 10⁷ × 10 graph as ``knn_graph(X, 100, device=...)`` builds it — the device
    search, then the host assembly (the CPU graph's) timed apart — with its first rows compared bit for bit with
    the CPU search's, and the peak host memory of the process."""
    import resource

    from odeval.neighbors import graph as _graph
    from odeval.neighbors._torch_graph import device_graph_parts

    n = X.shape[0]
    t = time.perf_counter()
    parts, reason = device_graph_parts(X, 100, spec, "exact", target if target == "cpu" else device,
                                       max_abs_value=_graph._MAX_ABS_VALUE,
                                       torch_device="cpu" if target == "cpu" else None)
    sync(device)
    t_search = time.perf_counter() - t
    t = time.perf_counter()
    g = _graph._assemble(X, 100, spec, parts, "exact")
    del parts
    t_assemble = time.perf_counter() - t
    total = t_search + t_assemble
    say(f"graph {n} × 10, k_max = 100, whole: device search {t_search:.1f} s (set-up included), host assembly "
        f"{t_assemble:.1f} s → {total:.1f} s; width {g.distances.shape[1]}; {reason}")
    sample = 200 if small else 2_000
    (keys, idx), t_cpu = timed(cpu_rows, X, 100, sample)
    w = keys.shape[1]
    same = (np.array_equal(g.keys[:sample, :w], keys) and np.array_equal(g.indices[:sample, :w], idx)
            and bool(np.all(g.indices[:sample, w:] == -1)))
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    cpu_full = t_cpu * n / sample
    record("graph_1e7", {"n": n, "every_nth_block": 1, "search_s": t_search, "assemble_s": t_assemble,
                         "total_s": total, "width": int(g.distances.shape[1]), "cpu_rows": sample,
                         "cpu_rows_s": t_cpu, "cpu_extrapolated_s": cpu_full, "rows_identical": same,
                         "peak_rss_gb": rss_gb, "reason": reason})
    say(f"CPU search, {sample} rows of it: {t_cpu:.2f} s → whole graph ≈ {cpu_full:.0f} s (extrapolated), ratio ≈ "
        f"{cpu_full / total:.0f}; those rows identical: {same}; peak host RSS {rss_gb:.1f} GB")
    met = "MET" if total < TARGET_GRAPH_1E7_S else "NOT MET"
    prefix = "(--small: not the issue's sizes) " if small else ""
    say(prefix + f"TARGET graph {n} × 10 < {TARGET_GRAPH_1E7_S:.0f} s: {total:.1f} s (whole graph, measured, "
        f"host assembly included) — {met}")


def targets(small: bool) -> None:
    """The target lines; with ``--small`` they say that the sizes are not the issue's."""
    say_ = (lambda line: say("(--small: not the issue's sizes) " + line)) if small else say
    g = RESULTS.get("graph_1e6")
    if g:
        say_(f"TARGET graph {g['n']} × 10 < {TARGET_GRAPH_1E6_S:.0f} s: {g['device_s']:.2f} s — "
             f"{'MET' if g['device_s'] < TARGET_GRAPH_1E6_S else 'NOT MET'}")
    a = RESULTS.get("allk_1e6")
    if a:
        say_(f"TARGET all-k {a['n']} × 10 < {TARGET_ALLK_1E6_S:.0f} s: {a['total_s']:.1f} s — "
             f"{'MET' if a['total_s'] < TARGET_ALLK_1E6_S else 'NOT MET'}")
    ident = [RESULTS.get("identity_random", {}).get("identical"),
             not RESULTS.get("identity_conformance", {}).get("different", ["?"]),
             RESULTS.get("graph_1e6", {}).get("rows_identical")]
    say_(f"TARGET bit-identical graphs (conformance data, 10⁵ random, 10⁶ sample rows): "
         f"{'MET' if all(ident) else 'NOT MET ' + str(ident)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N, or cpu (PyTorch's CPU build)")
    ap.add_argument("--small", action="store_true", help="tiny sizes: checks the script's logic in seconds")
    ap.add_argument("--big", action="store_true", help="only the 10⁷ × 10 graph (a run of its own)")
    ap.add_argument("--big-every", type=int, default=10, help="--big: compute every n-th block of query rows and "
                    "extrapolate (default 10; 1 = the whole graph)")
    ap.add_argument("--skip-allk", action="store_true", help="leave out the all-k run at 10⁶")
    ap.add_argument("--skip-topk", action="store_true", help="leave out the top-k strategy's 10⁶ graph")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = ap.parse_args()
    t0 = time.perf_counter()
    environment(args.device)
    warm(args.device, args.small or args.big or args.skip_allk)
    try:
        if args.big:
            big(args.device, args.small, args.big_every)
        else:
            identity(args.device, args.small)
            X, y, _ = graph_1e6(args.device, args.small, topk=not args.skip_topk)
            if not args.skip_allk:
                allk(X, y, args.device, args.small)
            targets(args.small)
    finally:
        record("run_s", time.perf_counter() - t0)
        say(f"whole run {time.perf_counter() - t0:.1f} s, load {os.getloadavg()[0]:.1f}")
        if args.json:
            Path(args.json).write_text(json.dumps(RESULTS, indent=1, default=str))


if __name__ == "__main__":
    main()
