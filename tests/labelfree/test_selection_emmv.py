"""The em / mv selectors of odeval.labelfree.selection against direct odeval.labelfree.emmv calls."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from odeval.labelfree import emmv, emmv_all_k
from odeval.labelfree.emmv_algorithm import KNNQueryDetector
from odeval.labelfree.selection import default_selectors, emmv_criteria, get_selector, run_selector


def _data(d: int = 2) -> np.ndarray:
    rng = np.random.default_rng(7)
    X = np.vstack([rng.normal(size=(60, 2)), rng.uniform(-5, 5, size=(6, 2))])
    return np.hstack([X, rng.normal(size=(66, d - 2))]) if d > 2 else X


NAMES = ("kNN-005", "LOF-002", "kNNW-010", "ODIN-005")


def test_em_mv_selectors_match_direct_emmv_and_report_exclusions():
    X = _data()
    S = np.random.default_rng(0).normal(size=(len(NAMES), X.shape[0]))  # stored scores are not used
    direct = [emmv(KNNQueryDetector(m, k), X, seed=4) for m, k in (("kNN", 5), ("LOF", 2), ("kNNW", 10))]
    em_direct = np.array([r.em for r in direct])
    mv_direct = np.array([r.mv for r in direct])
    with pytest.warns(RuntimeWarning, match=r"ODIN-005 \(ODIN has no novelty form"):
        em = run_selector("em", S, NAMES, X=X, seed=4)
    with pytest.warns(RuntimeWarning, match="chose among 3 of 4 candidates"):
        mv = run_selector("mv", S, NAMES, X=X, seed=4)
    np.testing.assert_array_equal(em.criterion[:3], em_direct)
    np.testing.assert_array_equal(mv.criterion[:3], -mv_direct)  # mv reports −MV: higher = preferred
    assert np.isnan(em.criterion[3]) and np.isnan(mv.criterion[3])
    assert em.index == int(np.argmax(em_direct)) and mv.index == int(np.argmin(mv_direct))
    assert em.excluded == mv.excluded == ((3, "ODIN has no novelty form (cannot score the uniform points EM/MV "
                                               "need)"),)
    assert "ODIN-005" in em.note
    assert get_selector("em").needs_data and "em" not in default_selectors() and "mv" not in default_selectors()


def test_em_mv_selectors_bit_identical_and_seeded():
    X = _data()
    S = np.zeros((3, X.shape[0]))
    names = NAMES[:3]
    a = run_selector("em", S, names, X=X, seed=1)
    b = run_selector("em", S, names, X=X, seed=1)  # recomputed: nothing is cached between calls
    assert a.index == b.index and np.array_equal(a.criterion, b.criterion) and not a.excluded
    c = run_selector("em", S, names, X=X, seed=2)
    assert not np.array_equal(a.criterion, c.criterion)  # the uniform sample depends on the seed


def test_emmv_criteria_subsamples_like_emmv_and_excludes_bad_names():
    X = _data(10)
    names = ("LOF-003", "kNN-004", "kNN-070", "kNN[manhattan]-005", "whatever", "Nope-005")
    kw = dict(draws=3, features=4, n_generated=3000)
    em, mv, excluded = emmv_criteria(names, X, seed=5, **kw)
    for i, (m, k) in enumerate((("LOF", 3), ("kNN", 4))):
        r = emmv(KNNQueryDetector(m, k), X, seed=5, **kw)
        assert r.subsampled and em[i] == r.em and mv[i] == r.mv
    why = dict(excluded)
    assert set(why) == {2, 3, 4, 5} and np.isnan(em[2:]).all()
    assert "k = 70 outside [1, 65]" in why[2] and "metric 'manhattan'" in why[3]
    assert "does not follow" in why[4] and "unknown method 'Nope'" in why[5]


def test_emmv_criteria_rebuilds_candidates_with_their_parameters():
    """A key (or name) with parameters is refitted with them (EM/MV refused such names before the scoring key)."""
    from odeval._key import ScoringKey

    X = _data(10)
    kw = dict(draws=2, features=4, n_generated=2000)
    keys = [ScoringKey.make("LoOP", {"lam": 3.0}, metric="euclidean", k=4), ScoringKey.make("LoOP", k=4)]
    em, mv, excluded = emmv_criteria(keys, X, seed=2, **kw)
    assert not excluded
    for i, lam in enumerate((3.0, 1.0)):
        r = emmv(KNNQueryDetector("LoOP", 4, lam=lam), X, seed=2, **kw)
        assert em[i] == r.em and mv[i] == r.mv
    by_name = emmv_criteria(["LoOP(lam=3.0)-004", "LoOP-004"], X, seed=2, **kw)
    np.testing.assert_array_equal(by_name[0], em)
    bad = emmv_criteria(["LoOP(lam=-1)-004"], X, seed=2, **kw)[2]
    assert bad and bad[0][0] == 0


def test_em_and_mv_share_their_fits_in_one_run_and_take_settings():
    from odeval.labelfree import EMMVSettings
    from odeval.labelfree.selection import run_selectors

    X = _data()
    S = np.zeros((3, X.shape[0]))
    coarse = EMMVSettings(draws=2, n_generated=2000)
    out = run_selectors(S, NAMES[:3], ["em", "mv"], X=X, seed=1, settings={"em": coarse, "mv": coarse})
    em, mv, _ = emmv_criteria(NAMES[:3], X, seed=1, **coarse.kwargs())
    np.testing.assert_array_equal(out["em"].criterion, em)
    np.testing.assert_array_equal(out["mv"].criterion, -mv)
    assert get_selector("em").settings == EMMVSettings()
    with pytest.raises(ValueError, match="takes EMMVSettings"):
        run_selector("em", S, NAMES[:3], X=X, settings={"draws": 2})


def test_emmv_all_k_equals_emmv_per_k():
    X = _data(10)
    res = emmv_all_k("kNN", X, [2, 6], draws=4, n_generated=2000, seed=3)
    for k, r in zip((2, 6), res, strict=True):
        d = emmv(KNNQueryDetector("kNN", k), X, draws=4, n_generated=2000, seed=3)
        assert np.array_equal(r.em_draws, d.em_draws) and np.array_equal(r.mv_draws, d.mv_draws)
        assert r.detector == d.detector
    with pytest.raises(ValueError, match="cannot score points outside"):
        emmv_all_k("ODIN", X, [3])
    with pytest.raises(ValueError, match=r"k must lie in \[1, 65\]"):
        emmv_all_k("kNN", X, [66])


def test_no_evaluable_candidate_is_a_clear_error():
    X = _data()
    with warnings.catch_warnings(), pytest.raises(ValueError, match="none of the 2 candidates can be evaluated by EM"):
        run_selector("em", np.zeros((2, X.shape[0])), ["ODIN-005", "FastABOD-010"], X=X)


def test_emmv_all_k_uniform_blocks_change_nothing(monkeypatch):
    """The uniform sample is queried and scored in blocks; every novelty method gives the same bits for any block."""
    from odeval.detectors import novelty_methods
    from odeval.labelfree import emmv_algorithm

    X = np.random.default_rng(7).normal(size=(50, 4))
    whole = {m: emmv_all_k(m, X, [3, 7], n_generated=1500, seed=1) for m in novelty_methods()}
    monkeypatch.setattr(emmv_algorithm, "UNIFORM_CHUNK", 400)
    for m in novelty_methods():
        blocks = emmv_all_k(m, X, [3, 7], n_generated=1500, seed=1)
        for a, b in zip(whole[m], blocks, strict=True):
            assert a.em_curve is not None
            np.testing.assert_array_equal(a.em_curve.em, b.em_curve.em)
            np.testing.assert_array_equal(a.mv_curve.mv, b.mv_curve.mv)
            assert (a.em, a.mv) == (b.em, b.mv) or (np.isnan(a.em) and np.isnan(b.em))


def test_emmv_many_equals_emmv_all_k_per_method():
    """Sharing the draws' graph and query between methods changes nothing (different k ranges per method)."""
    from odeval.labelfree import emmv_many

    X = np.random.default_rng(5).normal(size=(60, 10))  # d > 8: feature sub-sampling
    plan = {"kNN": [2, 9], "LOF": [4], "LDOF": [3, 12], "LoOP": [5]}
    many = emmv_many(plan, X, draws=3, n_generated=1500, seed=2)
    assert list(many) == list(plan)
    for m, ks in plan.items():
        one = emmv_all_k(m, X, ks, draws=3, n_generated=1500, seed=2)
        assert [(r.em, r.mv) for r in many[m]] == [(r.em, r.mv) for r in one], m
    with pytest.raises(ValueError, match="no method"):
        emmv_many({}, X)
    with pytest.raises(ValueError, match="ODIN"):
        emmv_many({"kNN": [3], "ODIN": [3]}, X)
    with pytest.raises(ValueError, match="LOF: ks is empty"):
        emmv_many({"LOF": []}, X)
