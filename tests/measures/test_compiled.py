"""ScoringEvaluator (one compiled pass) gives exactly — bit for bit — what evaluate_scoring + outlier_ranks give."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.measures import MEASURES, ScoringEvaluator, evaluate_scoring, outlier_ranks
from odeval.measures._compiled import _numpy_sum


def _reference(y, s):
    full, ranked = evaluate_scoring(y, s)
    return full, np.asarray(outlier_ranks(y, ranked), dtype=np.float64)


def _same(y, s):
    ev = ScoringEvaluator(y)
    got, ranks = ev(s)
    want, want_ranks = _reference(y, s)
    assert list(got) == list(MEASURES)
    for m in MEASURES:  # bit for bit, not approximately
        assert np.float64(got[m]).tobytes() == np.float64(want[m]).tobytes(), (m, got[m], want[m])
    assert ranks.tobytes() == want_ranks.tobytes()


@pytest.mark.parametrize("seed", range(40))
def test_random_and_tied_scorings(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400)) if seed % 4 else int(rng.integers(400, 5000))
    y = rng.random(n) < rng.uniform(0.02, 0.6)
    y[rng.integers(n)] = True
    y[rng.integers(n)] = False
    if y.all() or not y.any():
        y[0], y[-1] = True, False
    kind = seed % 5
    if kind == 0:
        s = rng.normal(size=n)
    elif kind == 1:  # heavy ties (integer-valued, like kNN distances on integer data)
        s = rng.integers(0, 6, n).astype(np.float64)
    elif kind == 2:  # ties, signed zeros and infinities (LOF on duplicates)
        s = rng.choice([-0.0, 0.0, 1.0, 2.5, np.inf, -np.inf], size=n)
    elif kind == 3:  # values of very different magnitudes
        s = rng.random(n) * 10.0 ** rng.integers(-8, 8, n)
    else:  # all equal
        s = np.full(n, 3.0)
    _same(y, s)


def test_extremes():
    _same(np.array([True, False]), np.array([1.0, 0.0]))
    _same(np.array([False, True]), np.array([1.0, 1.0]))
    _same(np.array([True] * 9 + [False]), np.arange(10.0))
    _same(np.array([False] * 9 + [True]), np.arange(10.0)[::-1].copy())
    _same(np.array([1, 0, 1, 0, 0]), np.array([0.9, 0.8, 0.8, 0.1, 0.0]))


@pytest.mark.parametrize("n", [1, 7, 8, 9, 127, 128, 129, 1000, 8191, 8193, 20000, 200001])
def test_numpy_sum_bit_for_bit(n):
    rng = np.random.default_rng(n)
    a = rng.random(n) * 10.0 ** rng.integers(-6, 6, n)
    a[rng.random(n) < 0.5] = 0.0
    assert _numpy_sum(a) == np.sum(a)


def test_nan_and_bad_input_raise_as_before():
    ev = ScoringEvaluator([True, False, False])
    with pytest.raises(ValueError, match="NaN"):
        ev(np.array([1.0, np.nan, 0.0]))
    with pytest.raises(ValueError, match="differ in length"):
        ev(np.array([1.0, 0.0]))
    got, ranks = ev([3, 1, 2])  # integer scores: converted as evaluate_scoring converts them
    want, want_ranks = _reference(np.array([True, False, False]), np.array([3, 1, 2]))
    assert got == want and ranks.tolist() == want_ranks.tolist()
