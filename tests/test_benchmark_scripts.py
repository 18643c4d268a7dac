"""Every benchmark script that takes options builds its parser and prints ``--help`` (a script that only fails when a
long run is started, e.g. on an attribute of a shadowed module, is caught here; the runs themselves are
benchmarks, not tests)."""
import runpy
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if "argparse" in p.read_text())


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_prints_help(script, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    with pytest.raises(SystemExit) as exit_:
        runpy.run_path(str(script), run_name="__main__")
    assert exit_.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_ireos_authors_solver_option_names_the_block_solvers(monkeypatch, capsys):
    from odeval.labelfree.ireos import BLOCK, BLOCK_SOLVERS
    script = BENCHMARKS / "ireos_authors.py"
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at hyphens
    monkeypatch.setattr(sys, "argv", [str(script), "--help"])
    with pytest.raises(SystemExit):
        runpy.run_path(str(script), run_name="__main__")
    out = " ".join(capsys.readouterr().out.split())
    assert all(name in out for name in BLOCK_SOLVERS)
    assert f"default {BLOCK}" in out
