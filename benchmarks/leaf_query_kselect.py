"""The leaf query's per-point search before and after 2026-11-27: the max-heap kernel (``heap_query_leaves``
below, a copy of ``odeval.neighbors._leaf_query.query_leaves`` at 81d0ba5, with that version's default leaf size
max(8, √N)) against today's candidate buffer with periodic selection (``odeval.neighbors._leaf_query.query_leaves``,
leaf size ``LEAF_SIZE``): CPU seconds and equality of the outputs.

Per case: 5 attributes of a Campos variant, 20,000 uniform points in the data's bounding box (seed 0) queried for
their k_max nearest objects (+ ties), squared Euclidean keys, the query order of
:func:`odeval.neighbors._leaf_query.query_knn_leaves_bands` (its first call, width k_max + 8); "graph" rows: the
in-sample graph of :func:`odeval.neighbors._leaf_query.knn_graph_leaves` (the objects as queries, each skipping
itself). Each kernel runs 5 times on one thread; the minimum of ``time.process_time()`` is printed, with the rank
sort of the rows alone (the last step, the same in both; timed on copies of the rows: 0.038 s for Shuttle at k = 90,
where a copy of the kernel without the sort gave 0.022–0.034 s less, so "gain without sort" may overestimate the
search's gain; "gain", of the whole kernel, is a lower bound) and the load average (the machine may be shared).
The outputs (keys, indices, counts of every row) must be identical.

    NUMBA_NUM_THREADS=1 python benchmarks/leaf_query_kselect.py      # LEAF_SIZE=n: the buffer kernel's leaf size
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import numpy as np
from numba import njit, prange

from odeval.neighbors._kernels import _pair_key, _sift_down
from odeval.neighbors._leaf_query import RANK_SORT_MAX, _rank_sort, _sort_pairs

ROOT = Path(__file__).resolve().parents[1]
DAMI = Path(os.environ.get("ODEVAL_SHARED_DATASETS", ROOT.parent / "shared" / "datasets")) / "dami"
CASES = [  # (name, file, columns, k_max)
    ("Shuttle v01 k=90", "Shuttle/Shuttle_withoutdupl_norm_v01.arff", [0, 2, 4, 6, 8], 90),
    ("Shuttle v01 k=30", "Shuttle/Shuttle_withoutdupl_norm_v01.arff", [0, 2, 4, 6, 8], 30),
    ("Shuttle v01 k=5", "Shuttle/Shuttle_withoutdupl_norm_v01.arff", [0, 2, 4, 6, 8], 5),
    ("HeartDisease 44 k=98", "HeartDisease/HeartDisease_withoutdupl_norm_44.arff", [0, 3, 4, 7, 9], 98),
    ("HeartDisease 44 binary k=98", "HeartDisease/HeartDisease_withoutdupl_norm_44.arff", [1, 5, 8, 0, 3], 98),
    ("Annthyroid 07 k=100", "Annthyroid/Annthyroid_withoutdupl_norm_07.arff", [16, 17, 18, 19, 20], 100),
    ("Annthyroid 07 4 binary k=100", "Annthyroid/Annthyroid_withoutdupl_norm_07.arff", [1, 2, 3, 4, 16], 100),
    ("Annthyroid 07 5 binary k=100", "Annthyroid/Annthyroid_withoutdupl_norm_07.arff", [1, 2, 3, 4, 5], 100),
    ("Hepatitis 16 (N=80) k=74", "Hepatitis/Hepatitis_withoutdupl_norm_16.arff", [0, 13, 14, 15, 16], 74),
    ("Waveform v01 k=100", "Waveform/Waveform_withoutdupl_norm_v01.arff", [0, 5, 10, 15, 20], 100),
    ("PenDigits v01 k=100", "PenDigits/PenDigits_withoutdupl_norm_v01.arff", [0, 3, 6, 9, 12], 100),
    ("graph: Shuttle v01 k=90", "Shuttle/Shuttle_withoutdupl_norm_v01.arff", [0, 2, 4, 6, 8], 90),
    ("graph: PenDigits v01 k=100", "PenDigits/PenDigits_withoutdupl_norm_v01.arff", [0, 3, 6, 9, 12], 100),
]
M = 20_000
REPEATS = int(os.environ.get("REPEATS", "5"))
LEAF_SIZE = int(os.environ.get("LEAF_SIZE", "0"))  # 0: odeval.neighbors._leaf_query.LEAF_SIZE


@njit(cache=True, inline="always")
def _box_key(U, q, lo, hi, leaf, metric):  # pragma: no cover - numba
    """Key from query row q to the nearest point of leaf ``leaf``'s box, in :func:`_pair_key`'s arithmetic
    (per attribute the difference to the clamped coordinate; a lower bound of every member's key)."""
    s = 0.0
    for j in range(U.shape[1]):
        u = U[q, j]
        if u < lo[leaf, j]:
            t = u - lo[leaf, j]
        elif u > hi[leaf, j]:
            t = u - hi[leaf, j]
        else:
            t = 0.0
        if metric == 0:
            s += t * t
        elif metric == 1:
            s += abs(t)
        elif abs(t) > s:
            s = abs(t)
    return s


@njit(cache=True, parallel=True)
def heap_query_leaves(U, rows, out_rows, skip, Xp, pidx, starts, lo, hi, k_max, metric, cap, block,
                      out_keys, out_idx, out_cnt):  # pragma: no cover - numba
    """The kernel before 2026-11-27 (odeval.neighbors._leaf_query.query_leaves at 81d0ba5), same arguments and
    outputs: a max-heap of the k_max smallest keys seen, a sift-down per object with a key below its top."""
    M = rows.shape[0]
    N = Xp.shape[0]
    n_leaves = starts.shape[0] - 1
    n_blocks = (M + block - 1) // block
    for b in prange(n_blocks):
        r0 = b * block
        r1 = min(M, r0 + block)
        proposal = np.arange(k_max)  # positions (in Xp) of the k_max objects the bound starts from
        marked = np.zeros(N, np.bool_)  # the proposals (and the skipped object): not scanned again
        heap = np.empty(k_max)
        prop_keys = np.empty(k_max)
        cand_keys = np.empty(N)
        cand_pos = np.empty(N, np.int64)
        sel_keys = np.empty(N)
        sel_idx = np.empty(N, np.int64)
        sel_pos = np.empty(N, np.int64)
        tmp_keys = np.empty(N)
        tmp_idx = np.empty(N, np.int64)
        tmp_pos = np.empty(N, np.int64)
        for r in range(r0, r1):
            q = rows[r]
            own = skip[r]
            for t in range(k_max):
                marked[proposal[t]] = True
            if own >= 0:
                for t in range(k_max):
                    if proposal[t] == own:  # any other object will do: the bound only needs k_max real ones
                        p = 0
                        while marked[p] or p == own:
                            p += 1
                        marked[p] = True
                        proposal[t] = p
                marked[own] = True
            for t in range(k_max):
                v = _pair_key(U, q, Xp, proposal[t], metric)
                prop_keys[t] = v
                heap[t] = v
            for t in range(k_max // 2 - 1, -1, -1):
                _sift_down(heap, k_max, t)
            top = heap[0]
            c = 0
            for leaf in range(n_leaves):
                if _box_key(U, q, lo, hi, leaf, metric) > top:
                    continue
                for p in range(starts[leaf], starts[leaf + 1]):
                    if marked[p]:
                        continue
                    v = _pair_key(U, q, Xp, p, metric)
                    if v <= top:
                        cand_keys[c] = v
                        cand_pos[c] = p
                        c += 1
                        if v < top:
                            heap[0] = v
                            _sift_down(heap, k_max, 0)
                            top = heap[0]
            for t in range(k_max):
                cand_keys[c] = prop_keys[t]
                cand_pos[c] = proposal[t]
                c += 1
                marked[proposal[t]] = False
            if own >= 0:
                marked[own] = False
            m = 0
            for t in range(c):
                if cand_keys[t] <= top:
                    sel_keys[m] = cand_keys[t]
                    sel_pos[m] = cand_pos[t]
                    sel_idx[m] = pidx[cand_pos[t]]
                    m += 1
            if m <= RANK_SORT_MAX:
                _rank_sort(sel_keys, sel_idx, sel_pos, m, tmp_keys, tmp_idx, tmp_pos)
            else:
                _sort_pairs(sel_keys, sel_idx, sel_pos, m, tmp_keys, tmp_idx, tmp_pos)
            o = out_rows[r]
            out_cnt[o] = m
            for t in range(min(m, cap)):
                out_keys[o, t] = sel_keys[t]
                out_idx[o, t] = sel_idx[t]
            for t in range(m, cap):  # the padding: the caller allocates without filling (rows can be thousands wide)
                out_keys[o, t] = np.inf
                out_idx[o, t] = -1
            for t in range(k_max):
                proposal[t] = sel_pos[t]


@njit(cache=True)
def _sort_rows(keys, idx, n):  # pragma: no cover - numba
    """The rank sort of every output row (the kernels' shared last step), for its cost alone."""
    w = keys.shape[1]
    k = np.empty(w)
    i = np.empty(w, np.int64)
    p = np.empty(w, np.int64)
    sk = np.empty(w)
    si = np.empty(w, np.int64)
    sp = np.empty(w, np.int64)
    total = 0.0
    for r in range(keys.shape[0]):
        m = n[r]
        for t in range(m):
            k[t] = keys[r, m - 1 - t]
            i[t] = idx[r, m - 1 - t]
            p[t] = t
        _rank_sort(k, i, p, m, sk, si, sp)
        total += k[0]
    return total


def best_of(fn, *args) -> float:
    out = []
    for _ in range(REPEATS):
        t0 = time.process_time()
        fn(*args)
        out.append(time.process_time() - t0)
    return min(out)


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    from odeval.data import load_dataset
    from odeval.neighbors import _leaf_query
    from odeval.neighbors._leaf_query import kd_leaf_order, leaf_index, query_leaves

    buffer_leaf = LEAF_SIZE or _leaf_query.LEAF_SIZE
    print(f"# {uptime()}")
    print(f"# leaf size: heap max(8, √N), buffer {buffer_leaf}; CPU s, best of {REPEATS}, one thread")
    print("| case | N | k | heap s | buffer s | gain | sort s | heap − sort | buffer − sort | gain without sort | "
          "identical |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for name, file, cols, k_max in CASES:
        path = DAMI / file
        if not path.exists():
            print(f"| {name} | missing {path} |")
            continue
        X = np.ascontiguousarray(load_dataset(str(path)).numeric_matrix()[:, cols], dtype=np.float64)
        n = X.shape[0]
        cap = k_max + 8
        res = {}
        for kern, size in ((heap_query_leaves, max(8, int(np.sqrt(n)))), (query_leaves, buffer_leaf)):
            index = leaf_index(X, size)
            if name.startswith("graph"):  # knn_graph_leaves: the objects in their own k-d order, each skipping itself
                U, order, skip = X, index[1], np.arange(n, dtype=np.int64)
            else:
                rng = np.random.default_rng(0)
                U = np.ascontiguousarray(rng.uniform(X.min(0), X.max(0), size=(M, X.shape[1])))
                order, _ = kd_leaf_order(U, 8)
                skip = np.full(M, -1, dtype=np.int64)
            m = U.shape[0]
            keys = np.empty((m, cap))
            idx = np.empty((m, cap), dtype=np.int64)
            cnt = np.zeros(m, dtype=np.int64)
            args = (U, order, order, skip, *index, k_max, 0, cap, 512, keys, idx, cnt)
            kern(*args)  # compile / warm
            res[kern is query_leaves] = (best_of(kern, *args), keys.copy(), idx.copy(), cnt.copy())
        heap_s, k0, i0, c0 = res[False]
        buf_s, k1, i1, c1 = res[True]
        same = np.array_equal(k0, k1) and np.array_equal(i0, i1) and np.array_equal(c0, c1)
        n_sort = np.minimum(c0, cap)
        _sort_rows(k0, i0, n_sort)
        sort_s = best_of(_sort_rows, k0, i0, n_sort)
        gain = (heap_s - sort_s) / max(buf_s - sort_s, 1e-9)
        print(f"| {name} | {n} | {k_max} | {heap_s:.4f} | {buf_s:.4f} | {heap_s / buf_s:.2f}× | {sort_s:.4f} | "
              f"{heap_s - sort_s:.4f} | {buf_s - sort_s:.4f} | {gain:.2f}× | {same} |", flush=True)
    print(f"# {uptime()}")


if __name__ == "__main__":
    main()
