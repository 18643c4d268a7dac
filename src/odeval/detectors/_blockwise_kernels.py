"""Numba kernels of the block-partitioned scoring that have no one-process counterpart to reuse (private)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True)
def inflo_block(lidx, sizes, kd, e_src, e_kmin, e_ptr, ks, m):  # pragma: no cover - numba
    """Published INFLO (variant "paper") of a block's objects, with the arithmetic and summation order of
    :func:`odeval.detectors.inflo._inflo_paper_one_k`.

    ``lidx`` (B, W): the block's rows in the local index space; ``sizes`` (T, B): |N_k(p)|; ``kd`` (T, B + E):
    k-distances of the block's objects and of the other objects referenced; in-edges o → p (p ∈ N_k(o) from
    ``k_min`` on) of block object p are ``e_src[e_ptr[p]:e_ptr[p + 1]]`` (local), in ascending global order of o
    — the order in which the one-process kernel adds the reverse neighbours' densities.
    """
    T, B = sizes.shape
    out = np.empty((T, B))
    for t in prange(T):
        k = ks[t]
        for p in range(B):
            s = sizes[t, p]
            rsum = 0.0
            rcnt = 0
            zero = False
            for e in range(e_ptr[p], e_ptr[p + 1]):
                if e_kmin[e] > k:
                    continue
                o = e_src[e]
                inside = False
                for j in range(s):
                    if lidx[p, j] == o:
                        inside = True
                        break
                if inside:
                    continue  # o ∈ kNN(p) as well: counted once, from the kNN side
                rcnt += 1
                if kd[t, o] > 0.0:
                    rsum += 1.0 / kd[t, o]
                else:
                    zero = True
            mutual = 0
            dens = 0.0
            for j in range(s):
                o = lidx[p, j]
                for e in range(e_ptr[p], e_ptr[p + 1]):
                    if e_src[e] == o:
                        if e_kmin[e] <= k:
                            mutual += 1
                        break
                if kd[t, o] > 0.0:
                    dens += 1.0 / kd[t, o]
                else:
                    zero = True
            kdp = kd[t, p]
            if 1 + mutual >= m * (s + 1) or kdp == 0.0:
                out[t, p] = 1.0
                continue
            if zero:
                out[t, p] = np.inf
                continue
            total = (dens + rsum) * kdp
            c = s + rcnt
            out[t, p] = 1.0 if total == 0.0 else total / c
    return out
