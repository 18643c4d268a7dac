"""Exact kNN search by spatial leaves with bounding-box pruning (private; search ``"leaves"``).

The objects are split into leaves of at most ``leaf_size`` objects by recursive median cuts along the
coordinate of widest spread (a k-d tree's leaves). Every query leaf visits the other leaves in increasing
box-to-box distance and, per query, skips a leaf whose point-to-box lower bound exceeds the query's current
k_max-th smallest key; inside a visited leaf the keys are computed exactly as the brute-force kernel
(:func:`odeval.neighbors._kernels.direct_knn_rows`) computes them — Σ (x_j − y_j)² (or Σ |·|, max |·|) from
coordinate differences, in attribute order — and selected with the same heap and tie buffer.

Why the result is the brute-force graph bit for bit: the neighbours of p are {o ≠ p : key(o) ≤ kth(p)}, kth
the k_max-th smallest key, with keys computed by the same arithmetic in both searches. A leaf is skipped for p
only when its lower bound ``lb`` exceeds the current heap top ``top ≥ kth``; ``lb`` is computed in floating
point from the gaps between p and the box, and rounding is monotone (|fl(x − q)| ≥ fl(gap) when |x − q| ≥ gap,
squares and sums of larger terms round to larger or equal values), so fl(lb) ≤ fl(key(o)) for every o in the
box: a skipped object has key > kth and is neither a neighbour nor a tie. The candidates are finally sorted by
(key, object index), as the brute force sorts them.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from odeval.neighbors._kernels import _sift_down


def leaf_order(X: np.ndarray, leaf_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(perm, starts): objects ``perm[starts[b]:starts[b + 1]]`` form leaf b; median cuts along the coordinate
    of widest spread until a part holds at most ``leaf_size`` objects (deterministic: ``argpartition`` with
    ties broken by the introselect, always on the same input)."""
    n = X.shape[0]
    parts = [np.arange(n, dtype=np.int64)]
    leaves: list[np.ndarray] = []
    while parts:
        idx = parts.pop()
        if idx.size <= leaf_size:
            leaves.append(idx)
            continue
        P = X[idx]
        t = int(np.argmax(P.max(axis=0) - P.min(axis=0)))
        h = idx.size // 2
        o = np.argpartition(P[:, t], h, kind="introselect")
        parts.append(idx[o[h:]])
        parts.append(idx[o[:h]])
    sizes = np.array([leaf.size for leaf in leaves], dtype=np.int64)
    starts = np.zeros(len(leaves) + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    return np.concatenate(leaves), starts


@njit(cache=True, inline="always")
def _gap_bound(lo, hi, q, metric):  # pragma: no cover - numba
    """Lower bound of the key of q to any point of the box [lo, hi], in the key's arithmetic (monotone)."""
    s = 0.0
    for t in range(q.shape[0]):
        g = 0.0
        if q[t] < lo[t]:
            g = lo[t] - q[t]
        elif q[t] > hi[t]:
            g = q[t] - hi[t]
        if metric == 0:
            s += g * g
        elif metric == 1:
            s += g
        elif g > s:
            s = g
    return s


@njit(cache=True, parallel=True)
def leaves_knn(Xp, XpT, perm, starts, lo, hi, k_max, metric, cap, bufcap, out_keys, out_idx, out_cnt):
    """Exact kNN (+ ties) of every object; ``Xp = X[perm]`` (leaf order), ``XpT`` its transpose (d, N).

    Row ``perm[i]`` of the outputs (original object order) receives the keys and original indices of object
    ``perm[i]``'s neighbours sorted by (key, index), and the count; −1 where the tie buffer overflowed (the caller
    recomputes those rows from full distance rows, as for the brute force).
    """
    d = Xp.shape[1]
    nleaf = starts.shape[0] - 1
    for a in prange(nleaf):
        s0 = starts[a]
        m = starts[a + 1] - s0
        # box-to-box lower bounds, leaves visited in increasing order (own leaf first: bound 0)
        bb = np.empty(nleaf)
        for b in range(nleaf):
            s = 0.0
            for t in range(d):
                g = 0.0
                if hi[b, t] < lo[a, t]:
                    g = lo[a, t] - hi[b, t]
                elif lo[b, t] > hi[a, t]:
                    g = lo[b, t] - hi[a, t]
                if metric == 0:
                    s += g * g
                elif metric == 1:
                    s += g
                elif g > s:
                    s = g
            bb[b] = s
        bb[a] = -1.0
        visit = np.argsort(bb, kind="mergesort")
        heaps = np.full((m, k_max), np.inf)
        tops = np.full(m, np.inf)
        ckeys = np.empty((m, bufcap))
        cidx = np.empty((m, bufcap), np.int64)
        ccnt = np.zeros(m, np.int64)
        over = np.zeros(m, np.bool_)
        acc = np.empty(np.max(starts[1:] - starts[:-1]))
        q = np.empty(d)
        for vb in range(nleaf):
            b = visit[vb]
            worst = 0.0
            for i in range(m):
                if tops[i] > worst:
                    worst = tops[i]
            if bb[b] > worst:
                break  # every later leaf is at least as far from the whole query leaf
            b0 = starts[b]
            nb = starts[b + 1] - b0
            for i in range(m):
                for t in range(d):
                    q[t] = Xp[s0 + i, t]
                top = tops[i]
                if b != a and _gap_bound(lo[b], hi[b], q, metric) > top:
                    continue
                # keys of q to the leaf's objects, summed in attribute order (the first term assigned: 0 + x = x)
                row = XpT[0, b0:b0 + nb]
                qt = q[0]
                if metric == 0:
                    for j in range(nb):
                        u = qt - row[j]
                        acc[j] = u * u
                    for t in range(1, d):
                        qt = q[t]
                        row = XpT[t, b0:b0 + nb]
                        for j in range(nb):
                            u = qt - row[j]
                            acc[j] += u * u
                elif metric == 1:
                    for j in range(nb):
                        acc[j] = abs(qt - row[j])
                    for t in range(1, d):
                        qt = q[t]
                        row = XpT[t, b0:b0 + nb]
                        for j in range(nb):
                            acc[j] += abs(qt - row[j])
                else:
                    for j in range(nb):
                        acc[j] = abs(qt - row[j])
                    for t in range(1, d):
                        qt = q[t]
                        row = XpT[t, b0:b0 + nb]
                        for j in range(nb):
                            u = abs(qt - row[j])
                            if u > acc[j]:
                                acc[j] = u
                hits = 0
                for j in range(nb):  # vectorisable pre-check: most leaves hold no candidate of this query
                    hits += acc[j] <= top
                if hits == 0:
                    continue
                for j in range(nb):
                    v = acc[j]
                    if v > top or b0 + j == s0 + i:
                        continue
                    if not over[i]:
                        c = ccnt[i]
                        if c == bufcap:  # compact: drop candidates above the current k_max-th key
                            c2 = 0
                            for t2 in range(c):
                                if ckeys[i, t2] <= top:
                                    ckeys[i, c2] = ckeys[i, t2]
                                    cidx[i, c2] = cidx[i, t2]
                                    c2 += 1
                            c = c2
                            if c == bufcap:
                                over[i] = True
                        if not over[i]:
                            ckeys[i, c] = v
                            cidx[i, c] = perm[b0 + j]
                            ccnt[i] = c + 1
                    if v < top:
                        heaps[i, 0] = v
                        _sift_down(heaps[i], k_max, 0)
                        top = heaps[i, 0]
                tops[i] = top
        for i in range(m):
            p = perm[s0 + i]
            if over[i]:
                out_cnt[p] = -1
                continue
            kth = heaps[i, 0]
            c2 = 0
            for t2 in range(ccnt[i]):
                if ckeys[i, t2] <= kth:
                    ckeys[i, c2] = ckeys[i, t2]
                    cidx[i, c2] = cidx[i, t2]
                    c2 += 1
            out_cnt[p] = c2
            if c2 <= cap:
                # (key, index) order: indices ascending first, then a stable sort by key
                o1 = np.argsort(cidx[i, :c2])
                ks = ckeys[i, :c2][o1]
                ids = cidx[i, :c2][o1]
                o2 = np.argsort(ks, kind="mergesort")
                for j in range(c2):
                    out_keys[p, j] = ks[o2[j]]
                    out_idx[p, j] = ids[o2[j]]
