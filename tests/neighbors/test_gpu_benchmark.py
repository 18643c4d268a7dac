"""benchmarks/gpu_graph.py (issue 28) on PyTorch's CPU build with tiny sizes: the script's logic, not GPU
figures — it is run once on a CUDA machine by a session that has one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (extra odeval[gpu]); the GPU benchmark needs it")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_gpu_graph_small_on_the_cpu(tmp_path):
    out = tmp_path / "gpu.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_graph.py"), "--device", "cpu", "--small",
                          "--skip-allk", "--json", str(out)], capture_output=True, text=True, timeout=1800, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("card: none (CPU build); PyTorch")
    assert ("(--small: not the issue's sizes) TARGET bit-identical graphs (conformance data, 10⁵ random, 10⁶ sample "
            "rows): MET") in lines
    figures = json.loads(out.read_text())
    assert figures["identity_conformance"]["different"] == [] and figures["identity_conformance"]["checked"] >= 30
    assert figures["identity_random"]["identical"] and figures["graph_1e6"]["rows_identical"]
