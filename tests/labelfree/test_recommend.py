"""odeval.labelfree.recommend / guarded / record: the library behind ``odeval select`` (issue 24)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from odeval.data import Dataset, load_dataset
from odeval.labelfree.guarded import GuardedSettings, IreosPick, guarded_choice, prune_candidates
from odeval.labelfree.recommend import (
    CAMPOS_POOL,
    SelectSettings,
    candidate_ks,
    candidate_pool,
    prepare_table,
    recommend,
)
from odeval.labelfree.record import RECORD_FILE, best_by_record, campos_record, expectations
from odeval.labelfree.selection import SELECTORS, run_selector

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "src" / "odeval" / "data" / "vendored" / "dami"
FAST = SelectSettings(resamples=2, guarded=GuardedSettings(n_candidates=4, max_objects=120))


def _blobs(n: int = 60, d: int = 3, n_out: int = 4, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:n_out] = rng.normal(size=(n_out, d)) * 0.5 + 6.0
    y = np.zeros(n, dtype=bool)
    y[:n_out] = True
    return X, y


def _ds(X: np.ndarray, name: str = "t", **kw) -> Dataset:
    return Dataset(X=X, y=None, name=name, attribute_names=tuple(f"a{j}" for j in range(X.shape[1])), **kw)


# ------------------------------------------------------------------------------------------------ the pool
def test_pool_is_the_twelve_campos_methods():
    from odeval.bench.demo import CAMPOS_METHODS

    assert [(m["name"], m.get("params", {})) for m in CAMPOS_METHODS] == [(m, p) for m, p in CAMPOS_POOL]


def test_candidate_ks_capped_and_thinned():
    assert candidate_ks(6) == [1, 2, 3, 4, 5]
    assert candidate_ks(500) == list(range(1, 101))
    big = candidate_ks(100_000)
    assert 10 in big and big[0] == 1 and big[-1] == 100 and len(big) < 40
    assert 12 * len(big) * 100_000 <= SelectSettings().max_pool_values * 1.5


def test_candidate_pool_names_are_scoring_keys():
    X, _ = _blobs(30)
    pool = candidate_pool(X, [1, 2, 10])
    assert "kNN-010" in pool.names and "LDF-010" in pool.names  # distinct_names: LDF's one parameter set left out
    assert pool.scores.shape == (len(pool.names), 30) and np.isfinite(pool.scores).all()
    assert any(line.startswith("LDOF: skipped k=1") for line in pool.skipped)


# ------------------------------------------------------------------------------------------------ preparation
def test_prepare_refuses_missing_values_unless_asked():
    X, _ = _blobs(40)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"t: 1 missing value\(s\), first at row 3, attribute 'a1'"):
        prepare_table(_ds(X))
    out, report, _, kept = prepare_table(_ds(X), SelectSettings(missing="drop"))
    assert out.n_objects == 39 and report["missing"]["dropped_objects"] == 1
    assert 3 not in kept and kept.size == 39


def test_prepare_constant_column_and_tiny_tables():
    X, _ = _blobs(40)
    X[:, 2] = 7.0
    with pytest.raises(ValueError, match=r"constant attribute\(s\) 'a2'.*--drop-constant"):
        prepare_table(_ds(X))
    out, report, _, _ = prepare_table(_ds(X), SelectSettings(constant="drop"))
    assert out.attribute_names == ("a0", "a1") and report["constant_dropped"] == ["a2"]
    with pytest.raises(ValueError, match="every attribute is constant"):
        prepare_table(_ds(np.ones((10, 2))))
    with pytest.raises(ValueError, match=r"2 object\(s\); model selection needs at least 5"):
        prepare_table(_ds(np.arange(4.0).reshape(2, 2)))


def test_prepare_reports_duplicates_normalises_and_warns_on_raw_ranges():
    X, _ = _blobs(40)
    X[:, 0] *= 1000.0
    X[5] = X[6]
    out, report, warns, _ = prepare_table(_ds(X))
    assert report["duplicates"] == 1 and report["steps"] == ["normalize"] and not warns
    assert out.X.min() == 0.0 and out.X.max() == 1.0
    _, report, warns, _ = prepare_table(_ds(X), SelectSettings(normalize=None))
    assert report["range_ratio"] > 10 and "ranges differ" in warns[0]
    out, report, _, kept = prepare_table(_ds(X, ids=np.arange(100, 140)), SelectSettings(dedup=True))
    assert out.n_objects == 39 and 6 not in kept and out.ids[6] == 107  # ids follow the kept rows


def test_prepare_encodes_categorical_attributes():
    ds = load_dataset(VENDORED / "Lymphography" / "Lymphography_original.arff", label_attribute=None)
    assert ds.nominal_columns
    out, report, _, _ = prepare_table(ds)
    assert not out.nominal_columns and report["categorical"]["method"] == "onehot"


# ------------------------------------------------------------------------------------------------ selectors
def test_prune_candidates_spreads_from_the_most_central():
    rng = np.random.default_rng(0)
    base = rng.normal(size=50)
    S = np.vstack([base + 0.01 * rng.normal(size=50) for _ in range(5)] + [rng.normal(size=50) for _ in range(3)])
    chosen = prune_candidates(S, 3)
    assert len(set(chosen.tolist())) == 3 and chosen[0] < 5  # the central one is from the agreeing group
    assert prune_candidates(S, 20).tolist() == list(range(8))


def test_guarded_choice_follows_gamma_max():
    ens = np.linspace(0, 1, 5)
    low = guarded_choice(IreosPick(2, (2, 0), gamma_max=50.0), ens)
    assert low.index == 2 and "≤ 100" in low.note
    high = guarded_choice(IreosPick(2, (2, 0), gamma_max=5e4), ens)
    assert high.index is None and high.scores is ens and "the ensemble instead" in high.note


def test_guarded_selector_is_registered_and_runs():
    assert "ireos-guarded" in SELECTORS and SELECTORS["ireos-guarded"].needs_data
    X, _ = _blobs(40)
    pool = candidate_pool(X, [2, 5, 10])
    sel = run_selector("ireos-guarded", pool.scores, pool.names, X=X)
    assert (sel.index is not None) != (sel.scores is not None)


# ------------------------------------------------------------------------------------------------ record
def test_record_file_is_built_from_the_doc():
    spec = importlib.util.spec_from_file_location("select_record", ROOT / "benchmarks" / "select_record.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert json.loads(RECORD_FILE.read_text(encoding="utf-8")) == json.loads(json.dumps(mod.build()))
    rec = campos_record()
    assert rec["source"]["commit"] == "5f0e77d, ac1ab82" and "no store hash" in rec["source"]["store"]
    assert "pinned classifier" in rec["source"]["study"] and rec["n_variants"] == 262
    # the rule applied to IREOS of all candidates, and the registered selector's own run (its record row), on the
    # variants its 100 was not read off
    guarded = {g["subset"]: (g["n_variants"], g["mean_roc_auc"]) for g in rec["candidates"]["all"]["ireos_guarded"]}
    assert guarded["held out"] == (211, 0.748)
    assert guarded["registered, held out"] == (211, 0.747) and guarded["registered, all"] == (262, 0.760)
    assert "37c9122" in rec["source"]["guarded_study"]


def test_expectations_do_not_overclaim():
    exp = {e.selector: e for e in expectations(["mc-ndcg", "ensemble", "ireos-guarded", "default-knn10", "nope"])}
    assert exp["ensemble"].mean_roc_auc == 0.785 and "not better than kNN k = 10 (p = 0.59)" in exp["ensemble"].sentence
    assert exp["ireos-guarded"].n_variants == 211 and "not better than kNN k = 10" in exp["ireos-guarded"].sentence
    assert exp["ireos-guarded"].mean_roc_auc == 0.747 and "selector's own run" in exp["ireos-guarded"].basis
    assert exp["default-knn10"].sentence.startswith("the reference")
    assert exp["nope"].sentence == "no record on the Campos collection"
    assert best_by_record(["mc-ndcg", "hits", "default-knn10"]) == "default-knn10"
    assert best_by_record(["mc-ndcg", "hits"]) == "mc-ndcg"


# ------------------------------------------------------------------------------------------------ recommend
@pytest.fixture(scope="module")
def wbc():
    return load_dataset(VENDORED / "WBC" / "WBC_withoutdupl_norm_v01.arff")


@pytest.fixture(scope="module")
def rec_wbc(wbc):
    return recommend(wbc, settings=FAST, labels=wbc.y)


def test_recommend_says_what_the_record_supports(rec_wbc):
    r = rec_wbc
    assert r.recommended == "kNN-010" and r.recommended_by == "default-knn10" and r.alternative == "ensemble"
    assert "no label-free selector beat it" in r.reason
    assert {c.selector for c in r.choices} >= {"mc-spearman", "mc-ndcg", "hits", "select", "ensemble",
                                                "default-knn10", "ireos", "ireos-guarded"}
    assert r.pool["n_candidates"] > 1000 and r.pool["ks"] == list(range(1, 101))
    assert r.ireos["gamma_max"] > 0 and len(r.ireos["order"]) == 4


def test_recommend_threshold_and_top_rows(rec_wbc):
    r = rec_wbc
    assert r.threshold["n_flagged"] == int((r.probabilities > 0.5).sum())
    assert 0.0 <= r.probabilities.min() and r.probabilities.max() <= 1.0
    assert len(r.top) == 10 and all(0 <= t["votes"] <= t["of"] == 12 for t in r.top)
    order = np.argsort(-r.scores, kind="stable")[:10]
    assert [t["row"] for t in r.top] == order.tolist()
    assert len(r.threshold["strong_candidates"]) == 12


def test_recommend_stability_and_agreement(rec_wbc):
    st = rec_wbc.stability
    assert st["resamples"] == 2 and st["same_pick"]["default-knn10"] == 1.0 and "select" not in st["same_pick"]
    assert 0.0 <= st["top_n_overlap"] <= 1.0 and set(st["pick_rho"]) == set(st["same_pick"])
    ag = rec_wbc.agreement
    assert ag["strength"] in ("strong", "moderate", "weak") and ag["distinct_picks"] >= 1


def test_recommend_check_labels_and_json(rec_wbc, wbc):
    chk = rec_wbc.check
    assert chk["n_outliers"] == int(wbc.y.sum())
    assert 0.5 < chk["recommended"]["roc_auc"] <= 1.0 and 0 <= chk["recommended"]["percentile"] <= 100
    text = json.dumps(rec_wbc.to_dict())  # serialisable, no NaN
    assert "NaN" not in text and json.loads(text)["recommendation"]["candidate"] == "kNN-010"


def test_labels_never_reach_the_selection():
    X, y = _blobs(50)
    a = recommend(_ds(X), settings=FAST, labels=y)
    b = recommend(Dataset(X=X, y=y, name="t", attribute_names=("a0", "a1", "a2")), settings=FAST)
    assert a.choices == b.choices and np.array_equal(a.scores, b.scores) and b.check is None
    assert a.stability == b.stability and a.top == b.top


def test_recommend_warns_for_small_and_duplicated_tables():
    X, _ = _blobs(40)
    X[10:20] = X[20:30]
    r = recommend(_ds(X), settings=FAST)
    assert any("only 40 objects" in w for w in r.warnings)
    assert any("repeat another object exactly" in w for w in r.warnings)


def test_recommend_primary_selector():
    X, _ = _blobs(40)
    r = recommend(_ds(X), settings=SelectSettings(resamples=0, ireos=False, primary="mc-spearman"))
    assert r.recommended_by == "mc-spearman" and r.stability["resamples"] == 0
    with pytest.raises(ValueError, match="primary selector 'ireos' was not run"):
        recommend(_ds(X), settings=SelectSettings(resamples=0, ireos=False, primary="ireos"))


def test_shared_select_run_equals_the_registered_selectors():
    from odeval.labelfree.recommend import _run_selectors

    X, _ = _blobs(40)
    pool = candidate_pool(X, [1, 3, 5, 10])
    mine = _run_selectors(pool.scores, pool.names, ("select",), 0)
    assert mine["select"].index == run_selector("select", pool.scores, pool.names).index
    assert np.array_equal(mine["select-ensemble"].scores,
                          run_selector("select-ensemble", pool.scores, pool.names).scores)
    assert list(mine) == ["select", "ensemble", "select-ensemble", "ensemble-rank", "default-knn10"]


@pytest.mark.parametrize("classifier", ["optimum", "pinned"])
def test_gamma_max_probe_agrees_with_the_search(classifier):
    """The probe and the search with the same classifier (the guarded rule probes with the optimum)."""
    from odeval.labelfree import ireos_select
    from odeval.labelfree.ireos import gamma_max_exceeds

    X, _ = _blobs(40)
    pool = candidate_pool(X, [2, 5, 10])
    sols = [pool.scores[i] for i in (0, 5, 20)]
    g = ireos_select(X, sols, classifier=classifier).gamma_max
    assert not gamma_max_exceeds(X, sols, g * 1.0001, classifier=classifier)
    assert gamma_max_exceeds(X, sols, g * 0.999, classifier=classifier)


def test_pruned_ireos_above_the_threshold_takes_the_ensemble():
    from odeval.labelfree.guarded import pruned_ireos

    X, _ = _blobs(40)
    pool = candidate_pool(X, [2, 5, 10])
    pick = pruned_ireos(pool.scores, X, settings=GuardedSettings(threshold=1e-6, n_candidates=3))
    assert pick.above and pick.best is None and "not ranked" in pick.note
    sel = guarded_choice(pick, np.zeros(40), threshold=1e-6)
    assert sel.scores is not None and "γ_max > 1e-06" in sel.note


@pytest.mark.parametrize("classifier", ["pinned", "optimum"])
def test_pruned_ireos_ranks_with_its_classifier(classifier):
    """The guarded rule's ranking is ireos_select's with the settings' classifier (the pinned one by default) on
    the pruned candidates."""
    from odeval.labelfree import ireos_select
    from odeval.labelfree.guarded import prune_candidates, pruned_ireos

    assert GuardedSettings().classifier == "pinned"
    with pytest.raises(ValueError, match="classifier must be 'pinned' or 'optimum', got 'exact'"):
        GuardedSettings(classifier="exact")
    X, _ = _blobs(40)
    pool = candidate_pool(X, [2, 5, 10])
    settings = GuardedSettings(n_candidates=3, classifier=classifier, threshold=1e9)
    pick = pruned_ireos(pool.scores, X, settings=settings)
    chosen = prune_candidates(pool.scores, 3)
    direct = ireos_select(X, [pool.scores[i] for i in chosen], classifier=classifier, knn=None)
    assert pick.gamma_max == direct.gamma_max
    assert pick.order == tuple(int(chosen[i]) for i in direct.order)


def test_a_table_larger_than_memory_is_refused_in_one_line(monkeypatch):
    import odeval.labelfree.recommend as rm

    X, _ = _blobs(40)
    monkeypatch.setattr(rm, "available_memory", lambda: 1024)
    with pytest.raises(ValueError, match=r"^t: 40 objects × 39 k need about .* GiB, 0.0 GiB available"):
        recommend(_ds(X), settings=FAST)
    monkeypatch.setattr(rm, "available_memory", lambda: None)  # unknown: no refusal
    assert recommend(_ds(X), settings=SelectSettings(resamples=0, ireos=False)).recommended == "kNN-010"
