"""FastABOD against slow per-k implementations of Kriegel et al. (2008) and of ELKI 0.7.1's poly-2 variant."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.detectors.abod import FastABOD, fastabod_scores
from odeval.neighbors import knn_graph


def _sq(X, a, b):
    return sum((float(x) - float(y)) ** 2 for x, y in zip(X[a], X[b], strict=True))


def _neighbourhood(keys, p, k):
    others = sorted((q for q in range(len(keys)) if q != p and math.isfinite(keys[q])), key=lambda q: (keys[q], q))
    thr = keys[others[k - 1]]
    return [q for q in others if keys[q] <= thr]


def _weighted_naive_variance(vals, weights):
    if not vals:
        return math.inf  # documented outcome: no pair -> +inf (maximally inlying), never NaN
    v = np.array(vals)
    w = np.array(weights)
    mu = np.sum(w * v) / np.sum(w)
    return float(np.sum(w * (v - mu) ** 2) / np.sum(w))


def reference_abof_linear(X, k):
    out = np.empty(len(X))
    for a in range(len(X)):
        keys = [_sq(X, a, q) for q in range(len(X))]
        N = [q for q in _neighbourhood(keys, a, k) if keys[q] > 0]  # duplicates form no angle
        vals, weights = [], []
        for b, c in itertools.combinations(N, 2):
            ab, ac = X[b] - X[a], X[c] - X[a]
            nb, nc = float(ab @ ab), float(ac @ ac)
            vals.append(float(ab @ ac) / (nb * nc))
            weights.append(1.0 / math.sqrt(nb * nc))
        out[a] = _weighted_naive_variance(vals, weights)
    return out


def reference_abof_poly2(X, k):
    n = len(X)
    K = np.array([[sum(float(x) * float(y) for x, y in zip(X[i], X[j], strict=True)) ** 2 for j in range(n)]
                  for i in range(n)])
    out = np.empty(n)
    for a in range(n):
        sqd = [K[a, a] + K[b, b] - K[a, b] - K[a, b] if b != a else math.inf for b in range(n)]
        cand = [b if sqd[b] > 0 else None for b in range(n)]
        keys = [sqd[b] if cand[b] is not None else math.inf for b in range(n)]
        N = _neighbourhood(keys, a, k)
        vals, weights = [], []
        for b, c in itertools.combinations(N, 2):
            div = 1.0 / (sqd[b] * sqd[c])
            vals.append((K[b, c] - K[a, b] - K[a, c] + K[a, a]) * div)
            weights.append(math.sqrt(div))
        out[a] = _weighted_naive_variance(vals, weights)
    return out


def _datasets():
    rng = np.random.default_rng(3)
    grid = rng.integers(0, 4, size=(36, 2)).astype(float)
    cont = rng.normal(size=(40, 3))
    cont[1] = cont[2]
    cont[30] = -cont[12]  # x and −x are "identical" under the (x·y)² kernel
    return {"grid": grid, "continuous": cont}


@pytest.mark.parametrize("name", ["grid", "continuous"])
def test_fastabod_linear_matches_reference(name):
    # atol: exact zero variances (all angles equal) come out as ~1e-35 from West's update
    X = _datasets()[name]
    ks = [3, 4, 6, 10]
    got = fastabod_scores(knn_graph(X, max(ks)), ks)
    for t, k in enumerate(ks):
        np.testing.assert_allclose(got[t], reference_abof_linear(X, k), rtol=1e-12, atol=1e-25)
    assert not np.isnan(got).any()


@pytest.mark.parametrize("name", ["grid", "continuous"])
def test_fastabod_poly2_matches_reference(name):
    X = _datasets()[name]
    ks = [3, 5, 8]
    got = fastabod_scores(knn_graph(X, max(ks)), ks, kernel="poly2")
    for t, k in enumerate(ks):
        np.testing.assert_allclose(got[t], reference_abof_poly2(X, k), rtol=1e-12, atol=1e-25)


def test_fastabod_inverted_orientation_and_outlier_ranks_first():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(60, 3)), [[8.0, 8.0, 8.0]]])
    det = get_detector("FastABOD")
    g = knn_graph(X, 10)
    raw = det.raw_scores_all_k(g, [10])[0]
    pub = det.score_all_k(g, [10])[0]
    np.testing.assert_array_equal(pub, -raw)
    assert np.argmax(pub) == 60
    assert FastABOD.info.inverted and FastABOD.info.min_k == 3


def test_fastabod_no_pair_gives_inf_not_nan():
    # object 0 has 3 duplicates; with k = 3 no neighbour at positive distance remains
    X = np.array([[0.0, 0.0]] * 4 + [[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    raw = fastabod_scores(knn_graph(X, 3), [3])[0]
    assert np.isinf(raw[0]) and raw[0] > 0
    assert not np.isnan(raw).any()


def test_fastabod_single_pair_variance_zero():
    # k = 3 with exactly one duplicate and tie-free others: two neighbours at positive distance -> one pair
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [5.0, 7.0]])
    raw = fastabod_scores(knn_graph(X, 3), [3])[0]
    assert raw[0] == 0.0


def test_fastabod_linear_needs_euclidean():
    X = _datasets()["continuous"]
    with pytest.raises(ValueError, match="Euclidean"):
        FastABOD().raw_scores_all_k(knn_graph(X, 4, metric="manhattan"), [4])
    with pytest.raises(ValueError, match="unknown kernel"):
        FastABOD(kernel="rbf")
