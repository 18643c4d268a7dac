"""The per-variant step of a study: IREOS with one gamma_max per variant and the label-free selectors' picks,
stored, resumable, shared between studies, identical on every executor."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from odeval.bench import ResultStore, StudyError, load_study, run_study, study_from_dict
from odeval.cli import main

SELECTORS = ["mc-spearman", "hits", "ensemble", "random", "default-knn10", "default-lof20"]
BODY = """
internal = ["ireos"]
datasets = [{glob = "data/*.npz"}]
methods = [{name = "kNN"}, {name = "LOF"}]

[study]
name = "variant"
k = "2..6"
keep_scores = true

[internal_options]
knn = "exact"
quadrature = "fixed"
n_gamma = 12

[selection]
selectors = {selectors}
candidates = "all"
"""


def _variant_study(tmp_path: Path) -> Path:
    from tests.bench.conftest import make_npz, write_study

    data = tmp_path / "data"
    data.mkdir()
    make_npz(data / "va.npz", 40, 4, 2, seed=1)
    make_npz(data / "vb.npz", 50, 3, 3, seed=2)
    return write_study(tmp_path / "study.toml", BODY.replace("{selectors}", json.dumps(SELECTORS)))


@pytest.fixture
def variant_study(tmp_path: Path) -> Path:
    return _variant_study(tmp_path)


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> tuple[Path, Path, object, object, str, str]:
    """The study run once serially, then again: (study file, store, first summary, second summary, logs)."""
    import contextlib
    import io

    tmp = tmp_path_factory.mktemp("variant")
    study, store = _variant_study(tmp), tmp / "r.duckdb"
    logs = []
    summaries = []
    for _ in range(2):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            summaries.append(run_study(load_study(study), store, workers=1, progress="log"))
        logs.append(err.getvalue())
    return study, store, summaries[0], summaries[1], logs[0], logs[1]


def stored(store: Path) -> tuple[pd.DataFrame, ...]:
    """Per-variant results without what legitimately differs between runs (timings)."""
    with ResultStore(store, read_only=True) as rs:
        tasks = rs.variant_tasks().drop(columns=["runtime_s", "finished", "details"]).reset_index(drop=True)
        return (tasks, rs.variant_table("variant_candidates"), rs.variant_table("variant_values"),
                rs.variant_table("selection_picks"))


def test_run_twice_skips_and_values_are_ireos_with_one_gamma_max(ran):
    study, store, summary, again, log, log_again = ran
    tmp_path = study.parent
    assert summary.ok == 4 and not summary.failed
    assert summary.variant_tasks_total == 4 and summary.variant_tasks_ok == 4
    assert "[ireos] candidates all ok" in log
    tasks, cands, values, picks = stored(store)
    assert sorted(tasks.kind) == ["ireos", "ireos", "selection", "selection"] and set(tasks.status) == {"ok"}
    assert (tasks.n_candidates == 10).all()  # 2 methods × k = 2..6
    assert set(picks.selector) == set(SELECTORS) and len(picks) == 2 * len(SELECTORS)

    # the stored IREOS is ireos() over all candidates of the variant at once: one gamma_max per variant
    from odeval.data import load_dataset
    from odeval.detectors import get_detector
    from odeval.labelfree import ireos

    ds = load_dataset(tmp_path / "data" / "va.npz")
    cand = cands[(cands.dataset == "va") & cands.task_id.isin(tasks.task_id[tasks.kind == "ireos"])]
    S = [get_detector(m).score(ds.X, int(k)) for m, k in zip(cand.method, cand.k, strict=True)]
    ref = ireos(ds.X, S, quadrature="fixed", n_gamma=12, adjust=True)
    got = values[values.task_id.isin(cand.task_id)].pivot(index="candidate", columns="measure", values="value")
    np.testing.assert_allclose(got["ireos"].to_numpy(), ref.index, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["ireos_adjusted"].to_numpy(), ref.adjusted, rtol=0, atol=1e-12)
    # p-values against random permutations of each candidate's weights (m_cl = 1, App. A.2), same seed
    ref_p = ireos(ds.X, S, quadrature="fixed", n_gamma=12, adjust=True, p_values=True)
    np.testing.assert_array_equal(got["ireos_p_value"].to_numpy(), ref_p.p_value)
    assert ((got["ireos_p_value"] > 0) & (got["ireos_p_value"] <= 1)).all()
    with ResultStore(store, read_only=True) as rs:
        details = json.loads(rs.variant_tasks(kind="ireos").set_index("dataset").loc["va", "details"])
    assert details["gamma_max"] == pytest.approx(ref.gamma_max, rel=1e-12) and details["knn"] is None
    assert cand["roc_auc"].between(0, 1).all()

    assert again.computed == 0 and again.variant_tasks_done == 4 and again.variant_tasks_ok == 0
    assert "resuming: 8 of 8 units are already in the store" in log_again


def test_a_second_study_reuses_the_variant_tasks_and_unit_ids_do_not_change(ran, tmp_path):
    import shutil

    variant_study = ran[0]
    store = tmp_path / "r.duckdb"
    shutil.copy(ran[1], store)
    other = variant_study.with_name("other.toml")
    other.write_text(variant_study.read_text().replace('name = "variant"', 'name = "other"'))
    second = run_study(load_study(other), store, workers=1, progress="none")
    assert second.computed == 0 and second.variant_tasks_done == 4
    with ResultStore(store, read_only=True) as rs:
        assert len(rs.variant_tasks(study_hash=load_study(other).study_hash)) == 4
    # IREOS and [selection] are per variant: the units (and their ids) are those of the plain study
    plain = variant_study.with_name("plain.toml")  # the study folder (its data/ glob)
    plain.write_text('datasets = [{glob = "data/*.npz"}]\nmethods = [{name = "kNN"}, {name = "LOF"}]\n'
                     '[study]\nname = "variant"\nk = "2..6"\nkeep_scores = true\n')
    third = run_study(load_study(plain), store, workers=1, progress="none")
    assert third.already_done == 4 and third.computed == 0 and third.variant_tasks_total == 0


def test_candidates_10_and_bad_keys(variant_study, tmp_path):  # variant_study writes tmp_path/data
    raw = {"study": {"k": "2..8"}, "datasets": [{"glob": str(tmp_path / "data" / "va.npz")}],
           "methods": [{"name": "kNN"}, {"name": "LOF"}],
           "selection": {"selectors": ["mc-spearman", "default-knn10"], "candidates": 4}}
    spec = study_from_dict(raw, source="t")
    assert spec.variant_step.ireos is None and spec.variant_step.selection_candidates == "4"
    store = tmp_path / "c.duckdb"
    run_study(spec, store, workers=1, progress="none")
    _, cands, _, picks = stored(store)
    assert len(cands) == 4
    knn10 = picks.set_index("selector").loc["default-knn10"]  # k = 10 is not among k = 2..8: no pick, a note
    assert knn10.choice == "" and "not among the candidates" in knn10.note and np.isnan(knn10.roc_auc)
    # two selection tasks per variant (all and the paper's 4), IREOS of all candidates once
    two = study_from_dict({**raw, "internal": ["ireos"],
                           "internal_options": {"knn": "exact", "quadrature": "fixed", "n_gamma": 8},
                           "selection": {"selectors": ["mc-spearman"], "candidates": ["all", 4]}}, source="t")
    assert two.variant_step.selection_modes == ("all", "4")
    run_study(two, tmp_path / "two.duckdb", workers=1, progress="none")
    tasks, cands, values, _ = stored(tmp_path / "two.duckdb")
    assert sorted(tasks.candidates) == ["4", "all", "all"]
    assert len(cands) == 4 + 14 + 14  # kNN, LOF × k = 2..8
    # select-audit --candidates 4: the ireos pick among the four, read from the IREOS of all 14 candidates
    res = CliRunner().invoke(main, ["select-audit", str(tmp_path / "two.duckdb"), "--candidates", "4", "--json"])
    assert res.exit_code == 0, res.output
    pick = next(p for p in json.loads(res.output)["picks"] if p["selector"] == "ireos" and p["measure"] == "roc_auc")
    assert "γ_max of all 14 candidates" in pick["note"] and 0 < pick["pick_p_value"] <= 1
    itask = tasks.task_id[tasks.kind == "ireos"].iloc[0]
    four = cands[cands.task_id == tasks.task_id[tasks.candidates == "4"].iloc[0]]["name"]
    allc = cands[cands.task_id == itask].set_index("candidate")["name"]
    adj = values[(values.task_id == itask) & (values.measure == "ireos_adjusted")].copy()
    adj["name"] = adj.candidate.map(allc)
    assert pick["choice"] == adj[adj.name.isin(set(four))].sort_values("value").name.iloc[-1]
    for bad, msg in (({"internal": ["ireos"], "internal_options": {"mcl": "big"}}, "mcl must be"),
                     ({"internal_options": {"knn": 5}, "internal": ["em"]}, "IREOS option"),
                     ({"selection": {"selectors": ["nope"]}}, "unknown selector"),
                     ({"selection": {"candidates": 0}}, "candidates must be")):
        with pytest.raises(StudyError, match=msg):
            study_from_dict({**raw, **bad}, source="t")


def test_select_audit_and_report_use_the_stored_picks(ran, tmp_path):
    store = ran[1]
    res = CliRunner().invoke(main, ["select-audit", str(store), "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    # the stored IREOS values give the "ireos" pick without a second IREOS computation
    assert out["source"] == "stored" and {r["selector"] for r in out["summary"]} == set(SELECTORS) | {"ireos"}
    _, cands, values, _ = stored(store)
    adj = values[(values.dataset == "va") & (values.measure == "ireos_adjusted")]
    best = cands[(cands.task_id == adj.task_id.iloc[0]) & (cands.candidate == adj.candidate.iloc[adj.value.argmax()])]
    pick = [p for p in out["picks"] if p["dataset"] == "va" and p["selector"] == "ireos" and p["measure"] == "roc_auc"]
    assert pick[0]["choice"] == best.name.iloc[0] and pick[0]["value"] == pytest.approx(best.roc_auc.iloc[0])
    assert 0 < pick[0]["pick_p_value"] <= 1 and f"p = {pick[0]['pick_p_value']:.3g}" in pick[0]["note"]
    res = CliRunner().invoke(main, ["select-audit", str(store), "--per-variant"])
    assert "IREOS pick against random solutions (stored one-sided p-values, App. A): p < 0.05 on" in res.output
    assert res.exit_code == 0 and "picks: stored\n" in res.output and "model-selection audit: 2 variants" \
        in res.output, res.output
    res = CliRunner().invoke(main, ["select-audit", str(store), "--selectors", "mc-kendall"])
    assert res.exit_code != 0 and "not stored" in res.output and "--compute-missing" in res.output
    res = CliRunner().invoke(main, ["select-audit", str(store), "--selectors", "mc-kendall,hits", "--compute-missing",
                                    "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["source"] == "stored+computed" and {r["selector"] for r in out["summary"]} == {"mc-kendall", "hits"}

    from odeval.report import report_from_store

    index, _ = report_from_store(store, tmp_path / "rep", permutations=0, ensembles=False, simulations=5)
    html = Path(index).read_text()
    assert 'id="ireos"' in html and "IREOS (max)" in html
    assert "p_value: one-sided, the pick's index against random solutions" in html
    assert "Label-free model selection" in html  # the stored picks, without --selection


@pytest.mark.slow
def test_two_workers_and_resume_after_kill_give_identical_values(variant_study, tmp_path):
    run_study(load_study(variant_study), tmp_path / "serial.duckdb", workers=1, progress="none")
    run_study(load_study(variant_study), tmp_path / "pool.duckdb", workers=2, progress="none")
    for a, b in zip(stored(tmp_path / "serial.duckdb"), stored(tmp_path / "pool.duckdb"), strict=True):
        pd.testing.assert_frame_equal(a.drop(columns=["study_hash"], errors="ignore"),
                                      b.drop(columns=["study_hash"], errors="ignore"))


@pytest.mark.slow
def test_killed_and_resumed(variant_study, tmp_path):
    import os
    import subprocess
    import sys

    store = tmp_path / "k.duckdb"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "odeval.cli", "study", "run", str(variant_study), "--store",
                             str(store), "--workers", "1", "--quiet"], env=env, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:  # kill -9 right after the first per-variant task is committed
        if "[ireos]" in line or "[selection]" in line:
            break
    proc.kill()
    proc.wait()
    with ResultStore(store, read_only=True) as rs:
        done = len(rs.variant_tasks())
    assert 1 <= done < 4
    resumed = run_study(load_study(variant_study), store, workers=1, progress="none")
    assert resumed.variant_tasks_done == done and resumed.variant_tasks_ok == 4 - done
    run_study(load_study(variant_study), tmp_path / "clean.duckdb", workers=1, progress="none")
    for a, b in zip(stored(store), stored(tmp_path / "clean.duckdb"), strict=True):
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.slow
def test_dask_local_cluster_runs_the_variant_step(variant_study, tmp_path):
    from tests.bench.conftest import local_and_dask

    local, dask, summary = local_and_dask(variant_study, tmp_path)
    assert summary.variant_tasks_ok == 4 and not summary.failed
    for a, b in zip(stored(local), stored(dask), strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_ireos_task_excludes_constant_candidates_and_reads_0_1_scorings_as_scorings(tmp_path):
    """A candidate with constant scores (e.g. INFLO at k = N − 1: 1 for every object) has no IREOS weights: it gets
    NaN and a reason instead of failing the variant; one that takes only the values 0 and 1 is a scoring (Gaussian
    weights), not a binary top-n solution. The stored values with NaN are written and read back."""
    from odeval.bench.store import VariantTaskResult
    from odeval.bench.variant_step import _ireos_task
    from odeval.labelfree import ireos

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    X[:3] += 4.0
    good = np.linalg.norm(X, axis=1)
    zero_one = (good > np.quantile(good, 0.8)).astype(float)
    S = np.vstack([good, np.ones(30), zero_one])
    res = VariantTaskResult(task_id="t" * 24, kind="ireos", dataset="d", file_sha256="x", metric="euclidean",
                            candidates_mode="all", options={})
    opts = {"knn": None, "quadrature": "fixed", "n_gamma": 8}
    _ireos_task(res, X, S, opts)
    vals = {(i, m): v for i, m, v in res.values}
    assert np.isnan(vals[(1, "ireos")]) and np.isnan(vals[(1, "ireos_p_value")])
    assert res.details["excluded"] == [{"candidate": 1, "reason": "constant scores: no outlier weights"}]
    ref = ireos(X, [good, zero_one + 7.0], quadrature="fixed", n_gamma=8, adjust=True, p_values=True,
                classifier="optimum")  # a task whose options name no classifier keeps the optimum (its old id)
    assert ref.kinds == ["scoring", "scoring"]
    np.testing.assert_allclose([vals[(0, "ireos")], vals[(2, "ireos")]], ref.index, rtol=0, atol=1e-12)
    np.testing.assert_allclose([vals[(0, "ireos_adjusted")], vals[(2, "ireos_adjusted")]], ref.adjusted, atol=1e-12)
    assert ireos(X, [good, zero_one], quadrature="fixed", n_gamma=8).kinds[1] == "binary"  # what the shift avoids
    only_constant = VariantTaskResult(task_id="u" * 24, kind="ireos", dataset="d", file_sha256="x",
                                      metric="euclidean", candidates_mode="all", options={})
    with pytest.raises(ValueError, match="no candidate has IREOS weights: constant scores"):
        _ireos_task(only_constant, X, np.ones((2, 30)), opts)
    with ResultStore(tmp_path / "n.duckdb") as rs:  # NaN values are stored as NaN
        rs.write_variant_task(res, study_hash="h", version="0")
    with ResultStore(tmp_path / "n.duckdb", read_only=True) as rs:
        got = rs.variant_table("variant_values")
    assert got[(got.candidate == 1)]["value"].isna().all() and got[(got.candidate == 0)]["value"].notna().all()


def test_ireos_null_enters_the_task_id_only_when_it_is_the_new_default(tmp_path):
    """The paper's uniform null (the default since 2026-11) gets task ids of its own; ``null = "permutation"``
    (odeval's only null before) keeps the options, and so the task ids, that older stores hold."""
    from types import SimpleNamespace

    from tests.bench.conftest import make_npz

    from odeval.bench.variant_step import ireos_settings, plan_variant_tasks

    make_npz(tmp_path / "va.npz", 20, 2, 2, seed=1)
    raw = {"study": {"k": "2..4"}, "datasets": [{"glob": str(tmp_path / "*.npz")}], "methods": [{"name": "kNN"}],
           "internal": ["ireos"]}
    default = study_from_dict(raw, source="t")
    old = study_from_dict({**raw, "internal_options": {"null": "permutation", "classifier": "optimum"}}, source="t")
    assert default.variant_step.ireos["null"] == "uniform"
    # the keys a task held before the option existed, and nothing else
    assert set(old.variant_step.ireos) == {"mcl", "knn", "adjust", "quadrature", "n_gamma", "tol", "C", "gamma_max",
                                           "seed", "candidates"}
    ref = SimpleNamespace(name="va")
    (t_new,), (t_old,) = (plan_variant_tasks(s, "0" * 64, ref) for s in (default, old))
    assert t_new.task_id != t_old.task_id
    assert ireos_settings(t_new.options).null == "uniform" and ireos_settings(t_old.options).null == "permutation"
    with pytest.raises(StudyError, match="null must be 'uniform' or 'permutation'"):
        study_from_dict({**raw, "internal_options": {"null": "shuffle"}}, source="t")


def test_emmv_selector_settings_enter_the_selection_task_id(tmp_path):
    """Issue 26: the em / mv selectors' settings (EMMVSettings: box, sampling="auto", ...) are part of a selection
    task's options and id, so picks stored with earlier EM/MV settings are recomputed; without em / mv the
    options (and ids) are what they were."""
    from tests.bench.conftest import make_npz, write_study

    from odeval.bench.variant_step import plan_variant_tasks
    from odeval.labelfree import EMMVSettings

    data = tmp_path / "data"
    data.mkdir()
    make_npz(data / "va.npz", 40, 4, 2, seed=1)
    with_em = load_study(write_study(tmp_path / "a.toml", BODY.replace("{selectors}", json.dumps(["em", "random"]))))
    without = load_study(write_study(tmp_path / "b.toml", BODY.replace("{selectors}", json.dumps(["random"]))))
    ref = with_em.datasets[0]
    sel = [t for t in plan_variant_tasks(with_em, "sha", ref) if t.kind == "selection"]
    assert sel and all(t.options["emmv"] == EMMVSettings().kwargs() for t in sel)
    assert sel[0].options["emmv"]["sampling"] == "auto"
    plain = [t for t in plan_variant_tasks(without, "sha", ref) if t.kind == "selection"]
    assert plain and all(set(t.options) == {"selectors", "seed"} for t in plain)


def test_ireos_selector_settings_enter_the_selection_task_id(tmp_path):
    """The ireos-* selectors and the guarded rule run the pinned classifier since 2026-11-27: their settings are
    part of a selection task's options and id, so picks stored with the optimum are recomputed; the other
    selection tasks keep their options (and ids)."""
    from tests.bench.conftest import make_npz, write_study

    from odeval.bench.variant_step import plan_variant_tasks
    from odeval.labelfree import GuardedSettings
    from odeval.labelfree.selection import IREOS_SELECTOR_SETTINGS

    data = tmp_path / "data"
    data.mkdir()
    make_npz(data / "va.npz", 40, 4, 2, seed=1)

    def planned(name: str, selectors: list[str]) -> list:
        study = load_study(write_study(tmp_path / name, BODY.replace("{selectors}", json.dumps(selectors))))
        return [t for t in plan_variant_tasks(study, "sha", study.datasets[0]) if t.kind == "selection"]

    ir = planned("a.toml", ["ireos", "random"])
    assert ir and all(t.options["ireos"] == IREOS_SELECTOR_SETTINGS.kwargs() for t in ir)
    assert ir[0].options["ireos"]["classifier"] == "pinned" and "ireos_guarded" not in ir[0].options
    guarded = planned("b.toml", ["ireos-guarded", "random"])
    assert guarded[0].options["ireos_guarded"] == GuardedSettings().identity()
    assert guarded[0].options["ireos_guarded"]["classifier"] == "pinned" and "workers" not in guarded[0].options[
        "ireos_guarded"]
    plain = planned("c.toml", ["random"])
    assert all(set(t.options) == {"selectors", "seed"} for t in plain)
    assert len({t.task_id for t in ir + guarded + plain}) == len(ir + guarded + plain)
