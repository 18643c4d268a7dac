"""The command line stays thin: every function of ``odeval.cli`` parses options, calls one library function and
renders the result with :mod:`odeval.render` (issue 23, "A thin CLI")."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[1] / "src" / "odeval" / "cli.py"
MAX_LINES = 40

def _function_lengths() -> dict[str, int]:
    tree = ast.parse(CLI.read_text(encoding="utf-8"), filename=str(CLI))
    return {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_no_cli_function_over_40_lines():
    lengths = _function_lengths()
    too_long = {name: n for name, n in lengths.items() if n > MAX_LINES}
    assert not too_long, f"functions of odeval/cli.py over {MAX_LINES} lines (def to last line): {too_long}"


def test_the_length_rule_sees_the_commands():
    lengths = _function_lengths()
    assert {"score_cmd", "evaluate_cmd", "datasets_info", "protocol_audit_cmd", "ireos_cmd", "emmv_cmd",
            "select_audit_cmd"} <= set(lengths)


def test_no_pipeline_stage_uses_click():
    """Click belongs to the command line: no stage module imports it (protocols lost its click module)."""
    src = CLI.parent
    offending = []
    for path in sorted(src.rglob("*.py")):
        if path == CLI:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "click" or n.startswith("click.") for n in names):
                offending.append(str(path.relative_to(src)))
    assert not offending, f"modules other than odeval/cli.py import click: {sorted(set(offending))}"
