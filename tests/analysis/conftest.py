"""Fixtures of the analysis tests: synthetic and realistic results-store frames."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_frames import realistic_results, synthetic_results


@pytest.fixture(scope="session")
def synthetic():
    """(runs, outlier_ranks) of a small synthetic study."""
    return synthetic_results()


@pytest.fixture(scope="session")
def realistic(dami):
    """(runs, outlier_ranks, best-k scores) from scoring real DAMI datasets with kNN, kNNW and LOF."""
    return realistic_results(dami)
