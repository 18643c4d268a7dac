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
    "seed_spread",
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

    Curves whose axis is not k alone (an imported estimator over its grid, a registered method over a non-k
    grid axis; issue 25) get the best *setting* instead: column ``best_setting`` (``n_bins=10``,
    ``h=0.5,k=10``; ``k=10`` on the k curves of the same frame), ``best``, ``mean_over_k`` holding the mean over
    the curve's settings, and NaN ``window_mean`` (settings have no order to take a window in); ``best_k`` is
    the k of the best setting where it has one. Seeded scorings (``seeds = N``) are first averaged over their
    seeds (``n_seeds``; the spread at the best setting in ``best_seed_sd``, all of it in :func:`seed_spread`).
    Frames of the kNN family over k alone give exactly the columns below.

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
    frame, spread = _average_over_seeds(frame, cols)
    axis_rows = _non_k_rows(frame)
    if not axis_rows.any():  # the kNN family over k: Campos et al.'s statistics, as odeval always computed them
        return _k_summary(frame, cols, half_window)
    parts = [_setting_summary(frame[axis_rows], cols, spread)]
    if not axis_rows.all():
        plain = _k_summary(frame[~axis_rows].reset_index(drop=True), cols, half_window)
        plain["best_setting"] = ("k=" + plain["best_k"].astype("string")).fillna("")
        parts.insert(0, plain)
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["dataset", "config", "measure"], kind="stable").reset_index(drop=True)


def _k_summary(frame: pd.DataFrame, cols: Sequence[str], half_window: int) -> pd.DataFrame:
    """:func:`per_variant_summary` of curves over k alone (``frame``: checked, k integer)."""
    if frame["k"].dtype != np.int64:  # the k rows of a frame that also holds scorings without k
        frame = frame.assign(k=frame["k"].astype(np.int64))
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


def _non_k_rows(frame: pd.DataFrame) -> np.ndarray:
    """Rows whose curve has an axis other than k: no k (an imported estimator) or a non-k grid point."""
    mask = frame["k"].isna().to_numpy(dtype=bool, copy=True)
    if "setting" in frame.columns:
        mask |= (frame["setting"].astype(str) != "").to_numpy()
    return mask


def _average_over_seeds(frame: pd.DataFrame, cols: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The mean over the seeds of each scoring (same dataset, configuration, k and setting), and the spread.

    Returns the frame unchanged and None when no row has a seed; else one row per seeded group (the measures
    averaged, ``n_seeds`` added, ``seed`` dropped) and the spread frame of :func:`seed_spread`.
    """
    if "seed" not in frame.columns or frame["seed"].isna().all():
        return frame, None
    spread = seed_spread(frame, cols, checked=True)
    keys = [c for c in ("dataset", "method", "params", "config", "metric", "k", "setting") if c in frame.columns]
    grouped = frame.groupby(keys, sort=False, dropna=False)
    means = grouped[list(cols)].mean()
    firsts = grouped[[c for c in frame.columns if c not in (*keys, *cols, "seed")]].first()
    out = means.join(firsts)
    n_seeds = grouped["seed"].count()
    out["n_seeds"] = n_seeds.where(n_seeds > 0).astype("Int64")  # <NA>: a deterministic scoring
    return out.reset_index(), spread


def seed_spread(runs: pd.DataFrame, measures: str | Iterable[str] | None = None, *,
                checked: bool = False) -> pd.DataFrame:
    """Mean, sample standard deviation, min, max and number of seeds of every measure, per scoring.

    One row per (dataset, configuration, k, setting, measure) of the seeded rows of ``runs`` (a randomised
    detector run with ``seeds = N``): how much the measure moves with the seed alone. Rows without a seed are
    left out; a frame without seeds gives an empty result.
    """
    frame = runs if checked else check_runs_frame(runs)
    cols = measure_columns(frame, measures) if not checked else list(measures or [])
    if "seed" not in frame.columns:
        return pd.DataFrame(columns=["dataset", "config", "k", "setting", "measure", "mean", "sd", "min", "max",
                                     "n_seeds"])
    seeded = frame[frame["seed"].notna()]
    keys = [c for c in ("dataset", "method", "params", "config", "k", "setting") if c in seeded.columns]
    long = seeded.melt(id_vars=[*keys, "seed"], value_vars=list(cols), var_name="measure", value_name="value")
    g = long.groupby([*keys, "measure"], sort=True, dropna=False)["value"]
    out = pd.DataFrame({"mean": g.mean(), "sd": g.std(ddof=1), "min": g.min(), "max": g.max(),
                        "n_seeds": g.count()})
    return out.reset_index()


def _setting_text(k: object, setting: str) -> str:
    """``a=v,b=w`` of a grid point (k included when the point has one), as :class:`odeval._key.ScoringKey` writes
    a setting; '' for a detector run at one configuration."""
    import json

    from odeval._key import ScoringKey

    values = json.loads(setting) if setting else {}
    if k is not None and not pd.isna(k):
        values["k"] = int(k)
    if not values:
        return ""
    key = ScoringKey.make("m", setting=values)
    return key.label().partition("-")[2] if set(values) != {"k"} else f"k={int(k)}"  # type: ignore[arg-type]


def _setting_summary(frame: pd.DataFrame, cols: Sequence[str], spread: pd.DataFrame | None) -> pd.DataFrame:
    """:func:`per_variant_summary` of curves whose axis is not k alone: best setting, best value, mean over the
    settings (``mean_over_k`` holds it, so tables read one column), no window (NaN: the settings have no order)."""
    frame = frame.copy()
    settings = frame["setting"] if "setting" in frame.columns else pd.Series("", index=frame.index)
    frame["_point"] = [_setting_text(k, st) for k, st in zip(frame["k"], settings, strict=True)]
    frame = frame.sort_values([*_KEY, "_point"], kind="stable")
    rows = []
    meta_cols = [c for c in frame.columns if c in ("unit_id",)]
    for key, grp in frame.groupby(_KEY, sort=False, dropna=False):
        for measure in cols:
            v = pd.to_numeric(grp[measure], errors="coerce").to_numpy(dtype=np.float64)
            finite = ~np.isnan(v)
            n = int(finite.sum())
            row = dict(zip(_KEY, key, strict=True))
            row["measure"] = measure
            ks = pd.to_numeric(grp["k"], errors="coerce")
            row.update(k_min=ks.min(), k_max=ks.max(), n_k=n, window_mean=np.nan, window_lo=pd.NA, window_hi=pd.NA)
            if n == 0:
                row.update(best=np.nan, best_k=pd.NA, best_setting=pd.NA, mean_over_k=np.nan)
            else:
                i = int(np.flatnonzero(v == np.nanmax(v))[0])
                best = grp.iloc[i]
                row.update(best=float(v[i]), best_k=best["k"] if not pd.isna(best["k"]) else pd.NA,
                           best_setting=best["_point"], mean_over_k=float(v[finite].mean()))
                for c in meta_cols:
                    row[c] = best[c]
                if spread is not None and "n_seeds" in grp.columns:
                    row["n_seeds"] = best["n_seeds"]
            rows.append(row)
    out = pd.DataFrame(rows)
    for c in ("best_k", "window_lo", "window_hi"):
        out[c] = pd.array(out[c], dtype="Int64")
    if spread is not None and len(spread):
        sd = spread.rename(columns={"sd": "best_seed_sd"})
        out["_point"] = out["best_setting"]
        sd["_point"] = [_setting_text(k, st) for k, st in zip(sd["k"], sd["setting"], strict=True)]
        out = out.merge(sd[["dataset", "config", "measure", "_point", "best_seed_sd"]],
                        on=["dataset", "config", "measure", "_point"], how="left").drop(columns="_point")
    meta = dataset_table(frame)
    out = out.merge(meta, on="dataset", how="left")
    first = [
        "dataset", "method", "params", "config", "measure", "best_k", "best", "mean_over_k", "window_mean",
        "window_lo", "window_hi", "k_min", "k_max", "n_k",
    ]
    return out[first + [c for c in out.columns if c not in first]]


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
        "k_min": int(ok["k"].min()) if ok["k"].notna().any() else None,  # None: no method of the study has k
        "k_max": int(ok["k"].max()) if ok["k"].notna().any() else None,
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
