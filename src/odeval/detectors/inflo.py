"""INFLO: the influenced outlierness (Jin, Tung, Han and Wang 2006)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from odeval.detectors._neighborhood import (
    _elki_perm,
    _in_request_order,
    _neighbourhood_sizes,
    _row_has_ties,
    _variant_lists,
)
from odeval.detectors.base import VARIANT, Detector, MethodInfo, MethodVariant, Number, register
from odeval.detectors.blockwise import IN_EDGES, REFUSE_ELKI_VARIANTS, BlockState, Step, edges_step, halo, with_halo

__all__ = ["INFLO", "inflo_scores"]


def _position_dtype(idx: np.ndarray) -> np.ndarray:
    """An empty array of the narrowest signed integer type that holds every position of a row of ``idx`` and −1:
    int16 below 2¹⁵ columns (a quarter of an int64 (N, W) matrix: 0.2 GB at N = 10⁶, W = 100), else int32."""
    return np.empty(0, np.int16 if idx.shape[1] < 2**15 else np.int32)


@njit(cache=True, parallel=True)
def _reverse_positions(idx, width, like):  # pragma: no cover - numba
    """rev[p, j] = position of p in the neighbour row of o = idx[p, j] (searched among the first width[o]
    entries), -1 if absent, of ``like``'s integer type (:func:`_position_dtype`). Then p ∈ N_k(o) ⇔
    0 ≤ rev[p, j] < |N_k(o)|."""
    n = idx.shape[0]
    rev = np.empty((n, idx.shape[1]), dtype=like.dtype)
    for p in prange(n):
        rev[p, :] = -1
        for j in range(width[p]):
            o = idx[p, j]
            for i in range(width[o]):
                if idx[o, i] == p:
                    rev[p, j] = i
                    break
    return rev


@njit(cache=True)
def _inflo_paper_one_k(idx, rev, size, kd, m, out):  # pragma: no cover - numba
    """Published INFLO at one k; see :func:`inflo_scores`. ``out`` (N,) is filled."""
    n = idx.shape[0]
    # Σ density and count over RkNN(p) \ kNN(p): o contributes to q ∈ N_k(o) unless q's kNN holds o
    rsum = np.zeros(n)
    rcnt = np.zeros(n, dtype=np.int64)
    rzero = np.zeros(n, dtype=np.bool_)
    for o in range(n):
        for j in range(size[o]):
            q = idx[o, j]
            r = rev[o, j]
            if r >= 0 and r < size[q]:
                continue  # o ∈ kNN(q) as well: counted once, from the kNN side
            rcnt[q] += 1
            if kd[o] > 0.0:
                rsum[q] += 1.0 / kd[o]
            else:
                rzero[q] = True
    for p in range(n):
        s = size[p]
        mutual = 0
        zero = rzero[p]
        dens = 0.0
        for j in range(s):
            o = idx[p, j]
            r = rev[p, j]
            if r >= 0 and r < size[o]:
                mutual += 1
            if kd[o] > 0.0:
                dens += 1.0 / kd[o]
            else:
                zero = True
        if 1 + mutual >= m * (s + 1) or kd[p] == 0.0:
            out[p] = 1.0
            continue
        if zero:
            out[p] = np.inf
            continue
        total = (dens + rsum[p]) * kd[p]
        c = s + rcnt[p]
        out[p] = 1.0 if total == 0.0 else total / c


@njit(cache=True)
def _inflo_elki071_one_k(X, dist, idx, rev, size, wide, kd, k, m, out, reorder):  # pragma: no cover - numba
    """ELKI 0.7.0/0.7.1 ``lof.INFLO`` at one k, objects in index (file) order; see :func:`inflo_scores`.

    The reverse lists are kept as linked lists in append order and the final sum runs over ELKI's kNN list
    order then the reverse list, so that the rounding is ELKI's."""
    n = idx.shape[0]
    den = np.empty(n)
    for p in range(n):
        den[p] = 1.0 / kd[p] if kd[p] > 0.0 else np.inf
    cap = 0
    for p in range(n):
        cap += 2 * size[p]
    head = np.full(n, -1, dtype=np.int64)
    tail = np.full(n, -1, dtype=np.int64)
    nxt = np.empty(cap, dtype=np.int64)
    val = np.empty(cap, dtype=np.int64)
    rcnt = np.zeros(n, dtype=np.int64)
    used = 0
    pruned = np.zeros(n, dtype=np.bool_)
    W = idx.shape[1]
    perm = np.arange(W + 1)
    for p in range(n):
        count = rcnt[p]
        sp = size[p]
        for i in range(sp + 1):
            perm[i] = i
        if reorder and _row_has_ties(dist, p, sp):  # ELKI's list order decides the order of the reverse lists
            _elki_perm(X, idx, p, k + 1, sp, wide[p], perm)
        for jj in range(1, sp + 1):
            j = perm[jj] - 1
            o = idx[p, j]
            r = rev[p, j]
            if r >= 0 and r < size[o]:
                for a, b in ((o, p), (p, o)):  # rnns(o).add(p); rnns(p).add(o)
                    val[used] = b
                    nxt[used] = -1
                    if tail[a] < 0:
                        head[a] = used
                    else:
                        nxt[tail[a]] = used
                    tail[a] = used
                    used += 1
                    rcnt[a] += 1
                count += 1
        if count >= (size[p] + 1) * m:
            pruned[p] = True
    for p in range(n):
        if pruned[p]:
            out[p] = 1.0
            continue
        sp = size[p]
        for i in range(sp + 1):
            perm[i] = i
        if reorder and _row_has_ties(dist, p, sp):
            _elki_perm(X, idx, p, k + 1, sp, wide[p], perm)
        s = 0.0
        for j in range(1, sp + 1):
            s += den[idx[p, perm[j] - 1]]
        e = head[p]
        while e >= 0:
            s += den[val[e]]
            e = nxt[e]
        c = sp + rcnt[p]
        dp = den[p]
        if dp > 0.0:
            out[p] = s / (c * dp) if dp < np.inf else 1.0
        else:
            out[p] = 1.0 if s == 0.0 else np.inf


@njit(cache=True)
def _in_edges(idx, width, like):  # pragma: no cover - numba
    """The edges o → q of the widest lists (j < width[o]) grouped by target q, each group in ascending o: (ptr,
    src, pos), the in-edges of q at ptr[q]:ptr[q + 1], source o = src[e], q's position in o's row pos[e] (of
    ``like``'s integer type, :func:`_position_dtype`)."""
    n = idx.shape[0]
    ptr = np.zeros(n + 1, dtype=np.int64)
    for o in range(n):
        for j in range(width[o]):
            ptr[idx[o, j] + 1] += 1
    for q in range(n):
        ptr[q + 1] += ptr[q]
    fill = ptr[:n].copy()
    src = np.empty(ptr[n], dtype=np.int32)
    pos = np.empty(ptr[n], dtype=like.dtype)
    for o in range(n):
        for j in range(width[o]):
            q = idx[o, j]
            e = fill[q]
            src[e] = o
            pos[e] = j
            fill[q] = e + 1
    return ptr, src, pos


@njit(cache=True, inline="always")
def _first_k_above(S, x, ks, v, consecutive):  # pragma: no cover - numba
    """The first position t with |N_ks[t](x)| > v (ks ascending), len(ks) if none. With ``consecutive`` ks
    (ks[t] = ks[0] + t) from the guess k = v + 1 (|N_k| ≥ k > v) downwards — one step without ties; else (or if
    the guess fails) a binary search."""
    T = ks.shape[0]
    if consecutive:
        t = v + 1 - ks[0]
        if t <= 0:
            if S[x, ks[0] - 1] > v:
                return 0
        else:
            if t >= T:
                t = T - 1
            if S[x, ks[t] - 1] > v:
                while t > 0 and S[x, ks[t - 1] - 1] > v:
                    t -= 1
                return t
    lo = 0
    hi = T
    while lo < hi:
        mid = (lo + hi) // 2
        if S[x, ks[mid] - 1] > v:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, parallel=True)
def _inflo_densities(dist, ks):  # pragma: no cover - numba
    """(N, len(ks)): den_k(o) = 1 / kd_k(o) (kd_k(o) = dist[o, k − 1]) where kd_k(o) > 0, −1 where it is 0."""
    n = dist.shape[0]
    T = ks.shape[0]
    den = np.empty((n, T))
    for o in prange(n):
        for t in range(T):
            kd = dist[o, ks[t] - 1]
            den[o, t] = 1.0 / kd if kd > 0.0 else -1.0
    return den


@njit(cache=True, parallel=True)
def _inflo_paper_all_k(idx, dist, S, rev, ks, m, ptr, src, pos, den):  # pragma: no cover - numba
    """:func:`_inflo_paper_one_k` for every k in ``ks`` (ascending) at once, bit for bit (issue 28), parallel
    over objects. ``S``: the graph's (N, k_max) neighbourhood sizes; kd_k(o) = dist[o, k − 1] (the graph's
    k-distance); ``ptr``/``src``/``pos``: :func:`_in_edges`.

    An edge o → q is in the lists of the k positions t ≥ t_in (its position j < |N_k(o)|) and mutual from t_mut on
    (o at position rev < |N_k(q)| of q's row), so its terms for all k are one contiguous run of k positions.
    Reverse sums of p: its in-edges in ascending o — the order in which the one-k kernel adds them — over
    [t_in, t_mut); then its own list's densities (1 / kd, as there) and mutual count, in list order. Per object
    O(k_max) memory; one (N, len(ks)) input, ``den`` (:func:`_inflo_densities`)."""
    n = idx.shape[0]
    T = ks.shape[0]
    out = np.empty((T, n))
    consecutive = ks[T - 1] - ks[0] == T - 1
    for p in prange(n):
        rsum = np.zeros(T)
        rcnt = np.zeros(T, dtype=np.int64)
        rzero = np.zeros(T, dtype=np.bool_)
        dens = np.zeros(T)
        mutual = np.zeros(T, dtype=np.int64)
        zero = np.zeros(T, dtype=np.bool_)
        for e in range(ptr[p], ptr[p + 1]):
            o = src[e]
            j = pos[e]
            a = _first_k_above(S, o, ks, j, consecutive)
            r = rev[o, j]
            b = T if r < 0 else _first_k_above(S, p, ks, r, consecutive)
            dn = den[o]
            for t in range(a, b):
                rcnt[t] += 1
                if dn[t] >= 0.0:
                    rsum[t] += dn[t]
                else:
                    rzero[t] = True
        a = 0
        for j in range(S[p, ks[T - 1] - 1]):
            o = idx[p, j]
            while S[p, ks[a] - 1] <= j:
                a += 1
            r = rev[p, j]
            b = T if r < 0 else _first_k_above(S, o, ks, r, consecutive)
            for t in range(max(a, b), T):
                mutual[t] += 1
            dn = den[o]
            for t in range(a, T):
                if dn[t] >= 0.0:
                    dens[t] += dn[t]
                else:
                    zero[t] = True
        for t in range(T):
            s = S[p, ks[t] - 1]
            kdp = dist[p, ks[t] - 1]
            if 1 + mutual[t] >= m * (s + 1) or kdp == 0.0:
                out[t, p] = 1.0
                continue
            if zero[t] or rzero[t]:
                out[t, p] = np.inf
                continue
            total = (dens[t] + rsum[t]) * kdp
            c = s + rcnt[t]
            out[t, p] = 1.0 if total == 0.0 else total / c
    return out


@njit(cache=True, parallel=True)
def _inflo_all_k(X, dist, idx, rev, sizes, kds, ks, m, elki, reorder):  # pragma: no cover - numba
    nk, n = sizes.shape
    out = np.empty((nk, n))
    for t in prange(nk):
        if elki:
            _inflo_elki071_one_k(X, dist, idx, rev, sizes[t], sizes[nk - 1], kds[t], ks[t], m, out[t], reorder)
        else:
            _inflo_paper_one_k(idx, rev, sizes[t], kds[t], m, out[t])
    return out


def inflo_scores(graph: Any, ks: int | Sequence[int], m: float = 1.0, variant: str = MethodVariant.PAPER) -> np.ndarray:
    """INFLO scores of all objects for every k in ``ks``, from one kNN graph.

    Parameters
    ----------
    graph : KNNGraph
        Exact kNN graph (:func:`odeval.neighbors.knn_graph`) with ``k_max >= max(ks)``.
    ks : int or sequence of int
        Neighbourhood sizes, each ≥ 1.
    m : float, default 1.0
        Pruning threshold of the two-way search (> 0); see Notes.
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}
        ``"paper"`` (default): the published INFLO. ``"elki-0.7.1"``: ELKI 0.7.0/0.7.1's ``lof.INFLO`` (used by
        Campos et al. 2016), which is a different method (see Notes). ``"elki-0.7.1-cks"``: the same as run by
        ELKI's batch tool ``ComputeKNNOutlierScores``, whose density reads the (k+1)-distance (semantics doc
        §0.3), on the tool's sublists (ties on the stored distances, ELKI's heap order; docs/detectors.md).

    Returns
    -------
    ndarray of shape (len(ks), n_objects)
        Higher = more outlying; 1.0 is the inlier baseline.

    Notes
    -----
    Jin et al. (2006), Definitions 4–6, with kNN(p) = N_k(p) (ties at the k-distance and duplicates
    included), RkNN(p) = {q : p ∈ N_k(q)} and den(o) = 1 / kdist_k(o)::

        IS_k(p)  = kNN(p) ∪ RkNN(p)            (a set; p itself is never in it)
        INFLO(p) = (Σ_{o∈IS_k(p)} den(o) / |IS_k(p)|) / den(p)

    Pruning (the paper's two-way search, Section 3.2, in the form of ELKI ≥ 0.7.5): if
    1 + |kNN(p) ∩ RkNN(p)| ≥ m · (|kNN(p)| + 1) — with m = 1: every neighbour of p has p among its own
    neighbours — p lies inside a cluster and INFLO(p) = 1. Zero k-distances (duplicates): INFLO(p) = 1 if
    kdist(p) = 0 (as ELKI 0.7.5), else ∞ if some o ∈ IS_k(p) has kdist(o) = 0.

    ELKI 0.7.0/0.7.1 (``variant="elki-0.7.1"``) implements something else: only *mutual* neighbours are
    found, and they are appended twice to a reverse list, so the "influence space" is the multiset
    kNN(p) ⊎ 2×(kNN(p) ∩ RkNN(p)): mutual neighbours weigh 3, reverse-only neighbours never enter. Its
    pruning counts mutual pairs found by objects processed earlier plus p's own (so it depends on the
    object order; objects are processed in index order here, as ELKI processes the file order) and
    compares with m·(|N_k(p)| + 1). INFLO(p) = Σ den / (|S|·den(p)); den(p) = ∞ ⇒ 1; den(p) = 0 ⇒ 1 if
    Σ = 0 else ∞. The sums run in ELKI's order (its kNN list order among tied neighbours, then the reverse
    list in append order), so the values are ELKI's to the last bit (Euclidean graphs only).

    References
    ----------
    W. Jin, A. K. H. Tung, J. Han, W. Wang. Ranking outliers using symmetric neighborhood relationship.
    PAKDD 2006, LNCS 3918, pp. 577–593.
    """
    return INFLO(m=m, variant=variant).raw_scores_all_k(graph, ks)


@njit(cache=True, parallel=True)
def _inflo_paper_block(lidx, sizes, kd, e_src, e_kmin, e_ptr, ks, m):  # pragma: no cover - numba
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


def _inflo_wanted(state: BlockState) -> dict[str, Any]:
    """The objects whose k-distances INFLO needs: the halo and the reverse neighbours from other blocks."""
    b = state.block
    src = state.data["in"][1]
    outside = src[~b.holds(src)]
    wanted = np.union1d(state.halo.extra, outside)
    kd = np.ascontiguousarray(b.distances[:, :state.k_max]) if "kd" not in state.data else state.data["kd"]
    return {"wanted": wanted, "kd": kd}


def _inflo_block(state: BlockState) -> dict[str, Any]:
    """INFLO of a block's objects (:mod:`odeval.detectors.blockwise`): :func:`_inflo_paper_block` with the
    in-edges and the k-distances received."""
    b, d = state.block, state.data
    B = b.n_objects
    wanted = d["wanted"]

    def to_local(ids: np.ndarray) -> np.ndarray:
        inside = b.holds(ids)
        return np.where(inside, b.local(ids), B + np.searchsorted(wanted, ids))

    lidx = np.where(b.indices >= 0, to_local(b.indices), -1)
    dst, src, km = d["in"]
    order = np.lexsort((src, dst))
    dst, src, km = dst[order], src[order], km[order]
    ptr = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(np.bincount(b.local(dst), minlength=B), out=ptr[1:])
    kd = with_halo(np.ascontiguousarray(d["kd"][:, state.ks - 1].T), d["kd_halo"][:, state.ks - 1])
    sizes = _neighbourhood_sizes(b, state.ks)
    return {"raw": _inflo_paper_block(lidx, sizes, kd, to_local(src), km, ptr, state.ks, float(state.det.m))}


@register
class INFLO(Detector):
    """Influenced outlierness (Jin et al. 2006); see :func:`inflo_scores`."""

    info = MethodInfo.ratio("INFLO", "W. Jin, A. K. H. Tung, J. Han, W. Wang. Ranking outliers using symmetric "
                            "neighborhood relationship. PAKDD 2006.")

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        "m": Number(1.0, low=0, low_open=True),
        "variant": VARIANT,
    }
    block_refusals = REFUSE_ELKI_VARIANTS

    def _block_steps(self) -> list[Step]:
        # the influence space is kNN ∪ RkNN: the in-edges first, then the k-distances of the halo ∪ RkNN
        return [Step(edges_step, (IN_EDGES,)), Step(_inflo_wanted, (halo("kd", "wanted"),)), Step(_inflo_block)]

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        v = _variant_lists(graph, ks, self.info, self.variant)
        last = v.last_sizes  # the paper path never makes the (len(ks), N) sizes matrix (peak memory at 10⁶)
        narrow = _position_dtype(v.idx)
        rev = _reverse_positions(v.idx, last, narrow)
        if not v.elki:  # the paper variant: all k in one pass, parallel over objects (issue 28)
            S = np.ascontiguousarray(v.graph.neighborhood_sizes(), dtype=np.int64)
            ptr, src, pos = _in_edges(v.idx, last, narrow)
            den = _inflo_densities(v.dist, v.ks)
            out = _inflo_paper_all_k(v.idx, v.dist, S, rev, v.ks, self.m, ptr, src, pos, den)
            return _in_request_order(out, v.inverse)
        if v.cks:  # the k-distances ELKI's batch tool reports: its (k+1)-distances
            kds = np.ascontiguousarray(v.kdist[:, v.ks - 1].T)
        else:
            kds = np.stack([np.asarray(v.graph.kdist(int(k)), dtype=np.float64) for k in v.ks])
        out = _inflo_all_k(v.X, v.dist, v.idx, rev, v.sizes, kds, v.ks, self.m, v.elki, not v.cks)
        return _in_request_order(out, v.inverse)
