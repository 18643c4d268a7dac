"""FastABOD: angle-based outlier detection on the k nearest neighbours (Kriegel, Schubert and Zimek 2008)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from odeval.detectors._neighborhood import _is_euclidean, _neighbourhood_sizes, _prepare_ks
from odeval.detectors.base import Detector, MethodInfo, Options, check_ks, register
from odeval.detectors.blockwise import BlockState, Exchange, Step
from odeval.neighbors._elki_order import heap_drain, heap_offer

__all__ = ["FastABOD", "fastabod_scores"]

_KERNELS = ("linear", "poly2")

# Raw ABOF when fewer than two neighbours at positive distance remain (no angle is defined): every other
# neighbour coincides with the point, which is as "inside a cluster" as an object can be.
_NO_PAIR_VALUE = np.inf


@njit(cache=True, inline="always")
def _mv_put(wsum, mean, m2, i, val, weight):  # pragma: no cover - numba
    """Weighted incremental mean and variance (West 1979), in the exact form of ELKI 0.7.1's
    ``MeanVariance.put(val, weight)``, on accumulator i of the arrays (Σw, mean, m2); the naive variance is
    m2 / Σw. Arrays of accumulators rather than one per k, so that the chains of several k run side by side."""
    n = wsum[i]
    nwsum = weight + n
    delta = val - mean[i]
    rval = delta * weight / nwsum
    mean[i] += rval
    m2[i] += n * delta * rval
    wsum[i] = nwsum


@njit(cache=True, parallel=True)
def _abof_linear(X, idx, sizes, no_pair):  # pragma: no cover - numba
    """ABOF over the graph neighbourhoods, angles in input space; incremental over k.

    Neighbour j enters with the pairs (i, j), i < j; neighbours at distance 0 (duplicates of p) enter no
    pair. ``sizes``: (n_k, N), ascending along axis 0.
    """
    nk, n = sizes.shape
    d = X.shape[1]
    out = np.empty((nk, n))
    for p in prange(n):
        width = sizes[nk - 1, p]
        diff = np.empty((width, d))
        sq = np.empty(width)
        wsum = np.zeros(1)
        mean = np.zeros(1)
        m2 = np.zeros(1)
        j = 0
        for t in range(nk):
            target = sizes[t, p]
            while j < target:
                o = idx[p, j]
                s = 0.0
                for u in range(d):
                    v = X[o, u] - X[p, u]
                    diff[j, u] = v
                    s += v * v
                sq[j] = s
                if s > 0.0:
                    for i in range(j):
                        if sq[i] > 0.0:
                            dot = 0.0
                            for u in range(d):
                                dot += diff[i, u] * diff[j, u]
                            div = 1.0 / (sq[i] * s)
                            _mv_put(wsum, mean, m2, 0, dot * div, np.sqrt(div))
                j += 1
            if wsum[0] > 0.0:
                out[t, p] = m2[0] / wsum[0]
            else:
                out[t, p] = no_pair
    return out


@njit(cache=True, inline="always")
def _mv_step(val, weight, n, mean, m2):  # pragma: no cover - numba
    """:func:`_mv_put` on scalars (Σw = n, mean, m2): the same expressions, returns the new (Σw, mean, m2)."""
    nwsum = weight + n
    delta = val - mean
    rval = delta * weight / nwsum
    mean += rval
    m2 += n * delta * rval
    return nwsum, mean, m2


@njit(cache=True, error_model="numpy")
def _abof_pairs(X, idx, sizes, p, diffT, sq, dot, tv, tw, vals, wts, cks):  # pragma: no cover - numba
    """The angle terms of object p in :func:`_abof_linear`'s order: pair (i, j), i < j, j ascending, both at
    positive distance — value dot·div and weight √div, div = 1 / (|pi|²·|pj|²); ``cks[t]`` = the number of
    pairs among the first ``sizes[t, p]`` neighbours. Returns the number of pairs.

    The terms of one j against all earlier i are computed side by side (``diffT`` attribute-major, four
    attributes per pass; each dot product still adds its attributes in order from 0.0, so every value is
    :func:`_abof_linear`'s), then the pairs with |pi| = 0 are dropped. (A product |pi|²·|pj|² that underflows
    to 0 raises, as there.)"""
    nk = sizes.shape[0]
    d = X.shape[1]
    npairs = 0
    j = 0
    for t in range(nk):
        target = sizes[t, p]
        while j < target:
            o = idx[p, j]
            s = 0.0
            for u in range(d):
                v = X[o, u] - X[p, u]
                diffT[u, j] = v
                s += v * v
            sq[j] = s
            if s > 0.0:
                for i in range(j):
                    dot[i] = 0.0
                u = 0
                while u + 4 <= d:  # four attributes per pass over dot, added one after the other (issue 28)
                    c0 = diffT[u, j]
                    c1 = diffT[u + 1, j]
                    c2 = diffT[u + 2, j]
                    c3 = diffT[u + 3, j]
                    r0 = diffT[u]
                    r1 = diffT[u + 1]
                    r2 = diffT[u + 2]
                    r3 = diffT[u + 3]
                    for i in range(j):
                        dot[i] = (((dot[i] + r0[i] * c0) + r1[i] * c1) + r2[i] * c2) + r3[i] * c3
                    u += 4
                while u < d:
                    c = diffT[u, j]
                    row = diffT[u]
                    for i in range(j):
                        dot[i] += row[i] * c
                    u += 1
                for i in range(j):
                    div = 1.0 / (sq[i] * s)
                    tv[i] = dot[i] * div
                    tw[i] = np.sqrt(div)
                for i in range(j):
                    if sq[i] > 0.0:
                        if sq[i] * s == 0.0:
                            raise ZeroDivisionError("float division by zero")
                        vals[npairs] = tv[i]
                        wts[npairs] = tw[i]
                        npairs += 1
            j += 1
        cks[t] = npairs
    return npairs


@njit(cache=True, inline="always")
def _abof_emit(out, p, cks, t, done, n, m2, no_pair):  # pragma: no cover - numba
    """Write the ABOF of every k whose pair count is ``done`` (from position t on); returns the next t."""
    nk = cks.shape[0]
    while t < nk and cks[t] == done:
        out[t, p] = m2 / n if n > 0.0 else no_pair
        t += 1
    return t


@njit(cache=True, parallel=True)
def _abof_linear4(X, idx, sizes, no_pair):  # pragma: no cover - numba
    """:func:`_abof_linear`, bit for bit, four objects at a time: each object's angle terms first
    (:func:`_abof_pairs`), then the four weighted mean-variance chains side by side — each a chain of
    divisions, so interleaved they overlap instead of waiting one for another; every chain is its object's own
    sequence of updates (issue 28)."""
    nk, n = sizes.shape
    d = X.shape[1]
    ngroups = (n + 3) // 4
    out = np.empty((nk, n))
    for g in prange(ngroups):
        p0 = 4 * g
        lanes = min(4, n - p0)
        width = 0
        for a in range(lanes):
            width = max(width, sizes[nk - 1, p0 + a])
        cap = max(1, width * (width - 1) // 2)
        diffT = np.empty((d, max(width, 1)))
        sq = np.empty(max(width, 1))
        dot = np.empty(max(width, 1))
        tv = np.empty(max(width, 1))
        tw = np.empty(max(width, 1))
        vals = np.empty((4, cap))
        wts = np.empty((4, cap))
        cks = np.zeros((4, nk), np.int64)
        npr = np.zeros(4, np.int64)
        for a in range(lanes):
            npr[a] = _abof_pairs(X, idx, sizes, p0 + a, diffT, sq, dot, tv, tw, vals[a], wts[a], cks[a])
        if lanes < 4:  # a short last group: one chain at a time
            for a in range(lanes):
                p = p0 + a
                ck = cks[a]
                wa, ma, sa = 0.0, 0.0, 0.0
                t = _abof_emit(out, p, ck, 0, 0, wa, sa, no_pair)
                for s in range(npr[a]):
                    wa, ma, sa = _mv_step(vals[a, s], wts[a, s], wa, ma, sa)
                    t = _abof_emit(out, p, ck, t, s + 1, wa, sa, no_pair)
            continue
        v0, v1, v2, v3 = vals[0], vals[1], vals[2], vals[3]
        q0, q1, q2, q3 = wts[0], wts[1], wts[2], wts[3]
        k0, k1, k2, k3 = cks[0], cks[1], cks[2], cks[3]
        w0, a0, s0 = 0.0, 0.0, 0.0
        w1, a1, s1 = 0.0, 0.0, 0.0
        w2, a2, s2 = 0.0, 0.0, 0.0
        w3, a3, s3 = 0.0, 0.0, 0.0
        t0 = _abof_emit(out, p0, k0, 0, 0, w0, s0, no_pair)
        t1 = _abof_emit(out, p0 + 1, k1, 0, 0, w1, s1, no_pair)
        t2 = _abof_emit(out, p0 + 2, k2, 0, 0, w2, s2, no_pair)
        t3 = _abof_emit(out, p0 + 3, k3, 0, 0, w3, s3, no_pair)
        smin = min(min(npr[0], npr[1]), min(npr[2], npr[3]))
        for s in range(smin):
            w0, a0, s0 = _mv_step(v0[s], q0[s], w0, a0, s0)
            w1, a1, s1 = _mv_step(v1[s], q1[s], w1, a1, s1)
            w2, a2, s2 = _mv_step(v2[s], q2[s], w2, a2, s2)
            w3, a3, s3 = _mv_step(v3[s], q3[s], w3, a3, s3)
            if t0 < nk and k0[t0] == s + 1:
                t0 = _abof_emit(out, p0, k0, t0, s + 1, w0, s0, no_pair)
            if t1 < nk and k1[t1] == s + 1:
                t1 = _abof_emit(out, p0 + 1, k1, t1, s + 1, w1, s1, no_pair)
            if t2 < nk and k2[t2] == s + 1:
                t2 = _abof_emit(out, p0 + 2, k2, t2, s + 1, w2, s2, no_pair)
            if t3 < nk and k3[t3] == s + 1:
                t3 = _abof_emit(out, p0 + 3, k3, t3, s + 1, w3, s3, no_pair)
        for s in range(smin, npr[0]):
            w0, a0, s0 = _mv_step(v0[s], q0[s], w0, a0, s0)
            t0 = _abof_emit(out, p0, k0, t0, s + 1, w0, s0, no_pair)
        for s in range(smin, npr[1]):
            w1, a1, s1 = _mv_step(v1[s], q1[s], w1, a1, s1)
            t1 = _abof_emit(out, p0 + 1, k1, t1, s + 1, w1, s1, no_pair)
        for s in range(smin, npr[2]):
            w2, a2, s2 = _mv_step(v2[s], q2[s], w2, a2, s2)
            t2 = _abof_emit(out, p0 + 2, k2, t2, s + 1, w2, s2, no_pair)
        for s in range(smin, npr[3]):
            w3, a3, s3 = _mv_step(v3[s], q3[s], w3, a3, s3)
            t3 = _abof_emit(out, p0 + 3, k3, t3, s + 1, w3, s3, no_pair)
    return out


@njit(cache=True)
def _poly2(X, a, b):  # pragma: no cover - numba
    s = 0.0
    for u in range(X.shape[1]):
        s += X[a, u] * X[b, u]
    return s * s


@njit(cache=True, parallel=True)
def _abof_poly2(X, ks, no_pair):  # pragma: no cover - numba
    """ELKI 0.7.1's FastABOD with the kernel K(x, y) = (x·y)², reproduced to the last bit, for all k at once.

    Neighbours: ELKI's kNN heap (capacity k) over the kernel-space squared distances K(A,A) + K(B,B) − 2K(A,B)
    of the objects at positive kernel distance (index order, ties included); pairs (B, C) in that list's
    order; ELKI 0.7.1's weighted MeanVariance. ``ks`` ascending.

    Per object A: one scan with the heap of the largest capacity gives the widest list and the objects that
    change a heap at all (``eff``: the first K candidates and those below the running K-th key; every other
    object is a no-op for every smaller capacity too, since its K-th key bounds theirs), so a k whose list
    has tied keys re-runs its heap over ``eff`` only. The angle terms of all ordered pairs of the widest list
    are computed once. Every k whose list is a prefix of the widest list (in the same order) is accumulated
    in one row-major pass over the pairs — the row-major order restricted to a prefix is the prefix's own, so
    each k's chain of updates is ELKI's, and the chains of different k run side by side; the others (their
    heap ordered ties differently) run in the same pass, each reading the pairs through its own list order
    (the same row-major argument holds for any order), so no chain waits for another's divisions."""
    n = X.shape[0]
    nk = ks.shape[0]
    diag = np.empty(n)
    for i in range(n):
        diag[i] = _poly2(X, i, i)
    out = np.empty((nk, n))
    kmax = ks[nk - 1]
    for a in prange(n):
        simaa = diag[a]
        keys = np.empty(n)
        cnt = 0
        for b in range(n):
            keys[b] = np.nan
            if b == a:
                continue
            sab = _poly2(X, a, b)
            v = simaa + diag[b] - sab - sab
            if v > 0.0:
                keys[b] = v
                cnt += 1
        if cnt < 2:
            for t in range(nk):
                out[t, a] = no_pair
            continue
        Kw = min(kmax, cnt)
        hk = np.empty(Kw)
        hv = np.empty(Kw, dtype=np.int64)
        ties = np.empty(cnt, dtype=np.int64)
        eff = np.empty(cnt, dtype=np.int64)
        ne = 0
        size = 0
        nties = 0
        kdist = np.inf
        for b in range(n):
            d = keys[b]
            if d != d:
                continue
            if size < Kw or d <= kdist:
                eff[ne] = b
                ne += 1
                size, nties, kdist = heap_offer(hk, hv, ties, Kw, size, nties, kdist, d, b)
        nb = np.empty(cnt, dtype=np.int64)
        width = heap_drain(hk, hv, ties, size, nties, nb)  # ascending keys, ELKI's order among ties
        posmap = np.empty(n, dtype=np.int64)
        for j in range(width):
            posmap[nb[j]] = j
        kw = np.empty(width)
        for j in range(width):
            kw[j] = keys[nb[j]]
        # list size and order per k; shared = the list is the widest list's prefix
        sizes = np.empty(nk, dtype=np.int64)
        shared = np.ones(nk, dtype=np.bool_)
        orders = np.empty((nk, width), dtype=np.int64)  # row q: the list order of the q-th separate k
        lst = np.empty(cnt, dtype=np.int64)
        nsep = 0
        sep_t = np.empty(nk, dtype=np.int64)
        for t in range(nk):
            kk = min(ks[t], cnt)
            thr = kw[kk - 1]
            m = kk
            while m < width and kw[m] <= thr:
                m += 1
            sizes[t] = m
            tied = False
            for i in range(m - 1):
                if kw[i] == kw[i + 1]:
                    tied = True
                    break
            if tied:
                hk2 = np.empty(kk)
                hv2 = np.empty(kk, dtype=np.int64)
                s2 = 0
                nt2 = 0
                kd2 = np.inf
                for e in range(ne):
                    b = eff[e]
                    s2, nt2, kd2 = heap_offer(hk2, hv2, ties, kk, s2, nt2, kd2, keys[b], b)
                total = heap_drain(hk2, hv2, ties, s2, nt2, lst)
                if total == m:
                    for i in range(m):
                        if posmap[lst[i]] != i:
                            shared[t] = False
                            break
                    if not shared[t]:
                        for i in range(m):
                            orders[nsep, i] = posmap[lst[i]]
                        sep_t[nsep] = t
                        nsep += 1
        # the angle terms of every ordered pair (i first) of the widest list, and the pair weights
        V = np.empty((width, width))
        W = np.empty((width, width))
        sab = np.empty(width)
        for i in range(width):
            sab[i] = _poly2(X, a, nb[i])
        for i in range(width):
            for j in range(i + 1, width):
                kbc = _poly2(X, nb[i], nb[j])
                div = 1.0 / (kw[i] * kw[j])
                V[i, j] = (kbc - sab[i] - sab[j] + simaa) * div
                V[j, i] = (kbc - sab[j] - sab[i] + simaa) * div
                w = np.sqrt(div)
                W[i, j] = w
                W[j, i] = w
        # one row-major pass over the pairs for every k, the chains side by side: a shared k reads the pairs of
        # the widest list's prefix, a separate k (its heap ordered ties differently) the pairs through its own
        # order. For each k the pairs (i, j), j < m_k, come in row-major order — its own chain of updates, in
        # ELKI's order — and independent chains overlap (the divisions of one chain no longer wait for each
        # other's); separate k were one pass each before, bit for bit the same values.
        nsh = 0
        sh_m = np.empty(nk, dtype=np.int64)
        sh_t = np.empty(nk, dtype=np.int64)
        for t in range(nk):
            if shared[t]:
                sh_m[nsh] = sizes[t]
                sh_t[nsh] = t
                nsh += 1
        st_n = np.zeros(nsh)
        st_mean = np.zeros(nsh)
        st_m2 = np.zeros(nsh)
        mtop = sh_m[nsh - 1] if nsh > 0 else 0
        sep_m = np.empty(nsep, dtype=np.int64)
        for q in range(nsep):
            sep_m[q] = sizes[sep_t[q]]
        desc = np.argsort(-sep_m)  # separate k by decreasing list size (the inner loop stops at the first too short)
        sq_n = np.zeros(nsep)
        sq_mean = np.zeros(nsep)
        sq_m2 = np.zeros(nsep)
        if nsep > 0 and sep_m[desc[0]] > mtop:
            mtop = sep_m[desc[0]]
        for i in range(mtop):
            for j in range(i + 1, mtop):
                v = V[i, j]
                w = W[i, j]
                for s in range(nsh - 1, -1, -1):
                    if sh_m[s] <= j:
                        break
                    _mv_put(st_n, st_mean, st_m2, s, v, w)
                for r in range(nsep):
                    q = desc[r]
                    if sep_m[q] <= j:
                        break
                    bi = orders[q, i]
                    ci = orders[q, j]
                    _mv_put(sq_n, sq_mean, sq_m2, q, V[bi, ci], W[bi, ci])
        for s in range(nsh):
            out[sh_t[s], a] = st_m2[s] / st_n[s] if st_n[s] > 0.0 else no_pair
        for q in range(nsep):
            out[sep_t[q], a] = sq_m2[q] / sq_n[q] if sq_n[q] > 0.0 else no_pair
    return out


def fastabod_scores(graph: Any, ks: int | Sequence[int], kernel: str = "linear") -> np.ndarray:
    """Raw FastABOD scores (the angle-based outlier factor, **low = outlier**) for every k in ``ks``.

    Parameters
    ----------
    graph : KNNGraph
        Exact Euclidean kNN graph (:func:`odeval.neighbors.knn_graph`) with ``k_max >= max(ks)``.
        With ``kernel="poly2"`` only ``graph.X`` is used (the neighbours are searched in kernel space).
    ks : int or sequence of int
        Neighbourhood sizes, each ≥ 3.
    kernel : {"linear", "poly2"}
        ``"linear"`` (default): the textbook FastABOD — Euclidean k nearest neighbours, angles in input
        space. ``"poly2"``: ELKI 0.7.0/0.7.1's default, K(x, y) = (x·y)² for both the neighbour search and
        the angles (used by Campos et al. 2016).

    Returns
    -------
    ndarray of shape (len(ks), n_objects)
        ABOF(p) ≥ 0, low = outlier (``FastABOD.score_all_k`` negates it). ``+inf`` where fewer than two
        neighbours at positive distance remain, so that no angle is defined (see Notes).

    Notes
    -----
    Kriegel et al. (2008), Definition 3 (ABOF) restricted to N = N_k(A) (FastABOD, Section 3.3)::

        ABOF(A) = VAR_{B,C∈N, B≠C} ( ⟨B−A, C−A⟩ / (‖B−A‖² ‖C−A‖²) ),
                  weighted by 1 / (‖B−A‖ ‖C−A‖),

    over unordered pairs, weighted naive variance Σ w (v − v̄_w)² / Σ w (as in the paper and ELKI),
    accumulated with West's weighted update. N_k(A) contains the objects tied at the k-distance. Neighbours
    at distance 0 (exact duplicates of A) form no angle and are skipped — they still occupy neighbour slots
    (the project's k convention; ELKI 0.7.5's linear-kernel path does the same). With one pair left the
    variance is 0. With no pair (fewer than two neighbours at positive distance, i.e. at least k − 1
    duplicates of A) the paper's ABOF is undefined; we return +inf (maximally inlying), never NaN, where
    ELKI returns NaN. Degenerate case: when at some k *no* object has a pair (all objects coincide with their
    neighbours, e.g. all-duplicate data), all objects are equally outlying and every ABOF is 0.0 — one finite
    tie rather than +inf for all (both kernels).

    ELKI 0.7.1 (``kernel="poly2"``) uses K(x, y) = (x·y)²: the squared distance in feature space is
    K(A,A) + K(B,B) − 2K(A,B), objects at kernel distance 0 (duplicates, and also −A) are *excluded from the
    search*, so the k neighbours are the k nearest at positive kernel distance (ties included), and the
    angle term is (K(B,C) − K(A,B) − K(A,C) + K(A,A)) / (sqd(A,B)·sqd(A,C)). This variant is not translation
    invariant. It follows ELKI's arithmetic and order (its kNN heap order among equal kernel distances, pairs
    in list order, ELKI 0.7.1's ``MeanVariance``), so the values are ELKI's to the last bit.

    References
    ----------
    H.-P. Kriegel, M. Schubert, A. Zimek. Angle-based outlier detection in high-dimensional data.
    KDD 2008, pp. 444–452.
    """
    return FastABOD(kernel=kernel).raw_scores_all_k(graph, ks)


def _degenerate_rows_to_zero(raw: np.ndarray) -> np.ndarray:
    """The degenerate case: at a k where *no* object has an angle pair (e.g. all objects are duplicates), all
    objects are equally outlying; their ABOF is 0.0 (finite, one tie) instead of +inf for every object."""
    undefined = (raw == _NO_PAIR_VALUE).all(axis=1)
    if undefined.any():
        raw = raw.copy()
        raw[undefined] = 0.0
    return raw


def _abod_block(state: BlockState) -> dict[str, Any]:
    """The linear-kernel ABOF of a block's objects and, per k, whether none of them has an angle pair
    (:mod:`odeval.detectors.blockwise`; folded over all blocks by :func:`_fold_and`)."""
    b = state.block
    if str(b.metric) != "euclidean":
        raise ValueError(f"FastABOD: the linear kernel needs a Euclidean kNN graph, got metric {b.metric!r}")
    B = b.n_objects
    # row p of the kernel is object p of its X: put the block's objects first, shift the neighbour numbers
    X = np.ascontiguousarray(np.vstack([b.X[b.object_ids], b.X]))
    idx = np.where(b.indices >= 0, b.indices + B, -1)
    raw = _abof_linear(X, idx, _neighbourhood_sizes(b, state.ks), _NO_PAIR_VALUE)
    return {"abof": raw, "nopair": (raw == _NO_PAIR_VALUE).all(axis=1)}


def _fold_and(acc: Any, part: np.ndarray) -> np.ndarray:
    return part.copy() if acc is None else acc & part


def _abod_block_final(state: BlockState) -> dict[str, Any]:
    raw = state.data["abof"]
    undefined = state.data["nopair_all"]  # as _degenerate_rows_to_zero, over all objects
    if undefined.any():
        raw = raw.copy()
        raw[undefined] = 0.0
    return {"raw": raw}


@register
class FastABOD(Detector):
    """Fast angle-based outlier detection (Kriegel et al. 2008); see :func:`fastabod_scores`."""

    # scoring_version 2: the degenerate case (no angle pair anywhere, e.g. all-duplicate data) is one finite tie
    info = MethodInfo(name="FastABOD", min_k=3, inverted=True, inlier_value=None, score_range=(0.0, np.inf),
                      reference="H.-P. Kriegel, M. Schubert, A. Zimek. Angle-based outlier detection in "
                      "high-dimensional data. KDD 2008.", scaling="log_inversion", scoring_version=2)

    _parameter_constraints: ClassVar[dict[str, Any]] = {"kernel": Options(_KERNELS)}
    block_refusals: ClassVar[dict[str, dict[str, str]]] = {
        "kernel": {"poly2": "it searches the neighbours in kernel space over all objects"}}

    def _block_steps(self) -> list[Step]:
        # the degenerate case "no object has an angle pair" is global: a scan of one bool per k and block
        return [Step(_abod_block, (Exchange("scan", "nopair", "nopair_all", fold=_fold_and, in_object_order=False),)),
                Step(_abod_block_final)]

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        return _degenerate_rows_to_zero(self._raw(graph, ks))

    def _raw(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        X = np.ascontiguousarray(graph.X, dtype=np.float64)
        if self.kernel == "poly2":
            arr = check_ks(ks, int(graph.n_objects), self.info)
            uniq, inverse = np.unique(arr, return_inverse=True)
            return _abof_poly2(X, uniq, _NO_PAIR_VALUE)[inverse.reshape(-1)]
        if not _is_euclidean(graph):
            raise ValueError(f"FastABOD: the linear kernel needs a Euclidean kNN graph (angles are Euclidean), "
                             f"got metric {getattr(graph.metric, 'name', graph.metric)!r}")
        _, uniq, inverse = _prepare_ks(graph, ks, self.info)
        sizes = _neighbourhood_sizes(graph, uniq)
        idx = np.ascontiguousarray(graph.indices, dtype=np.int64)
        return _abof_linear4(X, idx, sizes, _NO_PAIR_VALUE)[inverse]
