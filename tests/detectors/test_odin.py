"""ODIN against a brute-force in-degree count over the tie-extended kNN graph (semantics doc §1.7)."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.neighbors import knn_graph


def odin_reference(X, k):
    n = len(X)
    D2 = np.zeros((n, n))
    for j in range(X.shape[1]):
        t = X[:, None, j] - X[None, :, j]
        D2 += t * t
    deg = np.zeros(n)
    for q in range(n):
        others = np.arange(n) != q
        kth = np.sort(D2[q, others])[k - 1]
        deg[others & (D2[q] <= kth)] += 1
    return deg / k


@pytest.mark.parametrize("seed", [0, 1])
def test_odin_matches_reference(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(70, 2)).astype(float)
    X[:20] = rng.normal(size=(20, 2))
    X[20:25] = X[20]
    ks = [1, 2, 3, 6, 10]
    got = get_detector("ODIN").raw_scores_all_k(knn_graph(X, 10), ks)
    for i, k in enumerate(ks):
        np.testing.assert_allclose(got[i], odin_reference(X, k), rtol=1e-15)


def test_odin_is_inverted_and_isolated_point_scores_zero():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(40, 2)), [[50.0, 50.0]]])
    det = get_detector("ODIN")
    g = knn_graph(X, 5)
    raw = det.raw_scores_all_k(g, [5])[0]
    assert raw[-1] == 0.0
    pub = det.score_all_k(g, [5])[0]
    assert pub[-1] == pub.max() == 0.0
    assert raw.mean() == pytest.approx(g.neighborhood_size(5).mean() / 5)
