"""The batched writer (``ResultStore.write_units``, Arrow tables, one statement per table) stores exactly what the
earlier per-unit writer (pandas frames, one transaction per unit) stored — every table, every value, NULL and
NaN alike — and the runner's batches leave the same store as writing unit by unit."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from odeval.bench import run_study, study_from_dict
from odeval.bench.store import _UNIT_TABLES, InternalMeasure, ResultStore, UnitResult, _ranks_table
from odeval.measures import MEASURES


def _reference_write_unit(rs: ResultStore, result: UnitResult, *, study_hash: str, version: str,
                          file_sha256: str | None = None) -> None:
    """The per-unit writer as it was before the batched one (odeval ≤ 2026-11-25), kept as the oracle."""
    ds = result.dataset
    rows = []
    for k, meas in zip(result.ks, result.measures, strict=True):
        row = {
            "unit_id": result.unit_id, "study_hash": study_hash, "dataset": ds["name"],
            "base_dataset": ds["base_dataset"], "normalized": ds.get("normalized"),
            "deduplicated": ds.get("deduplicated"), "outlier_pct": ds.get("outlier_pct"),
            "version": ds.get("version"), "provenance": ds.get("provenance", "{}"),
            "n_objects": ds["n_objects"], "n_outliers": ds["n_outliers"], "n_attributes": ds["n_attributes"],
            "method": result.method, "params": result.params, "metric": result.metric, "k": k,
            "setting": result.setting, "seed": result.seed,  # schema version 4 (issue 25)
        }
        row.update({m: meas.get(m) for m in rs._measures})
        row.update({"runtime_s": result.runtime_s / max(len(result.ks), 1), "status": "ok", "error": None,
                    "odeval_version": version})
        rows.append(row)
    runs_df = pd.DataFrame(rows, columns=rs._runs_columns())
    if result.ranks:
        ranks_df = pd.DataFrame({
            "unit_id": result.unit_id, "dataset": ds["name"], "method": result.method, "params": result.params,
            "k": np.concatenate([np.full(len(objs), k, dtype=np.int64) for k, objs, _ in result.ranks]),
            "object": np.concatenate([objs.astype(np.int64) for _, objs, _ in result.ranks]),
            "rank": np.concatenate([np.asarray(r, dtype=np.float64) for _, _, r in result.ranks])})
    else:
        ranks_df = pd.DataFrame(columns=["unit_id", "dataset", "method", "params", "k", "object", "rank"])
    scores_df = pd.DataFrame(
        {"unit_id": result.unit_id, "dataset": ds["name"], "method": result.method, "params": result.params,
         "k": [k for k, _ in result.scores], "scores": [s.tolist() for _, s in result.scores]})
    internal = [InternalMeasure(result.unit_id, ds["name"], result.method, result.params, result.metric,
                                k, name, value, details) for k, name, value, details in result.internal]
    outliers = ds.get("outliers")
    con = rs.con
    with rs._transaction(f"write unit {result.unit_id} to"):
        for table in _UNIT_TABLES:
            con.execute(f"DELETE FROM {table} WHERE unit_id = ?", [result.unit_id])
        con.execute(
            "INSERT INTO units (unit_id, study_hash, dataset, file_sha256, method, params, metric, setting, seed, "
            "status, error, skipped, n_k, runtime_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [result.unit_id, study_hash, ds["name"], file_sha256, result.method, result.params, result.metric,
             result.setting, result.seed, result.status, result.error,
             json.dumps({str(k): v for k, v in result.skipped.items()}, ensure_ascii=False),
             len(result.ks), result.runtime_s])
        con.execute("INSERT INTO study_units VALUES (?, ?) ON CONFLICT DO NOTHING", [study_hash, result.unit_id])
        if outliers is not None and file_sha256 is not None and ds.get("n_objects") is not None:
            con.execute("INSERT INTO labels VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        [ds["name"], file_sha256, int(ds["n_objects"]), [int(o) for o in outliers]])
        if len(runs_df):
            con.register("_runs_df", runs_df)
            con.execute(f"INSERT INTO runs SELECT {rs._select_list(list(runs_df.columns))} FROM _runs_df")
            con.unregister("_runs_df")
        if len(ranks_df):
            con.register("_ranks_df", ranks_df)
            con.execute("INSERT INTO outlier_ranks SELECT unit_id, dataset, method, params, k, object, rank "
                        "FROM _ranks_df")
            con.unregister("_ranks_df")
        if len(scores_df):
            con.register("_scores_df", scores_df)
            con.execute("INSERT INTO scores SELECT unit_id, dataset, method, params, k, scores FROM _scores_df")
            con.unregister("_scores_df")
        rs._insert_internal(internal)


_TABLES = ("units", "runs", "labels", "outlier_ranks", "scores", "internal_measures", "study_units")


def _key(value):
    """A sortable, exact stand-in for one stored value: NULL, NaN and every float bit pattern kept apart."""
    if value is None:
        return (0, "")
    if isinstance(value, float):
        return (1, "nan") if math.isnan(value) else (1, value.hex())
    if isinstance(value, list):
        return (2, repr([_key(v) for v in value]))
    return (3, repr(value))


def _contents(path) -> dict[str, list]:
    with ResultStore(path, read_only=True) as rs:
        out = {}
        for table in _TABLES:
            cols = [r[0] for r in rs.con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
                [table]).fetchall() if r[0] != "finished"]  # insertion timestamps differ
            rows = rs.con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()
            out[table] = sorted(tuple(_key(v) for v in row) for row in rows)
        return out


def _results() -> tuple[list[UnitResult], list[str | None]]:
    rng = np.random.default_rng(3)
    v1 = {"name": "v1", "base_dataset": "B", "normalized": True, "deduplicated": False, "outlier_pct": None,
          "version": None, "provenance": '{"a": 1}', "n_objects": 30, "n_outliers": 3, "n_attributes": 4,
          "outliers": [2, 7, 29]}
    v2 = {"name": "v2", "base_dataset": "C", "normalized": False, "deduplicated": True, "outlier_pct": 5,
          "version": 2, "provenance": "{}", "n_objects": 12, "n_outliers": 2, "n_attributes": 3, "outliers": [0, 11]}
    out, shas = [], []
    for i, (facts, method, ks) in enumerate([(v1, "kNN", [1, 2, 3, 5]), (v1, "LOF", [2, 3]), (v2, "kNN", [1, 4]),
                                             (v2, "COF", [2])]):
        objs = np.asarray(facts["outliers"])
        meas = [{m: float(rng.random()) for m in MEASURES} for _ in ks]
        if method == "LOF":  # a study storing a subset of the measures, and a NaN value
            meas = [{"roc_auc": 0.5, "average_precision": float("nan")} for _ in ks]
        res = UnitResult(f"u{i}", dict(facts), method, json.dumps({"p": i}), "euclidean", "ok",
                         runtime_s=0.1 * (i + 1), skipped={1: "LOF is defined for k ≥ 2"} if method == "LOF" else {},
                         ks=list(ks), measures=meas,
                         ranks=[(k, objs, rng.integers(1, 30, objs.size) / 2.0) for k in ks])
        if method == "COF":
            res.scores = [(2, np.array([np.inf, 1.5, -0.0] + [0.25] * 9))]
            res.internal = [(2, "em", 0.5, {"alpha": [0.9, 0.99]}), (2, "mv", float("nan"), {"error": "x"})]
        out.append(res)
        shas.append("f" * 64 if facts is v1 else None)
    failed = UnitResult("u9", {"name": "v3", "base_dataset": "D", "normalized": None, "deduplicated": None,
                               "outlier_pct": None, "version": None, "n_objects": None, "n_outliers": None,
                               "n_attributes": None}, "kNN", "{}", "euclidean", "error", error="ValueError: boom")
    return [*out, failed], [*shas, "e" * 64]


def test_write_units_stores_exactly_what_write_unit_stored(tmp_path):
    results, shas = _results()
    ref, new, split = tmp_path / "ref.duckdb", tmp_path / "new.duckdb", tmp_path / "split.duckdb"
    with ResultStore(ref) as rs:
        rs.register_study("s", "s", "test", {}, "0", [r.unit_id for r in results])
        for r, sha in zip(results, shas, strict=True):
            _reference_write_unit(rs, r, study_hash="s", version="0.9", file_sha256=sha)
    with ResultStore(new) as rs:
        rs.register_study("s", "s", "test", {}, "0", [r.unit_id for r in results])
        rs.write_units(results, study_hash="s", version="0.9", file_sha256=shas)
    with ResultStore(split) as rs:  # in two batches, then everything again: a rewrite replaces, never duplicates
        rs.register_study("s", "s", "test", {}, "0", [r.unit_id for r in results])
        rs.write_units(results[:2], study_hash="s", version="0.9", file_sha256=shas[:2])
        rs.write_unit(results[2], study_hash="s", version="0.9", file_sha256=shas[2])
        rs.write_units(results[3:], study_hash="s", version="0.9", file_sha256=shas[3:])
        rs.write_units(results, study_hash="s", version="0.9", file_sha256=shas)
    expected = _contents(ref)
    assert sum(len(v) for v in expected.values()) > 40
    assert _contents(new) == expected
    assert _contents(split) == expected


def test_ranks_table_without_ranks_is_empty():
    assert _ranks_table([]).num_rows == 0


def test_runner_batches_leave_the_store_of_per_unit_writes(tmp_path, npz_dataset, monkeypatch):
    """A study run (serial: one batch per variant) against the same study with every unit written alone."""
    data = tmp_path / "data"
    data.mkdir()
    npz_dataset(data / "v1.npz", 40, 3, 2, seed=1)
    npz_dataset(data / "v2.npz", 50, 4, 2, seed=2, n_dup=3)
    study = study_from_dict({"study": {"name": "b", "k": "1..6"}, "datasets": [{"glob": str(data / "*.npz")}],
                             "methods": [{"name": "kNN"}, {"name": "LOF"}, {"name": "COF"}]}, source="test")
    run_study(study, tmp_path / "batched.duckdb", workers=1, progress="none")
    calls = []
    original = ResultStore.write_units

    def one_by_one(self, results, *, study_hash, version, file_sha256=None):
        shas = file_sha256 if isinstance(file_sha256, list) else [file_sha256] * len(results)
        calls.append(len(results))
        for r, sha in zip(results, shas, strict=True):
            _reference_write_unit(self, r, study_hash=study_hash, version=version, file_sha256=sha)

    monkeypatch.setattr(ResultStore, "write_units", one_by_one)
    run_study(study, tmp_path / "single.duckdb", workers=1, progress="none")
    monkeypatch.setattr(ResultStore, "write_units", original)
    assert calls == [3, 3]  # one batch per variant
    a, b = _contents(tmp_path / "batched.duckdb"), _contents(tmp_path / "single.duckdb")
    for table in ("units", "runs"):  # runtime_s is a measured time: compare everything else (units: column 13
        # since schema version 4 added setting, seed)
        drop = {"units": [13], "runs": [len(a["runs"][0]) - 4]}[table]
        a[table] = sorted(tuple(v for i, v in enumerate(row) if i not in drop) for row in a[table])
        b[table] = sorted(tuple(v for i, v in enumerate(row) if i not in drop) for row in b[table])
    assert a == b


def test_a_finished_unit_is_written_while_a_slow_unit_of_its_variant_runs(tmp_path, npz_dataset, monkeypatch):
    """The driver's wait is bounded while units are pending: a unit finished early is written (and reported)
    after FLUSH_SECONDS even though another unit of its variant is still running."""
    from concurrent.futures import Future

    from odeval.bench import execution
    from odeval.executor import SerialExecutor

    class Holding(SerialExecutor):
        """Serial, but LOF's unit stays 'running' until the driver waits without a timeout."""

        def __init__(self):
            super().__init__()
            self.held, self.timeouts = [], []

        def submit(self, fn, *args):
            fut = super().submit(fn, *args)
            if fn is execution.run_unit and args[2].name == "LOF":
                held = Future()
                self.held.append((held, fut))
                return held
            return fut

        def wait(self, futures, timeout=None):
            self.timeouts.append(timeout)
            done = {f for f in futures if f.done()}
            if done or timeout is not None:
                return done
            for held, real in self.held:
                held.set_result(real.result())
            self.held.clear()
            return {f for f in futures if f.done()}

    ex = Holding()

    batches = []
    original = ResultStore.write_units

    def spy(self, results, **kwargs):
        batches.append([r.method for r in results])
        return original(self, results, **kwargs)

    monkeypatch.setattr(ResultStore, "write_units", spy)
    data = tmp_path / "data"
    data.mkdir()
    npz_dataset(data / "v1.npz", 40, 3, 2, seed=1)
    study = study_from_dict({"study": {"name": "w", "k": "1..4"}, "datasets": [{"glob": str(data / "*.npz")}],
                             "methods": [{"name": "kNN"}, {"name": "LOF"}]}, source="test")
    summary = run_study(study, tmp_path / "r.duckdb", workers=1, progress="none", executor=ex)
    assert summary.ok == 2
    assert batches == [["kNN"], ["LOF"]]  # kNN written before LOF finished
    assert any(t is not None for t in ex.timeouts)
