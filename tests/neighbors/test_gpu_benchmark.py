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


@pytest.mark.slow
def test_gpu_graph_big_whole_on_the_cpu(tmp_path):
    """``--big --big-every 1``: the whole graph as knn_graph builds it, its first rows equal to the CPU search's."""
    out = tmp_path / "big.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_graph.py"), "--device", "cpu", "--small",
                          "--big", "--big-every", "1", "--json", str(out)],
                         capture_output=True, text=True, timeout=1800, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert any(line.startswith("(--small: not the issue's sizes) TARGET graph 50000 × 10 < 300 s:")
               for line in run.stdout.splitlines())
    big = json.loads(out.read_text())["graph_1e7"]
    assert big["n"] == 50_000 and big["every_nth_block"] == 1 and big["rows_identical"]
    assert big["total_s"] == pytest.approx(big["search_s"] + big["assemble_s"])
