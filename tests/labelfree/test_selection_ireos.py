"""The ireos / ireos-sqrt5 / laplacian-* selectors of odeval.labelfree.selection against direct calls."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.labelfree import ireos, laplacian_score, solution_weights
from odeval.labelfree.selection import default_selectors, run_selector


@pytest.fixture(scope="module")
def toy():
    rng = np.random.default_rng(7)
    X = np.vstack([rng.normal(size=(30, 2)), rng.uniform(-5, 5, size=(4, 2))])
    good = get_detector("kNN").score(X, 5)
    S = np.vstack([get_detector("LOF").score(X, 2), good, -good])  # the reversed kNN must lose under IREOS
    return X, S, ("LOF-002", "kNN-005", "rev-005")


@pytest.mark.parametrize(("name", "m_cl"), [("ireos", 1), ("ireos-sqrt5", "sqrt5")])
def test_ireos_selectors_equal_direct_adjusted_index(toy, name, m_cl):
    from dataclasses import replace

    from odeval.labelfree.selection import IREOS_SELECTOR_SETTINGS, get_selector

    X, S, names = toy
    assert get_selector(name).settings == IREOS_SELECTOR_SETTINGS and IREOS_SELECTOR_SETTINGS.knn == 250
    fast = replace(IREOS_SELECTOR_SETTINGS, max_draws=10)  # m_cl > 1: fewer Monte Carlo draws (fast)
    sel = run_selector(name, S, names, X=X, seed=3, settings=fast)
    # N < 251: exact index; the selectors keep the permutation null and run ireos's (pinned) classifier
    assert IREOS_SELECTOR_SETTINGS.classifier == "pinned"
    direct = ireos(X, list(S), m_cl=m_cl, adjust=True, seed=3, knn=None, max_draws=10, null="permutation")
    np.testing.assert_array_equal(sel.criterion, direct.adjusted)
    assert sel.index == int(np.argmax(direct.adjusted)) and sel.index != 2
    if m_cl == 1:
        again = run_selector(name, S, names, X=X, seed=3, settings=fast)
        assert again.index == sel.index and np.array_equal(again.criterion, sel.criterion)
    assert name not in default_selectors()


def test_laplacian_selectors_equal_direct_scores(toy):
    _, S, names = toy
    W, _ = solution_weights(list(S), S.shape[1])
    for name, k in (("laplacian-1", 1), ("laplacian-sqrt", round(np.sqrt(S.shape[1]))), ("laplacian-100", 100)):
        sel = run_selector(name, S, names)
        ls = laplacian_score(W, k)
        np.testing.assert_array_equal(sel.criterion, -ls)  # criterion = −score: higher = preferred
        assert sel.index == int(np.argmin(ls))


def test_laplacian_shared_graph_equals_own_graph_with_ties():
    """One graph for the largest k gives every smaller k's scores exactly, also with tied score vectors."""
    from odeval.labelfree import selection
    from odeval.neighbors import knn_graph

    rng = np.random.default_rng(11)
    S = np.round(rng.random((6, 150)), 1)  # few distinct values: many ties and duplicate objects
    W, _ = solution_weights(list(S), S.shape[1])
    graph = knn_graph(W.T, 100)
    for k in (1, 2, 12, 100):
        np.testing.assert_array_equal(laplacian_score(W, k, graph=graph), laplacian_score(W, k))
    with pytest.raises(ValueError, match="k_max >= 12"):
        laplacian_score(W, 12, graph=knn_graph(W.T, 5))
    selection._LAPLACIAN_GRAPH.clear()
    names = tuple(f"kNN-{i + 1:03d}" for i in range(6))
    got = [run_selector(n, S, names).criterion for n in ("laplacian-1", "laplacian-sqrt", "laplacian-100")]
    assert len(selection._LAPLACIAN_GRAPH) == 1  # the three selectors shared one graph
    for c, k in zip(got, (1, 12, 100), strict=True):
        np.testing.assert_array_equal(c, -laplacian_score(W, k))


@pytest.mark.parametrize("name", ["ireos", "laplacian-1", "laplacian-sqrt"])
def test_constant_candidate_is_excluded_not_fatal(toy, name):
    """A constant candidate (e.g. INFLO at k = N − 1) has no outlier weights: NaN and a note, the others compete."""
    X, S, names = toy
    S2 = np.vstack([S, np.ones(S.shape[1])])
    sel = run_selector(name, S2, (*names, "INFLO-033"), X=X, seed=3)
    ref = run_selector(name, S, names, X=X, seed=3)
    assert np.isnan(sel.criterion[-1]) and sel.excluded == ((3, "constant scores: no outlier weights"),)
    assert "1 candidate(s) excluded" in sel.note
    np.testing.assert_array_equal(sel.criterion[:-1], ref.criterion)
    assert sel.index == ref.index
    with pytest.raises(ValueError, match="no candidate has outlier weights"):
        run_selector(name, np.ones((2, S.shape[1])), ("a-001", "b-001"), X=X)
