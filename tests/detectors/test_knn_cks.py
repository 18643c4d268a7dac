"""variant="elki-0.7.1-cks": ELKI 0.7.1's batch tool ComputeKNNOutlierScores (the Campos et al. pipeline),
checked against its scores stored in the ELKI fixtures (tests/fixtures/elki_detectors, ``cks__*`` arrays),
for the methods that have the variant. KNN, LOF, LDF and INFLO differ from the stand-alone CLI there (the
tool's kNN sublists report the (k+1)-distance as k-distance, semantics doc §0.3); the others do not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.neighbors import knn_graph

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "elki_detectors"
PARAMS = {"KNN": {}, "KNNW": {}, "LOF": {}, "SimplifiedLOF": {}, "LoOP": {"lam": 1.0}, "ODIN": {},
          "KDEOS": {"idim": 2, "scale": 0.5, "min_bandwidth": 0.0}, "LDF": {"h": 1.0, "c": 0.1},
          "INFLO": {"m": 1.0}}


def _fixtures():
    out = []
    for path in sorted(FIXTURES.glob("*.npz")):
        with np.load(path, allow_pickle=False) as z:
            if "cks__KNN__scores" in z.files:
                out.append(path)
    return out


CKS = _fixtures()


@pytest.mark.skipif(not CKS, reason="no ComputeKNNOutlierScores scores in tests/fixtures/elki_detectors")
@pytest.mark.parametrize("path", CKS, ids=lambda p: p.stem)
@pytest.mark.parametrize("method", list(PARAMS))
def test_cks_variant_matches_compute_knn_outlier_scores(path, method):
    with np.load(path, allow_pickle=False) as z:
        X = z["X"]
        ks = [int(k) for k in z[f"cks__{method}__ks"]]
        ref = z[f"cks__{method}__scores"]
    det = get_detector(method, variant="elki-0.7.1-cks", **PARAMS[method])
    g = knn_graph(X, min(len(X) - 1, max(det.required_k_max(k) for k in ks)))
    ks_ok = [k for k in ks if det.required_k_max(k) <= g.k_max]
    got = det.raw_scores_all_k(g, ks_ok)
    for i, k in enumerate(ks_ok):
        r = ref[ks.index(k)]
        np.testing.assert_array_equal(np.isposinf(got[i]), np.isposinf(r), err_msg=f"{method} k={k}")
        fin = np.isfinite(r)
        np.testing.assert_allclose(got[i][fin], r[fin], rtol=1e-9, atol=1e-13 * np.abs(r[fin]).max(),
                                   err_msg=f"{method} k={k}")


def test_cks_knn_is_the_next_distance_and_serves_k_n_minus_1():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    g = knn_graph(X, 49)
    det = get_detector("KNN", variant="elki-0.7.1-cks")
    assert det.required_k_max(5) == 5  # the tool's lists are built from X, not from the graph
    got = det.raw_scores_all_k(g, list(range(1, 50)))
    np.testing.assert_array_equal(got[4], g.kdist(6))  # k < N − 1: the (k+1)-distance (the tool's off-by-one)
    np.testing.assert_array_equal(got[48], g.kdist(49))  # k = N − 1: the full list, the (N−1)-distance
    for m in ("LOF", "LDF", "INFLO", "COF", "LDOF", "KDEOS", "LoOP", "ODIN", "SimplifiedLOF"):
        s = get_detector(m, variant="elki-0.7.1-cks").raw_scores_all_k(g, [49])
        assert s.shape == (1, 50) and not np.isnan(s).any(), m
    with pytest.raises(ValueError, match="unknown variant"):
        get_detector("KNN", variant="cks")
