"""The results store: an embedded DuckDB file holding every run of every study.

Tables (the contract with :mod:`odeval.analysis`, see DEVELOPERS.md):

``units``
    One row per finished unit of work (dataset variant × method × all its k): ``unit_id`` (content hash of
    dataset file, method, parameters, k values and metric — independent of the study file, so adding a method
    to a study only computes the new units), ``status`` ('ok' | 'error'), ``error``, ``skipped`` (k values not
    run and why), ``runtime_s``.
``runs``
    One row per (unit, k): dataset facts, ``method``, ``params`` (JSON), ``k``, one DOUBLE column per measure of
    :data:`odeval.measures.MEASURES`, ``runtime_s`` (the unit's scoring time shared over its k), ``status``,
    ``error``, ``odeval_version``, ``study_hash``.
``outlier_ranks``
    (unit, k, ``object``, ``rank``): the rank of every true outlier in the scoring (for Campos §5.3).
``scores``
    Optional full score vectors (``keep_scores = true``).
``studies``
    The definition of every study that wrote to the store.

Each unit is written in a single transaction, so a process killed at any moment (even ``kill -9`` during a
write) leaves only whole units behind; DuckDB's write-ahead log discards the unfinished transaction.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

__all__ = ["ResultStore", "UnitResult", "measure_columns", "open_read_only", "table_names"]

_RUN_FACT_COLUMNS: dict[str, str] = {
    "unit_id": "VARCHAR",
    "study_hash": "VARCHAR",
    "dataset": "VARCHAR",
    "base_dataset": "VARCHAR",
    "normalized": "BOOLEAN",
    "deduplicated": "BOOLEAN",
    "outlier_pct": "DOUBLE",
    "version": "INTEGER",
    "provenance": "VARCHAR",
    "n_objects": "INTEGER",
    "n_outliers": "INTEGER",
    "n_attributes": "INTEGER",
    "method": "VARCHAR",
    "params": "VARCHAR",
    "metric": "VARCHAR",
    "k": "INTEGER",
}
_RUN_TAIL_COLUMNS: dict[str, str] = {
    "runtime_s": "DOUBLE",
    "status": "VARCHAR",
    "error": "VARCHAR",
    "odeval_version": "VARCHAR",
}


def open_read_only(path: str | Path) -> duckdb.DuckDBPyConnection:
    """A read-only connection to an existing results store, with clear errors for a missing or foreign file."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"results store not found: {p}")
    try:
        return duckdb.connect(str(p), read_only=True)
    except duckdb.Error as exc:
        raise ValueError(f"{p} is not a readable DuckDB results store: {exc}") from exc


def table_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Names of the tables of a store connection."""
    return {row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def measure_columns() -> tuple[str, ...]:
    from odeval.measures import MEASURES

    return tuple(MEASURES)


@dataclass
class UnitResult:
    """Everything one unit produced, ready to be written in one transaction."""

    unit_id: str
    dataset: dict[str, Any]
    method: str
    params: str
    metric: str
    status: str
    error: str | None = None
    runtime_s: float = 0.0
    skipped: dict[int, str] = field(default_factory=dict)
    ks: list[int] = field(default_factory=list)
    measures: list[dict[str, float]] = field(default_factory=list)
    ranks: list[tuple[int, np.ndarray, np.ndarray]] = field(default_factory=list)  # (k, objects, ranks)
    scores: list[tuple[int, np.ndarray]] = field(default_factory=list)


class ResultStore:
    """A DuckDB results store. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = Path(path)
        if read_only and not self.path.exists():
            raise FileNotFoundError(f"results store {self.path} does not exist")
        self.con = duckdb.connect(str(self.path), read_only=read_only)
        self._measures = measure_columns()
        self._writes = 0
        # Test hook for the crash-safety test: pause inside the N-th unit's write transaction so that a
        # test can kill -9 the process mid-write. Never set in normal use.
        self._pause_at = int(os.environ.get("ODEVAL_TEST_PAUSE_IN_WRITE", "0") or 0)
        if not read_only:
            self._create_schema()

    # --- schema -------------------------------------------------------------------------------
    def _create_schema(self) -> None:
        cols = dict(_RUN_FACT_COLUMNS)
        cols.update({m: "DOUBLE" for m in self._measures})
        cols.update(_RUN_TAIL_COLUMNS)
        col_sql = ", ".join(f'"{c}" {t}' for c, t in cols.items())
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS studies (study_hash VARCHAR PRIMARY KEY, name VARCHAR, source VARCHAR, "
            "definition VARCHAR, odeval_version VARCHAR, created TIMESTAMP DEFAULT current_timestamp)"
        )
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS units (unit_id VARCHAR PRIMARY KEY, study_hash VARCHAR, dataset VARCHAR, "
            "method VARCHAR, params VARCHAR, metric VARCHAR, status VARCHAR, error VARCHAR, skipped VARCHAR, "
            "n_k INTEGER, runtime_s DOUBLE, finished TIMESTAMP DEFAULT current_timestamp)"
        )
        self.con.execute(f"CREATE TABLE IF NOT EXISTS runs ({col_sql})")
        existing = {r[0] for r in self.con.execute("SELECT column_name FROM information_schema.columns "
                                                   "WHERE table_name = 'runs'").fetchall()}
        for m in self._measures:  # a newer odeval may know more measures: add their columns
            if m not in existing:
                self.con.execute(f'ALTER TABLE runs ADD COLUMN "{m}" DOUBLE')
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS outlier_ranks (unit_id VARCHAR, dataset VARCHAR, method VARCHAR, "
            "params VARCHAR, k INTEGER, object INTEGER, rank DOUBLE)"
        )
        self.con.execute(
            "CREATE TABLE IF NOT EXISTS scores (unit_id VARCHAR, dataset VARCHAR, method VARCHAR, params VARCHAR, "
            "k INTEGER, scores DOUBLE[])"
        )

    # --- writing ------------------------------------------------------------------------------
    def register_study(self, study_hash: str, name: str, source: str, definition: dict[str, Any],
                       version: str) -> None:
        self.con.execute(
            "INSERT INTO studies (study_hash, name, source, definition, odeval_version) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [study_hash, name, source, json.dumps(definition, sort_keys=True, default=str), version],
        )

    def finished_units(self, *, include_errors: bool = True) -> set[str]:
        q = "SELECT unit_id FROM units" + ("" if include_errors else " WHERE status = 'ok'")
        return {r[0] for r in self.con.execute(q).fetchall()}

    def write_unit(self, result: UnitResult, *, study_hash: str, version: str) -> None:
        """Write one unit — its units row, runs rows, ranks and scores — in a single transaction."""
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
            }
            row.update({m: meas.get(m) for m in self._measures})
            row.update({"runtime_s": result.runtime_s / max(len(result.ks), 1), "status": "ok", "error": None,
                        "odeval_version": version})
            rows.append(row)
        runs_df = pd.DataFrame(rows, columns=self._runs_columns())
        ranks_df = _ranks_frame(result, ds["name"])
        scores_df = pd.DataFrame(
            {"unit_id": result.unit_id, "dataset": ds["name"], "method": result.method, "params": result.params,
             "k": [k for k, _ in result.scores], "scores": [s.tolist() for _, s in result.scores]}
        )
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            # a unit re-run (e.g. --retry-failed) replaces its earlier rows
            for table in ("units", "runs", "outlier_ranks", "scores"):
                con.execute(f"DELETE FROM {table} WHERE unit_id = ?", [result.unit_id])
            con.execute(
                "INSERT INTO units (unit_id, study_hash, dataset, method, params, metric, status, error, skipped, "
                "n_k, runtime_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [result.unit_id, study_hash, ds["name"], result.method, result.params, result.metric, result.status,
                 result.error, json.dumps({str(k): v for k, v in result.skipped.items()}, ensure_ascii=False),
                 len(result.ks), result.runtime_s],
            )
            if len(runs_df):
                con.register("_runs_df", runs_df)
                con.execute(f"INSERT INTO runs SELECT {self._select_list(runs_df)} FROM _runs_df")
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
            self._writes += 1
            if self._writes == self._pause_at:
                print(f"pausing inside the write transaction of unit {result.unit_id}", file=sys.stderr, flush=True)
                time.sleep(600)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def _runs_columns(self) -> list[str]:
        return [*_RUN_FACT_COLUMNS, *self._measures, *_RUN_TAIL_COLUMNS]

    def _select_list(self, df: pd.DataFrame) -> str:
        types = {**_RUN_FACT_COLUMNS, **{m: "DOUBLE" for m in self._measures}, **_RUN_TAIL_COLUMNS}
        return ", ".join(f'CAST("{c}" AS {types[c]}) AS "{c}"' for c in df.columns)

    # --- reading ------------------------------------------------------------------------------
    def runs(self, *, status: str | None = None) -> pd.DataFrame:
        """The ``runs`` table as a DataFrame, ordered deterministically."""
        where = "" if status is None else f" WHERE status = '{status}'"
        return self.con.execute(f"SELECT * FROM runs{where} ORDER BY dataset, method, params, k").df()

    def units(self) -> pd.DataFrame:
        return self.con.execute("SELECT * FROM units ORDER BY dataset, method, params").df()

    def outlier_ranks(self) -> pd.DataFrame:
        return self.con.execute(
            "SELECT * FROM outlier_ranks ORDER BY dataset, method, params, k, object").df()

    def scores(self, dataset: str | None = None) -> pd.DataFrame:
        where = "" if dataset is None else " WHERE dataset = ?"
        args: list[Any] = [] if dataset is None else [dataset]
        return self.con.execute(f"SELECT * FROM scores{where} ORDER BY dataset, method, params, k", args).df()

    def export(self, table: str, path: str | Path, fmt: str) -> Path:
        """Write one table to CSV or Parquet (DuckDB's own writers; no extra dependency)."""
        if table not in {"runs", "units", "outlier_ranks", "scores", "studies"}:
            raise ValueError(f"unknown table {table!r}")
        if fmt not in {"csv", "parquet"}:
            raise ValueError(f"unknown export format {fmt!r}; use csv or parquet")
        path = Path(path)
        order = {"studies": "study_hash", "units": "dataset, method, params"}.get(table, "dataset, method, params, k")
        opts = "(FORMAT PARQUET)" if fmt == "parquet" else "(HEADER, DELIMITER ',')"
        escaped = str(path).replace("'", "''")
        self.con.execute(f"COPY (SELECT * FROM {table} ORDER BY {order}) TO '{escaped}' {opts}")
        return path

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ranks_frame(result: UnitResult, dataset: str) -> pd.DataFrame:
    parts: Iterable[pd.DataFrame] = (
        pd.DataFrame({"unit_id": result.unit_id, "dataset": dataset, "method": result.method,
                      "params": result.params, "k": k, "object": objs.astype(np.int64), "rank": ranks})
        for k, objs, ranks in result.ranks
    )
    parts = list(parts)
    if not parts:
        return pd.DataFrame(columns=["unit_id", "dataset", "method", "params", "k", "object", "rank"])
    return pd.concat(parts, ignore_index=True)
