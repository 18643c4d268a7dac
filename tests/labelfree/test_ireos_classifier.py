"""The separability classifier of IREOS: the authors' reference code's (``classifier="pinned"``, the default) and the
exact KLR optimum (``classifier="optimum"``) -- docs/ireos.md, *The classifier and γ_max*."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from odeval.labelfree import _klr
from odeval.labelfree.ireos import CLASSIFIERS, IREOSSettings, _sqdist_blocks, ireos, ireos_select


def _pinned_by_scipy(K: np.ndarray, c: np.ndarray, A: float, S: float) -> float | None:
    """p(x_0) of the pinned system solved as a root problem: a_i = c_i sigmoid(f_i) for the negatives,
    sum a_i = S, f = A K_.0 - K_.n a + b (index 0 = the positive object); None where scipy's root finder fails
    from its generic start."""
    n = K.shape[0]
    Kn, k0, cn = K[1:, 1:], K[1:, 0], c[1:]

    def fun(z):
        a, b = z[:-1], z[-1]
        s = 1 / (1 + np.exp(-np.clip(-Kn @ a + A * k0 + b, -700, 700)))
        ds = s * (1 - s)
        J = np.eye(n)
        J[:-1, :-1] += (cn * ds)[:, None] * Kn
        J[:-1, -1] = -cn * ds
        J[-1, :-1], J[-1, -1] = 1.0, 0.0
        return np.append(a - cn * s, a.sum() - S), J

    sol = optimize.root(fun, np.append(np.full(n - 1, S / (n - 1)), -np.log(n)), jac=True, method="hybr",
                        options={"xtol": 1e-13})
    if np.abs(fun(sol.x)[0]).max() > 1e-8:
        return None
    a, b = sol.x[:-1], sol.x[-1]
    return float(1 / (1 + np.exp(-(A - K[0, 1:] @ a + b))))


def _node(D2, c, gamma, warm=None, with_b=False):
    """The pinned classifier at gamma, cold or warm-started from (multipliers, b) of another gamma."""
    n = c.size
    out = np.empty(n)
    aw, bw = (np.zeros(n), np.nan) if warm is None else warm
    b, p, _ = _klr._pinned_node(D2, np.empty((n - 1, n - 1)), np.empty((n - 1, n - 1)), c, gamma, aw, bw,
                                np.empty(0), out, _klr.TOL, _klr.MAXIT)
    return (p, out, b) if with_b else (p, out)


@pytest.mark.parametrize("mcl", [1.0, 3.0, 30.0])
def test_pinned_solver_matches_scipy(mcl):
    """The pinned classifier (Newton on its primal form) solves the dual's stationarity conditions (residual
    <= 1e-5 in a; p as scipy's root finder gives it, 1e-7, wherever that converges), from 0 to large gamma, with an
    exact duplicate and a near-duplicate of the positive object in the data."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    X[5] = X[0] + 1e-4
    X[7] = X[0]
    D2 = _sqdist_blocks(X)
    c = np.full(50, 100.0)
    c[1:15] = 100.0 * (1.0 / mcl) ** rng.random(14)
    A = _klr.pinned_multiplier(c)
    assert A == pytest.approx(100.0 - c[1:].mean() / 49)
    S = _klr.pinned_negatives_sum(c)  # the negatives' sum the reference code keeps: = A only for equal costs
    if mcl == 1.0:
        assert S == A
    else:
        assert S == pytest.approx(c[1:].mean() * 48 / 49, rel=1e-15) and S < A
    checked = 0
    for gamma in (0.01, 0.3, 3.0, 30.0, 1e3, 1e6):
        p, a, b = _node(D2, c, gamma, with_b=True)
        K = np.exp(-gamma * D2)
        f = A * K[1:, 0] - K[1:, 1:] @ a[1:] + b
        assert np.abs(a[1:] - c[1:] / (1 + np.exp(-f))).max() < 1e-5  # a_i up to c_i = 100: 1e-7 relative
        assert p == pytest.approx(1 / (1 + np.exp(-(A - K[0, 1:] @ a[1:] + b))), abs=1e-12)
        ref = _pinned_by_scipy(K, c, A, S)
        if ref is not None:
            assert p == pytest.approx(ref, abs=1e-7)
            checked += 1
        assert a[0] == A and a[1:].sum() == pytest.approx(S, rel=1e-12) and (a[1:] > 0).all() and (a < c).all()
        p_warm, _ = _node(D2, c, gamma, warm=_node(D2, c, gamma * 1.5, with_b=True)[1:])  # warm: the same optimum
        assert p_warm == pytest.approx(p, abs=1e-7)
    assert checked >= 4


def test_pinned_gamma_zero_and_saturation():
    """gamma = 0: every decision value is the same, p = A / sum of the negatives' costs; gamma -> infinity: an
    isolated object's p -> 1 (its pinned multiplier A ~ C enters f with K_jj = 1), where the exact optimum
    levels off near 0.9."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    D2 = _sqdist_blocks(X)
    c = np.full(40, 100.0)
    p0, _ = _node(D2, c, 0.0)
    assert p0 == pytest.approx(_klr.pinned_multiplier(c) / c[1:].sum(), rel=1e-14)
    assert _node(D2, c, 1e6)[0] == 1.0
    c[1:20] = 100.0 * 0.1 ** rng.random(19)  # m_cl = 10: the negatives sum to mean(c_neg) (n - 2) / (n - 1) < A
    p0, a0, b0 = _node(D2, c, 0.0, with_b=True)
    assert p0 == pytest.approx(c[1:].mean() * 38 / 39 / c[1:].sum(), rel=1e-14)
    assert a0[0] == _klr.pinned_multiplier(c) and a0[1:].sum() == pytest.approx(_klr.pinned_negatives_sum(c))
    assert 1 / (1 + np.exp(-(a0[0] - a0[1:].sum() + b0))) == pytest.approx(p0, rel=1e-12)  # f = A - S + b


#: The authors' stored separability curves for m_cl = n (homarques/ireos-extension, Datasets/Real/results/cln/<variant>/
#: <candidate>: WBC_withoutdupl_norm_v10 at commit 790b1620f630b4704703f3d56faa87473330c6f3 with candidate 10 =
#: KNN-100, Ionosphere_withoutdupl_norm at f2ecdc0d83747cc3d3a394491b789af29f91aefb), transcribed: (variant,
#: candidate, object) -> p at the grid's gammas 1, 2, 3 (the grid: (gamma_max + 1)^(i / 99) - 1). Also in
#: benchmarks/ireos_authors_curves.py, which prints them beside odeval's.
STORED_CLN = {
    ("WBC_withoutdupl_norm_v10", 1, 0): (0.11813254030017975, 0.2897171166162302, 0.5039159232941253),
    ("WBC_withoutdupl_norm_v10", 1, 3): (0.052718905721847266, 0.13266849403720601, 0.22996329964647094),
    ("WBC_withoutdupl_norm_v10", 10, 0): (0.584887055729819, 0.8919870462954523, 0.9668407398692279),
    ("WBC_withoutdupl_norm_v10", 10, 3): (0.1717329501806608, 0.4988770150079752, 0.73993970522033),
    ("Ionosphere_withoutdupl_norm", 2, 4): (0.03516865575763605, 0.13465114046226617, 0.3259951071897364),
    ("Ionosphere_withoutdupl_norm", 6, 4): (0.032934650603189806, 0.121620175176392, 0.291021675050068),
}
CLN = {"WBC_withoutdupl_norm_v10": (10, 7.739319135126038), "Ionosphere_withoutdupl_norm": (126, 3.1868825985340905)}


def test_pinned_classifier_reproduces_the_authors_stored_m_cl_n_curves(shared_datasets):
    """With m_cl = n the reference code's negatives sum to mean(c_neg) (n - 2) / (n - 1), not to the positive's A
    (the costs C (1/m_cl)^w differ): odeval's pinned classifier keeps that sum and lands within 1.5e-3 of every
    transcribed stored p; with the sum A (the dual's equality constraint) it is up to 0.17 off (docs/ireos.md,
    *The stored curves*)."""
    folder = shared_datasets / "ireos_authors"
    if not folder.is_dir():
        pytest.skip(f"{folder} not present (the IREOS authors' candidates, ../shared/datasets/ireos_authors)")
    worst_ref = worst_equal = 0.0
    for (variant, cand, j), stored in STORED_CLN.items():
        m_cl, gamma_max = CLN[variant]
        X = np.loadtxt(folder / variant / "data.txt.gz", ndmin=2)
        name = "alt_790b162_w_10_KNN-100.txt.gz" if (variant.startswith("WBC") and cand == 10) else f"w_{cand}.txt.gz"
        w = np.loadtxt(folder / variant / name)
        n = X.shape[0]
        train = np.r_[j, np.arange(j), np.arange(j + 1, n)].astype(np.int64)
        c = 100.0 * (1.0 / m_cl) ** w[train]
        c[0] = 100.0
        D2 = _klr._train_sqdist(X, train)
        gammas = np.exp(np.arange(1, 4) * np.log(gamma_max + 1.0) / 99) - 1.0
        for g, p_stored in zip(gammas, stored, strict=True):
            p, _ = _node(D2, c, float(g))
            worst_ref = max(worst_ref, abs(p - p_stored))
            A = _klr.pinned_multiplier(c)
            Kn, k0, M, a = np.empty((n - 1, n - 1)), np.empty(n - 1), np.empty((n - 1, n - 1)), np.empty(n)
            _klr.pinned_kernel(D2, float(g), Kn, k0)
            b0 = _klr._pinned_diagonal_start(k0, c, A, A, a)  # the negatives summing to A instead
            _, fj, _ = _klr._pinned_newton(Kn, k0, c, a, A, b0, _klr.TOL, _klr.MAXIT, M, np.empty(0))
            worst_equal = max(worst_equal, abs(1 / (1 + np.exp(-fj)) - p_stored))
    assert worst_ref < 1.5e-3
    assert worst_equal > 0.05


def _duplicate_fixture():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (40, 2)), [[5.0, 5.0], [-5.0, 5.0], [5.0, -5.0], [0.5, 0.5], [0.5, 0.5]]])
    three = np.zeros(X.shape[0], bool)
    three[[40, 41, 42]] = True
    with_dup = three.copy()
    with_dup[43] = True  # object 43 has an exact duplicate (44)
    return X, three, with_dup


def test_exact_duplicates_under_the_two_classifiers():
    """Where the two rules differ: the exact optimum never separates an object with an exact duplicate (p tends
    to 0.5 from below), so it is left out of the γ_max search; the reference code's pinned classifier separates
    it at moderate γ (p ≈ 0.8 at γ = 10 here), so the authors' search keeps it and stops there."""
    X, three, with_dup = _duplicate_fixture()
    pinned = ireos(X, [with_dup, three])
    assert pinned.classifier == "pinned" and IREOSSettings().classifier == "pinned"
    assert pinned.gamma_max_duplicates == [] and pinned.unseparated == []
    assert pinned.gamma_max > 100 * ireos(X, [three]).gamma_max  # the duplicate decides γ_max ...
    assert pinned.gamma_max < 10  # ... at a moderate γ, not at the cap (~1e12) of the search
    assert ireos_select(X, [with_dup, three]).gamma_max == pinned.gamma_max
    optimum = ireos(X, [with_dup, three], classifier="optimum")
    assert optimum.gamma_max_duplicates == [43] and optimum.unseparated == []
    assert optimum.gamma_max == ireos(X, [three], classifier="optimum").gamma_max
    assert ireos_select(X, [with_dup, three], classifier="optimum").gamma_max == optimum.gamma_max
    # the optimum would never separate the duplicate: its p stays below 0.5 where the pinned p is 0.8
    D2 = _sqdist_blocks(X)
    order = np.r_[43, np.delete(np.arange(X.shape[0]), 43)]
    D2o = np.ascontiguousarray(D2[np.ix_(order, order)])
    c = np.full(X.shape[0], 100.0)
    assert _node(D2o, c, 10.0)[0] > 0.75
    _, _, p_opt, _ = _klr.fit_shared(D2, np.array([1e6]), np.array([43]), c[None, :], np.zeros((1, c.size)),
                                     np.array([np.nan]), _klr.TOL, _klr.MAXIT)
    assert p_opt[0] < 0.5


def test_classifier_setting_and_errors():
    assert CLASSIFIERS == ("pinned", "optimum")
    assert IREOSSettings.problem("classifier", "optimum") is None
    assert IREOSSettings.problem("classifier", "exact") == "must be 'pinned' or 'optimum'"
    with pytest.raises(ValueError, match="IREOS setting classifier must be 'pinned' or 'optimum'"):
        IREOSSettings(classifier="svm")
    X, three, _ = _duplicate_fixture()
    with pytest.raises(ValueError, match="classifier must be one of"):
        ireos(X, [three], classifier="svm")


def test_study_task_id_changes_with_the_classifier(tmp_path):
    """The default classifier enters a study's IREOS options (so the task id, which hashes them, is new and an
    older store is recomputed, not mixed); ``classifier = "optimum"`` keeps the options, and so the ids, that
    stores of the exact optimum hold."""
    from types import SimpleNamespace

    from tests.bench.conftest import make_npz

    from odeval.bench import StudyError, study_from_dict
    from odeval.bench.variant_step import ireos_settings, plan_variant_tasks

    make_npz(tmp_path / "va.npz", 20, 2, 2, seed=1)
    raw = {"study": {"k": "2..4"}, "datasets": [{"glob": str(tmp_path / "*.npz")}], "methods": [{"name": "kNN"}],
           "internal": ["ireos"]}
    default = study_from_dict(raw, source="t")
    old = study_from_dict({**raw, "internal_options": {"classifier": "optimum"}}, source="t")
    assert default.variant_step.ireos["classifier"] == "pinned" and "classifier" not in old.variant_step.ireos
    ref = SimpleNamespace(name="va")
    (t_new,), (t_old,) = (plan_variant_tasks(s, "0" * 64, ref) for s in (default, old))
    assert t_new.task_id != t_old.task_id
    assert ireos_settings(t_new.options).classifier == "pinned"
    assert ireos_settings(t_old.options).classifier == "optimum"
    with pytest.raises(StudyError, match="classifier must be 'pinned' or 'optimum'"):
        study_from_dict({**raw, "internal_options": {"classifier": "svm"}}, source="t")


def test_selectors_run_the_pinned_classifier():
    """Since 2026-11-27 the ireos-* selectors, the probe and the guarded rule run ireos()'s default classifier
    (pinned); their settings enter the selection task ids (tests/bench/test_variant_step.py), so picks stored
    with the optimum are recomputed, not mixed."""
    import inspect

    from odeval.labelfree import GuardedSettings
    from odeval.labelfree.ireos import gamma_max_exceeds
    from odeval.labelfree.selection import IREOS_SELECTOR_SETTINGS

    assert IREOS_SELECTOR_SETTINGS.classifier == IREOSSettings().classifier == "pinned"
    assert inspect.signature(gamma_max_exceeds).parameters["classifier"].default == "pinned"
    assert GuardedSettings().classifier == "pinned"


def test_pinned_cold_start_next_to_a_cheap_duplicate():
    """An exact duplicate of the positive with a small cost (m_cl > 1): the cold start puts its multiplier within
    rounding of its cost (the positive's pull A K_ij ~ C >> c_i); the classifier still solves the stationarity
    conditions and agrees with scipy (this start, rescaled to the sum S, once left a multiplier above its cost and
    every p NaN on Shuttle's exact index at m_cl = sqrt(5 % N))."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 2))
    X[1] = X[0]
    D2 = _sqdist_blocks(X)
    c = np.full(40, 100.0)
    c[1] = 1.0
    c[2:12] = 100.0 * 0.05 ** rng.random(10)
    A, S = _klr.pinned_multiplier(c), _klr.pinned_negatives_sum(c)
    for gamma in (0.3, 3.0, 30.0, 1e3):
        p, a, b = _node(D2, c, gamma, with_b=True)
        assert np.isfinite(p) and np.isfinite(a).all() and np.isfinite(b)
        K = np.exp(-gamma * D2)
        f = A * K[1:, 0] - K[1:, 1:] @ a[1:] + b
        assert np.abs(a[1:] - c[1:] / (1 + np.exp(-f))).max() < 1e-5
        ref = _pinned_by_scipy(K, c, A, S)
        if ref is not None:
            assert p == pytest.approx(ref, abs=1e-7)


def _objective(K, y, c, alpha, b, o, beta):
    """J(alpha, b) of _klr._newton (offset o, linear term beta b)."""
    f = o + K @ alpha + b
    return float(0.5 * alpha @ (K @ alpha) + np.sum(c * np.logaddexp(0.0, -y * f)) + beta * b)


@pytest.mark.parametrize("pinned", [False, True])
def test_subspace_start_descends_and_keeps_the_optimum(pinned):
    """The warm start in the span of two solved gammas' solutions (_klr._subspace_start) never raises the
    objective above the plain warm start's, survives parallel and empty second directions, and the Newton method
    from it ends at the same optimum (decision values within the solver's tolerance)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(60, 3))
    D2 = _sqdist_blocks(X)
    n = 60
    c = 100.0 * 0.1 ** rng.random(n)
    c[0] = 100.0
    y = -np.ones(n)
    y[0] = 1.0
    if pinned:  # the negatives' problem: offset A K_.0, beta = -S
        A, S = _klr.pinned_multiplier(c), _klr.pinned_negatives_sum(c)
        yy, cc, beta = y[1:], c[1:], -S

        def parts(gamma):
            K = np.exp(-gamma * D2)
            return K[1:, 1:], A * K[1:, 0]
    else:
        yy, cc, beta = y, c, 0.0

        def parts(gamma):
            return np.exp(-gamma * D2), np.zeros(n)

    def solve(gamma, alpha, b):
        K, o = parts(gamma)
        M = np.empty(K.shape)
        f, a, b, _ = _klr._newton(K, yy, cc, alpha.copy(), b, _klr.TOL, _klr.MAXIT, M, o, beta)
        return f, a, b

    m = yy.size
    _, a_hi, b_hi = solve(2.0, np.zeros(m), 0.0)
    _, a_lo, _ = solve(0.5, a_hi, b_hi)
    K, o = parts(1.0)
    f_ref, _, _ = solve(1.0, a_hi, b_hi)
    plain = _objective(K, yy, cc, a_hi, b_hi, o, beta)
    for second in (a_lo, 3.0 * a_hi, np.empty(0)):
        alpha = a_hi.copy()
        b = _klr._subspace_start(K, yy, cc, alpha, second, b_hi, o, beta)
        assert np.isfinite(b) and np.isfinite(alpha).all()
        assert _objective(K, yy, cc, alpha, b, o, beta) <= plain
        f, _, _ = solve(1.0, alpha, b)
        assert np.abs(f - f_ref).max() < 1e-6
    one = a_hi.copy()
    b1 = _klr._subspace_start(K, yy, cc, one, np.empty(0), b_hi, o, beta)
    two = a_hi.copy()
    b2 = _klr._subspace_start(K, yy, cc, two, a_lo, b_hi, o, beta)
    assert _objective(K, yy, cc, two, b2, o, beta) <= _objective(K, yy, cc, one, b1, o, beta) + 1e-9
