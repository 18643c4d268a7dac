"""GLOSH (Campello et al. 2015): a slow reference that builds the HDBSCAN* hierarchy level by level from the
complete mutual-reachability graph, a hand-computed example, and a cross-check with the ``hdbscan`` library."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from odeval.detectors import get_detector
from odeval.detectors.glosh import GLOSH, glosh_scores
from odeval.neighbors import knn_graph


def _components(points, M, h):
    """Connected components of ``points`` in the graph of mutual-reachability edges of weight < h."""
    pts = np.array(sorted(points))
    _, lab = connected_components(csr_matrix(M[np.ix_(pts, pts)] < h), directed=False)
    return [set(pts[lab == c].tolist()) for c in range(lab.max() + 1)]


def reference_glosh(X, k, mcs, D=None):
    n = len(X)
    if D is None:
        D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    core = np.sort(D, axis=1)[:, k]  # k-th nearest other object (column 0 is the object itself)
    M = np.maximum(D, np.maximum(core[:, None], core[None, :]))
    levels = sorted({float(v) for v in M[np.triu_indices(n, 1)]}, reverse=True)
    eps = np.zeros(n)
    clus = np.zeros(n, dtype=int)
    parent = {0: None}
    active = {0: set(range(n))}
    for h in levels:  # at radius just below h, only edges of weight < h remain
        for c in list(active):
            comps = _components(active[c], M, h)
            if len(comps) == 1:
                continue
            big = [s for s in comps if len(s) >= mcs]
            for s in comps:
                if len(s) < mcs:
                    for x in s:
                        eps[x], clus[x] = h, c
            del active[c]
            if len(big) == 1:
                active[c] = big[0]
            elif len(big) >= 2:
                for s in big:
                    cid = len(parent)
                    parent[cid] = c
                    active[cid] = s
    for c, pts in active.items():  # remaining clusters end at radius 0 (exact duplicates)
        for x in pts:
            eps[x], clus[x] = 0.0, c
    emax = {c: math.inf for c in parent}
    for x in range(n):
        emax[clus[x]] = min(emax[clus[x]], eps[x])
    for c in sorted(parent, reverse=True):
        if parent[c] is not None:
            emax[parent[c]] = min(emax[parent[c]], emax[c])
    return np.array([0.0 if eps[x] == 0 else 1.0 - emax[clus[x]] / eps[x] for x in range(n)])


def _datasets():
    rng = np.random.default_rng(2)
    blobs = np.vstack([rng.normal(size=(20, 2)), rng.normal(size=(15, 2)) + 5, rng.uniform(-4, 9, size=(5, 2))])
    grid = rng.integers(0, 5, size=(40, 2)).astype(float)  # ties everywhere, duplicates
    return {"blobs": blobs, "grid": grid}


@pytest.mark.parametrize("name", ["blobs", "grid"])
def test_glosh_matches_level_by_level_reference(name):
    X = _datasets()[name]
    ks = [2, 3, 5, 8]
    g = knn_graph(X, max(ks))
    got = glosh_scores(g, ks)
    for t, k in enumerate(ks):
        np.testing.assert_allclose(got[t], reference_glosh(X, k, k), rtol=1e-12, atol=1e-15)
    got3 = glosh_scores(g, ks, min_cluster_size=3)
    for t, k in enumerate(ks):
        np.testing.assert_allclose(got3[t], reference_glosh(X, k, 3), rtol=1e-12, atol=1e-15)


def test_glosh_other_metric():
    X = _datasets()["blobs"]
    D = np.abs(X[:, None, :] - X[None, :, :]).sum(-1)
    got = glosh_scores(knn_graph(X, 5, metric="manhattan"), [3, 5])
    for t, k in enumerate([3, 5]):
        np.testing.assert_allclose(got[t], reference_glosh(X, k, k, D), rtol=1e-12, atol=1e-15)


def test_glosh_hand_example():
    # 1-D: 0, 1, 2, 3, 10; k = 2 (core = 2nd nearest other): 2, 1, 1, 2, 8.
    # MST of mutual reachability: 0-1: 2, 1-2: 1, 2-3: 2, 3-10: 8.
    # ε = 8: {10} falls out of the root (size 1 < 2); ε = 2: edges 0-1 and 2-3 go together, {0} and {3}
    # fall out, {1, 2} continues; ε = 1: 1 and 2 fall out.  ε_max(root) = 1.
    X = np.array([[0.0], [1.0], [2.0], [3.0], [10.0]])
    s = glosh_scores(knn_graph(X, 2), [2])[0]
    np.testing.assert_allclose(s, [0.5, 0.0, 0.0, 0.5, 1 - 1 / 8], rtol=1e-15)


def test_glosh_duplicates_no_nan():
    X = np.array([[0.0, 0.0]] * 4 + [[1.0, 1.0], [1.0, 1.2], [9.0, 9.0]])
    s = glosh_scores(knn_graph(X, 3), [2, 3])
    assert np.isfinite(s).all() and (s >= 0).all() and (s <= 1).all()
    # ε_max of the root is 0 (the duplicates' cluster never dissolves): every other object scores exactly 1
    np.testing.assert_array_equal(s, [[0, 0, 0, 0, 1, 1, 1]] * 2)


def test_glosh_params():
    assert get_detector("GLOSH").info.min_k == 2
    with pytest.raises(ValueError, match="min_cluster_size"):
        GLOSH(min_cluster_size=1)


def test_glosh_cross_check_hdbscan():
    """Same as hdbscan.HDBSCAN(min_cluster_size=k, min_samples=k).outlier_scores_, except where hdbscan's
    binary single-linkage tree resolves equal-weight MST edges one at a time: a point that falls out at the
    very λ at which its hdbscan cluster is born belongs, in the paper's simultaneous removal, to the parent
    cluster. Those points are checked against our definition (the level-by-level reference) instead."""
    hdbscan = pytest.importorskip("hdbscan")
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(80, 2)), rng.normal(size=(60, 2)) + 6, rng.uniform(-5, 10, size=(15, 2))])
    g = knn_graph(X, 20)
    for k in (3, 5, 10, 20):
        ours = glosh_scores(g, [k])[0]
        with np.errstate(all="ignore"):
            h = hdbscan.HDBSCAN(min_cluster_size=k, min_samples=k, algorithm="generic").fit(X)
        ct = h.condensed_tree_.to_numpy()
        birth = {int(r["child"]): float(r["lambda_val"]) for r in ct if r["child"] >= len(X)}
        same = np.isclose(ours, h.outlier_scores_, rtol=1e-12, atol=1e-12)
        for x in np.flatnonzero(~same):
            row = ct[ct["child"] == x][0]
            assert math.isclose(row["lambda_val"], birth[int(row["parent"])], rel_tol=1e-9), (k, x)
        assert same.mean() > 0.9


@pytest.mark.slow
def test_d2_methods_on_waveform_all_k(dami):
    """LDOF, COF, FastABOD, INFLO, GLOSH for k = 1..100 on Waveform (3443 × 21): finite, no NaN, and better
    than random at finding the labelled outliers."""
    from sklearn.metrics import roc_auc_score

    from odeval.data import load_dataset

    path = dami / "Waveform" / "Waveform_withoutdupl_norm_v01.arff"
    if not path.exists():
        pytest.skip(f"{path} not found")
    ds = load_dataset(path)
    g = knn_graph(ds.X, 100)
    for name in ("LDOF", "COF", "FastABOD", "INFLO", "GLOSH"):
        det = get_detector(name)
        ks = list(range(det.info.min_k, 101))
        S = det.score_all_k(g, ks)
        assert np.isfinite(S).all(), name
        assert roc_auc_score(ds.y, S[ks.index(20)]) > 0.6, name
