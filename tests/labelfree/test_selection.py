"""Label-free selectors (odeval.labelfree.selection) on tiny hand-made candidate sets with known answers."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from odeval._key import ScoringKey
from odeval.compare import combine
from odeval.labelfree.selection import (
    SELECTORS,
    Selection,
    SelectorInfo,
    available_selectors,
    default_selectors,
    get_selector,
    hits_scores,
    kendall_matrix,
    kendall_to,
    model_centrality,
    ndcg_matrix,
    rank_percentiles,
    register_selector,
    run_selector,
    select_greedy,
    spearman_matrix,
)
from odeval.scaling import gaussian_scaling


def _central_set(seed: int = 0) -> tuple[np.ndarray, int]:
    """A 'true' ranking (row 2), six copies of it each with its own disjoint adjacent swaps, and two reversed
    rankings: every copy differs from row 2 by its own swaps and from another copy by both copies' swaps, so
    row 2 is the centre (Kendall's discordant pairs = the number of adjacent swaps)."""
    rng = np.random.default_rng(seed)
    base = rng.permutation(80).astype(float)
    order = np.argsort(-base)  # positions in the ranking, most outlying first
    rows, start = [], 0
    for n_swaps in (1, 2, 3, 2, 1, 3):
        row = base.copy()
        for _ in range(n_swaps):
            a, b = order[start], order[start + 1]
            row[a], row[b] = row[b], row[a]
            start += 2
        rows.append(row)
    S = np.vstack([rows[0], rows[1], base, *rows[2:], -base, -base + 0.5 * (base % 7)])
    return S, 2


def test_rank_matrices_match_scipy_with_ties_and_constant_rows():
    rng = np.random.default_rng(1)
    S = rng.integers(0, 5, size=(6, 37)).astype(float)
    S[1] = rng.normal(size=37)
    S[4] = 3.0  # constant: no ranking
    K, P = kendall_matrix(S), spearman_matrix(S)
    for a in range(6):
        for b in range(6):
            if a == b:
                assert K[a, b] == P[a, b] == 1.0
                continue
            if 4 in (a, b):
                assert K[a, b] == 0.0 and P[a, b] == 0.0
                continue
            assert K[a, b] == pytest.approx(stats.kendalltau(S[a], S[b], variant="b").statistic, abs=1e-12)
            assert P[a, b] == pytest.approx(stats.spearmanr(S[a], S[b]).statistic, abs=1e-12)
    to = kendall_to(S, S[1])
    assert np.allclose(to[[0, 2, 3, 5]], [stats.kendalltau(S[a], S[1], variant="b").statistic for a in (0, 2, 3, 5)],
                       atol=1e-12, rtol=0)
    assert to[1] == 1.0 and to[4] == 0.0


def test_ndcg_identity_reversal_and_monotone_transform():
    x = np.arange(10.0)
    N = ndcg_matrix(np.vstack([x, x**3, -x]))
    assert N[0, 1] == pytest.approx(1.0) and N[1, 0] == pytest.approx(1.0)  # same ranking
    assert N[2, 0] < N[0, 0] and np.all(N <= 1 + 1e-12) and np.all(N > 0)
    assert np.allclose(np.diag(N), 1.0)


@pytest.mark.parametrize("measure", ["spearman", "kendall", "ndcg"])
def test_model_centrality_picks_the_candidate_closest_to_the_others(measure):
    S, centre = _central_set()
    mc = model_centrality(S, measure)
    assert int(np.argmax(mc)) == centre
    assert mc[-1] == mc.min() or mc[-2] == mc.min()  # a reversed candidate is the least central
    sel = run_selector(f"mc-{measure}", S)
    assert sel.index == centre and np.array_equal(sel.criterion, mc)


def test_model_centrality_is_mean_offdiagonal_agreement():
    S, _ = _central_set(3)
    M = spearman_matrix(S)
    R = S.shape[0]
    expect = [(M[i].sum() - 1.0) / (R - 1) for i in range(R)]
    assert np.allclose(model_centrality(S, "spearman"), expect)
    assert model_centrality(S[:1], "kendall").tolist() == [0.0]


def test_hits_is_the_leading_singular_vector_and_ignores_scales():
    S, _centre = _central_set(4)
    h, a = hits_scores(S)
    U, _, Vt = np.linalg.svd(rank_percentiles(S), full_matrices=False)
    assert np.allclose(h, np.abs(U[:, 0]), atol=1e-9) and np.allclose(a, np.abs(Vt[0]), atol=1e-9)
    assert np.all(h > 0)
    scaled = S * np.arange(1, S.shape[0] + 1)[:, None] ** 3  # positive rescaling per row: same ranks
    assert np.array_equal(hits_scores(scaled)[0], h)
    assert run_selector("hits", S).index == int(np.argmax(h))
    assert int(np.argmin(h)) in (S.shape[0] - 1, S.shape[0] - 2)  # a reversed ranking is the weakest hub


def _select_reference(S):
    """SELECT's greedy consensus written out plainly (scipy's Kendall tau-b at every step)."""
    Q = 1.0 / stats.rankdata(-S, axis=1, method="average")
    target = Q.mean(axis=0)
    tau = [stats.kendalltau(q, target, variant="b").statistic for q in Q]
    order = sorted(range(len(Q)), key=lambda i: (-tau[i], i))
    members = [order[0]]
    best = stats.kendalltau(Q[members].mean(axis=0), target, variant="b").statistic
    for c in order[1:]:
        t = stats.kendalltau(Q[[*members, c]].mean(axis=0), target, variant="b").statistic
        if t >= best:
            members, best = [*members, c], t
    return tuple(members)


@pytest.mark.parametrize("seed", [5, 9])
def test_select_greedy_follows_the_algorithm_and_never_loses_agreement(seed):
    rng = np.random.default_rng(seed)
    S, _ = _central_set(seed)
    S = np.vstack([S, rng.normal(size=(4, S.shape[1]))])  # unrelated candidates
    members, ens, tau = select_greedy(S)
    assert members == _select_reference(S)
    assert 0 < len(members) < S.shape[0]  # some candidates are discarded
    assert members[0] == int(np.argmax(tau))
    Q = 1.0 / stats.rankdata(-S, axis=1, method="average")
    target = Q.mean(axis=0)
    assert np.allclose(ens, Q[list(members)].mean(axis=0))
    taus = [stats.kendalltau(Q[list(members[:i])].mean(axis=0), target, variant="b").statistic
            for i in range(1, len(members) + 1)]
    assert all(b >= a for a, b in itertools.pairwise(taus))  # agreement with the target never falls
    pick = run_selector("select", S)
    assert pick.index in members and pick.members == members
    whole = run_selector("select-ensemble", S)
    assert whole.index is None and np.array_equal(whole.scores, ens)


def test_ensembles_reuse_scaling_and_combination():
    S, _ = _central_set(6)
    e = run_selector("ensemble", S)
    assert e.index is None and np.allclose(e.scores, combine(np.vstack([gaussian_scaling(r) for r in S]), "mean"))
    r = run_selector("ensemble-rank", S)
    assert np.array_equal(r.scores, combine(S, "rank"))


def test_random_is_seeded_and_defaults_find_their_candidate():
    S = np.random.default_rng(7).normal(size=(12, 20))
    names = [f"{m}-{k:03d}" for m in ("kNN", "LOF") for k in (5, 10, 15, 20, 25, 30)]
    picks = {run_selector("random", S, names, seed=s).index for s in range(30)}
    assert len(picks) > 3 and picks <= set(range(12))
    assert run_selector("random", S, names, seed=11).index == run_selector("random", S, names, seed=11).index
    assert run_selector("default-knn10", S, names).index == 1
    assert run_selector("default-lof20", S, names).index == 9
    miss = run_selector("default-lof20", S[:6], names[:6])
    assert miss.index is None and "LOF with k = 20" in miss.note


def test_candidate_names_are_scoring_keys():
    """The names the selectors read (parse_candidate_name before the one scoring key) parse as ScoringKeys."""
    assert (ScoringKey.parse("LOF-020").method, ScoringKey.parse("LOF-020").k) == ("LOF", 20)
    ldf = ScoringKey.parse("LDF(c=0.1,h=1.0)-007")
    assert (ldf.method, ldf.params_dict, ldf.k) == ("LDF", {"c": 0.1, "h": 1.0}, 7)
    knn = ScoringKey.parse("kNN[manhattan]-k10")
    assert (knn.method, knn.metric, knn.k) == ("kNN", "manhattan", 10)
    with pytest.raises(ValueError):
        ScoringKey.parse("no k here")


def test_default_selectors_find_their_candidate_by_key():
    S = np.random.default_rng(2).random((3, 20))
    keys = [ScoringKey.make("LOF", {"variant": v}, metric="euclidean", k=20) for v in ("paper", "elki-0.7.1")]
    keys.append(ScoringKey.make("kNN", metric="euclidean", k=10))
    assert run_selector("default-lof20", S, keys).index == 0
    assert run_selector("default-knn10", S, keys).index == 2
    with pytest.raises(ValueError, match="takes no settings"):
        run_selector("hits", S, keys, settings=object())


def test_every_selector_is_bit_identical_on_repeat():
    S, _ = _central_set(8)
    names = [f"kNN-{k:03d}" for k in range(5, 5 + S.shape[0])]
    assert set(default_selectors()) | {"em", "mv"} <= set(available_selectors())
    for name in default_selectors():  # em / mv (need X): tests/labelfree/test_selection_emmv.py
        a, b = run_selector(name, S, names, seed=3), run_selector(name, S, names, seed=3)
        assert a.index == b.index and a.members == b.members, name
        for x, y in ((a.scores, b.scores), (a.criterion, b.criterion)):
            assert (x is None and y is None) or np.array_equal(x, y), name


def test_bad_input_gets_one_line_errors():
    S = np.zeros((2, 5))
    with pytest.raises(ValueError, match="unknown selector 'nope'; available: mc-spearman"):
        get_selector("nope")
    with pytest.raises(ValueError, match="names has 3 entries for 2 scorings"):
        run_selector("hits", S, ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"NaN or infinite values at \(scoring 1, object 0\)"):
        run_selector("hits", np.array([[0.0, 1.0], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="already registered"):
        register_selector(SelectorInfo("hits", lambda *a, **k: Selection("hits", 0)))
    info = register_selector(SelectorInfo("needs-x", lambda S, n, X=None, seed=0: Selection("needs-x", 0),
                                          needs_data=True))
    try:
        with pytest.raises(ValueError, match="needs the data X"):
            run_selector("needs-x", S)
        with pytest.raises(ValueError, match=r"X has shape \(4, 2\), expected \(5, d\)"):
            run_selector("needs-x", S, X=np.zeros((4, 2)))
        assert run_selector("needs-x", S, X=np.zeros((5, 2))).index == 0
    finally:
        SELECTORS.pop(info.name)
