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

Data: ``../shared/datasets/ireos_authors/<variant>/data.txt.gz``; gamma_max e.g. the pinned m_cl = 1 row of the
variant in benchmarks/ireos_authors.jsonl.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from odeval.labelfree import _klr, _klr_block

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "ireos_authors"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variant")
    ap.add_argument("--gamma-max", type=float, required=True)
    ap.add_argument("--objects", type=int, default=128, help="objects of the block (spread evenly over the data)")
    ap.add_argument("--dense", type=int, default=4, help="of them, how many the dense solver computes too")
    ap.add_argument("--rank", type=int, default=_klr_block.RANK)
    args = ap.parse_args()
    X = np.loadtxt(SHARED / args.variant / "data.txt.gz", ndmin=2)
    N = X.shape[0]
    objs = np.arange(0, N, max(1, N // args.objects))[:args.objects]
    with threadpool_limits(limits=1):
        t = time.process_time()
        block, fits, products = _klr_block.curves(X, objs, np.full((objs.size, N), 100.0), 0, np.zeros(0),
                                                  args.gamma_max, 1e-3, 8, 1, rank=args.rank)
        cpu_block = time.process_time() - t
        some = objs[:args.dense]
        if some.size:
            train = np.array([np.r_[j, np.delete(np.arange(N), j)] for j in some], dtype=np.int64)
            t = time.process_time()
            dense, dfits, facts = _klr.curves_batch(X, train, np.full(train.shape, 100.0), 0, np.zeros(0),
                                                    args.gamma_max, 1e-3, 8, 1, True)
            cpu_dense = time.process_time() - t
    per_block = cpu_block / fits
    line = (f"{args.variant} N={N} gamma_max={args.gamma_max:g}: block {objs.size} objects, {fits} classifiers, "
            f"{products / fits:.1f} products and {1000 * per_block:.1f} ms CPU each (rank {args.rank})")
    if some.size:
        per_dense = cpu_dense / dfits
        line += (f" | dense {some.size} objects, {dfits} classifiers, {facts / dfits:.2f} factorisations and "
                 f"{1000 * per_dense:.1f} ms CPU each | {per_dense / per_block:.1f}x | max |area difference| "
                 f"{np.abs(block[:some.size, 0] - dense[:, 0]).max():.1e}")
    print(line)


if __name__ == "__main__":
    main()
