"""Leave-one-base-dataset-out validation of the meta-selector: no preparation of a held-out base dataset may reach
training (issue 27)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from odeval.analysis.meta import (
    BASES_FILE,
    MetaTable,
    attempt2_configs,
    inner_folds,
    leave_one_base_out,
    load_bases,
    meta_statistics,
)
from odeval.labelfree.meta import MetaConfig, fit_meta_model, grid_candidates
from odeval.labelfree.metafeatures import FEATURE_NAMES

BASES = ["A", "A", "A", "B", "B", "C", "D", "D", "E", "F", "F", "G"]


def _table(seed: int = 0) -> MetaTable:
    """Variants of 7 base datasets; feature 0 holds the base's code, so a model can tell what it was trained on."""
    rng = np.random.default_rng(seed)
    n, R = len(BASES), len(grid_candidates())
    F = rng.normal(size=(n, len(FEATURE_NAMES)))
    F[:, 0] = [ord(b) for b in BASES]
    Q = rng.uniform(0.5, 0.9, size=(n, R))
    Q[0, 3] = np.nan  # a candidate that does not exist on one variant
    names = [list(grid_candidates()) for _ in range(n)]
    allq = {m: [q.copy() for q in Q] for m in ("roc_auc", "average_precision")}
    for q in allq["roc_auc"]:
        q[np.isnan(q)] = 0.5
    for q in allq["average_precision"]:
        q[np.isnan(q)] = 0.1
    return MetaTable([f"v{i}" for i in range(n)], list(BASES), F, Q, allq, names, "roc_auc")


def _guarded_fit(calls: list[set[str]]):
    """A fit that records the base datasets it was trained on and FAILS when asked to predict a variant of one of
    them (a held-out base dataset reached the training of the model that judges it)."""
    def fit(features, gain, weight, config, candidates, feature_names):
        model = fit_meta_model(features, gain, weight, config, candidates, feature_names)
        trained_on = {chr(int(c)) for c in features[:, 0]}
        calls.append(trained_on)
        inner = model.predict_gain

        def predict_gain(F):
            seen = {chr(int(c)) for c in np.atleast_2d(F)[:, 0]} & trained_on
            assert not seen, f"held-out base dataset(s) {sorted(seen)} were in the training set"
            return inner(F)
        model.predict_gain = predict_gain
        return model
    return fit


CONFIGS = [MetaConfig("fixed"), MetaConfig("neighbors", n_neighbors=3), MetaConfig("forest", n_trees=3, min_leaf=2)]
#: Attempt 2's kinds, small: the no-leakage guarantee must cover every kind the nested choice can take.
CONFIGS2 = [MetaConfig("default"), MetaConfig("lowrank", rank=2, n_trees=3, min_leaf=2, margin=0.01),
            MetaConfig("winprob", n_trees=3, min_leaf=2, margin=0.5)]


@pytest.mark.parametrize("configs", [CONFIGS, CONFIGS2], ids=["attempt1", "attempt2"])
def test_no_held_out_base_dataset_reaches_training(configs: list[MetaConfig]) -> None:
    table = _table()
    calls: list[set[str]] = []
    res = leave_one_base_out(table, configs, n_inner=3, fit=_guarded_fit(calls))
    assert calls and all(len(c) < len(set(BASES)) for c in calls)
    for b, trained in res.training.items():
        assert not {table.bases[table.datasets.index(d)] for d in trained} & {b}
        assert sorted(trained) == sorted(d for d, bb in zip(table.datasets, table.bases, strict=True) if bb != b)
    assert set(res.chosen) == set(BASES)
    picks = res.picks
    assert set(picks["selector"]) == {"meta", "default-knn10", "default-lof20", "random"}
    assert len(picks) == len(BASES) * 4 * 2


def test_attempt2_is_deterministic_and_matches_its_preregistration() -> None:
    """The ten configurations of benchmarks/meta_attempt2.md, and two runs give the same picks."""
    labels = [c.label() for c in attempt2_configs()]
    assert labels == ["default", *(f"lowrank(r={r},leaf=10),margin={m:g}" for r in (3, 10) for m in (0, 0.01, 0.03)),
                      *(f"winprob(leaf=10),tau={t:g}" for t in (0.5, 0.6, 0.7))]
    assert {c.n_trees for c in attempt2_configs() if c.kind != "default"} == {100}
    a = leave_one_base_out(_table(), CONFIGS2, n_inner=2)
    b = leave_one_base_out(_table(), CONFIGS2, n_inner=2)
    pd.testing.assert_frame_equal(a.picks, b.picks)
    assert a.chosen == b.chosen


def test_the_guard_itself_fails_on_a_leaking_fold(monkeypatch) -> None:
    """The guard catches a leak: a LOBO whose folds forget one variant of the held-out base dataset fails."""
    import odeval.analysis.meta as meta_mod

    table = _table()
    table.bases = list(BASES)
    leaky = list(BASES)
    leaky[1] = "Z"  # variant v1 of base A under another name, as an unmatched ODDS copy would be
    table.bases = leaky
    with pytest.raises(AssertionError, match="held-out base dataset"):
        meta_mod.leave_one_base_out(table, CONFIGS[:1], n_inner=2, fit=_guarded_fit([]))


def test_inner_folds_partition_the_training_bases() -> None:
    folds = inner_folds(["b", "a", "c", "a", "d"], 3)
    assert sorted(x for f in folds for x in f) == ["a", "b", "c", "d"]
    assert folds == inner_folds(["d", "c", "b", "a"], 3)


def test_statistics_by_base_dataset() -> None:
    res = leave_one_base_out(_table(), CONFIGS[:2], n_inner=2)
    st = meta_statistics(res.picks, "roc_auc")
    assert set(st["summary_bases"]["n_variants"]) == {len(set(BASES))}
    assert set(st["tests_bases"]["baseline"]) == {"random", "default-knn10"}
    assert "friedman" in st["friedman_bases"]


# --------------------------------------------------------------------------------- the base-dataset matching
#: Same data under another name (ODDS / ADBench documentation; the content evidence is in the table).
KNOWN = {"wbc": "WDBC", "breastw": "WBC", "annthyroid": "Annthyroid", "2_annthyroid": "Annthyroid",
         "glass": "Glass", "ionosphere": "Ionosphere", "18_Ionosphere": "Ionosphere", "lympho": "Lymphography",
         "pima": "Pima", "29_Pima": "Pima", "44_Wilt": "Wilt", "arrhythmia": "Arrhythmia", "pendigits": "PenDigits",
         "28_pendigits": "PenDigits", "satimage-2": "satellite"}


def test_the_matching_table_joins_every_preparation_of_a_base_dataset() -> None:
    bases = load_bases()
    for name, base in KNOWN.items():
        assert bases[name] == base, name
    table = pd.read_csv(BASES_FILE)
    campos = table[table["file"].str.startswith("dami/")]
    assert len(campos) == 262
    # every Campos variant's base is the folder it lives in (Campos names its base datasets by folder)
    assert (campos["file"].str.split("/").str[1] == campos["base_dataset"]).all()
    assert campos["base_dataset"].nunique() == 15
    assert table["matched_by"].notna().all()


def test_the_matching_table_covers_the_study(shared_datasets: Path) -> None:
    from odeval.bench.config import load_study

    study = Path(__file__).resolve().parents[2] / "benchmarks" / "meta_store.toml"
    names = {v.name for v in load_study(study).datasets}
    assert names == set(load_bases())
