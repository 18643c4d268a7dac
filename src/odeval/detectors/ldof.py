"""LDOF: the local distance-based outlier factor (Zhang, Hutter and Jin 2009).

The neighbourhood helpers it shares with COF, FastABOD, INFLO and GLOSH live in
:mod:`odeval.detectors._neighborhood`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from odeval.detectors._neighborhood import (
    _BLOCK_BUDGET,
    _elki_perm,
    _in_request_order,
    _is_euclidean,
    _iter_blocks,
    _neighbourhood_sizes,
    _row_has_ties,
    _variant_lists,
)
from odeval.detectors.base import VARIANT, Detector, MethodInfo, MethodVariant, check_ks, register
from odeval.detectors.blockwise import REFUSE_ELKI_VARIANTS, BlockState, Step, per_chunk
from odeval.neighbors._kernels import _pair_key, pair_distances

__all__ = ["LDOF", "ldof_scores"]

#: Novelty LDOF looks the training objects' pairwise distances up in an (N, N) table up to this many entries
#: (4 M: 32 MB, N ≤ 2,048) and computes them per pair above (same values either way).
_NOVELTY_TABLE_ENTRIES = 1 << 22

#: Rows of at least this many neighbours whose members occupy at most half as many distinct locations (exact
#: duplicates) sum their pairwise distances over the locations (:func:`_ldof_row_by_location`); other rows, and
#: every row of a graph without such rows, sum over the member pairs as before, bit for bit.
_TIE_ROW_MIN = 128


# ---------------------------------------------------------------------------------------------------------
# LDOF


@njit(cache=True, inline="always")
def _ldof_ratio(dsum, psum, n):  # pragma: no cover - numba
    """LDOF of an object with ``n`` neighbours from the running sums of its kNN distances (``dsum``) and of the
    neighbours' pairwise distances (``psum``): d̄ / D̄ (Zhang et al. 2009, Def. 3-5); 1 with fewer than two
    neighbours. Shared by the kernels of the graph's own objects and of query rows (same expressions, same bits)."""
    npairs = n * (n - 1) / 2.0
    if npairs <= 0.0:
        return 1.0
    dbar = dsum / n
    Dbar = psum / npairs
    if Dbar != 0.0:
        return dbar / Dbar
    return np.inf if dbar > 0.0 else 1.0  # all neighbours coincide: D̄ → 0⁺ gives +∞ if p lies apart, 1 if not


def _location_ids(X: np.ndarray) -> np.ndarray:
    """Location of every row of ``X``: the rank of its coordinates among the distinct rows in lexicographic order
    (exact duplicates share one location; ``-0.0`` and ``0.0`` compare equal, which changes no distance)."""
    n = X.shape[0]
    if n == 0:
        return np.empty(0, np.int64)
    order = np.lexsort(X.T[::-1])
    Xs = X[order]
    new = np.empty(n, np.bool_)
    new[0] = True
    new[1:] = np.any(Xs[1:] != Xs[:-1], axis=1)
    loc = np.empty(n, np.int64)
    loc[order] = np.cumsum(new) - 1
    return loc


def _locations_if_ties(X: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """:func:`_location_ids` of ``X`` when some row is at least :data:`_TIE_ROW_MIN` members wide (the only rows
    that may sum by location), else an empty array (the kernels then never look)."""
    if widths.size and int(widths.max()) >= _TIE_ROW_MIN:
        return _location_ids(np.ascontiguousarray(X, dtype=np.float64))
    return np.empty(0, np.int64)


@njit(cache=True)
def _by_location(members, w, loc):  # pragma: no cover - numba
    """Slots of a row's first ``w`` members by location, or an empty array when the row does not qualify.

    Qualifies: ``w ≥ _TIE_ROW_MIN`` and its members occupy at most ``w // 2`` distinct locations. Returns
    ``slot`` (w,) — the rank of member j's location among the row's distinct locations, which are ordered as
    :func:`_location_ids` orders them (lexicographically by coordinates), so the slots depend on the members'
    coordinates only, not on their numbering or order."""
    if loc.shape[0] == 0 or w < _TIE_ROW_MIN:
        return np.empty(0, np.int64)
    lj = np.empty(w, np.int64)
    for j in range(w):
        lj[j] = loc[members[j]]
    uniq = np.unique(lj)
    if 2 * uniq.shape[0] > w:
        return np.empty(0, np.int64)
    return np.searchsorted(uniq, lj)


@njit(cache=True)
def _ldof_row_by_location(drow, members, sizes, c, slot, X, metric, out):  # pragma: no cover - numba
    """LDOF of one row for every k, the pair sum over the members' distinct locations (rows of many duplicates).

    ``drow``, ``members``: the row's distances and member indices (sorted by (distance, index)); ``sizes[:, c]``
    the neighbourhood sizes, ascending; ``slot``: :func:`_by_location`. d̄'s sum runs over the members in order,
    as in the pairwise kernels (same bits). D̄'s sum Σ_{i<j} d(o_i, o_j) over the n members becomes

        Σ_{a<b} c_a c_b d(a, b)

    over the row's distinct locations a, b with c_a members at a (members at one location are at distance 0,
    and the distance of two members depends on their locations only): O(w + D² · n_k) for D locations instead of
    O(w²) pairs. The location distances use the graph's arithmetic (:func:`_pair_key`, ``sqrt`` for Euclidean),
    so each term is exactly a term of the pairwise sum; only the order and grouping of the additions differ, and
    with them the last bits of D̄: the grouped sum has O(D²) roundings instead of O(w²) and is the more accurate
    one (tests: within 1e-13 relative of the exact sum of the same distances, where the pairwise sum is up to
    1.8e-12 off; on Annthyroid's duplicate-heavy draws the two differ by ≤ 9.2e-13 relative). Equal member
    multisets give equal D̄ bit for bit."""
    nk = sizes.shape[0]
    w = sizes[nk - 1, c]
    n_loc = 0
    for j in range(w):
        if slot[j] + 1 > n_loc:
            n_loc = slot[j] + 1
    rep = np.empty(n_loc, np.int64)
    for j in range(w - 1, -1, -1):
        rep[slot[j]] = members[j]
    dd = np.zeros((n_loc, n_loc))
    for a in range(n_loc):
        for b in range(a + 1, n_loc):
            key = _pair_key(X, rep[a], X, rep[b], metric)
            dd[a, b] = np.sqrt(key) if metric == 0 else key
    cnt = np.zeros(n_loc)
    dsum = 0.0
    j = 0
    for t in range(nk):
        target = sizes[t, c]
        while j < target:
            dsum += drow[j]
            cnt[slot[j]] += 1.0
            j += 1
        psum = 0.0
        for a in range(n_loc):
            if cnt[a] == 0.0:
                continue
            inner = 0.0
            for b in range(a + 1, n_loc):
                inner += cnt[b] * dd[a, b]
            psum += cnt[a] * inner
        out[t, c] = _ldof_ratio(dsum, psum, target)


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
            out[t, c] = _ldof_ratio(dsum, psum, target)
    return out


@njit(cache=True, parallel=True)
def _ldof_euclidean_rows(X, dist, idx, sizes, loc):  # pragma: no cover - numba
    """:func:`_ldof_chunk` for every object of a Euclidean graph without the (w+1)² distance blocks: the
    distances of a new member to the earlier ones are computed here, vectorised over the earlier members, each
    ``sqrt(Σ_t (x_t − y_t)²)`` summed in attribute order as :func:`odeval.detectors._neighborhood.
    _euclidean_blocks` computes it, and added in the same order — the same values, without writing and reading
    (w+1)² floats per object. ``sizes``: (n_k, N), ascending along axis 0. ``loc``: :func:`_location_ids` of X
    or empty; rows of many duplicates (:func:`_by_location`) sum by location (:func:`_ldof_row_by_location`)."""
    nk, n_obj = sizes.shape
    d = X.shape[1]
    out = np.empty((nk, n_obj))
    for p in prange(n_obj):
        w = sizes[nk - 1, p]
        slot = _by_location(idx[p], w, loc)
        if slot.shape[0] > 0:
            _ldof_row_by_location(dist[p], idx[p], sizes, p, slot, X, 0, out)
            continue
        MT = np.empty((d, w + 1))  # member coordinates, transposed (member i ≥ 1 = idx[p, i − 1])
        for i in range(1, w + 1):
            a = idx[p, i - 1]
            for t in range(d):
                MT[t, i] = X[a, t]
        acc = np.empty(w + 1)
        dsum = 0.0
        psum = 0.0
        j = 0
        for t in range(nk):
            target = sizes[t, p]
            while j < target:
                j += 1
                dsum += dist[p, j - 1]
                if j > 1:
                    xj = MT[0, j]
                    row = MT[0, 1:j]
                    for i in range(j - 1):
                        u = row[i] - xj
                        acc[i] = u * u
                    tt = 1
                    while tt + 4 <= d:  # four attributes per pass over acc, added one after the other
                        x0 = MT[tt, j]
                        x1 = MT[tt + 1, j]
                        x2 = MT[tt + 2, j]
                        x3 = MT[tt + 3, j]
                        r0 = MT[tt, 1:j]
                        r1 = MT[tt + 1, 1:j]
                        r2 = MT[tt + 2, 1:j]
                        r3 = MT[tt + 3, 1:j]
                        for i in range(j - 1):
                            u0 = r0[i] - x0
                            u1 = r1[i] - x1
                            u2 = r2[i] - x2
                            u3 = r3[i] - x3
                            acc[i] = (((acc[i] + u0 * u0) + u1 * u1) + u2 * u2) + u3 * u3
                        tt += 4
                    while tt < d:
                        xj = MT[tt, j]
                        row = MT[tt, 1:j]
                        for i in range(j - 1):
                            u = row[i] - xj
                            acc[i] += u * u
                        tt += 1
                    for i in range(j - 1):
                        psum += np.sqrt(acc[i])
            out[t, p] = _ldof_ratio(dsum, psum, target)
    return out


@njit(cache=True, parallel=True)
def _ldof_novelty_chunk(qdist, qidx, X, sizes, metric, table, loc):  # pragma: no cover - numba
    """:func:`_ldof_chunk` for query rows, reading distances where they are instead of from a dense block.

    Row c's neighbours are ``qidx[c, :]`` at distances ``qdist[c, :]`` (a :class:`~odeval.neighbors.QueryKNN`);
    the distance between members i < j is computed here as :func:`odeval.neighbors.graph.KNNGraph.distance_between`
    does (``_pair_key`` of the earlier member to the later one, ``sqrt`` for Euclidean), and the sums run in
    :func:`_ldof_chunk`'s order, so the values are bit-identical to building its (w+1)² block per row — without
    the block's O(rows · w²) memory traffic, which made LDOF at large k the bulk of EM/MV's cost. ``table``:
    the (N, N) matrix of those distances when it is small enough to hold (looked up instead of recomputed; the
    key is symmetric to the last bit: (x − y)² = (y − x)², |x − y| = |y − x|), else an empty (0, 0) array.
    ``loc``: :func:`_location_ids` of X or empty; rows of many duplicates (:func:`_by_location`) sum by location
    (:func:`_ldof_row_by_location`: D̄ equal up to the pairwise sum's rounding, not bit for bit). Also the
    in-sample kernel of the Manhattan and Chebyshev graphs (the graph's rows as query rows).
    """
    use_table = table.shape[0] > 0
    nk, m = sizes.shape
    out = np.empty((nk, m))
    for c in prange(m):
        slot = _by_location(qidx[c], sizes[nk - 1, c], loc)
        if slot.shape[0] > 0:
            _ldof_row_by_location(qdist[c], qidx[c], sizes, c, slot, X, metric, out)
            continue
        dsum = 0.0
        psum = 0.0
        j = 0
        for t in range(nk):
            target = sizes[t, c]
            while j < target:
                j += 1
                dsum += qdist[c, j - 1]
                b = qidx[c, j - 1]
                for i in range(1, j):
                    a = qidx[c, i - 1]
                    if a < 0 or b < 0:
                        psum += np.inf
                    elif use_table:
                        psum += table[b, a]  # = d(a, b): the key is symmetric to the last bit
                    else:
                        key = _pair_key(X, a, X, b, metric)
                        psum += np.sqrt(key) if metric == 0 else key
            out[t, c] = _ldof_ratio(dsum, psum, target)
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


@njit(cache=True, parallel=True)
def _ldof_cks_chunk(block, sizes):  # pragma: no cover - numba
    """:func:`_ldof_elki_chunk` for rows already in ELKI's list order (``elki-0.7.1-cks``), all k in one pass.

    ELKI's running means for a sublist of n members see the pairs (a < b ≤ n) in row-major order, which is the
    row-major order of all pairs of the longest sublist restricted to b ≤ n. So one pass over the pairs feeds
    every k's mean (those with n_k ≥ b) with exactly its own sequence of values: the same O(Σ_k n_k²) updates,
    but independent across k (vectorisable) instead of one dependent chain per k."""
    nk, m = sizes.shape
    out = np.empty((nk, m))
    for c in prange(m):
        w = sizes[nk - 1, c]
        first = np.empty(w + 1, np.int64)  # first[b]: the first k index whose sublist contains member b
        t = 0
        for b in range(1, w + 1):
            while sizes[t, c] < b:
                t += 1
            first[b] = t
        dn = np.zeros(nk)
        dm = np.zeros(nk)
        pn = np.zeros(nk)
        pm = np.zeros(nk)
        for a in range(1, w + 1):
            v = block[c, 0, a]
            for t in range(first[a], nk):
                dn[t] += 1.0
                dm[t] += (v - dm[t]) / dn[t]
            for b in range(a + 1, w + 1):
                v = block[c, a, b]
                for t in range(first[b], nk):
                    pn[t] += 1.0
                    pm[t] += (v - pm[t]) / pn[t]
        for t in range(nk):
            val = dm[t] / pm[t] if pm[t] != 0.0 else (np.inf if dm[t] != 0.0 else np.nan)
            out[t, c] = val if np.isfinite(val) else 1.0
    return out


def ldof_scores(graph: Any, ks: int | Sequence[int], variant: str = MethodVariant.PAPER) -> np.ndarray:
    """LDOF scores of all objects for every k in ``ks``, from one kNN graph.

    Parameters
    ----------
    graph : KNNGraph
        Exact kNN graph (:func:`odeval.neighbors.knn_graph`) with ``k_max >= max(ks)``.
    ks : int or sequence of int
        Neighbourhood sizes, each ≥ 2.
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}
        The same formula either way. ``"paper"`` (default): exact sums, incremental over k (each new
        neighbour adds its distances to p and to the earlier neighbours). ``"elki-0.7.1"``: ELKI 0.7.1's
        arithmetic — running means over the neighbours and the pairs in the order of ELKI's kNN list (its
        heap order among tied neighbours; Euclidean graphs only) — so that values agree to the last bit and
        rounding makes or breaks the same ties; O(|N|²) per k. ``"elki-0.7.1-cks"``: the same arithmetic on the
        sublists of ELKI's batch tool ``ComputeKNNOutlierScores`` (ties on the stored distances, ELKI's heap
        order; docs/detectors.md), all k in one pass over the pairs.

    Returns
    -------
    ndarray of shape (len(ks), n_objects)
        LDOF(p) = d̄(p) / D̄(p); higher = more outlying. Where all neighbours coincide (D̄(p) = 0), see Notes.

    Notes
    -----
    Zhang, Hutter and Jin (2009), Definitions 1–3: with N = N_k(p),

        d̄(p) = (1/|N|) Σ_{o∈N} d(p, o),    D̄(p) = 1/(|N|(|N|−1)) Σ_{o≠o'∈N} d(o, o'),
        LDOF(p) = d̄(p) / D̄(p).

    N_k(p) contains every object tied at the k-distance (|N| ≥ k) and exact duplicates of p (distance 0),
    as in ELKI 0.7.1 (``lof.LDOF``).

    Cost. The pair sum of D̄ is O(|N|²). A row of at least 128 members that occupy at most half as many distinct
    locations (exact duplicates: feature draws of a few binary attributes, issue 26) sums it as
    Σ_{a<b} c_a c_b d(a, b) over its D distinct locations with c_a members each, O(|N| + D²): the same terms,
    grouped, so the last bits differ from the pairwise sum (the grouped sum is the more accurate one; tests
    bound the difference by 5e-12 relative). Every other row is summed pairwise, as before, bit for bit.

    All neighbours coincide (D̄(p) = 0; the paper does not treat the case). The default variant follows the
    limit of the definition as D̄(p) → 0⁺: LDOF(p) = +∞ when p lies apart from them (d̄(p) > 0) — an isolated
    object next to a group of duplicates ranks as an outlier, as with LOF and COF — and 1.0 (the inlier value)
    when p coincides with them as well (d̄(p) = 0, the 0/0 case: p is one of the duplicates). ``±inf`` is
    ranked like any other value (:func:`odeval.measures.finite_for_ranking`). ``variant="elki-0.7.1"`` keeps
    ELKI 0.7.1's rule instead: NaN and ∞ become 1.0, so such an isolated object gets the inlier score 1.0.

    References
    ----------
    K. Zhang, M. Hutter, H. Jin. A new local distance-based outlier detection approach for scattered
    real-world data. PAKDD 2009, LNCS 5476, pp. 813–822.
    """
    return LDOF(variant=variant).raw_scores_all_k(graph, ks)


def _paper_rows(graph: Any, sizes: np.ndarray) -> np.ndarray | None:
    """LDOF (variant "paper") of the graph's rows for the neighbourhood sizes ``sizes`` (n_k, rows) without
    distance blocks, or None for a metric without a numba kernel (then :func:`_ldof_chunk` over blocks).
    Euclidean: :func:`_ldof_euclidean_rows`; Manhattan, Chebyshev: :func:`_ldof_novelty_chunk` with the graph's
    rows as query rows — both sum as :func:`_ldof_chunk` does, bit for bit, except in rows of many duplicates,
    which sum by location (:func:`_ldof_row_by_location`)."""
    from odeval.neighbors.graph import _NUMBA_METRICS

    code = _NUMBA_METRICS.get(graph.metric_spec.name)
    if code is None and not _is_euclidean(graph):
        return None
    X = np.ascontiguousarray(graph.X, dtype=np.float64)
    dist = np.ascontiguousarray(graph.distances, dtype=np.float64)
    idx = np.ascontiguousarray(graph.indices, dtype=np.int64)
    loc = _locations_if_ties(X, sizes[-1])
    if _is_euclidean(graph):
        return _ldof_euclidean_rows(X, dist, idx, sizes, loc)
    return _ldof_novelty_chunk(dist, idx, X, sizes, code, np.empty((0, 0)), loc)


def _ldof_block(state: BlockState) -> dict[str, Any]:
    """LDOF of a block's objects (:mod:`odeval.detectors.blockwise`): the whole graph's row kernels
    (:func:`_paper_rows`; the block's indices are rows of the whole X), else :func:`_ldof_chunk` over its rows."""
    sizes = np.ascontiguousarray(_neighbourhood_sizes(state.block, state.ks))
    raw = _paper_rows(state.block, sizes)
    return {"raw": raw if raw is not None else per_chunk(state, _ldof_chunk)[0]}


@register
class LDOF(Detector):
    """Local distance-based outlier factor (Zhang et al. 2009); see :func:`ldof_scores`."""

    # scoring_version 2: the limit at inner distance 0 (+inf for an object apart from its coinciding neighbours)
    info = MethodInfo.ratio("LDOF", "K. Zhang, M. Hutter, H. Jin. A new local distance-based outlier detection "
                            "approach for scattered real-world data. PAKDD 2009.", min_k=2, scoring_version=2)
    novelty = True

    _parameter_constraints: ClassVar[dict[str, Any]] = {"variant": VARIANT}
    block_refusals = REFUSE_ELKI_VARIANTS

    def _block_steps(self) -> list[Step]:
        return [Step(_ldof_block)]  # distances among the neighbours come from X: no exchange

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        v = _variant_lists(graph, ks, self.info, self.variant)
        if not v.elki:  # no distance blocks where the metric has a numba kernel
            raw = _paper_rows(v.graph, np.ascontiguousarray(v.sizes))
            if raw is not None:
                return _in_request_order(raw, v.inverse)
        out = np.empty((v.ks.size, int(v.graph.n_objects)))
        for rows, block in _iter_blocks(v.graph, v.sizes[-1]):
            sz = np.ascontiguousarray(v.sizes[:, rows])
            if v.cks:
                out[:, rows] = _ldof_cks_chunk(block, sz)
            elif v.elki:
                out[:, rows] = _ldof_elki_chunk(block, sz, v.ks, v.X, rows, v.dist, v.idx)
            else:
                out[:, rows] = _ldof_chunk(block, sz)
        return _in_request_order(out, v.inverse)

    def novelty_raw_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Novelty LDOF (variant "paper"): the same formula with N = N_k(q), q's training neighbours (ties
        included): d̄(q) = mean d(q, o), D̄(q) = mean d(o, o') over pairs of N (Zhang et al. 2009, Def. 1–3).
        Only distances from q to training objects and among training objects enter, so for a training object x
        queried against X \\ {x} it equals x's in-sample LDOF."""
        if self.variant != MethodVariant.PAPER:
            raise NotImplementedError(f"LDOF: the novelty form is defined for variant='{MethodVariant.PAPER}' only "
                                      "(the ELKI variant emulates ELKI's in-sample list order)")
        ks_arr = check_ks(ks, int(graph.n_objects) + 1, self.info, query.k_max)
        uniq, inverse = np.unique(ks_arr, return_inverse=True)
        sizes = np.ascontiguousarray(query.neighborhood_sizes()[:, uniq - 1].T)  # (n_k, M)
        from odeval.neighbors.graph import _NUMBA_METRICS

        code = _NUMBA_METRICS.get(graph.metric_spec.name)
        m = query.n_queries
        if code is not None:  # the distances among members computed in the kernel (same arithmetic, no block)
            w = int(sizes[-1].max()) if sizes.size else 0
            Xg = np.ascontiguousarray(graph.X, dtype=np.float64)
            n = Xg.shape[0]
            table = np.empty((0, 0))
            if n * n <= _NOVELTY_TABLE_ENTRIES and m * w * w > n * n:  # worth it when lookups outnumber entries
                rows, cols = np.divmod(np.arange(n * n, dtype=np.int64), n)
                table = pair_distances(Xg, rows, cols, code).reshape(n, n)
            out = _ldof_novelty_chunk(np.ascontiguousarray(query.distances[:, :w]),
                                      np.ascontiguousarray(query.indices[:, :w]), Xg, sizes, code, table,
                                      _locations_if_ties(Xg, sizes[-1]))
            return out[inverse.reshape(-1)]
        return self._novelty_blocks(graph, query, sizes)[inverse.reshape(-1)]

    def _novelty_blocks(self, graph: Any, query: Any, sizes: np.ndarray) -> np.ndarray:
        """Novelty LDOF through dense (w+1)² blocks of member distances (``graph.distance_between``): the path
        of metrics without a numba kernel, and the reference :func:`_ldof_novelty_chunk` is tested against."""
        m = query.n_queries
        out = np.empty((sizes.shape[0], m))
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
        return out
