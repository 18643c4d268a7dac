"""Text of ``odeval select``: the recommendation and its evidence in plain words (docs/select.md explains each
line), and the progress display on stderr."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["demo_select_lines", "format_recommendation", "select_progress"]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.0%}"


def format_recommendation(rec: Any, notes: list[str] | None = None) -> str:
    """The report of :func:`odeval.labelfree.recommend.recommend`, in the order of docs/select.md."""
    d = rec.dataset
    prep = rec.preparation
    lines: list[str] = []
    for note in notes or []:
        lines.append(f"note: {note}")
    steps = ", ".join(prep.get("steps", [])) or "none"
    lines.append(f"{d['name']}: {prep['n_objects']} objects × {prep['n_attributes']} attributes after preparation "
                 f"({steps}); {prep.get('duplicates', 0)} exact duplicate(s)"
                 + (f"; {prep['note_k']}" if prep.get("note_k") else ""))
    pool = rec.pool
    ks = pool["ks"]
    grid = "" if len(ks) == ks[-1] - ks[0] + 1 else f", a grid of {len(ks)} k"
    added = pool.get("added", [])
    parts = [f"the twelve Campos methods × k = {ks[0]}..{ks[-1]}{grid}"] if pool.get("campos", True) else []
    if added:
        parts.append(f"{len(added)} added configuration(s) of {', '.join(pool.get('added_methods', []))}")
    lines.append(f"candidates: {pool['n_candidates']} ({' + '.join(parts)})")
    left_out = [s for s in pool.get("skipped", []) if ": left out (" in s]
    lines += [f"  {s}" for s in left_out]
    lines.append("")
    lines.append(f"Recommendation: {rec.recommended}   (chosen by {rec.recommended_by})")
    lines.append(f"  why: {rec.reason}")
    lines.append(f"  alternative: the {rec.alternative} — the mean of the Gaussian-scaled scores of all candidates")
    ag = rec.agreement
    lines.append("")
    lines.append(f"Agreement: {ag['strength']} — {ag['pickers']} candidate picks, {ag['distinct_picks']} distinct, "
                 f"from {ag['distinct_methods']} method(s); median Spearman ρ of the label-free choices to the "
                 f"recommendation {ag['median_rho']:.2f}")
    for c in rec.choices:
        rho = ag["rho_to_recommendation"].get(c.selector)
        lines.append(f"  {c.selector:<16} {c.name or '(no choice)':<18} "
                     + (f"ρ = {rho:.2f}" if rho is not None else "")
                     + (f"   {c.note}" if c.note else ""))
    st = rec.stability
    lines.append("")
    if st.get("resamples"):
        lines.append(f"Stability over {st['resamples']} seeded subsamples of {st['objects_per_resample']} objects: "
                     f"top-{st['top_n']} overlap of the recommendation {_pct(st['top_n_overlap'])}, of the ensemble "
                     f"{_pct(st['top_n_overlap_ensemble'])}")
        for name, same in st["same_pick"].items():
            rho = st["pick_rho"].get(name)
            lines.append(f"  {name:<16} same pick {_pct(same)}, same method {_pct(st['same_method'][name])}"
                         + (f", ρ to the full-table pick {rho:.2f}" if rho is not None else ""))
        lines.append(f"  ({st['note']})")
    else:
        lines.append(f"Stability: not measured ({st.get('note', '')})")
    lines.append("")
    if rec.warnings:
        lines.append("Warnings:")
        lines += [f"  ! {w}" for w in rec.warnings]
    else:
        lines.append("Warnings: none apply to this table")
    lines.append("")
    src = rec.record_source
    lines.append(f"What to expect (measured on the labelled Campos collection; {src['document']}, main at "
                 f"{src['commit']}, {src['run_date']}):")
    for e in rec.expectations:
        if e["mean_roc_auc"] is None:
            lines.append(f"  {e['selector']:<16} {e['sentence']}")
            continue
        lines.append(f"  {e['selector']:<16} mean ROC AUC {e['mean_roc_auc']:.3f}, percentile "
                     f"{e['mean_percentile']:.0f} ({e['n_variants']} variants): {e['sentence']}")
    ir = rec.ireos
    if ir.get("run") and ir.get("order"):
        lines.append(f"  IREOS here: γ_max = {ir['gamma_max']:.3g} ({ir['note']}); guarded rule: {ir['guarded']}")
    lines.append("")
    th = rec.threshold
    lines.append(f"Which rows: {th['n_flagged']} object(s) ({th['fraction']:.1%}) have outlier probability > "
                 f"{th['cutoff']:g} ({th['how']})")
    lines.append(f"  top {len(rec.top)} by the recommendation; votes = how many of the {len(th['strong_candidates'])} "
                 "strongest candidates (each method at its most central k) also rank the object in their top "
                 f"{len(rec.top)}:")
    lines.append(f"  {'row':>7} {'id':>10} {'score':>12} {'probability':>11} {'votes':>6}")
    for t in rec.top:
        ident = "" if t["id"] is None else str(t["id"])
        lines.append(f"  {t['row']:>7} {ident:>10} {t['score']:>12.5g} {t['probability']:>11.3f} "
                     f"{t['votes']:>3}/{t['of']}")
    if rec.check:
        chk = rec.check
        r, e = chk["recommended"], chk["ensemble"]
        lines.append("")
        lines.append(f"Check against held-back labels ({chk['n_outliers']} outliers of {chk['n_objects']}; "
                     f"{chk['note']}):")
        lines.append(f"  {rec.recommended}: ROC AUC {r['roc_auc']:.3f}, AP {r['average_precision']:.3f}, "
                     f"percentile {r['percentile']:.0f} among the candidates")
        lines.append(f"  ensemble: ROC AUC {e['roc_auc']:.3f}, AP {e['average_precision']:.3f}, percentile "
                     f"{e['percentile']:.0f}")
        for name, v in chk["selectors"].items():
            if name not in (rec.recommended_by, "ensemble"):
                lines.append(f"  {name} ({v['choice']}): ROC AUC {v['roc_auc']:.3f}, percentile {v['percentile']:.0f}")
        c = chk["candidates_roc_auc"]
        lines.append(f"  candidates' ROC AUC: min {c['min']:.3f}, median {c['median']:.3f}, max {c['max']:.3f}")
    return "\n".join(lines)


def demo_select_lines(rec: Any, command: str, page: str | None) -> list[str]:
    """The demo's label-free half in a few lines: what ran, the recommendation, and the check against the labels the
    selection never saw (``odeval select`` prints the whole report; ``command`` reruns it)."""
    prep = rec.preparation
    lines = ["", f"Label-free half: odeval select on {rec.dataset['name']} ({prep['n_objects']} objects × "
             f"{prep['n_attributes']} attributes) with its labels held back", f"  {command}",
             f"  Recommendation: {rec.recommended}   (chosen by {rec.recommended_by}; alternative: the "
             f"{rec.alternative})", f"  agreement of the label-free choices: {rec.agreement['strength']}"]
    chk = rec.check
    if chk:
        r, e, c = chk["recommended"], chk["ensemble"], chk["candidates_roc_auc"]
        lines.append(f"  check against the held-back labels ({chk['n_outliers']} outliers of {chk['n_objects']}): "
                     f"{rec.recommended} ROC AUC {r['roc_auc']:.3f}, AP {r['average_precision']:.3f}, percentile "
                     f"{r['percentile']:.0f} among the {rec.pool['n_candidates']} candidates; ensemble ROC AUC "
                     f"{e['roc_auc']:.3f}; candidates min {c['min']:.3f}, median {c['median']:.3f}, max {c['max']:.3f}")
    if page:
        lines.append(f"  page: {page}")
    return lines


@contextmanager
def select_progress(enabled: bool = True) -> Iterator[Callable[[str, int, int], None] | None]:
    """A live one-line progress display on stderr (rich) for :func:`recommend`'s ``progress`` callback; yields
    None when disabled (or stderr is not a terminal: then nothing is drawn)."""
    import sys

    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("preparing", total=None, count="")

        def update(stage: str, done: int, total: int) -> None:
            bar.update(task, description=stage, total=total or None, completed=done if total else 0,
                       count=f"{done}/{total}" if total else (str(done) if done else ""))
        yield update
