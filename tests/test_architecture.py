"""The pipeline's one-way data flow: a stage never imports a later one (DEVELOPERS.md, "Layout")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "odeval"
STAGES = ["data", "neighbors", "detectors", "scaling", "measures", "compare", "labelfree", "protocols", "bench",
          "analysis", "report", "render"]


def _stage_of(module: str) -> str | None:
    """``odeval.detectors.lof`` → ``detectors``; None for top-level helpers (``odeval._validation``, ``odeval``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else None


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("odeval"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("odeval") and not node.level:
            found.add(node.module)
    return found


@pytest.mark.parametrize("stage", STAGES)
def test_stage_imports_only_earlier_stages(stage):
    own = STAGES.index(stage)
    offending = []
    for path in sorted((SRC / stage).rglob("*.py")):
        for module in _imports(path):
            other = _stage_of(module)
            if other is not None and STAGES.index(other) > own:
                offending.append(f"{path.relative_to(SRC)} imports {module}")
    assert not offending, "later stage imported:\n" + "\n".join(offending)


def test_cli_is_the_only_top_level_consumer():
    helpers = [p for p in SRC.glob("*.py") if p.name not in {"__init__.py", "cli.py"}]
    for path in helpers:  # _validation and friends are used by every stage, so they import none
        assert not {m for m in _imports(path) if _stage_of(m)}, f"{path.name} imports a pipeline stage"
