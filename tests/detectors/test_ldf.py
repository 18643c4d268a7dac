"""LDF against a slow per-k reference of Latecki et al. (2007), Eq. 3–5, with ELKI 0.7.1's rules for
zero k-distances (semantics doc §1.10, §0.4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.neighbors import knn_graph


def ldf_reference(X, k, h=1.0, c=0.1):
    n, d = X.shape
    D2 = np.zeros((n, n))
    for j in range(d):
        t = X[:, None, j] - X[None, :, j]
        D2 += t * t
    D = np.sqrt(D2)
    nbrs, kd = [], np.empty(n)
    for p in range(n):
        others = np.array([q for q in range(n) if q != p])
        srt = others[np.lexsort((others, D2[p, others]))]
        kth = D2[p, srt[k - 1]]
        nbrs.append(srt[D2[p, srt] <= kth])
        kd[p] = math.sqrt(kth)
    lde = np.empty(n)
    for p in range(n):
        if any(kd[o] <= 0 for o in nbrs[p]):
            lde[p] = np.inf
            continue
        vals = [math.exp(-0.5 * (max(kd[o], D[p, o]) / (h * kd[o])) ** 2) / math.sqrt(2 * math.pi)
                / (h * kd[o]) ** d for o in nbrs[p]]
        lde[p] = np.mean(vals)
    out = np.empty(n)
    for p in range(n):
        m = np.mean(lde[nbrs[p]])
        div = lde[p] + c * m
        out[p] = (0.0 if m < np.inf else 1.0) if div == np.inf else m / div
    return out


def data():
    rng = np.random.default_rng(13)
    plain = rng.normal(size=(60, 3))
    dup = rng.normal(size=(60, 2))
    dup[3:8] = dup[2]
    lattice = rng.integers(0, 5, size=(70, 2)).astype(float)
    return {"plain": plain, "dup": dup, "lattice": lattice}


DATA = data()
KS = [1, 2, 4, 7, 11]


@pytest.mark.parametrize("hc", [(1.0, 0.1), (0.5, 0.3)])
@pytest.mark.parametrize("name", list(DATA))
def test_ldf_matches_reference(name, hc):
    X = DATA[name]
    h, c = hc
    got = get_detector("LDF", h=h, c=c).raw_scores_all_k(knn_graph(X, max(KS)), KS)
    for i, k in enumerate(KS):
        np.testing.assert_allclose(got[i], ldf_reference(X, k, h, c), rtol=1e-12, atol=1e-15)


def test_ldf_duplicate_rules():
    X = DATA["dup"]
    s = get_detector("LDF").raw_scores_all_k(knn_graph(X, 3), [3])[0]
    # copies of a 6-fold point: every neighbour has k-distance 0 -> LDE infinite, mean infinite -> 1
    assert s[2] == 1.0
    assert not np.isnan(s).any() and s.max() <= 10.0


def test_ldf_is_scale_invariant_even_where_direct_evaluation_overflows():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(80, 400))
    det = get_detector("LDF")
    a = det.raw_scores_all_k(knn_graph(X, 5), [5])[0]
    b = det.raw_scores_all_k(knn_graph(X * 1e-3, 5), [5])[0]  # (h·kd)^400 underflows to 0 in float64
    assert np.all(np.isfinite(a)) and np.all((a > 0) & (a < 10))
    np.testing.assert_allclose(a, b, rtol=1e-9)


@pytest.mark.parametrize("kw", [{"h": 0}, {"c": 0}, {"c": float("nan")}])
def test_bad_parameters(kw):
    with pytest.raises(ValueError, match="LDF"):
        get_detector("LDF", **kw)
