"""KNNGraph against a brute-force reference: ties, duplicates, lattices, metrics, chunking."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from odeval.neighbors import in_degree, in_degrees_all_k, knn_graph, reverse_neighbors


def _keys_ref(X, metric, **kw):
    if metric == "euclidean":  # squared distances from differences, summed in attribute order
        D = np.zeros((len(X), len(X)))
        for j in range(X.shape[1]):
            t = X[:, None, j] - X[None, :, j]
            D += t * t
        return D
    return cdist(X, X, metric=metric, **kw)


def _reference(X, k_max, metric="euclidean", **kw):
    """Obviously-correct kNN lists: sort all others by (key, index), keep all with key ≤ the k_max-th."""
    K = _keys_ref(X, metric, **kw)
    rows = []
    for p in range(len(X)):
        others = np.array([q for q in range(len(X)) if q != p])
        order = np.lexsort((others, K[p, others]))
        ks = K[p, others][order]
        keep = ks <= ks[k_max - 1]
        rows.append((others[order][keep], ks[keep]))
    return rows, K


def _check(graph, X, k_max, metric="euclidean", **kw):
    rows, K = _reference(X, k_max, metric, **kw)
    W = max(len(r[0]) for r in rows)
    assert graph.distances.shape == (len(X), W)
    assert graph.indices.shape == (len(X), W)
    for p, (idx, keys) in enumerate(rows):
        n = len(idx)
        np.testing.assert_array_equal(graph.indices[p, :n], idx)
        dist = np.sqrt(keys) if metric == "euclidean" else keys
        np.testing.assert_array_equal(graph.distances[p, :n], dist)
        assert np.all(graph.indices[p, n:] == -1)
        assert np.all(np.isposinf(graph.distances[p, n:]))
        for k in range(1, k_max + 1):
            kth = keys[k - 1]
            assert graph.neighborhood_size(k)[p] == np.sum(K[p, np.arange(len(X)) != p] <= kth)
            assert graph.kdist(k)[p] == dist[k - 1]


@pytest.fixture
def rng():
    return np.random.default_rng(42)


def test_random_data_matches_brute_force(rng):
    X = rng.normal(size=(120, 4))
    g = knn_graph(X, 15)
    _check(g, X, 15)
    assert g.k_max == 15 and g.n_objects == 120 and g.metric == "euclidean"
    assert g.indices.dtype == np.int64 and g.distances.dtype == np.float64


def test_exact_duplicates_are_neighbours_at_zero(rng):
    X = rng.normal(size=(80, 3))
    X[10:25] = X[3]  # 16 copies of one point
    X[40:43] = X[41]
    g = knn_graph(X, 20)
    _check(g, X, 20)
    # a copy's 15 other copies come first at exactly 0
    assert np.all(g.distances[3, :15] == 0.0) and g.distances[3, 15] > 0
    assert 3 not in g.indices[3]
    # everybody tied at the k-distance of the duplicated group is included
    assert g.neighborhood_size(1)[3] == 15


@pytest.mark.parametrize("k_max", [1, 3, 10])
def test_integer_lattice_massive_ties(rng, k_max):
    X = rng.integers(0, 4, size=(150, 2)).astype(float)
    g = knn_graph(X, k_max)
    _check(g, X, k_max)
    assert g.distances.shape[1] > k_max  # ties widened the graph


def test_lattice_without_duplicates_ties():
    xs, ys = np.meshgrid(np.arange(9.0), np.arange(7.0))
    X = np.column_stack([xs.ravel(), ys.ravel()])
    g = knn_graph(X, 4)
    _check(g, X, 4)
    interior = 1 * 9 + 1
    assert g.neighborhood_size(1)[interior] == 4
    assert g.neighborhood_size(4)[interior] == 4
    assert g.neighborhood_size(1)[0] == 2  # corner


@pytest.mark.parametrize("metric,kw", [("manhattan", {}), ("chebyshev", {}), ("cosine", {}),
                                       ("minkowski", {"p": 3}), ("canberra", {}), ("braycurtis", {})])
def test_metrics_match_brute_force(rng, metric, kw):
    X = rng.uniform(0.1, 1, size=(70, 3))
    X[5:9] = X[2]
    g = knn_graph(X, 8, metric=metric, **kw)
    scipy_name = {"manhattan": "cityblock"}.get(metric, metric)
    _check(g, X, 8, scipy_name, **kw)
    a = np.array([0, 1, 2, 2])
    b = np.array([1, 0, 5, 60])
    np.testing.assert_allclose(g.distance_between(a, b), cdist(X, X, scipy_name, **kw)[a, b], rtol=1e-14)


def test_integer_lattice_manhattan_chebyshev(rng):
    X = rng.integers(0, 5, size=(100, 3)).astype(float)
    for metric, name in (("manhattan", "cityblock"), ("chebyshev", "chebyshev")):
        _check(knn_graph(X, 6, metric=metric), X, 6, name)


def test_minkowski_aliases():
    X = np.arange(20.0).reshape(10, 2) ** 1.5
    assert knn_graph(X, 3, metric="minkowski", p=2).metric == "euclidean"
    assert knn_graph(X, 3, metric="minkowski", p=1).metric == "cityblock"
    assert knn_graph(X, 3, metric="minkowski", p=np.inf).metric == "chebyshev"
    assert knn_graph(X, 3, metric="l2").metric == "euclidean"


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_chunking_does_not_change_the_result(rng, chunk, metric):
    X = rng.integers(0, 3, size=(131, 3)).astype(float) + rng.integers(0, 2, size=(131, 3)) * 0.5 + 0.1
    ref = knn_graph(X, 9, metric=metric)
    g = knn_graph(X, 9, metric=metric, chunk_size=chunk)
    np.testing.assert_array_equal(g.indices, ref.indices)
    np.testing.assert_array_equal(g.distances, ref.distances)


def test_k_max_n_minus_one_gives_everything(rng):
    X = rng.normal(size=(12, 2))
    g = knn_graph(X, 11)
    _check(g, X, 11)
    assert g.distances.shape == (12, 11)


def test_distance_between_matches_graph_arithmetic(rng):
    X = rng.normal(size=(60, 5)) * 1e3
    g = knn_graph(X, 5)
    p = np.repeat(np.arange(60), 5)
    np.testing.assert_array_equal(g.distance_between(p, g.indices[:, :5].ravel()), g.distances[:, :5].ravel())
    assert g.distance_between(3, 3) == 0.0
    assert g.distance_between(np.array([[1, 2]]), np.array([[2, 1]])).shape == (1, 2)


def test_memory_shape_is_n_by_width(rng):
    X = rng.normal(size=(500, 3))
    g = knn_graph(X, 10)
    assert g.distances.shape == (500, 10)  # continuous data: no ties, no O(N²) storage
    assert g.memory_bytes() <= 500 * 10 * 8 * 4


def test_reverse_neighbors_and_in_degree(rng):
    X = rng.integers(0, 4, size=(90, 2)).astype(float) + rng.normal(scale=0.01, size=(90, 2)).round(2)
    g = knn_graph(X, 6)
    K = _keys_ref(X, "euclidean")
    for k in (1, 3, 6):
        member = np.zeros((90, 90), bool)
        for p in range(90):
            others = np.arange(90) != p
            kth = np.sort(K[p, others])[k - 1]
            member[p] = others & (K[p] <= kth)
        indptr, idx = reverse_neighbors(g, k)
        for q in range(90):
            np.testing.assert_array_equal(idx[indptr[q]:indptr[q + 1]], np.flatnonzero(member[:, q]))
        np.testing.assert_array_equal(in_degree(g, k), member.sum(0))
    allk = in_degrees_all_k(g, [1, 2, 3, 4, 5, 6])
    assert allk.shape == (6, 90)
    np.testing.assert_array_equal(allk.sum(1), g.neighborhood_sizes().sum(0))


@pytest.mark.parametrize("bad,match", [
    (np.array([[1.0, np.nan], [0, 1], [2, 2]]), "NaN"),
    (np.array([[1.0, np.inf], [0, 1], [2, 2]]), "infinite"),
    (np.arange(5.0), "2-d"),
])
def test_bad_input_raises(bad, match):
    with pytest.raises(ValueError, match=match):
        knn_graph(bad, 1)


def test_bad_k_and_metric_raise(rng):
    X = rng.normal(size=(10, 2))
    with pytest.raises(ValueError, match="at least 11 objects"):
        knn_graph(X, 10)
    with pytest.raises(ValueError, match="below the minimum"):
        knn_graph(X, 0)
    with pytest.raises(ValueError, match="unknown or unsupported metric"):
        knn_graph(X, 3, metric="hamming-ish")
    with pytest.raises(ValueError, match="backend"):
        knn_graph(X, 3, backend="magic")
    with pytest.raises(ValueError, match="all-zero"):
        knn_graph(np.vstack([X, np.zeros(2)]), 3, metric="cosine")
    g = knn_graph(X, 3)
    with pytest.raises(ValueError, match="exceeds the graph's k_max"):
        g.kdist(4)
    with pytest.raises(ValueError, match="outside"):
        g.distance_between([0], [10])


def test_candidate_buffer_compaction_and_overflow_paths(rng):
    # many candidates per row relative to k_max (compaction), and > 4·k_max+64 tied objects (overflow path)
    X = rng.normal(size=(600, 2))
    _check(knn_graph(X, 2), X, 2)
    Y = rng.integers(0, 3, size=(300, 1)).astype(float)
    g = knn_graph(Y, 1)
    _check(g, Y, 1)
    assert g.distances.shape[1] >= 80


def test_unique_candidates_equals_global_unique():
    from odeval.neighbors.graph import _unique_candidates

    rng = np.random.default_rng(5)
    n, w = 300, 12
    cand = rng.integers(-1, 40, size=(n, w))  # many repeats, padding -1, and some self-candidates
    cand[np.arange(0, n, 7), 3] = np.arange(0, n, 7)
    rows, objs = _unique_candidates(cand)
    r = np.repeat(np.arange(n), w)
    f = cand.ravel()
    ok = (f >= 0) & (f != r)
    ref = np.unique(r[ok] * n + f[ok])
    np.testing.assert_array_equal(rows, ref // n)
    np.testing.assert_array_equal(objs, ref % n)
    assert rows.dtype == objs.dtype == np.int64


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
def test_tree_search_identical_to_brute_force(metric):
    rng = np.random.default_rng(11)
    X = np.round(rng.normal(size=(900, 3)), 1)  # a coarse grid: many ties at the k-distance
    X[10:30] = X[3]  # 21 duplicates: more than the tree's candidates for k_max = 4
    brute = knn_graph(X, 12, metric=metric, backend="brute")
    tree = knn_graph(X, 12, metric=metric, backend="tree")
    assert (brute.search, tree.search) == ("brute", "tree") and tree.backend == "exact"
    np.testing.assert_array_equal(tree.indices, brute.indices)
    np.testing.assert_array_equal(tree.distances, brute.distances)
    small = knn_graph(X, 4, metric=metric, backend="tree")
    np.testing.assert_array_equal(small.indices, knn_graph(X, 4, metric=metric, backend="brute").indices)


@pytest.mark.parametrize("metric", ["euclidean", "cityblock", "chebyshev"])
def test_leaves_search_identical_to_brute_force(metric):
    from odeval.neighbors import graph as graph_module

    rng = np.random.default_rng(12)
    X = np.vstack([np.round(rng.normal(size=(700, 4)), 1),  # a coarse grid: many ties at the k-distance
                   rng.normal(size=(300, 4)) * 3 + 5])
    X[10:40] = X[3]  # 31 duplicates
    X[50:200] = np.round(X[50:200], 0)  # massive ties: some rows overflow the tie buffer and are redone
    brute = knn_graph(X, 12, metric=metric, backend="brute")
    for leaf_size in (7, 64, 2000):  # one leaf, and leaves smaller than k_max
        leaves = graph_module._leaves_parts(X, 12, brute.metric_spec, 64, leaf_size=leaf_size)
        got = graph_module._assemble(X, 12, brute.metric_spec, leaves, "exact")
        np.testing.assert_array_equal(got.indices, brute.indices)
        np.testing.assert_array_equal(got.distances, brute.distances)
    g = knn_graph(X, 30, metric=metric, backend="leaves")
    assert g.search == "leaves" and g.backend == "exact"
    ref = knn_graph(X, 30, metric=metric, backend="brute")
    np.testing.assert_array_equal(g.indices, ref.indices)
    np.testing.assert_array_equal(g.distances, ref.distances)


def test_choose_search():
    from odeval.neighbors.graph import choose_search

    assert choose_search(10**6, 3, "euclidean")[0] == "leaves"
    assert choose_search(10**6, 10, "euclidean")[0] == "leaves"
    assert choose_search(10**6, 10, "euclidean", "auto")[0] == "leaves"  # exact at 10⁶ × 10 (issue 28)
    assert choose_search(1000, 3, "euclidean")[0] == "brute"
    assert choose_search(10**5, 50, "euclidean")[0] == "brute"
    assert choose_search(10**6, 50, "euclidean", "auto")[0] == "hnsw"
    assert choose_search(10**6, 50, "euclidean", "exact")[0] == "brute"
    assert choose_search(10**6, 5, "cosine")[0] == "brute"
    assert choose_search(10**6, 6, "cosine", "auto")[0] == "hnsw"
    assert choose_search(10, 5, "euclidean", "tree")[0] == "tree"
    assert choose_search(10, 5, "cityblock", "leaves")[0] == "leaves"
    with pytest.raises(ValueError, match="tree"):
        choose_search(10, 5, "cosine", "tree")
    with pytest.raises(ValueError, match="leaves"):
        choose_search(10, 5, "cosine", "leaves")
    with pytest.raises(ValueError, match="unknown backend"):
        choose_search(10, 5, "euclidean", "fast")


@pytest.mark.parametrize("metric", ["seuclidean", "mahalanobis"])
def test_data_derived_metric_parameters_come_from_the_whole_data(metric):
    # scipy's cdist estimates V / VI from the rows of each call; the graph must not depend on its blocks
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3)) * np.array([1.0, 5.0, 0.2])
    whole = {"V": np.var(X, axis=0, ddof=1)} if metric == "seuclidean" else {"VI": np.linalg.inv(np.cov(X.T)).T}
    ref = knn_graph(X, 5, metric=metric, metric_params=whole)
    for chunk in (7, 1000):
        g = knn_graph(X, 5, metric=metric, chunk_size=chunk)
        np.testing.assert_array_equal(g.indices, ref.indices)
        np.testing.assert_array_equal(g.distances, ref.distances)
