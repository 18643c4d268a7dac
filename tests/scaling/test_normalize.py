"""Unit tests of the normalisations (Kriegel et al. 2011; Gao & Tan 2006)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special
from scipy import stats as sps

from odeval.scaling import (
    GammaScaling,
    GaussianScaling,
    LinearScaling,
    MixtureModelScaling,
    SigmoidScaling,
    gamma_scaling,
    gaussian_scaling,
    linear_scaling,
    mixture_model_scaling,
    sigmoid_scaling,
)

ALL = [
    lambda: GaussianScaling(),
    lambda: GaussianScaling(3.0),
    lambda: GaussianScaling(center="median"),
    lambda: GaussianScaling(center=1.0),
    lambda: GammaScaling(),
    lambda: LinearScaling(),
    lambda: SigmoidScaling(),
    lambda: MixtureModelScaling(),
]
MONOTONE = ALL[:-1]  # the mixture posterior is not monotone: beyond the Gaussian the exponential tail wins


@pytest.fixture
def scores():
    rng = np.random.default_rng(0)
    return np.r_[rng.gamma(4.0, 0.3, 200), rng.uniform(3.0, 6.0, 8)]


def test_gaussian_formula(scores):
    mu, sd = scores.mean(), scores.std(ddof=1)
    expected = np.maximum(0.0, special.erf((scores - mu) / (2.0 * sd * math.sqrt(2.0))))
    expected[scores <= mu] = 0.0
    sc = GaussianScaling(lam=2.0).fit(scores)
    assert sc.mean_ == pytest.approx(mu) and sc.std_ == pytest.approx(sd)
    np.testing.assert_allclose(sc.transform(scores), expected, rtol=1e-13, atol=0)
    np.testing.assert_array_equal(gaussian_scaling(scores, 2.0), sc.transform(scores))


def test_gaussian_paper_anchor():
    """μ + λσ maps to erf(1/√2) ≈ 0.6827 (one standard deviation of N(μ, σ²))."""
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    sc = GaussianScaling().fit(x)
    assert sc.transform(np.array([sc.mean_ + sc.std_]))[0] == pytest.approx(special.erf(1 / math.sqrt(2)))


def test_gaussian_fixed_and_median_center_use_rms(scores):
    for center, c in ((1.0, 1.0), ("median", float(np.median(scores)))):
        sc = GaussianScaling(center=center).fit(scores)
        assert sc.mean_ == c
        assert sc.std_ == pytest.approx(math.sqrt(np.mean((scores - c) ** 2)), rel=1e-14)


def test_gamma_formula(scores):
    mu, var = scores.mean(), scores.var(ddof=1)
    k, theta = mu * mu / var, var / mu
    F = sps.gamma(a=k, scale=theta).cdf
    expected = np.maximum(0.0, (F(scores) - F(mu)) / (1 - F(mu)))
    np.testing.assert_allclose(gamma_scaling(scores), expected, rtol=1e-10, atol=1e-14)
    assert np.all(gamma_scaling(scores)[scores <= mu] == 0.0)


def test_linear_min_max_and_baseline(scores):
    np.testing.assert_allclose(linear_scaling(scores), (scores - scores.min()) / np.ptp(scores))
    out = linear_scaling(np.array([0.5, 1.0, 2.0, 3.0]), lower=1.0)  # from the LOF baseline 1
    np.testing.assert_allclose(out, [0.0, 0.0, 0.5, 1.0])
    assert LinearScaling(upper=2.0).fit_transform(np.array([0.0, 1.0, 4.0])).tolist() == [0.0, 0.5, 1.0]


@pytest.mark.parametrize("make", MONOTONE)
def test_range_monotone_and_orientation(make, scores):
    out = make().fit_transform(scores)
    assert out.shape == scores.shape
    assert np.all((out >= 0) & (out <= 1))
    order = np.argsort(scores, kind="stable")
    assert np.all(np.diff(out[order]) >= -1e-15), "a normalisation must not reorder scores"
    assert out[-8:].min() > np.median(out[:200]), "the planted outliers must score higher"


@pytest.mark.parametrize("make", ALL)
def test_nonfinite_handling(make, scores):
    """fit ignores NaN/±inf; transform: +inf → 1, −inf → 0, NaN stays NaN."""
    dirty = np.r_[scores, np.nan, np.inf, -np.inf]
    a = make().fit(scores)
    b = make().fit(dirty)
    assert a.fitted_params() == pytest.approx(b.fitted_params(), rel=1e-12)
    out = b.transform(dirty)
    np.testing.assert_allclose(out[:-3], a.transform(scores), rtol=1e-12)
    assert np.isnan(out[-3]) and out[-2] == 1.0 and out[-1] == 0.0


@pytest.mark.parametrize("make", ALL)
def test_transform_other_scores_and_errors(make, scores):
    sc = make()
    with pytest.raises(RuntimeError, match="not fitted"):
        sc.transform(scores)
    sc.fit(scores)
    new = np.array([scores.min(), scores.max(), 2 * scores.max()])
    out = sc.transform(new)
    assert np.all((out >= 0) & (out <= 1))
    with pytest.raises(ValueError, match="1-dimensional"):
        make().fit(scores[None, :])
    with pytest.raises(ValueError, match="finite score"):
        make().fit(np.array([np.nan, np.inf]))


def test_degenerate_constant_scores():
    x = np.full(10, 2.0)
    assert GaussianScaling().fit_transform(x).tolist() == [0.0] * 10
    assert GaussianScaling().fit(x).transform(np.array([2.0, 2.5])).tolist() == [0.0, 1.0]
    assert GammaScaling().fit(x).transform(np.array([1.0, 2.0, 2.5, np.nan]))[:3].tolist() == [0.0, 0.0, 1.0]
    assert LinearScaling().fit(x).transform(np.array([2.0, 3.0])).tolist() == [0.0, 1.0]


def test_parameter_validation():
    with pytest.raises(ValueError, match="lam"):
        GaussianScaling(lam=0)
    with pytest.raises(ValueError, match="center"):
        GaussianScaling(center="mode")
    with pytest.raises(ValueError, match="lower"):
        LinearScaling(lower="max")
    with pytest.raises(ValueError, match="positive mean"):
        GammaScaling().fit(np.array([-3.0, -1.0, 0.5]))
    with pytest.raises(ValueError, match="below lower"):
        LinearScaling(lower=5.0, upper=1.0).fit(np.array([1.0, 2.0]))


def test_sigmoid_and_mixture_calibrate_a_clear_mixture():
    rng = np.random.default_rng(3)
    inl = rng.exponential(1.0, 500)
    outl = rng.normal(4.0, 0.5, 25)
    x = np.r_[inl, outl]
    sig = SigmoidScaling().fit(x)
    assert sig.a_ > 0
    p = sig.transform(x)
    np.testing.assert_array_equal(p, sigmoid_scaling(x))
    assert np.median(p[-25:]) > 0.9 and np.median(p[:500]) < 0.1
    mix = MixtureModelScaling().fit(x)
    assert mix.alpha_ == pytest.approx(25 / 525, abs=0.03)
    assert mix.mu_ == pytest.approx(4.0, abs=0.2)
    assert mix.lambda_ == pytest.approx(1.0, abs=0.1)
    q = mixture_model_scaling(x)
    assert np.median(q[-25:]) > 0.7 and np.median(q[:500]) < 0.01


def test_repr_and_params():
    assert repr(GaussianScaling(3.0)) == "GaussianScaling(lam=3.0, center='mean')"
    sc = GammaScaling().fit(np.array([1.0, 2.0, 3.0, 9.0]))
    assert set(sc.fitted_params()) == {"mean_", "k_", "theta_", "cdf_at_mean_"}
