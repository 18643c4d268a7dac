"""Similarity of scorings (Schubert et al. 2012, Sect. 3): class-balanced weights, weighted Pearson /
Manhattan / squared Euclidean, the estimated outlier set, similarity matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from odeval.compare import (
    class_balanced_weights,
    estimated_outliers,
    kendall_tau_b,
    similarity,
    similarity_matrix,
    spearman_rho,
    weighted_manhattan,
    weighted_pearson,
    weighted_squared_euclidean,
)
from odeval.measures import roc_auc
from odeval.scaling import GaussianScaling

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "scaling" / "elki_scaling.npz"


def _naive_weighted_pearson(x, y, w):
    mx, my = np.sum(w * x) / w.sum(), np.sum(w * y) / w.sum()
    return np.sum(w * (x - mx) * (y - my)) / np.sqrt(np.sum(w * (x - mx) ** 2) * np.sum(w * (y - my) ** 2))


def test_class_balanced_weights():
    y = np.array([1, 0, 0, 0, 1, 0, 0, 0, 0, 0])
    w = class_balanced_weights(y)
    assert w[y == 1].tolist() == [0.25, 0.25]
    assert np.allclose(w[y == 0], 1 / 16)
    assert w.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no outlier"):
        class_balanced_weights(np.zeros(5))


def test_weighted_pearson_equals_formula_and_multiplicity():
    rng = np.random.default_rng(0)
    x, y = rng.random(30), rng.random(30)
    lab = np.zeros(30, bool)
    lab[:3] = True
    w = class_balanced_weights(lab)
    assert weighted_pearson(x, y, w) == pytest.approx(_naive_weighted_pearson(x, y, w), rel=1e-13)
    # integer weights = repeating objects: equals the unweighted Pearson of the repeated data
    m = rng.integers(1, 4, 30)
    xr, yr = np.repeat(x, m), np.repeat(y, m)
    assert weighted_pearson(x, y, m.astype(float)) == pytest.approx(np.corrcoef(xr, yr)[0, 1], rel=1e-12)
    # equal weights = ordinary Pearson
    assert weighted_pearson(x, y, np.ones(30)) == pytest.approx(np.corrcoef(x, y)[0, 1], rel=1e-12)


def test_weighted_pearson_invariances_and_conventions():
    rng = np.random.default_rng(1)
    x, y = rng.random(20), rng.random(20)
    w = class_balanced_weights(np.arange(20) < 4)
    r = weighted_pearson(x, y, w)
    assert weighted_pearson(3 * x + 7, y, w) == pytest.approx(r, rel=1e-12)
    assert weighted_pearson(-x, y, w) == pytest.approx(-r, rel=1e-12)
    assert weighted_pearson(x, x, w) == pytest.approx(1.0)
    const = np.full(20, 0.3)
    assert weighted_pearson(const, const + 1, w) == 1.0  # both constant (ELKI convention)
    assert weighted_pearson(const, x, w) == 0.0  # one constant
    with pytest.raises(ValueError, match="labels use class_balanced_weights"):
        weighted_pearson(x, y, np.arange(20) < 4)
    with pytest.raises(ValueError, match="NaN"):
        weighted_pearson(np.r_[x[:-1], np.nan], y, w)
    with pytest.raises(ValueError, match="differ in length"):
        weighted_pearson(x, y[:-1], w)


def test_weighted_distances():
    x = np.array([0.0, 0.5, 1.0, 0.2])
    y = np.array([1.0, 0.5, 0.0, 0.0])
    w = np.array([0.5, 0.1, 0.2, 0.2])
    assert weighted_manhattan(x, y, w) == pytest.approx(0.5 + 0.2 + 0.04)
    assert weighted_squared_euclidean(x, y, w) == pytest.approx(0.5 + 0.2 + 0.008)


def test_rank_correlations_match_scipy_with_ties():
    x = np.array([1, 2, 2, 3, 3, 3, 4, 5], float)
    y = np.array([2, 1, 2, 3, 5, 3, 4, 4], float)
    assert spearman_rho(x, y) == pytest.approx(stats.spearmanr(x, y).statistic)
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    assert similarity(x, y, measure="kendall") == kendall_tau_b(x, y)


def test_estimated_outliers_round_robin():
    s = np.array([
        [9.0, 8.0, 7.0, 1.0, 0.0, 0.0],
        [0.0, 8.0, 0.0, 9.0, 7.0, 0.0],
    ])
    # round 1: {0, 3}; round 2: {1} (seen twice); round 3: {2, 4}
    assert np.flatnonzero(estimated_outliers(s, n_outliers=2)).tolist() == [0, 3]
    assert np.flatnonzero(estimated_outliers(s, n_outliers=3)).tolist() == [0, 1, 3]
    assert np.flatnonzero(estimated_outliers(s, n_outliers=4)).tolist() == [0, 1, 2, 3, 4]  # round completed
    s3 = np.vstack([s, [0.0, 8.5, 0.0, 0.0, 0.0, 9.0]])
    assert np.flatnonzero(estimated_outliers(s3, n_outliers=1, minvote=2)).tolist() == [1]
    # minvote is capped at n_scorings - 1 (as in ELKI): with two scorings, minvote=2 acts as 1
    assert np.flatnonzero(estimated_outliers(s, n_outliers=1, minvote=2)).tolist() == [0, 3]
    assert estimated_outliers(s[0], rate=0.2).tolist() == [True, False, False, False, False, False]
    with pytest.raises(ValueError, match="rate"):
        estimated_outliers(s, rate=1.5)
    with pytest.raises(ValueError, match="n_outliers"):
        estimated_outliers(s, n_outliers=6)
    with pytest.raises(ValueError, match="scoring 1, object 2"):
        estimated_outliers(np.array([[0.0, 1.0, 2.0], [0.0, 1.0, np.inf]]))


def test_similarity_without_labels_uses_estimated_set():
    rng = np.random.default_rng(2)
    x, y = rng.random(50), rng.random(50)
    est = estimated_outliers(np.stack([x, y]), n_outliers=5)
    w = class_balanced_weights(est)
    assert similarity(x, y, n_outliers=5) == pytest.approx(weighted_pearson(x, y, w))
    assert similarity(x, y, est, measure="manhattan") == pytest.approx(weighted_manhattan(x, y, w))
    assert similarity(x, y, est, measure="sqeuclidean") == pytest.approx(weighted_squared_euclidean(x, y, w))
    with pytest.raises(ValueError, match="unknown measure"):
        similarity(x, y, est, measure="cosine")


@pytest.mark.parametrize("measure", ["pearson", "manhattan", "sqeuclidean", "spearman", "kendall"])
def test_similarity_matrix_consistent_with_pairs(measure):
    rng = np.random.default_rng(3)
    y = np.zeros(40, bool)
    y[:4] = True
    S = np.clip(rng.random((5, 40)) + 0.5 * y, 0, 1)
    M = similarity_matrix(S, y, measure=measure)
    assert M.shape == (6, 6)
    np.testing.assert_allclose(M, M.T)
    full = np.vstack([y.astype(float), S])
    for i in range(6):
        for j in range(6):
            if i != j:
                assert M[i, j] == pytest.approx(similarity(full[i], full[j], y, measure=measure), rel=1e-12)
    assert np.all(np.diag(M) == (1.0 if measure in ("pearson", "spearman", "kendall") else 0.0))


def test_similarity_matrix_without_labels_and_errors():
    rng = np.random.default_rng(4)
    S = rng.random((3, 30))
    M = similarity_matrix(S, n_outliers=3)
    est = estimated_outliers(S, n_outliers=3)
    assert M[0, 1] == pytest.approx(weighted_pearson(est.astype(float), S[0], class_balanced_weights(est)))
    with pytest.raises(ValueError, match="differ in length"):
        similarity_matrix(S, np.arange(29) < 3)
    with pytest.raises(ValueError, match="2-d"):
        similarity_matrix(np.zeros((2, 2, 2)), None)


@pytest.mark.parametrize("measure", ["PEARSON", "SQEUCLIDEAN", "MANHATTAN"])
def test_matches_elki_greedy_ensemble_log(measure):
    """ELKI 0.7.1 GreedyEnsembleExperiment (-greedy.rate 0.05, prescaling StandardDeviationScaling λ=3): the
    estimated outlier set, each row's weighted distance to the estimated target ("estimated") and to the true
    labels with the same weights ("cost"), ROC AUC, and the naive mean ensemble."""
    with np.load(FIX) as z:
        names = list(z["plain/names"])
        raw, y = z["plain/raw"], z["plain/labels"]
        g = {k.split("/")[-1]: z[k] for k in z.files if k.startswith(f"greedy/{measure}/")}
    keep = [i for i, n in enumerate(names) if not n.startswith(("ODIN", "FastABOD"))]
    assert [names[i] for i in keep] == list(g["names"])
    S = np.stack([GaussianScaling(3.0).fit_transform(raw[i]) for i in keep])
    est = estimated_outliers(S, rate=0.05)
    assert est.sum() == int(g["merged_count"])
    key = {"PEARSON": "pearson", "SQEUCLIDEAN": "sqeuclidean", "MANHATTAN": "manhattan"}[measure]
    w = class_balanced_weights(est)

    def dist(a, b):
        v = similarity(a, b, est, measure=key)
        return 1.0 - v if key == "pearson" else v

    for i, s in enumerate(S):
        assert dist(s, est.astype(float)) == pytest.approx(g["estimated"][i], rel=1e-12, abs=1e-15)
        assert dist(s, y.astype(float)) == pytest.approx(g["cost"][i], rel=1e-12, abs=1e-15)
        assert roc_auc(y, s) == g["auc"][i]
    naive = S.mean(axis=0)
    assert roc_auc(y, naive) == float(g["naive_auc"])
    assert dist(naive, y.astype(float)) == pytest.approx(float(g["naive_cost"]), rel=1e-12)
    assert w.sum() == pytest.approx(1.0)


# Schubert, Wojdanowski, Zimek, Kriegel (SDM 2012), Table 2 ("Artificial scorings of 4 positive and 4 negative
# examples", ../shared/docs/papers/schubert2012-evaluation-outlier-rankings-scores.md, Sect. 3.7): scorings A–E of
# 8 objects (the first four are the outliers) and four rows of the table, each normalised by the paper "from 0 for
# perfect to 1 for random": ROC as 2(1 − AUC), Pearson as 1 − ρ_w (Eq. 3.1), squared Euclidean and Manhattan
# "linearly scaled", i.e. divided by the value of the random scoring E. (The table's smROC row is not implemented.)
TABLE2: dict = {
    "labels": [1, 1, 1, 1, 0, 0, 0, 0],
    "scorings": {
        "A": [1.0, 1.0, 0.9, 0.3, 0.1, 0.0, 0.0, 0.0],
        "B": [1.0, 1.0, 0.9, 0.2, 0.1, 0.1, 0.0, 0.0],
        "B'": [1.0, 1.0, 0.9, 0.1, 0.2, 0.1, 0.0, 0.0],
        "C": [1.0, 1.0, 0.55, 0.55, 0.45, 0.45, 0.0, 0.0],
        "D": [1.0, 1.0, 0.1, 0.01, 0.0, 0.0, 0.0, 0.0],
        "D'": [1.0, 1.0, 0.1, 0.0, 0.01, 0.0, 0.0, 0.0],
        "E": [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0],
    },
    "rows": {
        "ROC": {"A": 0.000, "B": 0.000, "B'": 0.188, "C": 0.000, "D": 0.000, "D'": 0.312, "E": 1.000},
        "Pearson": {"A": 0.119, "B": 0.165, "B'": 0.223, "C": 0.226, "D": 0.381, "D'": 0.387, "E": 1.000},
        "Sq. Eucl.": {"A": 0.127, "B": 0.168, "B'": 0.218, "C": 0.202, "D": 0.448, "D'": 0.453, "E": 1.000},
        "Manhattan": {"A": 0.225, "B": 0.275, "B'": 0.325, "C": 0.450, "D": 0.473, "D'": 0.478, "E": 1.000},
    },
}


def test_schubert_2012_table2():
    """Every value of the four rows to the table's three decimals (half a unit of the last digit: the paper
    rounds half up, e.g. Manhattan D' = 0.23875 / 0.5 = 0.4775 is printed 0.478)."""
    y = np.asarray(TABLE2["labels"], bool)
    target = y.astype(float)
    random = np.asarray(TABLE2["scorings"]["E"], float)
    scale = {m: similarity(random, target, y, measure=m) for m in ("sqeuclidean", "manhattan")}
    tol = 5e-4 + 1e-12
    for name, s in TABLE2["scorings"].items():
        s = np.asarray(s, float)
        rows = TABLE2["rows"]
        assert 2 * (1 - roc_auc(y, s)) == pytest.approx(rows["ROC"][name], abs=tol), name
        assert 1 - similarity(s, target, y) == pytest.approx(rows["Pearson"][name], abs=tol), name
        assert similarity(s, target, y, measure="sqeuclidean") / scale["sqeuclidean"] == pytest.approx(
            rows["Sq. Eucl."][name], abs=tol), name
        assert similarity(s, target, y, measure="manhattan") / scale["manhattan"] == pytest.approx(
            rows["Manhattan"][name], abs=tol), name
