"""kNN and kNNW against a brute-force per-k reference; plus properties shared by all of this stage's
methods (registry, validation, orientation, no NaN on duplicate-heavy data)."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.neighbors import knn_graph

MINE = ["KNN", "KNNW", "LOF", "SimplifiedLOF", "LoOP", "ODIN", "KDEOS", "LDF"]


def brute_lists(X):
    """Brute-force (squared-key, distance) matrices and, per p, others sorted by (distance, index)."""
    D2 = np.zeros((len(X), len(X)))
    for j in range(X.shape[1]):
        t = X[:, None, j] - X[None, :, j]
        D2 += t * t
    order = []
    for p in range(len(X)):
        others = np.array([q for q in range(len(X)) if q != p])
        order.append(others[np.lexsort((others, D2[p, others]))])
    return D2, np.sqrt(D2), order


def datasets():
    rng = np.random.default_rng(7)
    plain = rng.normal(size=(70, 3))
    dup = rng.normal(size=(70, 3))
    dup[10:20] = dup[0]
    dup[30:33] = dup[31]
    lattice = rng.integers(0, 4, size=(80, 2)).astype(float)
    return {"plain": plain, "dup": dup, "lattice": lattice}


DATA = datasets()
KS = [1, 2, 3, 5, 9, 15]


@pytest.mark.parametrize("name", list(DATA))
def test_knn_and_knnw_match_reference(name):
    X = DATA[name]
    _, D, order = brute_lists(X)
    g = knn_graph(X, max(KS))
    knn = get_detector("KNN").raw_scores_all_k(g, KS)
    knnw = get_detector("KNNW").raw_scores_all_k(g, KS)
    for i, k in enumerate(KS):
        ref_knn = np.array([D[p, order[p][k - 1]] for p in range(len(X))])
        ref_knnw = np.array([sum(D[p, order[p][:k]]) for p in range(len(X))])
        np.testing.assert_allclose(knn[i], ref_knn, rtol=1e-12, atol=0)
        np.testing.assert_allclose(knnw[i], ref_knnw, rtol=1e-12, atol=0)


def test_knn_is_zero_for_k_duplicates():
    g = knn_graph(DATA["dup"], 9)
    assert get_detector("KNN").raw_scores_all_k(g, [9])[0][0] == 0.0


@pytest.mark.parametrize("method", MINE)
@pytest.mark.parametrize("name", list(DATA))
def test_never_nan_and_shapes(method, name):
    X = DATA[name]
    g = knn_graph(X, 15)
    det = get_detector(method)
    ks = [k for k in KS if k >= det.info.min_k]
    raw = det.raw_scores_all_k(g, ks)
    assert raw.shape == (len(ks), len(X))
    assert not np.isnan(raw).any()
    lo, hi = det.info.score_range
    assert np.all(raw >= lo) and np.all(raw <= hi)
    pub = det.score_all_k(g, ks)
    np.testing.assert_array_equal(pub, -raw if det.info.inverted else raw)
    # single-k calls agree with the all-k call
    np.testing.assert_array_equal(det.raw_scores_all_k(g, [ks[-1]])[0], raw[-1])
    np.testing.assert_array_equal(det.score(X, ks[-1]), pub[-1])


@pytest.mark.parametrize("method", MINE)
def test_k_validation(method):
    g = knn_graph(DATA["plain"], 5)
    det = get_detector(method)
    with pytest.raises(ValueError, match="exceeds the graph's k_max"):
        det.raw_scores_all_k(g, [6])
    with pytest.raises(ValueError, match="below the minimum"):
        det.raw_scores_all_k(g, [det.info.min_k - 1])
    with pytest.raises(ValueError, match="integers"):
        det.raw_scores_all_k(g, [2.5])


def test_registry_metadata():
    assert get_detector("odin").info.inverted
    assert get_detector("KDEOS").info.min_k == 2
    assert get_detector("lof").info.inlier_value == 1.0
    assert get_detector("knn").info.inlier_value == 0.0
    assert get_detector("LoOP").params() == {"lam": 1.0, "variant": "paper"}
    assert get_detector("LDF", c=0.5).info.score_range == (0.0, 2.0)


def test_unsorted_and_repeated_ks_follow_request_order():
    g = knn_graph(DATA["lattice"], 10)
    for method in MINE:
        det = get_detector(method)
        a = det.raw_scores_all_k(g, [10, 3, 10, 4])
        b = det.raw_scores_all_k(g, [3, 4, 10])
        np.testing.assert_array_equal(a[[1, 3, 0]], b)
        np.testing.assert_array_equal(a[2], b[2])
