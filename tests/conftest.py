"""Shared pytest fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = Path(os.environ.get("ODEVAL_SHARED_DATASETS", REPO_ROOT.parent / "shared" / "datasets"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    """Path to ``../shared/datasets``; tests using it are skipped with a reason when it is absent."""
    if not SHARED_DATASETS.is_dir():
        pytest.skip(f"shared datasets folder not found at {SHARED_DATASETS}")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def dami(shared_datasets: Path) -> Path:
    path = shared_datasets / "dami"
    if not path.is_dir():
        pytest.skip(f"Campos (DAMI) collection not found at {path}")
    return path
