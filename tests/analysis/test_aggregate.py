"""Best k, mean over k, window around the best k; filters and aggregation (Campos et al. 2016, §5.2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from odeval.analysis import (
    aggregate_datasets,
    aggregate_variants,
    check_runs_frame,
    filter_variants,
    per_variant_summary,
    study_summary,
)


def _curve(values, ks=None, dataset="D_v01", method="M", params="{}", **extra):
    ks = list(range(1, len(values) + 1)) if ks is None else list(ks)
    rows = []
    for k, v in zip(ks, values, strict=True):
        rows.append({"dataset": dataset, "base_dataset": dataset.split("_")[0], "method": method, "params": params,
                     "k": k, "roc_auc": v, "status": "ok", "n_objects": 100, "n_outliers": 5, "n_attributes": 3,
                     **extra})
    return pd.DataFrame(rows)


def _one(summary):
    assert len(summary) == 1
    return summary.iloc[0]


def test_best_k_is_the_smallest_k_reaching_the_maximum():
    s = _one(per_variant_summary(_curve([0.5, 0.9, 0.7, 0.9, 0.6]), "roc_auc", half_window=1))
    assert s["best_k"] == 2 and s["best"] == 0.9
    assert s["mean_over_k"] == pytest.approx(np.mean([0.5, 0.9, 0.7, 0.9, 0.6]))
    assert (s["window_lo"], s["window_hi"]) == (1, 3)
    assert s["window_mean"] == pytest.approx(np.mean([0.5, 0.9, 0.7]))


def test_window_is_shifted_into_the_k_range():
    values = np.linspace(0.9, 0.5, 30)  # best at k = 1 (lower edge)
    s = _one(per_variant_summary(_curve(values), "roc_auc"))
    assert (s["best_k"], s["window_lo"], s["window_hi"]) == (1, 1, 11)
    assert s["window_mean"] == pytest.approx(values[:11].mean())
    up = _one(per_variant_summary(_curve(values[::-1]), "roc_auc"))  # best at k = 30 (upper edge)
    assert (up["best_k"], up["window_lo"], up["window_hi"]) == (30, 20, 30)
    assert up["window_mean"] == pytest.approx(values[::-1][19:].mean())
    mid = _one(per_variant_summary(_curve(np.r_[values[::-1][:15], values[:15]]), "roc_auc"))
    assert (mid["window_lo"], mid["window_hi"]) == (mid["best_k"] - 5, mid["best_k"] + 5)


def test_window_respects_a_method_minimum_k_and_a_narrow_range():
    s = _one(per_variant_summary(_curve([0.9, 0.8, 0.7, 0.6], ks=[2, 3, 4, 5]), "roc_auc"))
    assert (s["k_min"], s["window_lo"], s["window_hi"]) == (2, 2, 5)  # range narrower than the window
    assert s["window_mean"] == pytest.approx(0.75)
    s = _one(per_variant_summary(_curve(np.linspace(0.9, 0.5, 20), ks=range(3, 23)), "roc_auc"))
    assert (s["window_lo"], s["window_hi"]) == (3, 13)


def test_nan_values_are_ignored_and_all_nan_curves_give_na():
    s = _one(per_variant_summary(_curve([np.nan, 0.8, 0.6]), "roc_auc", half_window=0))
    assert s["best_k"] == 2 and s["n_k"] == 2 and s["mean_over_k"] == pytest.approx(0.7)
    s = _one(per_variant_summary(_curve([np.nan, np.nan]), "roc_auc"))
    assert pd.isna(s["best_k"]) and np.isnan(s["best"]) and s["n_k"] == 0


def test_failed_runs_are_excluded_and_counted():
    runs = pd.concat([_curve([0.5, 0.6]), _curve([0.99], ks=[3]).assign(status="error", error="boom")])
    s = _one(per_variant_summary(runs, "roc_auc"))
    assert s["best"] == 0.6 and s["k_max"] == 2
    summary = study_summary(runs).iloc[0]
    assert summary["n_runs_ok"] == 2 and summary["n_runs_error"] == 1


def test_duplicates_missing_columns_and_bad_k_raise():
    with pytest.raises(ValueError, match="duplicate"):
        per_variant_summary(pd.concat([_curve([0.5]), _curve([0.6])]), "roc_auc")
    with pytest.raises(ValueError, match="lacks required column"):
        per_variant_summary(_curve([0.5]).drop(columns="k"), "roc_auc")
    with pytest.raises(ValueError, match="not in runs"):
        per_variant_summary(_curve([0.5]), "no_such_measure")
    with pytest.raises(ValueError, match="integers"):
        per_variant_summary(_curve([0.5, 0.6], ks=[1, 1.5]), "roc_auc")
    with pytest.raises(ValueError, match="no successful run"):
        per_variant_summary(_curve([0.5]).assign(status="error"), "roc_auc")


def test_config_labels_parameter_settings_and_metrics():
    runs = pd.concat([_curve([0.5], params='{"a": 1}'), _curve([0.6], params='{"a": 2}'),
                      _curve([0.7], method="N", params="{}")])
    cfg = sorted(check_runs_frame(runs)["config"].unique())
    assert cfg == ["M (a=1)", "M (a=2)", "N"]
    runs = pd.concat([_curve([0.5], metric="euclidean"), _curve([0.6], metric="manhattan")])
    assert sorted(check_runs_frame(runs)["config"].unique()) == ["M [euclidean]", "M [manhattan]"]


def test_summary_on_synthetic_study(synthetic):
    runs, _ = synthetic
    s = per_variant_summary(runs)
    n_measures = s["measure"].nunique()
    assert len(s) == runs["dataset"].nunique() * runs["method"].nunique() * n_measures
    assert (s["best"] >= s["window_mean"] - 1e-12).all() and (s["window_mean"] >= s["mean_over_k"] - 0.2).all()
    # recompute one curve by hand
    row = s[(s["measure"] == "roc_auc")].iloc[3]
    cur = runs[(runs["dataset"] == row["dataset"]) & (runs["method"] == row["method"])].sort_values("k")
    assert row["best"] == cur["roc_auc"].max()
    assert row["best_k"] == cur.loc[cur["roc_auc"] == cur["roc_auc"].max(), "k"].min()
    win = cur[(cur["k"] >= row["window_lo"]) & (cur["k"] <= row["window_hi"])]
    assert len(win) == 11 and row["window_mean"] == pytest.approx(win["roc_auc"].mean())


def test_filter_variants():
    runs = pd.concat([
        _curve([0.5], dataset="A_v01", outlier_pct=2.0, normalized=True, deduplicated=True),
        _curve([0.5], dataset="B_v01", outlier_pct=5.0, normalized=False, deduplicated=True),
        _curve([0.5], dataset="C_v01", outlier_pct=np.nan, normalized=True, deduplicated=False),  # 5/100 → 5 %
        _curve([0.5], dataset="D_v01", outlier_pct=10.0, normalized=True, deduplicated=True),
    ])
    names = lambda f: sorted(f["dataset"].unique())  # noqa: E731
    assert names(filter_variants(runs, max_outlier_pct=5)) == ["A_v01", "B_v01", "C_v01"]
    assert names(filter_variants(runs, min_outlier_pct=3, max_outlier_pct=5)) == ["B_v01", "C_v01"]
    assert names(filter_variants(runs, normalized=False)) == ["B_v01"]
    assert names(filter_variants(runs, deduplicated=True, normalized=True)) == ["A_v01", "D_v01"]
    assert names(filter_variants(runs, base_datasets=["A", "D"])) == ["A_v01", "D_v01"]
    s = per_variant_summary(runs, "roc_auc")
    assert names(filter_variants(s, max_outlier_pct=4)) == ["A_v01"]
    with pytest.raises(ValueError, match="normalized"):
        filter_variants(runs.drop(columns="normalized"), normalized=True)


def test_aggregate_variants_mean_and_standard_error():
    runs = pd.concat([_curve([v, v - 0.1], dataset=f"A_v0{i}") for i, v in enumerate([0.6, 0.7, 0.9], 1)]
                     + [_curve([0.8, 0.5], dataset="B_v01")])
    s = per_variant_summary(runs, "roc_auc")
    agg = aggregate_variants(s).set_index("base_dataset")
    assert agg.loc["A", "best"] == pytest.approx(np.mean([0.6, 0.7, 0.9]))
    assert agg.loc["A", "best_se"] == pytest.approx(np.std([0.6, 0.7, 0.9], ddof=1) / np.sqrt(3))
    assert agg.loc["A", "n_variants"] == 3
    assert np.isnan(agg.loc["B", "best_se"])  # one variant: no standard error
    coll = aggregate_datasets(s).iloc[0]  # each base dataset weighs once
    assert coll["best"] == pytest.approx(np.mean([np.mean([0.6, 0.7, 0.9]), 0.8]))
    assert coll["n_datasets"] == 2
    per_variant = aggregate_datasets(s, by="dataset").iloc[0]
    assert per_variant["best"] == pytest.approx(np.mean([0.6, 0.7, 0.9, 0.8]))
