"""KDEOS against a slow per-k reference of ELKI's KDEOS with kmin = kmax = k (semantics doc §1.9, §0.6),
with both comparison sets: the published {p} ∪ N_k(p) and ELKI 0.7.1's {p} ∪ N_{k−1}(p)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.neighbors import knn_graph


def lists(X):
    n = len(X)
    D2 = np.zeros((n, n))
    for j in range(X.shape[1]):
        t = X[:, None, j] - X[None, :, j]
        D2 += t * t
    srt = []
    for p in range(n):
        others = np.array([q for q in range(n) if q != p])
        srt.append(others[np.lexsort((others, D2[p, others]))])
    return D2, np.sqrt(D2), srt


def N(D2, srt, p, k):
    if k == 0:
        return np.array([], dtype=int)
    kth = D2[p, srt[p][k - 1]]
    return srt[p][D2[p, srt[p]] <= kth]


def kdeos_reference(X, k, scale=0.5, idim=2, minbw=0.0, variant="paper"):
    D2, D, srt = lists(X)
    n = len(X)
    s = scale * (1 / (4 * math.pi)) ** 0.1
    dim = X.shape[1] if idim < 0 else idim
    dens = np.zeros(n)
    for p in range(n):
        L = [p, *N(D2, srt, p, k)]
        total = sum(D[p, o] for o in L[:k])  # first k list entries, p itself first
        # ELKI's arithmetic: inverse bandwidth, normalisation ibw**dim, kernel φ(d · ibw)
        ibw = min(k / (total * s) if total > 0 else np.inf, 1 / (minbw * s) if minbw > 0 else np.inf)
        for q in L:
            if np.isinf(ibw):
                v = 1.0 if D[p, q] == 0 else 0.0
            else:
                sca = 1.0
                for _ in range(dim):
                    sca *= ibw
                v = sca * (math.exp(-0.5 * (D[p, q] * ibw) ** 2) / math.sqrt(2 * math.pi))
            dens[q] += v
            if v < 1e-20:
                break
    out = np.empty(n)
    for p in range(n):
        C = [p, *N(D2, srt, p, k if variant == "paper" else k - 1)]
        # mean and sample sd by Welford's updates, as ELKI's MeanVariance (z is ill-conditioned when the
        # densities are nearly equal, so the reference uses the same arithmetic)
        cnt = mean = m2 = 0.0
        for x in dens[C]:
            cnt += 1
            delta = x - mean
            mean += delta / cnt
            m2 += delta * (x - mean)
        sd = math.sqrt(m2 / (cnt - 1)) if cnt > 1 else 0.0
        z = (mean - dens[p]) / sd if sd > 0 else 0.0
        out[p] = 0.5 * math.erfc(-z / math.sqrt(2))
    return out


def data():
    rng = np.random.default_rng(9)
    plain = rng.normal(size=(50, 3))
    dup = rng.normal(size=(50, 2))
    dup[3:10] = dup[2]
    lattice = rng.integers(0, 4, size=(60, 2)).astype(float)
    return {"plain": plain, "dup": dup, "lattice": lattice}


DATA = data()
KS = [2, 3, 6, 10]


@pytest.mark.parametrize("variant", ["paper", "elki-0.7.1"])
@pytest.mark.parametrize("name", list(DATA))
def test_kdeos_matches_reference(name, variant):
    X = DATA[name]
    got = get_detector("KDEOS", variant=variant).raw_scores_all_k(knn_graph(X, max(KS)), KS)
    for i, k in enumerate(KS):
        ref = kdeos_reference(X, k, variant=variant)
        np.testing.assert_allclose(got[i], ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kw", [{"idim": -1}, {"idim": 1, "scale": 0.25}, {"min_bandwidth": 0.3}])
def test_kdeos_parameters_match_reference(kw):
    X = DATA["dup"]
    det = get_detector("KDEOS", **kw)
    got = det.raw_scores_all_k(knn_graph(X, 6), [6])[0]
    ref = kdeos_reference(X, 6, scale=kw.get("scale", 0.5), idim=kw.get("idim", 2),
                          minbw=kw.get("min_bandwidth", 0.0))
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)


def test_elki_071_two_values_at_k2():
    g = knn_graph(DATA["plain"], 2)
    s = get_detector("KDEOS", variant="elki-0.7.1").raw_scores_all_k(g, [2])[0]
    # two values Φ(±1/√2) (0.5 where the two densities are exactly equal); z is ill-conditioned when they
    # are nearly equal, hence the loose tolerance
    allowed = np.array([0.5 * math.erfc(0.5), 0.5, 0.5 * math.erfc(-0.5)])
    assert np.abs(s[:, None] - allowed[None, :]).min(axis=1).max() < 1e-6


def test_k1_rejected_and_bad_parameters():
    g = knn_graph(DATA["plain"], 2)
    with pytest.raises(ValueError, match="below the minimum 2"):
        get_detector("KDEOS").raw_scores_all_k(g, [1])
    for kw in ({"scale": 0}, {"idim": -2}, {"min_bandwidth": -1}, {"variant": "x"}):
        with pytest.raises(ValueError, match="KDEOS"):
            get_detector("KDEOS", **kw)
