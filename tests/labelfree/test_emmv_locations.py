"""EM/MV draws of few distinct points scored on their distinct locations (odeval.labelfree._emmv_locations, issue 26):
the compressed path against the graph and query of all N objects, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.labelfree import _emmv_locations as loc
from odeval.labelfree import emmv_algorithm as ea

PLAN = {"kNN": [1, 5, 40], "kNNW": [3, 40], "LOF": [2, 10, 40], "SimplifiedLOF": [40, 5, 5], "LoOP": [4, 40],
        "LDOF": [40, 3, 12]}


def _dup_data(n=500, seed=0):
    """Binary attributes plus one attribute of four levels: ≈ 32 locations, ≈ 15 copies each; distinct locations
    at equal distances (tie groups of several locations) everywhere."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, 4)).astype(float)
    X[:, 3] = rng.choice([0.1, 0.25, 0.5, 0.9], size=n)
    X[:40] = X[0]  # one location of 40+ copies: in-sample kNN 0, LOF densities +inf for k < 40
    return X


def _plan(methods=PLAN):
    return [(m, get_detector(m), ks) for m, ks in methods.items()]


def _reference(X, U, plan, k_max):
    g = ea._draw_graph(X, k_max)
    data = {m: det.score_all_k(g, ks) for m, det, ks in plan}
    unif = {m: np.empty((len(ks), U.shape[0])) for m, _, ks in plan}
    ea._score_points(g, None, plan, U, k_max, unif, 0)
    return data, unif


def _compare(X, U, plan, k_max):
    comp = loc.compress_draw(X, k_max, plan)
    assert comp is not None and comp.Xloc.shape[0] <= X.shape[0] // loc.MIN_MULTIPLICITY
    data, unif = _reference(X, U, plan, k_max)
    got_data = comp.score_data()
    got_unif = {m: np.empty((len(ks), U.shape[0])) for m, _, ks in plan}
    ea._score_points(None, comp, plan, U, k_max, got_unif, 0)
    for m, _, _ in plan:
        assert np.array_equal(got_data[m], data[m]), f"{m} in-sample"
        assert np.array_equal(got_unif[m], unif[m]), f"{m} novelty"
    return data


@pytest.mark.parametrize("seed", [0, 1])
def test_compressed_scores_equal_uncompressed(seed):
    X = _dup_data(seed=seed)
    rng = np.random.default_rng(10 + seed)
    U = rng.random((1500, 4)) * 1.2 - 0.1
    U[:100] = X[rng.choice(X.shape[0], 100)]  # uniform points on data locations: neighbours at distance 0
    U[100:150] = np.round(U[100:150])  # and on other grid points (ties between locations)
    data = _compare(X, U, _plan(), 40)
    assert np.isinf(data["LOF"]).any()  # the +inf case is exercised


def test_wide_rows_and_continuous_locations():
    """LDOF rows of ≥ 128 members on few locations (summed by location, as odeval.detectors.ldof does) beside rows
    summed pairwise; and locations of a continuous attribute (one location per distance)."""
    X = _dup_data(n=1600, seed=3)
    U = np.random.default_rng(4).random((1000, 4))
    _compare(X, U, _plan({"LDOF": [5, 150], "LOF": [150], "kNNW": [3, 150]}), 150)
    rng = np.random.default_rng(5)
    Xc = rng.random((12, 3))[rng.integers(0, 12, size=300)]
    _compare(Xc, rng.random((800, 3)), _plan({"LOF": [3, 30], "SimplifiedLOF": [7, 30], "LDOF": [30]}), 30)


def test_rule_leaves_other_draws_untouched():
    rng = np.random.default_rng(2)
    plan = _plan({"kNN": [5], "LOF": [5]})
    assert loc.compress_draw(rng.normal(size=(200, 5)), 5, plan) is None  # no duplicates
    few = rng.integers(0, 2, size=(200, 7)).astype(float)  # duplicates, but N < 4 D
    assert 4 * len(np.unique(few, axis=0)) > 200 and loc.compress_draw(few, 5, plan) is None
    X = _dup_data()
    assert loc.compress_draw(X, 5, plan) is not None
    cks = [("LOF", get_detector("LOF", variant="elki-0.7.1-cks"), [5])]
    assert loc.compress_draw(X, 5, cks) is None  # a variant without a compressed form: the full path
    tiny = np.repeat([[0.0, 0.0], [1e-200, 0.0], [1.0, 0.0], [0.0, 1.0]], 30, axis=0)
    assert loc.compress_draw(tiny, 5, plan) is None  # two locations at key 0 (the square underflows): full path


def test_emmv_many_compressed_equals_uncompressed():
    """End to end: draws of 4–5 binary attributes (few distinct points) beside continuous ones: per-draw EM / MV
    and the estimation methods bit-identical."""
    rng = np.random.default_rng(8)
    X = np.hstack([(rng.random((400, 8)) < 0.3).astype(float), rng.normal(size=(400, 2))])
    methods = {"kNN": [3, 30], "kNNW": [30], "LOF": [10, 30], "SimplifiedLOF": [20], "LoOP": [10], "LDOF": [15]}
    kw = {"n_generated": 3000, "seed": 3, "draws": 6, "warn": False}
    seen = []
    real = loc.compress_draw

    def spy(*a, **k):
        out = real(*a, **k)
        seen.append(out is not None)
        return out

    loc.compress_draw = spy
    try:
        on = ea.emmv_many(methods, X, **kw)
    finally:
        loc.compress_draw = real
    off = ea.emmv_many(methods, X, compress=False, **kw)
    assert any(seen) and not all(seen)  # both kinds of draws
    for m in methods:
        for a, b in zip(on[m], off[m], strict=True):
            assert np.array_equal(a.em_draws, b.em_draws, equal_nan=True)
            assert np.array_equal(a.mv_draws, b.mv_draws, equal_nan=True)
            assert a.em_methods == b.em_methods and a.mv_methods == b.mv_methods


def test_emmv_many_without_duplicates_is_bit_identical():
    X = np.random.default_rng(4).normal(size=(150, 10))
    methods = {"LOF": [5, 20], "LDOF": [10]}
    kw = {"n_generated": 2000, "seed": 0, "draws": 3, "warn": False}
    on, off = ea.emmv_many(methods, X, **kw), ea.emmv_many(methods, X, compress=False, **kw)
    for m in methods:
        for a, b in zip(on[m], off[m], strict=True):
            assert np.array_equal(a.em_draws, b.em_draws) and np.array_equal(a.mv_draws, b.mv_draws)
