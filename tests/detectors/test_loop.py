"""LoOP against a slow per-k reference of Kriegel et al. (2009), Eq. 5–8, in both variants (semantics doc
§1.5, §0.8): the published definition and ELKI 0.7.1's clipping before the normaliser."""

from __future__ import annotations

import math

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.neighbors import knn_graph


def first_k(X, k):
    n = len(X)
    D2 = np.zeros((n, n))
    for j in range(X.shape[1]):
        t = X[:, None, j] - X[None, :, j]
        D2 += t * t
    lists = []
    for p in range(n):
        others = np.array([q for q in range(n) if q != p])
        lists.append(others[np.lexsort((others, D2[p, others]))][:k])
    return np.sqrt(D2), lists


def loop_reference(X, k, lam, variant):
    D, S = first_k(X, k)
    n = len(X)
    pdist = np.array([math.sqrt(sum(D[p, o] ** 2 for o in S[p]) / k) for p in range(n)])
    ratio = np.empty(n)
    for p in range(n):
        den = sum(pdist[o] for o in S[p])
        r = pdist[p] * k / den if den > 0 else 1.0
        ratio[p] = r if np.isfinite(r) else 1.0
    if variant == "elki-0.7.1":
        plof = np.maximum(ratio, 1.0) - 1.0
    else:
        plof = ratio - 1.0
    nplof = lam * math.sqrt(np.mean(plof ** 2)) or 1.0
    vals = np.array([math.erf(v / (nplof * math.sqrt(2))) for v in plof])
    return vals if variant == "elki-0.7.1" else np.maximum(vals, 0.0)


def data():
    rng = np.random.default_rng(5)
    plain = rng.normal(size=(60, 3))
    dup = rng.normal(size=(60, 2))
    dup[3:12] = dup[2]
    return {"plain": plain, "dup": dup}


DATA = data()
KS = [1, 2, 5, 8, 13]


@pytest.mark.parametrize("variant", ["paper", "elki-0.7.1"])
@pytest.mark.parametrize("lam", [1.0, 2.0])
@pytest.mark.parametrize("name", list(DATA))
def test_loop_matches_reference(name, lam, variant):
    X = DATA[name]
    got = get_detector("LoOP", lam=lam, variant=variant).raw_scores_all_k(knn_graph(X, max(KS)), KS)
    for i, k in enumerate(KS):
        np.testing.assert_allclose(got[i], loop_reference(X, k, lam, variant), rtol=1e-12, atol=1e-15)


def test_variants_rank_alike_but_differ_in_value():
    X = DATA["plain"]
    g = knn_graph(X, 8)
    a = get_detector("LoOP").raw_scores_all_k(g, [8])[0]
    b = get_detector("LoOP", variant="elki-0.7.1").raw_scores_all_k(g, [8])[0]
    pos = a > 0
    assert np.all((b > 0) == pos)
    assert np.all(np.argsort(a[pos]) == np.argsort(b[pos]))
    assert not np.allclose(a, b)
    assert np.all(b[~pos] == 0.0)


def test_lambda_only_rescales_ranking():
    g = knn_graph(DATA["plain"], 6)
    a = get_detector("LoOP", lam=1.0).raw_scores_all_k(g, [6])[0]
    b = get_detector("LoOP", lam=3.0).raw_scores_all_k(g, [6])[0]
    assert np.array_equal(np.argsort(a, kind="stable"), np.argsort(b, kind="stable"))


@pytest.mark.parametrize("kw", [{"lam": 0}, {"lam": -1.0}, {"variant": "elki"}])
def test_bad_parameters(kw):
    with pytest.raises(ValueError, match="LoOP"):
        get_detector("LoOP", **kw)


def test_elki_heap_emulation_returns_the_tie_extended_list():
    from odeval.detectors.loop import _elki_knn_list

    rng = np.random.default_rng(2)
    X = rng.integers(0, 3, size=(60, 2)).astype(float)
    g = knn_graph(X, 10)
    for q in range(0, 60, 7):
        for K in (2, 5, 11):
            lst = _elki_knn_list(X, q, K)
            others = set(g.indices[q, : g.neighborhood_size(K - 1)[q]].tolist())
            assert sorted(lst.tolist()) == sorted(others | {q})
            d = np.sqrt(((X[lst] - X[q]) ** 2).sum(1))
            assert np.all(np.diff(d) >= 0)  # ELKI's lists are sorted by distance


def test_elki_variant_on_lattice_is_a_valid_probability():
    rng = np.random.default_rng(4)
    X = rng.integers(0, 4, size=(80, 2)).astype(float)
    g = knn_graph(X, 6)
    got = get_detector("LoOP", variant="elki-0.7.1").raw_scores_all_k(g, [1, 3, 6])
    assert got.shape == (3, 80) and np.all((got >= 0) & (got <= 1))
