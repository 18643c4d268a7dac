"""`make demo` first times the first `odeval score` of the install (issue 17); the script prints the target line."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_make_demo_times_the_first_score():
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^demo: .*\n((?:\t.*\n)+)", make, flags=re.M).group(1)
    lines = [line.strip() for line in recipe.splitlines()]
    assert lines[0].startswith("$(BIN)/python benchmarks/first_run.py --installed")
    assert any(line.startswith("$(BIN)/odeval demo") for line in lines[1:])


def test_first_run_installed_prints_the_target_line():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "first_run.py"), "--installed"],
                         capture_output=True, text=True, timeout=600, check=True).stdout
    assert re.search(r"^TARGET first odeval score \(Glass_withoutdupl_norm\.arff.*: [\d.]+ s wall, [\d.]+ s CPU, "
                     r"load [\d.]+ — target 10 s: (MET|NOT MET)$", out, flags=re.M), out
