"""Shared helpers of the protocol tests."""

from __future__ import annotations

import numpy as np
import pytest


class GaussScorer:
    """Distance to the training mean: fast, deterministic, continuous scores (higher = more anomalous)."""

    def fit(self, X):
        self.mu = X.mean(axis=0)
        return self

    def score(self, X):
        return np.sqrt(((X - self.mu) ** 2).sum(axis=1))


@pytest.fixture()
def gauss():
    """The :class:`GaussScorer` class."""
    return GaussScorer
