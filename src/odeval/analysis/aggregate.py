"""Performance over k: best k, mean over k, window around the best k, and aggregation over variants and datasets.

Campos et al. (2016), §5.2, judge a method on a dataset by three numbers computed from its curve
"measure vs k": the best value over k (and the k reaching it), the mean over all k of the study, and the
mean over a window of k around the best k, which says how stable the method is near its optimum.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from odeval.analysis._schema import check_runs_frame, dataset_table, measure_columns

__all__ = [
    "STATISTICS",
    "aggregate_datasets",
    "aggregate_variants",
    "filter_variants",
    "per_variant_summary",
    "store_ranking",
    "study_summary",
]

#: The three per-curve statistics of :func:`per_variant_summary` (column names).
STATISTICS: tuple[str, ...] = ("best", "window_mean", "mean_over_k")

_KEY = ["dataset", "method", "params", "config"]


def per_variant_summary(
    runs: pd.DataFrame, measures: str | Iterable[str] | None = None, *, half_window: int = 5
) -> pd.DataFrame:
    """Best k, best value, mean over k and mean over a window around the best k, per curve.

    One row per (dataset variant, method configuration, measure), from the successful rows of ``runs``.

    Parameters
    ----------
    runs : DataFrame
        The ``runs`` table of a results store (one row per dataset, method, params, k).
    measures : str or iterable of str, optional
        Measure columns to summarise; default every known measure present in ``runs``.
    half_window : int, default 5
        The window is ``2 * half_window + 1`` consecutive k values centred on the best k — Campos et al.
        (2016), §5.2 use ±5 — shifted to lie inside the k range of the curve when the best k is close to
        either end (so it always spans the same width when the range allows; when the range is narrower
        than the window, the window is the whole range). The mean is taken over the k values of the store
        that fall inside the window.

    Returns
    -------
    DataFrame
        Columns ``dataset``, ``method``, ``params``, ``config``, ``measure``, ``best_k`` (the *smallest* k
        reaching the best value, so ties are resolved towards the cheaper neighbourhood), ``best``,
        ``mean_over_k``, ``window_mean``, ``window_lo``, ``window_hi``, ``k_min``, ``k_max``, ``n_k`` (number
        of k values with a finite measure), ``unit_id`` when ``runs`` has it, followed by the dataset
        metadata columns present in ``runs``
        (``base_dataset``, ``normalized``, ``deduplicated``, ``outlier_pct``, ``n_objects``, ``n_outliers``,
        ``n_attributes``). NaN measure values (measure undefined at that k) are ignored; a curve with no
        finite value gets NaN statistics and ``best_k`` <NA>.

    References
    ----------
    G. O. Campos, A. Zimek, J. Sander, R. J. G. B. Campello, B. Micenková, E. Schubert, I. Assent and
    M. E. Houle. On the evaluation of unsupervised outlier detection: measures, datasets, and an empirical
    study. Data Mining and Knowledge Discovery 30(4):891–927, 2016. §5.2.
    """
    if isinstance(half_window, bool) or not isinstance(half_window, int | np.integer) or half_window < 0:
        raise ValueError(f"half_window must be a non-negative integer, got {half_window!r}")
    frame = check_runs_frame(runs)
    cols = measure_columns(frame, measures)
    # one integer id per curve, rows sorted by (curve, k): every statistic is a segment reduction
    gid = frame.groupby(_KEY, sort=False, dropna=False).ngroup().to_numpy()
    k_all = frame["k"].to_numpy(dtype=np.int64)
    order = np.lexsort((k_all, gid))
    g, k = gid[order], k_all[order]
    starts = np.r_[0, np.flatnonzero(np.diff(g)) + 1]
    ends = np.r_[starts[1:], g.size]
    keys = frame.iloc[order[starts]][_KEY].reset_index(drop=True)
    k_min, k_max = k[starts], k[ends - 1]  # the k range the store holds for the curve (finite or not)
    width = 2 * half_window
    big = np.iinfo(np.int64).max
    parts = []
    for measure in cols:
        v = pd.to_numeric(frame[measure], errors="coerce").to_numpy(dtype=np.float64)[order]
        finite = ~np.isnan(v)
        n_k = np.add.reduceat(finite.astype(np.int64), starts)
        with np.errstate(invalid="ignore"):
            best = np.fmax.reduceat(v, starts)  # NaN only when the whole curve is NaN
        seg = np.repeat(np.arange(starts.size), ends - starts)
        best_k = np.minimum.reduceat(np.where(v == best[seg], k, big), starts)
        total = np.add.reduceat(np.where(finite, v, 0.0), starts)
        lo = np.minimum(np.maximum(best_k - half_window, k_min), np.maximum(k_max - width, k_min))
        hi = np.minimum(lo + width, k_max)
        inside = finite & (k >= lo[seg]) & (k <= hi[seg])
        w_n = np.add.reduceat(inside.astype(np.int64), starts)
        w_sum = np.add.reduceat(np.where(inside, v, 0.0), starts)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(n_k > 0, total / n_k, np.nan)
            wmean = np.where(w_n > 0, w_sum / w_n, np.nan)
        none = n_k == 0
        part = keys.copy()
        part["measure"] = measure
        part["best_k"] = pd.array(np.where(none, 0, best_k), dtype="Int64")
        part["best"] = best
        part["mean_over_k"] = mean
        part["window_mean"] = wmean
        part["window_lo"] = pd.array(np.where(none, 0, lo), dtype="Int64")
        part["window_hi"] = pd.array(np.where(none, 0, hi), dtype="Int64")
        part.loc[none, ["best_k", "window_lo", "window_hi"]] = pd.NA
        part["k_min"] = k_min
        part["k_max"] = k_max
        part["n_k"] = n_k
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    if "unit_id" in frame.columns:  # the store's unit of work: joins exactly with outlier_ranks / scores
        units = frame.groupby(["dataset", "config"], sort=False)["unit_id"].first().rename("unit_id")
        out = out.merge(units.reset_index(), on=["dataset", "config"], how="left")
    meta = dataset_table(frame)
    out = out.merge(meta, on="dataset", how="left")
    first = [
        "dataset", "method", "params", "config", "measure", "best_k", "best", "mean_over_k", "window_mean",
        "window_lo", "window_hi", "k_min", "k_max", "n_k",
    ]
    rest = [c for c in out.columns if c not in first]
    return out[first + rest].sort_values(["dataset", "config", "measure"], kind="stable").reset_index(drop=True)


def filter_variants(
    frame: pd.DataFrame,
    *,
    min_outlier_pct: float | None = None,
    max_outlier_pct: float | None = None,
    normalized: bool | None = None,
    deduplicated: bool | None = None,
    base_datasets: Sequence[str] | None = None,
    datasets: Sequence[str] | None = None,
    methods: Sequence[str] | None = None,
    measures: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Keep the rows of a ``runs`` frame or of a summary whose dataset variant matches every filter.

    Parameters
    ----------
    frame : DataFrame
        Any frame with the dataset metadata columns used by the requested filters (``runs``, the output of
        :func:`per_variant_summary`, ...).
    min_outlier_pct, max_outlier_pct : float, optional
        Inclusive bounds on the percentage of outliers (Campos et al. 2016 show e.g. ≤ 5 % and 3–5 %).
        The ``outlier_pct`` column (the nominal percentage of the preparation) is used where present and
        not null; otherwise 100 · ``n_outliers`` / ``n_objects``.
    normalized, deduplicated : bool, optional
        Keep only variants with this preprocessing flag.
    base_datasets, datasets, methods, measures : sequence of str, optional
        Keep only these base datasets / variants / methods (name or config label) / measures.

    Raises
    ------
    ValueError
        If a filter needs a column the frame does not have.
    """

    def need(col: str) -> pd.Series:
        if col not in frame.columns:
            raise ValueError(f"cannot filter on {col}: the frame has no column {col!r}")
        return frame[col]

    mask = pd.Series(True, index=frame.index)
    if min_outlier_pct is not None or max_outlier_pct is not None:
        pct = pd.Series(np.nan, index=frame.index, dtype=np.float64)
        if "outlier_pct" in frame.columns:
            pct = pd.to_numeric(frame["outlier_pct"], errors="coerce").astype(np.float64)
        if pct.isna().any():
            if "n_outliers" not in frame.columns or "n_objects" not in frame.columns:
                raise ValueError(
                    "cannot filter on the outlier percentage: no outlier_pct value and no n_outliers/n_objects columns"
                )
            actual = 100.0 * frame["n_outliers"].astype(float) / frame["n_objects"].astype(float)
            pct = pct.fillna(actual)
        if min_outlier_pct is not None:
            mask &= pct >= float(min_outlier_pct)
        if max_outlier_pct is not None:
            mask &= pct <= float(max_outlier_pct)
    if normalized is not None:
        mask &= need("normalized").astype(bool) == bool(normalized)
    if deduplicated is not None:
        mask &= need("deduplicated").astype(bool) == bool(deduplicated)
    if base_datasets is not None:
        mask &= need("base_dataset").isin(list(base_datasets))
    if datasets is not None:
        mask &= need("dataset").isin(list(datasets))
    if methods is not None:
        m = need("method").isin(list(methods))
        if "config" in frame.columns:
            m |= frame["config"].isin(list(methods))
        mask &= m
    if measures is not None:
        mask &= need("measure").isin(list(measures))
    return frame[mask.to_numpy()].reset_index(drop=True)


def _mean_se(grouped, columns: Sequence[str]) -> pd.DataFrame:
    """Mean, standard error (sample sd / √n, NaN for n = 1) and n of each column per group."""
    mean = grouped[list(columns)].mean()
    sd = grouped[list(columns)].std(ddof=1)
    n = grouped[list(columns)].count()
    se = sd / np.sqrt(n)
    out = mean.copy()
    for c in columns:
        out[f"{c}_se"] = se[c]
    return out


def aggregate_variants(
    summary: pd.DataFrame,
    by: Sequence[str] = ("base_dataset",),
    statistics: Sequence[str] = STATISTICS,
) -> pd.DataFrame:
    """Mean and standard error of the per-variant statistics over the variants of a base dataset.

    Parameters
    ----------
    summary : DataFrame
        Output of :func:`per_variant_summary` (possibly filtered with :func:`filter_variants`).
    by : sequence of str, default ("base_dataset",)
        Columns that define a group of variants, e.g. ``("base_dataset", "outlier_pct")`` to keep the
        outlier percentages apart (Campos et al. 2016 average the 10 random downsamplings of one
        percentage).
    statistics : sequence of str
        Columns to aggregate; default ``best``, ``window_mean``, ``mean_over_k``.

    Returns
    -------
    DataFrame
        One row per (group, config, measure): ``<stat>`` (mean over variants), ``<stat>_se`` (sample
        standard deviation / √n; NaN for a single variant), ``best_k`` (median best k), ``n_variants``.
    """
    by = list(by)
    for c in [*by, "config", "measure", *statistics]:
        if c not in summary.columns:
            raise ValueError(f"summary has no column {c!r}; pass the output of per_variant_summary")
    keys = [*by, "config", "method", "measure"]
    grouped = summary.groupby(keys, sort=True, dropna=False)
    out = _mean_se(grouped, statistics)
    out["best_k_median"] = grouped["best_k"].median() if "best_k" in summary.columns else np.nan
    out["n_variants"] = grouped["dataset"].nunique()
    return out.reset_index()


def aggregate_datasets(
    summary: pd.DataFrame,
    by: str = "base_dataset",
    statistics: Sequence[str] = STATISTICS,
) -> pd.DataFrame:
    """Mean and standard error of each statistic over a collection of datasets, per (config, measure).

    With ``by="base_dataset"`` the variants of each base dataset are first averaged, so each base dataset
    weighs the same (Campos et al. 2016, Fig. 2); with ``by="dataset"`` each variant counts once.

    Returns
    -------
    DataFrame
        One row per (config, measure): ``<stat>``, ``<stat>_se`` (sd over datasets / √n), ``n_datasets``.
    """
    if by not in ("base_dataset", "dataset"):
        raise ValueError(f"by must be 'base_dataset' or 'dataset', got {by!r}")
    per = summary if by == "dataset" else aggregate_variants(summary, by=("base_dataset",), statistics=statistics)
    grouped = per.groupby(["config", "method", "measure"], sort=True)
    out = _mean_se(grouped, statistics)
    out["n_datasets"] = grouped[by].nunique()
    return out.reset_index()


def study_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """One-row summary of a study: counts of base datasets, variants, methods, k range, runs and errors."""
    if "status" in runs.columns:
        status = runs["status"].astype(str)
        n_ok, n_err = int((status == "ok").sum()), int((status != "ok").sum())
    else:
        n_ok, n_err = len(runs), 0
    ok = check_runs_frame(runs)
    row = {
        "n_base_datasets": ok["base_dataset"].nunique(),
        "n_variants": ok["dataset"].nunique(),
        "n_methods": ok["config"].nunique(),
        "k_min": int(ok["k"].min()),
        "k_max": int(ok["k"].max()),
        "n_runs_ok": n_ok,
        "n_runs_error": n_err,
        "measures": ", ".join(measure_columns(ok)),
    }
    for c in ("study_hash", "odeval_version"):
        if c in runs.columns:
            row[c] = ", ".join(sorted({str(v) for v in runs[c].dropna().unique()}))
    return pd.DataFrame([row])



def store_ranking(store: str | os.PathLike[str], measure: str = "roc_auc") -> pd.Series:
    """The methods of a results store ranked as the report ranks them (Campos et al. 2016, Fig. 2): ``measure``
    at each variant's best k, variants of a base dataset averaged first, then the mean over base datasets.

    Returns a Series config → value, best first (``odeval demo`` prints it).
    """
    from odeval.bench.store import ResultStore

    with ResultStore(store, read_only=True) as rs:
        runs = rs.runs(status="ok")
    coll = aggregate_datasets(per_variant_summary(runs, measures=[measure]))
    return coll.set_index("config")["best"].sort_values(ascending=False)
