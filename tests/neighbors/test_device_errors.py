"""``knn_graph(device=...)`` and ``odeval score --device``: one-line errors where the device search cannot run
(no PyTorch, no CUDA device, an unknown device), never a silent CPU fallback. Runs with or without PyTorch (a
stand-in module plays the machine without a GPU)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from click.testing import CliRunner

from odeval.cli import main
from odeval.neighbors import knn_graph
from odeval.neighbors._torch_graph import DeviceError

X = np.random.default_rng(0).normal(size=(40, 3))


def _torch_without_cuda() -> types.ModuleType:
    fake = types.ModuleType("torch")
    fake.__version__ = "0.0-stand-in"
    fake.Tensor = type("Tensor", (), {})  # scipy's array-API check looks for torch.Tensor when torch is imported
    fake.cuda = types.SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)
    return fake


def test_without_pytorch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(ImportError, match=r"^device='cuda' needs PyTorch: pip install 'odeval\[gpu\]'"):
        knn_graph(X, 5, device="cuda")


def test_without_a_cuda_device(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", _torch_without_cuda())
    with pytest.raises(DeviceError, match=r"^device='cuda:1': PyTorch 0.0-stand-in sees no CUDA device"):
        knn_graph(X, 5, device="cuda:1")


@pytest.mark.parametrize("device", ["gpu", "tpu", "CUDA", "cuda1"])
def test_unknown_device(device):
    with pytest.raises(ValueError, match=r"unknown device .*; use 'cpu' \(numba search\) or 'cuda' / 'cuda:N'"):
        knn_graph(X, 5, device=device)


def test_cpu_device_is_the_default_search():
    assert knn_graph(X, 5, device="cpu").search == knn_graph(X, 5).search == "brute"


@pytest.fixture
def dataset(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,b,outlier\n" + "\n".join(f"{x:.6f},{y:.6f},{int(i == 0)}" for i, (x, y, _)
                                                  in enumerate(X)) + "\n")
    return path


def test_score_device_cuda_errors_in_one_line(monkeypatch, dataset, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", _torch_without_cuda())
    out = tmp_path / "s.csv"
    result = CliRunner().invoke(main, ["score", str(dataset), "-m", "LOF", "--k", "5", "--device", "cuda",
                                       "-o", str(out)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: device='cuda': PyTorch 0.0-stand-in sees no CUDA device (torch.cuda.is_available() is False); "
        "use device='cpu'"]
    assert not out.exists()
    monkeypatch.setitem(sys.modules, "torch", None)
    result = CliRunner().invoke(main, ["score", str(dataset), "-m", "LOF", "--k", "5", "--device", "cuda",
                                       "-o", str(out)])
    assert result.exit_code == 1 and "needs PyTorch: pip install 'odeval[gpu]'" in result.output


def test_score_device_with_scheduler_is_a_usage_error(dataset, tmp_path):
    result = CliRunner().invoke(main, ["score", str(dataset), "-m", "LOF", "--device", "cuda", "--scheduler",
                                       "local:1", "-o", str(tmp_path / "s.csv")])
    assert result.exit_code == 2 and "drop --device cuda" in result.output
