"""LDOF: the local distance-based outlier factor (Zhang, Hutter and Jin 2009).

Also home of private helpers shared by LDOF, COF, FastABOD, INFLO and GLOSH: validation of ks against the
graph, the tie-extended neighbourhood sizes for all requested k, blocks of pairwise distances among
``{p} ∪ N(p)`` in the graph's own arithmetic, and a re-enactment of ELKI 0.7.1's kNN heap, whose list order
among tied neighbours the ``elki-0.7.1`` variants need to reproduce ELKI's values to the last bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit, prange

from odeval.detectors.base import Detector, MethodInfo, check_ks, check_variant, register
from odeval.neighbors._elki_order import heap_drain, heap_offer

__all__ = ["LDOF", "ldof_scores"]

# Upper bound on the number of float64 entries of one block of neighbour-pair distances (≈ 32 MB).
_BLOCK_BUDGET = 4_000_000


# ---------------------------------------------------------------------------------------------------------
# shared helpers (private; used by cof.py, abod.py, inflo.py and glosh.py as well)


def _metric_name(graph: Any) -> str:
    metric = graph.metric
    return str(getattr(metric, "name", metric)).lower()


def _is_euclidean(graph: Any) -> bool:
    return _metric_name(graph) in ("euclidean", "l2")


def _prepare_ks(graph: Any, ks: int | Sequence[int], info: MethodInfo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate ``ks`` against the graph; return (ks, sorted unique ks, position of each k in the unique ks)."""
    n = int(graph.n_objects)
    arr = check_ks(ks, n, info, int(graph.k_max))
    uniq, inverse = np.unique(arr, return_inverse=True)
    return arr, uniq, inverse.reshape(-1)


def _neighbourhood_sizes(graph: Any, ks: np.ndarray) -> np.ndarray:
    """|N_k(p)| (ties included) for every k in ``ks`` (ascending) and every object: shape (len(ks), N)."""
    return np.stack([np.asarray(graph.neighborhood_size(int(k)), dtype=np.int64) for k in ks])


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


# ---------------------------------------------------------------------------------------------------------
# LDOF


@njit(cache=True, parallel=True)
def _ldof_chunk(block, sizes):  # pragma: no cover - numba
    """LDOF for the chunk's objects and all k (sizes: (n_k, chunk), ascending along axis 0).

    Incremental over k: when the neighbourhood grows from n to n' members, only the distances of the new
    members to p and to the earlier members are added (O(n') per new member).
    """
    nk, m = sizes.shape
    out = np.empty((nk, m))
    for c in prange(m):
        dsum = 0.0
        psum = 0.0
        j = 0  # members 1..j of the block are in the running sums
        for t in range(nk):
            target = sizes[t, c]
            while j < target:
                j += 1
                dsum += block[c, 0, j]
                for i in range(1, j):
                    psum += block[c, i, j]
            n = target
            npairs = n * (n - 1) / 2.0
            if npairs <= 0.0:
                out[t, c] = 1.0
                continue
            dbar = dsum / n
            Dbar = psum / npairs
            val = dbar / Dbar if Dbar != 0.0 else np.inf
            out[t, c] = val if np.isfinite(val) else 1.0
    return out


@njit(cache=True, inline="always")
def _mean_put(state, val):  # pragma: no cover - numba
    """ELKI 0.7.1's ``Mean.put``: n += 1; m1 += (val − m1)/n (m1 = ±∞ absorbs). state = [n, m1]."""
    state[0] += 1.0
    if state[1] == np.inf or state[1] == -np.inf:
        state[1] += val
    else:
        state[1] += (val - state[1]) / state[0]


@njit(cache=True, parallel=True)
def _ldof_elki_chunk(block, sizes, ks, X, rows, dist, idx):  # pragma: no cover - numba
    """LDOF with ELKI 0.7.1's arithmetic: running means (``Mean``) over the neighbours and over the pairs
    (i < j) in the order of ELKI's kNN list. O(|N|²) per k."""
    nk, m = sizes.shape
    out = np.empty((nk, m))
    width = block.shape[1]
    for c in prange(m):
        p = rows[c]
        perm = np.arange(width)
        w = sizes[nk - 1, c]
        dmean = np.zeros(2)
        pmean = np.zeros(2)
        for t in range(nk):
            n = sizes[t, c]
            for i in range(n + 1):
                perm[i] = i
            if _row_has_ties(dist, p, n):
                _elki_perm(X, idx, p, ks[t] + 1, n, w, perm)
            dmean[0] = 0.0
            dmean[1] = 0.0
            pmean[0] = 0.0
            pmean[1] = 0.0
            for a in range(1, n + 1):
                ma = perm[a]
                _mean_put(dmean, block[c, 0, ma])
                for b in range(a + 1, n + 1):
                    _mean_put(pmean, block[c, ma, perm[b]])
            val = dmean[1] / pmean[1] if pmean[1] != 0.0 else (np.inf if dmean[1] != 0.0 else np.nan)
            out[t, c] = val if np.isfinite(val) else 1.0
    return out


def ldof_scores(graph: Any, ks: int | Sequence[int], variant: str = "paper") -> np.ndarray:
    """LDOF scores of all objects for every k in ``ks``, from one kNN graph.

    Parameters
    ----------
    graph : KNNGraph
        Exact kNN graph (:func:`odeval.neighbors.knn_graph`) with ``k_max >= max(ks)``.
    ks : int or sequence of int
        Neighbourhood sizes, each ≥ 2.
    variant : {"paper", "elki-0.7.1"}
        The same formula either way. ``"paper"`` (default): exact sums, incremental over k (each new
        neighbour adds its distances to p and to the earlier neighbours). ``"elki-0.7.1"``: ELKI 0.7.1's
        arithmetic — running means over the neighbours and the pairs in the order of ELKI's kNN list (its
        heap order among tied neighbours; Euclidean graphs only) — so that values agree to the last bit and
        rounding makes or breaks the same ties; O(|N|²) per k.

    Returns
    -------
    ndarray of shape (len(ks), n_objects)
        LDOF(p) = d̄(p) / D̄(p); higher = more outlying, 1.0 where the ratio is NaN or infinite.

    Notes
    -----
    Zhang, Hutter and Jin (2009), Definitions 1–3: with N = N_k(p),

        d̄(p) = (1/|N|) Σ_{o∈N} d(p, o),    D̄(p) = 1/(|N|(|N|−1)) Σ_{o≠o'∈N} d(o, o'),
        LDOF(p) = d̄(p) / D̄(p).

    N_k(p) contains every object tied at the k-distance (|N| ≥ k) and exact duplicates of p (distance 0),
    as in ELKI 0.7.1 (``lof.LDOF``). Where the ratio is undefined — D̄(p) = 0, i.e. all neighbours coincide —
    the score is 1.0 (ELKI's rule for NaN and ∞; the paper does not treat the case).

    References
    ----------
    K. Zhang, M. Hutter, H. Jin. A new local distance-based outlier detection approach for scattered
    real-world data. PAKDD 2009, LNCS 5476, pp. 813–822.
    """
    return LDOF(variant=variant).raw_scores_all_k(graph, ks)


@register
class LDOF(Detector):
    """Local distance-based outlier factor (Zhang et al. 2009); see :func:`ldof_scores`."""

    info = MethodInfo(
        name="LDOF",
        min_k=2,
        inverted=False,
        inlier_value=1.0,
        score_range=(0.0, np.inf),
        reference="K. Zhang, M. Hutter, H. Jin. A new local distance-based outlier detection approach for "
        "scattered real-world data. PAKDD 2009.",
    )
    novelty = True

    def __init__(self, variant: str = "paper") -> None:
        check_variant("LDOF", variant, ("paper", "elki-0.7.1"))
        self.variant = variant

    def params(self) -> dict[str, Any]:
        return {"variant": self.variant}

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        _, uniq, inverse = _prepare_ks(graph, ks, self.info)
        sizes = _neighbourhood_sizes(graph, uniq)
        out = np.empty((uniq.size, int(graph.n_objects)))
        elki = self.variant == "elki-0.7.1"
        if elki and not _is_euclidean(graph):
            raise ValueError("LDOF: variant='elki-0.7.1' reproduces ELKI's Euclidean kNN list order; use a "
                             f"Euclidean graph (got {graph.metric!r}) or variant='paper'")
        X = np.ascontiguousarray(graph.X, dtype=np.float64)
        dist = np.ascontiguousarray(graph.distances, dtype=np.float64)
        idx = np.ascontiguousarray(graph.indices, dtype=np.int64)
        for rows, block in _iter_blocks(graph, sizes[-1]):
            sz = np.ascontiguousarray(sizes[:, rows])
            out[:, rows] = _ldof_elki_chunk(block, sz, uniq, X, rows, dist, idx) if elki else _ldof_chunk(block, sz)
        return out[inverse]

    def novelty_raw_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Novelty LDOF (variant "paper"): the same formula with N = N_k(q), q's training neighbours (ties
        included): d̄(q) = mean d(q, o), D̄(q) = mean d(o, o') over pairs of N (Zhang et al. 2009, Def. 1–3).
        Only distances from q to training objects and among training objects enter, so for a training object x
        queried against X \\ {x} it equals x's in-sample LDOF."""
        if self.variant != "paper":
            raise NotImplementedError("LDOF: the novelty form is defined for variant='paper' only (the ELKI variant "
                                      "emulates ELKI's in-sample list order)")
        ks_arr = check_ks(ks, int(graph.n_objects) + 1, self.info, query.k_max)
        uniq, inverse = np.unique(ks_arr, return_inverse=True)
        sizes = np.ascontiguousarray(query.neighborhood_sizes()[:, uniq - 1].T)  # (n_k, M)
        m = query.n_queries
        out = np.empty((uniq.size, m))
        widths = sizes[-1]
        start = 0
        while start < m:
            stop, w = start + 1, int(widths[start])
            while stop < m and (stop + 1 - start) * (max(w, int(widths[stop])) + 1) ** 2 <= _BLOCK_BUDGET:
                w = max(w, int(widths[stop]))
                stop += 1
            rows = np.arange(start, stop)
            block = np.full((rows.size, w + 1, w + 1), np.inf)
            block[:, 0, 1:] = query.distances[rows, :w]
            block[:, 1:, 0] = query.distances[rows, :w]
            iu, ju = np.triu_indices(w, k=1)
            members = query.indices[rows, :w]
            a, b = members[:, iu], members[:, ju]
            valid = (a >= 0) & (b >= 0)
            vals = np.full(a.shape, np.inf)
            vals[valid] = graph.distance_between(a[valid], b[valid])
            block[:, 1 + iu, 1 + ju] = vals
            block[:, 1 + ju, 1 + iu] = vals
            out[:, rows] = _ldof_chunk(block, np.ascontiguousarray(sizes[:, rows]))
            start = stop
        return out[inverse.reshape(-1)]
