"""Excess-Mass / Mass-Volume estimators (Goix 2016) against a direct evaluation of the definitions."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from odeval.labelfree import EMMVWarning, excess_mass, mass_volume
from odeval.labelfree.excess_mass_volume import default_alpha_grid, default_t_grid

# ----------------------------------------------------------------------------- direct (slow) definitions


def direct_em_curve(s_data, s_unif, volume, t):
    """EM(t) = sup_u P_n(s ≥ u) − t·Leb(s ≥ u), s = −score, u over every distinct value of both samples and +inf."""
    a, b = -np.asarray(s_data, float), -np.asarray(s_unif, float)
    n, n_gen = a.size, b.size
    best = np.full(t.shape, -np.inf)
    for u in np.r_[np.unique(np.r_[a, b]), np.inf]:
        best = np.maximum(best, 1.0 / n * (a >= u).sum() - t * (b >= u).sum() / n_gen * volume)
    return best


def direct_mv(s_data, s_unif, volume, alphas):
    """MV(α) = min_u Leb(s ≥ u) subject to P_n(s ≥ u) ≥ α, u over every distinct value of both samples."""
    a, b = -np.asarray(s_data, float), -np.asarray(s_unif, float)
    n, n_gen = a.size, b.size
    alphas = np.atleast_1d(np.asarray(alphas, float))
    best = np.full(alphas.shape, np.inf)
    for u in np.unique(np.r_[a, b]):
        feasible = 1.0 / n * (a >= u).sum() >= alphas
        best = np.where(feasible, np.minimum(best, (b >= u).sum() / n_gen * volume), best)
    return best


def direct_em_criterion(s_data, s_unif, volume, t_max=0.9):
    t = default_t_grid(volume)
    em = direct_em_curve(s_data, s_unif, volume, t)
    for i in range(t.size):
        if em[i] <= t_max:
            return np.trapezoid(em[: i + 1], t[: i + 1]), em
    return np.nan, em


def _cases(n_cases=40, seed=1):
    rng = np.random.default_rng(seed)
    for c in range(n_cases):
        n = int(rng.integers(1, 40))
        n_gen = int(rng.integers(1, 60))
        volume = float(rng.uniform(0.1, 50))
        if c % 3 == 0:  # many ties, shared values between the samples
            s, u = rng.integers(0, 6, n).astype(float), rng.integers(-2, 8, n_gen).astype(float)
        elif c % 3 == 1:  # data concentrated at normal values, uniform points spread out
            s, u = rng.normal(0, 1, n), rng.normal(2, 2, n_gen)
        else:
            s, u = rng.uniform(size=n), rng.uniform(size=n_gen)
        yield s, u, volume


@pytest.mark.parametrize("case", list(range(40)))
def test_curves_and_grid_criteria_match_the_definitions(case):
    s, u, volume = list(_cases())[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EMMVWarning)
        em = excess_mass(s, u, volume)
        mv = mass_volume(s, u, volume)
    crit, em_direct = direct_em_criterion(s, u, volume)
    np.testing.assert_allclose(em.em, em_direct, rtol=0, atol=1e-12)
    alphas = default_alpha_grid()
    mv_direct = direct_mv(s, u, volume, alphas)
    np.testing.assert_allclose(mv.mv, mv_direct, rtol=1e-12, atol=0)
    if np.isnan(crit):
        assert np.isnan(em.criterion) and em.reason
    else:
        assert em.criterion == pytest.approx(crit, rel=1e-12, abs=1e-15)
    if (mv_direct == 0).any():
        assert np.isnan(mv.criterion) and mv.reason
    else:
        assert mv.criterion == pytest.approx(np.trapezoid(mv_direct, alphas), rel=1e-12)


def _pairwise_breaks(s_data, s_unif, volume):
    a, b = -np.asarray(s_data, float), -np.asarray(s_unif, float)
    us = np.r_[np.unique(np.r_[a, b]), np.inf]
    F = np.array([(a >= u).mean() for u in us])
    V = np.array([(b >= u).sum() / b.size * volume for u in us])
    with np.errstate(divide="ignore", invalid="ignore"):
        T = (F[:, None] - F[None, :]) / (V[:, None] - V[None, :])
    T = T[np.isfinite(T) & (T > 0)]
    return np.unique(T)


@pytest.mark.parametrize("case", [1, 2, 4, 5, 7, 8, 10, 11])
def test_exact_integrals_match_the_definitions(case):
    s, u, volume = list(_cases())[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EMMVWarning)
        em = excess_mass(s, u, volume, integration="exact")
        mv = mass_volume(s, u, volume, integration="exact")
    # EM: piecewise linear with kinks only at pairwise line intersections; EM⁻¹(0.9) by bisection
    def f(t):
        return direct_em_curve(s, u, volume, np.atleast_1d(float(t)))[0]

    if f(1e12 / volume) > 0.9:
        assert np.isnan(em.criterion) and np.isinf(em.t_inverse)
    else:
        lo, hi = 0.0, 1e12 / volume
        for _ in range(110):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) > 0.9 else (lo, mid)
        assert em.t_inverse == pytest.approx(hi, rel=1e-12)
        knots = np.r_[0.0, [x for x in _pairwise_breaks(s, u, volume) if x < hi], hi]
        vals = direct_em_curve(s, u, volume, knots)
        assert em.criterion == pytest.approx(np.trapezoid(vals, knots), rel=1e-10)
    # MV: a step function, constant on ((k−1)/n, k/n]
    n = len(s)
    edges = np.unique(np.clip(np.r_[0.9, np.arange(n + 1) / n, 0.999], 0.9, 0.999))
    mids = (edges[1:] + edges[:-1]) / 2
    vals = direct_mv(s, u, volume, mids)
    if (vals == 0).any():
        assert np.isnan(mv.criterion)
    else:
        assert mv.criterion == pytest.approx(np.sum(vals * np.diff(edges)), rel=1e-12)


def test_larger_random_case_with_ties_matches_direct():
    rng = np.random.default_rng(5)
    s = np.round(rng.normal(size=3000), 2)
    u = np.round(rng.normal(0, 3, size=5000), 2)
    em = excess_mass(s, u, 7.0)
    np.testing.assert_allclose(em.em, direct_em_curve(s, u, 7.0, em.t), rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- sanity (Goix 2016 §2)


def _gaussian_setup(n=3000, n_gen=30000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    lo, hi = X.min(0), X.max(0)
    U = rng.uniform(lo, hi, size=(n_gen, 2))
    return X, U, float(np.prod(hi - lo))


def test_true_density_beats_worse_scorings():
    X, U, vol = _gaussian_setup()

    def true(Z):  # outlier score = −density
        return -np.exp(-0.5 * (Z**2).sum(1))

    def elongated(Z):  # wrong covariance
        return -np.exp(-0.5 * (Z[:, 0] ** 2 / 4 + Z[:, 1] ** 2))

    def shifted(Z):  # wrong centre
        return -np.exp(-0.5 * ((Z - 1.0) ** 2).sum(1))

    for integration in ("grid", "exact"):
        em_true = excess_mass(true(X), true(U), vol, integration=integration).criterion
        mv_true = mass_volume(true(X), true(U), vol, integration=integration).criterion
        for worse in (elongated, shifted):
            assert em_true > excess_mass(worse(X), worse(U), vol, integration=integration).criterion
            assert mv_true < mass_volume(worse(X), worse(U), vol, integration=integration).criterion


def test_invariant_to_strictly_increasing_transforms():
    X, U, vol = _gaussian_setup(n=1000, n_gen=5000, seed=3)
    s_x, s_u = (X**2).sum(1), (U**2).sum(1)  # outlier score: squared radius
    base_em = excess_mass(s_x, s_u, vol)
    base_mv = mass_volume(s_x, s_u, vol)
    for T in (np.sqrt, np.log1p, lambda z: 3 * z + 7, lambda z: z**3, np.arctan):
        em = excess_mass(T(s_x), T(s_u), vol)
        mv = mass_volume(T(s_x), T(s_u), vol)
        assert em.criterion == base_em.criterion
        assert mv.criterion == base_mv.criterion
        np.testing.assert_array_equal(em.em, base_em.em)


def test_mv_of_true_density_is_close_to_the_analytic_curve():
    # standard normal in 2-d: MV*(α) = 2π·(−ln(1−α)) (disc of radius sqrt(−2 ln(1−α)))
    X, U, vol = _gaussian_setup(n=20000, n_gen=200000, seed=7)
    s = (X**2).sum(1)
    mv = mass_volume(s, (U**2).sum(1), vol, alpha=np.array([0.5, 0.8, 0.9]))
    np.testing.assert_allclose(mv.mv, 2 * np.pi * -np.log(1 - np.array([0.5, 0.8, 0.9])), rtol=0.05)


# ----------------------------------------------------------------------------- NaN with a reason, bad input


def test_em_never_falling_to_t_max_is_nan_with_reason():
    s = np.zeros(50)  # every object at the most normal level ...
    u = np.ones(100)  # ... and no uniform point there: estimated volume 0
    with pytest.warns(EMMVWarning, match="EM never falls"):
        em = excess_mass(s, u, 1.0)
    assert np.isnan(em.criterion) and "volume 0" in em.reason and np.isinf(em.t_inverse)
    with pytest.warns(EMMVWarning, match="none of the 100 uniform points"):
        mv = mass_volume(s, u, 1.0)
    assert np.isnan(mv.criterion) and mv.reason


def test_short_t_grid_is_nan_with_reason():
    rng = np.random.default_rng(0)
    s, u = rng.normal(size=100), rng.normal(size=200)
    with pytest.warns(EMMVWarning, match="whole t grid"):
        em = excess_mass(s, u, 1.0, t=np.array([0.0, 1e-9, 2e-9]))
    assert np.isnan(em.criterion)
    assert np.isfinite(excess_mass(s, u, 1.0, integration="exact").criterion)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"volume": 0.0}, "volume must be a positive"),
    ({"volume": np.inf}, "volume must be a positive"),
    ({"s_data": []}, "empty"),
    ({"s_data": [0.0, np.nan]}, "NaN"),
    ({"s_uniform": [np.inf, 1.0]}, "infinite"),
    ({"integration": "simpson"}, "integration"),
])
def test_bad_input_raises_one_line(kwargs, match):
    args = {"s_data": [0.0, 1.0, 2.0], "s_uniform": [0.5, 1.5], "volume": 1.0} | kwargs
    integration = args.pop("integration", "grid")
    for f in (excess_mass, mass_volume):
        with pytest.raises(ValueError, match=match) as exc:
            f(args["s_data"], args["s_uniform"], args["volume"], integration=integration)
        assert "\n" not in str(exc.value)


def test_nested_points_estimate_volumes_without_bias():
    """nested_uniform_in_box: importance weights (balance heuristic) make volume / n · Σ w · 1{z ∈ A} an unbiased
    estimate of Leb(A); with the box alone the points are uniform_in_box's, every weight 1, and the weighted
    estimators equal the unweighted ones."""
    from odeval.labelfree.excess_mass_volume import nested_uniform_in_box, uniform_in_box

    rng = np.random.default_rng(0)
    X = np.where(rng.random((500, 3)) < 0.2, rng.lognormal(size=(500, 3)), 0.0)  # zero-inflated, skewed
    lo, hi = X.min(0), X.max(0)
    vol = float(np.prod(hi - lo))
    U1, w1 = nested_uniform_in_box(lo, hi, X, 5000, 3, levels=())
    assert np.array_equal(U1, uniform_in_box(lo, hi, 5000, 3)) and np.all(w1 == 1.0)
    U, w = nested_uniform_in_box(lo, hi, X, 200_000, 4)
    assert U.shape == (200_000, 3) and np.all((U >= lo) & (U <= hi)) and w.max() <= 4 + 1e-12
    assert np.mean(w) == pytest.approx(1.0, rel=0.02)  # the box itself
    for frac in (0.5, 0.05, 0.01):  # corner boxes where the mass lies, down to 1e-6 of the box
        a_hi = lo + frac * (hi - lo)
        inside = np.all(U <= a_hi, axis=1)
        assert vol / U.shape[0] * w[inside].sum() == pytest.approx(frac ** 3 * vol, rel=0.1)
    s_data, s_unif = rng.normal(size=200), rng.normal(size=3000)
    for fn in (excess_mass, mass_volume):
        for integration in ("grid", "exact"):
            plain = fn(s_data, s_unif, 7.0, integration=integration)
            weighted = fn(s_data, s_unif, 7.0, integration=integration, uniform_weights=np.ones(3000))
            assert plain.criterion == weighted.criterion
    with pytest.raises(ValueError, match="uniform_weights must hold 3000 positive finite numbers"):
        excess_mass(s_data, s_unif, 7.0, uniform_weights=np.zeros(3000))
