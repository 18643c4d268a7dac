"""The exact IREOS curves (pinned classifier, m_cl = 1) by the block solver against the dense solver, side by side:
CPU per classifier of each, their ratio, and the largest difference of the areas (docs/ireos.md, *The exact index
on large data: one block of objects per kernel*).

The block solver (:mod:`odeval.labelfree._klr_block`, what ``ireos`` runs for the exact pinned index from N = 2 000)
computes the whole adaptive curves of ``--objects`` objects spread over the data at once; the dense solver
(:func:`odeval.labelfree._klr.curves_batch`, one classifier after the other) the first ``--dense`` of them
(``--dense 0``: the block solver alone, for data where one dense classifier takes minutes). One BLAS thread for
both, CPU seconds (``time.process_time``).

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/ireos_exact_block.py \\
        Waveform_withoutdupl_norm_v05 --gamma-max 0.8734 --objects 128 --dense 4

``--device cuda`` adds the block solver on that GPU (``ireos(device=...)``; PyTorch) for all ``--objects``, timed by
the wall clock after a warm-up, against the host block solver on the first ``--host`` of them (wall and CPU are the
same there: one thread): wall per classifier of each, their ratio, the largest difference of the areas, the card.

    PYTHONPATH=src python benchmarks/ireos_exact_block.py Waveform_withoutdupl_norm_v05 --gamma-max 0.8734 \
        --objects 128 --host 16 --dense 0 --device cuda

Data: ``../shared/datasets/ireos_authors/<variant>/data.txt.gz`` (``ODEVAL_SHARED_DATASETS`` moves
``../shared/datasets``); gamma_max e.g. the pinned m_cl = 1 row of the variant in benchmarks/ireos_authors.jsonl.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from odeval.labelfree import _klr, _klr_block

SHARED = Path(os.environ.get("ODEVAL_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))
SHARED = SHARED / "ireos_authors"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variant")
    ap.add_argument("--gamma-max", type=float, required=True)
    ap.add_argument("--objects", type=int, default=128, help="objects of the block (spread evenly over the data)")
    ap.add_argument("--dense", type=int, default=4, help="of them, how many the dense solver computes too")
    ap.add_argument("--rank", type=int, default=_klr_block.RANK)
    ap.add_argument("--core", type=int, default=None,
                    help="objects in the preconditioner's exact block (default 2 %% of N; 0: none)")
    ap.add_argument("--against", default=None, metavar="RANK,CORE",
                    help="the block solver with this rank and core too, run before and after (paired), not dense")
    ap.add_argument("--device", default=None, help="also the block solver on this PyTorch device (cuda, cuda:N)")
    ap.add_argument("--host", type=int, default=None, help="with --device: the host block solver on this many")
    args = ap.parse_args()
    X = np.loadtxt(SHARED / args.variant / "data.txt.gz", ndmin=2)
    N = X.shape[0]
    objs = np.arange(0, N, max(1, N // args.objects))[:args.objects]
    if args.device is not None:
        dev, per_dev = _on_device(X, objs, args)
        objs = objs[:args.host]
    if args.against is not None:
        return _against(X, objs, args)
    with threadpool_limits(limits=1):
        t = time.process_time()
        block, fits, products = _klr_block.curves(X, objs, np.full((objs.size, N), 100.0), 0, np.zeros(0),
                                                  args.gamma_max, 1e-3, 8, 1, rank=args.rank, core=args.core)
        cpu_block = time.process_time() - t
    if args.device is not None:
        per = cpu_block / fits
        diff = np.abs(block[:, 0] - dev[:objs.size, 0]).max()
        print(f"host block {objs.size} objects, {fits} classifiers, {1000 * per:.1f} ms each (one thread) | "
              f"{per / per_dev:.1f}x | max |area difference| host - device {diff:.1e}")
        return
    with threadpool_limits(limits=1):
        some = objs[:args.dense]  # (the dense solver, one thread)
        if some.size:
            train = np.array([np.r_[j, np.delete(np.arange(N), j)] for j in some], dtype=np.int64)
            t = time.process_time()
            dense, dfits, facts = _klr.curves_batch(X, train, np.full(train.shape, 100.0), 0, np.zeros(0),
                                                    args.gamma_max, 1e-3, 8, 1, True)
            cpu_dense = time.process_time() - t
    per_block = cpu_block / fits
    line = (f"{args.variant} N={N} gamma_max={args.gamma_max:g}: block {objs.size} objects, {fits} classifiers, "
            f"{products / fits:.1f} products and {1000 * per_block:.1f} ms CPU each (rank {args.rank}, core "
            f"{args.core if args.core is not None else 'default'})")
    if some.size:
        per_dense = cpu_dense / dfits
        line += (f" | dense {some.size} objects, {dfits} classifiers, {facts / dfits:.2f} factorisations and "
                 f"{1000 * per_dense:.1f} ms CPU each | {per_dense / per_block:.1f}x | max |area difference| "
                 f"{np.abs(block[:some.size, 0] - dense[:, 0]).max():.1e}")
    print(line)


def _against(X: np.ndarray, objs: np.ndarray, args) -> None:
    """The block solver with (``--rank``, ``--core``) and with ``--against`` RANK,CORE, in the order A B B A on the
    same objects (one thread; a load that drifts during the run falls on both), each side's CPU the sum of its two
    runs; products per classifier (independent of the load), the CPU ratio and the largest difference of the
    areas."""
    N = X.shape[0]
    core = math.ceil(_klr_block.CORE_FRACTION * N) if args.core is None else args.core
    a_, b_ = (args.rank, core), tuple(int(x) for x in args.against.split(","))
    cpu = {a_: 0.0, b_: 0.0}
    res = {}
    with threadpool_limits(limits=1):
        for rank, core in (a_, b_, b_, a_):
            t = time.process_time()
            res[rank, core] = _klr_block.curves(X, objs, np.full((objs.size, N), 100.0), 0, np.zeros(0),
                                                args.gamma_max, 1e-3, 8, 1, rank=rank, core=core)
            cpu[rank, core] += time.process_time() - t
    (a, fa, pa), (b, fb, pb) = res[a_], res[b_]
    ratio = cpu[b_] / fb * fa / cpu[a_]
    print(f"{args.variant} N={N} gamma_max={args.gamma_max:g}, {objs.size} objects: rank {a_[0]} core {a_[1]} "
          f"{fa} classifiers, {pa / fa:.1f} products, {500 * cpu[a_] / fa:.1f} ms CPU each | rank {b_[0]} core "
          f"{b_[1]} {fb} classifiers, {pb / fb:.1f} products, {500 * cpu[b_] / fb:.1f} ms CPU each | {ratio:.2f}x"
          f" | max |area difference| {np.abs(a[:, 0] - b[:, 0]).max():.1e}")


def _on_device(X: np.ndarray, objs: np.ndarray, args) -> tuple[np.ndarray, float]:
    """The block solver on ``args.device``: a warm-up (kernels, CUDA context), then the timed run; prints the card
    and returns (areas, wall seconds per classifier)."""
    import torch

    from odeval.neighbors._torch_graph import check_device

    device = check_device(args.device)
    N = X.shape[0]
    _klr_block.curves(X, objs[:2], np.full((2, N), 100.0), 1, np.array([args.gamma_max]), args.gamma_max, 1e-3, 8,
                      1, rank=args.rank, torch_device=device)
    torch.cuda.synchronize()
    t = time.perf_counter()
    out, fits, products = _klr_block.curves(X, objs, np.full((objs.size, N), 100.0), 0, np.zeros(0),
                                            args.gamma_max, 1e-3, 8, 1, rank=args.rank, torch_device=device)
    wall = time.perf_counter() - t
    print(f"{args.variant} N={N} gamma_max={args.gamma_max:g}: device {device} "
          f"({torch.cuda.get_device_name(torch.device(device))}) block {objs.size} objects, {fits} classifiers, "
          f"{products / fits:.1f} products and {1000 * wall / fits:.2f} ms wall each", flush=True)
    return out, wall / fits


if __name__ == "__main__":
    main()
