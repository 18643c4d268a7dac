"""Exact kNN of many query points through leaf boxes of the reference set (private; numba).

The query of EM/MV's uniform sample (:func:`odeval.labelfree.emmv_algorithm._query_uniform`): 10⁵ points in
≤ 5 dimensions against N ≤ 10⁴ fitted objects, k_max ≤ 100, per feature draw. Same rows as
:func:`odeval.neighbors.query_knn` bit for bit — every reference object whose key does not exceed the k_max-th
smallest key, sorted by (key, index), keys summed by :func:`odeval.neighbors._kernels._pair_key` — at a fraction
of the cost of brute force (O(M · N)) or of a k-d tree proposal that must be checked and re-sorted.

How. The reference objects are cut into leaves of a k-d tree (median splits of the widest attribute, at most
:data:`LEAF_SIZE` objects each), each with its bounding box. The queries are processed in the k-d order of the
queries themselves, so that consecutive queries lie close together, and each query starts from an upper bound of its
k_max-th key: the largest of its keys to the k_max nearest objects of the previous query (k_max actual objects, so
the k_max-th key cannot exceed it). Those k_max objects seed a candidate buffer. A leaf whose box key (the key to
the nearest point of the box, per attribute the difference to the clamped coordinate) exceeds the bound is skipped;
every object of the other leaves is appended to the buffer, and the buffer's count advances by (key ≤ bound) — no
branch per object (the box keys of all leaves are computed at once, attribute by attribute in vector registers, and
the leaves within the bound listed without a branch per leaf). When, after a leaf, the count has grown by max(8,
k_max, the count left by the last selection), the k_max-th smallest buffered key becomes the bound
(:func:`_kth_smallest`, a quickselect whose partitions are branch-free too) and the buffer keeps the keys ≤ it. At
the end one last selection gives the k_max-th key, and the buffered objects up to it are sorted by (key, index). The
in-sample graph (:func:`knn_graph_leaves`) is the same search with the objects as queries, each skipping itself.

Until 2026-11-27 the bound was the top of a max-heap of the k_max smallest keys seen, every closer object a
sift-down (unpredictable branches), each leaf's box key tested by a branch, √N objects per leaf: the same rows,
with 1.4–1.8× more CPU per query at k_max ≈ 75–100 (2–2.4× without the final sort), 1.5× at k_max = 5–30
(benchmarks/leaf_query_kselect.py keeps that kernel as its reference; benchmarks/README.md).

Exactness. Rounding to nearest is monotone, so the computed box key never exceeds the computed key of any
object in the box (each clamped difference is at most the object's difference in magnitude, squares and sums
are monotone): skipping never drops an object with key ≤ the bound, and the bound is always the k_max-th
smallest computed key of k_max or more real objects, so it never falls below the k_max-th key and only
decreases. The buffer therefore holds every object with key ≤ the k_max-th key (and only real objects, each
once), so its k_max-th smallest key is the k_max-th key itself, whatever the bound, the leaves or the query order
— those change the cost, never the rows. The keys themselves are :func:`odeval.neighbors._kernels._pair_key`'s
operations in its order.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from odeval.neighbors._kernels import _pair_key


@njit(cache=True)
def kd_leaf_order(X, leaf_size):  # pragma: no cover - numba
    """Permutation of the rows of ``X`` into the leaves of a k-d tree, and the leaves' start offsets.

    Segments longer than ``leaf_size`` are split at their middle position after a stable sort on their widest
    attribute; a segment of identical rows stays one leaf. Returns ``(perm, starts)``: leaf ``l`` holds the rows
    ``perm[starts[l]:starts[l + 1]]``; leaves in left-to-right order (neighbouring leaves lie close together).
    """
    n, d = X.shape
    perm = np.arange(n)
    starts = np.empty(n + 1, np.int64)
    n_leaves = 0
    seg_start = np.empty(n + 1, np.int64)
    seg_end = np.empty(n + 1, np.int64)
    top = 0
    seg_start[0] = 0
    seg_end[0] = n
    top = 1 if n > 0 else 0
    while top > 0:
        top -= 1
        s = seg_start[top]
        e = seg_end[top]
        if e - s <= leaf_size:
            starts[n_leaves] = s
            n_leaves += 1
            continue
        widest = 0.0
        axis = -1
        for j in range(d):
            lo = np.inf
            hi = -np.inf
            for i in range(s, e):
                v = X[perm[i], j]
                lo = min(lo, v)
                hi = max(hi, v)
            if hi - lo > widest:
                widest = hi - lo
                axis = j
        if axis < 0:  # all rows identical: no split separates them
            starts[n_leaves] = s
            n_leaves += 1
            continue
        vals = np.empty(e - s)
        for i in range(s, e):
            vals[i - s] = X[perm[i], axis]
        order = np.argsort(vals, kind="mergesort")
        seg = perm[s:e].copy()
        for i in range(e - s):
            perm[s + i] = seg[order[i]]
        mid = (s + e) // 2
        seg_start[top] = mid  # right half below the left one on the stack: leaves come out left to right
        seg_end[top] = e
        top += 1
        seg_start[top] = s
        seg_end[top] = mid
        top += 1
    starts[n_leaves] = n
    return perm, starts[:n_leaves + 1].copy()


@njit(cache=True, inline="always")
def _before(ka, ia, kb, ib):  # pragma: no cover - numba
    """(key, index) order of the rows."""
    return ka < kb or (ka == kb and ia < ib)


@njit(cache=True)
def _sort_pairs(keys, idx, pos, n, skeys, sidx, spos):  # pragma: no cover - numba
    """Sort keys[:n], idx[:n], pos[:n] together by (key, index): bottom-up merge sort, s* the scratch."""
    width = 1
    src_k, src_i, src_p = keys, idx, pos
    dst_k, dst_i, dst_p = skeys, sidx, spos
    flipped = False
    while width < n:
        start = 0
        while start < n:
            mid = min(start + width, n)
            end = min(start + 2 * width, n)
            i = start
            j = mid
            o = start
            while i < mid and j < end:
                if _before(src_k[j], src_i[j], src_k[i], src_i[i]):
                    dst_k[o] = src_k[j]
                    dst_i[o] = src_i[j]
                    dst_p[o] = src_p[j]
                    j += 1
                else:
                    dst_k[o] = src_k[i]
                    dst_i[o] = src_i[i]
                    dst_p[o] = src_p[i]
                    i += 1
                o += 1
            while i < mid:
                dst_k[o] = src_k[i]
                dst_i[o] = src_i[i]
                dst_p[o] = src_p[i]
                i += 1
                o += 1
            while j < end:
                dst_k[o] = src_k[j]
                dst_i[o] = src_i[j]
                dst_p[o] = src_p[j]
                j += 1
                o += 1
            start += 2 * width
        src_k, dst_k = dst_k, src_k
        src_i, dst_i = dst_i, src_i
        src_p, dst_p = dst_p, src_p
        flipped = not flipped
        width *= 2
    if flipped:
        for t in range(n):
            keys[t] = src_k[t]
            idx[t] = src_i[t]
            pos[t] = src_p[t]


#: Rows of up to this many neighbours are sorted by counting ranks (O(m²) comparisons without data-dependent
#: branches: about 3× faster than a merge sort for m ≈ 50–100, whose branches the processor cannot predict).
RANK_SORT_MAX = 256
#: ... and from this many on by buckets (:func:`_bucket_sort`), cheaper than n² comparisons for long rows.
BUCKET_SORT_MIN = 48


@njit(cache=True)
def _rank_sort(keys, idx, pos, n, skeys, sidx, spos):  # pragma: no cover - numba
    """Sort keys[:n], idx[:n], pos[:n] together by (key, index): each row goes to its rank, the number of rows
    before it in that order (unique, as the indices are distinct)."""
    for a in range(n):
        ka = keys[a]
        ia = idx[a]
        rank = 0
        for b in range(n):
            kb = keys[b]
            rank += (kb < ka) | ((kb == ka) & (idx[b] < ia))
        skeys[rank] = ka
        sidx[rank] = ia
        spos[rank] = pos[a]
    for a in range(n):
        keys[a] = skeys[a]
        idx[a] = sidx[a]
        pos[a] = spos[a]


@njit(cache=True)
def _bucket_sort(keys, idx, pos, n, skeys, sidx, spos, counts):  # pragma: no cover - numba
    """Sort keys[:n], idx[:n], pos[:n] together by (key, index): a counting pass into 2n buckets of equal width
    between the smallest and the largest key (bucket ⌊(key − min) · 2n / (max − min)⌋, monotone in the key),
    then an insertion pass by (key, index) that only has to repair the order within buckets — about O(n) for
    the spread-out keys of a kNN row instead of the rank sort's n² comparisons. ``counts``: scratch of ≥ 2n + 1
    integers. Returns False (nothing done) where the keys are all equal or too close to scale."""
    lo = np.inf
    top = -np.inf
    for t in range(n):
        lo = min(lo, keys[t])
        top = max(top, keys[t])
    nb = 2 * n
    span = top - lo
    scale = nb / span if span > 0.0 else np.inf
    if not scale < 1e300:
        return False
    for b in range(nb + 1):
        counts[b] = 0
    for t in range(n):
        counts[int((keys[t] - lo) * scale)] += 1
    s = 0
    for b in range(nb + 1):
        c = counts[b]
        counts[b] = s
        s += c
    for t in range(n):
        b = int((keys[t] - lo) * scale)
        o = counts[b]
        counts[b] = o + 1
        skeys[o] = keys[t]
        sidx[o] = idx[t]
        spos[o] = pos[t]
    for t in range(n):
        k = skeys[t]
        i = sidx[t]
        p = spos[t]
        u = t
        while u > 0 and _before(k, i, keys[u - 1], idx[u - 1]):
            keys[u] = keys[u - 1]
            idx[u] = idx[u - 1]
            pos[u] = pos[u - 1]
            u -= 1
        keys[u] = k
        idx[u] = i
        pos[u] = p
    return True


#: Default objects per leaf of the reference set: with all leaves' box keys computed in vector registers and the
#: leaves within the bound listed without branches, small leaves (fewer objects scanned beyond the k_max-th key) pay
#: off: 8–24 cost about the same for N = 270–10⁴, k_max ≈ 100; the former max(8, √N) was 1.1–1.3× slower for
#: N ≥ 3,000 (benchmarks/leaf_query_kselect.py, LEAF_SIZE=...).
LEAF_SIZE = 16


@njit(cache=True)
def _kth_smallest(keys, n, k, work):  # pragma: no cover - numba
    """The k-th smallest (1-based) of keys[:n]: quickselect with branch-free out-of-place partitions (each key is
    written to both the "below" and the "above" row of ``work`` (3 × ≥ n) and each count advances by its
    comparison with the pivot, the median of three), the equal keys ending the search at once."""
    src = 2
    for t in range(n):
        work[src, t] = keys[t]
    while True:
        x = work[src, 0]
        y = work[src, n // 2]
        z = work[src, n - 1]
        if x > y:
            x, y = y, x
        if y > z:
            y = z
        pivot = max(x, y)
        below = 0 if src != 0 else 1
        above = 3 - src - below
        nb = 0
        na = 0
        for t in range(n):
            v = work[src, t]
            work[below, nb] = v
            nb += v < pivot
            work[above, na] = v
            na += v > pivot
        if k <= nb:
            src = below
            n = nb
        elif k <= n - na:
            return pivot
        else:
            k -= n - na
            src = above
            n = na


@njit(cache=True, inline="always")
def _box_keys(U, q, loT, hiT, metric, out):  # pragma: no cover - numba
    """out[l] = key from query row q to the nearest point of leaf l's box (boxes as attribute rows ``loT``,
    ``hiT``), in :func:`_pair_key`'s arithmetic: per attribute the difference to the clamped coordinate,
    min(u − lo, 0) + max(u − hi, 0) (one of the two is exactly 0: the value is u − lo, u − hi or 0, without a
    branch). A lower bound of every member's key (module docstring)."""
    n = loT.shape[1]
    for i in range(n):
        out[i] = 0.0
    for j in range(loT.shape[0]):
        u = U[q, j]
        if metric == 0:
            for i in range(n):
                t = min(u - loT[j, i], 0.0) + max(u - hiT[j, i], 0.0)
                out[i] += t * t
        elif metric == 1:
            for i in range(n):
                out[i] += abs(min(u - loT[j, i], 0.0) + max(u - hiT[j, i], 0.0))
        else:
            for i in range(n):
                out[i] = max(out[i], abs(min(u - loT[j, i], 0.0) + max(u - hiT[j, i], 0.0)))


@njit(cache=True, parallel=True)
def query_leaves(U, rows, out_rows, skip, Xp, pidx, starts, lo, hi, k_max, metric, cap, block,
                 out_keys, out_idx, out_cnt):  # pragma: no cover - numba
    """kNN (+ ties at the k_max-th key) of the query rows ``U[rows[r]]``, written to output row ``out_rows[r]``.

    ``Xp`` = the reference objects in leaf order (``X[pidx]``), leaf l = positions ``starts[l]:starts[l+1]`` with
    box ``lo[l]``..``hi[l]``; ``skip[r]``: the position of the object row r must not count (the query itself, for
    a graph of the reference objects), -1 for none. Output row o = ``out_rows[r]`` gets the keys and reference
    indices (``pidx`` of the positions) sorted by (key, index), at most ``cap`` (the outputs' width) of them,
    padded with +inf / -1, and ``out_cnt[o]`` = their true number (> cap: redo with a larger cap). ``rows``
    should follow the queries' k-d order (consecutive queries close together): each query starts from the
    previous query's k_max nearest objects; blocks of ``block`` rows run in parallel, each starting from the
    first k_max objects.

    Per query: a candidate buffer seeded with those k_max proposals, the bound the largest of their keys (the
    k_max-th smallest key of k_max real objects). Leaves whose box key exceeds the bound are skipped; every object
    of the other leaves is written to the buffer (key, position) and the count advances by (key ≤ bound, object
    not a proposal nor skipped) — no branch per object. When the count reaches ``limit`` (checked after each
    leaf), the k_max-th smallest buffered key becomes the bound (:func:`_kth_smallest`) and the buffer keeps the
    keys ≤ it (k_max or more, ties included). At the end one last selection gives the k_max-th key exactly (the
    buffer holds every object with a key ≤ it: an object not in it lies in a skipped leaf or had a key above an
    earlier, larger bound), and the buffered objects up to it are sorted. See the module docstring.
    """
    M = rows.shape[0]
    N = Xp.shape[0]
    n_leaves = starts.shape[0] - 1
    n_blocks = (M + block - 1) // block
    step = max(8, k_max)  # buffer growth between selections (the cost hardly depends on it: 0.25–4 k_max tried)
    d = Xp.shape[1]
    loT = np.empty((d, n_leaves))  # the boxes' attributes as rows: all box keys of a query in vector registers
    hiT = np.empty((d, n_leaves))
    for j in range(d):
        for leaf in range(n_leaves):
            loT[j, leaf] = lo[leaf, j]
            hiT[j, leaf] = hi[leaf, j]
    for b in prange(n_blocks):
        r0 = b * block
        r1 = min(M, r0 + block)
        proposal = np.arange(k_max)
        marked = np.zeros(N, np.bool_)
        cand_keys = np.empty(N + 1)
        cand_pos = np.empty(N + 1, np.int64)
        work = np.empty((3, N + 1))
        box = np.empty(n_leaves)
        todo = np.empty(n_leaves, np.int64)
        sel_keys = np.empty(N)
        sel_idx = np.empty(N, np.int64)
        sel_pos = np.empty(N, np.int64)
        tmp_keys = np.empty(N)
        tmp_idx = np.empty(N, np.int64)
        tmp_pos = np.empty(N, np.int64)
        counts = np.empty(2 * RANK_SORT_MAX + 1, np.int64)
        for r in range(r0, r1):
            q = rows[r]
            own = skip[r]
            for t in range(k_max):
                marked[proposal[t]] = True
            if own >= 0:
                for t in range(k_max):
                    if proposal[t] == own:
                        p = 0
                        while marked[p] or p == own:
                            p += 1
                        marked[p] = True
                        proposal[t] = p
                marked[own] = True
            bound = -np.inf
            for t in range(k_max):
                v = _pair_key(U, q, Xp, proposal[t], metric)
                cand_keys[t] = v
                cand_pos[t] = proposal[t]
                bound = max(bound, v)
            c = k_max
            limit = c + step  # after a selection: c + max(c, step), so that rows of massive ties select rarely
            _box_keys(U, q, loT, hiT, metric, box)
            n_todo = 0  # the leaves within the first bound, listed without a branch per leaf
            for leaf in range(n_leaves):
                todo[n_todo] = leaf
                n_todo += box[leaf] <= bound
            for t in range(n_todo):
                leaf = todo[t]
                if box[leaf] > bound:  # the bound has decreased since
                    continue
                for p in range(starts[leaf], starts[leaf + 1]):
                    v = _pair_key(U, q, Xp, p, metric)
                    cand_keys[c] = v
                    cand_pos[c] = p
                    c += (v <= bound) & (not marked[p])
                if c >= limit:
                    bound = _kth_smallest(cand_keys, c, k_max, work)
                    m = 0
                    for t in range(c):
                        v = cand_keys[t]
                        cand_keys[m] = v
                        cand_pos[m] = cand_pos[t]
                        m += v <= bound
                    c = m
                    limit = c + max(c, step)
            for t in range(k_max):
                marked[proposal[t]] = False
            if own >= 0:
                marked[own] = False
            if c > k_max:
                bound = _kth_smallest(cand_keys, c, k_max, work)
            m = 0
            for t in range(c):
                v = cand_keys[t]
                sel_keys[m] = v
                sel_pos[m] = cand_pos[t]
                sel_idx[m] = pidx[cand_pos[t]]
                m += v <= bound
            if m <= RANK_SORT_MAX:
                if m < BUCKET_SORT_MIN or not _bucket_sort(sel_keys, sel_idx, sel_pos, m, tmp_keys, tmp_idx,
                                                           tmp_pos, counts):
                    _rank_sort(sel_keys, sel_idx, sel_pos, m, tmp_keys, tmp_idx, tmp_pos)
            else:
                _sort_pairs(sel_keys, sel_idx, sel_pos, m, tmp_keys, tmp_idx, tmp_pos)
            o = out_rows[r]
            out_cnt[o] = m
            for t in range(min(m, cap)):
                out_keys[o, t] = sel_keys[t]
                out_idx[o, t] = sel_idx[t]
            for t in range(m, cap):
                out_keys[o, t] = np.inf
                out_idx[o, t] = -1
            for t in range(k_max):
                proposal[t] = sel_pos[t]


def leaf_index(X: np.ndarray, leaf_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(Xp, pidx, starts, lo, hi)`` of :func:`query_leaves` for the reference objects ``X``."""
    pidx, starts = kd_leaf_order(np.ascontiguousarray(X, dtype=np.float64), int(leaf_size))
    Xp = np.ascontiguousarray(X[pidx], dtype=np.float64)
    lo = np.ascontiguousarray(np.minimum.reduceat(Xp, starts[:-1], axis=0))
    hi = np.ascontiguousarray(np.maximum.reduceat(Xp, starts[:-1], axis=0))
    return Xp, pidx, starts, lo, hi


def _search(Q: np.ndarray, rows: np.ndarray, skip: np.ndarray, index: tuple, k_max: int, metric: int, block: int,
            n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Run :func:`query_leaves` for the query rows ``rows`` (output row = query row), then again, into wider
    outputs, for the rows with more tied neighbours than fit: ``(keys, indices)`` of width = the largest count.
    The outputs are allocated unfilled and written once (the kernel pads): with massive ties (a 5-attribute draw
    of mostly binary attributes: a few distinct points) a row holds thousands of neighbours."""
    cap = k_max + 8
    keys = np.empty((n_out, cap))
    idx = np.empty((n_out, cap), dtype=np.int64)
    cnt = np.zeros(n_out, dtype=np.int64)
    query_leaves(Q, rows, rows, skip, *index, int(k_max), int(metric), cap, int(block), keys, idx, cnt)
    width = int(cnt.max())
    if width <= cap:
        return np.ascontiguousarray(keys[:, :width]), np.ascontiguousarray(idx[:, :width])
    over = cnt > cap
    wide_keys = np.empty((n_out, width))
    wide_idx = np.empty((n_out, width), dtype=np.int64)
    wide_keys[~over, :cap] = keys[~over]
    wide_idx[~over, :cap] = idx[~over]
    wide_keys[~over, cap:] = np.inf
    wide_idx[~over, cap:] = -1
    del keys, idx
    redo = over[rows]  # massive ties: the same rows again with room for all of them
    query_leaves(Q, rows[redo], rows[redo], skip[redo], *index, int(k_max), int(metric), width, int(block), wide_keys,
                 wide_idx, cnt)
    return wide_keys, wide_idx


def query_knn_leaves(X: np.ndarray, U: np.ndarray, k_max: int, metric: int, *, leaf_size: int | None = None,
                     query_leaf_size: int = 8, block: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Keys and reference indices of the kNN (+ ties) of every row of ``U`` among the rows of ``X``: the
    ``(keys, indices)`` of :func:`odeval.neighbors.query_knn` (width = the largest row count, padded with
    +inf / -1), bit for bit. ``metric``: 0 squared Euclidean, 1 Manhattan, 2 Chebyshev keys."""
    n = X.shape[0]
    if not 1 <= k_max <= n:
        raise ValueError(f"k_max must lie in [1, {n}] for {n} reference objects, got {k_max}")
    if leaf_size is None:
        leaf_size = LEAF_SIZE
    index = leaf_index(X, leaf_size)
    Uc = np.ascontiguousarray(U, dtype=np.float64)
    rows, _ = kd_leaf_order(Uc, query_leaf_size)
    return _search(Uc, rows, np.full(rows.size, -1, dtype=np.int64), index, k_max, metric, block, Uc.shape[0])


def query_knn_leaves_bands(X: np.ndarray, U: np.ndarray, k_max: int, metric: int, *, leaf_size: int | None = None,
                           query_leaf_size: int = 8, block: int = 512
                           ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`query_knn_leaves` in bands of rows of similar width: ``[(rows, keys, indices), ...]``, each band's
    arrays as wide as its own largest count (rows sorted ascending within a band; every row of ``U`` in exactly
    one band). Rows with no more than k_max + 8 neighbours form the first band; the rows with more (massive ties:
    a draw of a few distinct points) follow in bands of counts up to 2×, 4×, ... that, so that a few rows of
    thousands of tied neighbours do not pad every other row to their width (the padded arrays were gigabytes).
    Each row is bit for bit the row of :func:`query_knn_leaves`."""
    n = X.shape[0]
    if not 1 <= k_max <= n:
        raise ValueError(f"k_max must lie in [1, {n}] for {n} reference objects, got {k_max}")
    if leaf_size is None:
        leaf_size = LEAF_SIZE
    index = leaf_index(X, leaf_size)
    Uc = np.ascontiguousarray(U, dtype=np.float64)
    m = Uc.shape[0]
    order, _ = kd_leaf_order(Uc, query_leaf_size)
    skip = np.full(m, -1, dtype=np.int64)
    cap = k_max + 8
    keys = np.empty((m, cap))
    idx = np.empty((m, cap), dtype=np.int64)
    cnt = np.zeros(m, dtype=np.int64)
    query_leaves(Uc, order, order, skip, *index, int(k_max), int(metric), cap, int(block), keys, idx, cnt)
    fits = cnt <= cap
    out = []
    if fits.all():
        w = int(cnt.max())
        return [(np.arange(m), np.ascontiguousarray(keys[:, :w]), np.ascontiguousarray(idx[:, :w]))]
    rows = np.flatnonzero(fits)
    if rows.size:
        w = int(cnt[rows].max())
        out.append((rows, np.ascontiguousarray(keys[rows, :w]), np.ascontiguousarray(idx[rows, :w])))
    del keys, idx
    over_order = order[~fits[order]]  # the wide rows, still in k-d order (coherent bounds)
    lower = cap
    while over_order.size:
        upper = 2 * lower
        in_band = cnt[over_order] <= upper
        band = over_order[in_band]
        over_order = over_order[~in_band]
        lower = upper
        if not band.size:
            continue
        w = int(cnt[band].max())
        local = np.arange(band.size, dtype=np.int64)
        bk = np.empty((band.size, w))
        bi = np.empty((band.size, w), dtype=np.int64)
        bc = np.zeros(band.size, dtype=np.int64)
        query_leaves(Uc, band, local, skip[:band.size], *index, int(k_max), int(metric), w, int(block), bk, bi, bc)
        srt = np.argsort(band, kind="stable")
        out.append((band[srt], bk[srt], bi[srt]))
    return out


def knn_graph_leaves(X: np.ndarray, k_max: int, metric: int, *, leaf_size: int | None = None,
                     block: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Keys and indices of the in-sample kNN graph of ``X`` (each object's k_max nearest *other* objects, ties
    included; a duplicate of the object counts, the object itself does not): the ``(keys, indices)`` rows of
    :func:`odeval.neighbors.knn_graph` bit for bit. The objects query their own leaves in k-d order, each
    skipping its own position."""
    n = X.shape[0]
    if not 1 <= k_max <= n - 1:
        raise ValueError(f"k_max must lie in [1, {n - 1}] for {n} objects, got {k_max}")
    if leaf_size is None:
        leaf_size = LEAF_SIZE
    index = leaf_index(X, leaf_size)
    # query row r is the object at leaf position r (the objects in their own k-d order), skipping that position
    return _search(np.ascontiguousarray(X, dtype=np.float64), index[1], np.arange(n, dtype=np.int64), index, k_max,
                   metric, block, n)
