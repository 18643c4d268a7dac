"""Text of the label-free commands: ``odeval ireos``, ``odeval emmv`` and ``odeval select-audit``.

Each function takes the result of the one library function its command calls
(:func:`odeval.analysis.labelfree.ireos_of_scorings`, :func:`odeval.protocols.emmv_chapter.evaluate_dataset`,
:func:`odeval.analysis.selection.audit_store`) and returns the text the command prints; nothing here computes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from odeval.analysis.selection import BASELINES, friedman_line, p_text

if TYPE_CHECKING:
    from odeval.analysis.labelfree import IREOSOfScorings
    from odeval.analysis.selection import SelectionAudit
    from odeval.protocols.emmv_chapter import ChapterEvaluation

__all__ = ["format_audit", "ireos_gamma_max_line", "ireos_p_line", "ireos_p_value_lines", "render_emmv",
           "render_ireos", "render_select_audit"]


# ------------------------------------------------------------------------------------------------ odeval ireos
def ireos_gamma_max_line(run: IREOSOfScorings) -> str | None:
    """What a γ_max search that ended high means, for the classifier that ran (docs/ireos.md, "A high γ_max, per
    classifier"); None when γ_max was given, or searched and at most
    :data:`odeval.labelfree.ireos.GAMMA_MAX_WARNING` of that classifier."""
    from odeval.labelfree.ireos import GAMMA_MAX_WARNING

    classifier = run.result.classifier
    threshold = GAMMA_MAX_WARNING[classifier]
    gamma_max = run.result.gamma_max
    if not run.gamma_max_searched or not gamma_max > threshold:
        return None
    if classifier == "optimum":
        return (f"gamma_max = {gamma_max:.4g} > {threshold:g} (classifier optimum): the search ended high "
                "(near-duplicates or tight clumps kept some outliers unseparated), the regime where IREOS picked "
                "near random on the Campos collection (docs/model-selection.md, \"IREOS and γ_max\"); do not rely "
                "on the pick here")
    return (f"gamma_max = {gamma_max:.4g} > {threshold:g} (classifier pinned): the search ended high "
            "(near-duplicates or tight clumps kept some outliers unseparated), the regime where the pinned IREOS "
            "pick was near random or worse on the Campos collection (docs/model-selection.md, \"IREOS with the "
            "pinned classifier\"); do not rely on the pick here")


def ireos_p_value_lines(run: IREOSOfScorings) -> list[str]:
    """What the p-values can and cannot tell (none when they were not computed)."""
    if not run.p_values:
        return []
    draws = run.result.n_draws
    n_null = int(draws.max()) if draws is not None and draws.size and draws.max() > 0 else None
    shuffled = run.result.null == "permutation"
    what = ("its own weights shuffled" if shuffled else "i.i.d. uniform weights, the paper's App. A.1.1")
    floor = (f"with {n_null} {'permutations' if shuffled else 'random scorings'} the smallest p-value is "
             f"1/{n_null + 1} ≈ {1 / (n_null + 1):.2g}; " if n_null else "")
    return [f"p-values test each scoring against random solutions ({what}): {floor}a small p says "
            "'better than random', not 'better than the other candidates'.",
            "They do not separate candidates: on the Campos collection the IREOS pick was significant on 262 of 262 "
            "variants (optimum classifier, permutation null; docs/model-selection.md); compare the index instead."]


def render_ireos(run: IREOSOfScorings, *, as_json: bool = False) -> str:
    """One row per scoring, sorted by the index (largest first), the pick (the largest index) marked: the index,
    with the adjusted index and the p-value when computed, and ROC AUC when labels are known; then what the
    p-values and a high γ_max mean (JSON: one object)."""
    res = run.result
    order = sorted(range(len(run.names)), key=lambda i: (-float(res.index[i]), i))
    rows: list[dict[str, Any]] = [
        {"column": run.names[i], "ireos": float(res.index[i]),
         **({"adjusted": float(res.adjusted[i])} if run.adjust else {}),
         **({"p_value": float(res.p_value[i])} if run.p_values else {}),
         **({"roc_auc": float(run.roc_auc[i])} if run.roc_auc is not None else {})} for i in order]
    notes = [line for line in (ireos_gamma_max_line(run), *ireos_p_value_lines(run)) if line]
    if as_json:
        return json.dumps({"dataset": run.dataset, "n_objects": run.n_objects, "m_cl": res.m_cl,
                           "gamma_max": res.gamma_max, "classifier": res.classifier, "n_fits": res.n_fits,
                           "knn": res.knn, "approximated": res.approximated, "pick": run.names[run.best],
                           "notes": notes, "results": rows}, indent=2)
    how = "exact" if res.knn is None else f"kNN subsets of {res.knn}"
    lines = [f"{run.dataset}: N = {run.n_objects}, m_cl = {res.m_cl:g}, gamma_max = {res.gamma_max:.6g}, "
             f"{res.n_fits} classifiers ({how}); sorted by the index, * = the pick (largest index)"]
    keys = [k for k in rows[0] if k != "column"]
    width = max(len("column"), *map(len, run.names))
    lines.append(f"  {'column':<{width}}  " + "  ".join(f"{k:>10}" for k in keys))
    for rank, r in enumerate(rows):
        lines.append(f"{'*' if rank == 0 else ' '} {r['column']:<{width}}  "
                     + "  ".join(f"{r[k]:>10.4g}" for k in keys))
    lines.append(f"pick: {rows[0]['column']} (IREOS {rows[0]['ireos']:.4g})")
    return "\n".join(lines + notes)


# ------------------------------------------------------------------------------------------------- odeval emmv
def render_emmv(ev: ChapterEvaluation, *, as_json: bool = False) -> str:
    """EM and MV of the detector (with ROC / PR AUC of the test half when labelled) and the draws that failed."""
    if as_json:
        return json.dumps(ev.to_dict(), indent=2)
    res, labelled = ev.result, ev.labelled
    fmt = "{:.4g}".format
    sub = f"{res.draws} draws of {res.features[0].size} features" if res.subsampled else "all features"
    lines = [f"{ev.dataset} ({ev.setting}, {ev.split.features.size} attributes, train {res.n_train}, evaluated "
             f"{res.n_test}) — {res.detector}",
             f"  EM {fmt(res.em)} (larger = better)   MV {fmt(res.mv)} (smaller = better)   [{sub}, "
             f"{res.n_generated} uniform points, seed {res.seed}]"]
    if labelled:
        lines.append(f"  ROC AUC {labelled['roc_auc']:.3f}   PR (average precision) "
                     f"{labelled['average_precision']:.3f}")
    counts = res.method_counts()
    if any(counts.values()):  # points/integration per criterion (sampling="auto" redoes the draws it must)
        lines.append(f"  estimated with (sampling {res.sampling}; draws): " + "   ".join(
            f"{crit.upper()} " + ", ".join(f"{how} {n}" for how, n in c.items()) for crit, c in counts.items()))
    if res.em_failed or res.mv_failed:
        lines.append(f"  not estimable: EM in {res.em_failed}, MV in {res.mv_failed} of {res.draws} draw(s): "
                     f"{'; '.join(res.reasons)}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------- odeval select-audit
def render_select_audit(audit: SelectionAudit, source: str, *, per_variant: bool = False, as_json: bool = False,
                        report_index: Any = None) -> str:
    """The audit as JSON (with the source of the picks) or as text: the source, :func:`format_audit` and where
    the HTML report was written."""
    if as_json:
        return json.dumps(audit.to_dict() | {"source": source}, indent=2, allow_nan=False)
    lines = [f"picks: {source}", format_audit(audit, per_variant=per_variant)]
    if report_index is not None:
        lines.append(f"report written to {report_index}")
    return "\n".join(lines)


def ireos_p_line(picks: pd.DataFrame, measure: str = "roc_auc", alpha: float = 0.05) -> str | None:
    """One line on the stored p-values of the IREOS picks (``pick_p_value``: one-sided, the pick's index against
    random solutions, Marques et al. 2020 App. A); None when no variant has one."""
    if "pick_p_value" not in picks:
        return None
    p = picks[(picks["selector"] == "ireos") & (picks["measure"] == measure)]["pick_p_value"].to_numpy(float)
    p = p[np.isfinite(p)]
    if p.size == 0:
        return None
    return (f"IREOS pick against random solutions (stored one-sided p-values, App. A): p < {alpha} on "
            f"{int((p < alpha).sum())} of {p.size} variants (median p = {p_text(float(np.median(p)))}); significance "
            "says the pick is better than chance as IREOS sees it, not that it is a good candidate by the labels")


def format_audit(audit: SelectionAudit, *, per_variant: bool = False) -> str:
    """Plain-text tables of :func:`odeval.analysis.selection.audit_selection` (used by ``odeval select-audit``)."""
    m = audit.measure
    sub = audit.picks[audit.picks["measure"] == m]
    per = sub.drop_duplicates("dataset")
    n_var = len(per)
    sizes = per["n_candidates"]
    lines = [f"model-selection audit: {n_var} variants, candidates {audit.candidates_mode} "
             f"({sizes.min()}–{sizes.max()} per variant), measure {m}, seed {audit.seed}",
             f"candidates (mean over variants): min {per['cand_min'].mean():.3f}, mean {per['cand_mean'].mean():.3f}, "
             f"max {per['cand_max'].mean():.3f}", ""]
    bases = [b for b in BASELINES if b in audit.selectors]
    width = max(8, *(len(s) for s in audit.summary["selector"]))
    head = f"{'selector':{width}}  {'mean':>6}  {'pct':>4}  {'best':>5}  {'rank':>5}"
    for b in bases:
        head += f"  {'p vs ' + b:>20}"
    lines.append(head)
    for row in audit.summary.itertuples(index=False):
        rank = f"{row.mean_rank:.2f}" if np.isfinite(row.mean_rank) else "n/a"
        mean = f"{row.mean:.3f}" if np.isfinite(row.mean) else "n/a"
        pct = f"{row.mean_percentile:.0f}" if np.isfinite(row.mean_percentile) else "n/a"
        line = f"{row.selector:{width}}  {mean:>6}  {pct:>4}  {row.best_choices:>2}/{row.n_variants:<2}  {rank:>5}"
        for b in bases:
            t = audit.tests[(audit.tests["selector"] == row.selector) & (audit.tests["baseline"] == b)]
            line += f"  {(p_text(float(t['p_value'].iloc[0])) if len(t) else '—'):>20}"
        lines.append(line)
    lines.append("")
    lines.append("mean = mean quality of the pick; pct = mean percentile among the candidates (random: 50); best = "
                 "variants where the pick is the best candidate; rank = mean rank among the selectors (1 = best); "
                 "p = one-sided Wilcoxon signed-rank, selector better than the baseline.")
    lines.append(friedman_line(audit.friedman))
    if (pl := ireos_p_line(audit.picks, m)) is not None:
        lines.append(pl)
    lines.append("")
    lines += list(audit.verdicts.values())
    if per_variant:
        wide = sub.pivot_table(index="dataset", columns="selector", values="value", aggfunc="first")
        wide = wide[[s for s in audit.selectors if s in wide.columns]]
        stats_ = per.set_index("dataset")[["n_candidates", "cand_min", "cand_mean", "cand_max"]]
        table = stats_.join(wide)
        lines += ["", f"per variant ({m}):", table.to_string(float_format=lambda x: f"{x:.3f}")]
    if audit.failed:
        lines.append("")
        lines += [f"skipped {d}: {e}" for d, e in audit.failed]
    return "\n".join(lines)
