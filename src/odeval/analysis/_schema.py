"""The results-store schema as seen by the analysis stage (see DEVELOPERS.md, "bench → analysis").

Everything in :mod:`odeval.analysis` works on pandas DataFrames with the columns of the store's ``runs`` and
``outlier_ranks`` tables. This module names those columns, finds the measure columns present, validates a
frame and attaches the *configuration label* (``config``) that identifies a (method, params) pair in tables
and plots.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from odeval.measures import MEASURES

__all__ = [
    "DATASET_COLUMNS",
    "DEFAULT_MEASURES",
    "check_ranks_frame",
    "check_runs_frame",
    "dataset_table",
    "known_measures",
    "measure_columns",
]

#: The measure columns of the results store: :data:`odeval.measures.MEASURES` (the measures stage precedes
#: analysis, so the names are defined once, there).
DEFAULT_MEASURES: tuple[str, ...] = tuple(MEASURES)

#: Per-variant metadata columns of ``runs`` (constant within one dataset variant).
DATASET_COLUMNS: tuple[str, ...] = (
    "base_dataset",
    "normalized",
    "deduplicated",
    "outlier_pct",
    "n_objects",
    "n_outliers",
    "n_attributes",
)

_RUNS_REQUIRED = ("dataset", "base_dataset", "method", "k")
_RANKS_REQUIRED = ("dataset", "method", "k", "object", "rank")


def known_measures() -> tuple[str, ...]:
    """Measure names of :data:`odeval.measures.MEASURES` (the store's measure columns)."""
    return DEFAULT_MEASURES


def measure_columns(runs: pd.DataFrame, measures: str | Iterable[str] | None = None) -> list[str]:
    """Return the measure columns to analyse.

    Parameters
    ----------
    runs : DataFrame
        A ``runs`` frame.
    measures : str or iterable of str, optional
        Requested measure names. By default every name of :data:`odeval.measures.MEASURES` (or
        :data:`DEFAULT_MEASURES`) that is a column of ``runs``.

    Raises
    ------
    ValueError
        If a requested measure is not a column of ``runs``, or no measure column is present.
    """
    if measures is None:
        cols = [m for m in known_measures() if m in runs.columns]
        if not cols:
            raise ValueError(
                f"runs has none of the measure columns {list(known_measures())}; columns are {list(runs.columns)}"
            )
        return cols
    if isinstance(measures, str):
        measures = [measures]
    cols = list(measures)
    missing = [m for m in cols if m not in runs.columns]
    if missing:
        raise ValueError(f"measure column(s) {missing} not in runs; columns are {list(runs.columns)}")
    if not cols:
        raise ValueError("no measure requested")
    return cols


def _params_text(value: object) -> str:
    """Canonical compact text of a ``params`` value (JSON string, dict, None or NaN)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return ""
        try:
            value = json.loads(text)
        except ValueError:
            return text
    if isinstance(value, dict):
        if not value:
            return ""
        return ", ".join(f"{k}={value[k]}" for k in sorted(value))
    return str(value)


def canonical_params(values: pd.Series) -> pd.Series:
    """:func:`_params_text` of every value, computed once per distinct value."""
    try:
        uniq = pd.unique(values)
    except TypeError:  # unhashable values (dicts)
        return pd.Series([_params_text(v) for v in values], index=values.index, dtype=object)
    texts = {v: _params_text(v) for v in uniq if not (isinstance(v, float) and np.isnan(v))}
    return pd.Series([texts[v] if v in texts else "" for v in values], index=values.index, dtype=object)


def _add_config(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``params`` (canonical text, '' when absent) and ``config`` (method label) columns.

    ``config`` is the method name when the frame holds a single parameter setting of that method, else
    ``"method (params)"``; when the frame mixes distance metrics (column ``metric``), `` [metric]`` is
    appended.
    """
    out = frame.copy()
    out["params"] = canonical_params(out["params"]) if "params" in out.columns else ""
    n_settings = out.groupby("method")["params"].transform("nunique")
    config = pd.Series(
        np.where(
            (n_settings > 1) & (out["params"] != ""),
            out["method"].astype(str) + " (" + out["params"] + ")",
            out["method"].astype(str),
        ),
        index=out.index,
    )
    if "metric" in out.columns:
        # '' is no metric (an imported estimator reads the data matrix): never a label of its own
        metric = out["metric"].fillna("").astype(str)
        if metric[metric != ""].nunique() > 1:
            config = config.where(metric == "", config + " [" + metric + "]")
    out["config"] = config
    return out


def check_runs_frame(runs: pd.DataFrame, *, name: str = "runs") -> pd.DataFrame:
    """Validate a ``runs`` frame and return its successful rows with ``params`` canonical and ``config`` added.

    Rows whose ``status`` is not ``'ok'`` are removed (callers report their number via
    :func:`odeval.analysis.study_summary`). Duplicate (dataset, method, params[, metric], k) rows among the
    successful rows raise, since a store holding several studies must be filtered on ``study_hash`` first.

    Raises
    ------
    ValueError
        Missing required columns, no successful rows, non-integer ``k``, or duplicate rows.
    """
    if not isinstance(runs, pd.DataFrame):
        raise ValueError(f"{name} must be a pandas DataFrame, got {type(runs).__name__}")
    missing = [c for c in _RUNS_REQUIRED if c not in runs.columns]
    if missing:
        raise ValueError(f"{name} lacks required column(s) {missing}; columns are {list(runs.columns)}")
    frame = runs
    if "status" in frame.columns:
        frame = frame[frame["status"].astype(str) == "ok"]
    if frame.empty:
        raise ValueError(f"{name} holds no successful run (status 'ok')")
    k = pd.to_numeric(frame["k"], errors="coerce")
    # a scoring without k (an imported estimator's, schema version 4: runs.setting exists) has k NULL
    no_k_allowed = "setting" in frame.columns
    bad = (k.isna() & ~pd.Series(no_k_allowed, index=k.index)) | (k.notna() & (k != np.floor(k)))
    if bad.any():
        where = frame.index[bad.to_numpy()][:5].tolist()
        raise ValueError(f"{name}: column k must hold integers; bad value(s) at row label(s) {where}")
    frame = _add_config(frame)
    frame["k"] = k.astype(np.int64).to_numpy() if not k.isna().any() else k.astype("Int64").to_numpy()
    if "setting" in frame.columns:
        frame["setting"] = frame["setting"].fillna("").astype(str)
    axes = ["dataset", "config", "k"] + [c for c in ("setting", "seed") if c in frame.columns]
    dup = frame.duplicated(axes, keep=False)
    if dup.any():
        first = frame.loc[dup, ["dataset", "config", "k"]].iloc[0].to_dict()
        hint = " (several studies? filter on study_hash first)" if "study_hash" in frame.columns else ""
        raise ValueError(
            f"{name} holds {int(dup.sum())} duplicate (dataset, method, params, k) rows, e.g. {first}{hint}"
        )
    return frame.reset_index(drop=True)


def check_ranks_frame(ranks: pd.DataFrame, *, name: str = "outlier_ranks") -> pd.DataFrame:
    """Validate an ``outlier_ranks`` frame; return it with ``params`` canonical (rank as float64)."""
    if not isinstance(ranks, pd.DataFrame):
        raise ValueError(f"{name} must be a pandas DataFrame, got {type(ranks).__name__}")
    missing = [c for c in _RANKS_REQUIRED if c not in ranks.columns]
    if missing:
        raise ValueError(f"{name} lacks required column(s) {missing}; columns are {list(ranks.columns)}")
    out = ranks.copy()
    out["params"] = canonical_params(out["params"]) if "params" in out.columns else ""
    r = pd.to_numeric(out["rank"], errors="coerce")
    bad = r.isna() | (r < 1)
    if bad.any():
        where = out.index[bad.to_numpy()][:5].tolist()
        raise ValueError(f"{name}: rank must be a number >= 1; bad value(s) at row label(s) {where}")
    out["rank"] = r.astype(np.float64)
    out["k"] = pd.to_numeric(out["k"]).astype(np.int64)
    return out


def dataset_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset variant with its metadata columns (those of :data:`DATASET_COLUMNS` present).

    ``outlier_pct_actual`` = 100 · n_outliers / n_objects is added when both counts are present.
    """
    cols = [c for c in DATASET_COLUMNS if c in runs.columns]
    out = runs.groupby("dataset", sort=True)[cols].first().reset_index()
    if "n_outliers" in out.columns and "n_objects" in out.columns:
        out["outlier_pct_actual"] = 100.0 * out["n_outliers"].astype(float) / out["n_objects"].astype(float)
    return out


def ordered_unique(values: Sequence[object]) -> list[object]:
    """Unique values in order of first appearance."""
    return list(dict.fromkeys(values))
