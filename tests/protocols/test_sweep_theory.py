"""The contamination sweep (§3.4, Fig. 4) and the theory curves (Fig. 5–7)."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.protocols import (
    contamination_sweep,
    f1_from_rates,
    ring_toy_curve,
    sweep_counts,
    triangular_f1,
    triangular_rates,
    triangular_thresholds,
)
from odeval.protocols.plot import plot_sweep, plot_theory


def test_f1_and_avpr_rise_with_injected_contamination_auc_does_not(gauss):
    rng = np.random.default_rng(0)
    X = np.vstack((rng.normal(size=(2000, 2)), rng.normal(size=(400, 2)) + 1.5))
    y = np.r_[np.zeros(2000, bool), np.ones(400, bool)]
    sw = contamination_sweep(X, y, gauss(), runs=12, seed=0, points=6)
    m = sw.groupby("n_anomalies").mean(numeric_only=True)
    assert list(m.index) == sweep_counts(400, 6).tolist()
    for col in ("contamination", "f1_estimated", "f1_constant", "f1_optimal", "avpr"):
        assert np.all(np.diff(m[col].to_numpy()) > 0), col
    assert m["f1_estimated"].iloc[-1] - m["f1_estimated"].iloc[0] > 0.2
    big = m[m.index >= 80]["auc"]
    assert big.max() - big.min() < 0.015  # AUC: no trend (unbiased at every contamination)
    # the model and the normal test objects are fixed within a run: the first level's AUC is one anomaly's rank
    assert set(sw["run"]) == set(range(12))


def test_sweep_counts_and_errors():
    assert sweep_counts(5, None).tolist() == [1, 2, 3, 4, 5]
    assert sweep_counts(100, 3).tolist() == [1, 50, 100]
    with pytest.raises(ValueError, match="points"):
        sweep_counts(100, 1)


def test_f1_from_rates():
    a = np.linspace(0.01, 0.99, 50)
    f = f1_from_rates(0.8, 0.9, a)
    assert np.all(np.diff(f) > 0)
    assert f1_from_rates(0.8, 1.0, 0.3) == pytest.approx(2 * 0.8 / 1.8)  # precision 1
    p = 0.5 * 0.8 / (0.5 * 0.8 + 0.5 * 0.1)
    assert f1_from_rates(0.8, 0.9, 0.5) == pytest.approx(2 * p * 0.8 / (p + 0.8))
    with pytest.raises(ValueError):
        f1_from_rates(0.8, 0.9, 0.0)


def test_triangular_toy_model():
    tpr, tnr = triangular_rates(np.array([0.0, 0.5, 1.0]))
    np.testing.assert_allclose(tpr, [1, 0.75, 0])
    np.testing.assert_allclose(tnr, [0, 0.75, 1])
    for a in (0.05, 0.2, 0.5):
        t_eq, t_opt = triangular_thresholds(a)
        tpr, tnr = triangular_rates(t_eq)
        assert a * (1 - tpr) == pytest.approx((1 - a) * (1 - tnr))  # fp = fn
        assert triangular_f1(t_opt, a) >= triangular_f1(t_eq, a)
        assert t_opt <= t_eq + 1e-9  # "a threshold smaller than this one often results in a better F1"


def test_ring_toy_estimated_threshold_is_more_biased():
    df = ring_toy_curve([0.02, 0.1, 0.3], runs=4, seed=0, radius=2.1)
    m = df.groupby(df["contamination"].round(2)).mean(numeric_only=True)
    assert np.all(np.diff(m["f1_estimated"].to_numpy()) > 0)
    assert np.all(np.diff(m["f1_constant"].to_numpy()) > 0)
    assert m["auc"].max() - m["auc"].min() < 0.03


def test_figures(tmp_path, gauss):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(1)
    X = np.vstack((rng.normal(size=(100, 2)), rng.normal(size=(10, 2)) + 3))
    y = np.r_[np.zeros(100, bool), np.ones(10, bool)]
    sw = contamination_sweep(X, y, gauss(), runs=2, seed=0)
    assert plot_sweep(sw, tmp_path / "s.png").stat().st_size > 1000
    assert plot_theory(tmp_path / "t.png").stat().st_size > 1000
