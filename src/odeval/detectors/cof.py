"""COF: the connectivity-based outlier factor (Tang, Chen, Fu and Cheung 2002)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numba
import numpy as np
from numba import njit, prange

from odeval.detectors._neighborhood import (
    _elki_perm,
    _in_request_order,
    _is_euclidean,
    _iter_blocks,
    _row_has_ties,
    _variant_lists,
)
from odeval.detectors.base import VARIANT, Detector, MethodInfo, MethodVariant, register
from odeval.detectors.blockwise import REFUSE_ELKI_VARIANTS, BlockState, Step, halo, per_chunk, with_halo

__all__ = ["COF", "cof_scores"]


@njit(cache=True, inline="always")
def _acdist_normalised(acsum, n, elki):  # pragma: no cover - numba
    """ac-dist from the weighted sum Σ_i (steps + 1 − i) e_i of the trail's edges, n members besides p: divided by
    n(n + 1)/2 — with ``elki`` in ELKI's expression (|L| = n + 1, p included), for ELKI's rounding."""
    if elki:
        r = n + 1.0
        return acsum / (r * 0.5 * (r - 1.0))
    return acsum / ((n + 1) * n / 2.0)


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
    return _acdist_normalised(acsum, n, elki)


def _acdist_chunk_paper(block: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """ac-dist (paper variant) for a chunk's objects and all k: :func:`_acdist_chunk_trail` without ``elki``."""
    return _acdist_chunk_trail(block, sizes, np.zeros(sizes.shape[0], dtype=np.int64), False)


@njit(cache=True, parallel=True)
def _acdist_chunk_trail_redo(block, sizes, ks, elki):  # pragma: no cover - numba
    """The previous form of :func:`_acdist_chunk_trail` (kept as the reference the tests compare it with).

    ac-dist for the chunk's objects and all k, reusing the SBN trail across k: the paper variant, or
    (``elki``) ELKI 0.7.1's on lists that are prefixes of one another in ELKI's order (the batch tool's
    sublists).

    When N_k(p) grows, the new members come last in list order, so the trail is unchanged up to the first
    step s* at which a new member is closer to the connected set than the old trail's pick — strictly closer
    in the paper variant (ties go to the first member, so new members lose them), or at least as close with
    ``elki`` (ELKI's ties go to the last member, so new members win them). The trail is recomputed from s*
    only, starting from the stored distances of every member to the connected set after each step
    (``hist``). With ``elki`` the sum runs over the first k edges only, with ELKI's weights and normaliser
    (:func:`_chain_acdist`; the edges are the same values, so the result is bit-identical). Sizes ascend
    along axis 0.
    """
    nk, m = sizes.shape
    out = np.empty((nk, m))
    W1 = block.shape[1]
    for c in prange(m):
        B = block[c]
        chain = np.zeros(W1, dtype=np.int64)
        e = np.zeros(W1)
        hist = np.empty((W1, W1))
        done = np.zeros(W1, dtype=np.bool_)
        mind = np.empty(W1)
        n_prev = 0
        for t in range(nk):
            n = sizes[t, c]
            if n > n_prev:
                if n_prev == 0:
                    for i in range(1, n + 1):
                        hist[0, i] = B[0, i]
                    s_star = 1
                else:
                    s_star = n_prev + 1
                    for q in range(n_prev + 1, n + 1):
                        hist[0, q] = B[0, q]
                    for st in range(1, n_prev + 1):
                        mn = np.inf
                        for q in range(n_prev + 1, n + 1):
                            if hist[st - 1, q] < mn:
                                mn = hist[st - 1, q]
                        if mn < e[st] or (elki and mn == e[st]):
                            s_star = st
                            break
                        b = chain[st]
                        for q in range(n_prev + 1, n + 1):
                            v = B[b, q]
                            hist[st, q] = v if v < hist[st - 1, q] else hist[st - 1, q]
                # redo Prim from step s_star over members 1..n
                for i in range(1, n + 1):
                    done[i] = False
                for st in range(1, s_star):
                    done[chain[st]] = True
                for i in range(1, n + 1):
                    mind[i] = hist[s_star - 1, i]
                for st in range(s_star, n + 1):
                    best = -1
                    bv = np.inf
                    for i in range(1, n + 1):
                        if not done[i] and (best < 0 or mind[i] < bv or (elki and mind[i] == bv)):
                            best = i
                            bv = mind[i]
                    chain[st] = best
                    e[st] = bv
                    done[best] = True
                    row = B[best]
                    for i in range(1, n + 1):
                        if not done[i]:
                            v = row[i]
                            if v < mind[i]:
                                mind[i] = v
                        hist[st, i] = mind[i]
                n_prev = n
            steps = min(ks[t], n) if elki else n
            acsum = 0.0
            for st in range(1, steps + 1):
                acsum += e[st] * (steps + 1 - st)
            out[t, c] = _acdist_normalised(acsum, n, elki)
    return out


@njit(cache=True, inline="always")
def _better(v, pos, bv, bpos, elki):  # pragma: no cover - numba
    """Prim's choice between a member at list position ``pos`` with distance ``v`` to the connected set and the
    best so far (``bpos`` < 0: none): smaller distance, ties to the earlier position (paper) or the later (elki)."""
    if bpos < 0 or v < bv:
        return True
    if v == bv:
        return pos > bpos if elki else pos < bpos
    return False


@njit(cache=True)
def _prim_rest(B, n, conn, mind, chain, e, st, elki):  # pragma: no cover - numba
    """Prim's steps st+1..n over members 1..n of B: ``conn`` marks the connected members, ``mind`` the distances
    of the others to the connected set; writes the picks to ``chain`` and their edges to ``e``.

    Connected members are kept at distance +inf (``pen`` adds +inf to their row entries, 0 to the others: x + 0
    = x for x ≥ 0), so the update is a branch-free, vectorisable minimum; the scan ascends with ``<`` (the
    first smallest: paper) or ``<=`` (the last: elki), which is :func:`_better`'s rule."""
    pen = np.zeros(n + 1)
    for i in range(1, n + 1):
        if conn[i]:
            pen[i] = np.inf
            mind[i] = np.inf
    while st < n:
        best = -1
        bv = np.inf
        if elki:
            for i in range(1, n + 1):
                if mind[i] <= bv:
                    best = i
                    bv = mind[i]
        else:
            for i in range(1, n + 1):
                if mind[i] < bv:
                    best = i
                    bv = mind[i]
        st += 1
        chain[st] = best
        e[st] = bv
        conn[best] = True
        pen[best] = np.inf
        mind[best] = np.inf
        row = B[best]
        for i in range(1, n + 1):
            mind[i] = min(mind[i], row[i] + pen[i])


@njit(cache=True)
def _delta_argmin(delta, n_prev, elki):  # pragma: no cover - numba
    """(value, position) of the smallest finite ``delta[1..n_prev]`` (the connected members hold +inf), ties to
    the first position (paper) or the last (``elki``) — :func:`_better`'s rule; (inf, −1) if none."""
    bpos = -1
    bv = np.inf
    if elki:
        for i in range(1, n_prev + 1):
            v = delta[i]
            if v <= bv and v < np.inf:
                bpos = i
                bv = v
    else:
        for i in range(1, n_prev + 1):
            v = delta[i]
            if v < bv:
                bpos = i
                bv = v
    return bv, bpos


@njit(cache=True)
def _extend_trail(B, n_prev, n, chain, e, nchain, ne, conn, delta, mind, pen, elki):  # pragma: no cover - numba
    """The SBN trail of members 1..n (written to ``nchain``/``ne``) from the trail ``chain``/``e`` of members
    1..n_prev (new members come later in list order), in O(1) per step along the old trail plus O(n) per member
    that joins out of the old trail's order.

    Prim's run on the larger set is followed step by step. Its connected set is {p} ∪ (the old trail's first
    s − 1 picks) ∪ X, X the members picked out of the old order (new members, or old ones pulled forward);
    ``delta[r]`` is the distance of an old remaining member r to X, ``mind[q]`` that of a new member q to the
    connected set. The old trail's next pick c with edge V was, in the old run, the best of the then
    unconnected old members by :func:`_better` (smallest distance to {p} ∪ the first s − 1 picks, ties by list
    position), so every other old remaining member r is at distance min(old distance ≥ V, delta[r] ≥ dval)
    and an old one at exactly V has a worse position than c unless it reaches V through X. Hence the old
    members' choice is c at V if V < dval, the member ``dpos`` with the smallest delta (``dval``) if dval < V,
    and the better of the two by position if dval = V (the tie rule of :func:`_better`; c itself when
    dpos = c); a new member wins against it by the same rule (new positions are later). Every edge is a
    copy of a block entry, so the trail and its edges are those of Prim from scratch, bit for bit.

    (Issue 28: the exact tie dval = V — most often an old member pulled forward that was c's attachment in the
    old trail, so that delta[c] = V — used to fall back to Prim from the current state, O(n²); 14 % of the
    extensions on Waveform. Once every new member is connected, a step reads neither the new members nor the
    block.)
    """
    for i in range(n + 1):
        conn[i] = False
        pen[i] = 0.0
    for i in range(1, n_prev + 1):
        delta[i] = np.inf
    for q in range(n_prev + 1, n + 1):
        mind[q] = B[0, q]
    new_left = n - n_prev
    dval = np.inf
    dpos = -1
    stale = False  # dval is then only a lower bound of the smallest delta (dpos got connected since)
    s_old = 1
    st = 0
    if new_left == 1:
        # one new member q (no ties at the k-distance): the common run below while nothing is out of order, in a
        # tight loop — the old trail's picks are kept as long as q's distance to the connected set (a running
        # minimum along q's block row) does not win against the old trail's next edge
        q = n
        mq = mind[q]
        row = B[q]
        while s_old <= n_prev:
            V = e[s_old]
            if not V < np.inf or mq < V or (elki and mq == V):
                break
            c = chain[s_old]
            r = row[c]
            if r < mq:
                mq = r
            nchain[s_old] = c
            ne[s_old] = V
            s_old += 1
        mind[q] = mq
        st = s_old - 1
        if s_old > n_prev:  # q comes last
            nchain[n] = q
            ne[n] = mq
            return
        for i in range(1, s_old):
            c = chain[i]
            conn[c] = True
            pen[c] = np.inf
    while st < n:
        if new_left <= 1:
            # the common run: the old trail's next pick c stays Prim's choice (V < dval, and the one unconnected
            # new member q, if any, does not win against c), one step in O(1)
            q = -1
            if new_left == 1:
                for i in range(n_prev + 1, n + 1):
                    if not conn[i]:
                        q = i
            while s_old <= n_prev:
                c = chain[s_old]
                if conn[c]:
                    s_old += 1
                    continue
                V = e[s_old]
                if not V < dval:
                    if not stale:
                        break
                    dval, dpos = _delta_argmin(delta, n_prev, elki)
                    stale = False
                    if not V < dval:
                        break
                if q >= 0:
                    mq = mind[q]
                    if mq < V or (elki and mq == V):
                        break
                    r = B[q, c]  # = B[c, q] (the block is symmetric), read along row q
                    if r < mq:
                        mind[q] = r
                st += 1
                nchain[st] = c
                ne[st] = V
                conn[c] = True
                pen[c] = np.inf
                delta[c] = np.inf
                s_old += 1
                if c == dpos:  # the smallest delta is found again only when V reaches the bound
                    stale = True
            if st >= n:
                break
        while s_old <= n_prev and conn[chain[s_old]]:
            s_old += 1
        bq = -1
        bqv = np.inf
        if new_left > 0:
            for q in range(n_prev + 1, n + 1):
                if not conn[q] and _better(mind[q], q, bqv, bq, elki):
                    bq = q
                    bqv = mind[q]
        outside = True  # the pick joins X
        if s_old <= n_prev:
            if stale:
                dval, dpos = _delta_argmin(delta, n_prev, elki)
                stale = False
            c = chain[s_old]
            V = e[s_old]
            if dval < V or (dval == V and dpos != c and _better(dval, dpos, V, c, elki)):
                pick, val = dpos, dval
            else:
                pick, val = c, V
                outside = False
            if bq >= 0 and _better(bqv, bq, val, pick, elki):
                pick, val = bq, bqv
                outside = True
        else:
            pick, val = bq, bqv
        st += 1
        nchain[st] = pick
        ne[st] = val
        conn[pick] = True
        if pick > n_prev:
            new_left -= 1
        else:  # connected old members: +inf in delta, kept there by pen (branch-free minimum below)
            pen[pick] = np.inf
            delta[pick] = np.inf
        if new_left > 0 or outside:
            row = B[pick]
            if new_left > 0:
                for q in range(n_prev + 1, n + 1):
                    if not conn[q] and row[q] < mind[q]:
                        mind[q] = row[q]
            if outside:  # delta of the old remaining members, and their smallest (one pass)
                one = np.uint64(1)
                for i in range(np.uint64(n_prev)):  # unsigned: vectorised
                    delta[i + one] = min(delta[i + one], row[i + one] + pen[i + one])
                dval, dpos = _delta_argmin(delta, n_prev, elki)
                stale = False
                continue
        s_old += 1
        if pick == dpos:
            stale = True
    # the new trail is left in nchain/ne: the caller swaps the buffers


@njit(cache=True, parallel=True)
def _acdist_chunk_trail(block, sizes, ks, elki):  # pragma: no cover - numba
    """ac-dist for the chunk's objects and all k from one SBN trail per object, extended as N_k(p) grows: the
    paper variant, or (``elki``) ELKI 0.7.1's on lists that are prefixes of one another in ELKI's order (the
    batch tool's sublists). Sizes ascend along axis 0.

    The trail of the first non-empty neighbourhood is Prim's from scratch; every larger neighbourhood's trail is
    derived from the previous one by :func:`_extend_trail` (bit-identical to Prim from scratch, and to
    :func:`_acdist_chunk_trail_redo`). With ``elki`` the sum runs over the first k edges only, with ELKI's
    weights and normaliser (:func:`_chain_acdist`).
    """
    nk, m = sizes.shape
    out = np.empty((nk, m))
    W1 = block.shape[1]
    for c in prange(m):
        B = block[c]
        _trail_acdists(B, sizes[:, c], ks, elki, _trail_buffers(W1), out[:, c])
    return out


@njit(cache=True)
def _trail_buffers(W1):  # pragma: no cover - numba
    """The work arrays of :func:`_trail_acdists` for blocks of up to W1 members: (chain, e, next chain, next e,
    connected, delta, min distance, penalty)."""
    return (np.zeros(W1, dtype=np.int64), np.zeros(W1), np.zeros(W1, dtype=np.int64), np.zeros(W1),
            np.zeros(W1, dtype=np.bool_), np.empty(W1), np.empty(W1), np.empty(W1))


@njit(cache=True)
def _trail_acdists(B, sizes, ks, elki, bufs, dest):  # pragma: no cover - numba
    """The ac-dists of one object for every k: its SBN trail over the distance block ``B`` built by Prim for the
    first k, then extended (:func:`_extend_trail`) as N_k grows (``sizes[t]`` members at ``ks[t]``);
    ``dest[t]`` := the normalised ac-dist. ``bufs``: :func:`_trail_buffers` (the caller's, one set per thread)."""
    chain, e, nchain, ne, conn, delta, mind, pen = bufs
    n_prev = 0
    for t in range(sizes.shape[0]):
        n = sizes[t]
        if n > n_prev:
            if n_prev == 0:
                for i in range(n + 1):
                    conn[i] = False
                    mind[i] = B[0, i]
                _prim_rest(B, n, conn, mind, chain, e, 0, elki)
            else:
                _extend_trail(B, n_prev, n, chain, e, nchain, ne, conn, delta, mind, pen, elki)
                chain, nchain = nchain, chain
                e, ne = ne, e
            n_prev = n
        steps = min(ks[t], n) if elki else n
        acsum = 0.0
        for st in range(1, steps + 1):
            acsum += e[st] * (steps + 1 - st)
        dest[t] = _acdist_normalised(acsum, n, elki)


@njit(cache=True)
def _member_block(X, dist, idx, p, w, B, Y, acc):  # pragma: no cover - numba
    """B[i, j] (0 ≤ i, j ≤ w) := the distance block of {p} ∪ (the first w graph neighbours of p), the values of
    :func:`odeval.detectors._neighborhood._euclidean_blocks` bit for bit: row 0 from the graph, the other entries
    sqrt(Σ_t (x_t − y_t)²) added in attribute order.

    The members' coordinates are gathered attribute-major (``Y[t, j]``), so that the sums of one row i against all
    j > i run side by side, one attribute at a time (each sum still adds its attributes in order from 0.0, and
    x − y is formed as before: the same values). The inner loops run on unsigned offsets, which lets the
    compiler vectorise them across j (with signed indices numba's negative-index handling keeps them scalar).
    ``acc`` holds at least w + 1 values.
    """
    d = X.shape[1]
    B[0, 0] = 0.0
    for j in range(1, w + 1):
        B[0, j] = dist[p, j - 1]
        B[j, 0] = dist[p, j - 1]
        b = idx[p, j - 1]
        for t in range(d):
            Y[t, j] = X[b, t] if b >= 0 else 0.0
    for i in range(1, w + 1):
        B[i, i] = 0.0
        a = idx[p, i - 1]
        if a < 0:
            for j in range(i + 1, w + 1):
                B[i, j] = np.inf
                B[j, i] = np.inf
            continue
        L = np.uint64(w - i)
        o = np.uint64(i + 1)
        for jj in range(L):
            acc[jj] = 0.0
        t = 0
        while t + 4 <= d:  # four attributes per pass over acc, added one after the other (the same order)
            y0 = Y[t]
            y1 = Y[t + 1]
            y2 = Y[t + 2]
            y3 = Y[t + 3]
            x0 = y0[i]
            x1 = y1[i]
            x2 = y2[i]
            x3 = y3[i]
            for jj in range(L):
                d0 = x0 - y0[o + jj]
                d1 = x1 - y1[o + jj]
                d2 = x2 - y2[o + jj]
                d3 = x3 - y3[o + jj]
                acc[jj] = (((acc[jj] + d0 * d0) + d1 * d1) + d2 * d2) + d3 * d3
            t += 4
        while t < d:
            yt = Y[t]
            xa = yt[i]
            for jj in range(L):
                diff = xa - yt[o + jj]
                acc[jj] += diff * diff
            t += 1
        for jj in range(L):
            acc[jj] = np.sqrt(acc[jj])
        for j in range(i + 1, w + 1):
            v = acc[j - i - 1] if idx[p, j - 1] >= 0 else np.inf
            B[i, j] = v
            B[j, i] = v


@njit(cache=True, parallel=True)
def _acdist_trail_euclidean(X, dist, idx, sizes, ks, elki, n_chunks):  # pragma: no cover - numba
    """:func:`_acdist_chunk_trail` for all objects of a Euclidean graph, object-major (N, len(ks)), with each
    object's distance block computed in a per-thread buffer (:func:`_member_block`) right before its trail:
    the same values as the blocks of :func:`odeval.detectors._neighborhood._iter_blocks`, without writing
    them to (and reading them back from) memory. Objects in ``n_chunks`` contiguous ranges, one buffer set
    per range."""
    nk, N = sizes.shape
    out = np.empty((N, nk))
    d = X.shape[1]
    W = 0
    for p in range(N):
        if sizes[nk - 1, p] > W:
            W = sizes[nk - 1, p]
    W1 = W + 1
    for ch in prange(n_chunks):
        lo = ch * N // n_chunks
        hi = (ch + 1) * N // n_chunks
        buf = np.empty(W1 * W1)
        Y = np.empty((d, W1))
        acc = np.empty(W1)
        bufs = _trail_buffers(W1)
        for p in range(lo, hi):
            w = sizes[nk - 1, p]
            B = buf[: (w + 1) * (w + 1)].reshape((w + 1, w + 1))
            _member_block(X, dist, idx, p, w, B, Y, acc)
            _trail_acdists(B, sizes[:, p], ks, elki, bufs, out[p])
    return out


@njit(cache=True, parallel=True)
def _acdist_chunk(block, sizes, ks, elki, X, rows, dist, idx, reorder):  # pragma: no cover - numba
    nk, m = sizes.shape
    out = np.empty((nk, m))
    width = block.shape[1]
    for c in prange(m):
        p = rows[c]
        rem = np.empty(width, dtype=np.int64)
        rmind = np.empty(width)
        perm = np.arange(width)
        w = sizes[nk - 1, c]
        for t in range(nk):
            n = sizes[t, c]
            for i in range(n + 1):
                perm[i] = i
            if elki and reorder and _row_has_ties(dist, p, n):
                # ELKI walks its own list order, which differs from ours only among tied neighbours
                _elki_perm(X, idx, p, ks[t] + 1, n, w, perm)
            out[t, c] = _chain_acdist(block[c], n, ks[t], elki, perm, rem, rmind)
    return out


@njit(cache=True, parallel=True)
def _cof_from_acdist(ac, X, dist, idx, sizes, ks, elki, reorder):  # pragma: no cover - numba
    nk, n = ac.shape
    out = np.empty((nk, n))
    for p in prange(n):
        w = sizes[nk - 1, p]
        perm = np.arange(w + 1)
        for t in range(nk):
            m = sizes[t, p]
            for i in range(m + 1):
                perm[i] = i
            if elki and reorder and _row_has_ties(dist, p, m):  # ELKI sums in its list order
                _elki_perm(X, idx, p, ks[t] + 1, m, w, perm)
            s = 0.0
            for j in range(1, m + 1):
                s += ac[t, idx[p, perm[j] - 1]]
            a = ac[t, p]
            if elki:
                if s > 0.0:
                    out[t, p] = a * (ks[t] + 1.0) / s
                else:
                    out[t, p] = np.inf if a > 0.0 else 1.0
            elif s == 0.0:
                out[t, p] = np.inf if a > 0.0 else 1.0
            else:
                out[t, p] = a * m / s
    return out


@njit(cache=True, parallel=True)
def _cof_from_acdist_rows(ac_rows, idx, sizes, ks, elki):  # pragma: no cover - numba
    """:func:`_cof_from_acdist` without ELKI's list reordering, on object-major ac-dists (N, len(ks)): the same
    sums in the same order, but one neighbour's ac-dists for all k are contiguous (cache-friendly at large N)."""
    n, nk = ac_rows.shape
    out = np.empty((nk, n))
    for p in prange(n):
        for t in range(nk):
            m = sizes[t, p]
            s = 0.0
            for j in range(m):
                s += ac_rows[idx[p, j], t]
            a = ac_rows[p, t]
            if elki:
                if s > 0.0:
                    out[t, p] = a * (ks[t] + 1.0) / s
                else:
                    out[t, p] = np.inf if a > 0.0 else 1.0
            elif s == 0.0:
                out[t, p] = np.inf if a > 0.0 else 1.0
            else:
                out[t, p] = a * m / s
    return out


def _trail_chunks(n: int) -> int:
    """Contiguous object ranges of :func:`_acdist_trail_euclidean`: a few per numba thread (load balance), at
    most one per 16 objects (each range allocates its buffers)."""
    return max(1, min(n // 16, 8 * numba.get_num_threads()))


def cof_scores(graph: Any, ks: int | Sequence[int], variant: str = MethodVariant.PAPER) -> np.ndarray:
    """COF scores of all objects for every k in ``ks``, from one kNN graph.

    Parameters
    ----------
    graph : KNNGraph
        Exact kNN graph (:func:`odeval.neighbors.knn_graph`) with ``k_max >= max(ks)``.
    ks : int or sequence of int
        Neighbourhood sizes, each ≥ 1.
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}
        ``"paper"`` (default): Tang et al. (2002). ``"elki-0.7.1"``: ELKI 0.7.1's ``lof.COF`` (see Notes), to
        reproduce Campos et al. (2016). ``"elki-0.7.1-cks"``: the same on the sublists of ELKI's batch tool
        ``ComputeKNNOutlierScores`` (ties on the stored distances, ELKI's heap order; docs/detectors.md).

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
    Prim's step go to the *last* member in list order — ELKI's kNN list order, which among tied neighbours
    is its heap's, emulated here (Euclidean graphs only); with ELKI's expressions the values are ELKI's to the
    last bit. Without ties both variants give the same ranking and differ by the constant factor (k+1)/k.

    References
    ----------
    J. Tang, Z. Chen, A. W. Fu, D. W. Cheung. Enhancing effectiveness of outlier detections for low density
    patterns. PAKDD 2002, LNCS 2336, pp. 535–548.
    """
    return COF(variant=variant).raw_scores_all_k(graph, ks)


def _acdist_block(state: BlockState) -> dict[str, Any]:
    """ac-dist of a block's objects (:mod:`odeval.detectors.blockwise`): :func:`_acdist_chunk_paper` on its rows."""
    ac, sizes = per_chunk(state, _acdist_chunk_paper)
    return {"ac": ac, "ac_t": np.ascontiguousarray(ac.T), "sizes": sizes}


def _cof_block(state: BlockState) -> dict[str, Any]:
    """COF of a block's objects: :func:`_cof_from_acdist` with the ac-dists of the block and of its halo."""
    d = state.data
    ac = with_halo(d["ac"], d["ac_halo"])
    B, E = state.block.n_objects, d["ac_halo"].shape[0]
    # the kernel runs over every column of ac: the halo's rows are empty neighbourhoods, their output dropped
    idx = np.vstack([state.halo.local, np.full((E, state.halo.local.shape[1]), -1, np.int64)])
    sizes = np.ascontiguousarray(np.hstack([d["sizes"], np.zeros((state.ks.size, E), np.int64)]))
    dist = np.zeros((1, 1))
    return {"raw": _cof_from_acdist(ac, state.block.X, dist, idx, sizes, state.ks, False, False)[:, :B]}


@register
class COF(Detector):
    """Connectivity-based outlier factor (Tang et al. 2002); see :func:`cof_scores`."""

    info = MethodInfo.ratio("COF", "J. Tang, Z. Chen, A. W. Fu, D. W. Cheung. Enhancing effectiveness of outlier "
                            "detections for low density patterns. PAKDD 2002.")

    _parameter_constraints: ClassVar[dict[str, Any]] = {"variant": VARIANT}
    block_refusals = REFUSE_ELKI_VARIANTS

    def _block_steps(self) -> list[Step]:
        return [Step(_acdist_block, (halo("ac_t"),)), Step(_cof_block)]

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        v = _variant_lists(graph, ks, self.info, self.variant)
        if v.elki and not v.cks:  # ELKI's list order among ties: the reordering kernels
            ac = np.empty((v.ks.size, int(v.graph.n_objects)))
            for rows, block in _iter_blocks(v.graph, v.sizes[-1]):
                sz = np.ascontiguousarray(v.sizes[:, rows])
                ac[:, rows] = _acdist_chunk(block, sz, v.ks, v.elki, v.X, rows, v.dist, v.idx, True)
            cof = _cof_from_acdist(ac, v.X, v.dist, v.idx, v.sizes, v.ks, v.elki, True)
            return _in_request_order(cof, v.inverse)
        if _is_euclidean(v.graph):  # object-major: see _cof_from_acdist_rows
            ac_rows = _acdist_trail_euclidean(v.X, v.dist, v.idx, v.sizes, v.ks, v.cks, _trail_chunks(v.X.shape[0]))
        else:
            ac_rows = np.empty((int(v.graph.n_objects), v.ks.size))
            for rows, block in _iter_blocks(v.graph, v.sizes[-1]):
                ac_rows[rows] = _acdist_chunk_trail(block, np.ascontiguousarray(v.sizes[:, rows]), v.ks, v.cks).T
        return _in_request_order(_cof_from_acdist_rows(ac_rows, v.idx, v.sizes, v.ks, v.elki), v.inverse)
