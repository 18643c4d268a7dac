"""The results store: an embedded DuckDB file holding every run of every study.

This module owns the store completely — the schema and every read and write; the runner, the ensembles
(:mod:`odeval.bench.ensembles`), the report and the command line go through :class:`ResultStore`.
Every value in the SQL is a bound parameter; table and column names come from this module's own constants.

Tables (schema version :data:`SCHEMA_VERSION`; the contract with :mod:`odeval.analysis`, see DEVELOPERS.md):

``meta``
    ``key``/``value`` pairs: ``schema_version`` and the odeval version that created the store.
``studies``
    The definition of every study that ran on the store.
``study_units``
    (``study_hash``, ``unit_id``): which units belong to which study. A unit computed once by study A and
    needed again by study B is linked to both, so reading study B shows it.
``units``
    One row per finished unit of work (dataset variant × method × all its k): ``unit_id`` (content hash of
    dataset file, method, parameters, k values and metric — independent of the study file, so adding a method
    to a study only computes the new units), ``file_sha256`` of the dataset file, ``status`` ('ok' | 'error'),
    ``error``, ``skipped`` (JSON: k → reason), ``runtime_s``, ``study_hash`` (the study that computed it),
    ``setting`` and ``seed`` as in ``runs``.
``runs``
    One row per scoring key (:class:`odeval._key.ScoringKey`), i.e. per (unit, k): dataset facts, ``method``,
    ``params`` (JSON, the fixed parameters), ``k`` (NULL for a detector without k: an imported estimator),
    ``setting`` (JSON of the unit's grid point on its non-k axes, '' when none), ``seed`` (the seed of a
    randomised detector, NULL otherwise; schema version 4), one DOUBLE column per measure of
    :data:`odeval.measures.MEASURES`, ``runtime_s`` (the unit's scoring time shared over its k), ``status``,
    ``error``, ``odeval_version``, ``study_hash`` (the study that computed the row; reading a study through
    :meth:`ResultStore.runs` reports the requested study).
``labels``
    One row per dataset variant (``dataset``, ``file_sha256``): ``n_objects`` and the 0-based ``outliers``.
``outlier_ranks``
    (unit, k, ``object``, ``rank``): the rank of every true outlier in the scoring (for Campos §5.3).
``scores``
    Optional full score vectors (``keep_scores = true``).
``internal_measures``
    Label-free (internal) measures of a scoring in long form: (``unit_id``, ``k``, ``measure``) → ``value``
    and ``details`` (JSON), with the dataset, method, params and metric of the unit. ``k`` is part of the primary
    key, so a scoring without k (an imported estimator's unit) is stored with ``k`` = :data:`NO_K` (0: no
    neighbourhood size is 0, k counts the neighbours other than the point) and read back as NULL, like
    ``runs.k``: outside this module a scoring without k has k NULL / None everywhere.
``variant_tasks``
    One row per finished per-variant task (:mod:`odeval.bench.variant_step`): ``task_id`` (content hash of the
    dataset file, the candidate definition — methods, parameters, k, metric, ``candidates`` — the ``kind``
    ('ireos' | 'selection') and its ``options``), ``dataset``, ``file_sha256``, ``status``, ``error``,
    ``n_candidates``, ``details`` (JSON, e.g. gamma_max and fits of IREOS), ``runtime_s``.
``study_variant_tasks``
    (``study_hash``, ``task_id``): which per-variant tasks belong to which study (shared like ``study_units``).
``variant_candidates``
    (``task_id``, ``candidate``): the candidates of a task — ``name`` (``METHOD-NNN``, ``IForest-n_estimators=50@0``),
    ``unit_id``, method, params, metric, k (NULL without k), ``setting`` (JSON of the non-k grid point, '' when
    none) and ``seed`` (NULL unless seeded; schema version 5) — with their quality by the labels
    (:data:`VARIANT_QUALITY`), never shown to a selector.
``variant_values``
    (``task_id``, ``candidate``, ``measure``) → ``value``: label-free values of each candidate computed over the
    whole candidate set (``ireos``, ``ireos_adjusted``, ``ireos_p_value``).
``selection_picks``
    (``task_id``, ``selector``): the pick of a label-free selector — ``candidate`` (row, NULL for a returned
    scoring), ``choice`` (name), ``selector_kind``, ``members``, ``note`` — and the pick's quality by the labels
    (:data:`VARIANT_QUALITY`; for a returned ensemble scoring or a reference scoring, that scoring's quality).

Each unit is written whole in a single transaction (:meth:`ResultStore.write_units` writes several units in
one), so a process killed at any moment (even ``kill -9`` during a write) leaves only whole units behind;
DuckDB's write-ahead log discards the unfinished transaction. A store open for writing is locked by DuckDB for
its process: another process gets :class:`StoreInUseError` naming the PID that holds it.
"""

from __future__ import annotations

import functools
import json
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from odeval._key import ScoringKey

if TYPE_CHECKING:
    import duckdb
else:

    class _DuckDB:
        """DuckDB, imported at the first use: the library's scoring path (benchmarks/gpu_graph.py on a bare
        GPU machine) imports this module for its record types and never opens a store."""

        def __getattr__(self, name: str) -> Any:
            import duckdb as module

            globals()["duckdb"] = module
            return getattr(module, name)

    duckdb = _DuckDB()

__all__ = [
    "NO_K",
    "SCHEMA_VERSION",
    "TABLES",
    "VARIANT_QUALITY",
    "InternalMeasure",
    "ResultStore",
    "StoreError",
    "StoreInUseError",
    "StoreVersionError",
    "StoredSelection",
    "UnitResult",
    "VariantCandidate",
    "VariantTaskResult",
    "is_interrupt",
    "measure_columns",
    "run_key",
    "schema_ddl",
]

#: Version of the table layout :func:`schema_ddl` declares; a store of another version (but those of
#: :data:`UPGRADABLE`), or whose tables differ from the declared ones, is refused with :class:`StoreVersionError`.
#: Every change of the declared tables (a column, a type, a key, a new measure of :data:`odeval.measures.MEASURES`)
#: raises it; ``tests/bench/test_store.py`` pins the hash of the declaration of each version.
SCHEMA_VERSION = 5

#: The schema versions a store is upgraded from in place when opened (:func:`_upgrade_4_to_5`); older ones are
#: refused with :class:`StoreVersionError`.
UPGRADABLE = ("4",)

#: The ``internal_measures.k`` of a scoring without k (k is part of that table's primary key, which cannot hold
#: NULL); :meth:`ResultStore.write_internal_measures` stores k None as it and :meth:`ResultStore.internal_measures`
#: reads it back as NULL.
NO_K = 0

#: Tables a user may export (``odeval results export --table``).
TABLES = ("runs", "units", "outlier_ranks", "scores", "studies", "study_units", "labels", "internal_measures",
          "variant_tasks", "study_variant_tasks", "variant_candidates", "variant_values", "selection_picks")

#: Quality by the labels stored with every candidate and pick of a per-variant task.
VARIANT_QUALITY = ("roc_auc", "average_precision", "adjusted_average_precision")

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
    "setting": "VARCHAR",
    "seed": "INTEGER",
}
_RUN_TAIL_COLUMNS: dict[str, str] = {
    "runtime_s": "DOUBLE",
    "status": "VARCHAR",
    "error": "VARCHAR",
    "odeval_version": "VARCHAR",
}
_ARROW_TYPES = {"VARCHAR": pa.string(), "BOOLEAN": pa.bool_(), "DOUBLE": pa.float64(), "INTEGER": pa.int64()}
_ORDER = {
    "runs": "dataset, method, params, metric, k, setting, seed, unit_id",
    "units": "dataset, method, params, metric, unit_id",
    "outlier_ranks": "dataset, method, params, k, unit_id, object",
    "scores": "dataset, method, params, k, unit_id",
    "studies": "study_hash",
    "study_units": "study_hash, unit_id",
    "labels": "dataset, file_sha256",
    "internal_measures": "dataset, method, params, metric, k, measure, unit_id",
    "variant_tasks": "dataset, kind, task_id",
    "study_variant_tasks": "study_hash, task_id",
    "variant_candidates": "dataset, task_id, candidate",
    "variant_values": "dataset, task_id, candidate, measure",
    "selection_picks": "dataset, task_id, selector",
}
#: Tables holding what a unit computed, keyed by ``unit_id`` (replaced or removed together).
_UNIT_TABLES = ("units", "runs", "outlier_ranks", "scores", "internal_measures")
_STUDY_FILTER = "unit_id IN (SELECT unit_id FROM study_units WHERE study_hash = ?)"
_VARIANT_STUDY_FILTER = "task_id IN (SELECT task_id FROM study_variant_tasks WHERE study_hash = ?)"
_LOCK_PID = re.compile(r"\(PID (\d+)\)")


class StoreError(ValueError):
    """A results store that cannot be opened, read or written; the message is one line naming the path."""


class StoreInUseError(StoreError):
    """The store is locked by another process (``pid``: the process holding DuckDB's file lock, if known)."""

    def __init__(self, message: str, pid: int | None = None):
        super().__init__(message)
        self.pid = pid


class StoreVersionError(StoreError):
    """The store was written with another schema version (or none)."""


def measure_columns() -> tuple[str, ...]:
    """The measure columns of ``runs``: the names of :data:`odeval.measures.MEASURES`."""
    from odeval.measures import MEASURES

    return tuple(MEASURES)


@functools.cache
def schema_ddl(measures: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The ``CREATE TABLE`` statements of schema :data:`SCHEMA_VERSION`, in order: the declared schema.

    ``runs`` has one DOUBLE column per name of ``measures`` (default: :func:`measure_columns`), between the dataset
    and unit facts and the tail columns, so a new measure is a change of the schema (and of its version).
    """
    measures = measure_columns() if measures is None else tuple(measures)
    runs_columns = {**_RUN_FACT_COLUMNS, **{m: "DOUBLE" for m in measures}, **_RUN_TAIL_COLUMNS}
    quality = ", ".join(f"{q} DOUBLE" for q in VARIANT_QUALITY)
    return (
        "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
        "CREATE TABLE studies (study_hash VARCHAR PRIMARY KEY, name VARCHAR, source VARCHAR, "
        "definition VARCHAR, odeval_version VARCHAR, created TIMESTAMP DEFAULT current_timestamp)",
        "CREATE TABLE study_units (study_hash VARCHAR, unit_id VARCHAR, PRIMARY KEY (study_hash, unit_id))",
        "CREATE TABLE units (unit_id VARCHAR PRIMARY KEY, study_hash VARCHAR, dataset VARCHAR, "
        "file_sha256 VARCHAR, method VARCHAR, params VARCHAR, metric VARCHAR, setting VARCHAR, seed INTEGER, "
        "status VARCHAR, "
        "error VARCHAR, skipped VARCHAR, n_k INTEGER, runtime_s DOUBLE, "
        "finished TIMESTAMP DEFAULT current_timestamp)",
        "CREATE TABLE runs (" + ", ".join(f'"{c}" {t}' for c, t in runs_columns.items()) + ")",
        "CREATE TABLE labels (dataset VARCHAR, file_sha256 VARCHAR, n_objects INTEGER, "
        "outliers INTEGER[], PRIMARY KEY (dataset, file_sha256))",
        "CREATE TABLE outlier_ranks (unit_id VARCHAR, dataset VARCHAR, method VARCHAR, "
        "params VARCHAR, k INTEGER, object INTEGER, rank DOUBLE)",
        "CREATE TABLE scores (unit_id VARCHAR, dataset VARCHAR, method VARCHAR, params VARCHAR, "
        "k INTEGER, scores DOUBLE[])",
        "CREATE TABLE internal_measures (unit_id VARCHAR, dataset VARCHAR, method VARCHAR, "
        "params VARCHAR, metric VARCHAR, k INTEGER, measure VARCHAR, value DOUBLE, "
        "details VARCHAR, PRIMARY KEY (unit_id, k, measure))",
        "CREATE TABLE variant_tasks (task_id VARCHAR PRIMARY KEY, study_hash VARCHAR, kind VARCHAR, "
        "dataset VARCHAR, file_sha256 VARCHAR, metric VARCHAR, candidates VARCHAR, options VARCHAR, "
        "status VARCHAR, error VARCHAR, n_candidates INTEGER, details VARCHAR, runtime_s DOUBLE, "
        "odeval_version VARCHAR, finished TIMESTAMP DEFAULT current_timestamp)",
        "CREATE TABLE study_variant_tasks (study_hash VARCHAR, task_id VARCHAR, PRIMARY KEY (study_hash, task_id))",
        "CREATE TABLE variant_candidates (task_id VARCHAR, dataset VARCHAR, candidate INTEGER, "
        "name VARCHAR, unit_id VARCHAR, method VARCHAR, params VARCHAR, metric VARCHAR, k INTEGER, "
        f"{quality}, setting VARCHAR, seed INTEGER, PRIMARY KEY (task_id, candidate))",
        "CREATE TABLE variant_values (task_id VARCHAR, dataset VARCHAR, candidate INTEGER, "
        "measure VARCHAR, value DOUBLE, PRIMARY KEY (task_id, candidate, measure))",
        "CREATE TABLE selection_picks (task_id VARCHAR, dataset VARCHAR, selector VARCHAR, "
        "selector_kind VARCHAR, candidate INTEGER, choice VARCHAR, members INTEGER[], note VARCHAR, "
        f"{quality}, PRIMARY KEY (task_id, selector))",
    )


def _schema4_ddl(measures: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """The ``CREATE TABLE`` statements of schema version 4: those of version 5 without ``variant_candidates``'
    ``setting`` and ``seed`` (``tests/bench/test_store.py`` checks them against the pinned hash of version 4)."""
    return tuple(statement.replace(", setting VARCHAR, seed INTEGER, PRIMARY KEY (task_id, candidate))",
                                   ", PRIMARY KEY (task_id, candidate))") for statement in schema_ddl(measures))


def _upgrade_4_to_5(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Schema version 4 → 5 in one transaction: ``variant_candidates`` gains ``setting`` and ``seed`` (NULL for the
    rows already there: candidates of the kNN family over k, which have neither), ``meta`` records version 5."""
    import sys

    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("ALTER TABLE variant_candidates ADD COLUMN setting VARCHAR")
        con.execute("ALTER TABLE variant_candidates ADD COLUMN seed INTEGER")
        con.execute("UPDATE meta SET value = ? WHERE key = ?", [str(SCHEMA_VERSION), "schema_version"])
        con.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT DO NOTHING", ["upgraded_from", "4"])
        con.execute("COMMIT")
    except BaseException as exc:
        try:
            con.execute("ROLLBACK")
        except (duckdb.Error, RuntimeError):
            pass
        if isinstance(exc, duckdb.Error):
            raise StoreError(f"cannot upgrade results store {path} to schema version {SCHEMA_VERSION}: "
                             f"{_first_line(str(exc))}") from None
        raise
    print(f"odeval: upgraded results store {path} from schema version 4 to {SCHEMA_VERSION} in place "
          "(variant_candidates gained the columns setting and seed)", file=sys.stderr)


_COLUMNS_SQL = ("SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position")


def _table_columns(rows: Iterable[tuple[str, str, str]]) -> dict[str, list[tuple[str, str]]]:
    tables: dict[str, list[tuple[str, str]]] = {}
    for table, column, data_type in rows:
        tables.setdefault(table, []).append((column, data_type))
    return tables


@functools.cache
def _declared_columns(measures: tuple[str, ...]) -> dict[str, list[tuple[str, str]]]:
    """Table → [(column, DuckDB type)] of the declared schema, as DuckDB reports them (built in memory once)."""
    con = duckdb.connect(":memory:")
    try:
        for statement in schema_ddl(measures):
            con.execute(statement)
        return _table_columns(con.execute(_COLUMNS_SQL).fetchall())
    finally:
        con.close()


def _declared_columns_of(version: str, measures: tuple[str, ...]) -> dict[str, list[tuple[str, str]]]:
    """:func:`_declared_columns` of an upgradable older schema version."""
    if version != "4":
        raise ValueError(f"no declared schema of version {version!r} to upgrade from")
    con = duckdb.connect(":memory:")
    try:
        for statement in _schema4_ddl(measures):
            con.execute(statement)
        return _table_columns(con.execute(_COLUMNS_SQL).fetchall())
    finally:
        con.close()


def _schema_difference(found: dict[str, list[tuple[str, str]]], declared: dict[str, list[tuple[str, str]]]) -> str:
    """How the tables of a store differ from the declared ones, in a few words ('' when they match)."""
    notes = []
    for table in sorted(set(declared) | set(found)):
        if table not in found:
            notes.append(f"no table {table}")
        elif table not in declared:
            notes.append(f"an unknown table {table}")
        elif found[table] != declared[table]:
            have, want = dict(found[table]), dict(declared[table])
            lacking = [c for c in want if c not in have]
            unknown = [c for c in have if c not in want]
            parts = [f"{c} is {have[c]}, not {want[c]}" for c in want if c in have and have[c] != want[c]]
            if unknown:
                parts.insert(0, f"has unknown {', '.join(unknown)}")
            if lacking:
                parts.insert(0, f"lacks {', '.join(lacking)}")
            notes.append(f"{table} {'; '.join(parts or ['has its columns in another order'])}")
    return "; ".join(notes)


def _first_line(text: str) -> str:
    return str(text).strip().splitlines()[0] if str(text).strip() else str(text)


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open ``path`` with DuckDB, turning every failure into a one-line :class:`StoreError`."""
    if path.is_dir():
        raise StoreError(f"results store {path} is a folder, not a DuckDB file")
    if read_only and not path.exists():
        raise StoreError(f"results store {path} does not exist")
    if not read_only and not path.exists():
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise StoreError(f"cannot create results store {path}: folder {parent} does not exist")
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as exc:
        raise _translate(path, exc) from None


def _translate(path: Path, exc: BaseException) -> StoreError:
    text = _first_line(str(exc)).removeprefix("IO Error: ")
    if "Could not set lock" in text or "Conflicting lock" in text:
        m = _LOCK_PID.search(text)
        pid = int(m.group(1)) if m else None
        who = f"PID {pid}" if pid is not None else "another process"
        return StoreInUseError(f"results store {path} is in use by {who} (DuckDB file lock; a running "
                               "'odeval study run'?): wait for it to finish or stop it", pid)
    if "not a valid DuckDB database" in text:
        return StoreError(f"{path} is not a DuckDB results store (not a DuckDB database file)")
    if "Permission denied" in text or "Read-only file system" in text:
        cause = "permission denied" if "Permission denied" in text else "read-only file system"
        return StoreError(f"cannot open results store {path}: {cause}")
    return StoreError(f"cannot open results store {path}: {text}")


def _insert_frame(con: duckdb.DuckDBPyConnection, table: str, select: str, frame: Any) -> None:
    """``INSERT INTO table SELECT select FROM frame`` for an Arrow table or a DataFrame (registered for the
    statement only)."""
    con.register("_frame", frame)
    try:
        con.execute(f"INSERT INTO {table} SELECT {select} FROM _frame")
    finally:
        con.unregister("_frame")


def is_interrupt(exc: BaseException) -> bool:
    """Ctrl-C, also as DuckDB reports it when it arrives during a query and as numba reports it when it arrives
    inside a compiled function (``SystemError: ... returned a result with an exception set``, the
    KeyboardInterrupt as its cause)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, KeyboardInterrupt | duckdb.InterruptException):
            return True
        text = str(e)  # DuckDB wraps a KeyboardInterrupt raised in a Python callback (a DataFrame scan)
        if isinstance(e, RuntimeError | duckdb.Error) and ("interrupted" in text.lower()
                                                           or "KeyboardInterrupt" in text):
            return True
        e = e.__cause__ or e.__context__
    return False


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


@dataclass
class UnitResult:
    """Everything one unit produced, ready to be written in one transaction.

    ``dataset`` holds the variant's facts (``name``, ``base_dataset``, …, ``n_objects``, ``n_outliers``) and,
    from the prepare task, ``outliers`` (the 0-based indices of the true outliers) for the ``labels`` table.
    ``internal`` holds label-free measures as (k, measure, value, details) tuples.
    """

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
    internal: list[tuple[int, str, float, dict[str, Any]]] = field(default_factory=list)
    setting: str = ""  # JSON of the unit's non-k grid point ('' when none): runs.setting, units.setting
    seed: int | None = None  # the seed of a randomised detector's unit


@dataclass(frozen=True)
class VariantCandidate:
    """One candidate of a per-variant task: a row of ``variant_candidates``.

    Attributes
    ----------
    key : odeval._key.ScoringKey
        Method, parameters, metric, setting and seed of the scoring (the columns ``method``, ``params``,
        ``metric``, ``k`` and ``setting`` — the setting's k and its other axes —, ``seed``).
    name : str
        The name the selectors saw (:func:`odeval._key.distinct_names` of the task's candidate pool).
    unit_id : str
        The unit whose scoring this is.
    roc_auc, average_precision, adjusted_average_precision : float
        The candidate's quality by the labels (:data:`VARIANT_QUALITY`), never shown to a selector; NaN until
        evaluated.
    """

    key: ScoringKey
    name: str
    unit_id: str
    roc_auc: float = math.nan
    average_precision: float = math.nan
    adjusted_average_precision: float = math.nan

    @property
    def method(self) -> str:
        return self.key.method

    @property
    def params(self) -> str:
        """The parameters as JSON (the store's ``params``)."""
        return self.key.params_json

    @property
    def metric(self) -> str:
        return self.key.metric

    @property
    def k(self) -> int | None:
        return self.key.k

    @property
    def setting(self) -> str:
        """The setting's axes other than k as JSON, as ``runs.setting`` keeps them ('' when there are none)."""
        other = {name: value for name, value in self.key.setting if name != "k"}
        return json.dumps(other, sort_keys=True) if other else ""

    @property
    def seed(self) -> int | None:
        return self.key.seed

    def quality(self, measure: str) -> float:
        """The candidate's value of one :data:`VARIANT_QUALITY` measure."""
        if measure not in VARIANT_QUALITY:
            raise ValueError(f"unknown candidate quality {measure!r}; known: {', '.join(VARIANT_QUALITY)}")
        return float(getattr(self, measure))

    def row(self) -> dict[str, Any]:
        """The ``variant_candidates`` columns of the candidate (without ``task_id``, ``dataset``, ``candidate``)."""
        return {"name": self.name, "unit_id": self.unit_id, "method": self.method, "params": self.params,
                "metric": self.metric, "k": self.k, **{q: self.quality(q) for q in VARIANT_QUALITY},
                "setting": self.setting, "seed": self.seed}


@dataclass
class VariantTaskResult:
    """Everything one per-variant task produced (:mod:`odeval.bench.variant_step`), written in one transaction.

    ``candidates``: one :class:`VariantCandidate` per candidate; ``values``: (candidate, measure, value);
    ``picks``: one dict per selector (``selector``, ``selector_kind``, ``candidate``, ``choice``, ``members``,
    ``note`` and the :data:`VARIANT_QUALITY` measures of the pick).
    """

    task_id: str
    kind: str
    dataset: str
    file_sha256: str
    metric: str
    candidates_mode: str
    options: dict[str, Any]
    status: str = "ok"
    error: str | None = None
    runtime_s: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)
    candidates: list[VariantCandidate] = field(default_factory=list)
    values: list[tuple[int, str, float]] = field(default_factory=list)
    picks: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class StoredSelection:
    """The stored picks of the label-free selectors for one candidates mode and seed
    (:meth:`ResultStore.stored_selection`), with what the audit needs to judge them.

    Attributes
    ----------
    datasets : tuple of str
        The variants with a counted selection task, sorted.
    picks : DataFrame
        The current pick of every (variant, selector) (``selection_picks`` rows): per variant (sorted), the picks of
        its tasks from the oldest to the most recent, each selector once (from the most recent task that ran it).
    candidates : DataFrame
        The candidates (``variant_candidates`` rows) of each variant's most recent task, by variant and candidate.
    facts : dict of str to dict
        :meth:`ResultStore.variant_facts` of each variant.
    ireos_tasks : DataFrame
        The finished IREOS tasks of the same candidates mode or of "all" (``variant_tasks`` rows, store order).
    ireos_values : DataFrame or None
        Their ``variant_values`` rows (None without IREOS tasks).
    ireos_names : dict of str to tuple of str
        Task id → the names of its candidates, in candidate order.
    """

    datasets: tuple[str, ...]
    picks: pd.DataFrame = field(repr=False)
    candidates: pd.DataFrame = field(repr=False)
    facts: dict[str, dict[str, Any]] = field(repr=False)
    ireos_tasks: pd.DataFrame = field(repr=False)
    ireos_values: pd.DataFrame | None = field(repr=False)
    ireos_names: dict[str, tuple[str, ...]] = field(repr=False)


@dataclass(frozen=True)
class InternalMeasure:
    """One label-free measure of one scoring (unit × k), for :meth:`ResultStore.write_internal_measures`.

    ``unit_id``, ``dataset``, ``method``, ``params`` (JSON) and ``metric`` are those of the unit in ``runs``;
    ``k`` is None for a scoring without k (an imported estimator's unit); ``details`` is any JSON-serialisable
    dict (e.g. the parameters of the measure, sample sizes, a curve).
    """

    unit_id: str
    dataset: str
    method: str
    params: str
    metric: str
    k: int | None
    measure: str
    value: float
    details: dict[str, Any] = field(default_factory=dict)


class ResultStore:
    """A DuckDB results store. Use as a context manager or call :meth:`close`.

    Parameters
    ----------
    path : path
        The ``.duckdb`` file; created (with the current schema) when opened for writing and absent.
    read_only : bool
        Open an existing store for reading (several readers may share it; not while a writer holds it).

    Raises
    ------
    StoreError
        One line naming the path and the cause: missing file or folder, not a DuckDB file, no permission.
    StoreInUseError
        Another process holds the store (names its PID).
    StoreVersionError
        The store has another schema version, or none (written before versions were recorded).
    """

    def __init__(self, path: str | Path, *, read_only: bool = False):
        self.path = Path(path)
        self.read_only = read_only
        self.con = _connect(self.path, read_only)
        self._measures = measure_columns()
        try:
            self._check_or_create_schema()
        except BaseException:
            self.con.close()
            raise

    @classmethod
    def open_waiting(cls, path: str | Path, *, wait: float, on_wait: Callable[[StoreInUseError], None] | None = None,
                     poll: float = 0.5) -> ResultStore:
        """Open the store for writing, waiting up to ``wait`` seconds while another process holds its lock.

        ``on_wait`` is called once, with the lock error, when waiting starts. After ``wait`` seconds the
        :class:`StoreInUseError` is raised, saying how long it waited (``wait=0``: at once, as the constructor).
        """
        deadline = time.monotonic() + max(float(wait), 0.0)
        told = False
        while True:
            try:
                return cls(path)
            except StoreInUseError as exc:
                left = deadline - time.monotonic()
                if left <= 0:
                    if wait > 0:
                        raise StoreInUseError(f"{exc} (waited {wait:g} s)", exc.pid) from None
                    raise
                if on_wait is not None and not told:
                    on_wait(exc)
                    told = True
                time.sleep(min(poll, left))

    # --- schema -------------------------------------------------------------------------------
    def _tables(self) -> set[str]:
        return {r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}

    def _check_or_create_schema(self) -> None:
        tables = self._tables()
        if not tables:
            if self.read_only:
                raise StoreVersionError(f"{self.path} is an empty DuckDB file, not an odeval results store")
            self._create_schema()
            return
        found = None
        if "meta" in tables:
            rows = self.con.execute("SELECT value FROM meta WHERE key = ?", ["schema_version"]).fetchall()
            found = rows[0][0] if rows else None
        if found in UPGRADABLE:
            self._upgrade(found)
            found = str(SCHEMA_VERSION)
        what = None
        if found != str(SCHEMA_VERSION):
            what = "no schema version (an older odeval, or not an odeval store)" if found is None \
                else f"schema version {found}"
        else:  # the version is right; its tables must be the declared ones (e.g. a measure added without a bump)
            difference = _schema_difference(_table_columns(self.con.execute(_COLUMNS_SQL).fetchall()),
                                            _declared_columns(self._measures))
            if difference:
                what = f"schema version {found} but other tables ({difference})"
        if what is not None:
            raise StoreVersionError(f"results store {self.path} has {what}; this odeval reads schema version "
                                    f"{SCHEMA_VERSION}: write to a new store (or delete this one) and run the "
                                    "study again")

    def _upgrade(self, found: str) -> None:
        """Upgrade a store of an older schema version in place (:data:`UPGRADABLE`), saying so on stderr.

        The store's tables must be exactly those of its version (else :class:`StoreVersionError`, nothing changed);
        the upgrade is one transaction. A store opened for reading is opened for writing once to be upgraded, then
        again for reading.
        """
        difference = _schema_difference(_table_columns(self.con.execute(_COLUMNS_SQL).fetchall()),
                                        _declared_columns_of(found, self._measures))
        if difference:
            raise StoreVersionError(f"results store {self.path} has schema version {found} but other tables "
                                    f"({difference}); this odeval reads schema version {SCHEMA_VERSION}: write to a "
                                    "new store (or delete this one) and run the study again")
        if self.read_only:
            self.con.close()
            try:
                writer = _connect(self.path, read_only=False)
            except StoreError as exc:
                raise StoreVersionError(f"results store {self.path} has schema version {found} and must be upgraded "
                                        f"to {SCHEMA_VERSION} once, which needs it opened for writing: {exc}") from None
            try:
                _upgrade_4_to_5(writer, self.path)
            finally:
                writer.close()
            self.con = _connect(self.path, read_only=True)
            return
        _upgrade_4_to_5(self.con, self.path)

    def _create_schema(self) -> None:
        from odeval import __version__

        con = self.con
        with self._transaction("create the tables of"):
            for statement in schema_ddl(self._measures):
                con.execute(statement)
            con.execute("INSERT INTO meta VALUES (?, ?), (?, ?)",
                        ["schema_version", str(SCHEMA_VERSION), "created_by", f"odeval {__version__}"])

    @property
    def schema_version(self) -> int:
        return int(self.con.execute("SELECT value FROM meta WHERE key = ?", ["schema_version"]).fetchall()[0][0])

    # --- writing ------------------------------------------------------------------------------
    @contextmanager
    def _transaction(self, what: str) -> Iterator[None]:
        """One transaction: committed whole or rolled back whole.

        A Ctrl-C that DuckDB turns into "Query interrupted" is raised again as KeyboardInterrupt; any other
        DuckDB failure (e.g. a full disk) becomes a one-line :class:`StoreError`.
        """
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
            self.con.execute("COMMIT")
        except BaseException as exc:
            try:
                self.con.execute("ROLLBACK")
            except (duckdb.Error, RuntimeError):  # the transaction is already gone
                pass
            if is_interrupt(exc):
                raise KeyboardInterrupt from None
            if isinstance(exc, duckdb.Error):
                raise StoreError(f"cannot {what} results store {self.path}: {_first_line(str(exc))}") from exc
            raise

    def register_study(self, study_hash: str, name: str, source: str, definition: dict[str, Any],
                       version: str, unit_ids: Iterable[str] = ()) -> None:
        """Record a study and link its units (computed already or not) to it in ``study_units``."""
        links = pd.DataFrame({"study_hash": study_hash, "unit_id": list(dict.fromkeys(unit_ids))},
                             columns=["study_hash", "unit_id"])
        con = self.con
        with self._transaction(f"record study {study_hash} in"):
            con.execute(
                "INSERT INTO studies (study_hash, name, source, definition, odeval_version) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [study_hash, name, source, json.dumps(definition, sort_keys=True, default=str), version])
            if len(links):
                con.register("_links", links)
                con.execute("INSERT INTO study_units SELECT study_hash, unit_id FROM _links ON CONFLICT DO NOTHING")
                con.unregister("_links")

    def drop_units(self, unit_ids: Iterable[str]) -> int:
        """Remove units and everything computed for them (runs, ranks, scores, internal measures, study links) in
        one transaction, e.g. units of an outdated scoring version; returns how many units were removed."""
        ids = list(dict.fromkeys(unit_ids))
        if not ids:
            return 0
        marks = ", ".join("?" for _ in ids)
        with self._transaction("remove outdated units from"):
            for table in (*_UNIT_TABLES, "study_units"):
                self.con.execute(f"DELETE FROM {table} WHERE unit_id IN ({marks})", ids)
        return len(ids)

    def finished_units(self, *, include_errors: bool = True) -> set[str]:
        """Ids of the units in the store (only the successful ones with ``include_errors=False``)."""
        q = "SELECT unit_id FROM units" + ("" if include_errors else " WHERE status = ?")
        return {r[0] for r in self.con.execute(q, [] if include_errors else ["ok"]).fetchall()}

    def write_unit(self, result: UnitResult, *, study_hash: str, version: str, file_sha256: str | None = None) -> None:
        """Write one unit — units row, runs rows, labels, ranks, scores, internal measures — in one transaction."""
        self.write_units([result], study_hash=study_hash, version=version, file_sha256=file_sha256)

    def write_units(self, results: Sequence[UnitResult], *, study_hash: str, version: str,
                    file_sha256: str | Sequence[str | None] | None = None) -> None:
        """Write several units in one transaction: what :meth:`write_unit` writes for each, with one statement per
        table for all of them (the runner writes a variant's finished units together; a small unit's cost was
        mostly the per-statement cost of DuckDB and pandas). ``file_sha256``: one hash for all results, or one per
        result. The stored rows are exactly those of ``write_unit`` called on each result in turn (tested); a unit
        written again replaces its earlier rows, and either every unit of the call is stored or none.
        """
        results = list(results)
        if not results:
            return
        shas = list(file_sha256) if isinstance(file_sha256, list | tuple) else [file_sha256] * len(results)
        if len(shas) != len(results):
            raise ValueError(f"write_units: {len(results)} results but {len(shas)} file hashes")
        ids = [r.unit_id for r in results]
        if len(set(ids)) != len(ids):
            raise ValueError("write_units: a unit id occurs twice in one call")
        runs_tab = self._runs_table(results, study_hash, version)
        ranks_tab = _ranks_table([r for r in results if r.ranks])
        kept = [(r, k, s) for r in results for k, s in r.scores]
        scores_df = pd.DataFrame(
            {"unit_id": [r.unit_id for r, _, _ in kept], "dataset": [r.dataset["name"] for r, _, _ in kept],
             "method": [r.method for r, _, _ in kept], "params": [r.params for r, _, _ in kept],
             "k": [k for _, k, _ in kept], "scores": [s.tolist() for _, _, s in kept]})
        internal = [InternalMeasure(r.unit_id, r.dataset["name"], r.method, r.params, r.metric, k, name, value, details)
                    for r in results for k, name, value, details in r.internal]
        units_tab = _arrow_table({
            "unit_id": (ids, "VARCHAR"), "study_hash": ([study_hash] * len(ids), "VARCHAR"),
            "dataset": ([r.dataset["name"] for r in results], "VARCHAR"), "file_sha256": (shas, "VARCHAR"),
            "method": ([r.method for r in results], "VARCHAR"), "params": ([r.params for r in results], "VARCHAR"),
            "metric": ([r.metric for r in results], "VARCHAR"),
            "setting": ([r.setting for r in results], "VARCHAR"), "seed": ([r.seed for r in results], "INTEGER"),
            "status": ([r.status for r in results], "VARCHAR"),
            "error": ([r.error for r in results], "VARCHAR"),
            "skipped": ([json.dumps({str(k): v for k, v in r.skipped.items()}, ensure_ascii=False) for r in results],
                        "VARCHAR"),
            "n_k": ([len(r.ks) for r in results], "INTEGER"),
            "runtime_s": ([float(r.runtime_s) for r in results], "DOUBLE")})
        labels: dict[tuple[str, str], list[Any]] = {}
        for r, sha in zip(results, shas, strict=True):
            ds = r.dataset
            outliers = ds.get("outliers")
            if outliers is not None and sha is not None and ds.get("n_objects") is not None:
                labels.setdefault((ds["name"], sha), [ds["name"], sha, int(ds["n_objects"]),
                                                      [int(o) for o in outliers]])
        con = self.con
        what = f"write unit {ids[0]} to" if len(ids) == 1 else f"write {len(ids)} units ({ids[0]}, …) to"
        with self._transaction(what):
            # a unit re-run (e.g. --retry-failed) replaces its earlier rows
            con.register("_units_tab", units_tab)
            for table in _UNIT_TABLES:
                con.execute(f"DELETE FROM {table} WHERE unit_id IN (SELECT unit_id FROM _units_tab)")
            con.execute("INSERT INTO units (unit_id, study_hash, dataset, file_sha256, method, params, metric, "
                        "setting, seed, status, error, skipped, n_k, runtime_s) SELECT unit_id, study_hash, dataset, "
                        "file_sha256, method, params, metric, setting, seed, status, error, skipped, n_k, runtime_s "
                        "FROM _units_tab")
            con.execute("INSERT INTO study_units SELECT study_hash, unit_id FROM _units_tab ON CONFLICT DO NOTHING")
            con.unregister("_units_tab")
            for row in labels.values():
                con.execute("INSERT INTO labels VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", row)
            if runs_tab.num_rows:
                _insert_frame(con, "runs", self._select_list(runs_tab.column_names), runs_tab)
            if ranks_tab.num_rows:
                _insert_frame(con, "outlier_ranks", "unit_id, dataset, method, params, k, object, rank", ranks_tab)
            if len(scores_df):
                _insert_frame(con, "scores", "unit_id, dataset, method, params, k, scores", scores_df)
            self._insert_internal(internal)

    def _runs_table(self, results: Sequence[UnitResult], study_hash: str, version: str) -> pa.Table:
        """The ``runs`` rows of ``results`` (one per unit and k), built column by column as an Arrow table."""
        types = self._runs_types()
        cols: dict[str, list[Any]] = {c: [] for c in types}
        for r in results:
            n = len(r.ks)
            if len(r.measures) != n:
                raise ValueError(f"unit {r.unit_id}: {n} k but {len(r.measures)} rows of measures")
            ds = r.dataset
            facts = {
                "unit_id": r.unit_id, "study_hash": study_hash, "dataset": ds["name"],
                "base_dataset": ds["base_dataset"], "normalized": ds.get("normalized"),
                "deduplicated": ds.get("deduplicated"), "outlier_pct": ds.get("outlier_pct"),
                "version": ds.get("version"), "provenance": ds.get("provenance", "{}"),
                "n_objects": ds["n_objects"], "n_outliers": ds["n_outliers"], "n_attributes": ds["n_attributes"],
                "method": r.method, "params": r.params, "metric": r.metric, "setting": r.setting, "seed": r.seed,
                "runtime_s": r.runtime_s / max(n, 1), "status": "ok", "error": None, "odeval_version": version}
            for c, v in facts.items():
                cols[c].extend([v] * n)
            cols["k"].extend(r.ks)
            for m in self._measures:
                cols[m].extend([meas.get(m) for meas in r.measures])
        return _arrow_table({c: (cols[c], types[c]) for c in types})

    def finished_variant_tasks(self, *, include_errors: bool = True) -> set[str]:
        """Ids of the per-variant tasks in the store (only the successful ones with ``include_errors=False``)."""
        q = "SELECT task_id FROM variant_tasks" + ("" if include_errors else " WHERE status = ?")
        return {r[0] for r in self.con.execute(q, [] if include_errors else ["ok"]).fetchall()}

    def link_variant_tasks(self, study_hash: str, task_ids: Iterable[str]) -> None:
        """Link per-variant tasks (computed already or not) to a study in ``study_variant_tasks``."""
        links = pd.DataFrame({"study_hash": study_hash, "task_id": list(dict.fromkeys(task_ids))},
                             columns=["study_hash", "task_id"])
        if not len(links):
            return
        with self._transaction(f"link the variant tasks of study {study_hash} in"):
            self.con.register("_vlinks", links)
            self.con.execute("INSERT INTO study_variant_tasks SELECT study_hash, task_id FROM _vlinks "
                             "ON CONFLICT DO NOTHING")
            self.con.unregister("_vlinks")

    def write_variant_task(self, result: VariantTaskResult, *, study_hash: str, version: str) -> None:
        """Write one per-variant task — its row, candidates, values and picks — in one transaction (a task
        written again, e.g. ``--retry-failed``, replaces its rows)."""
        r = result
        cand = pd.DataFrame([{"task_id": r.task_id, "dataset": r.dataset, "candidate": i, **c.row()}
                             for i, c in enumerate(r.candidates)],
                            columns=["task_id", "dataset", "candidate", "name", "unit_id", "method", "params",
                                     "metric", "k", *VARIANT_QUALITY, "setting", "seed"])
        vals = pd.DataFrame({"task_id": r.task_id, "dataset": r.dataset,
                             "candidate": [int(c) for c, _, _ in r.values], "measure": [m for _, m, _ in r.values],
                             "value": [float(v) for _, _, v in r.values]})
        picks = pd.DataFrame([{"task_id": r.task_id, "dataset": r.dataset, **p} for p in r.picks],
                             columns=["task_id", "dataset", "selector", "selector_kind", "candidate", "choice",
                                      "members", "note", *VARIANT_QUALITY])
        if len(picks):
            picks["members"] = [[int(m) for m in ms] for ms in picks["members"]]
            picks["candidate"] = picks["candidate"].astype("Int64")
        con = self.con
        with self._transaction(f"write variant task {r.task_id} to"):
            for table in ("variant_tasks", "variant_candidates", "variant_values", "selection_picks"):
                con.execute(f"DELETE FROM {table} WHERE task_id = ?", [r.task_id])
            con.execute(
                "INSERT INTO variant_tasks (task_id, study_hash, kind, dataset, file_sha256, metric, candidates, "
                "options, status, error, n_candidates, details, runtime_s, odeval_version) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [r.task_id, study_hash, r.kind, r.dataset, r.file_sha256, r.metric, r.candidates_mode,
                 json.dumps(_jsonable(r.options), sort_keys=True), r.status, r.error, len(r.candidates),
                 json.dumps(_jsonable(r.details), sort_keys=True, allow_nan=True), r.runtime_s, version])
            con.execute("INSERT INTO study_variant_tasks VALUES (?, ?) ON CONFLICT DO NOTHING", [study_hash, r.task_id])
            for table, frame, cols in (
                    ("variant_candidates", cand, "task_id, dataset, CAST(candidate AS INTEGER), name, unit_id, "
                     "method, params, metric, CAST(k AS INTEGER), " + ", ".join(VARIANT_QUALITY)
                     + ", setting, CAST(seed AS INTEGER)"),
                    ("variant_values", vals, "task_id, dataset, CAST(candidate AS INTEGER), measure, value"),
                    ("selection_picks", picks, "task_id, dataset, selector, selector_kind, "
                     "CAST(candidate AS INTEGER), choice, CAST(members AS INTEGER[]), note, "
                     + ", ".join(VARIANT_QUALITY))):
                if len(frame):
                    con.register("_vt_df", frame)
                    con.execute(f"INSERT INTO {table} SELECT {cols} FROM _vt_df")
                    con.unregister("_vt_df")

    def variant_tasks(self, *, study_hash: str | None = None, kind: str | None = None,
                      status: str | None = None) -> pd.DataFrame:
        """The ``variant_tasks`` rows (optionally of one study, kind, status); ``options``/``details`` are JSON."""
        where, args = self._where(study_hash, link=_VARIANT_STUDY_FILTER, kind=kind, status=status)
        return self.con.execute(f"SELECT * FROM variant_tasks{where} ORDER BY {_ORDER['variant_tasks']}",
                                args).df()

    def variant_table(self, table: str, *, task_ids: Iterable[str] | None = None) -> pd.DataFrame:
        """Rows of ``variant_candidates``, ``variant_values`` or ``selection_picks`` (of ``task_ids``), ordered."""
        if table not in ("variant_candidates", "variant_values", "selection_picks"):
            raise ValueError(f"not a per-variant table: {table!r}")
        if task_ids is None:
            return self.con.execute(f"SELECT * FROM {table} ORDER BY {_ORDER[table]}").df()
        ids = pd.DataFrame({"task_id": list(dict.fromkeys(task_ids))}, columns=["task_id"]).astype(str)
        self.con.register("_tids", ids)
        try:
            return self.con.execute(f"SELECT t.* FROM {table} t JOIN _tids USING (task_id) ORDER BY "
                                    + ", ".join("t." + c.strip() for c in _ORDER[table].split(","))).df()
        finally:
            self.con.unregister("_tids")

    def stored_selection(self, *, candidates: str, seed: int, study_hash: str | None = None) -> StoredSelection:
        """The current picks of the per-variant step's selectors (``[selection]``) for one candidates mode and seed,
        with the IREOS values of the same (or of all) candidates, as :class:`StoredSelection`.

        Only finished ('ok') 'selection' tasks whose ``candidates`` mode is ``candidates`` and whose options have
        this ``seed`` (of ``study_hash`` when given) count. A variant's tasks are taken oldest first (``finished``):
        a selector run by several of them keeps the pick of the most recent one, and the candidates are those of
        the variant's most recent task. IREOS: every finished 'ireos' task (of ``study_hash``) whose candidates
        mode is ``candidates`` or "all", read only when some selection task counts.
        """
        tasks = self.variant_tasks(study_hash=study_hash, kind="selection", status="ok")
        if len(tasks):
            opts = [json.loads(o) for o in tasks["options"]]
            keep = (tasks["candidates"].astype(str) == str(candidates)).to_numpy() & \
                np.array([int(o.get("seed", 0)) == int(seed) for o in opts], dtype=bool)
            tasks = tasks[keep].sort_values("finished", kind="stable")
        ids = list(tasks["task_id"]) if len(tasks) else []
        if not ids:
            return StoredSelection((), pd.DataFrame(), pd.DataFrame(), {}, pd.DataFrame(), None, {})
        cands = self.variant_table("variant_candidates", task_ids=ids)
        picks = self.variant_table("selection_picks", task_ids=ids)
        current_picks, current_cands = [], []
        datasets = []
        for dataset, group in tasks.groupby("dataset", sort=True):
            order = list(group["task_id"])  # oldest first: later tasks override a selector
            sub = picks[picks["task_id"].isin(order)].copy()
            sub["_age"] = sub["task_id"].map({t: i for i, t in enumerate(order)})
            current_picks.append(sub.sort_values("_age", kind="stable").drop_duplicates("selector", keep="last")
                                 .drop(columns="_age"))
            current_cands.append(cands[cands["task_id"] == order[-1]].sort_values("candidate"))
            datasets.append(str(dataset))
        facts = {d: self.variant_facts(d) for d in tasks["dataset"].unique()}
        itasks = self.variant_tasks(study_hash=study_hash, kind="ireos", status="ok")
        itasks = itasks[itasks["candidates"].astype(str).isin({str(candidates), "all"})] if len(itasks) else itasks
        ivalues = self.variant_table("variant_values", task_ids=list(itasks["task_id"])) if len(itasks) else None
        inames = (self.variant_table("variant_candidates", task_ids=list(itasks["task_id"])).groupby("task_id")
                  ["name"].agg(tuple).to_dict() if len(itasks) else {})
        return StoredSelection(tuple(datasets), pd.concat(current_picks, ignore_index=True),
                               pd.concat(current_cands, ignore_index=True), facts, itasks, ivalues, inames)

    def write_internal_measures(self, rows: Iterable[InternalMeasure]) -> int:
        """Write label-free measures (one transaction); a row with the same (unit_id, k, measure) is replaced.

        Returns the number of rows written.
        """
        rows = list(rows)
        for r in rows:
            if not isinstance(r, InternalMeasure):
                raise TypeError(f"expected InternalMeasure rows, got {type(r).__name__}")
        with self._transaction("write internal measures to"):
            self._insert_internal(rows)
        return len(rows)

    def _insert_internal(self, rows: Sequence[InternalMeasure]) -> None:
        if not rows:
            return
        frame = pd.DataFrame({
            "unit_id": [r.unit_id for r in rows], "dataset": [r.dataset for r in rows],
            "method": [r.method for r in rows], "params": [r.params for r in rows],
            "metric": [r.metric for r in rows], "k": [NO_K if r.k is None else int(r.k) for r in rows],
            "measure": [r.measure for r in rows], "value": [float(r.value) for r in rows],
            "details": [json.dumps(_jsonable(r.details), sort_keys=True, allow_nan=True) for r in rows]})
        self.con.register("_internal_df", frame)
        self.con.execute("INSERT OR REPLACE INTO internal_measures SELECT unit_id, dataset, method, params, metric, "
                         "CAST(k AS INTEGER), measure, value, details FROM _internal_df")
        self.con.unregister("_internal_df")

    def _runs_columns(self) -> list[str]:
        return [*_RUN_FACT_COLUMNS, *self._measures, *_RUN_TAIL_COLUMNS]

    def _runs_types(self) -> dict[str, str]:
        return {**_RUN_FACT_COLUMNS, **{m: "DOUBLE" for m in self._measures}, **_RUN_TAIL_COLUMNS}

    def _select_list(self, columns: Sequence[str]) -> str:
        types = self._runs_types()
        return ", ".join(f'CAST("{c}" AS {types[c]}) AS "{c}"' for c in columns)

    # --- reading ------------------------------------------------------------------------------
    def _where(self, study_hash: str | None, alias: str = "", *, link: str = _STUDY_FILTER,
               **equal: Any) -> tuple[str, list[Any]]:
        """A WHERE clause with bound parameters: study membership (of units; ``link`` for other tables) plus
        column = value for non-None values."""
        clauses, args = [], []
        if study_hash is not None:
            self._require_study(study_hash)
            clauses.append(alias + link)
            args.append(study_hash)
        for column, value in equal.items():
            if value is not None:
                clauses.append(f"{alias}{column} = ?")
                args.append(value)
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    def _require_study(self, study_hash: str) -> None:
        if self.con.execute("SELECT count(*) FROM studies WHERE study_hash = ?", [study_hash]).fetchall()[0][0]:
            return
        known = [r[0] for r in self.con.execute("SELECT study_hash FROM studies ORDER BY created").fetchall()]
        raise StoreError(f"{self.path}: no study with study_hash {study_hash!r}; studies: "
                         f"{', '.join(known) or 'none'}")

    def studies(self) -> pd.DataFrame:
        """The ``studies`` table with the number of units and of dataset variants linked to each study (columns
        ``n_units``, ``n_datasets``), oldest first."""
        return self.con.execute(
            "SELECT s.*, (SELECT count(*) FROM study_units u WHERE u.study_hash = s.study_hash) AS n_units, "
            "(SELECT count(DISTINCT n.dataset) FROM study_units u JOIN units n ON n.unit_id = u.unit_id "
            "WHERE u.study_hash = s.study_hash) AS n_datasets "
            "FROM studies s ORDER BY created, study_hash").df()

    def study_unit_ids(self, study_hash: str) -> set[str]:
        """Ids of the units linked to ``study_hash`` (computed by it or by an earlier study)."""
        self._require_study(study_hash)
        return {r[0] for r in self.con.execute(
            "SELECT unit_id FROM study_units WHERE study_hash = ?", [study_hash]).fetchall()}

    def runs(self, *, study_hash: str | None = None, status: str | None = None,
             dataset: str | None = None) -> pd.DataFrame:
        """The ``runs`` rows (optionally of one study, status, dataset), ordered deterministically.

        With ``study_hash`` every unit linked to the study is included — also those an earlier study
        computed — and the column ``study_hash`` holds the requested study.
        """
        where, args = self._where(study_hash, status=status, dataset=dataset)
        frame = self.con.execute(f"SELECT * FROM runs{where} ORDER BY {_ORDER['runs']}", args).df()
        if study_hash is not None:
            frame["study_hash"] = study_hash
        return frame

    def units(self, *, study_hash: str | None = None) -> pd.DataFrame:
        """The ``units`` rows (optionally of one study)."""
        where, args = self._where(study_hash)
        return self.con.execute(f"SELECT * FROM units{where} ORDER BY {_ORDER['units']}", args).df()

    def datasets(self, *, with_scores: bool = False) -> list[str]:
        """Names of the dataset variants with at least one run (with a kept score vector: ``with_scores``)."""
        table = "scores" if with_scores else "runs"
        return [r[0] for r in self.con.execute(f"SELECT DISTINCT dataset FROM {table} ORDER BY 1").fetchall()]

    def variant_facts(self, dataset: str) -> dict[str, Any]:
        """The dataset facts of a variant's runs (``base_dataset``, ``provenance``, ``n_objects``, …); {} if none."""
        cols = [c for c in _RUN_FACT_COLUMNS if c not in ("unit_id", "study_hash", "dataset", "method", "params",
                                                           "metric", "k")]
        rows = self.con.execute(f"SELECT {', '.join(f'any_value({c})' for c in cols)} FROM runs WHERE dataset = ? "
                                "HAVING count(*) > 0", [dataset]).fetchall()
        return dict(zip(cols, rows[0], strict=True)) if rows else {}

    def outlier_ranks(self, *, study_hash: str | None = None, dataset: str | None = None,
                      at: pd.DataFrame | None = None) -> pd.DataFrame:
        """``outlier_ranks`` rows; ``at`` (columns ``unit_id``, ``k``) keeps only those scorings (e.g. best k)."""
        return self._rows("outlier_ranks", study_hash, dataset, at)

    def scores(self, *, dataset: str | None = None, study_hash: str | None = None,
               at: pd.DataFrame | None = None) -> pd.DataFrame:
        """Kept score vectors (column ``scores``: list of floats), one row per (unit, k); ``at`` as above."""
        return self._rows("scores", study_hash, dataset, at)

    def _rows(self, table: str, study_hash: str | None, dataset: str | None, at: pd.DataFrame | None) -> pd.DataFrame:
        if at is None:
            where, args = self._where(study_hash, dataset=dataset)
            return self.con.execute(f"SELECT * FROM {table}{where} ORDER BY {_ORDER[table]}", args).df()
        where, args = self._where(study_hash, "t.", dataset=dataset)
        # k is NULL for a scoring without k (an imported estimator's): matched null-safely
        want = at[["unit_id", "k"]].drop_duplicates().astype({"unit_id": str, "k": "Int64"})
        self.con.register("_at", want)
        try:
            return self.con.execute(
                f"SELECT t.* FROM {table} t JOIN _at w ON t.unit_id = w.unit_id AND t.k IS NOT DISTINCT FROM w.k"
                f"{where} "
                f"ORDER BY {', '.join('t.' + c.strip() for c in _ORDER[table].split(','))}", args).df()
        finally:
            self.con.unregister("_at")

    def n_scores(self, *, study_hash: str | None = None) -> int:
        """Number of kept score vectors (0 when the study did not set ``keep_scores``)."""
        where, args = self._where(study_hash)
        return int(self.con.execute(f"SELECT count(*) FROM scores{where}", args).fetchall()[0][0])

    def labels(self, dataset: str, file_sha256: str | None = None) -> np.ndarray:
        """The ground truth of a dataset variant: bool array, True for the true outliers.

        Raises
        ------
        StoreError
            If the store holds no labels of ``dataset``, or several different files under that name and no
            ``file_sha256`` says which.
        """
        rows = self.con.execute(
            "SELECT file_sha256, n_objects, outliers FROM labels WHERE dataset = ?"
            + ("" if file_sha256 is None else " AND file_sha256 = ?") + " ORDER BY file_sha256",
            [dataset] if file_sha256 is None else [dataset, file_sha256]).fetchall()
        if not rows:
            raise StoreError(f"{self.path}: no labels of dataset {dataset!r}"
                             + ("" if file_sha256 is None else f" (file sha256 {file_sha256[:12]}…)"))
        if len(rows) > 1:
            raise StoreError(f"{self.path}: {len(rows)} different files are stored under the dataset name "
                             f"{dataset!r}; pick one by its file sha256 ({', '.join(r[0][:12] for r in rows)})")
        _, n, outliers = rows[0]
        y = np.zeros(int(n), dtype=bool)
        y[np.asarray(outliers, dtype=np.int64)] = True
        return y

    def labels_by_dataset(self, *, study_hash: str | None = None) -> dict[str, np.ndarray]:
        """The ground truth of every dataset variant with a unit (of ``study_hash``): name → bool array.

        Raises
        ------
        StoreError
            If the selection holds two different files under one dataset name.
        """
        where, args = self._where(study_hash, "u.")
        rows = self.con.execute(
            "SELECT l.dataset, l.file_sha256, l.n_objects, l.outliers FROM labels l JOIN "
            f"(SELECT DISTINCT u.dataset, u.file_sha256 FROM units u{where}) f "
            "ON l.dataset = f.dataset AND l.file_sha256 = f.file_sha256 ORDER BY l.dataset, l.file_sha256",
            args).fetchall()
        out: dict[str, np.ndarray] = {}
        for dataset, _, n, outliers in rows:
            if dataset in out:
                raise StoreError(f"{self.path}: different files are stored under the dataset name {dataset!r}; "
                                 "read one study (--study-hash)")
            y = np.zeros(int(n), dtype=bool)
            y[np.asarray(outliers, dtype=np.int64)] = True
            out[dataset] = y
        return out

    def labels_table(self) -> pd.DataFrame:
        """The ``labels`` table: dataset, file_sha256, n_objects, outliers (list of 0-based indices)."""
        return self.con.execute(f"SELECT * FROM labels ORDER BY {_ORDER['labels']}").df()

    def kept_scorings(self, dataset: str, *, measure: str | None = "roc_auc") -> pd.DataFrame:
        """The scorings of ``dataset`` with a kept score vector, without the vectors.

        Columns ``unit_id``, ``file_sha256``, ``method``, ``params``, ``metric``, ``k`` (NULL for a scoring
        without k), ``setting``, ``seed`` (the unit's non-k grid point and seed: with the others, the columns of
        :func:`run_key`) and, when ``measure`` is a measure column of ``runs``, that measure of each scoring.
        Ordered by method, params, metric, k, setting, seed, unit_id.
        """
        frame = self.con.execute(
            "SELECT s.unit_id, u.file_sha256, s.method, s.params, u.metric, s.k, u.setting, u.seed FROM scores s "
            "LEFT JOIN units u ON s.unit_id = u.unit_id WHERE s.dataset = ? "
            "ORDER BY s.method, s.params, u.metric, s.k, u.setting, u.seed, s.unit_id", [dataset]).df()
        if measure is not None and measure in self._measure_columns_present():
            quoted = '"' + measure.replace('"', '""') + '"'
            values = self.con.execute(f"SELECT unit_id, k, {quoted} FROM runs WHERE dataset = ? AND status = ?",
                                      [dataset, "ok"]).df()
            frame = frame.merge(values, on=["unit_id", "k"], how="left")
        return frame

    def _measure_columns_present(self) -> set[str]:
        return {r[0] for r in self.con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", ["runs"]).fetchall()}

    def score_matrix(self, dataset: str, at: pd.DataFrame) -> np.ndarray:
        """The kept score vectors of the scorings ``at`` (columns ``unit_id``, ``k``), one row each, in order.

        Raises
        ------
        StoreError
            If a requested vector is missing or the vectors differ in length.
        """
        want = at[["unit_id", "k"]].reset_index(drop=True).astype({"unit_id": str, "k": "Int64"})
        want = want.assign(_row=np.arange(len(want)))
        self.con.register("_want", want)
        try:
            got = self.con.execute(
                "SELECT w._row, s.scores FROM scores s JOIN _want w ON s.unit_id = w.unit_id "
                "AND s.k IS NOT DISTINCT FROM w.k "
                "WHERE s.dataset = ? ORDER BY w._row", [dataset]).fetchall()
        finally:
            self.con.unregister("_want")
        if [r[0] for r in got] != list(range(len(want))):
            raise StoreError(f"{self.path}: {dataset}: {len(want)} scorings requested but {len(got)} kept score "
                             "vectors found")
        lengths = {len(r[1]) for r in got}
        if len(lengths) > 1:
            raise StoreError(f"{self.path}: {dataset}: kept score vectors have different lengths {sorted(lengths)}")
        return np.vstack([np.asarray(r[1], dtype=np.float64) for r in got]) if got else np.empty((0, 0))

    def kept_unit_scores(self, dataset: str, unit_ids: Iterable[str]) -> dict[str, np.ndarray]:
        """The kept score vectors of scorings without k (imported estimators' units) of ``dataset``: unit id →
        float64 array; units without a kept vector (failed, or ``keep_scores`` off) are absent."""
        ids = list(dict.fromkeys(unit_ids))
        if not ids:
            return {}
        frame = self.scores(dataset=dataset, at=pd.DataFrame({"unit_id": ids, "k": [None] * len(ids)}))
        return {str(u): np.asarray(v, dtype=np.float64) for u, v in zip(frame["unit_id"], frame["scores"],
                                                                         strict=True)}

    def internal_measures(self, *, study_hash: str | None = None, dataset: str | None = None,
                          measure: str | None = None) -> pd.DataFrame:
        """Label-free measures in long form: unit_id, dataset, method, params, metric, k, measure, value, details.

        ``k`` is NULL for a scoring without k (stored as :data:`NO_K`); ``details`` is the JSON text written with
        the row (``json.loads`` it).
        """
        where, args = self._where(study_hash, dataset=dataset, measure=measure)
        columns = ", ".join("NULLIF(k, ?) AS k" if c == "k" else c for c in (
            "unit_id", "dataset", "method", "params", "metric", "k", "measure", "value", "details"))
        return self.con.execute(f"SELECT {columns} FROM internal_measures{where} "
                                f"ORDER BY {_ORDER['internal_measures']}", [NO_K, *args]).df()

    def export(self, table: str, path: str | Path, fmt: str) -> Path:
        """Write one table to CSV or Parquet (DuckDB's own writers; no extra dependency).

        Raises
        ------
        ValueError
            For an unknown table or format.
        StoreError
            If the file cannot be written (names the path and the cause).
        """
        if table not in TABLES:
            raise ValueError(f"unknown table {table!r}; tables: {', '.join(TABLES)}")
        if fmt not in {"csv", "parquet"}:
            raise ValueError(f"unknown export format {fmt!r}; use csv or parquet")
        path = Path(path)
        if path.is_dir():
            raise StoreError(f"cannot write {path}: it is a folder")
        if not path.parent.is_dir():
            raise StoreError(f"cannot write {path}: folder {path.parent} does not exist")
        opts = "(FORMAT PARQUET)" if fmt == "parquet" else "(HEADER, DELIMITER ',')"
        try:
            self.con.execute(f"COPY (SELECT * FROM {table} ORDER BY {_ORDER[table]}) TO ? {opts}", [str(path)])
        except duckdb.Error as exc:
            text = _first_line(str(exc)).removeprefix("IO Error: ")
            cause = "permission denied" if "Permission denied" in text else text
            raise StoreError(f"cannot write {path}: {cause}") from None
        return path

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _arrow_table(columns: dict[str, tuple[Any, str]]) -> pa.Table:
    """An Arrow table of (values, DuckDB type) columns for an INSERT … SELECT. NaN becomes NULL, as in a pandas
    frame scanned by DuckDB (the rows are those the earlier pandas path stored)."""
    def column(values: Any, kind: str) -> pa.Array:
        try:
            return pa.array(values, type=_ARROW_TYPES[kind], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # unusual values (e.g. a number as text): DuckDB casts them
            return pa.array([None if v is None else str(v) for v in values], type=pa.string())

    return pa.table({c: column(v, t) for c, (v, t) in columns.items()})


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def run_key(row: Any) -> ScoringKey:
    """The :class:`~odeval._key.ScoringKey` of a ``runs`` row (a mapping, a pandas row or a namedtuple with the
    columns ``method``, ``params``, ``metric``, ``k``, ``setting``, ``seed``): the one name of its scoring."""
    get = row.get if hasattr(row, "get") else lambda c, d=None: getattr(row, c, d)
    setting = get("setting", "")
    k, seed = get("k"), get("seed")
    return ScoringKey.from_params_json(
        str(get("method")), get("params") or None, metric=get("metric") or "",
        setting=None if _missing(setting) or not setting else json.loads(setting),
        k=None if _missing(k) else int(k), seed=None if _missing(seed) else int(seed))


def _k_column(ks: list[int | None], size: list[int]) -> pa.Array:
    """The k of each rank row; a scoring without k (an imported estimator's, k None) is stored as NULL."""
    if any(k is None for k in ks):
        return pa.array(np.repeat(np.array(ks, dtype=object), size).tolist(), type=pa.int64())
    return pa.array(np.repeat(np.array(ks, dtype=np.int64), size))


def _ranks_table(results: Sequence[UnitResult]) -> pa.Table:
    """The ``outlier_ranks`` rows of ``results``: |O| per stored k (see :data:`odeval.bench.runner.MAX_RANK_ROWS`)."""
    rows = [(r, k, objs, rk) for r in results for k, objs, rk in r.ranks]
    size = [len(objs) for _, _, objs, _ in rows]

    def text(values: list[str]) -> pa.Array:
        return pa.array(np.repeat(np.array(values, dtype=object), size), type=pa.string())

    if not rows:
        return _arrow_table({c: ([], t) for c, t in (("unit_id", "VARCHAR"), ("dataset", "VARCHAR"),
                                                      ("method", "VARCHAR"), ("params", "VARCHAR"),
                                                      ("k", "INTEGER"), ("object", "INTEGER"), ("rank", "DOUBLE"))})
    return pa.table({
        "unit_id": text([r.unit_id for r, _, _, _ in rows]),
        "dataset": text([r.dataset["name"] for r, _, _, _ in rows]),
        "method": text([r.method for r, _, _, _ in rows]), "params": text([r.params for r, _, _, _ in rows]),
        "k": _k_column([k for _, k, _, _ in rows], size),
        "object": pa.array(np.concatenate([np.asarray(o).astype(np.int64) for _, _, o, _ in rows])),
        "rank": pa.array(np.concatenate([np.asarray(x, dtype=np.float64) for _, _, _, x in rows]), from_pandas=True)})
