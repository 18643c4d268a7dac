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

import numpy as np
from numba import njit

__all__ = ["elki_knn_list", "heap_drain", "heap_offer"]


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
