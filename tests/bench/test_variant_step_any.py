"""The per-variant step with candidates of any detector (issue 25): imported estimators over a grid and seeds beside
the kNN family over k, keyed by their whole scoring key, their scores read from the store when kept (else fitted
again, the same scores), resumable, and select-audit on the store."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from odeval.bench import ResultStore, run_study, study_from_dict
from odeval.cli import main

SELECTORS = ["mc-spearman", "hits", "ensemble", "random", "default-knn10"]


class NaNScores:
    """An estimator whose unit fails (NaN scores): left out of the candidates, with the reason."""

    def fit(self, X):
        return self

    def score_samples(self, X):
        return np.full(len(X), np.nan)


def _raw(data: Path, *, keep_scores: bool = True, ireos: bool = True) -> dict:
    raw = {"study": {"name": "any-sel", "k": "2..6", "keep_scores": keep_scores},
           "datasets": [{"glob": str(data / "*.npz")}],
           "methods": [{"name": "kNN"}, {"name": "LOF"},
                       {"estimator": "pyod.models.iforest:IForest", "grid": {"n_estimators": [10, 20]}, "seeds": 2},
                       {"estimator": "pyod.models.hbos:HBOS", "grid": {"n_bins": [5, 10]}},
                       {"estimator": f"{__name__}:NaNScores"}],
           "selection": {"selectors": SELECTORS, "candidates": ["all", 4]}}
    if ireos:
        raw |= {"internal": ["ireos"], "internal_options": {"knn": "exact", "quadrature": "fixed", "n_gamma": 8}}
    return raw


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    from tests.bench.conftest import make_npz

    folder = tmp_path_factory.mktemp("anysel") / "data"
    folder.mkdir()
    make_npz(folder / "va.npz", 40, 4, 2, seed=1)
    make_npz(folder / "vb.npz", 50, 3, 3, seed=2)
    return folder


def _tables(store: Path) -> tuple[pd.DataFrame, ...]:
    with ResultStore(store, read_only=True) as rs:
        tasks = rs.variant_tasks().drop(columns=["runtime_s", "finished", "study_hash"]).reset_index(drop=True)
        return (tasks, rs.variant_table("variant_candidates"), rs.variant_table("variant_values"),
                rs.variant_table("selection_picks"), rs.runs())


@pytest.fixture(scope="module")
def kept_run(data, tmp_path_factory):
    """The study with kept scores, run once (the job's ``kept`` argument captured), then again."""
    import odeval.bench.execution as execution

    seen: list[dict] = []
    real = execution.run_variant_job

    def spy(*args, **kwargs):
        seen.append(args[6] if len(args) > 6 else kwargs.get("kept"))
        return real(*args, **kwargs)

    store = tmp_path_factory.mktemp("anysel-store") / "r.duckdb"
    study = study_from_dict(_raw(data), source="any-sel.toml")
    execution.run_variant_job = spy
    try:
        first = run_study(study, store, workers=1, progress="none")
    finally:
        execution.run_variant_job = real
    again = run_study(study, store, workers=1, progress="none")
    return study, store, first, again, seen


def test_estimator_candidates_are_keyed_by_setting_and_seed_and_read_from_the_store(kept_run):
    _, store, first, again, seen = kept_run
    assert first.variant_tasks_total == 2 * 3 and first.variant_tasks_ok == 6
    assert {f["method"] for f in first.failed} == {"NaNScores"}  # the unit, not a variant task
    tasks, cands, values, picks, runs = _tables(store)
    assert set(tasks.status) == {"ok"}
    every = cands[cands.task_id.isin(tasks.task_id[(tasks.kind == "selection") & (tasks.candidates == "all")])]
    one = every[every.dataset == "va"].set_index("name")
    # kNN and LOF at k = 2..6, IForest at 2 grid points × 2 seeds, HBOS at 2 grid points; NaNScores left out
    assert len(one) == 10 + 4 + 2
    forest = one[one.method == "IForest"]
    assert sorted(zip(forest.setting, forest.seed, strict=True)) == [
        ('{"n_estimators": 10}', 0), ('{"n_estimators": 10}', 1), ('{"n_estimators": 20}', 0),
        ('{"n_estimators": 20}', 1)]
    assert forest.k.isna().all() and (forest.metric == "").all() and "IForest-n_estimators=10@1" in one.index
    assert (one.loc[one.method == "kNN", "setting"] == "").all() and one.loc["kNN-003", "k"] == 3
    details = json.loads(tasks[(tasks.dataset == "va") & (tasks.kind == "ireos")].details.iloc[0])
    assert details["left_out"][0]["candidate"] == "NaNScores" and "NaN" in details["left_out"][0]["reason"]
    # the quality of a candidate is its unit's (the kept scores are the unit's scores)
    unit_auc = runs[runs.dataset == "va"].set_index("unit_id")
    for name, row in one[one.k.isna()].iterrows():
        assert row.roc_auc == unit_auc.loc[row.unit_id, "roc_auc"], name
    # IREOS of all 16 candidates, one value each
    iv = values[values.task_id.isin(tasks.task_id[tasks.kind == "ireos"]) & (values.measure == "ireos")]
    assert len(iv) == 2 * 16 and iv.value.notna().all()
    assert set(picks.selector) == set(SELECTORS)
    # the job got the estimator units' kept vectors from the store (after those units were written)
    estimator_units = set(runs.loc[runs.k.isna(), "unit_id"])
    assert len(seen) == 2 and set().union(*(set(s) for s in seen)) == estimator_units
    # resumable: a second run computes nothing
    assert again.computed == 0 and again.variant_tasks_done == 6 and again.variant_tasks_ok == 0


def test_without_kept_scores_the_estimators_are_fitted_again_to_the_same_values(kept_run, data, tmp_path):
    _, store, *_ = kept_run
    refit = study_from_dict(_raw(data, keep_scores=False), source="any-sel.toml")
    run_study(refit, tmp_path / "refit.duckdb", workers=1, progress="none")
    a, b = _tables(store), _tables(tmp_path / "refit.duckdb")
    # same task ids (keep_scores is not part of a task's definition), same candidates, values and picks
    pd.testing.assert_frame_equal(a[0].drop(columns=["details"]), b[0].drop(columns=["details"]))
    for x, y in zip(a[1:4], b[1:4], strict=True):
        pd.testing.assert_frame_equal(x.drop(columns=["unit_id"], errors="ignore"),
                                      y.drop(columns=["unit_id"], errors="ignore"))


def test_select_audit_reads_the_stored_picks_of_estimator_candidates(kept_run):
    _, store, *_ = kept_run
    for mode in ("all", "4"):
        res = CliRunner().invoke(main, ["select-audit", str(store), "--candidates", mode, "--json"])
        assert res.exit_code == 0, res.output
        out = json.loads(res.output)
        assert out["source"] == "stored" and {r["selector"] for r in out["summary"]} == set(SELECTORS) | {"ireos"}
        assert out["candidates"] == mode
    res = CliRunner().invoke(main, ["select-audit", str(store), "--per-variant"])
    assert res.exit_code == 0 and "model-selection audit: 2 variants" in res.output, res.output


def test_the_report_names_the_ireos_candidates_by_their_keys(kept_run, tmp_path):
    from odeval.report.from_store import _ireos_frame
    from odeval.report.internal import candidate_names

    _, store, *_ = kept_run
    with ResultStore(store, read_only=True) as rs:
        frame = _ireos_frame(rs, None, {"va", "vb"})
    names = set(candidate_names(frame[frame.dataset == "va"]))
    assert {"IForest-n_estimators=10@0", "IForest-n_estimators=10@1", "HBOS-n_bins=5", "kNN-002"} <= names
    assert len(names) == 16
    from odeval.report import report_from_store

    index, _ = report_from_store(store, tmp_path / "rep", permutations=0, ensembles=False, simulations=5)
    html = Path(index).read_text()
    assert 'id="ireos"' in html and "Label-free model selection" in html


#: variant_task_id of the study below, computed by main at 710c3f3 (before candidates of any detector)
PINNED_KNN_TASK_ID = "cf1224f0e90e636ab4257204"


def test_knn_only_variant_task_ids_are_unchanged(tmp_path):
    """The task ids of a study of the kNN family over k alone are those every earlier store holds (its stored
    values were compared with main's on tests/bench/test_variant_step.py's study: identical)."""
    from types import SimpleNamespace

    from tests.bench.conftest import make_npz

    from odeval.bench.variant_step import variant_task_id

    make_npz(tmp_path / "va.npz", 40, 4, 2, seed=1)
    spec = study_from_dict({"study": {"k": "2..6"}, "datasets": [{"glob": str(tmp_path / "*.npz")}],
                            "methods": [{"name": "kNN"}, {"name": "LOF"}, {"name": "LDF", "k": "3..9"}],
                            "selection": {"selectors": ["hits"]}}, source="t")
    task_id = variant_task_id("0" * 64, SimpleNamespace(name="va"), spec, "selection", "all",
                              {"selectors": ["hits"], "seed": 0})
    assert task_id == PINNED_KNN_TASK_ID


@pytest.mark.slow
def test_two_worker_processes_give_the_same_per_variant_results(kept_run, data, tmp_path):
    """With worker processes the per-variant job waits for the variant's estimator units and reads their kept
    scores from the store: the same tasks, candidates, values and picks as the serial run."""
    _, store, *_ = kept_run
    study = study_from_dict(_raw(data), source="any-sel.toml")
    run_study(study, tmp_path / "pool.duckdb", workers=2, progress="none")
    for a, b in zip(_tables(store)[:4], _tables(tmp_path / "pool.duckdb")[:4], strict=True):
        pd.testing.assert_frame_equal(a.drop(columns=["details"], errors="ignore"),
                                      b.drop(columns=["details"], errors="ignore"))
