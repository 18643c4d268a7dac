"""LOF and SimplifiedLOF against a slow, obviously-correct per-k reference (Breunig et al. 2000 with ELKI
0.7.1's tie and duplicate rules, semantics doc §1.3, §1.4, §0.4)."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.neighbors import knn_graph


def brute(X):
    D2 = np.zeros((len(X), len(X)))
    for j in range(X.shape[1]):
        t = X[:, None, j] - X[None, :, j]
        D2 += t * t
    return D2, np.sqrt(D2)


def neighbourhood(D2, p, k):
    """N_k(p): all q ≠ p with squared distance ≤ the k-th smallest, sorted by (distance, index)."""
    others = np.array([q for q in range(len(D2)) if q != p])
    srt = others[np.lexsort((others, D2[p, others]))]
    kth = D2[p, srt[k - 1]]
    return srt[D2[p, srt] <= kth], np.sqrt(kth)


def lof_reference(X, k, simplified=False):
    D2, D = brute(X)
    n = len(X)
    nb = [neighbourhood(D2, p, k) for p in range(n)]
    kdist = np.array([kd for _, kd in nb])
    lrd = np.empty(n)
    for p in range(n):
        N = nb[p][0]
        if simplified:
            s = sum(D[p, o] for o in N)
        else:
            s = sum(max(D[p, o], kdist[o]) for o in N)
        lrd[p] = len(N) / s if s > 0 else np.inf
    out = np.empty(n)
    for p in range(n):
        N = nb[p][0]
        if np.isinf(lrd[p]):
            out[p] = 1.0
        else:
            out[p] = sum(lrd[o] for o in N) / (len(N) * lrd[p])
    return out


def data():
    rng = np.random.default_rng(11)
    plain = rng.normal(size=(60, 3))
    dup = rng.normal(size=(60, 2))
    dup[5:14] = dup[4]   # 10 copies: lrd = inf inside, LOF = +inf for objects whose neighbours are copies
    dup[40:42] = dup[41]
    lattice = rng.integers(0, 5, size=(70, 2)).astype(float)
    return {"plain": plain, "dup": dup, "lattice": lattice}


DATA = data()
KS = [1, 2, 4, 7, 12]


@pytest.mark.parametrize("simplified", [False, True])
@pytest.mark.parametrize("name", list(DATA))
def test_lof_matches_reference(name, simplified):
    X = DATA[name]
    det = get_detector("SimplifiedLOF" if simplified else "LOF")
    got = det.raw_scores_all_k(knn_graph(X, max(KS)), KS)
    for i, k in enumerate(KS):
        ref = lof_reference(X, k, simplified)
        np.testing.assert_array_equal(np.isposinf(got[i]), np.isposinf(ref))
        fin = np.isfinite(ref)
        np.testing.assert_allclose(got[i][fin], ref[fin], rtol=1e-12, atol=0)


def test_duplicate_rules():
    X = DATA["dup"]
    g = knn_graph(X, 9)
    lof = get_detector("LOF").raw_scores_all_k(g, [3, 9])
    # a copy of a 10-fold duplicated point: lrd = +inf -> LOF exactly 1
    assert lof[0, 4] == 1.0 and lof[1, 4] == 1.0
    # some object sees an infinite lrd among its neighbours -> +inf, never NaN
    assert np.isposinf(lof).any() and not np.isnan(lof).any()


def test_uniform_grid_is_all_inliers():
    xs, ys = np.meshgrid(np.arange(12.0), np.arange(12.0))
    X = np.column_stack([xs.ravel(), ys.ravel()])
    g = knn_graph(X, 4)
    lof = get_detector("LOF").raw_scores_all_k(g, [4])[0]
    inner = (X[:, 0] > 2) & (X[:, 0] < 9) & (X[:, 1] > 2) & (X[:, 1] < 9)
    np.testing.assert_allclose(lof[inner], 1.0, rtol=1e-14)
