"""Text of ``odeval protocol-audit``: Table 1 of Fourure et al. (2021), the findings and the files written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from odeval.protocols.audit import FileAudit

__all__ = ["audit_json", "audit_lines", "format_table"]


def format_table(table: list[dict[str, Any]]) -> str:
    """Table 1 as text: one line per setting, ``mean ± std`` per metric."""
    settings = list(dict.fromkeys(r["setting"] for r in table))
    metrics = list(dict.fromkeys(r["metric"] for r in table))
    names = {"f1": "F1", "avpr": "AVPR", "auc": "ROC AUC"}
    lines = [f"{'setting':<20}" + "".join(f"{names.get(m, m):<18}" for m in metrics)]
    for s in settings:
        cells = []
        for m in metrics:
            r = next(r for r in table if r["setting"] == s and r["metric"] == m)
            cells.append(f"{r['mean']:.3f} ± {r['std']:.3f}".ljust(18))
        lines.append(f"{s:<20}" + "".join(cells))
    return "\n".join(lines)


def audit_json(audit: FileAudit) -> str:
    """Table 1 as JSON rows."""
    return json.dumps(audit.result.table, indent=1)


def audit_lines(audit: FileAudit) -> list[str]:
    """The title, Table 1, the findings (one ``- `` line each) and the files written."""
    desc = ", ".join(f"{key}={value}" for key, value in audit.params.items())
    title = (f"Table 1 — {Path(audit.dataset).name}, {audit.detector}{f' ({desc})' if desc else ''}"
             f"{f', k={audit.k}' if audit.k is not None else ''}: {audit.runs} runs, seed {audit.seed}, "
             "mean ± std (ddof = 1)")
    return [title, format_table(audit.result.table), "", *(f"- {line}" for line in audit.result.statements), "",
            "wrote " + ", ".join(str(p) for p in audit.written)]
