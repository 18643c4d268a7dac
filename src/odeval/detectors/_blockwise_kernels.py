"""Numba kernels of the block-partitioned scoring that have no one-process counterpart to reuse (private)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from odeval.detectors.kdeos import _kdeos_bandwidth, _kdeos_kernel, _kdeos_score_row


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


@njit(cache=True, parallel=True)
def kdeos_sources(D, S, ks, scale, iminbw, dim, gscale, cutoff):  # pragma: no cover - numba
    """Per row p and k: (1/h, h^(−idim), point mass?, entries of {p} ∪ N_k(p) that receive p's kernel) — the
    density step of :func:`odeval.detectors.kdeos._kdeos_all_k` up to its cut-off, without the sums.
    Returns a (4·T, rows) array: ibw, sca, point (0/1), count (self included)."""
    N = D.shape[0]
    T = ks.shape[0]
    out = np.empty((4 * T, N))
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            ibw, sca, point = _kdeos_bandwidth(D, p, k, scale, iminbw, dim)
            n = S[p, k - 1]
            c = 0
            for j in range(-1, n):
                d = 0.0 if j < 0 else D[p, j]
                v = _kdeos_kernel(d, ibw, sca, point, gscale)
                c += 1
                if v < cutoff:
                    break
            out[t, p] = ibw
            out[T + t, p] = sca
            out[2 * T + t, p] = 1.0 if point else 0.0
            out[3 * T + t, p] = c
    return out


@njit(cache=True, parallel=True)
def kdeos_density(start, src_info, e_ptr, e_src_global, e_src, e_pos, e_dist, e_kmin, ks, gscale):  # pragma: no cover
    """KDEOS densities (T, B) of a block's objects: the kernels of every p with q ∈ {p} ∪ N_k(p) (within p's
    cut-off) added in ascending order of p — the order of the one-process density step.

    ``src_info`` (4·T, B + E): :func:`kdeos_sources` of the block's objects and of the other sources (local
    numbers); in-edges of object q: ``e_ptr[q]:e_ptr[q + 1]``, sorted by the source's global number, with the
    position of q in the source's row, the distance and the smallest k at which q belongs to it.
    """
    B = e_ptr.shape[0] - 1
    T = ks.shape[0]
    dens = np.empty((T, B))
    for t in prange(T):
        k = ks[t]
        for q in range(B):
            acc = 0.0
            own = False
            for e in range(e_ptr[q], e_ptr[q + 1] + 1):
                if not own and (e == e_ptr[q + 1] or e_src_global[e] > start + q):
                    acc += _kdeos_kernel(0.0, src_info[t, q], src_info[T + t, q], src_info[2 * T + t, q] > 0.0,
                                         gscale)
                    own = True
                if e == e_ptr[q + 1]:
                    break
                o = e_src[e]
                if e_kmin[e] > k or e_pos[e] + 1 >= src_info[3 * T + t, o]:
                    continue  # q not in N_k(o), or after o's cut-off
                acc += _kdeos_kernel(e_dist[e], src_info[t, o], src_info[T + t, o], src_info[2 * T + t, o] > 0.0,
                                     gscale)
            dens[t, q] = acc
    return dens


@njit(cache=True, parallel=True)
def kdeos_scores(D, I, S, ks, dens, elki):  # pragma: no cover - numba
    """KDEOS (T, B) of a block's rows from the densities (T, B + E) in the local index space."""
    B = D.shape[0]
    T = ks.shape[0]
    out = np.empty((T, B))
    for t in prange(T):
        for p in range(B):
            out[t, p] = _kdeos_score_row(D, I, S, p, ks[t], dens[t], elki)
    return out
