"""Small real-file studies for the runner tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


def make_npz(path: Path, n_in: int, n_out: int, dim: int, seed: int, n_dup: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (n_in, dim)), rng.uniform(-6, 6, (n_out, dim))])
    y = np.r_[np.zeros(n_in), np.ones(n_out)]
    if n_dup:
        idx = rng.choice(n_in, n_dup)
        X, y = np.vstack([X, X[idx]]), np.r_[y, np.zeros(n_dup)]
    np.savez(path, X=X, y=y)
    return path


def write_study(path: Path, body: str) -> Path:
    path.write_text(body)
    return path


def local_and_dask(study: Path, tmp_path: Path):
    """Run ``study`` in this process and on a Dask LocalCluster (two worker processes) into two new stores:
    (local store, Dask store, the Dask run's summary); skips without the dask extra."""
    distributed = pytest.importorskip("distributed")
    from odeval.bench import load_study, run_study

    run_study(load_study(study), tmp_path / "local.duckdb", workers=1, progress="none")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl:
        summary = run_study(load_study(study), tmp_path / "dask.duckdb", scheduler=cl.scheduler_address,
                            progress="none")
    return tmp_path / "local.duckdb", tmp_path / "dask.duckdb", summary


@pytest.fixture
def npz_dataset():
    return make_npz


@pytest.fixture
def study_file():
    return write_study


@pytest.fixture
def toy_study(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    make_npz(data / "toy_a.npz", 60, 5, 2, seed=1, n_dup=6)
    make_npz(data / "toy_b.npz", 80, 4, 3, seed=2)
    return write_study(tmp_path / "study.toml", """
[study]
name = "toy"
k = "1..12"

[[datasets]]
glob = "data/*.npz"

[[methods]]
name = "kNN"

[[methods]]
name = "LOF"

[[methods]]
name = "LDOF"
k = "1..8"
""")
