"""COF: the connectivity-based outlier factor (Tang, Chen, Fu and Cheung 2002)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit, prange

from odeval.detectors.base import Detector, MethodInfo, register
from odeval.detectors.ldof import _is_euclidean, _iter_blocks, _neighbourhood_sizes, _prepare_ks

__all__ = ["COF", "cof_scores"]

_VARIANTS = ("paper", "elki-0.7.1")


@njit(cache=True)
def _chain_acdist(B, n, k, elki, perm, rem, rmind):  # pragma: no cover - numba
    """Average chaining distance of member 0 (= p) over members 0..n of the distance block B.

    The set-based-nearest (SBN) trail is Prim's order from p: at every step the closest not yet connected
    member (distance to the connected set) is connected; e_s is that distance. List position i (1..n)
    holds block member ``perm[i]``. Ties: the first position (paper variant) or the last one (``elki``, as
    ELKI 0.7.1). The not yet connected positions are kept in a compact list (``rem``, with their distances
    ``rmind``), so step s costs O(n − s).
    """
    m = n
    for i in range(n):
        rem[i] = i + 1
        rmind[i] = B[0, perm[i + 1]]
    steps = n
    if elki and k < n:
        steps = k
    acsum = 0.0
    for s in range(1, steps + 1):
        bi = 0
        bv = rmind[0]
        bpos = rem[0]
        for i in range(1, m):
            v = rmind[i]
            if v < bv or (v == bv and ((rem[i] > bpos) if elki else (rem[i] < bpos))):
                bi = i
                bv = v
                bpos = rem[i]
        acsum += bv * (steps + 1 - s)
        m -= 1
        rem[bi] = rem[m]
        rmind[bi] = rmind[m]
        row = B[perm[bpos]]
        for i in range(m):
            v = row[perm[rem[i]]]
            if v < rmind[i]:
                rmind[i] = v
    return acsum / ((n + 1) * n / 2.0)


@njit(cache=True, inline="always")
def _heapify_down(hk, hv, size, cur, val):  # pragma: no cover - numba
    stop = size >> 1
    pos = 0
    while pos < stop:
        best = 2 * pos + 1
        bk = hk[best]
        right = best + 1
        if right < size and bk < hk[right]:
            best = right
            bk = hk[right]
        if cur >= bk:
            break
        hk[pos] = bk
        hv[pos] = hv[best]
        pos = best
    hk[pos] = cur
    hv[pos] = val


@njit(cache=True)
def _elki_knn_list(keys, K, hk, hv, ties, out):  # pragma: no cover - numba
    """The order of ELKI 0.7.1's kNN list ``getKNNForDBID(p, K)`` for a linear scan (objects in index
    order, ``keys`` = squared Euclidean distances to p, p itself included with key 0): the sequence its
    ``DoubleIntegerDBIDKNNHeap`` (binary max-heap of capacity K plus a list of ties at the K-distance)
    produces. Sorted by key; among equal keys, the heap's order. Writes the ids to ``out``, returns the
    list length (K + ties)."""
    size = 0
    nties = 0
    kdist = np.inf
    for i in range(keys.shape[0]):
        d = keys[i]
        if size < K:
            pos = size
            size += 1
            while pos > 0:  # heapify up
                par = (pos - 1) >> 1
                if d <= hk[par]:
                    break
                hk[pos] = hk[par]
                hv[pos] = hv[par]
                pos = par
            hk[pos] = d
            hv[pos] = i
            if size >= K:
                kdist = hk[0]
            continue
        if d >= kdist:
            if d == kdist:
                ties[nties] = i
                nties += 1
            continue
        prevdist = kdist
        previd = hv[0]
        _heapify_down(hk, hv, size, d, i)
        kdist = hk[0]
        if kdist < prevdist:
            nties = 0
        else:
            ties[nties] = previd
            nties += 1
    for t in range(nties):
        out[size + t] = ties[t]
    total = size + nties
    for j in range(size - 1, -1, -1):
        out[j] = hv[0]
        size -= 1
        if size > 0:
            _heapify_down(hk, hv, size, hk[size], hv[size])
    return total


@njit(cache=True, parallel=True)
def _acdist_chunk(block, sizes, ks, elki, X, rows, dist, idx):  # pragma: no cover - numba
    nk, m = sizes.shape
    out = np.empty((nk, m))
    width = block.shape[1]
    N, d = X.shape
    for c in prange(m):
        p = rows[c]
        rem = np.empty(width, dtype=np.int64)
        rmind = np.empty(width)
        perm = np.arange(width)
        keys = np.empty(0)
        for t in range(nk):
            n = sizes[t, c]
            for i in range(n + 1):
                perm[i] = i
            if elki:
                tied = False
                for j in range(n - 1):
                    if dist[p, j] == dist[p, j + 1]:
                        tied = True
                        break
                if tied:
                    # ELKI walks its own list order, which differs from ours only among tied neighbours
                    if keys.shape[0] == 0:
                        keys = np.empty(N)
                        for q in range(N):
                            s = 0.0
                            for u in range(d):
                                v = X[q, u] - X[p, u]
                                s += v * v
                            keys[q] = s
                    K = ks[t] + 1
                    hk = np.empty(K)
                    hv = np.empty(K, dtype=np.int64)
                    ties = np.empty(N, dtype=np.int64)
                    lst = np.empty(N, dtype=np.int64)
                    total = _elki_knn_list(keys, K, hk, hv, ties, lst)
                    if total == n + 1:
                        pos = 1
                        ok = True
                        for a in range(total):
                            o = lst[a]
                            if o == p:
                                continue
                            found = -1
                            for j in range(n):
                                if idx[p, j] == o:
                                    found = j
                                    break
                            if found < 0:
                                ok = False
                                break
                            perm[pos] = found + 1
                            pos += 1
                        if not ok:
                            for i in range(n + 1):
                                perm[i] = i
            out[t, c] = _chain_acdist(block[c], n, ks[t], elki, perm, rem, rmind)
    return out


@njit(cache=True, parallel=True)
def _cof_from_acdist(ac, idx, sizes, ks, elki):  # pragma: no cover - numba
    nk, n = ac.shape
    out = np.empty((nk, n))
    for p in prange(n):
        for t in range(nk):
            m = sizes[t, p]
            s = 0.0
            for j in range(m):
                s += ac[t, idx[p, j]]
            a = ac[t, p]
            if s == 0.0:
                out[t, p] = np.inf if a > 0.0 else 1.0
            else:
                factor = (ks[t] + 1.0) if elki else float(m)
                out[t, p] = a * factor / s
    return out


def cof_scores(graph: Any, ks: int | Sequence[int], variant: str = "paper") -> np.ndarray:
    """COF scores of all objects for every k in ``ks``, from one kNN graph.

    Parameters
    ----------
    graph : KNNGraph
        Exact kNN graph (:func:`odeval.neighbors.knn_graph`) with ``k_max >= max(ks)``.
    ks : int or sequence of int
        Neighbourhood sizes, each ≥ 1.
    variant : {"paper", "elki-0.7.1"}
        ``"paper"`` (default): Tang et al. (2002). ``"elki-0.7.1"``: ELKI 0.7.1's ``lof.COF`` (see Notes), to
        reproduce Campos et al. (2016).

    Returns
    -------
    ndarray of shape (len(ks), n_objects)
        Higher = more outlying; 1.0 is the inlier baseline.

    Notes
    -----
    Tang et al. (2002), Definitions 4–6. With N = N_k(p) (ties at the k-distance and duplicates included),
    r = |N| and e_1, …, e_r the edge lengths of the SBN trail from p through {p} ∪ N (Prim's order: at each
    step the member closest to the already connected ones is connected; exact ties are broken in favour of
    the member that comes first in the graph's (distance, index) order)::

        ac-dist(p) = Σ_{i=1..r} 2(r + 1 − i) / (r(r + 1)) · e_i
        COF(p)     = r · ac-dist(p) / Σ_{o∈N} ac-dist(o)      (each o with its own neighbourhood N_k(o))

    If Σ ac-dist(o) = 0 (all neighbours have only exact duplicates as neighbours): COF = ∞ if
    ac-dist(p) > 0, else 1.0 — the same rule as ELKI.

    ELKI 0.7.1 (``variant="elki-0.7.1"``) differs when ties make r > k: its trail stops after k edges
    (weights k, k−1, …, 1) while the normaliser still uses r, and the factor is k + 1 instead of r; ties in
    Prim's step go to the *last* member in list order. Without ties both variants give the same ranking
    and differ by the constant factor (k+1)/k.

    References
    ----------
    J. Tang, Z. Chen, A. W. Fu, D. W. Cheung. Enhancing effectiveness of outlier detections for low density
    patterns. PAKDD 2002, LNCS 2336, pp. 535–548.
    """
    return COF(variant=variant).raw_scores_all_k(graph, ks)


@register
class COF(Detector):
    """Connectivity-based outlier factor (Tang et al. 2002); see :func:`cof_scores`."""

    info = MethodInfo(
        name="COF",
        min_k=1,
        inverted=False,
        inlier_value=1.0,
        score_range=(0.0, np.inf),
        reference="J. Tang, Z. Chen, A. W. Fu, D. W. Cheung. Enhancing effectiveness of outlier detections "
        "for low density patterns. PAKDD 2002.",
    )

    def __init__(self, variant: str = "paper") -> None:
        if variant not in _VARIANTS:
            raise ValueError(f"COF: unknown variant {variant!r}; choose one of {', '.join(_VARIANTS)}")
        self.variant = variant

    def params(self) -> dict[str, Any]:
        return {"variant": self.variant}

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        _, uniq, inverse = _prepare_ks(graph, ks, self.info)
        elki = self.variant == "elki-0.7.1"
        sizes = _neighbourhood_sizes(graph, uniq)
        n = int(graph.n_objects)
        ac = np.empty((uniq.size, n))
        X = np.ascontiguousarray(graph.X, dtype=np.float64)
        dist = np.ascontiguousarray(graph.distances, dtype=np.float64)
        idx = np.ascontiguousarray(graph.indices, dtype=np.int64)
        if elki and not _is_euclidean(graph):
            raise ValueError("COF: variant='elki-0.7.1' reproduces ELKI's Euclidean kNN list order; use a "
                             f"Euclidean graph (got {graph.metric!r}) or variant='paper'")
        for rows, block in _iter_blocks(graph, sizes[-1]):
            ac[:, rows] = _acdist_chunk(block, np.ascontiguousarray(sizes[:, rows]), uniq, elki, X, rows, dist, idx)
        return _cof_from_acdist(ac, idx, sizes, uniq, elki)[inverse]
