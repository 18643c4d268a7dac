"""The leaf query of :mod:`odeval.neighbors._leaf_query` (candidate buffer with periodic selection) against brute
force: every row bit for bit, with massive ties and duplicates, k from 1 to N, any leaf and block size."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.neighbors._leaf_query import (
    _bucket_sort,
    _kth_smallest,
    knn_graph_leaves,
    query_knn_leaves,
    query_knn_leaves_bands,
)


def _keys(U: np.ndarray, X: np.ndarray, metric: int) -> np.ndarray:
    """All keys of U's rows to X's rows in :func:`odeval.neighbors._kernels._pair_key`'s operations and order."""
    s = np.zeros((U.shape[0], X.shape[0]))
    for j in range(U.shape[1]):
        t = U[:, j][:, None] - X[:, j][None, :]
        if metric == 0:
            s += t * t
        elif metric == 1:
            s += np.abs(t)
        else:
            s = np.maximum(s, np.abs(t))
    return s


def _brute_rows(S: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Every column with a key ≤ the row's k-th smallest, sorted by (key, index), padded with +inf / -1 to the
    widest row (a skipped object has key +inf in S)."""
    kth = np.sort(S, axis=1)[:, k - 1]
    rows = []
    for i in range(S.shape[0]):
        idx = np.flatnonzero(S[i] <= kth[i])
        idx = idx[np.lexsort((idx, S[i, idx]))]
        rows.append(idx)
    w = max(r.size for r in rows)
    keys = np.full((S.shape[0], w), np.inf)
    out = np.full((S.shape[0], w), -1, dtype=np.int64)
    for i, idx in enumerate(rows):
        keys[i, :idx.size] = S[i, idx]
        out[i, :idx.size] = idx
    return keys, out


def _data(kind: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    if kind == "grid":  # 27 locations, ≈ 2 copies each; queries on the grid, half-way and anywhere: ties galore
        X = rng.integers(0, 3, size=(60, 3)).astype(float)
        U = np.vstack([rng.integers(0, 3, size=(40, 3)), rng.integers(0, 5, size=(40, 3)) / 2,
                       rng.uniform(-1, 3, size=(40, 3))])
    elif kind == "identical":  # one location: every row holds all N objects (beyond the first width: the redo)
        X = np.full((24, 2), 0.5)
        U = np.vstack([X[:3], rng.uniform(0, 1, size=(30, 2))])
    elif kind == "two-points":  # two locations, many copies: rows of hundreds of ties (merge sort, bands)
        X = rng.integers(0, 2, size=(300, 1)).astype(float).repeat(2, axis=1)
        U = np.vstack([X[:4], rng.uniform(-0.5, 1.5, size=(40, 2))])
    else:  # "small": fewer objects than a leaf holds
        X = rng.normal(size=(7, 4))
        X[3] = X[5]
        U = np.vstack([X, rng.normal(size=(30, 4))])
    return np.ascontiguousarray(X), np.ascontiguousarray(U)


def test_kth_smallest_equals_sort():
    rng = np.random.default_rng(0)
    work = np.empty((3, 400))
    for trial in range(300):
        n = int(rng.integers(1, 400))
        a = rng.integers(0, max(1, trial % 20), size=n).astype(float) if trial % 2 else rng.normal(size=n)
        ref = np.sort(a)
        for k in {1, n, int(rng.integers(1, n + 1))}:
            assert _kth_smallest(a, n, k, work) == ref[k - 1]


@pytest.mark.parametrize("kind", ["grid", "identical", "two-points", "small"])
def test_query_rows_equal_brute_force(kind):
    """query_knn_leaves and its bands return brute force's rows bit for bit for every k from 1 to N, every
    metric, leaf sizes from 1 to more than N, blocks of 1 query to all."""
    X, U = _data(kind)
    n = X.shape[0]
    ks = range(1, n + 1) if n <= 60 else (1, 2, 3, 50, 149, 150, 151, 299, 300)
    for metric in (0, 1, 2):
        S = _keys(U, X, metric)
        for k in ks:
            ref_keys, ref_idx = _brute_rows(S, k)
            for leaf_size, block in ((None, 512), (1, 1), (5, 7), (1000, 3)):
                keys, idx = query_knn_leaves(X, U, k, metric, leaf_size=leaf_size, block=block)
                np.testing.assert_array_equal(keys, ref_keys)
                np.testing.assert_array_equal(idx, ref_idx)
            rows_seen = []
            for rows, bkeys, bidx in query_knn_leaves_bands(X, U, k, metric, leaf_size=3, block=5):
                w = bkeys.shape[1]
                np.testing.assert_array_equal(bkeys, ref_keys[rows, :w])
                np.testing.assert_array_equal(bidx, ref_idx[rows, :w])
                assert (ref_idx[rows, w:] == -1).all()
                rows_seen.append(rows)
            assert np.array_equal(np.sort(np.concatenate(rows_seen)), np.arange(U.shape[0]))


@pytest.mark.parametrize("kind", ["grid", "identical", "two-points", "small"])
def test_graph_rows_equal_brute_force(kind):
    """knn_graph_leaves: each object's k nearest other objects (+ ties; duplicates count, itself not) as brute
    force, for every k from 1 to N − 1."""
    X, _ = _data(kind)
    n = X.shape[0]
    ks = range(1, n) if n <= 60 else (1, 2, 149, 150, 151, 298, 299)
    for metric in (0, 1, 2):
        S = _keys(X, X, metric)
        np.fill_diagonal(S, np.inf)
        for k in ks:
            ref_keys, ref_idx = _brute_rows(S, k)
            for leaf_size, block in ((None, 512), (1, 1), (1000, 4)):
                keys, idx = knn_graph_leaves(X, k, metric, leaf_size=leaf_size, block=block)
                np.testing.assert_array_equal(keys, ref_keys)
                np.testing.assert_array_equal(idx, ref_idx)


@pytest.mark.parametrize("case", ["spread", "ties", "narrow", "one-far", "equal", "subnormal"])
def test_bucket_sort_orders_by_key_then_index(case):
    """The rows' bucket sort gives the (key, index) order exactly, ties by index included; where the keys are all
    equal or too close to scale it declines (the rank sort then sorts the row)."""
    rng = np.random.default_rng(7)
    n = 120
    keys = {"spread": rng.random(n), "ties": rng.integers(0, 6, n) / 5.0,
            "narrow": 1.0 + rng.integers(0, 1000, n) * 1e-15, "one-far": np.r_[rng.random(n - 1) * 1e-9, 1e9],
            "equal": np.full(n, 0.25), "subnormal": rng.integers(0, 3, n) * 5e-324}[case]
    idx = rng.permutation(10 * n)[:n].astype(np.int64)
    pos = np.arange(n, dtype=np.int64)
    k, i, p = keys.copy(), idx.copy(), pos.copy()
    done = _bucket_sort(k, i, p, n, np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64),
                        np.empty(2 * n + 1, np.int64))
    if case in ("equal", "subnormal"):
        assert not done and np.array_equal(k, keys) and np.array_equal(i, idx)
        return
    order = np.lexsort((idx, keys))
    assert done
    np.testing.assert_array_equal(k, keys[order])
    np.testing.assert_array_equal(i, idx[order])
    np.testing.assert_array_equal(p, pos[order])
