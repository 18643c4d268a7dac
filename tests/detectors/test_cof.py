"""COF against slow per-k implementations: the paper (Tang et al. 2002, Defs. 4–6) and ELKI 0.7.1 (§1.12)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.detectors.cof import COF, cof_scores
from odeval.neighbors import knn_graph


def _sq(X, a, b):
    return sum((float(x) - float(y)) ** 2 for x, y in zip(X[a], X[b], strict=True))


def _d(X, a, b):
    return math.sqrt(_sq(X, a, b))


def _neighbourhood(X, p, k):
    others = sorted((q for q in range(len(X)) if q != p), key=lambda q: (_sq(X, p, q), q))
    thr = _sq(X, p, others[k - 1])
    return [q for q in others if _sq(X, p, q) <= thr]


def _sbn_costs(X, p, members, last_on_ties, steps):
    """Edge lengths of the SBN trail from p (Prim's order), ``steps`` edges."""
    G = [p, *members]
    done = [True] + [False] * len(members)
    costs = []
    for _ in range(steps):
        best, bv = None, math.inf
        for i in range(1, len(G)):
            if done[i]:
                continue
            v = min(_d(X, G[j], G[i]) for j in range(len(G)) if done[j])
            if best is None or v < bv or (last_on_ties and v == bv):
                best, bv = i, v
        done[best] = True
        costs.append(bv)
    return costs


def _elki_list_order(X, p, K):
    """ELKI 0.7.1's list getKNNForDBID(p, K) for a linear scan: a binary max-heap of capacity K over squared
    distances (objects inserted in index order, p included) plus a list of ties at the K-distance; the list is
    the heap polled max-first written back to front, then the ties. Python port of DoubleIntegerDBIDKNNHeap /
    DoubleIntegerMaxHeap (0.7.1)."""
    hk, hv, ties = [], [], []

    def down(size, cur, val):
        pos = 0
        while pos < size >> 1:
            best = 2 * pos + 1
            if best + 1 < size and hk[best] < hk[best + 1]:
                best += 1
            if cur >= hk[best]:
                break
            hk[pos], hv[pos] = hk[best], hv[best]
            pos = best
        hk[pos], hv[pos] = cur, val

    kdist = math.inf
    for i in range(len(X)):
        d = _sq(X, p, i)
        if len(hk) < K:
            hk.append(d)
            hv.append(i)
            pos = len(hk) - 1
            while pos > 0 and d > hk[(pos - 1) >> 1]:
                hk[pos], hv[pos] = hk[(pos - 1) >> 1], hv[(pos - 1) >> 1]
                pos = (pos - 1) >> 1
            hk[pos], hv[pos] = d, i
            if len(hk) >= K:
                kdist = hk[0]
        elif d == kdist:
            ties.append(i)
        elif d < kdist:
            prev, previd = kdist, hv[0]
            down(K, d, i)
            kdist = hk[0]
            if kdist < prev:
                ties = []
            else:
                ties.append(previd)
    out = [None] * K
    size = K
    for j in range(K - 1, -1, -1):
        out[j] = hv[0]
        size -= 1
        if size > 0:
            down(size, hk[size], hv[size])
    return out + ties


def reference_cof(X, k, variant="paper"):
    n = len(X)
    N = [_neighbourhood(X, p, k) for p in range(n)]
    ac = np.empty(n)
    for p in range(n):
        r = len(N[p])
        if variant == "paper":
            e = _sbn_costs(X, p, N[p], False, r)
            ac[p] = sum(2.0 * (r + 1 - i) / (r * (r + 1)) * e[i - 1] for i in range(1, r + 1))
        else:  # ELKI 0.7.1: its own list order, k edges, weights k..1, normaliser with |L| = r + 1
            L = [q for q in _elki_list_order(X, p, k + 1) if q != p]
            assert sorted(L) == sorted(N[p])
            e = _sbn_costs(X, p, L, True, k)
            acsum = sum(e[i - 1] * (k + 1 - i) for i in range(1, k + 1))
            ac[p] = acsum / ((r + 1) * r / 2.0)
    out = np.empty(n)
    for p in range(n):
        s = sum(ac[o] for o in N[p])
        factor = len(N[p]) if variant == "paper" else k + 1
        out[p] = (math.inf if ac[p] > 0 else 1.0) if s == 0 else ac[p] * factor / s
    return out


def _datasets():
    rng = np.random.default_rng(11)
    grid = rng.integers(0, 4, size=(40, 2)).astype(float)
    cont = rng.normal(size=(45, 3))
    cont[3] = cont[4]
    cont[10] = cont[4]
    return {"grid": grid, "continuous": cont}


@pytest.mark.parametrize("variant", ["paper", "elki-0.7.1"])
@pytest.mark.parametrize("name", ["grid", "continuous"])
def test_cof_matches_reference(name, variant):
    X = _datasets()[name]
    ks = [1, 2, 3, 5, 9]
    got = cof_scores(knn_graph(X, max(ks)), ks, variant=variant)
    for t, k in enumerate(ks):
        # the ELKI variant breaks Prim ties towards the LAST member of ELKI's list, whose order among tied
        # neighbours is its heap's (see _elki_list_order), not index order
        np.testing.assert_allclose(got[t], reference_cof(X, k, variant), rtol=1e-12, atol=0)


def test_variants_differ_by_constant_factor_without_ties():
    X = _datasets()["continuous"][:30] + np.arange(30)[:, None] * 1e-3  # break duplicates
    g = knn_graph(X, 6)
    for k in (2, 6):
        a = cof_scores(g, [k])[0]
        b = cof_scores(g, [k], variant="elki-0.7.1")[0]
        if (g.neighborhood_size(k) == k).all():
            np.testing.assert_allclose(b, a * (k + 1) / k, rtol=1e-12)


def test_cof_hand_example():
    # 1-D: 0, 1, 3 and an outlier at 10; k = 2
    X = np.array([[0.0], [1.0], [3.0], [10.0]])
    # ac-dist with r = 2, weights 2(r+1-i)/(r(r+1)) = 2/3, 1/3
    # p=0: N={1,2}: trail 0-1 (1), 1-3 (2)   -> 2/3*1 + 1/3*2 = 4/3
    # p=1: N={0,2}: trail 1-0 (1), then 2: min(d(1,3), d(0,3)) = 2  -> 4/3
    # p=2: N={1,0}: trail 3-1 (2), 1-0 (1)   -> 2/3*2 + 1/3*1 = 5/3
    # p=3: N={2,1}: trail 10-3 (7), 3-1 (2)  -> 14/3 + 2/3 = 16/3
    ac = {0: 4 / 3, 1: 4 / 3, 2: 5 / 3, 3: 16 / 3}
    N = {0: [1, 2], 1: [0, 2], 2: [1, 0], 3: [2, 1]}
    expected = [2 * ac[p] / (ac[N[p][0]] + ac[N[p][1]]) for p in range(4)]
    np.testing.assert_allclose(cof_scores(knn_graph(X, 2), [2])[0], expected, rtol=1e-14)


def test_cof_duplicates_zero_denominator():
    # object 0 and its 2 duplicates: ac-dist 0 for all three at k = 2; object 3 sees them -> ∞
    X = np.array([[0.0], [0.0], [0.0], [1.0], [9.0]])
    s = cof_scores(knn_graph(X, 2), [2])[0]
    assert s[0] == s[1] == s[2] == 1.0
    assert np.isinf(s[3])


def test_cof_registry_and_params():
    det = get_detector("COF", variant="elki-0.7.1")
    assert isinstance(det, COF) and det.params() == {"variant": "elki-0.7.1"}
    with pytest.raises(ValueError, match="unknown variant"):
        COF(variant="elki")


@pytest.mark.parametrize("seed", range(4))
def test_cof_trail_reuse_across_k_equals_fresh_computation(seed):
    """All k at once (the SBN trail of k is reused for k+1 up to the first step a new neighbour would be
    picked) gives exactly what a fresh computation for each single k gives."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 3)) if seed % 2 else rng.integers(0, 5, size=(60, 2)).astype(float)
    ks = list(range(1, 16))
    g = knn_graph(X, max(ks))
    together = cof_scores(g, ks)
    for t, k in enumerate(ks):
        np.testing.assert_array_equal(together[t], cof_scores(g, [k])[0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_extended_trail_equals_prim_redo(seed):
    """The trail extended member by member (issue 28) gives the reference kernel's ac-dists bit for bit — paper and
    ELKI tie rules, every k and sparse k, on data with ties and duplicates."""
    from odeval.detectors._neighborhood import _iter_blocks, _variant_lists
    from odeval.detectors.cof import _acdist_chunk_trail, _acdist_chunk_trail_redo

    rng = np.random.default_rng(seed)
    X = np.vstack([np.round(rng.normal(size=(250, 3)) * 2) / 2, rng.normal(size=(150, 6))[:, :3] * 4])
    X[5:15] = X[0]
    g = knn_graph(X, 40)
    for ks in (list(range(1, 41)), [1, 2, 7, 8, 20, 40]):
        v = _variant_lists(g, ks, COF.info, "paper")
        for rows, block in _iter_blocks(v.graph, v.sizes[-1]):
            sz = np.ascontiguousarray(v.sizes[:, rows])
            for elki in (False, True):
                np.testing.assert_array_equal(_acdist_chunk_trail(block, sz, v.ks, elki),
                                              _acdist_chunk_trail_redo(block, sz, v.ks, elki))


@pytest.mark.parametrize("seed", [0, 1])
def test_extended_trail_equals_prim_redo_continuous(seed):
    """Continuous data in 10 dimensions (no distance ties): the out-of-order picks of the extension and the exact
    equality dval = V that an old member pulled forward creates (it was the old trail's attachment of the next
    pick), decided by position since issue 28's second round — against the Prim reference, both tie rules."""
    from odeval.detectors._neighborhood import _iter_blocks, _variant_lists
    from odeval.detectors.cof import _acdist_chunk_trail, _acdist_chunk_trail_redo

    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(300, 10)), rng.normal(size=(60, 10)) * 3 + 5])
    g = knn_graph(X, 50)
    v = _variant_lists(g, list(range(1, 51)), COF.info, "paper")
    for rows, block in _iter_blocks(v.graph, v.sizes[-1]):
        sz = np.ascontiguousarray(v.sizes[:, rows])
        for elki in (False, True):
            np.testing.assert_array_equal(_acdist_chunk_trail(block, sz, v.ks, elki),
                                          _acdist_chunk_trail_redo(block, sz, v.ks, elki))


@pytest.mark.parametrize("seed", [0, 1])
def test_fused_euclidean_trail_equals_blocks(seed):
    """Issue 28, third round: the kernel that computes each object's distance block in a per-thread buffer gives
    the ac-dists of the block arrays (``_iter_blocks`` + ``_acdist_chunk_trail``) bit for bit — both tie rules,
    every k and sparse k, ties and duplicates, any number of object ranges."""
    from odeval.detectors._neighborhood import _iter_blocks, _variant_lists
    from odeval.detectors.cof import _acdist_chunk_trail, _acdist_trail_euclidean

    rng = np.random.default_rng(seed)
    X = np.vstack([np.round(rng.normal(size=(250, 3)) * 2) / 2, rng.normal(size=(150, 3)) * 4])
    X[5:15] = X[0]
    g = knn_graph(X, 40)
    for ks in (list(range(1, 41)), [1, 2, 7, 8, 20, 40]):
        v = _variant_lists(g, ks, COF.info, "paper")
        for elki in (False, True):
            ref = np.empty((X.shape[0], v.ks.size))
            for rows, block in _iter_blocks(v.graph, v.sizes[-1]):
                ref[rows] = _acdist_chunk_trail(block, np.ascontiguousarray(v.sizes[:, rows]), v.ks, elki).T
            for chunks in (1, 7):
                np.testing.assert_array_equal(_acdist_trail_euclidean(v.X, v.dist, v.idx, v.sizes, v.ks, elki,
                                                                      chunks), ref)
