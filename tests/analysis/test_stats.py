"""Friedman and Nemenyi tests (Demšar 2006), cross-checked against scipy and scikit-posthocs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from odeval.analysis import (
    average_ranks,
    friedman_test,
    nemenyi_claims,
    nemenyi_critical_difference,
    nemenyi_table,
    nemenyi_test,
    per_variant_summary,
    performance_matrix,
    rank_matrix,
)

# Demšar (2006), Table 5(a): critical values q_α of the two-tailed Nemenyi test, k = 2..10 classifiers.
DEMSAR_Q05 = [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164]
DEMSAR_Q10 = [1.645, 2.052, 2.291, 2.459, 2.589, 2.693, 2.780, 2.855, 2.920]


@pytest.mark.parametrize(("alpha", "table"), [(0.05, DEMSAR_Q05), (0.10, DEMSAR_Q10)])
def test_critical_difference_matches_demsar_table(alpha, table):
    for k, q in zip(range(2, 11), table, strict=True):
        n = 14
        cd = nemenyi_critical_difference(k, n, alpha)
        assert cd / np.sqrt(k * (k + 1) / (6 * n)) == pytest.approx(q, abs=1.5e-3)


def test_demsar_worked_example():
    # Demšar (2006), §3.2.2: k = 4, N = 14 → CD = 1.25 at α = 0.05 and 1.12 at α = 0.10.
    assert nemenyi_critical_difference(4, 14, 0.05) == pytest.approx(1.25, abs=5e-3)
    assert nemenyi_critical_difference(4, 14, 0.10) == pytest.approx(1.12, abs=5e-3)


def _random_matrix(seed=0, n=12, k=5, ties=True):
    rng = np.random.default_rng(seed)
    m = rng.normal(size=(n, k)) + np.linspace(0.0, 1.5, k)
    if ties:
        m = np.round(m, 1)  # create ties within datasets
        m[0, :] = 0.5  # a dataset where every method ties
    return pd.DataFrame(m, index=[f"d{i}" for i in range(n)], columns=[f"m{j}" for j in range(k)])


def test_ranks_are_average_ranks_with_1_best():
    m = pd.DataFrame([[0.9, 0.8, 0.8], [0.5, 0.7, 0.6]], columns=["a", "b", "c"])
    assert rank_matrix(m).to_numpy().tolist() == [[1.0, 2.5, 2.5], [3.0, 1.0, 2.0]]
    avg = average_ranks(m)
    assert avg["config"].tolist() == ["b", "a", "c"] and avg["mean_rank"].tolist() == [1.75, 2.0, 2.25]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_friedman_matches_scipy_with_ties(seed):
    m = _random_matrix(seed)
    ours = friedman_test(m).iloc[0]
    ref = sps.friedmanchisquare(*[m[c].to_numpy() for c in m.columns])
    assert ours["chi2"] == pytest.approx(ref.statistic, rel=1e-12)
    assert ours["p_chi2"] == pytest.approx(ref.pvalue, rel=1e-9)
    n, k = m.shape
    f = (n - 1) * ours["chi2"] / (n * (k - 1) - ours["chi2"])
    assert ours["f"] == pytest.approx(f) and ours["p_f"] == pytest.approx(sps.f.sf(f, k - 1, (k - 1) * (n - 1)))


def test_friedman_without_ties_is_demsars_formula():
    m = _random_matrix(3, ties=False)
    n, k = m.shape
    r = rank_matrix(m).mean(axis=0).to_numpy()
    chi2 = 12 * n / (k * (k + 1)) * (np.sum(r**2) - k * (k + 1) ** 2 / 4)
    res = friedman_test(m).iloc[0]
    assert res["chi2"] == pytest.approx(chi2, rel=1e-12) and res["tie_correction"] == 1.0


def test_friedman_all_tied_gives_no_evidence():
    res = friedman_test(np.full((4, 3), 0.5)).iloc[0]
    assert res["chi2"] == 0.0 and res["p_chi2"] == 1.0


def test_nemenyi_matches_scikit_posthocs():
    sp = pytest.importorskip("scikit_posthocs")
    m = _random_matrix(5)
    ours = nemenyi_test(m)
    ref = sp.posthoc_nemenyi_friedman(m.to_numpy())
    names = list(m.columns)
    for row in ours.itertuples():
        i, j = names.index(row.method_a), names.index(row.method_b)
        assert row.p_value == pytest.approx(ref.iloc[i, j], rel=1e-6, abs=1e-12)


def test_nemenyi_significance_is_rank_difference_above_cd():
    m = _random_matrix(7, n=30, k=4, ties=False)
    res = nemenyi_test(m)
    n, k = m.shape
    for level, alpha in ((95, 0.05), (90, 0.10)):
        cd = nemenyi_critical_difference(k, n, alpha)
        assert (res[f"significant_{level}"] == (res["rank_diff"].abs() > cd)).all()
        # equivalently p < alpha (away from the boundary)
        clear = (res["rank_diff"].abs() - cd).abs() > 1e-6
        assert (res.loc[clear, f"significant_{level}"] == (res.loc[clear, "p_value"] < alpha)).all()
    assert (res["significant_90"] | ~res["significant_95"]).all()  # 95 % implies 90 %


def test_nemenyi_table_symbols_are_antisymmetric():
    m = _random_matrix(11, n=40, k=5, ties=False)
    table = nemenyi_table(nemenyi_test(m))
    flip = {"▲": "▼", "△": "▽", "▼": "▲", "▽": "△", "": ""}
    for a in table.index:
        assert table.loc[a, a] == ""
        for b in table.columns:
            assert table.loc[b, a] == flip[table.loc[a, b]]
    assert (table.to_numpy() != "").any()
    assert list(table.index) == list(average_ranks(m)["config"])  # best first


def test_performance_matrix_drops_incomplete_datasets_with_a_warning(synthetic):
    runs, _ = synthetic
    s = per_variant_summary(runs, "roc_auc")
    full = performance_matrix(s)
    assert full.shape == (runs["base_dataset"].nunique(), runs["method"].nunique())
    s2 = s[~((s["base_dataset"] == "Base0") & (s["method"] == "LOF"))]
    with pytest.warns(UserWarning, match="Base0"):
        part = performance_matrix(s2)
    assert "Base0" not in part.index and part.shape[0] == full.shape[0] - 1
    with pytest.raises(ValueError, match="measure"):
        performance_matrix(s, "no_such_measure")


def test_tests_need_two_datasets_and_two_methods():
    with pytest.raises(ValueError, match="at least 2 datasets"):
        friedman_test(np.ones((1, 3)))
    with pytest.raises(ValueError, match="NaN"):
        nemenyi_test(np.array([[0.1, np.nan], [0.2, 0.3]]))


def test_nemenyi_claims_relation_by_relation():
    # 20 datasets; a always first; b and c swap places 2/3; d always last:
    # mean ranks a 1, b 2.5, c 2.5, d 4; CD_95 for k = 4, N = 20 is 2.569·√(20/120) = 1.049.
    rows = [[4.0, 3.0, 2.0, 1.0] if i % 2 else [4.0, 2.0, 3.0, 1.0] for i in range(20)]
    m = pd.DataFrame(rows, columns=["a", "b", "c", "d"])
    pairwise = nemenyi_test(m)
    cd95 = nemenyi_critical_difference(4, 20, 0.05)
    claims = nemenyi_claims(pairwise, [("a", "b", 95), ("b", "c", 90), ("d", "a", 90)])
    assert claims["better"].tolist()[:3] == ["a", "b", "d"]
    first, second, third = claims.iloc[0], claims.iloc[1], claims.iloc[2]
    assert first["rank_diff"] == pytest.approx(1.5) and first["measured"] == 95 and first["holds"]
    assert first["cd_95"] == pytest.approx(cd95)
    assert second["rank_diff"] == 0.0 and second["measured"] == 0 and not second["holds"]
    assert third["measured"] == -95 and not third["holds"]  # the opposite is significant
    # unstated but measured significant: a > c and b > d, c > d (each 1.5 > CD), ordered by p then name
    extra = claims.iloc[3:]
    assert set(zip(extra["better"], extra["worse"], strict=True)) == {("a", "c"), ("b", "d"), ("c", "d")}
    assert (extra["claimed"] == 0).all() and not extra["holds"].any() and (extra["measured"] == 95).all()
    with pytest.raises(ValueError, match="no method 'x'"):
        nemenyi_claims(pairwise, [("x", "a", 95)])
    with pytest.raises(ValueError, match="listed twice"):
        nemenyi_claims(pairwise, [("a", "b", 95), ("b", "a", 90)])
    with pytest.raises(ValueError, match="90 or 95"):
        nemenyi_claims(pairwise, [("a", "b", 99)])
