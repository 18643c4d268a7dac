"""The study runner against a real DuckDB store: resume, failures, determinism, Dask (kill -9: test_study_processes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from odeval.bench import ResultStore, load_study, run_study
from odeval.measures import MEASURES, evaluate

MEASURE_COLS = list(MEASURES)


def comparable(store_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Store content without what legitimately differs between runs (timings)."""
    with ResultStore(store_path, read_only=True) as rs:
        runs = rs.runs().drop(columns=["runtime_s"]).reset_index(drop=True)
        ranks = rs.outlier_ranks().reset_index(drop=True)
    return runs, ranks


def test_run_resume_and_extend(toy_study, tmp_path, study_file):
    store = tmp_path / "r.duckdb"
    summary = run_study(load_study(toy_study), store, workers=1, progress="none")
    assert summary.total_units == 6 and summary.ok == 6 and not summary.failed
    with ResultStore(store, read_only=True) as rs:
        runs, units = rs.runs(), rs.units()
    # kNN and LOF: k = 1..12; LDOF: k = 2..8 (k = 1 is skipped with a recorded reason)
    assert len(runs) == 2 * (12 + 12 + 7)
    ldof = units[units.method == "LDOF"].iloc[0]
    assert "k ≥ 2" in ldof.skipped
    # the stored numbers are exactly what the measures give on the detector's scores
    from odeval.data import load_dataset
    from odeval.detectors import get_detector

    ds = load_dataset(tmp_path / "data" / "toy_b.npz")
    s = get_detector("LOF").score(ds.X, 7)
    row = runs[(runs.dataset == "toy_b") & (runs.method == "LOF") & (runs.k == 7)].iloc[0]
    ev = evaluate(ds.y, s)
    for m in MEASURE_COLS:
        assert row[m] == pytest.approx(ev[m], abs=1e-15), m

    again = run_study(load_study(toy_study), store, workers=1, progress="none")
    assert again.already_done == 6 and again.computed == 0

    text = toy_study.read_text() + '\n[[methods]]\nname = "kNNW"\n'
    study_file(toy_study, text)
    more = run_study(load_study(toy_study), store, workers=1, progress="none")
    assert more.already_done == 6 and more.ok == 2


def test_failures_are_recorded_not_fatal(tmp_path, npz_dataset, study_file):
    data = tmp_path / "data"
    data.mkdir()
    npz_dataset(data / "good.npz", 40, 3, 2, seed=3)
    np.savez(data / "no_outliers.npz", X=np.random.default_rng(0).normal(size=(30, 2)), y=np.zeros(30))
    study = study_file(tmp_path / "s.toml", '[study]\nk = "1..5"\n[[datasets]]\nglob = "data/*.npz"\n'
                                             '[[methods]]\nname = "kNN"\n[[methods]]\nname = "LOF"\n')
    summary = run_study(load_study(study), tmp_path / "r.duckdb", workers=1, progress="none")
    assert summary.ok == 2 and len(summary.failed) == 2
    assert all(f["dataset"] == "no_outliers" for f in summary.failed)
    assert all("no outlier" in f["error"] for f in summary.failed)
    with ResultStore(tmp_path / "r.duckdb", read_only=True) as rs:
        units = rs.units()
    assert sorted(units.status) == ["error", "error", "ok", "ok"]


def test_cli_exit_codes(toy_study, tmp_path, study_file):
    from click.testing import CliRunner

    from odeval.cli import main

    res = CliRunner().invoke(main, ["study", "run", str(toy_study), "--workers", "1", "--quiet"])
    assert res.exit_code == 0, res.output
    assert (toy_study.parent / "results.duckdb").exists()
    out = tmp_path / "runs.csv"
    res = CliRunner().invoke(main, ["results", "export", str(toy_study.parent / "results.duckdb"),
                                    "--format", "csv", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert len(pd.read_csv(out)) == 2 * (12 + 12 + 7)
    bad = study_file(tmp_path / "bad.toml", '[[datasets]]\npath = "nope.npz"\n[[methods]]\nname = "LOFF"\n')
    res = CliRunner().invoke(main, ["study", "run", str(bad)])
    assert res.exit_code == 2 and "nope.npz" in res.output and "LOFF" in res.output


@pytest.mark.slow
def test_same_results_with_two_worker_processes(toy_study, tmp_path):
    run_study(load_study(toy_study), tmp_path / "serial.duckdb", workers=1, progress="none")
    run_study(load_study(toy_study), tmp_path / "pool.duckdb", workers=2, progress="none")
    for a, b in zip(comparable(tmp_path / "serial.duckdb"), comparable(tmp_path / "pool.duckdb"), strict=True):
        pd.testing.assert_frame_equal(a, b)


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_store(toy_study, tmp_path):
    from tests.bench.conftest import local_and_dask

    local, dask, summary = local_and_dask(toy_study, tmp_path)
    assert summary.ok == 6
    for a, b in zip(comparable(local), comparable(dask), strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_unit_error_names_where_it_was_raised(tmp_path, npz_dataset):
    from odeval.bench.config import MethodSpec
    from odeval.bench.runner import Prepared, run_unit

    prepared = Prepared(facts={"name": "x", "n_objects": 10}, labels=np.zeros(10, bool), graph=None)
    res = run_unit(prepared, "uid", MethodSpec("LOF", {}, (2,)), "euclidean", MEASURES, False)
    assert res.status == "error" and res.ks == []
    assert res.error.startswith("AttributeError") and "raised in" in res.error


def test_ctrl_c_inside_a_compiled_kernel_interrupts_the_study_not_the_unit(monkeypatch):
    """A SIGINT that arrives while numba code runs surfaces as ``SystemError: ... returned a result with an
    exception set`` with the KeyboardInterrupt as its cause: it must stop the study, not be recorded as the
    unit's error (the study would then run on and exit 0)."""
    from odeval.bench import execution
    from odeval.bench.config import MethodSpec
    from odeval.bench.store import is_interrupt
    from odeval.executor import SerialExecutor

    def interrupted_kernel(*args, **kwargs):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:
            raise SystemError("CPUDispatcher(<function k>) returned a result with an exception set") from ki

    assert is_interrupt(SystemError("x").with_traceback(None)) is False
    monkeypatch.setattr(execution, "evaluate_unit", interrupted_kernel)  # where run_unit looks it up
    prepared = execution.Prepared(facts={"name": "x", "n_objects": 10}, labels=np.zeros(10, bool), graph=None)
    with pytest.raises(SystemError) as info:
        execution.run_unit(prepared, "uid", MethodSpec("LOF", {}, (2,)), "euclidean", MEASURES, False)
    assert is_interrupt(info.value)
    with pytest.raises(SystemError):  # the study's serial executor lets it through to the driver
        SerialExecutor(fatal=is_interrupt).submit(interrupted_kernel)


def test_scoring_version_is_part_of_the_unit_id_and_outdated_units_are_recomputed(toy_study, tmp_path,
                                                                                   monkeypatch):
    """A method whose scoring definition changed (MethodInfo.scoring_version) gets new unit ids; the units an
    older version computed are removed from the store and computed again, never mixed with the new ones."""
    import dataclasses

    from odeval.bench.runner import _file_sha256, scoring_version, unit_id
    from odeval.detectors.ldof import LDOF

    study = load_study(toy_study)
    ref, ldof = study.datasets[0], study.methods[2]
    assert ldof.name == "LDOF" and scoring_version(ldof) == 2
    sha = _file_sha256(ref.path)
    ids = {v: unit_id(sha, ref, ldof, study, v) for v in (1, 2, 3)}
    assert len(set(ids.values())) == 3 and unit_id(sha, ref, ldof, study) == ids[2]
    knn = study.methods[0]
    assert scoring_version(knn) == 1  # version 1 keeps the ids of stores written before versions existed

    store = tmp_path / "r.duckdb"
    with monkeypatch.context() as mp:  # a store written by the older LDOF definition (workers=1: this process)
        mp.setattr(LDOF, "info", dataclasses.replace(LDOF.info, scoring_version=1))
        old = run_study(study, store, workers=1, progress="none")
    assert old.ok == 6 and old.replaced == 0
    with ResultStore(store, read_only=True) as rs:
        old_units = rs.units()
    old_ldof = set(old_units[old_units.method == "LDOF"].unit_id)
    assert ids[1] in old_ldof

    new = run_study(study, store, workers=1, progress="none")
    assert new.replaced == 2 and new.already_done == 4 and new.ok == 2  # only LDOF, on both variants
    with ResultStore(store, read_only=True) as rs:
        units, runs, ranks = rs.units(), rs.runs(study_hash=study.study_hash), rs.outlier_ranks()
        linked = rs.study_unit_ids(study.study_hash)
    assert not old_ldof & (set(units.unit_id) | set(runs.unit_id) | set(ranks.unit_id) | linked)
    assert ids[2] in set(units.unit_id) and len(units) == 6 and len(linked) == 6
    assert len(runs[runs.method == "LDOF"]) == 2 * 7  # k = 2..8 per variant, once each
    again = run_study(study, store, workers=1, progress="none")
    assert again.replaced == 0 and again.already_done == 6
