"""Fixtures of the report tests: results-store frames (shared helpers of tests/analysis)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "analysis"))

from results_frames import synthetic_results


@pytest.fixture(scope="session")
def small_study():
    """(runs, outlier_ranks) of a small synthetic study: 3 base datasets × 2 variants × 4 methods × k = 1..15."""
    return synthetic_results(n_base=3, n_variants=2, ks=range(1, 16), seed=1)
