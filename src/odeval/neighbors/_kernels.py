"""Numba kernels of the exact kNN search (private).

Every kernel works on a block of query rows and writes, per row, the neighbour keys and indices sorted by
(key, index) into a (rows, cap) buffer plus the true count; rows whose count exceeds ``cap`` (massive ties)
are recomputed by the caller with a larger buffer.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _sift_down(heap, n, i):
    """Restore the max-heap property below position i of heap[:n]."""
    v = heap[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and heap[c + 1] > heap[c]:
            c += 1
        if heap[c] > v:
            heap[i] = heap[c]
            i = c
        else:
            break
    heap[i] = v


@njit(cache=True)
def _write_sorted(keys, idx, m, cap, out_keys, out_idx):
    """Sort the m selected (key, index) pairs (indices ascending on input) and write up to cap of them."""
    order = np.argsort(keys[:m], kind="mergesort")  # stable: ties stay in index order
    w = min(m, cap)
    for j in range(w):
        out_keys[j] = keys[order[j]]
        out_idx[j] = idx[order[j]]


EUCLIDEAN, CITYBLOCK, CHEBYSHEV = 0, 1, 2


@njit(cache=True, parallel=True)
def direct_knn_rows(X, q0, q1, k_max, metric, qb, cap, bufcap, out_keys, out_idx, out_cnt):
    """Exact kNN (+ ties) of the objects q0 ≤ p < q1 among all objects (row p − q0 of the outputs), computed
    directly from coordinate differences. A row's result does not depend on q0, q1 or qb (each query's keys
    are summed on their own, in attribute order), so blocks of rows give the rows of the whole graph.

    Keys: squared Euclidean Σ (x_j - y_j)² (summed in attribute order, as ELKI), Manhattan Σ |x_j - y_j|,
    or Chebyshev max |x_j - y_j|. Query rows are processed in groups of ``qb`` with the group's
    coordinates transposed, so that the inner loop runs over queries (vectorisable, no reordering of any
    sum). One pass over the objects per group: a max-heap keeps the k_max smallest keys; every object whose
    key does not exceed the current heap top is kept as a candidate (buffer compacted when full); at the end
    the candidates tied with or below the final k_max-th key are the neighbours. Rows whose candidates do
    not fit (massive ties) get ``out_cnt = -1`` and are recomputed by the caller.
    """
    N, d = X.shape
    n_groups = (q1 - q0 + qb - 1) // qb
    for g in prange(n_groups):
        p0 = q0 + g * qb
        m = min(qb, q1 - p0)
        QT = np.empty((d, m))
        for i in range(m):
            for j in range(d):
                QT[j, i] = X[p0 + i, j]
        acc = np.empty(m)
        heaps = np.full((m, k_max), np.inf)
        tops = np.full(m, np.inf)
        ckeys = np.empty((m, bufcap))
        cidx = np.empty((m, bufcap), np.int64)
        ccnt = np.zeros(m, np.int64)
        over = np.zeros(m, np.bool_)
        for q in range(N):
            acc[:] = 0.0
            if metric == 0:
                j = 0
                while j + 4 <= d:  # four attributes per pass over acc, added one after the other (same order)
                    x0 = X[q, j]
                    x1 = X[q, j + 1]
                    x2 = X[q, j + 2]
                    x3 = X[q, j + 3]
                    r0 = QT[j]
                    r1 = QT[j + 1]
                    r2 = QT[j + 2]
                    r3 = QT[j + 3]
                    for i in range(m):
                        t0 = r0[i] - x0
                        t1 = r1[i] - x1
                        t2 = r2[i] - x2
                        t3 = r3[i] - x3
                        acc[i] = (((acc[i] + t0 * t0) + t1 * t1) + t2 * t2) + t3 * t3
                    j += 4
                while j < d:
                    xj = X[q, j]
                    row = QT[j]
                    for i in range(m):
                        t = row[i] - xj
                        acc[i] += t * t
                    j += 1
            elif metric == 1:
                for j in range(d):
                    xj = X[q, j]
                    row = QT[j]
                    for i in range(m):
                        acc[i] += abs(row[i] - xj)
            else:
                for j in range(d):
                    xj = X[q, j]
                    row = QT[j]
                    for i in range(m):
                        t = abs(row[i] - xj)
                        if t > acc[i]:
                            acc[i] = t
            hits = 0
            for i in range(m):  # vectorisable pre-check: most objects are nobody's candidate
                hits += acc[i] <= tops[i]
            if hits == 0:
                continue
            for i in range(m):
                v = acc[i]
                top = tops[i]
                if v > top or q == p0 + i:
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
                        cidx[i, c] = q
                        ccnt[i] = c + 1
                if v < top:
                    heaps[i, 0] = v
                    _sift_down(heaps[i], k_max, 0)
                    tops[i] = heaps[i, 0]
        for i in range(m):
            p = p0 + i - q0
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
                _write_sorted(ckeys[i], cidx[i], c2, cap, out_keys[p], out_idx[p])


@njit(cache=True, inline="always")
def _pair_key(A, a, B, b, metric):
    """Key of row a of A to row b of B, summed in attribute order as in :func:`direct_knn_rows`: squared
    Euclidean, Manhattan or Chebyshev (``metric`` 0, 1, 2)."""
    s = 0.0
    for j in range(A.shape[1]):
        t = A[a, j] - B[b, j]
        if metric == 0:
            s += t * t
        elif metric == 1:
            s += abs(t)
        elif abs(t) > s:
            s = abs(t)
    return s


@njit(cache=True, parallel=True)
def query_keys(Q, X, metric):
    """Keys (see :func:`direct_knn`) of every row of Q to every row of X, shape (len(Q), len(X))."""
    M = Q.shape[0]
    N = X.shape[0]
    out = np.empty((M, N))
    for b in prange(M):
        for q in range(N):
            out[b, q] = _pair_key(Q, b, X, q, metric)
    return out


def direct_keys(X, rows, metric):
    """Keys of the query rows ``rows`` of X to all objects, shape (len(rows), N)."""
    return query_keys(X[rows], X, metric)


@njit(cache=True, parallel=True)
def select_block(D, rows, k_max, cap, out_keys, out_idx, out_cnt):
    """kNN (+ ties) of query rows ``rows`` from their exact distance rows ``D`` (keys = distances)."""
    B, N = D.shape
    for i in prange(B):
        p = rows[i]
        heap = np.full(k_max, np.inf)
        for q in range(N):
            if q == p:
                continue
            v = D[i, q]
            if v < heap[0]:
                heap[0] = v
                _sift_down(heap, k_max, 0)
        kth = heap[0]
        m = 0
        for q in range(N):
            if q != p and D[i, q] <= kth:
                m += 1
        cand = np.empty(m, np.int64)
        ckey = np.empty(m)
        c = 0
        for q in range(N):
            if q != p and D[i, q] <= kth:
                cand[c] = q
                ckey[c] = D[i, q]
                c += 1
        out_cnt[i] = m
        _write_sorted(ckey, cand, m, cap, out_keys[i], out_idx[i])


@njit(cache=True, parallel=True)
def pair_distances(X, a, b, metric):
    """Distances between X[a[i]] and X[b[i]] elementwise, with the arithmetic of :func:`direct_knn`
    (Euclidean: sqrt of the key)."""
    n = a.shape[0]
    out = np.empty(n)
    for i in prange(n):
        s = _pair_key(X, a[i], X, b[i], metric)
        out[i] = np.sqrt(s) if metric == 0 else s
    return out


@njit(cache=True)
def tie_group_ends(keys, width):
    """For each row and column j < width: 1 + the last column whose key equals keys[row, j].

    This is |N_k(p)| for k = j + 1 (neighbours within the k-distance, ties included).
    """
    N = keys.shape[0]
    W = keys.shape[1]
    out = np.empty((N, width), np.int64)
    for p in range(N):
        end = W
        # scan from the right: the group end of column j is j+1 unless the next column has the same key
        nxt = W
        for j in range(W - 1, -1, -1):
            if j + 1 < W and keys[p, j + 1] == keys[p, j]:
                end = nxt
            else:
                end = j + 1
            nxt = end
            if j < width:
                out[p, j] = end
    return out


@njit(cache=True)
def tie_group_starts(keys):
    """For each row and column j: the first column whose key equals keys[row, j] (−1 on padding)."""
    N, W = keys.shape
    out = np.empty((N, W), np.int64)
    for p in range(N):
        start = 0
        for j in range(W):
            if j > 0 and keys[p, j] == keys[p, j - 1]:
                pass
            else:
                start = j
            out[p, j] = start if np.isfinite(keys[p, j]) else -1
    return out
