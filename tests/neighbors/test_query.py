"""query_knn: neighbours of query objects among a reference set, with the graph's tie/duplicate semantics."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.neighbors import knn_graph, query_knn


def _grid_data(seed: int = 0, n: int = 80) -> np.ndarray:
    """Integer data: many ties and exact duplicates."""
    return np.random.default_rng(seed).integers(0, 4, size=(n, 2)).astype(float)


@pytest.mark.parametrize("metric", ["euclidean", "manhattan", "cosine"])
@pytest.mark.parametrize("data", ["grid", "normal"])
def test_leave_one_out_query_equals_graph_row(metric, data):
    """x queried against X \\ {x} has exactly x's in-sample neighbour row (ties and duplicates included)."""
    rng = np.random.default_rng(1)
    X = _grid_data() + (1.0 if metric == "cosine" else 0.0) if data == "grid" else rng.normal(size=(60, 3))
    k = 5
    g = knn_graph(X, k, metric=metric)
    for i in range(0, X.shape[0], 7):
        rest = np.delete(np.arange(X.shape[0]), i)
        q = query_knn(knn_graph(X[rest], k, metric=metric), X[i:i + 1], k)
        w = int(g.neighborhood_size(k)[i])
        assert q.neighborhood_sizes()[0, k - 1] == w
        np.testing.assert_array_equal(q.distances[0, :w], g.distances[i, :w])
        np.testing.assert_array_equal(rest[q.indices[0, :w]], g.indices[i, :w])


def test_query_of_a_reference_object_finds_itself_at_distance_zero():
    X = np.random.default_rng(2).normal(size=(40, 3))
    g = knn_graph(X, 4)
    q = query_knn(g, X[:5], 5)
    assert np.all(q.distances[:, 0] == 0.0)
    np.testing.assert_array_equal(q.indices[:, 0], np.arange(5))
    np.testing.assert_array_equal(q.distances[:, 1:5], g.distances[:5, :4])  # then the in-sample row


def test_chunk_size_does_not_change_the_result_and_k_max_can_be_n():
    X = _grid_data(3)
    Q = _grid_data(4, 30)
    g = knn_graph(X, 3)
    a = query_knn(g, Q, X.shape[0])
    b = query_knn(g, Q, X.shape[0], chunk_size=7)
    np.testing.assert_array_equal(a.distances, b.distances)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert np.all(a.neighborhood_sizes()[:, -1] == X.shape[0])


def test_query_errors_are_one_line():
    g = knn_graph(np.random.default_rng(0).normal(size=(10, 2)), 3)
    with pytest.raises(ValueError, match="attributes"):
        query_knn(g, np.zeros((2, 3)))
    with pytest.raises(ValueError, match="KNNGraph"):
        query_knn(np.zeros((3, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="k_max"):
        query_knn(g, np.zeros((2, 2)), 11)
