"""Read a results store (DuckDB) into the DataFrames the analysis works on.

A thin stand-in until the bench stage provides the reader the report uses: it opens the DuckDB file
read-only and returns its tables (schema: DEVELOPERS.md, "bench → analysis"; :mod:`odeval.bench.store`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pandas as pd

from odeval.bench.store import open_read_only, table_names

__all__ = ["StoreTables", "read_best_k_ranks", "read_best_k_scores", "read_results_store"]


class StoreTables(NamedTuple):
    """The tables of a results store the report needs (``None`` when the store lacks the table)."""

    runs: pd.DataFrame
    outlier_ranks: pd.DataFrame | None
    units: pd.DataFrame | None
    n_scores: int


def read_results_store(path: str | Path, study_hash: str | None = None, *, with_ranks: bool = True) -> StoreTables:
    """Return the ``runs``, ``outlier_ranks`` and ``units`` tables of a DuckDB results store.

    ``outlier_ranks`` holds one row per true outlier, method and k — large for a full study; pass
    ``with_ranks=False`` and read only the best-k rows with :func:`read_best_k_ranks`.

    Parameters
    ----------
    path : path
        The ``.duckdb`` file.
    study_hash : str, optional
        Keep only this study's rows (ranks and units restricted to the datasets of its runs).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not a DuckDB database, has no ``runs`` table, or no run of ``study_hash``.
    """
    p = Path(path)
    con = open_read_only(p)
    try:
        tables = table_names(con)
        if "runs" not in tables:
            raise ValueError(f"{p} has no table 'runs' (tables: {sorted(tables)})")
        where, args = ("", []) if study_hash is None else (" WHERE study_hash = ?", [study_hash])
        runs = con.execute(f"SELECT * FROM runs{where}", args).df()
        if study_hash is not None and runs.empty:
            raise ValueError(f"{p}: no run with study_hash {study_hash!r}")
        ranks = (con.execute("SELECT * FROM outlier_ranks").df()
                 if with_ranks and "outlier_ranks" in tables else None)
        units = con.execute("SELECT * FROM units").df() if "units" in tables else None
        n_scores = int(con.execute("SELECT count(*) FROM scores").fetchone()[0]) if "scores" in tables else 0
    finally:
        con.close()
    if ranks is not None and ranks.empty:
        ranks = None
    if study_hash is not None:
        keep = runs["dataset"].unique()
        if ranks is not None:
            ranks = ranks[ranks["dataset"].isin(keep)].reset_index(drop=True)
        if units is not None and "study_hash" in units.columns:
            units = units[units["study_hash"] == study_hash].reset_index(drop=True)
    return StoreTables(runs, ranks, units, n_scores)


def _read_best_k(path: str | Path, table: str, summary: pd.DataFrame, measure: str, empty: list[str]) -> pd.DataFrame:
    best = summary[(summary["measure"] == measure) & summary["best_k"].notna()]
    cols = ["unit_id", "k"] if "unit_id" in best.columns else ["dataset", "method", "k"]
    want = best[[c if c != "k" else "best_k" for c in cols]].rename(columns={"best_k": "k"}).astype({"k": "int64"})
    con = open_read_only(path)
    try:
        if table not in table_names(con):
            return pd.DataFrame(columns=empty)
        con.register("_want", want)
        join = " AND ".join(f"t.{c} = w.{c}" for c in cols)
        return con.execute(f"SELECT t.* FROM {table} t JOIN _want w ON {join}").df()
    finally:
        con.close()


def read_best_k_ranks(path: str | Path, summary: pd.DataFrame, measure: str = "roc_auc") -> pd.DataFrame | None:
    """Rows of the store's ``outlier_ranks`` table at each method's best k for ``measure`` (None if none).

    ``summary`` is :func:`odeval.analysis.per_variant_summary` of the store's runs; only the needed rows are
    read, joined on ``unit_id`` when the runs carry it.
    """
    out = _read_best_k(path, "outlier_ranks", summary, measure, ["dataset", "method", "params", "k", "object", "rank"])
    return out if len(out) else None


def read_best_k_scores(path: str | Path, summary: pd.DataFrame, measure: str = "roc_auc") -> pd.DataFrame:
    """Score vectors of the store's ``scores`` table at each method's best k for ``measure``.

    Only the needed rows are read. Returns columns (dataset, method, params, k, scores[, unit_id]); empty when
    the store kept no scores.
    """
    return _read_best_k(path, "scores", summary, measure, ["dataset", "method", "params", "k", "scores"])
