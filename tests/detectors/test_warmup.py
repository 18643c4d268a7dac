"""`odeval warmup`: compiles (or loads) the kernels of the graph and of the requested methods."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from odeval.cli import main
from odeval.detectors.warmup import warmup


def test_warmup_steps_and_unknown_method():
    lines: list[str] = []
    times = warmup(["kNN", "lof"], log=lines.append)
    assert list(times) == ["graph", "kNN", "LOF"] and all(t >= 0 for t in times.values())
    assert len(lines) == 3 and lines[0].startswith("graph: ")
    with pytest.raises(ValueError):
        warmup(["NoSuchMethod"])


def test_warmup_cli():
    res = CliRunner().invoke(main, ["warmup", "-m", "kNN", "--no-novelty"])
    assert res.exit_code == 0, res.output
    assert "kernels compiled and cached" in res.output
    res = CliRunner().invoke(main, ["warmup", "-m", "NoSuchMethod"])
    assert res.exit_code != 0 and "Traceback" not in res.output
