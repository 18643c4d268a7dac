"""±inf scorings (LOF-like methods on duplicates) evaluated through finite_for_ranking."""

import numpy as np
import pytest

from odeval.measures import evaluate, finite_for_ranking


def test_keeps_order_and_ties():
    s = np.array([np.inf, 1.0, -np.inf, np.inf, 3.0, -2.0, -np.inf])
    f = finite_for_ranking(s)
    assert np.isfinite(f).all()
    order = np.argsort(s, kind="stable")
    assert (np.argsort(f, kind="stable") == order).all()
    assert f[0] == f[3] > 3.0 and f[2] == f[6] < -2.0
    assert (f[np.isfinite(s)] == s[np.isfinite(s)]).all()


def test_all_infinite_and_nan_passthrough():
    f = finite_for_ranking([np.inf, np.inf, -np.inf])
    assert f[0] == f[1] > f[2]
    assert np.isnan(finite_for_ranking([np.nan, 1.0]))[0]


def test_evaluate_on_lof_with_duplicates_matches_the_ranking():
    # +inf ranks above every finite score, as ELKI ranks it
    y = np.array([1, 0, 0, 1, 0, 0], dtype=bool)
    s = np.array([np.inf, 0.5, 1.0, 2.0, 1.0, np.inf])
    ev = evaluate(y, finite_for_ranking(s))
    stand_in = np.array([10.0, 0.5, 1.0, 2.0, 1.0, 10.0])
    assert ev == evaluate(y, stand_in)


def test_error_names_the_helper():
    with pytest.raises(ValueError, match="finite_for_ranking"):
        evaluate([1, 0], [np.inf, 0.0])
