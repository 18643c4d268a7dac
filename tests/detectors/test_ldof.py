"""LDOF against a slow, obviously-correct per-k implementation of Zhang et al. (2009), Defs. 1–3."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.detectors.ldof import LDOF, ldof_scores
from odeval.neighbors import knn_graph


def _sq(X, a, b):
    return sum((float(x) - float(y)) ** 2 for x, y in zip(X[a], X[b], strict=True))


def _neighbourhood(X, p, k):
    """N_k(p): every other object within the k-distance (ties on squared distances, duplicates included)."""
    others = sorted((q for q in range(len(X)) if q != p), key=lambda q: (_sq(X, p, q), q))
    thr = _sq(X, p, others[k - 1])
    return [q for q in others if _sq(X, p, q) <= thr]


def reference_ldof(X, k):
    out = np.empty(len(X))
    for p in range(len(X)):
        N = _neighbourhood(X, p, k)
        dbar = sum(math.sqrt(_sq(X, p, o)) for o in N) / len(N)
        pairs = list(itertools.combinations(N, 2))
        Dbar = sum(math.sqrt(_sq(X, a, b)) for a, b in pairs) / len(pairs)
        # D̄ = 0: the limit of the definition, +inf if p lies apart, 1 if p coincides with its neighbours
        out[p] = dbar / Dbar if Dbar > 0 else (math.inf if dbar > 0 else 1.0)
    return out


def _datasets():
    rng = np.random.default_rng(7)
    grid = rng.integers(0, 4, size=(40, 2)).astype(float)  # many ties and exact duplicates
    cont = rng.normal(size=(50, 3))
    cont[5] = cont[6]
    cont[7] = cont[6]
    cont[20] = cont[21]
    return {"grid": grid, "continuous": cont}


@pytest.mark.parametrize("name", ["grid", "continuous"])
def test_ldof_matches_reference_for_all_k(name):
    X = _datasets()[name]
    ks = [2, 3, 4, 7, 12]
    got = ldof_scores(knn_graph(X, max(ks)), ks)
    for t, k in enumerate(ks):
        np.testing.assert_allclose(got[t], reference_ldof(X, k), rtol=1e-12, atol=0)
    assert not np.isnan(got).any()


def test_ldof_isolated_object_next_to_duplicates_is_an_outlier():
    """p = 0 has 3 identical neighbours (D̄ = 0, d̄ > 0): the limit of d̄/D̄ is +inf, so p ranks first, as with
    LOF and COF; the duplicates themselves (d̄ = D̄ = 0) get the inlier value 1. ELKI 0.7.1 maps ∞ to 1.0."""
    from odeval.measures import evaluate_scoring

    X = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.5, 5.0], [0.6, 5.0], [0.4, 5.1]])
    g = knn_graph(X, 3)
    s = ldof_scores(g, [3])[0]
    assert s[0] == np.inf and (s[1:5] == 1.0).all()
    y = np.zeros(8, dtype=bool)
    y[0] = True
    assert evaluate_scoring(y, s)[0]["roc_auc"] == 1.0
    for m in ("LOF", "COF"):  # the same verdict as the density methods
        assert get_detector(m).score_all_k(g, [3])[0].argmax() == 0
    assert ldof_scores(g, [3], variant="elki-0.7.1")[0][0] == 1.0  # ELKI 0.7.1: ∞ → 1.0


def test_ldof_unsorted_and_repeated_ks_and_registry():
    X = _datasets()["continuous"]
    g = knn_graph(X, 6)
    a = get_detector("ldof").score_all_k(g, [6, 2, 6])
    b = LDOF().raw_scores_all_k(g, [2, 6])
    np.testing.assert_array_equal(a, b[[1, 0, 1]])
    assert LDOF.info.min_k == 2 and not LDOF.info.inverted


def test_ldof_rejects_k1_and_k_above_graph():
    X = _datasets()["continuous"]
    g = knn_graph(X, 5)
    with pytest.raises(ValueError, match="below the minimum 2"):
        LDOF().raw_scores_all_k(g, [1])
    with pytest.raises(ValueError, match="k_max"):
        LDOF().raw_scores_all_k(g, [6])


def test_ldof_non_euclidean_metric_uses_graph_distances():
    X = _datasets()["continuous"]
    g = knn_graph(X, 5, metric="manhattan")
    got = LDOF().raw_scores_all_k(g, [5])[0]
    # reference with Manhattan distances
    D = np.abs(X[:, None, :] - X[None, :, :]).sum(-1)
    ref = np.empty(len(X))
    for p in range(len(X)):
        others = sorted((q for q in range(len(X)) if q != p), key=lambda q: (D[p, q], q))
        N = [q for q in others if D[p, q] <= D[p, others[4]]]
        dbar = D[p, N].mean()
        Dbar = np.mean([D[a, b] for a, b in itertools.combinations(N, 2)])
        ref[p] = dbar / Dbar
    np.testing.assert_allclose(got, ref, rtol=1e-12)


@pytest.mark.parametrize("name, params", [("LDOF", {}), ("COF", {}), ("COF", {"variant": "elki-0.7.1"}),
                                          ("FastABOD", {}), ("FastABOD", {"kernel": "poly2"}), ("INFLO", {}),
                                          ("INFLO", {"variant": "elki-0.7.1"}), ("GLOSH", {})])
def test_d2_methods_all_k_contract_and_no_nan(name, params):
    """ks in any order / repeated -> rows follow the request; public = oriented raw; no NaN even with heavy
    duplication (LDOF, COF, FastABOD, INFLO, GLOSH)."""
    rng = np.random.default_rng(1)
    X = np.vstack([rng.integers(0, 3, size=(30, 2)).astype(float), np.zeros((6, 2)), rng.normal(size=(10, 2))])
    g = knn_graph(X, 8)
    det = get_detector(name, **params)
    ks = [8, det.info.min_k, 5, 8]
    raw = det.raw_scores_all_k(g, ks)
    assert raw.shape == (4, len(X)) and not np.isnan(raw).any()
    np.testing.assert_array_equal(raw[0], raw[3])
    np.testing.assert_array_equal(raw[1:3], det.raw_scores_all_k(g, [det.info.min_k, 5]))
    np.testing.assert_array_equal(det.score_all_k(g, ks), -raw if det.info.inverted else raw)


_ELKI_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "elki_detectors"
_ELKI_VARIANTS = {"LDOF": {"variant": "elki-0.7.1"}, "COF": {"variant": "elki-0.7.1"},
                  "INFLO": {"variant": "elki-0.7.1"}, "FastABOD": {"kernel": "poly2"}}


@pytest.mark.parametrize("method", sorted(_ELKI_VARIANTS))
@pytest.mark.parametrize("dataset", sorted(p.stem for p in _ELKI_FIXTURES.glob("*.npz")))
def test_elki_variants_bit_identical_to_elki_fixtures(dataset, method):
    """The ELKI variants reproduce ELKI 0.7.1's raw scores as doubles, bit for bit (same arithmetic, same
    summation order, ELKI's kNN list order among tied neighbours), so rounding makes and breaks the same ties
    as in ELKI (ELKI's evaluation measures depend on them). NaN of ELKI's FastABOD (no pair) is +inf here."""
    with np.load(_ELKI_FIXTURES / f"{dataset}.npz", allow_pickle=False) as z:
        if f"{method}__ks" not in z.files:
            pytest.skip(f"{method} not in {dataset}.npz")
        X, ks, ref = z["X"], [int(k) for k in z[f"{method}__ks"]], z[f"{method}__scores"]
    got = get_detector(method, **_ELKI_VARIANTS[method]).raw_scores_all_k(knn_graph(X, max(ks)), ks)
    ref = np.where(np.isnan(ref), np.inf, ref) if method == "FastABOD" else ref
    for t, k in enumerate(ks):
        bad = np.flatnonzero(got[t] != ref[t])
        assert bad.size == 0, f"{dataset} {method} k={k}: objects {bad[:5].tolist()} differ: " \
                              f"{got[t][bad[:5]].tolist()} vs ELKI {ref[t][bad[:5]].tolist()}"


def test_ldof_elki_variant_same_formula():
    X = _datasets()["grid"]
    g = knn_graph(X, 9)
    a = ldof_scores(g, [2, 5, 9])
    b = ldof_scores(g, [2, 5, 9], variant="elki-0.7.1")
    np.testing.assert_allclose(a, b, rtol=1e-12)
    with pytest.raises(ValueError, match="Euclidean"):
        LDOF(variant="elki-0.7.1").raw_scores_all_k(knn_graph(X, 3, metric="manhattan"), [3])
    with pytest.raises(ValueError, match="unknown variant"):
        LDOF(variant="0.7.5")


def test_ldof_without_blocks_equals_the_block_kernel():
    """The block-free Euclidean kernel (issue 28) gives the (w+1)²-block kernel's values bit for bit."""
    from odeval.detectors._neighborhood import _iter_blocks, _variant_lists
    from odeval.detectors.ldof import LDOF, _ldof_chunk, _ldof_euclidean_rows

    rng = np.random.default_rng(4)
    X = np.vstack([np.round(rng.normal(size=(300, 5)), 1), rng.normal(size=(100, 5)) * 3])
    X[20:32] = X[7]  # duplicates: inner distance 0
    g = knn_graph(X, 30)
    for ks in (list(range(2, 31)), [2, 3, 9, 30]):
        v = _variant_lists(g, ks, LDOF.info, "paper")
        ref = np.empty((v.ks.size, g.n_objects))
        for rows, block in _iter_blocks(v.graph, v.sizes[-1]):
            ref[:, rows] = _ldof_chunk(block, np.ascontiguousarray(v.sizes[:, rows]))
        np.testing.assert_array_equal(_ldof_euclidean_rows(v.X, v.dist, v.idx, v.sizes, np.empty(0, np.int64)), ref)


def _duplicate_heavy(seed=3):
    """Eight locations of a binary 4-cube with 300 … 20 copies each (many exact ties at the k-distance: the cube's
    locations are equidistant), plus 25 scattered objects near them and 200 apart (rows without duplicates)."""
    rng = np.random.default_rng(seed)
    cube = np.array(list(itertools.product([0.0, 1.0], repeat=4)))
    centres = cube[rng.choice(16, size=8, replace=False)]
    X = np.repeat(centres, [300, 200, 150, 60, 40, 20, 3, 1], axis=0)
    X = np.vstack([X, rng.random((25, 4)) * 1.5, 5.0 + rng.random((200, 4))])
    return X[rng.permutation(X.shape[0])]


def _exact_ldof(X, members, dists):
    """LDOF from the exact (rational) sums of the same float64 distances, pairs grouped by location."""
    from fractions import Fraction

    n = len(members)
    locs, cnt = np.unique(X[members], axis=0, return_counts=True)
    ps = Fraction(0)
    for a in range(len(locs)):
        for b in range(a + 1, len(locs)):
            s = 0.0
            for t in locs[a] - locs[b]:
                s += t * t
            ps += int(cnt[a]) * int(cnt[b]) * Fraction(float(np.sqrt(s)))
    ds = sum((Fraction(float(x)) for x in dists), Fraction(0))
    return float((ds / n) / (ps / Fraction(n * (n - 1), 2))) if ps else math.nan


def test_ldof_rows_of_duplicates_sum_by_location():
    """Rows of ≥ 128 members on at most half as many locations sum D̄ over locations (issue 26): within 1e-13
    relative of the exact (rational) sums of the same float64 distances; the pairwise sum's own rounding over
    O(w²) additions is larger (here up to 1.8e-12 relative), so the two paths agree to 5e-12, not bit for bit;
    the same ±inf / 1.0 cases; every other row bit for bit the pairwise kernel's."""
    from odeval.detectors._neighborhood import _variant_lists
    from odeval.detectors.ldof import _by_location, _ldof_euclidean_rows, _location_ids

    X = _duplicate_heavy()
    g = knn_graph(X, 130)
    ks = [2, 14, 60, 130]
    v = _variant_lists(g, ks, LDOF.info, "paper")
    loc = _location_ids(v.X)
    assert loc.max() + 1 == len(np.unique(X, axis=0))
    pairwise = _ldof_euclidean_rows(v.X, v.dist, v.idx, v.sizes, np.empty(0, np.int64))
    got = ldof_scores(g, ks)
    fast = np.array([_by_location(v.idx[p], v.sizes[-1, p], loc).size > 0 for p in range(g.n_objects)])
    assert 0 < fast.sum() < g.n_objects
    assert v.sizes[-1].max() > 300  # ties at the k-distance: whole locations enter together
    np.testing.assert_array_equal(got[:, ~fast], pairwise[:, ~fast])
    np.testing.assert_array_equal(np.isinf(got), np.isinf(pairwise))
    np.testing.assert_array_equal(got == 1.0, pairwise == 1.0)
    np.testing.assert_allclose(got, pairwise, rtol=5e-12, atol=0)
    for p in np.flatnonzero(fast)[::20]:
        for t in range(len(ks)):
            n = v.sizes[t, p]
            ref = _exact_ldof(X, v.idx[p, :n], v.dist[p, :n])
            if np.isfinite(ref):
                assert abs(got[t, p] - ref) <= 1e-13 * ref
    # the value depends on the members' coordinates only: the objects renumbered, the same scores bit for bit
    perm = np.random.default_rng(0).permutation(X.shape[0])
    np.testing.assert_array_equal(ldof_scores(knn_graph(X[perm], 130), ks), got[:, perm])


@pytest.mark.parametrize("metric", ["manhattan", "chebyshev"])
def test_ldof_other_metrics_without_blocks(metric):
    """Manhattan / Chebyshev graphs: the row kernel gives the block kernel's values bit for bit where no row
    sums by location, and within the pairwise sums' rounding (5e-12 relative) on rows of many duplicates."""
    from odeval.detectors._neighborhood import _iter_blocks, _variant_lists
    from odeval.detectors.ldof import _ldof_chunk

    for X, ks in ((_datasets()["grid"], [2, 5, 9]), (_duplicate_heavy(), [3, 40, 150])):
        g = knn_graph(X, max(ks), metric=metric)
        v = _variant_lists(g, ks, LDOF.info, "paper")
        ref = np.empty((v.ks.size, g.n_objects))
        for rows, block in _iter_blocks(v.graph, v.sizes[-1]):
            ref[:, rows] = _ldof_chunk(block, np.ascontiguousarray(v.sizes[:, rows]))
        got = ldof_scores(g, ks)
        if v.sizes[-1].max() < 128:
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
            np.testing.assert_allclose(got, ref, rtol=5e-12, atol=0)
