"""IREOS null model of scorings: the paper's i.i.d. uniform weights (App. A.1.1, the default) and the permutation
null odeval used before (an option, ``null="permutation"``)."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.labelfree import IREOSSettings, ireos
from odeval.labelfree.ireos import NULL_MODELS, _permutation_null, _uniform_null


def _data(seed: int = 4):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 1, (40, 2)), [[5, 5], [5.2, 5.1], [-5, 4]]])
    score = np.linalg.norm(X - X.mean(0), axis=1)
    noisy = score + rng.normal(0, 2.0, len(X))
    return X, [score, noisy]


FAST = {"gamma_max": 2.0, "quadrature": "fixed", "n_gamma": 5}


def test_settings_default_is_the_papers_null():
    assert NULL_MODELS == ("uniform", "permutation")
    assert IREOSSettings().null == "uniform"
    assert IREOSSettings(null="permutation").kwargs()["null"] == "permutation"
    with pytest.raises(ValueError, match="null must be 'uniform' or 'permutation'"):
        IREOSSettings(null="shuffle")
    X, sols = _data()
    with pytest.raises(ValueError, match="null must be one of"):
        ireos(X, sols, null="shuffle", **FAST)


def test_uniform_null_draws_are_the_same_for_every_solution_and_seeded():
    A = np.random.default_rng(0).random(50)
    W = np.random.default_rng(1).random((3, 50))
    a = _uniform_null(W, A, 200, np.random.default_rng(7))
    b = _uniform_null(W, A, 200, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[0], a[2])  # the null does not depend on the solution
    # by hand: I = sum_j u_j A_j / sum_j u_j with u ~ U[0, 1]^N
    R = np.random.default_rng(7).random((200, 50))
    np.testing.assert_allclose(a[0], R @ A / R.sum(axis=1), rtol=1e-12)


def test_both_nulls_have_the_same_expected_value_at_mcl_1():
    """App. A.1.1 / Eq. 25: E{I} = mean area under both nulls (exchangeable weights); checked by Monte Carlo."""
    rng = np.random.default_rng(2)
    A = rng.random(80)
    w = np.where(rng.random(80) < 0.3, rng.random(80), 0.0)  # a scoring with many zeros (Gaussian scaling)
    u = _uniform_null(w[None], A, 4000, np.random.default_rng(3))[0]
    p = _permutation_null(w[None], A, 4000, np.random.default_rng(3))[0]
    for draws in (u, p):
        se = draws.std(ddof=1) / np.sqrt(draws.size)
        assert abs(draws.mean() - A.mean()) < 4 * se
    # the spreads differ: uniform weights average over every object, the permuted ones over ~30 % of them
    assert u.std() < p.std()


def test_p_values_at_mcl_1_follow_the_null_and_are_deterministic():
    X, sols = _data()
    uni = ireos(X, sols, p_values=True, n_permutations=300, seed=5, **FAST)
    again = ireos(X, sols, p_values=True, n_permutations=300, seed=5, **FAST)
    perm = ireos(X, sols, p_values=True, n_permutations=300, seed=5, null="permutation", **FAST)
    np.testing.assert_array_equal(uni.p_value, again.p_value)
    np.testing.assert_array_equal(uni.index, perm.index)  # the index does not depend on the null
    np.testing.assert_array_equal(uni.expected, perm.expected)  # Eq. 25 for both
    assert not np.array_equal(uni.std_null, perm.std_null)
    # the uniform null is one distribution for all scorings: one spread for both
    assert uni.std_null[0] == uni.std_null[1]
    assert np.all((uni.p_value > 0) & (uni.p_value <= 1))


def test_monte_carlo_expected_value_for_mcl_above_1_uses_the_null():
    X, sols = _data()
    kw = {"m_cl": 3, "adjust": True, "p_values": True, "max_draws": 12, "seed": 1, **FAST}
    uni = ireos(X, sols, **kw)
    again = ireos(X, sols, **kw)
    perm = ireos(X, sols, null="permutation", **kw)
    np.testing.assert_array_equal(uni.adjusted, again.adjusted)
    np.testing.assert_array_equal(uni.index, perm.index)
    assert np.all(uni.n_draws >= 10) and np.all(perm.n_draws >= 10)
    assert not np.array_equal(uni.expected, perm.expected)
    assert np.all((uni.expected > 0) & (uni.expected < 1))


def test_binary_solutions_keep_the_random_subset_null():
    X, _ = _data()
    good = np.zeros(len(X), bool)
    good[-3:] = True
    kw = {"m_cl": 3, "adjust": True, "max_draws": 12, "seed": 1, **FAST}
    np.testing.assert_array_equal(ireos(X, [good], **kw).expected, ireos(X, [good], null="permutation", **kw).expected)


def test_uniform_null_above_mcl_1_is_drawn_once_for_all_scorings():
    # App. A.1.1's random scorings do not depend on the candidate: one E{I} for every scoring, so the chance
    # adjustment keeps the order of the index (independent draws per candidate could swap close candidates)
    X, sols = _data()
    kw = {"m_cl": 3, "adjust": True, "p_values": True, "max_draws": 12, "seed": 1, **FAST}
    uni = ireos(X, sols, **kw)
    assert np.unique(uni.expected).size == 1 and np.unique(uni.std_null).size == 1
    assert uni.n_draws[0] == uni.n_draws[1]
    np.testing.assert_array_equal(np.argsort(uni.adjusted), np.argsort(uni.index))
    # the first candidate's null is the same draws as in a run of that candidate alone
    alone = ireos(X, sols[:1], **kw)
    assert alone.expected[0] == uni.expected[0]
