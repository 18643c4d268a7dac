"""Text of ``odeval study`` and ``odeval demo``: the plan of ``study check``, the summary of a run, the message
of an interrupted run and the demo's method ranking."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from odeval._krange import format_ks
from odeval.bench import RunSummary
from odeval.bench.config import Study, VariantKPlan
from odeval.bench.study_check import StudyCheck
from odeval.render.scores import skipped_lines

__all__ = ["check_lines", "demo_header", "demo_summary", "interrupted_lines", "ranking_lines", "run_summary_lines"]


def _variant_lines(v: VariantKPlan) -> list[str]:
    if v.error is not None:
        return [f"  {v.ref.name}: cannot be read: {v.error}"]
    graph = f"kNN graph k={v.graph_k}" if v.graph_k is not None else "no kNN graph: imported estimators only"
    lines = [f"  {v.ref.name} (N={v.n_objects}, {graph}):"]
    for m, plan in v.plans:
        extra = (f" {m.setting}" if m.setting else "") + (f" seed={m.seed}" if m.seed is not None else "")
        lines.append(f"    {m.name} {m.params}{extra} k={format_ks(plan.ks) or 'none'} ({len(plan.ks)} values)"
                     + ("" if plan.ks else ": nothing to compute, the unit will fail"))
        lines += [f"      {line}" for line in skipped_lines(m.name, plan.skipped)]
    return lines


def _per_variant_step_lines(spec: Study) -> list[str]:
    step = spec.variant_step
    if step is None:  # odeval.bench.variant_step: one task per variant and kind
        return []
    lines = []
    if step.ireos is not None:
        lines.append(f"  per variant: IREOS of every candidate, one gamma_max per variant {step.ireos}")
    if step.selectors is not None:
        modes = " and ".join(step.selection_modes)
        lines.append(f"  per variant: selectors {list(step.selectors)}, candidates {modes}")
    return lines


def check_lines(check: StudyCheck) -> list[str]:
    """``odeval study check``: the study's size, each method's k plan, each variant's plan, internal measures
    and per-variant tasks."""
    spec = check.study
    n_units = len(spec.datasets) * len(spec.methods)
    lines = [f"study {spec.name!r}: {len(spec.datasets)} dataset variants × {len(spec.methods)} methods = "
             f"{n_units} units, k up to {spec.k_max}, metric {spec.metric}"]
    for m, runs, skipped in check.method_plans:
        extra = (f" {m.setting}" if m.setting else "") + (f" seed={m.seed}" if m.seed is not None else "")
        if runs is None:  # an imported estimator: one scoring per unit
            lines.append(f"  {m.name} {m.params}{extra} ({m.estimator}; no k)")
            continue
        lines.append(f"  {m.name} {m.params}{extra} k={runs} ({runs.count()} values)")
        lines += [f"    skipped k={ks}: {reason}" for ks, reason in skipped.items()]
    lines.append("  per dataset variant (the k that will run; skipped k as the runner records them in units.skipped):")
    for v in check.variant_plans:
        lines += _variant_lines(v)
    if spec.internal:
        lines.append(f"  internal measures {list(spec.internal)} {spec.internal_options}")
        lines += [f"    {m.name}: no {'/'.join(x.upper() for x in spec.internal)} ({why})"
                  for m, why in check.no_internal]
    return lines + _per_variant_step_lines(spec)


def run_summary_lines(spec: Study, summary: RunSummary, store_path: Path) -> list[str]:
    """``odeval study run``: units of the study, already stored, computed, failed, time and store (stdout)."""
    lines = [f"study {spec.name!r} ({spec.study_hash}): {summary.total_units} units, "
             f"{summary.already_done} already in the store, {summary.ok} computed, {len(summary.failed)} failed, "
             f"{summary.wall_s:.1f}s → {store_path}"]
    if summary.replaced:
        lines.append(f"  {summary.replaced} unit(s) of an older scoring version of their method were replaced")
    if summary.variant_tasks_total:
        lines.append(f"  per-variant tasks: {summary.variant_tasks_total}, {summary.variant_tasks_done} already in "
                     f"the store, {summary.variant_tasks_ok} computed (failures listed with the units)")
    return lines


def failure_lines(summary: RunSummary) -> list[str]:
    """One ``FAILED`` line per failed unit or per-variant task (stderr)."""
    return [f"  FAILED {f['dataset']} {f['method']} {f['params']}: {f['error']}" for f in summary.failed]


def interrupted_lines(summary: RunSummary, store_path: Path, resume: Sequence[str]) -> list[str]:
    """What an interrupted run saved, and the command that resumes it (stderr)."""
    import shlex

    s = summary
    return [f"\ninterrupted: {s.computed} unit(s) computed in this run are saved in {store_path} "
            f"({s.already_done + s.computed} of {s.total_units} units of the study are stored); units in "
            "progress were dropped.", f"resume with: {shlex.join(resume)}"]


def demo_header(spec: Study, k_range: str) -> str:
    return f"demo study: {len(spec.datasets)} vendored datasets × {len(spec.methods)} methods, k = {k_range}"


def demo_summary(summary: RunSummary, store_path: Path) -> str:
    return (f"{summary.ok} units computed, {summary.already_done} reused, {len(summary.failed)} failed "
            f"in {summary.wall_s:.1f}s → {store_path}")


def ranking_lines(best: pd.Series) -> list[str]:
    """The demo's ranking: ROC AUC at each method's best k (:func:`odeval.analysis.aggregate.store_ranking`)."""
    return ["\nROC AUC at each method's best k, mean over base datasets (variants of a base dataset averaged "
            "first, as in the report):", *(f"  {method:14s} {value:.3f}" for method, value in best.items())]
