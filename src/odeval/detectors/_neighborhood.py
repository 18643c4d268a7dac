"""Neighbourhood helpers shared by LDOF, COF, FastABOD, INFLO and GLOSH.

Validation of ks against the graph, the tie-extended neighbourhood sizes for all requested k, the lists and arrays
a method variant scores on (:func:`_variant_lists`), blocks of pairwise distances among ``{p} ∪ N(p)`` in the
graph's own arithmetic, and a re-enactment of ELKI 0.7.1's kNN heap, whose list order among tied neighbours the
``elki-0.7.1`` variants need to reproduce ELKI's values to the last bit.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

from odeval.detectors.base import MethodInfo, MethodVariant, check_ks
from odeval.neighbors._elki_order import cks_lists, heap_drain, heap_offer

# Upper bound on the number of float64 entries of one block of neighbour-pair distances (≈ 32 MB).
_BLOCK_BUDGET = 4_000_000


def _metric_name(graph: Any) -> str:
    metric = graph.metric
    return str(getattr(metric, "name", metric)).lower()


def _is_euclidean(graph: Any) -> bool:
    return _metric_name(graph) in ("euclidean", "l2")


def _require_elki_order(graph: Any, method: str, variant: str) -> None:
    """The ``elki-0.7.1`` variants re-enact ELKI's kNN list order, which exists for Euclidean graphs only."""
    if not _is_euclidean(graph):
        raise ValueError(f"{method}: variant={variant!r} reproduces ELKI's Euclidean kNN list order; use a "
                         f"Euclidean graph (got {graph.metric!r}) or variant='{MethodVariant.PAPER}'")


def _prepare_ks(graph: Any, ks: int | Sequence[int], info: MethodInfo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``ks`` against the graph; return (ks, sorted unique ks, position of each k in the unique ks)."""
    n = int(graph.n_objects)
    arr = check_ks(ks, n, info, int(graph.k_max))
    uniq, inverse = np.unique(arr, return_inverse=True)
    return arr, uniq, inverse.reshape(-1)


def _in_request_order(scores: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """``scores[inverse]`` (rows of the distinct ks back in the requested order), without the copy when the
    request was already the distinct ks in ascending order — the common case, where the copy was one more
    (len(ks), N) matrix at peak memory (0.8 GB at N = 10⁶, k = 1..100)."""
    if inverse.size == scores.shape[0] and np.array_equal(inverse, np.arange(inverse.size)):
        return scores
    return scores[inverse]


def _neighbourhood_sizes(graph: Any, ks: np.ndarray) -> np.ndarray:
    """|N_k(p)| (ties included) for every k in ``ks`` (ascending) and every object: shape (len(ks), N)."""
    return np.stack([np.asarray(graph.neighborhood_size(int(k)), dtype=np.int64) for k in ks])


@dataclass
class _VariantLists:
    """The neighbour lists a method variant scores on (:func:`_variant_lists`) and the arrays its kernels read."""

    graph: Any  #: the graph; for ``elki-0.7.1-cks`` the lists of ELKI's batch tool (rows in ELKI's order)
    ks: np.ndarray  #: the distinct requested k, ascending
    inverse: np.ndarray  #: position of each requested k in ``ks``
    elki: bool  #: an ELKI variant (``elki-0.7.1`` or ``elki-0.7.1-cks``)
    cks: bool  #: ``elki-0.7.1-cks``
    kdist: np.ndarray | None  #: ``elki-0.7.1-cks``: the k-distances the batch tool reports (``CKSLists.kdist``)
    X: np.ndarray  #: ``graph.X``, float64, C order
    dist: np.ndarray  #: ``graph.distances``, float64, C order
    idx: np.ndarray  #: ``graph.indices``, int64, C order

    @functools.cached_property
    def sizes(self) -> np.ndarray:
        """(len(ks), N): |N_k(p)| on ``graph`` — made when first read: a (len(ks), N) int64 matrix (0.8 GB at
        N = 10⁶, k = 1..100) that a kernel needing only the largest k's sizes (:attr:`last_sizes`) never holds."""
        return _neighbourhood_sizes(self.graph, self.ks)

    @property
    def last_sizes(self) -> np.ndarray:
        """|N_k(p)| for the largest requested k, (N,) int64, C order."""
        if "sizes" in self.__dict__:
            return np.ascontiguousarray(self.sizes[-1])
        return np.ascontiguousarray(self.graph.neighborhood_size(int(self.ks[-1])), dtype=np.int64)


def _variant_lists(graph: Any, ks: int | Sequence[int], info: MethodInfo, variant: str) -> _VariantLists:
    """Validate ``ks``; for ``elki-0.7.1-cks`` take ELKI's batch-tool lists (:func:`odeval.neighbors._elki_order.
    cks_lists`) for the largest k; the neighbourhood sizes on the lists scored; for an ELKI variant, check that the
    graph has ELKI's Euclidean list order (:func:`_require_elki_order`)."""
    _, uniq, inverse = _prepare_ks(graph, ks, info)
    cks = variant == MethodVariant.ELKI_071_CKS
    kdist = None
    if cks:  # ELKI's batch tool: rows already in the order of its materialised lists, its sublist sizes
        lists = cks_lists(graph, int(uniq[-1]))
        graph, kdist = lists.graph, lists.kdist
    elki = variant != MethodVariant.PAPER
    if elki:
        _require_elki_order(graph, info.name, variant)
    return _VariantLists(graph, uniq, inverse, elki, cks, kdist,
                         np.ascontiguousarray(graph.X, dtype=np.float64),
                         np.ascontiguousarray(graph.distances, dtype=np.float64),
                         np.ascontiguousarray(graph.indices, dtype=np.int64))


@njit(cache=True, parallel=True)
def _euclidean_blocks(X, dist, idx, rows, width, out):  # pragma: no cover - numba
    """out[c, i, j] = Euclidean distance between members i and j of {p} ∪ N(p), p = rows[c].

    Member 0 is p, member i ≥ 1 is ``idx[p, i-1]``. Row 0 is copied from the graph (``dist``); the other
    entries are sqrt(Σ (x_t − y_t)²) summed in attribute order, the graph's own arithmetic.
    """
    d = X.shape[1]
    for c in prange(rows.shape[0]):
        p = rows[c]
        out[c, 0, 0] = 0.0
        for j in range(1, width + 1):
            out[c, 0, j] = dist[p, j - 1]
            out[c, j, 0] = dist[p, j - 1]
        for i in range(1, width + 1):
            a = idx[p, i - 1]
            out[c, i, i] = 0.0
            for j in range(i + 1, width + 1):
                b = idx[p, j - 1]
                if a < 0 or b < 0:
                    v = np.inf
                else:
                    s = 0.0
                    for t in range(d):
                        diff = X[a, t] - X[b, t]
                        s += diff * diff
                    v = np.sqrt(s)
                out[c, i, j] = v
                out[c, j, i] = v


def _generic_blocks(graph: Any, rows: np.ndarray, width: int) -> np.ndarray:
    """Same as :func:`_euclidean_blocks` for any metric, through ``graph.distance_between``."""
    dist, idx = graph.distances, graph.indices
    out = np.zeros((rows.size, width + 1, width + 1))
    iu, ju = np.triu_indices(width, k=1)
    for c, p in enumerate(rows):
        out[c, 0, 1:] = dist[p, :width]
        out[c, 1:, 0] = dist[p, :width]
        members = idx[p, :width]
        valid = (members[iu] >= 0) & (members[ju] >= 0)
        vals = np.full(iu.size, np.inf)
        if valid.any():
            vals[valid] = np.asarray(graph.distance_between(members[iu][valid], members[ju][valid]), dtype=np.float64)
        out[c, 1 + iu, 1 + ju] = vals
        out[c, 1 + ju, 1 + iu] = vals
    return out


def _iter_blocks(graph: Any, width_per_row: np.ndarray):
    """Yield (rows, block) chunks covering all objects; block[c] holds the pairwise distances among
    {p} ∪ (the first ``width`` graph neighbours of p), ``width`` = max of ``width_per_row`` over the chunk."""
    n = int(graph.n_objects)
    X = np.ascontiguousarray(graph.X, dtype=np.float64)
    dist = np.ascontiguousarray(graph.distances, dtype=np.float64)
    idx = np.ascontiguousarray(graph.indices, dtype=np.int64)
    euclid = _is_euclidean(graph)
    start = 0
    while start < n:
        w = int(width_per_row[start])
        stop = start + 1
        # grow the chunk while the block stays within the budget
        while stop < n:
            w2 = max(w, int(width_per_row[stop]))
            if (stop + 1 - start) * (w2 + 1) ** 2 > _BLOCK_BUDGET:
                break
            w = w2
            stop += 1
        rows = np.arange(start, stop, dtype=np.int64)
        if euclid:
            block = np.empty((rows.size, w + 1, w + 1))
            _euclidean_blocks(X, dist, idx, rows, w, block)
        else:
            block = _generic_blocks(graph, rows, w)
        yield rows, block
        start = stop


# ELKI 0.7.1's kNN list order (needed to reproduce its arithmetic and tie-breaking exactly)


@njit(cache=True)
def _row_has_ties(dist, p, n):  # pragma: no cover - numba
    """True if two of the first n neighbours of p are at the same distance (their order is then ELKI's)."""
    for j in range(n - 1):
        if dist[p, j] == dist[p, j + 1]:
            return True
    return False


@njit(cache=True, inline="always")
def _sq_key(X, p, q):  # pragma: no cover - numba
    s = 0.0
    for u in range(X.shape[1]):
        v = X[q, u] - X[p, u]
        s += v * v
    return s


@njit(cache=True)
def _elki_perm(X, idx, p, K, n, w, perm):  # pragma: no cover - numba
    """perm[1..n] := the neighbour positions (1-based, graph row order) of p's list getKNNForDBID(p, K) in
    ELKI 0.7.1's order, p itself skipped.

    Re-enacts ELKI's linear scan into its kNN heap (:mod:`odeval.neighbors._elki_order`) over all objects in
    index order, keys = squared Euclidean distances (ELKI's arithmetic). ``w``: length of a tie-complete prefix of p's
    graph row (every object outside it is farther than its last entry), so an object outside it is skipped
    without computing its key once the heap is full and its top is within that prefix: O(N) per call plus
    O(d) per computed key. Leaves perm unchanged if ELKI's list is not the graph's N(p) (cannot happen for a
    Euclidean graph, whose ties are decided on the same squared distances)."""
    N = X.shape[0]
    rowmax = _sq_key(X, p, idx[p, w - 1])
    hk = np.empty(K)
    hv = np.empty(K, dtype=np.int64)
    ties = np.empty(N, dtype=np.int64)
    # visiting order: all objects in index order until the heap is full with its top within the prefix;
    # from then on only the prefix's members (and p) can change anything, visited in index order
    members = np.empty(w + 1, dtype=np.int64)
    for j in range(w):
        members[j] = idx[p, j]
    members[w] = p
    order = np.argsort(members)  # members[order] ascending; order[i] = graph row position (w: p itself)
    members = members[order]
    size = 0
    nties = 0
    kdist = np.inf
    i = -1
    mpos = 0
    while True:
        if size >= K and kdist <= rowmax:
            while mpos <= w and members[mpos] <= i:
                mpos += 1
            if mpos > w:
                break
            i = members[mpos]
            mpos += 1
        else:
            i += 1
            if i >= N:
                break
        if i == p:
            d = 0.0
        else:
            d = _sq_key(X, p, i)
        size, nties, kdist = heap_offer(hk, hv, ties, K, size, nties, kdist, d, i)
    if size + nties != n + 1:
        return
    lst = np.empty(size + nties, dtype=np.int64)
    total = heap_drain(hk, hv, ties, size, nties, lst)
    tmp = np.empty(n + 1, dtype=np.int64)
    k = 1
    for a in range(total):
        o = lst[a]
        if o == p:
            continue
        h = np.searchsorted(members, o)
        if h > w or members[h] != o or order[h] >= n or k > n:
            return
        tmp[k] = order[h] + 1
        k += 1
    for i in range(1, n + 1):
        perm[i] = tmp[i]
