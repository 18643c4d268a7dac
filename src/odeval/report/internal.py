"""Report section of the label-free measures a study stored (``internal = ["em", "mv"]``; ``internal_measures``).

Per dataset variant, each criterion picks one candidate scoring (method, k): EM the largest Excess-Mass, MV the
smallest Mass-Volume (Goix 2016: EM larger = better, MV smaller = better). The section shows each pick's
ROC AUC and average precision next to the minimum, mean and maximum over all candidates with a value of that
criterion, and a figure of EM and MV vs k per method.

References
----------
N. Goix. How to evaluate the quality of unsupervised anomaly detection algorithms? ICML Anomaly Detection
Workshop, 2016, §3 (EM and MV criteria) and Algorithm 1 (EMMV).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from odeval._key import ScoringKey, distinct_names
from odeval.report.plots import new_figure, plain_text
from odeval.report.primitives import escape, html_figure, html_table

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["CRITERIA", "candidate_names", "internal_picks", "internal_section_html", "ireos_section_html",
           "plot_internal_vs_k"]

CRITERIA = {"em": "max", "mv": "min", "ireos": "max", "ireos_adjusted": "max"}
"""Label-free criteria the section knows and which end of each is better."""
QUALITY = ("roc_auc", "average_precision")
_SHOWN = {"roc_auc": "ROC AUC", "average_precision": "AP", "gamma_max": "γmax"}


def candidate_names(frame: pd.DataFrame) -> pd.Series:
    """The one scoring-key name of each row's candidate (``kNN-010``; :func:`odeval._key.distinct_names` over the
    frame's candidates, so a method's parameters and metric are written only where they tell candidates apart).

    ``frame``: ``method`` and ``k`` (NaN for a scoring without k: an imported estimator's), optionally ``params``
    (the store's JSON text), ``metric``, ``setting`` and ``seed`` (the run's non-k grid point and seed).
    """
    import json

    def column(name: str) -> list[Any]:
        if name not in frame.columns:
            return [None] * len(frame)
        return [None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) or v == "" else v
                for v in frame[name].tolist()]

    rows = list(zip(frame["method"].astype(str), column("params"), column("metric"), column("k"),
                    column("setting"), column("seed"), strict=True))
    uniq = list(dict.fromkeys(rows))
    keys = [ScoringKey.from_params_json(m, p, metric=mt or "", k=None if k is None else int(k),
                                        setting=json.loads(st) if st else None, seed=None if sd is None else int(sd))
            for m, p, mt, k, st, sd in uniq]
    names = dict(zip(uniq, distinct_names(keys), strict=True))
    return pd.Series([names[t] for t in rows], index=frame.index, dtype=object)


def _shown(picks: pd.DataFrame) -> pd.DataFrame:
    """A picks table with readable column names (the CSV keeps the plain ones)."""
    def name(col: str) -> str:
        first, _, rest = col.partition(" ")
        return f"{_SHOWN.get(first, first)} {rest}".strip()
    return picks.rename(columns={c: name(str(c)) for c in picks.columns})


def internal_picks(internal: pd.DataFrame, runs: pd.DataFrame, quality: tuple[str, ...] = QUALITY) -> pd.DataFrame:
    """Per dataset and criterion: the candidate (method, k) the criterion picks and its quality.

    Parameters
    ----------
    internal : DataFrame
        The store's ``internal_measures`` (``unit_id``, ``dataset``, ``method``, ``k``, ``measure``, ``value``).
        Rows with a NaN value (not applicable, failed) are no candidates.
    runs : DataFrame
        The store's ``runs`` (``unit_id``, ``k`` and the ``quality`` columns).

    Returns
    -------
    DataFrame
        One row per (dataset, criterion): ``dataset``, ``criterion``, ``candidates`` (how many had a value),
        ``pick`` (the candidate's scoring-key name, ``kNN-010``: :func:`candidate_names`), the criterion's value,
        and per quality measure its value at the pick and
        ``min`` / ``mean`` / ``max`` over those candidates. Ties go to the first candidate in (method, k) order.
    """
    cols = ["unit_id", "k", *(c for c in ("setting", "seed") if c in runs.columns), *quality]
    # k is NaN for a scoring without k (an imported estimator's unit) in both frames: pandas matches NaN keys
    merged = internal.merge(runs[cols], on=["unit_id", "k"], how="inner")
    merged["pick_name"] = candidate_names(merged) if len(merged) else pd.Series(dtype=object)
    rows: list[dict[str, Any]] = []
    for (dataset, crit), g in merged.groupby(["dataset", "measure"], sort=True):
        if crit not in CRITERIA:
            continue
        g = g[np.isfinite(g["value"].to_numpy(float))].sort_values(["method", "k"], kind="stable")
        if g.empty:
            continue
        vals = g["value"].to_numpy(float)
        i = int(np.argmax(vals) if CRITERIA[crit] == "max" else np.argmin(vals))
        pick = g.iloc[i]
        row: dict[str, Any] = {"dataset": dataset, "criterion": f"{crit.upper()} ({CRITERIA[crit]})",
                               "candidates": len(g), "pick": pick["pick_name"],
                               "value": float(pick["value"])}
        for q in quality:
            v = g[q].to_numpy(float)
            row.update({f"{q} pick": float(pick[q]), f"{q} min": float(np.nanmin(v)),
                        f"{q} mean": float(np.nanmean(v)), f"{q} max": float(np.nanmax(v))})
        rows.append(row)
    return pd.DataFrame(rows)


@plain_text
def plot_internal_vs_k(internal: pd.DataFrame, dataset: str) -> Figure:
    """EM and MV vs k, one line per method, on one dataset variant (one panel per criterion)."""
    sub = internal[(internal["dataset"] == dataset) & internal["measure"].isin(list(CRITERIA))]
    sub = sub[np.isfinite(sub["value"].to_numpy(float)) & sub["k"].notna().to_numpy()]  # scorings over k
    crits = [c for c in CRITERIA if c in set(sub["measure"])]
    if not crits:
        raise ValueError(f"no EM/MV value for {dataset}")
    fig = new_figure(4.2 * len(crits), 3.0)
    for j, crit in enumerate(crits):
        ax = fig.add_subplot(1, len(crits), j + 1)
        for method, g in sub[sub["measure"] == crit].groupby("method", sort=True):
            g = g.sort_values("k")
            ax.plot(g["k"], g["value"], marker="o", markersize=2.5, linewidth=1, label=str(method))
        ax.set_xlabel("k")
        ax.set_ylabel(f"{crit.upper()} ({'higher' if CRITERIA[crit] == 'max' else 'lower'} = better)")
        ax.grid(alpha=0.3)
        if j == len(crits) - 1:
            ax.legend(fontsize=7, frameon=False)
    fig.suptitle(dataset, fontsize=9)
    return fig


def internal_section_html(internal: pd.DataFrame, runs: pd.DataFrame, *, ctx: Any = None) -> str:
    """The index-page section: picks table (CSV via ``ctx``), not-applicable notes and EM/MV-vs-k figures."""
    import json

    parts = ['<h2 id="internal">Label-free measures (EM, MV)</h2>',
             "<p>Each label-free criterion picks one candidate scoring (method, k) per dataset variant: EM the "
             "largest Excess-Mass, MV the smallest Mass-Volume (Goix 2016). Next to the pick's quality: the "
             "minimum, mean and maximum over the candidates with a value of that criterion.</p>"]
    picks = internal_picks(internal, runs)
    if picks.empty:
        parts.append('<p class="note">No finite EM/MV value in the store.</p>')
    else:
        csv = ctx.csv(picks, "internal_picks", "per dataset: the (method, k) EM and MV pick, its ROC AUC / AP "
                      "and min / mean / max over the candidates") if ctx is not None else None
        parts.append(html_table(_shown(picks), csv=csv))
    nan = internal[~np.isfinite(internal["value"].to_numpy(float))]
    if len(nan):
        notes = {}
        for method, details in zip(nan["method"], nan["details"], strict=True):
            d = json.loads(details) if isinstance(details, str) else dict(details or {})
            notes.setdefault(str(method), d.get("not_applicable") or d.get("error") or "no value")
        parts.append("<p>Without EM/MV values:</p><ul>" + "".join(
            f"<li>{escape(m)}: {escape(why)}</li>" for m, why in sorted(notes.items())) + "</ul>")
    for dataset in sorted(set(internal["dataset"].astype(str))):
        parts.append(html_figure(lambda d=dataset: plot_internal_vs_k(internal, d),
                                  f"EM and MV vs k per method on {escape(dataset)}", f"EM/MV vs k, {dataset}"))
    return "\n".join(parts)


def ireos_section_html(ireos: pd.DataFrame, *, ctx: Any = None) -> str:
    """The IREOS section: per variant, the candidate with the largest IREOS (and adjusted IREOS) and how good it
    really is — its ROC AUC and AP next to min / mean / max over the candidates (Marques et al. 2020, Table 7).

    ``ireos``: one row per (candidate, measure) with ``dataset``, ``unit_id``, ``method``, ``k``, ``measure``
    (``ireos`` / ``ireos_adjusted``), ``value``, ``roc_auc``, ``average_precision``, ``candidates`` and
    ``gamma_max`` (:func:`odeval.report.from_store.report_from_store` builds it from the per-variant step).
    """
    frame = ireos.copy()
    several = frame.groupby("dataset")["candidates"].nunique().max() > 1
    if several:  # one row per candidate set of a variant
        frame["dataset"] = frame["dataset"] + " (" + frame["candidates"].astype(str) + " candidates)"
    quality = frame[["unit_id", "k", *QUALITY]].drop_duplicates(["unit_id", "k"])  # the same in every task
    picks = internal_picks(frame.drop(columns=list(QUALITY)), quality)
    gmax = frame.groupby("dataset")["gamma_max"].first()
    if len(picks):
        picks.insert(2, "gamma_max", picks["dataset"].map(gmax))
        # the pick's stored one-sided p-value against random solutions (ireos_p_value, App. A), when stored
        pv = frame[frame["measure"] == "ireos_p_value"]
        if len(pv):
            key = pv["dataset"] + "|" + candidate_names(frame).loc[pv.index]
            lookup = dict(zip(key, pv["value"].astype(float), strict=True))
            picks.insert(picks.columns.get_loc("value") + 1, "p_value",
                         [lookup.get(f"{d}|{p}", np.nan) for d, p in zip(picks["dataset"], picks["pick"], strict=True)])
    parts = ['<h2 id="ireos">Label-free measure IREOS (per variant)</h2>',
             "<p>IREOS (Marques et al. 2020) of every candidate scoring of a variant, with one γ<sub>max</sub> for "
             "all candidates of the variant (§3.4). The candidate with the largest index is the one IREOS would "
             "pick without labels; next to it its real quality (ROC AUC, AP) and the minimum, mean and maximum over "
             "the candidates (as the paper's Table 7). See docs/ireos.md and docs/model-selection.md.</p>"]
    if picks.empty:
        parts.append('<p class="note">No finite IREOS value in the store.</p>')
        return "\n".join(parts)
    csv = ctx.csv(picks, "ireos_picks", "per variant: the candidate IREOS picks, its ROC AUC / AP and min / mean / "
                  "max over the candidates") if ctx is not None else None
    parts.append(html_table(_shown(picks), csv=csv))
    auc = picks[picks["criterion"].str.startswith("IREOS (")]
    if len(auc):
        parts.append(f"<p>Mean over {len(auc)} variant(s): ROC AUC of the IREOS pick {auc['roc_auc pick'].mean():.3f}"
                     f"; candidates min {auc['roc_auc min'].mean():.3f}, mean {auc['roc_auc mean'].mean():.3f}, "
                     f"max {auc['roc_auc max'].mean():.3f}.</p>")
    if "p_value" in picks and np.isfinite(auc["p_value"].to_numpy(float)).any():
        p = auc["p_value"].to_numpy(float)
        p = p[np.isfinite(p)]
        parts.append(f"<p>p_value: one-sided, the pick's index against random solutions (Marques et al. 2020, "
                     f"App. A; with m<sub>cl</sub> = 1 and scorings: 1000 random permutations of its weights). "
                     f"p &lt; 0.05 on {int((p < 0.05).sum())} of {p.size} variant(s).</p>")
    return "\n".join(parts)
