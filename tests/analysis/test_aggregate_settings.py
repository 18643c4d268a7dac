"""best-setting / mean-over-settings where the axis is not k, and the mean and spread over seeds (issue 25)."""

import numpy as np
import pandas as pd
import pytest

from odeval.analysis.aggregate import aggregate_datasets, per_variant_summary, seed_spread


def _runs():
    rows = []
    for k, auc in [(1, 0.6), (2, 0.8), (3, 0.7)]:
        rows.append(dict(method="LOF", params='{"variant": "paper"}', metric="euclidean", k=k, setting="", seed=None,
                         roc_auc=auc))
    for n_bins, auc in [(5, 0.7), (10, 0.9)]:
        rows.append(dict(method="HBOS", params="{}", metric="", k=None, setting=f'{{"n_bins": {n_bins}}}', seed=None,
                         roc_auc=auc))
    for n_est, aucs in [(50, (0.80, 0.84)), (100, (0.83, 0.83))]:
        for seed, auc in enumerate(aucs):
            rows.append(dict(method="IForest", params="{}", metric="", k=None, setting=f'{{"n_estimators": {n_est}}}',
                             seed=seed, roc_auc=auc))
    rows.append(dict(method="LDF", params='{"c": 0.1}', metric="euclidean", k=2, setting='{"h": 0.5}', seed=None,
                     roc_auc=0.5))
    rows.append(dict(method="LDF", params='{"c": 0.1}', metric="euclidean", k=3, setting='{"h": 0.5}', seed=None,
                     roc_auc=0.65))
    frame = pd.DataFrame(rows)
    frame["k"] = pd.array(frame["k"], dtype="Int64")
    frame["seed"] = pd.array(frame["seed"], dtype="Int64")
    return frame.assign(dataset="D_v01", base_dataset="D", status="ok", unit_id=[f"u{i}" for i in range(len(frame))])


def test_best_setting_and_mean_over_settings():
    s = per_variant_summary(_runs(), measures=["roc_auc"]).set_index("config")
    assert s.loc["LOF", "best_k"] == 2 and s.loc["LOF", "best_setting"] == "k=2"
    assert s.loc["LOF", "window_mean"] == pytest.approx(0.7)  # the k curve keeps Campos' statistics
    assert s.loc["HBOS", "best"] == 0.9 and s.loc["HBOS", "best_setting"] == "n_bins=10"
    assert s.loc["HBOS", "mean_over_k"] == pytest.approx(0.8) and np.isnan(s.loc["HBOS", "window_mean"])
    assert pd.isna(s.loc["HBOS", "best_k"])
    assert s.loc["LDF", "best_setting"] == "h=0.5,k=3" and s.loc["LDF", "best_k"] == 3
    # seeds are averaged first: n_estimators=50 → 0.82 (sd 0.028), 100 → 0.83 (sd 0)
    assert s.loc["IForest", "best"] == pytest.approx(0.83) and s.loc["IForest", "best_setting"] == "n_estimators=100"
    assert s.loc["IForest", "n_seeds"] == 2 and s.loc["IForest", "best_seed_sd"] == pytest.approx(0.0)
    assert s.loc["IForest", "mean_over_k"] == pytest.approx(0.825)
    coll = aggregate_datasets(per_variant_summary(_runs(), measures=["roc_auc"])).set_index("config")
    assert coll.loc["HBOS", "best"] == 0.9 and set(coll.index) == {"LOF", "HBOS", "IForest", "LDF"}


def test_seed_spread():
    sp = seed_spread(_runs(), ["roc_auc"])
    assert list(sp["setting"]) == ['{"n_estimators": 100}', '{"n_estimators": 50}']
    row = sp[sp["setting"] == '{"n_estimators": 50}'].iloc[0]
    assert row["mean"] == pytest.approx(0.82) and row["sd"] == pytest.approx(np.std([0.8, 0.84], ddof=1))
    assert (row["min"], row["max"], row["n_seeds"]) == (0.80, 0.84, 2)


def test_a_knn_only_frame_gives_the_columns_it_always_gave():
    knn = _runs().query("method == 'LOF'")
    old = knn.drop(columns=["setting", "seed"]).astype({"k": np.int64})
    a, b = per_variant_summary(knn, measures=["roc_auc"]), per_variant_summary(old, measures=["roc_auc"])
    assert "best_setting" not in a.columns
    pd.testing.assert_frame_equal(a, b)
