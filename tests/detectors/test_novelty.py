"""Novelty mode: odeval methods scoring query objects against a training graph (docs/detectors.md)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.neighbors import LocalOutlierFactor

from odeval.detectors import NoveltyDetector, get_detector, novelty_methods
from odeval.neighbors import in_degree, knn_graph, query_knn


def _data(kind: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "grid":  # ties and exact duplicates, plus isolated objects (nobody's neighbours)
        far = [[12.0, 12.0], [-9.0, 3.0], [13.0, -8.0], [2.0, 19.0]]
        return np.vstack((rng.integers(0, 5, size=(70, 2)).astype(float), far))
    return np.vstack((rng.normal(size=(60, 3)), rng.normal(4.0, 0.5, size=(6, 3))))


def _loo(X: np.ndarray, i: int, method: str, k: int) -> float:
    """Novelty score of X[i] against X without it."""
    rest = np.delete(X, i, axis=0)
    g = knn_graph(rest, k)
    return float(get_detector(method).novelty_scores_all_k(g, query_knn(g, X[i:i + 1], k), [k])[0, 0])


@pytest.mark.parametrize("method", ["kNN", "kNNW"])
@pytest.mark.parametrize("kind", ["grid", "normal"])
def test_knn_leave_one_out_equals_in_sample(method, kind):
    """kNN/kNNW of x against X \\ {x} == in-sample score of x in X, for every x (ties, duplicates included)."""
    X = _data(kind)
    for k in (1, 3, 6):
        ins = get_detector(method).score(X, k)
        idx = range(0, X.shape[0], 3)
        np.testing.assert_array_equal([_loo(X, i, method, k) for i in idx], ins[list(idx)])


@pytest.mark.parametrize("method", ["kNN", "kNNW"])
def test_training_object_is_its_own_neighbour(method):
    """Querying X against itself: x finds itself at distance 0, so novelty at k = in-sample at k − 1."""
    X = _data("normal")
    g = knn_graph(X, 6)
    q = query_knn(g, X, 7)
    nov = get_detector(method).novelty_scores_all_k(g, q, [2, 4, 7])
    ins = get_detector(method).score_all_k(g, [1, 3, 6])
    np.testing.assert_array_equal(nov, ins)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_ldof_leave_one_out_equals_in_sample(metric):
    """LDOF depends only on N_k(x) and the distances among its members: x against X \\ {x} equals x in X."""
    X = _data("grid", 2)
    for k in (2, 5):
        ins = get_detector("LDOF").score(X, k, metric=metric)
        for i in range(0, X.shape[0], 5):
            rest = np.delete(X, i, axis=0)
            g = knn_graph(rest, k, metric=metric)
            nov = get_detector("LDOF").novelty_scores_all_k(g, query_knn(g, X[i:i + 1], k), [k])[0, 0]
            assert nov == ins[i]


@pytest.mark.parametrize("method", ["LOF", "SimplifiedLOF"])
@pytest.mark.parametrize("kind", ["grid", "normal"])
def test_lof_leave_one_out_equals_in_sample_when_nobody_has_x_as_neighbour(method, kind):
    """If x is in no object's N_k (reverse-kNN count 0), removing x changes no other neighbourhood, k-distance or
    density: LOF of x against X \\ {x} equals x's in-sample LOF in X (exactly)."""
    X = _data(kind, 1)
    checked = 0
    for k in (2, 4):
        g = knn_graph(X, k)
        ins = get_detector(method).score_all_k(g, [k])[0]
        for i in np.flatnonzero(in_degree(g, k) == 0):
            assert _loo(X, int(i), method, k) == pytest.approx(ins[i], rel=1e-13, abs=0)
            checked += 1
    assert checked >= 3


@pytest.mark.parametrize("k", [1, 5, 20])
def test_lof_novelty_matches_scikit_learn(k):
    rng = np.random.default_rng(3)
    X, Q = rng.normal(size=(200, 4)), rng.normal(scale=1.5, size=(60, 4))
    ours = NoveltyDetector("LOF", k).fit(X).score(Q)
    ref = -LocalOutlierFactor(n_neighbors=k, novelty=True).fit(X).score_samples(Q)
    np.testing.assert_allclose(ours, ref, rtol=1e-8)  # scikit-learn adds 1e-10 to the reach-distance means


def test_loop_novelty_uses_training_normaliser():
    X = _data("normal", 2)
    det = NoveltyDetector("LoOP", 5).fit(X[:60])
    s = det.score(np.vstack((X[:60].mean(axis=0), [20.0, 20.0, 20.0])))
    assert 0.0 <= s[0] < 0.2 and s[1] > 0.99
    # a query at the same place as an in-degree-0 training object has that object's in-sample PLOF ratio
    g = knn_graph(X, 5)
    assert np.all((det.score(X) >= 0) & (det.score(X) <= 1))
    assert g.n_objects == X.shape[0]


def test_methods_without_novelty_form_raise_clearly():
    assert {"kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF"} <= set(novelty_methods())
    with pytest.raises(ValueError, match="COF has no novelty"):
        NoveltyDetector("COF", 5)
    g = knn_graph(_data("normal"), 3)
    with pytest.raises(NotImplementedError, match="no novelty"):
        get_detector("ODIN").novelty_scores_all_k(g, query_knn(g, np.zeros((1, 3))), [3])
    with pytest.raises(NotImplementedError, match=r"elki-0\.7\.1-cks"):
        get_detector("LOF", variant="elki-0.7.1-cks").novelty_scores_all_k(g, query_knn(g, np.zeros((1, 3))), [2])
    with pytest.raises(RuntimeError, match="fit"):
        NoveltyDetector("kNN", 3).score(np.zeros((1, 3)))


@pytest.mark.parametrize("table", [True, False])
@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
def test_ldof_novelty_kernel_equals_dense_blocks(metric, table, monkeypatch):
    """The novelty LDOF kernel (member distances looked up in an (N, N) table, or computed per pair) gives the
    values of the dense-block path bit for bit, ties, duplicates and +inf included (EM/MV's cost fix)."""
    from odeval.detectors import ldof

    if not table:
        monkeypatch.setattr(ldof, "_NOVELTY_TABLE_ENTRIES", 0)
    rng = np.random.default_rng(1)
    X = np.round(rng.random((150, 5)) * 4) / 4
    X[:10] = X[0]
    Q = np.vstack([rng.random((800, 5)), X[:20], np.round(rng.random((300, 5)) * 4) / 4])
    g = knn_graph(X, 60, metric=metric)
    q = query_knn(g, Q, 60)
    det = get_detector("LDOF")
    ks = [2, 5, 17, 60, 5]
    new = det.novelty_raw_scores_all_k(g, q, ks)
    uniq, inverse = np.unique(ks, return_inverse=True)
    old = det._novelty_blocks(g, q, np.ascontiguousarray(q.neighborhood_sizes()[:, uniq - 1].T))[inverse]
    assert np.isinf(new).any()
    np.testing.assert_array_equal(new, old)


def test_ldof_novelty_rows_of_duplicates():
    """Novelty LDOF on a draw of few distinct points (issue 26): rows of many duplicates sum by location,
    within the pairwise sums' rounding of them (5e-12 relative; other rows bit for bit); a training object
    queried against the others still equals its in-sample score bit for bit, and blockwise in-sample scores equal
    the whole graph's."""
    from odeval.detectors import ldof
    from odeval.detectors.blockwise import block_raw_scores
    from odeval.neighbors.blocks import block_bounds, knn_block

    rng = np.random.default_rng(5)
    cube = np.array([[a, b, c] for a in (0.0, 1.0) for b in (0.0, 1.0) for c in (0.0, 1.0)])
    X = np.vstack([np.repeat(cube[:5], [250, 120, 60, 30, 2], axis=0), rng.random((20, 3))])
    Q = np.vstack([rng.random((400, 3)) * 1.2 - 0.1, cube, X[:30]])
    g = knn_graph(X, 120)
    q = query_knn(g, Q, 120)
    det = get_detector("LDOF")
    ks = [2, 30, 120]
    new = det.novelty_raw_scores_all_k(g, q, ks)
    uniq, inverse = np.unique(ks, return_inverse=True)
    sizes = np.ascontiguousarray(q.neighborhood_sizes()[:, uniq - 1].T)
    old = det._novelty_blocks(g, q, sizes)[inverse]
    loc = ldof._location_ids(g.X)
    fast = np.array([ldof._by_location(q.indices[c], sizes[-1, c], loc).size > 0 for c in range(q.n_queries)])
    assert 0 < fast.sum() < q.n_queries
    np.testing.assert_array_equal(new[:, ~fast], old[:, ~fast])
    np.testing.assert_array_equal(np.isinf(new), np.isinf(old))
    np.testing.assert_allclose(new, old, rtol=5e-12, atol=0)
    ins = det.score(X, 60)
    for i in (0, 300, 400, 455, X.shape[0] - 1):
        rest = np.delete(X, i, axis=0)
        gr = knn_graph(rest, 60)
        assert det.novelty_scores_all_k(gr, query_knn(gr, X[i:i + 1], 60), [60])[0, 0] == ins[i]
    blks = [knn_block(X, a, b, 120) for a, b in block_bounds(len(X), 3)]
    np.testing.assert_array_equal(block_raw_scores(det, blks, np.array(ks)), det.raw_scores_all_k(g, ks))


@pytest.mark.parametrize("d", [1, 3, 4, 6, 9])
def test_ldof_novelty_per_pair_any_dimension(d, monkeypatch):
    """Without the (N, N) table, Euclidean novelty LDOF computes each member distance per pair: the dense-block
    values bit for bit in every dimension."""
    from odeval.detectors import ldof

    monkeypatch.setattr(ldof, "_NOVELTY_TABLE_ENTRIES", 0)
    rng = np.random.default_rng(d)
    X = np.round(rng.random((120, d)) * 8) / 8 + rng.random((120, d)) * 1e-3
    Q = rng.random((300, d))
    g = knn_graph(X, 40)
    q = query_knn(g, Q, 40)
    det = get_detector("LDOF")
    new = det.novelty_raw_scores_all_k(g, q, [2, 9, 40])
    old = det._novelty_blocks(g, q, np.ascontiguousarray(q.neighborhood_sizes()[:, [1, 8, 39]].T))
    np.testing.assert_array_equal(new, old)
