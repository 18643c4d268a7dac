"""Text of ``odeval score`` (the graph, skipped k, the file written) and ``odeval evaluate`` (every external
measure of one scoring, or a table of them for the columns of a score table)."""

from __future__ import annotations

import json
from typing import Any

from odeval.bench.score_file import ScoredFile
from odeval.measures.files import FileEvaluation
from odeval.render._table import name_value_lines, named_rows

__all__ = ["evaluation_json", "evaluation_lines", "graph_notes", "scored_file_line", "skipped_lines", "skipped_notes"]


# --- odeval score ------------------------------------------------------------------------------------------
def graph_notes(graph: Any) -> list[str]:
    """How the kNN graph was searched, and the recall of an approximate one (stderr)."""
    lines = [f"kNN graph: {graph.search} ({graph.search_reason})"]
    if graph.approx_recall is not None:
        lines.append(f"note: approximate kNN graph, recall {graph.approx_recall:.4f} on a sample")
    return lines


def skipped_lines(method: str, skipped: dict[str, str]) -> list[str]:
    """Lines ``"LDOF: skipped k=1 (LDOF is defined for k ≥ 2)"``, one per reason."""
    return [f"{method}: skipped k={ks} ({reason})" for ks, reason in skipped.items()]


def skipped_notes(method: str, skipped: dict[str, str]) -> list[str]:
    """One ``note:`` line per skipped k range of ``method`` (stderr)."""
    return [f"note: {line}" for line in skipped_lines(method, skipped)]


def scored_file_line(scored: ScoredFile) -> str:
    return (f"{scored.path}: {scored.n_objects} objects × {len(scored.columns)} score columns "
            f"({', '.join(scored.methods)}; k {scored.k_spec}; {scored.metric})")


# --- odeval evaluate ---------------------------------------------------------------------------------------
def evaluation_json(ev: FileEvaluation) -> str:
    head: dict[str, Any] = {"n_objects": ev.n_objects, "n_outliers": ev.n_outliers, "n": ev.n}
    if ev.single:
        return json.dumps(head | {"measures": ev.results[0]}, indent=2)
    return json.dumps(head | {"results": [{"column": c, "measures": r}
                                          for c, r in zip(ev.columns, ev.results, strict=True)]}, indent=2)


def evaluation_lines(ev: FileEvaluation) -> list[str]:
    """``N = …, |O| = …[, n = …]``, then ``measure  value`` lines (one scoring) or a table with one row per
    column and one column per measure."""
    header = f"N = {ev.n_objects}, |O| = {ev.n_outliers}" + (f", n = {ev.n}" if ev.n is not None else "")
    if ev.single:
        return [header, *name_value_lines(ev.results[0], lambda v: f"{v:.6f}")]
    measures = list(ev.results[0])
    widths = {m: max(len(m), 9) for m in measures}
    return [header, *named_rows([str(c) for c in ev.columns], measures, ev.results, widths,
                                lambda v, w: f"{v:>{w}.6f}")]
