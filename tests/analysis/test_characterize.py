"""Binned ranks, difficulty, diversity, random baselines and the label permutation test (Campos et al. §5.3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from odeval.analysis import (
    best_k_binned_ranks,
    bin_ranks,
    check_runs_frame,
    dataset_baselines,
    dataset_table,
    difficulty_diversity,
    difficulty_diversity_from_bins,
    label_permutation_test,
    per_variant_summary,
    permutation_test_summary,
    permutation_tests,
    pooled_permutation_summary,
    random_ranker_baselines,
    rank_objects,
)


def test_bin_ranks_edges_and_cap():
    # |O| = 5: ranks 1..5 → bin 1, 6 → 2, 50 → 10, 51 and beyond → capped at 10
    assert bin_ranks([1, 5, 6, 10, 11, 45, 46, 50, 51, 1000], 5).tolist() == [1, 1, 2, 2, 3, 9, 10, 10, 10, 10]
    assert bin_ranks([5.5, 4.5, 10.0], 5).tolist() == [2, 1, 2]  # averaged tie ranks
    assert bin_ranks([7], 3, n_bins=2).tolist() == [2]
    with pytest.raises(ValueError, match=">= 1"):
        bin_ranks([0], 5)
    with pytest.raises(ValueError, match="n_outliers"):
        bin_ranks([1], 0)


def test_difficulty_and_diversity_by_hand():
    bins = np.array([[1, 1, 10], [1, 3, 10]])  # 2 methods × 3 outliers
    d, v = difficulty_diversity_from_bins(bins)
    assert d == pytest.approx(26 / 6)
    # population sd per outlier: 0, 1, 0 → RMS = sqrt(1/3)
    assert v == pytest.approx(np.sqrt(1 / 3))
    _, v1 = difficulty_diversity_from_bins(bins, ddof=1)
    assert v1 == pytest.approx(np.sqrt(2 / 3))
    assert difficulty_diversity_from_bins(np.ones((4, 7))) == (1.0, 0.0)


def test_rank_objects_matches_measures_outlier_ranks():
    from odeval.measures import outlier_ranks

    rng = np.random.default_rng(1)
    s = np.round(rng.normal(size=300), 1)  # many ties
    y = rng.random(300) < 0.1
    for ties in ("average", "min", "max"):
        np.testing.assert_array_equal(rank_objects(s, ties)[y], outlier_ranks(y, s, ties=ties))
    assert rank_objects([np.inf, 1.0, -np.inf, np.inf]).tolist() == [1.5, 3.0, 4.0, 1.5]
    with pytest.raises(ValueError, match="NaN"):
        rank_objects([1.0, np.nan])


def _expected_random_bin(n, n_out, n_bins=10):
    r = np.arange(1, n + 1)
    return np.minimum(np.ceil(r / n_out), n_bins).mean()


def test_random_baselines_agree_with_the_exact_expectation():
    n, n_out, m = 200, 8, 6
    sim = random_ranker_baselines(n, n_out, m, n_simulations=400, seed=3)
    ind = sim[sim["baseline"] == "independent"]
    ide = sim[sim["baseline"] == "identical"]
    expected = _expected_random_bin(n, n_out)
    for grp in (ind, ide):
        se = grp["difficulty"].std(ddof=1) / np.sqrt(len(grp))
        assert abs(grp["difficulty"].mean() - expected) < 4 * se
    assert (ide["diversity"] == 0).all() and (ind["diversity"] > 0).all()
    assert len(ind) == len(ide) == 400


def test_random_baselines_are_seeded_and_order_independent():
    a = random_ranker_baselines(100, 5, 3, 50, seed=7)
    pd.testing.assert_frame_equal(a, random_ranker_baselines(100, 5, 3, 50, seed=7))
    assert not a.equals(random_ranker_baselines(100, 5, 3, 50, seed=8))
    meta = pd.DataFrame({"dataset": ["x", "y"], "n_objects": [100, 80], "n_outliers": [5, 4]})
    one = dataset_baselines(meta, 3, 50, seed=1)
    two = dataset_baselines(meta.iloc[::-1], 3, 50, seed=1)
    pd.testing.assert_frame_equal(one.sort_values(["dataset", "baseline"]).reset_index(drop=True),
                                  two.sort_values(["dataset", "baseline"]).reset_index(drop=True))
    with pytest.raises(ValueError, match="smaller than n_objects"):
        random_ranker_baselines(5, 5, 2)


def test_permutation_test_perfect_and_random_scorings():
    n, n_out = 300, 10
    y = np.zeros(n, dtype=bool)
    y[:n_out] = True
    perfect = np.where(y, 1.0, 0.0) + np.linspace(0, 0.1, n)
    dist = label_permutation_test(y, {"a": perfect, "b": perfect * 2}, n_permutations=200, seed=0)
    assert (dist["observed_difficulty"] == 1.0).all() and (dist["observed_diversity"] == 0.0).all()
    summ = permutation_test_summary(dist).iloc[0]
    assert summ["p_value"] == pytest.approx(1 / 201)
    assert summ["permuted_mean"] == pytest.approx(_expected_random_bin(n, n_out), abs=0.3)
    again = label_permutation_test(y, np.vstack([perfect, perfect * 2]), n_permutations=200, seed=0)
    np.testing.assert_array_equal(dist["difficulty"], again["difficulty"])  # mapping or array: same draws
    with pytest.raises(ValueError, match="have 5 values"):
        label_permutation_test(y, {"a": np.ones(5)})
    with pytest.raises(ValueError, match="no outlier"):
        label_permutation_test(np.zeros(n, dtype=bool), {"a": perfect})


def test_best_k_binned_ranks_on_synthetic(synthetic):
    runs, ranks = synthetic
    s = per_variant_summary(runs, "roc_auc")
    binned = best_k_binned_ranks(ranks, s)
    n_var, n_meth, n_out = runs["dataset"].nunique(), runs["method"].nunique(), int(runs["n_outliers"].iloc[0])
    assert len(binned) == n_var * n_meth * n_out
    best = s.set_index(["dataset", "config"])["best_k"]
    assert all(best[(r.dataset, r.config)] == r.k for r in binned.itertuples())
    assert ((binned["bin"] >= 1) & (binned["bin"] <= 10)).all()
    ch = difficulty_diversity(binned)
    assert len(ch) == n_var and ch["n_methods"].eq(n_meth).all()
    with pytest.raises(ValueError, match="no rank"):
        best_k_binned_ranks(ranks[ranks["k"] != 5], s.assign(best_k=pd.array([5] * len(s), dtype="Int64")))
    with pytest.raises(ValueError, match="outliers"):
        best_k_binned_ranks(ranks, s.assign(n_outliers=3))


@pytest.mark.shared_data
def test_realistic_characterisation(realistic):
    runs, ranks, best_scores = realistic
    s = per_variant_summary(runs)
    wbc = s[(s["base_dataset"] == "WBC") & (s["measure"] == "roc_auc")]
    assert (wbc["best"] > 0.85).all() and wbc["best"].max() > 0.98  # WBC is easy (Campos et al. Fig. 3)
    ch = difficulty_diversity(best_k_binned_ranks(ranks, s)).set_index("dataset")
    meta = dataset_table(check_runs_frame(runs))
    base = dataset_baselines(meta, n_methods=3, n_simulations=100, seed=0)
    rand = base[base["baseline"] == "independent"].set_index("dataset")
    assert (ch["difficulty"] < rand.loc[ch.index, "difficulty"]).all()  # real labels beat random rankers
    dist = pd.concat([label_permutation_test(y, sc, 300, 0, dataset=name) for name, (y, sc) in best_scores.items()])
    summ = permutation_test_summary(dist).set_index("dataset")
    assert summ.loc["WBC_withoutdupl_norm_v01", "p_value"] == pytest.approx(1 / 301)
    # the same test from store-shaped frames (scores table at the best k)
    rows = [{"dataset": name, "method": m, "params": "{}", "k": int(s[(s["dataset"] == name) & (s["method"] == m)
             & (s["measure"] == "roc_auc")]["best_k"].iloc[0]), "scores": v}
            for name, (_, sc) in best_scores.items() for m, v in sc.items()]
    store_dist = permutation_tests(s, ranks, pd.DataFrame(rows), n_permutations=300, seed=0)
    np.testing.assert_allclose(store_dist.sort_values(["dataset", "permutation"])["difficulty"].to_numpy(),
                               dist.sort_values(["dataset", "permutation"])["difficulty"].to_numpy())


def test_pooled_permutation_summary_as_in_fig7():
    # base "good": two variants whose three methods find the outliers (observed difficulty 1); base "noise": one
    # variant whose methods score at random, so its labels are no easier than permuted ones.
    rng = np.random.default_rng(0)
    n, n_out = 200, 10
    parts = {}
    for name, informative in (("good_v1", True), ("good_v2", True), ("noise", False)):
        y = np.zeros(n, dtype=bool)
        y[rng.choice(n, n_out, replace=False)] = True
        base = y.astype(float) if informative else np.zeros(n)
        scores = {m: base + 0.01 * rng.random(n) for m in ("a", "b", "c")}
        parts[name] = label_permutation_test(y, scores, n_permutations=300, seed=5, dataset=name)
    dist = pd.concat(parts.values(), ignore_index=True)
    groups = {"good_v1": "good", "good_v2": "good", "noise": "noise"}
    pooled = pooled_permutation_summary(dist, groups)
    assert pooled["base_dataset"].tolist() == ["good", "noise"]
    good, noise = pooled.iloc[0], pooled.iloc[1]
    assert good["n_variants"] == 2 and good["n_permuted"] == 600
    assert good["observed_max"] == 1.0 and good["gap"] > 0 and good["n_permuted_le_observed_max"] == 0
    assert good["p_value"] == pytest.approx(1 / 601)
    assert noise["n_variants"] == 1 and noise["n_permuted"] == 300
    assert noise["p_value"] > 0.01 and noise["gap"] < 0  # random scorings: the true labels are not special
    assert good["n_variants_unmatched"] == 2 and good["max_variant_p"] == pytest.approx(1 / 301)
    # the counts are those of the per-variant draws, pooled; each variant against its own draws as in
    # permutation_test_summary
    per_variant = permutation_test_summary(dist).set_index("dataset")
    assert noise["max_variant_p"] == pytest.approx(per_variant.loc["noise", "p_value"])
    assert noise["n_variants_unmatched"] == 0
    d = parts["noise"]
    assert noise["n_permuted_le_observed_max"] == int((d["difficulty"] <= d["observed_difficulty"].iloc[0]).sum())
    # seeded: the same inputs give the same summary; the variant order does not matter
    again = pooled_permutation_summary(dist.iloc[::-1], groups)
    pd.testing.assert_frame_equal(pooled, again)
    with pytest.raises(ValueError, match="no base dataset"):
        pooled_permutation_summary(dist, {"good_v1": "good"})
