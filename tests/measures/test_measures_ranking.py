"""Tests of the external measures: brute force over tie orders, scikit-learn agreement, edge cases, validation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from odeval import measures as M

# ---------------------------------------------------------------------------------------------------------------------
# Strategies and brute-force references
# ---------------------------------------------------------------------------------------------------------------------


@st.composite
def labelled_scores(draw, min_size=2, max_size=60, tie_levels=None):
    """(labels, scores) with both classes present; tie_levels small => heavy ties."""
    n = draw(st.integers(min_size, max_size))
    labels = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    i, j = draw(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda t: t[0] != t[1]))
    labels[i], labels[j] = True, False
    levels = tie_levels if tie_levels is not None else draw(st.sampled_from([1, 2, 3, 5, 10, 1000]))
    kind = draw(st.sampled_from(["int", "float"]))
    if kind == "int":
        scores = draw(st.lists(st.integers(-levels, levels), min_size=n, max_size=n))
        s = np.array(scores, dtype=np.float64)
    else:
        scores = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), min_size=n, max_size=n))
        s = np.array(scores, dtype=np.float64)
        if levels < 1000:  # also floats with ties
            s = np.round(s / 1e6 * levels)
    return np.array(labels, dtype=bool), s


def consistent_orders(scores):
    """All strict rankings (permutations) consistent with descending scores, i.e. all tie-breakings."""
    scores = np.asarray(scores)
    values = sorted(set(scores.tolist()), reverse=True)
    groups = [list(np.flatnonzero(scores == v)) for v in values]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [i for part in parts for i in part]


def strict_ap(y, order):
    hits, total = 0, 0.0
    for r, i in enumerate(order, start=1):
        if y[i]:
            hits += 1
            total += hits / r
    return total / y.sum()


def elki_ap_naive(y, s):
    total = 0.0
    for o in np.flatnonzero(y):
        ge = s >= s[o]
        total += (y & ge).sum() / ge.sum()
    return total / y.sum()


def auc_naive(y, s):
    pos, neg = s[y], s[~y]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return wins / (pos.size * neg.size)


TINY = labelled_scores(min_size=2, max_size=7, tie_levels=2)
ANY = labelled_scores()
FAST = settings(max_examples=100, deadline=None)


# ---------------------------------------------------------------------------------------------------------------------
# Agreement with scikit-learn
# ---------------------------------------------------------------------------------------------------------------------


@FAST
@given(ANY)
def test_roc_auc_equals_sklearn(data):
    y, s = data
    assert M.roc_auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    assert M.roc_auc(y, s) == pytest.approx(auc_naive(y, s), abs=1e-12)
    assert M.adjusted_roc_auc(y, s) == pytest.approx(2 * skm.roc_auc_score(y, s) - 1, abs=1e-12)


@FAST
@given(ANY)
def test_avpr_and_elki_ap_equal_sklearn_average_precision(data):
    """sklearn's AP groups ties exactly as ELKI's rule does: both give P_g/T_g to every outlier of group g."""
    y, s = data
    ref = skm.average_precision_score(y, s)
    assert M.avpr(y, s) == pytest.approx(ref, abs=1e-12)
    assert M.average_precision(y, s) == pytest.approx(ref, abs=1e-12)
    assert M.average_precision(y, s) == pytest.approx(elki_ap_naive(y, s), abs=1e-12)


@FAST
@given(labelled_scores(tie_levels=10**9))
def test_all_ap_variants_agree_without_ties(data):
    y, s = data
    s = s + np.arange(s.size) * 1e-3  # distinct
    if np.unique(s).size < s.size:
        return
    ref = skm.average_precision_score(y, s)
    assert M.average_precision(y, s, ties="expected") == pytest.approx(ref, abs=1e-12)
    order = np.argsort(-s)
    assert strict_ap(y, order) == pytest.approx(ref, abs=1e-12)


@FAST
@given(ANY)
def test_curves_equal_sklearn(data):
    y, s = data
    fpr, tpr, thr = M.roc_curve(y, s)
    sfpr, stpr, sthr = skm.roc_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(fpr, sfpr, rtol=0, atol=1e-15)
    np.testing.assert_allclose(tpr, stpr, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(thr, sthr)
    p, r, t = M.precision_recall_curve(y, s)
    sp, sr, st_ = skm.precision_recall_curve(y, s, drop_intermediate=False)
    np.testing.assert_allclose(p, sp, rtol=0, atol=1e-15)
    np.testing.assert_allclose(r, sr, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(t, st_)


# ---------------------------------------------------------------------------------------------------------------------
# Expected values under random tie order: brute force over all tie-breakings
# ---------------------------------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(TINY)
def test_expected_ap_equals_mean_over_tie_orders(data):
    y, s = data
    orders = list(consistent_orders(s))
    brute = np.mean([strict_ap(y, o) for o in orders])
    assert M.average_precision(y, s, ties="expected") == pytest.approx(brute, abs=1e-12)
    assert M.adjusted_average_precision(y, s, ties="expected") == pytest.approx(
        (brute - y.mean()) / (1 - y.mean()), abs=1e-12
    )


@settings(max_examples=200, deadline=None)
@given(TINY, st.integers(1, 7))
def test_expected_p_at_n_and_counts_equal_mean_over_tie_orders(data, n):
    y, s = data
    n = min(n, y.size)
    orders = list(consistent_orders(s))
    hits = np.array([y[list(o[:n])].sum() for o in orders], dtype=float)
    assert M.precision_at_n(y, s, n) == pytest.approx(hits.mean() / n, abs=1e-12)
    prf = M.precision_recall_f1_at_count(y, s, n)
    assert prf.precision == pytest.approx(np.mean(hits / n), abs=1e-12)
    assert prf.recall == pytest.approx(np.mean(hits / y.sum()), abs=1e-12)
    assert prf.f1 == pytest.approx(np.mean(2 * hits / (n + y.sum())), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(TINY)
def test_average_rank_is_mean_over_tie_orders(data):
    y, s = data
    outliers = np.flatnonzero(y)
    ranks = []
    for o in consistent_orders(s):
        pos = {obj: r for r, obj in enumerate(o, start=1)}
        ranks.append([pos[i] for i in outliers])
    ranks = np.array(ranks)
    np.testing.assert_allclose(M.outlier_ranks(y, s), ranks.mean(axis=0), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(M.outlier_ranks(y, s, ties="min"), ranks.min(axis=0))
    np.testing.assert_array_equal(M.outlier_ranks(y, s, ties="max"), ranks.max(axis=0))


def test_expected_ap_closed_form_hand_example():
    # one outlier first, then a group {outlier, inlier, inlier}: its outlier is at position 2, 3 or 4
    y = np.array([1, 1, 0, 0, 0], bool)
    s = np.array([5, 3, 3, 3, 0.0])
    assert M.average_precision(y, s, ties="expected") == pytest.approx((1 + (2 / 2 + 2 / 3 + 2 / 4) / 3) / 2)
    assert M.average_precision(y, s) == pytest.approx((1 + 2 / 4) / 2)


# ---------------------------------------------------------------------------------------------------------------------
# Definitions (ELKI 0.7.1 rules) against naive implementations
# ---------------------------------------------------------------------------------------------------------------------


@FAST
@given(ANY)
def test_max_f1_over_group_ends(data):
    y, s = data
    best = max(M.precision_recall_f1_at_threshold(y, s, v).f1 for v in np.unique(s))
    assert M.max_f1(y, s) == pytest.approx(best, abs=1e-12)
    r = y.mean()
    assert M.adjusted_max_f1(y, s) == pytest.approx((best - r) / (1 - r), abs=1e-12)


@FAST
@given(ANY)
def test_threshold_counts(data):
    y, s = data
    thr = float(np.median(s))
    pred = s >= thr
    tp = (pred & y).sum()
    p, r, f = M.precision_recall_f1_at_threshold(y, s, thr)
    assert p == pytest.approx(tp / pred.sum())
    assert r == pytest.approx(tp / y.sum())
    assert f == pytest.approx(2 * p * r / (p + r) if tp else 0.0)
    assert f == pytest.approx(skm.f1_score(y, pred, zero_division=0), abs=1e-12)


@FAST
@given(ANY, st.integers(1, 60))
def test_evaluate_matches_single_functions(data, n):
    y, s = data
    n = min(n, y.size - 1)
    res = M.evaluate(y, s, n=n)
    assert tuple(res) == M.MEASURES + M.MEASURES_AT_N
    assert all(isinstance(v, float) for v in res.values())
    assert res["roc_auc"] == M.roc_auc(y, s)
    assert res["average_precision"] == M.average_precision(y, s)
    assert res["r_precision"] == M.r_precision(y, s)
    assert res["max_f1"] == M.max_f1(y, s)
    assert res["adjusted_roc_auc"] == M.adjusted_roc_auc(y, s)
    assert res["adjusted_average_precision"] == M.adjusted_average_precision(y, s)
    assert res["adjusted_r_precision"] == M.adjusted_r_precision(y, s)
    assert res["adjusted_max_f1"] == M.adjusted_max_f1(y, s)
    assert res["precision_at_n"] == M.precision_at_n(y, s, n)
    assert res["adjusted_precision_at_n"] == M.adjusted_precision_at_n(y, s, n)
    assert tuple(M.evaluate(y, s)) == M.MEASURES


@FAST
@given(ANY, st.integers(1, 60))
def test_adjusted_precision_at_n_campos(data, n):
    y, s = data
    n = min(n, y.size - 1)
    n_out, N = int(y.sum()), y.size
    maximum = 1.0 if n <= n_out else n_out / n
    expected = (M.precision_at_n(y, s, n) - n_out / N) / (maximum - n_out / N)
    assert M.adjusted_precision_at_n(y, s, n) == pytest.approx(expected, abs=1e-12)


def test_perfect_and_inverse_rankings():
    y = np.array([0, 1, 0, 0, 1, 0, 0, 0], bool)
    s = y.astype(float)
    res = M.evaluate(y, s, n=5)
    for name in M.MEASURES:
        assert res[name] == pytest.approx(1.0), name
    assert res["adjusted_precision_at_n"] == pytest.approx(1.0)  # n > |O|: maximum is |O|/n
    assert res["precision_at_n"] == pytest.approx(2 / 5)
    worst = M.evaluate(y, -s)
    assert worst["roc_auc"] == 0.0
    assert worst["adjusted_roc_auc"] == -1.0
    assert worst["r_precision"] == 0.0


def test_constant_scores():
    y = np.array([1, 0, 0, 1, 0], bool)
    res = M.evaluate(y, np.full(5, 3.0), n=1)
    assert res["roc_auc"] == 0.5
    assert res["adjusted_roc_auc"] == 0.0
    assert res["average_precision"] == pytest.approx(0.4)
    assert res["adjusted_average_precision"] == pytest.approx(0.0)
    assert res["r_precision"] == pytest.approx(0.4)
    assert res["precision_at_n"] == pytest.approx(0.4)
    assert res["max_f1"] == pytest.approx(2 * 2 / 7)
    # the expected AP of a random order is not |O|/N (it is larger for small N)
    brute = np.mean([strict_ap(y, o) for o in itertools.permutations(range(5))])
    assert M.average_precision(y, np.zeros(5), ties="expected") == pytest.approx(brute, abs=1e-12)
    np.testing.assert_array_equal(M.outlier_ranks(y, np.zeros(5)), [3.0, 3.0])


def test_signed_zero_is_one_tie_group():
    y = np.array([1, 0, 0], bool)
    assert M.roc_auc(y, [0.0, -0.0, -1.0]) == 0.75
    np.testing.assert_array_equal(M.outlier_ranks(y, [-0.0, 0.0, 0.0]), [2.0])


def test_input_forms():
    ref = M.evaluate([True, False, False], [0.3, 0.2, 0.1])
    assert M.evaluate(np.array([1, 0, 0]), np.array([3, 2, 1])) == ref
    assert M.evaluate([1.0, 0.0, 0.0], [0.3, 0.2, 0.1]) == ref
    assert M.roc_auc([True, False], [True, False]) == 1.0


def test_single_outlier_and_large_ints():
    y = np.zeros(1000, bool)
    y[10] = True
    s = np.arange(1000, dtype=float)
    assert M.roc_auc(y, s) == pytest.approx(10 / 999)
    assert M.outlier_ranks(y, s)[0] == 990
    assert M.r_precision(y, s) == 0.0


def test_large_input_exact_auc():
    rng = np.random.default_rng(0)
    y = rng.random(200_000) < 0.05
    s = np.round(rng.normal(size=y.size) + y, 1)
    assert M.roc_auc(y, s) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-12)
    assert M.average_precision(y, s) == pytest.approx(skm.average_precision_score(y, s), abs=1e-12)
    assert M.average_precision(y, s, ties="expected") > M.average_precision(y, s) - 0.05


# ---------------------------------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "scores", "match"),
    [
        ([1, 0, 0], [0.1, np.nan, 0.3], "NaN or infinite values at position.*1"),
        ([1, 0, 0], [0.1, 0.2, np.inf], "NaN or infinite values at position.*2"),
        ([1, 0, 0], [0.1, 0.2], "differ in length"),
        ([1, 0, 2], [0.1, 0.2, 0.3], "binary"),
        ([0, 0, 0], [0.1, 0.2, 0.3], "no outlier"),
        ([1, 1, 1], [0.1, 0.2, 0.3], "no inlier"),
        (["a", "b"], [0.1, 0.2], "bool or 0/1"),
        ([[1, 0]], [[0.1, 0.2]], "1-dimensional"),
    ],
)
def test_bad_input(labels, scores, match):
    funcs = [M.evaluate, M.roc_auc, M.average_precision, M.r_precision, M.max_f1, M.avpr, M.outlier_ranks]
    for f in funcs:
        with pytest.raises(ValueError, match=match):
            f(labels, scores)


def test_bad_parameters():
    y, s = [1, 0, 0, 1], [0.4, 0.3, 0.2, 0.1]
    with pytest.raises(ValueError, match="n=0 is out of range"):
        M.precision_at_n(y, s, 0)
    with pytest.raises(ValueError, match="n=5 is out of range"):
        M.evaluate(y, s, n=5)
    with pytest.raises(ValueError, match="integer"):
        M.precision_at_n(y, s, 1.5)
    with pytest.raises(ValueError, match="undefined for n = N"):
        M.adjusted_precision_at_n(y, s, 4)
    with pytest.raises(ValueError, match="m=9"):
        M.precision_recall_f1_at_count(y, s, 9)
    with pytest.raises(ValueError, match="ties must be"):
        M.average_precision(y, s, ties="random")
    with pytest.raises(ValueError, match="ties must be"):
        M.outlier_ranks(y, s, ties="dense")
    with pytest.raises(ValueError, match="threshold is NaN"):
        M.precision_recall_f1_at_threshold(y, s, math.nan)
    with pytest.raises(ValueError, match="undefined"):
        M.adjust_for_chance(0.5, 0.5, 0.5)
    assert M.precision_at_n(y, s, 4) == 0.5  # n = N is a valid P@n


def test_nothing_predicted_above_max():
    assert M.precision_recall_f1_at_threshold([1, 0], [0.5, 0.1], 1.0) == (0.0, 0.0, 0.0)


def test_evaluate_many_rows():
    rng = np.random.default_rng(1)
    y = rng.random(50) < 0.2
    y[:2] = (True, False)
    S = np.round(rng.normal(size=(4, 50)), 1)
    many = M.evaluate_many(y, S, n=7)
    assert tuple(many) == M.MEASURES + M.MEASURES_AT_N
    for r in range(4):
        assert {k: v[r] for k, v in many.items()} == M.evaluate(y, S[r], n=7)
    S[2, 5] = np.nan
    with pytest.raises(ValueError, match=r"scores \(row 2\) contain NaN .* position\(s\) 5"):
        M.evaluate_many(y, S)
    with pytest.raises(ValueError, match="2-dimensional"):
        M.evaluate_many(y, S[0])
    with pytest.raises(ValueError, match="differ in length"):
        M.evaluate_many(y[:-1], S)
