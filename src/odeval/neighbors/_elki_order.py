"""The order of ELKI 0.7.1's kNN lists, for the variants that reproduce ELKI's arithmetic bit for bit.

ELKI's ``LinearScanEuclideanDistanceKNNQuery`` offers every object, in index order, to a
``DoubleIntegerDBIDKNNHeap``: a binary max-heap of capacity K on the squared distance plus a list of the
objects tied with its top; ``toKNNList`` then polls the heap and appends the tied extras. Among exactly tied
objects the resulting order is the heap's, not the index order — and methods that sum over the list or take
its "first k" entries (LoOP, LDOF, COF, INFLO, FastABOD in their ``elki-0.7.1`` variants) inherit it.

The heap is driven through two numba primitives so that callers can choose which objects to offer
(a full linear scan, or only the candidates that can still matter): :func:`heap_offer` and
:func:`heap_drain`. :func:`elki_knn_list` is the full scan over given keys.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

from odeval._method_variant import MethodVariant

__all__ = ["CKSLists", "cks_lists", "elki_knn_list", "heap_drain", "heap_offer"]


@njit(cache=True, inline="always")
def _heapify_down(hk, hv, size, cur, val):  # pragma: no cover - numba
    """ELKI's ``DoubleIntegerMaxHeap.heapifyDown`` (used by replaceTopElement and poll)."""
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


@njit(cache=True, inline="always")
def heap_offer(hk, hv, ties, K, size, nties, kdist, d, i):  # pragma: no cover - numba
    """Offer object ``i`` at squared distance ``d`` to the heap (``hk``/``hv`` of capacity K, ``ties`` large
    enough for every tied object, e.g. N). Returns the new (size, nties, kdist); start from (0, 0, inf)."""
    if size < K:  # DoubleIntegerMaxHeap.add + heapifyUp
        pos = size
        size += 1
        while pos > 0:
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
        return size, nties, kdist
    if d >= kdist:
        if d == kdist:
            ties[nties] = i
            nties += 1
        return size, nties, kdist
    prevdist = kdist
    previd = hv[0]
    _heapify_down(hk, hv, size, d, i)
    kdist = hk[0]
    if kdist < prevdist:
        nties = 0
    else:
        ties[nties] = previd
        nties += 1
    return size, nties, kdist


@njit(cache=True)
def heap_drain(hk, hv, ties, size, nties, out):  # pragma: no cover - numba
    """``toKNNList``: write the list (heap in poll order, sorted by distance, then the tied extras) to
    ``out``; returns its length. Empties the heap."""
    for t in range(nties):
        out[size + t] = ties[t]
    total = size + nties
    for j in range(size - 1, -1, -1):
        out[j] = hv[0]
        size -= 1
        if size > 0:
            _heapify_down(hk, hv, size, hk[size], hv[size])
    return total


@njit(cache=True)
def elki_knn_list(keys, K, hk, hv, ties, out):  # pragma: no cover - numba
    """The order of ELKI 0.7.1's ``getKNNForDBID(p, K)`` for a linear scan: ``keys`` are the squared
    Euclidean distances of all objects (index order) to p, p itself included with key 0; NaN keys are not
    candidates. Writes the ids to ``out`` and returns the list length (K + ties)."""
    size = 0
    nties = 0
    kdist = np.inf
    for i in range(keys.shape[0]):
        d = keys[i]
        if d != d:  # NaN: not a candidate
            continue
        size, nties, kdist = heap_offer(hk, hv, ties, K, size, nties, kdist, d, i)
    return heap_drain(hk, hv, ties, size, nties, out)


# --------------------------------------------------------------------------------------------------------
# ELKI 0.7.1's batch tool ComputeKNNOutlierScores: one materialised kNN list per object, sublists for all k


@njit(cache=True, parallel=True)
def _cks_scan(X, K, rep, W, ids, dst, lens):  # pragma: no cover - numba
    """ELKI's list getKNNForDBID(p, K) for every representative p (rep[p] == p): ids in ELKI's order
    (p included) and their distances sqrt(Σ (x_u − y_u)²) (attribute order). Rows longer than W are only
    measured (``lens``), not written."""
    N, d = X.shape
    for p in prange(N):
        if rep[p] != p:
            continue
        keys = np.empty(N)
        for o in range(N):
            s = 0.0
            for u in range(d):
                v = X[p, u] - X[o, u]
                s += v * v
            keys[o] = s
        hk = np.empty(K)
        hv = np.empty(K, np.int64)
        ties = np.empty(N, np.int64)
        size = 0
        nties = 0
        kdist = np.inf
        for o in range(N):
            size, nties, kdist = heap_offer(hk, hv, ties, K, size, nties, kdist, keys[o], o)
        total = size + nties
        lens[p] = total
        if total <= W:
            lst = np.empty(total, np.int64)
            heap_drain(hk, hv, ties, size, nties, lst)
            for j in range(total):
                ids[p, j] = lst[j]
                dst[p, j] = np.sqrt(keys[lst[j]])


@njit(cache=True, parallel=True)
def _cks_rows(ids, dst, lens, rep, I, D):  # pragma: no cover - numba
    """Row p of the view: the list of p's representative without p itself, in ELKI's order."""
    N = rep.shape[0]
    for p in prange(N):
        r = rep[p]
        c = 0
        for j in range(lens[r]):
            o = ids[r, j]
            if o == p:
                continue
            I[p, c] = o
            D[p, c] = dst[r, j]
            c += 1


@dataclass(eq=False)
class CKSLists:
    """The neighbourhoods ELKI 0.7.1's ``ComputeKNNOutlierScores`` serves to its algorithms.

    Attributes
    ----------
    graph : KNNGraph
        Row p: p's materialised list without p, in ELKI's order (ties among equal distances as ELKI's kNN
        heap of capacity ``K`` leaves them). ``neighborhood_sizes()`` are the sizes of the sublists the tool
        serves for every k (ties decided on the stored, square-rooted distances: ``keys = distances``).
    kdist : ndarray of shape (N, k_max)
        Column k−1: what the tool's sublist reports as "k-distance" — the (k+1)-distance (its off-by-one),
        except at k = N − 1, where the full list is served and the value is the (N−1)-distance.
    K : int
        Capacity of the materialised lists, ``min(maxk + 2, N)`` (p itself included).
    """

    graph: Any
    kdist: np.ndarray
    K: int


_CKS_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cks_lists(graph: Any, maxk: int) -> CKSLists:
    """The kNN sublists of ELKI 0.7.1's batch tool ``ComputeKNNOutlierScores`` run with ``-maxk maxk``
    (Euclidean distance), built from ``graph.X``; cached per graph and maxk.

    The tool materialises one list per object, ``getKNNForDBID(p, K)`` with ``K = min(min(maxk, N−1) + 2, N)``
    (``MaterializeKNNPreprocessor``: a linear scan in index order into ELKI's kNN heap of capacity K on
    squared distances, ties at the K-th included; exact duplicates share the list of the first of them), and
    serves every algorithm's request for k + 1 neighbours as a sublist of it: the first k + 1 entries plus the
    following entries whose *stored* (square-rooted) distance is ≤ the (k+1)-th, with ``getKNNDistance()``
    reading the entry after them (``../shared/docs/elki-0.7.1-semantics.md`` §0.3). A request for all K
    entries (k = N − 1) gets the list itself.
    """
    from odeval.neighbors.graph import KNNGraph

    name = str(getattr(graph.metric, "name", graph.metric)).lower()
    if name not in ("euclidean", "l2"):
        raise ValueError(f"variant '{MethodVariant.ELKI_071_CKS}' reproduces ELKI's Euclidean kNN lists; use a "
                         f"Euclidean graph (got {graph.metric!r})")
    X = np.ascontiguousarray(graph.X, dtype=np.float64)
    N = X.shape[0]
    kmax = min(int(maxk), N - 1)
    K = min(kmax + 2, N)
    per_graph = _CKS_CACHE.setdefault(graph, {})
    if K in per_graph:
        return per_graph[K]
    _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
    rep = first[inverse.reshape(-1)].astype(np.int64)
    W = K + 32
    lens = np.zeros(N, np.int64)
    while True:
        ids = np.full((N, W), -1, np.int64)
        dst = np.full((N, W), np.inf)
        _cks_scan(X, K, rep, W, ids, dst, lens)
        if lens.max() <= W:
            break
        W = int(lens.max())
    w = int(lens[rep].max()) - 1
    I = np.full((N, w), -1, np.int64)
    D = np.full((N, w), np.inf)
    _cks_rows(ids, dst, lens, rep, I, D)
    view = KNNGraph(distances=D, indices=I, k_max=kmax, metric=graph.metric, X=graph.X, keys=D,
                    metric_spec=graph.metric_spec)
    kd = np.empty((N, kmax))
    for k in range(1, kmax + 1):
        kd[:, k - 1] = D[:, k] if k + 1 < K else D[:, k - 1]
    res = CKSLists(graph=view, kdist=kd, K=K)
    per_graph[K] = res
    return res
