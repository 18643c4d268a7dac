"""IREOS (Marques et al. 2020): exact KLR solver, index, chance adjustment, p-values, selection, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize, stats
from scipy.spatial.distance import cdist

from odeval.labelfree import _klr, ireos, ireos_select, laplacian_score, resolve_mcl
from odeval.labelfree.ireos import _sqdist_blocks
from odeval.measures import roc_auc


def _scipy_p(X, j, gamma, costs):
    """p(x_j, gamma) by scipy's trust-exact on the full primal J(alpha, b) (no factorisation tricks)."""
    n = X.shape[0]
    K = np.exp(-gamma * cdist(X, X, "sqeuclidean"))
    y = -np.ones(n)
    y[j] = 1.0

    def fun(z):
        a, b = z[:n], z[n]
        f = K @ a + b
        s = 1.0 / (1.0 + np.exp(y * f))
        g = -costs * y * s
        val = 0.5 * a @ K @ a + np.sum(costs * np.logaddexp(0.0, -y * f))
        return val, np.append(K @ a + K @ g, g.sum())

    def hess(z):
        f = K @ z[:n] + z[n]
        s = 1.0 / (1.0 + np.exp(y * f))
        A = np.hstack([K, np.ones((n, 1))])
        H = A.T @ (A * (costs * s * (1 - s))[:, None])
        H[:n, :n] += K
        return H

    res = optimize.minimize(fun, np.zeros(n + 1), jac=True, hess=hess, method="trust-exact",
                            options={"gtol": 1e-11, "maxiter": 5000})
    f = K @ res.x[:n] + res.x[n]
    return 1.0 / (1.0 + np.exp(-f[j])), _klr.klr_objective(K, y, costs, res.x[:n], res.x[n])


def _datasets():
    rng = np.random.default_rng(1)
    blobs = np.vstack([rng.normal(0, 0.3, (25, 2)), rng.normal(3, 0.5, (12, 2)), [[6.0, -2.0]]])
    gauss = rng.normal(size=(30, 5))
    wbc = np.loadtxt(_wbc_dir() / "WBC_withoutdupl_norm.txt")[:40] if _wbc_dir().is_dir() else rng.random((40, 9))
    return {"blobs": blobs, "gauss5d": gauss, "wbc40": wbc}


def _wbc_dir():
    from tests.conftest import SHARED_DATASETS

    return SHARED_DATASETS / "ireos_wbc_example"


@pytest.mark.parametrize("name", ["blobs", "gauss5d", "wbc40"])
def test_solver_matches_scipy(name):
    X = _datasets()[name]
    n = X.shape[0]
    D2 = _sqdist_blocks(X)
    med = np.median(D2[D2 > 0])
    rng = np.random.default_rng(7)
    w = rng.random(n) * (rng.random(n) < 0.3)
    for m_cl in (1.0, 4.0):
        base = 100.0 * (1.0 / m_cl) ** w
        for gamma in (0.0, 0.3 / med, 3.0 / med, 30.0 / med):
            js = np.array([0, n // 2, n - 1])
            costs = np.tile(base, (3, 1))
            costs[np.arange(3), js] = 100.0
            _, _, p, _ = _klr.fit_shared(D2, np.full(3, gamma), js, costs, np.zeros((3, n)), np.full(3, np.nan),
                                         _klr.TOL, _klr.MAXIT)
            for r, j in enumerate(js):
                ref, _ = _scipy_p(X, j, gamma, costs[r])
                assert abs(p[r] - ref) < 1e-6, (name, m_cl, gamma, j, p[r], ref)


def test_subset_solver_equals_shared_when_subset_is_everything():
    X = _datasets()["blobs"]
    n = X.shape[0]
    D2 = _sqdist_blocks(X)
    j = 5
    order = np.argsort(D2[j], kind="stable")
    sub = order[None, :].astype(np.int64)
    assert sub[0, 0] == j
    c = np.full((1, n), 100.0)
    _, _, p1, _ = _klr.fit_shared(D2, np.array([2.0]), np.array([j]), c, np.zeros((1, n)), np.array([np.nan]),
                                  _klr.TOL, _klr.MAXIT)
    _, _, p2, _ = _klr.fit_subsets(X, np.array([2.0]), sub, c, np.zeros((1, n)), np.array([np.nan]),
                                   _klr.TOL, _klr.MAXIT)
    assert abs(p1[0] - p2[0]) < 1e-9


def test_warm_start_gives_the_same_optimum():
    X = _datasets()["gauss5d"]
    n = X.shape[0]
    D2 = _sqdist_blocks(X)
    c = np.full((n, n), 100.0)
    pos = np.arange(n)
    F, b, _p0, _ = _klr.fit_shared(D2, np.full(n, 0.5), pos, c, np.zeros((n, n)), np.full(n, np.nan), _klr.TOL,
                                  _klr.MAXIT)
    _, _, cold, _ = _klr.fit_shared(D2, np.full(n, 0.6), pos, c, np.zeros((n, n)), np.full(n, np.nan), _klr.TOL,
                                    _klr.MAXIT)
    _, _, warm, _ = _klr.fit_shared(D2, np.full(n, 0.6), pos, c, F, b, _klr.TOL, _klr.MAXIT)
    np.testing.assert_allclose(warm, cold, atol=1e-8)


def _wbc(shared_datasets):
    d = shared_datasets / "ireos_wbc_example"
    if not d.is_dir():
        pytest.skip(f"IREOS WBC example not found at {d}")
    X = np.loadtxt(d / "WBC_withoutdupl_norm.txt")
    sols = [np.array([ln.strip().strip('"') == "outlier" for ln in open(d / "solutions" / f"{i}.txt")
                      if ln.strip()]) for i in range(11)]
    return X, sols


def test_wbc_example_index_ranks_solutions(shared_datasets):
    X, sols = _wbc(shared_datasets)
    res = ireos(X, sols, workers=2)
    assert stats.spearmanr(np.arange(11), res.index).statistic >= 0.95
    assert res.n_fits < 1000


@pytest.mark.slow
def test_wbc_example_adjusted_and_p_values(shared_datasets):
    X, sols = _wbc(shared_datasets)
    # the exact KLR optimum (the numbers of docs/ireos.md, *Validation*); the default classifier: test_ireos_classifier
    res = ireos(X, sols, adjust=True, p_values=True, workers=2, classifier="optimum")
    assert stats.spearmanr(np.arange(11), res.index).statistic >= 0.95
    assert abs(res.adjusted[0]) < 0.1  # a solution of 10 inliers: near 0
    assert res.adjusted[10] == res.adjusted.max() and res.adjusted[10] > 0.7  # exact KLR: 0.76 (docs/ireos.md)
    assert np.all(np.diff(res.p_value) <= 1e-12)  # p-values fall monotonically
    assert res.p_value[10] < 1e-6 < 0.3 < res.p_value[0]
    # Eq. 25: E{I} is the mean area over all objects; the exact z-test uses 1 - Phi(z)
    e = res.areas.mean()
    assert np.allclose(res.expected, e)
    z = (res.index[10] - e) / res.std_null[10]
    assert res.p_value[10] == pytest.approx(1 - stats.norm.cdf(z), rel=1e-6)


def _synthetic(seed, n=160, d=20, n_candidates=10):
    """Sect. 4.1-4.2: Gaussian cluster, outlier probabilities from the chi^2 distribution of Mahalanobis
    distances, candidates made by swapping the scores of outliers (p < 0.025) with those of random inliers."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    cov = A @ A.T / d + np.eye(d) * 0.5
    X = rng.multivariate_normal(np.zeros(d), cov, size=n)
    md2 = np.einsum("ij,jk,ik->i", X, np.linalg.inv(cov), X)
    score = stats.chi2.cdf(md2, d)  # 1 - p-value
    labels = score > 0.975
    cands = [score.copy()]
    cur = score.copy()
    outl = rng.permutation(np.flatnonzero(labels))
    inl = rng.permutation(np.flatnonzero(~labels))
    for t, o in enumerate(outl):
        cur = cur.copy()
        i = inl[t]
        cur[o], cur[i] = cur[i], cur[o]
        cands.append(cur)
    aucs = np.array([roc_auc(labels, c) for c in cands])
    targets = np.linspace(aucs.min(), aucs.max(), n_candidates)
    pick = sorted({int(np.argmin(np.abs(aucs - t))) for t in targets})
    return X, [cands[i] for i in pick], aucs[pick]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_synthetic_spearman_with_roc_auc_is_one(seed):
    X, cands, aucs = _synthetic(seed)
    # top-n weights: the scores are outlier probabilities already (Sect. 4.2); objects below 0.5 get weight 0
    sols = [np.where(c >= 0.5, c, 0.0) for c in cands]
    res = ireos(X, sols, weights="none", knn=60, workers=2)
    assert stats.spearmanr(res.index, aucs).statistic == pytest.approx(1.0)


def test_select_gives_the_full_ranking_with_fewer_fits():
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (60, 3)), rng.normal(6, 0.5, (4, 3))])
    truth = np.r_[np.zeros(60), np.ones(4)].astype(bool)
    sols = []
    for k in range(5):
        s = np.linalg.norm(X - X.mean(0), axis=1) + rng.normal(0, 0.5 * k, len(X))
        sols.append(s)
    full = ireos(X, sols, gamma_max=1.0, quadrature="fixed", n_gamma=9)
    sel = ireos_select(X, sols, gamma_max=1.0, quadrature="fixed", n_gamma=9, batch=2)
    assert list(sel.order) == list(np.argsort(-full.index, kind="stable"))
    assert sel.n_fits <= full.n_fits
    assert roc_auc(truth, sols[sel.best]) >= 0.9


def test_mcl_greater_than_one_monte_carlo_adjustment():
    rng = np.random.default_rng(4)
    X = np.vstack([rng.normal(0, 1, (40, 2)), [[5, 5], [5.2, 5.1], [-5, 4]]])
    good = np.zeros(len(X), bool)
    good[-3:] = True
    bad = np.zeros(len(X), bool)
    bad[:3] = True
    res = ireos(X, [good, bad], m_cl=3, gamma_max=2.0, quadrature="fixed", n_gamma=5, adjust=True, p_values=True,
                max_draws=12, seed=1)
    assert res.index[0] > res.index[1]
    assert res.adjusted[0] > 0.3 > res.adjusted[1] and res.p_value[0] < res.p_value[1]
    assert np.all(res.n_draws >= 10)
    again = ireos(X, [good, bad], m_cl=3, gamma_max=2.0, quadrature="fixed", n_gamma=5, adjust=True,
                  p_values=True, max_draws=12, seed=1)
    np.testing.assert_array_equal(res.adjusted, again.adjusted)


def test_adaptive_close_to_fixed_grid():
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(0, 1, (40, 3)), rng.normal(4, 1, (3, 3))])
    s = np.linalg.norm(X, axis=1)
    fixed = ireos(X, [s], quadrature="fixed", n_gamma=100, gamma_max=3.0)
    adaptive = ireos(X, [s], gamma_max=3.0, tol=0.001)
    assert abs(fixed.index[0] - adaptive.index[0]) < 0.01


def test_mcl_names():
    assert resolve_mcl(1, 500) == 1.0
    assert resolve_mcl("sqrt5", 500) == pytest.approx(5.0)
    assert resolve_mcl(3, 10) == 3.0
    with pytest.raises(ValueError, match="unknown m_cl"):
        resolve_mcl("clumpy", 10)
    with pytest.raises(ValueError, match=">= 1"):
        resolve_mcl(0.5, 10)


@pytest.mark.parametrize("case, match", [
    ("one_class", "one class"),
    ("no_weight", "no positive weight"),
    ("nan_x", "NaN or infinite"),
    ("inf_scores", "NaN or infinite"),
    ("shape", "shape"),
    ("too_few", "at least 3"),
    ("constant", "constant"),
    ("gamma_max", "gamma_max"),
    ("mcl", "unknown m_cl"),
])
def test_bad_input_one_line_errors(case, match):
    rng = np.random.default_rng(0)
    X = rng.random((10, 2))
    s = rng.random(10)
    kwargs = {}
    sols = [s]
    if case == "one_class":
        sols = [np.zeros(10, bool)]
    elif case == "no_weight":
        kwargs["weights"] = np.zeros_like  # a scaling that maps every score to 0
    elif case == "nan_x":
        X[3, 1] = np.nan
    elif case == "inf_scores":
        s[2] = np.inf
    elif case == "shape":
        sols = [rng.random(9)]
    elif case == "too_few":
        X, sols = X[:2], [s[:2]]
    elif case == "constant":
        X = np.ones((10, 2))
    elif case == "gamma_max":
        kwargs["gamma_max"] = 0.0
    elif case == "mcl":
        kwargs["m_cl"] = "big"
    with pytest.raises(ValueError, match=match) as info:
        ireos(X, sols, **kwargs)
    assert "\n" not in str(info.value)


def test_laplacian_score_prefers_smooth_candidates():
    rng = np.random.default_rng(0)
    base = rng.random(200)
    feats = np.vstack([base, base + rng.normal(0, 0.01, 200), rng.random(200)])
    ls = laplacian_score(feats, k=5)
    assert ls.shape == (3,) and np.all(np.isfinite(ls))


def _parallel_case():
    rng = np.random.default_rng(11)
    X = np.vstack([rng.normal(0, 1, (70, 3)), rng.normal(5, 0.5, (4, 3))])
    sols = [np.linalg.norm(X - X.mean(0), axis=1) + rng.normal(0, 0.3 * k, len(X)) for k in range(3)]
    return X, sols


def test_threads_and_map_callables_give_the_same_bits():
    X, sols = _parallel_case()
    serial = ireos(X, sols, knn=30)
    threads = ireos(X, sols, knn=30, workers=2)
    mapped = ireos(X, sols, knn=30, executor=lambda f, xs: [f(x) for x in xs])
    for other in (threads, mapped):
        np.testing.assert_array_equal(other.index, serial.index)
        assert other.gamma_max == serial.gamma_max and other.n_fits == serial.n_fits
    sel = ireos_select(X, sols, knn=30, workers=2, batch=8)
    assert list(sel.order) == list(np.argsort(-serial.index, kind="stable"))


def test_the_old_n_jobs_keyword_still_works_with_a_deprecation_warning():
    X, sols = _parallel_case()
    serial = ireos(X, sols, knn=30)
    with pytest.warns(DeprecationWarning, match="use workers="):
        old = ireos(X, sols, knn=30, n_jobs=2)
    np.testing.assert_array_equal(old.index, serial.index)
    with pytest.raises(TypeError, match="both workers and"):
        ireos(X, sols, knn=30, n_jobs=2, workers=2)


def test_bad_executor_is_one_line():
    X, sols = _parallel_case()
    with pytest.raises(ValueError, match="executor must be") as info:
        ireos(X, sols, executor=3)
    assert "\n" not in str(info.value)


@pytest.mark.slow
def test_local_processes_and_dask_cluster_give_the_same_bits():
    distributed = pytest.importorskip("distributed")
    X, sols = _parallel_case()
    serial = ireos(X, sols, knn=30, adjust=True)
    procs = ireos(X, sols, knn=30, adjust=True, executor="processes", workers=2)
    np.testing.assert_array_equal(procs.index, serial.index)
    np.testing.assert_array_equal(procs.adjusted, serial.adjusted)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl) as client:
        dask = ireos(X, sols, knn=30, adjust=True, executor=client)
        by_address = ireos_select(X, sols, knn=30, executor=cl.scheduler_address)
    np.testing.assert_array_equal(dask.index, serial.index)
    np.testing.assert_array_equal(dask.areas, serial.areas)
    assert dask.n_fits == serial.n_fits
    assert list(by_address.order) == list(np.argsort(-serial.index, kind="stable"))


def test_gamma_max_quantile_lets_a_near_duplicate_stay_unseparated():
    """A candidate outlier with a near-duplicate (distance 1e-4) is separated by the exact classifier only at
    gamma ~ 0.005 / 1e-8: the paper's rule (quantile 1) follows it there; quantile 0.75 of 4 outliers lets that
    one object fail and gives the gamma_max of the other three (docs/ireos.md, Shuttle). The exact KLR optimum: the
    reference code's pinned classifier (the default) separates near-duplicates early (test_ireos_classifier)."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (40, 2)), [[5.0, 5.0], [-5.0, 5.0], [5.0, -5.0], [0.5, 0.5], [0.5, 0.5001]]])
    base = np.zeros(X.shape[0], bool)
    base[[40, 41, 42]] = True
    with_dup = base.copy()
    with_dup[43] = True
    opt = {"classifier": "optimum"}
    paper = ireos(X, [with_dup], **opt)
    q = ireos(X, [with_dup], gamma_max_quantile=0.75, **opt)
    three = ireos(X, [base], **opt)
    assert paper.gamma_max > 1e3 * three.gamma_max
    assert q.gamma_max == three.gamma_max
    assert ireos_select(X, [with_dup, base], gamma_max_quantile=0.75, **opt).gamma_max == three.gamma_max
    with pytest.raises(ValueError, match="gamma_max_quantile"):
        ireos(X, [base], gamma_max_quantile=0.0)


def test_exact_duplicates_are_left_out_of_the_gamma_max_search():
    """An exact duplicate can never reach p >= 0.5 (m_cl = 1), so the rule of Sect. 3.4 cannot be met: it is left
    out of the search (the search ran to its cap of ~1e12 before; Ionosphere_withoutdupl_norm has such a pair).
    The exact KLR optimum; the reference code's pinned classifier (the default) keeps them: test_ireos_classifier."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (40, 2)), [[5.0, 5.0], [-5.0, 5.0], [5.0, -5.0], [0.5, 0.5], [0.5, 0.5]]])
    base = np.zeros(X.shape[0], bool)
    base[[40, 41, 42]] = True
    with_dup = base.copy()
    with_dup[43] = True
    opt = {"classifier": "optimum"}
    res = ireos(X, [with_dup], **opt)
    three = ireos(X, [base], **opt)
    assert res.gamma_max == three.gamma_max and res.gamma_max_duplicates == [43] and res.unseparated == []
    assert ireos_select(X, [with_dup, base], **opt).gamma_max == three.gamma_max
    only_dup = np.zeros(X.shape[0], bool)
    only_dup[[43, 44]] = True  # nothing else left: the duplicates are kept and reported as unseparated
    assert ireos(X, [only_dup], **opt).unseparated == [43, 44]


def test_permutation_null_of_scorings_has_the_exact_permutation_moments():
    """App. A.2 for scorings with m_cl = 1: permuting the areas (shared by all solutions) instead of each
    solution's weights gives I's permutation distribution: mean E{I} (Eq. 25) and the exact variance of a linear
    permutation statistic, sum (w - mean w)^2 * sum (A - mean A)^2 / ((N - 1) (sum w)^2)."""
    from odeval.labelfree.ireos import _permutation_null

    rng = np.random.default_rng(3)
    N = 60
    A = rng.uniform(0.3, 1.0, N)
    W = np.vstack([rng.uniform(0, 1, N), (np.arange(N) < 5).astype(float), rng.beta(0.3, 3, N)])
    null = _permutation_null(W, A, 20_000, np.random.default_rng(0))
    assert null.shape == (3, 20_000)
    exact_sd = np.sqrt(((W - W.mean(1, keepdims=True)) ** 2).sum(1) * ((A - A.mean()) ** 2).sum() / (N - 1)) \
        / W.sum(1)
    np.testing.assert_allclose(null.mean(1), A.mean(), atol=4 * exact_sd.max() / np.sqrt(20_000))
    np.testing.assert_allclose(null.std(1, ddof=1), exact_sd, rtol=0.03)
    again = _permutation_null(W, A, 20_000, np.random.default_rng(0))
    np.testing.assert_array_equal(null, again)  # seeded: bit-identical


def test_default_is_exact_up_to_the_stated_size_then_knn_subsets():
    """knn="auto" (the default): bit-identical to the exact index for N <= exact_max_objects; above, the kNN-subset
    approximation with PAPER_KNN neighbours, said in the result."""
    from odeval.labelfree.ireos import EXACT_MAX_OBJECTS, PAPER_KNN, IREOSSettings, resolve_knn

    assert IREOSSettings().knn == "auto" and IREOSSettings().exact_max_objects == EXACT_MAX_OBJECTS
    assert resolve_knn("auto", EXACT_MAX_OBJECTS) is None and resolve_knn("auto", EXACT_MAX_OBJECTS + 1) == PAPER_KNN
    assert resolve_knn(None, 10**6) is None and resolve_knn(7, 10) == 7
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(57, 2)), [[5, 5], [-5, 4], [6, -4]]])
    sols = [np.linalg.norm(X, axis=1), rng.random(60)]
    default, exact = ireos(X, sols), ireos(X, sols, knn=None)
    np.testing.assert_array_equal(default.index, exact.index)
    assert default.gamma_max == exact.gamma_max and default.knn is None and default.approximated is None
    X = np.vstack([rng.normal(size=(297, 2)), [[5, 5], [-5, 4], [6, -4]]])
    sols = [np.linalg.norm(X, axis=1), rng.random(300)]
    kw = {"gamma_max": 1.0, "quadrature": "fixed", "n_gamma": 3}
    auto = ireos(X, sols, exact_max_objects=200, **kw)
    np.testing.assert_array_equal(auto.index, ireos(X, sols, knn=PAPER_KNN, **kw).index)
    assert auto.knn == PAPER_KNN and "N = 300 > 200" in auto.approximated
    assert ireos_select(X, sols, exact_max_objects=200, **kw).best == int(np.argmax(auto.index))
    with pytest.raises(ValueError, match="exact_max_objects"):
        ireos(X, sols, exact_max_objects=0, **kw)


def test_settings_auto_knn():
    from odeval.labelfree.ireos import PAPER_KNN, IREOSSettings

    assert IREOSSettings.problem("knn", "auto") is None and IREOSSettings.problem("knn", "many") is not None
    assert IREOSSettings.problem("exact_max_objects", 0) is not None
    assert IREOSSettings().for_objects(1000).knn is None and IREOSSettings().for_objects(1001).knn == PAPER_KNN
    assert IREOSSettings(knn=PAPER_KNN).for_objects(100).knn is None
