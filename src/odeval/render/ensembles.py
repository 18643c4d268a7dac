"""Text of ``odeval ensemble``: the Table-4-style comparison of a greedy ensemble (Schubert et al. 2012)."""

from __future__ import annotations

import json

import numpy as np

from odeval.bench.ensembles import StoreEnsemble

__all__ = ["ensemble_json", "format_ensemble"]


def ensemble_json(result: StoreEnsemble) -> str:
    """:meth:`StoreEnsemble.to_dict` as JSON; undefined values are written as NaN."""
    return json.dumps(result.to_dict(), indent=2, allow_nan=True)


def format_ensemble(result: StoreEnsemble, *, max_members: int = 30) -> str:
    """Plain-text Table-4-style summary of :func:`ensemble_from_store` (used by ``odeval ensemble``)."""
    ev = result.evaluation
    size = f"rate {result.rate:g}" if result.rate is not None else "fixed size"
    lines = [
        f"dataset {result.dataset}: N = {result.n_objects}, |O| = {result.n_outliers}, "
        f"{result.n_scorings} normalised scorings",
        f"greedy ensemble (Schubert et al. 2012): measure {result.measure}, rule {result.rule}, "
        f"{ev.n_estimated_outliers} estimated outliers ({size})",
        "",
    ]
    frame = result.summary_frame()
    width = max(len(s) for s in frame["ensemble"])
    lines.append(f"{'':{width}}  {'size':>5}  {'ROC AUC':>15}  {'cost':>7}  {'gain of greedy':>14}")
    for row in frame.itertuples(index=False):
        auc = f"{row.roc_auc:.4f}" + (f" ± {row.roc_auc_sd:.4f}" if np.isfinite(row.roc_auc_sd) else "")
        cost = f"{row.cost:.4f}" if np.isfinite(row.cost) else ""
        g = f"{row.gain_of_greedy:+.4f}" if np.isfinite(row.gain_of_greedy) else ""
        lines.append(f"{row.ensemble:{width}}  {row.scorings:>5d}  {auc:>15}  {cost:>7}  {g:>14}")
    lines += [
        "",
        "improvement over random ensembles: " + (f"{ev.improvement_sd:+.2f} standard deviations"
                                                 if np.isfinite(ev.improvement_sd) else
                                                 "n/a (all random ensembles have the same ROC AUC)"),
        f"gain of the naive ensemble over the best single scoring: {ev.gain_naive_to_best:+.4f}",
        f"members ({ev.greedy_size}, in order of addition): "
        + ", ".join(ev.greedy_members[:max_members])
        + (f", … ({ev.greedy_size - max_members} more)" if ev.greedy_size > max_members else ""),
    ]
    if result.dropped:
        lines.append(f"left out ({len(result.dropped)}): "
                     + "; ".join(f"{n}: {r}" for n, r in result.dropped[:10]))
    return "\n".join(lines)
