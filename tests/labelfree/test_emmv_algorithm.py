"""emmv(): detectors refitted on feature draws (Goix 2016, Algorithm EMMV), kNN query scoring."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.labelfree import EMMVWarning, emmv, excess_mass, mass_volume
from odeval.labelfree.emmv_algorithm import KNNQueryDetector, make_detector
from odeval.labelfree.excess_mass_volume import bounding_box, uniform_in_box

FAST = {"n_generated": 2000}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(120, 3)), rng.normal(size=(80, 3))


def test_low_dimension_is_one_standard_evaluation(data):
    Xtr, Xte = data
    res = emmv("iforest", Xtr, Xte, seed=1, **FAST)
    assert not res.subsampled and res.draws == 1 and res.features[0].tolist() == [0, 1, 2]
    # identical to the estimators applied by hand
    det = make_detector("iforest", seed=1).fit(Xtr)
    lo, hi, vol = bounding_box(np.vstack([Xtr, Xte]))
    ss = np.random.SeedSequence(1)
    ss.spawn(1)
    useed = int(ss.spawn(1)[0].generate_state(1)[0])
    s_u = det.score(uniform_in_box(lo, hi, 2000, useed))
    assert res.em == excess_mass(det.score(Xte), s_u, vol).criterion
    assert res.mv == mass_volume(det.score(Xte), s_u, vol).criterion
    assert res.em_curve is not None and res.mv_curve is not None


def test_seeded_and_reproducible(data):
    Xtr, Xte = data
    a = emmv("iforest", Xtr, Xte, seed=3, **FAST)
    b = emmv("iforest", Xtr, Xte, seed=3, **FAST)
    c = emmv("iforest", Xtr, Xte, seed=4, **FAST)
    assert (a.em, a.mv) == (b.em, b.mv)
    assert (a.em, a.mv) != (c.em, c.mv)


def test_feature_subsampling_draws_and_averages():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(150, 12))
    res = emmv("ocsvm", X[:100], X[100:], draws=4, features=3, seed=0, **FAST)
    assert res.subsampled and res.draws == 4
    assert all(f.size == 3 and np.unique(f).size == 3 for f in res.features)
    assert res.em == pytest.approx(res.em_draws.mean()) and res.mv == pytest.approx(res.mv_draws.mean())
    assert res.em_failed == res.mv_failed == 0
    d = res.to_dict()
    assert d["draws"] == 4 and d["features_per_draw"] == 3 and len(d["em_draws"]) == 4


@pytest.mark.parametrize("name", ["iforest", "ocsvm", "lof", "kNN", "kNNW", "LOF", "LoOP"])
def test_every_supported_detector_runs(name, data):
    Xtr, Xte = data
    res = emmv(name, Xtr, Xte, seed=0, **FAST)
    assert np.isfinite(res.em) and res.em > 0 and np.isfinite(res.mv) and res.mv > 0


def test_same_data_setting(data):
    Xtr, _ = data
    res = emmv("kNN", Xtr, seed=0, **FAST)
    assert res.n_test == res.n_train == Xtr.shape[0] and np.isfinite(res.em)


def test_knn_query_detector_matches_brute_force_and_odeval():
    from odeval.detectors import get_detector

    rng = np.random.default_rng(1)
    X, Q = rng.normal(size=(60, 4)), rng.normal(size=(25, 4))
    D = np.sqrt(((Q[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    D.sort(axis=1)
    for method, expect in (("kNN", D[:, 6]), ("kNNW", D[:, :7].sum(1))):
        det = KNNQueryDetector(method, 7).fit(X)
        np.testing.assert_allclose(det.score(Q), expect, rtol=1e-12)
        np.testing.assert_array_equal(det.score_fitted(), get_detector(method).score(X, 7))


def test_zero_volume_draws_are_counted_and_reported():
    class Degenerate:  # every data object at the most normal score, every uniform point more outlying
        name = "degenerate"

        def fit(self, X):
            self.X = X
            return self

        def score(self, X):
            return np.where((X[:, None, :] == self.X[None, :, :]).all(-1).any(1), 0.0, 1.0)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 10))
    with pytest.warns(EMMVWarning, match="3 of 3 draw"):
        res = emmv(Degenerate(), X, draws=3, features=2, **FAST)
    assert res.em_failed == res.mv_failed == 3 and np.isnan(res.em) and np.isnan(res.mv)
    assert any("volume 0" in r for r in res.reasons)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"features": 20}, "exceeds the number of attributes"),
    ({"draws": 0}, "draws"),
    ({"features": 0}, "features"),
    ({"n_generated": 0}, "n_generated"),
    ({"X_test": np.empty((0, 10))}, "empty test split"),
    ({"X_test": np.full((3, 10), np.nan)}, "NaN"),
    ({"X_test": np.zeros((3, 4))}, "attributes"),
    ({"detector": "LOF-odeval"}, "unknown detector"),
    ({"detector": "ODIN"}, "cannot score points outside"),
    ({"detector": object()}, "cannot be refitted"),
])
def test_bad_input_is_one_clear_line(kwargs, match):
    rng = np.random.default_rng(0)
    args = {"detector": "iforest", "X_train": rng.normal(size=(30, 10)), "X_test": None} | kwargs
    with pytest.raises(ValueError, match=match) as exc:
        emmv(args.pop("detector"), args.pop("X_train"), args.pop("X_test"), **(FAST | args))
    assert "\n" not in str(exc.value)


class _NaNScores:
    name = "nan-scorer"

    def fit(self, X):
        return self

    def score(self, X):
        return np.full(len(X), np.nan)


class _ShortScores(_NaNScores):
    name = "short-scorer"

    def score(self, X):
        return np.zeros(3)


@pytest.mark.parametrize(("detector", "match"), [
    (_NaNScores(), r"nan-scorer: scores of the evaluated objects on features \[.*\] \(draw 1\): 30 of 30 scores "
                   "are NaN"),
    (_ShortScores(), r"short-scorer: scores of the evaluated objects .*expected 30 scores, got an array of shape"),
])
def test_bad_scores_of_a_detector_name_the_detector_and_draw(detector, match):
    X = np.random.default_rng(0).normal(size=(30, 10))
    with pytest.raises(ValueError, match=match) as exc:
        emmv(detector, X, draws=2, features=2, **FAST)
    assert "\n" not in str(exc.value)


def test_non_refittable_and_bad_settings_are_one_line():
    from sklearn.neighbors import LocalOutlierFactor

    from odeval.labelfree import emmv_all_k

    X = np.random.default_rng(0).normal(size=(30, 10))
    cases = [
        (lambda: emmv(LocalOutlierFactor(), X, **FAST), r"novelty=False\) cannot score new points"),
        (lambda: emmv("iforest", X, workers=0, **FAST), r"workers \(or -1: every core\)"),
        (lambda: emmv_all_k("kNN", X, [3], features=11, **FAST), "exceeds the number of attributes"),
        (lambda: emmv_all_k("kNN", X, [3], draws=0, **FAST), r"draws \(m\)"),
        (lambda: emmv_all_k("kNN", np.c_[X, np.ones(30)], [3], box="train_test", **FAST), "constant"),
        (lambda: emmv_all_k("kNN", np.c_[X[:, :4], np.ones((30, 6))], [3], **FAST),
         r"only 4 of 10 attributes vary on the evaluated objects, fewer than features \(d'=5\)"),
        (lambda: emmv_all_k("kNN", X, [3], box="data", **FAST), "box must be one of 'author', 'train_test'"),
        (lambda: emmv_all_k("kNN", np.where(X > 2, np.inf, X), [3], **FAST), "NaN or infinite"),
    ]
    for call, match in cases:
        with pytest.raises(ValueError, match=match) as exc:
            call()
        assert "\n" not in str(exc.value)


def test_pyod_detector_is_refitted_per_draw():
    pyod_knn = pytest.importorskip("pyod.models.knn")
    X = np.random.default_rng(0).normal(size=(60, 10))
    a = emmv(pyod_knn.KNN(n_neighbors=5), X, draws=2, features=3, seed=1, **FAST)
    b = emmv(pyod_knn.KNN(n_neighbors=5), X, draws=2, features=3, seed=1, **FAST)
    assert np.isfinite(a.em) and np.isfinite(a.mv) and a.draws == 2
    np.testing.assert_array_equal(a.em_draws, b.em_draws)


def test_constant_feature_and_nan_in_training_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    X[:, 2] = 1.5
    with pytest.raises(ValueError, match=r"attribute\(s\) \[2\] are constant"):
        emmv("iforest", X, **FAST)
    X[0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        emmv("iforest", X, **FAST)


def test_odeval_detector_object_is_rejected_with_hint():
    from odeval.detectors import get_detector

    with pytest.raises(ValueError, match="odeval methods with a novelty form: LDOF, LOF"):
        emmv(get_detector("LOF"), np.random.default_rng(0).normal(size=(30, 3)), **FAST)


def test_failing_fit_names_the_draw():
    class Bad:
        name = "bad"

        def fit(self, X):
            raise ValueError("cannot fit this")

        def score(self, X):  # pragma: no cover
            return np.zeros(len(X))

    with pytest.raises(ValueError, match=r"bad could not be refitted/scored on features \[.*\] \(draw 1\)"):
        emmv(Bad(), np.random.default_rng(0).normal(size=(30, 10)), draws=2, features=2, **FAST)


def test_parallel_draws_give_identical_results():
    X = np.random.default_rng(4).normal(size=(60, 10))
    a = emmv("iforest", X, draws=2, features=3, n_generated=500, workers=1)
    # threads: processes (the default) start slowly; same code path otherwise
    b = emmv("iforest", X, draws=2, features=3, n_generated=500, workers=2, executor="threads")
    c = emmv("iforest", X, draws=2, features=3, n_generated=500, workers=-1, executor="threads")  # every core
    with pytest.warns(DeprecationWarning, match="use workers="):  # the former name, for one release
        d = emmv("iforest", X, draws=2, features=3, n_generated=500, n_jobs=2, executor="threads")
    for r in (b, c, d):
        np.testing.assert_array_equal(a.em_draws, r.em_draws)
        np.testing.assert_array_equal(a.mv_draws, r.mv_draws)


def test_draws_run_sequentially_inside_a_callers_joblib_context():
    """scikit-learn's IsolationForest.score_samples is threaded under a caller's joblib context (last-bit
    differences in the scores); emmv's draws pin n_jobs=1 inside."""
    from joblib import parallel_config
    from joblib.parallel import get_active_backend

    seen = []

    class Recorder:
        name = "recorder"

        def fit(self, X):
            seen.append(get_active_backend()[1])
            return self

        def score(self, X):
            seen.append(get_active_backend()[1])
            return -np.abs(X).sum(1)

    with parallel_config(backend="threading", n_jobs=2):
        emmv(Recorder(), np.random.default_rng(0).normal(size=(40, 3)), n_generated=500)
    assert seen == [1, 1, 1]


def test_process_workers_give_bit_identical_results():
    """The default executor (local worker processes): 1 and 2 workers, same per-draw values to the bit."""
    X = np.random.default_rng(5).normal(size=(80, 12))
    a = emmv("iforest", X, draws=3, features=3, n_generated=2000, seed=2, workers=1)
    b = emmv("iforest", X, draws=3, features=3, n_generated=2000, seed=2, workers=2)
    np.testing.assert_array_equal(a.em_draws, b.em_draws)
    np.testing.assert_array_equal(a.mv_draws, b.mv_draws)
    assert a.em == b.em and a.mv == b.mv
    assert set(a.cpu_seconds) == {"fit", "score_data", "uniform", "score_uniform", "criteria"}
    assert all(v >= 0 for v in a.cpu_seconds.values())


def test_lof_names_and_odeval_novelty_scores():
    from odeval.detectors.novelty import NoveltyDetector

    assert make_detector("lof").name.startswith("LOF(k=") and hasattr(make_detector("lof"), "estimator")
    det = make_detector("LOF", k=5)
    assert isinstance(det, KNNQueryDetector) and det.name == "LOF(k=5)"
    X = np.random.default_rng(3).normal(size=(50, 3))
    Q = np.random.default_rng(4).normal(size=(10, 3))
    np.testing.assert_array_equal(det.fit(X).score(Q), NoveltyDetector("LOF", 5).fit(X).score(Q))


def test_infinite_scores_are_ranked_jointly_not_refused():
    """LOF-like methods score +inf where a point's neighbours coincide (integer data, feature sub-sampling).
    EM/MV depend on the joint order of data and uniform scores only, so ±inf is mapped, order-preserving, to
    finite values beyond both ranges: the criteria equal those of any finite scores in the same joint order."""
    from odeval.labelfree import emmv_all_k
    from odeval.labelfree.emmv_algorithm import _finite_jointly

    rng = np.random.default_rng(3)
    s_data, s_unif = rng.normal(size=50), rng.normal(size=400) + 1.0
    s_data[[3, 7]], s_unif[rng.choice(400, 60, replace=False)] = np.inf, np.inf
    a, b = _finite_jointly(s_data, s_unif)
    assert np.isfinite(a).all() and np.isfinite(b).all()
    big = max(s_data[np.isfinite(s_data)].max(), s_unif[np.isfinite(s_unif)].max()) + 7.0
    ref_a, ref_b = np.where(np.isinf(s_data), big, s_data), np.where(np.isinf(s_unif), big, s_unif)
    for f in (excess_mass, mass_volume):
        got, ref = f(a, b, 2.0), f(ref_a, ref_b, 2.0)
        assert got.criterion == ref.criterion
    # end to end: LDOF on integer data with duplicates scores +inf at some uniform points, and still gets EM/MV
    X = np.random.default_rng(0).integers(0, 3, size=(80, 3)).astype(float)
    (res,) = emmv_all_k("LDOF", X, [3], **FAST)
    assert np.isfinite(res.em) and np.isfinite(res.mv)


@pytest.mark.parametrize("kind", ["grid", "normal", "tiny", "duplicates"])
def test_leaf_query_of_uniform_points_equals_brute_force(kind):
    """emmv_many's leaf query (issue 26's cost fix) returns query_knn's rows bit for bit: same keys, distances,
    indices and neighbourhood sizes, ties at the k_max-distance included (the integer grid has many), for every
    metric with a numba kernel, any leaf size, block size and query order."""
    from odeval.labelfree import emmv_algorithm
    from odeval.neighbors import knn_graph, query_knn
    from odeval.neighbors._leaf_query import query_knn_leaves

    rng = np.random.default_rng(3)
    if kind == "grid":
        X = rng.integers(0, 4, size=(400, 3)).astype(float)
        U = np.vstack([rng.integers(0, 4, size=(300, 3)).astype(float), rng.uniform(0, 3, size=(700, 3))])
    elif kind == "normal":
        X = rng.normal(size=(500, 5))
        U = rng.uniform(-3, 3, size=(2000, 5))
    elif kind == "tiny":
        X = np.vstack([np.zeros((20, 2)), rng.normal(size=(6, 2))])  # 20 duplicates: ties beyond the first cap
        U = rng.uniform(-2, 2, size=(300, 2))
    else:  # four distinct points, ≈ 150 copies each: rows of hundreds of tied neighbours (the merge sort)
        X = rng.integers(0, 2, size=(600, 2)).astype(float)
        U = np.vstack([X[:50], rng.uniform(0, 1, size=(200, 2))])
    for k_max in (1, 7, min(40, X.shape[0])):
        for metric in ("euclidean", "manhattan", "chebyshev"):
            g = knn_graph(X, min(k_max, X.shape[0] - 1), metric=metric)
            ref = query_knn(g, U, k_max)
            got = emmv_algorithm._query_uniform(g, U, k_max)
            np.testing.assert_array_equal(got.keys, ref.keys)
            np.testing.assert_array_equal(got.distances, ref.distances)
            np.testing.assert_array_equal(got.indices, ref.indices)
            np.testing.assert_array_equal(got.neighborhood_sizes(), ref.neighborhood_sizes())
            bands = emmv_algorithm._query_uniform_bands(g, U, k_max)
            rows = np.concatenate([r for r, _ in bands])
            assert np.array_equal(np.sort(rows), np.arange(U.shape[0]))
            for r, q in bands:  # each band: the rows of query_knn, as wide as the band needs
                w = int((q.indices >= 0).sum(axis=1).max())
                assert q.keys.shape[1] == w
                np.testing.assert_array_equal(q.keys, ref.keys[r, :w])
                np.testing.assert_array_equal(q.indices, ref.indices[r, :w])
                np.testing.assert_array_equal(q.distances, ref.distances[r, :w])
                np.testing.assert_array_equal(q.Q, U[r])
            for leaf_size, block in ((1, 1), (3, 17), (10_000, 5)):
                code = {"euclidean": 0, "manhattan": 1, "chebyshev": 2}[metric]
                keys, idx = query_knn_leaves(X, U[::-1], k_max, code, leaf_size=leaf_size, block=block)
                np.testing.assert_array_equal(keys, ref.keys[::-1])
                np.testing.assert_array_equal(idx, ref.indices[::-1])


@pytest.mark.parametrize("kind", ["grid", "normal", "duplicates"])
def test_leaf_graph_of_a_draw_equals_knn_graph(kind):
    """emmv_many's per-draw graph through the leaf search is knn_graph's, bit for bit (keys, distances, indices,
    counts), ties and duplicates included; also for Manhattan and Chebyshev keys and any leaf / block size."""
    from odeval.labelfree import emmv_algorithm
    from odeval.neighbors import knn_graph
    from odeval.neighbors._leaf_query import knn_graph_leaves

    rng = np.random.default_rng(5)
    X = {"grid": rng.integers(0, 4, size=(300, 3)).astype(float), "normal": rng.normal(size=(400, 5)),
         "duplicates": rng.integers(0, 2, size=(300, 2)).astype(float)}[kind]
    for k_max in (1, 6, 45):
        ref = knn_graph(X, k_max)
        got = emmv_algorithm._draw_graph(X, k_max)
        for name in ("keys", "distances", "indices", "counts"):
            np.testing.assert_array_equal(getattr(got, name), getattr(ref, name))
        for code, metric in ((1, "manhattan"), (2, "chebyshev")):
            ref = knn_graph(X, k_max, metric=metric)
            for leaf_size, block in ((None, 512), (1, 7)):
                keys, idx = knn_graph_leaves(X, k_max, code, leaf_size=leaf_size, block=block)
                np.testing.assert_array_equal(keys, ref.keys)
                np.testing.assert_array_equal(idx, ref.indices)


def test_emmv_many_values_do_not_depend_on_the_query_path(monkeypatch):
    """EM and MV of every method are bit-identical with the leaf query and with brute force."""
    from odeval.labelfree import emmv_algorithm

    rng = np.random.default_rng(4)
    methods = {"kNN": [3, 20], "kNNW": [5], "LOF": [10], "SimplifiedLOF": [4], "LoOP": [12], "LDOF": [6, 25]}
    kw = {"n_generated": 5000, "seed": 2, "warn": False}
    mixed = np.vstack([rng.integers(0, 5, size=(150, 4)).astype(float) / 4, rng.normal(size=(150, 4))])
    binary = np.hstack([rng.integers(0, 2, size=(300, 3)).astype(float), rng.normal(size=(300, 1))])
    binary[:150, 3] = 0.0  # half the objects on 8 points: rows of many tied neighbours (bands of wide rows)
    for X in (mixed, binary):
        monkeypatch.setattr(emmv_algorithm, "LEAF_QUERY_MIN_N", 10**9)
        brute = emmv_algorithm.emmv_many(methods, X, **kw)
        monkeypatch.setattr(emmv_algorithm, "LEAF_QUERY_MIN_N", 1)
        leaf = emmv_algorithm.emmv_many(methods, X, **kw)
        for m in methods:
            for a, b in zip(brute[m], leaf[m], strict=True):
                assert np.array_equal(a.em_draws, b.em_draws, equal_nan=True)
                assert np.array_equal(a.mv_draws, b.mv_draws, equal_nan=True)


def test_author_box_per_setting():
    """box="author" (default): the standard criteria box all the data (``data_bounds``, anomalies included; else
    train ∪ test) on the grids of em_bench.py; sub-sampling boxes each draw's evaluated objects on the grids of
    em_bench_high.py (t step 0.001/V, α step 0.001), attributes constant on them never drawn; "train_test" is
    odeval's earlier box, bit for bit."""
    from odeval.labelfree.excess_mass_volume import default_alpha_grid, default_t_grid

    rng = np.random.default_rng(5)
    Xtr, Xte, anomalies = rng.normal(size=(60, 3)), rng.normal(size=(50, 3)), rng.normal(4, 1, size=(5, 3))
    allX = np.vstack([Xtr, Xte, anomalies])
    bounds = (allX.min(0), allX.max(0))
    res = emmv("iforest", Xtr, Xte, seed=1, data_bounds=bounds, **FAST)
    det = make_detector("iforest", seed=1).fit(Xtr)
    ss = np.random.SeedSequence(1)
    ss.spawn(1)
    useed = int(ss.spawn(1)[0].generate_state(1)[0])
    vol = float(np.prod(bounds[1] - bounds[0]))
    s_u = det.score(uniform_in_box(*bounds, 2000, useed))
    assert res.em == excess_mass(det.score(Xte), s_u, vol).criterion and res.box == "author"
    assert res.mv == mass_volume(det.score(Xte), s_u, vol).criterion
    old = emmv("iforest", Xtr, Xte, seed=1, data_bounds=bounds, box="train_test", **FAST)
    assert (old.em, old.mv) == (emmv("iforest", Xtr, Xte, seed=1, **FAST).em,
                                emmv("iforest", Xtr, Xte, seed=1, **FAST).mv)
    with pytest.raises(ValueError, match="data_bounds must contain"):
        emmv("iforest", Xtr, Xte, data_bounds=(Xte.min(0), Xte.max(0)), **FAST)

    # sub-sampling: the box of X_test[:, f], the finer grids, constant attributes of X_test never drawn
    Xtr, Xte = rng.normal(size=(60, 10)), rng.normal(size=(50, 10))
    Xte[:, 3] = 0.0
    res = emmv("iforest", Xtr, Xte, draws=3, features=4, seed=2, **FAST)
    assert all(3 not in f for f in res.features)
    ss = np.random.SeedSequence(2)
    ss.spawn(1)
    useeds = [int(s.generate_state(1)[0]) for s in ss.spawn(3)]
    for f, useed, em, mv in zip(res.features, useeds, res.em_draws, res.mv_draws, strict=True):
        lo, hi, vol = bounding_box(Xte[:, f])
        det = make_detector("iforest", seed=2).fit(Xtr[:, f])
        s_u, s_d = det.score(uniform_in_box(lo, hi, 2000, useed)), det.score(Xte[:, f])
        assert em == excess_mass(s_d, s_u, vol, t=default_t_grid(vol, 0.001)).criterion
        assert mv == mass_volume(s_d, s_u, vol, alpha=default_alpha_grid(0.9, 0.999, 0.001)).criterion
    old = emmv("iforest", Xtr, Xte, draws=3, features=4, seed=2, box="train_test", **FAST)
    assert old.box == "train_test" and old.to_dict()["box"] == "train_test"


def sparse_data(n: int, d: int, seed: int) -> np.ndarray:
    """Zero-inflated, right-skewed attributes, like word frequencies or counts: each attribute is 0 for 65–97 %
    of the objects and lognormal otherwise; standardised as the chapter's protocol does."""
    rng = np.random.default_rng(seed)
    nonzero = rng.random((n, d)) < rng.uniform(0.03, 0.35, size=d)
    X = np.where(nonzero, rng.lognormal(0.0, 1.0, size=(n, d)), 0.0)
    return (X - X.mean(0)) / X.std(0)


@pytest.mark.parametrize("detector", ["iforest", "lof"])
def test_sparse_data_estimable_with_nested_points_and_exact_integration(detector):
    """Issue 26, estimates that do not exist. On zero-inflated skewed attributes the objects sit near the box's
    lower corner: the level sets of mass ≥ 0.9 fill ~1e-5 of a 5-d box, so uniform points leave them empty
    (volume 0) and the t grid [0, 100/V) ends before EM⁻¹(0.9) (a level set must fill ≥ 0.1 % of the box to
    be reached). sampling="nested" estimates those volumes (unbiased) and integration="exact" removes the grid's
    end: EM and MV are estimable in ≥ 90 % of the draws."""
    X = sparse_data(800, 30, 0)
    res = emmv(detector, X[:400], X[400:], draws=10, n_generated=20_000, seed=0, sampling="nested",
               integration="exact")
    assert res.em_failed <= 1 and res.mv_failed <= 1, res.reasons
    if detector == "iforest":  # the authors' uniform points: EM and MV missing in most draws
        with pytest.warns(EMMVWarning):
            uniform = emmv(detector, X[:400], X[400:], draws=10, n_generated=20_000, seed=0, integration="exact",
                           sampling="uniform")
        assert uniform.em_failed >= 5 and uniform.mv_failed >= 5
        assert any("contains none of the 20000 uniform points" in r for r in uniform.reasons)


def sparse_table(n: int, d: int, seed: int) -> np.ndarray:
    """A table like the held-out one of issue 26 (57 attributes, most values zero): each attribute is 0 for
    80–98 % of the objects and heavy-tailed lognormal otherwise (word frequencies, counts), standardised."""
    rng = np.random.default_rng(seed)
    nonzero = rng.random((n, d)) < rng.uniform(0.02, 0.20, size=d)
    X = np.where(nonzero, rng.lognormal(0.0, 1.5, size=(n, d)), 0.0)
    return (X - X.mean(0)) / X.std(0)


@pytest.fixture(scope="module")
def sparse57():
    return sparse_table(1000, 57, 1)


@pytest.mark.parametrize("detector", ["iforest", "ocsvm", "lof"])
def test_sparse_data_estimable_by_default(sparse57, detector):
    """Issue 26: with the default settings (the authors' box and grids, sampling="auto") EM and MV are estimable
    in ≥ 90 % of the draws on sparse data (57 attributes, ~89 % zeros), the unsupervised split of the CLI; the
    authors' uniform points alone leave iForest and OCSVM without EM in (nearly) every draw."""
    X = sparse57
    res = emmv(detector, X[:500], X[500:], draws=10, n_generated=20_000, seed=0)
    assert res.sampling == "auto" and res.em_failed <= 1 and res.mv_failed <= 1, res.reasons
    if detector != "lof":
        with pytest.warns(EMMVWarning):
            uniform = emmv(detector, X[:500], X[500:], draws=10, n_generated=20_000, seed=0, sampling="uniform")
        assert uniform.em_failed >= 8


def test_auto_redoes_only_the_draws_it_must():
    """sampling="auto": a criterion estimable with uniform points is bit for bit that of sampling="uniform" (and
    recorded "uniform/grid"); EM redone where only the grid is the cause is the uniform points' exact EM; a
    criterion redone with nested points is bit for bit that of sampling="nested" (same points, same scores)."""
    X = sparse_data(800, 30, 0)
    kw = dict(draws=10, n_generated=20_000, seed=0)
    with pytest.warns(EMMVWarning):
        uni = emmv("iforest", X[:400], X[400:], sampling="uniform", **kw)
        uni_exact = emmv("iforest", X[:400], X[400:], sampling="uniform", integration="exact", **kw)
        nested = emmv("iforest", X[:400], X[400:], sampling="nested", **kw)
    nested_exact = emmv("iforest", X[:400], X[400:], sampling="nested", integration="exact", **kw)
    auto = emmv("iforest", X[:400], X[400:], **kw)
    assert len(auto.em_methods) == len(auto.mv_methods) == 10 and auto.em_failed == auto.mv_failed == 0
    ref = {"uniform/grid": uni, "uniform/exact": uni_exact, "nested/grid": nested, "nested/exact": nested_exact}
    for crit in ("em", "mv"):
        values, methods = getattr(auto, f"{crit}_draws"), getattr(auto, f"{crit}_methods")
        uni_ok = np.isfinite(getattr(uni, f"{crit}_draws"))
        assert all(methods[i] == "uniform/grid" for i in np.flatnonzero(uni_ok))
        for i, how in enumerate(methods):
            assert values[i] == getattr(ref[how], f"{crit}_draws")[i], (crit, i, how)
    counts = auto.method_counts()
    # every kind of fallback triggered here: exact EM on the uniform points, nested points for EM and for MV
    assert {"uniform/exact", "nested/exact"} <= set(counts["em"]) and "nested/grid" in counts["mv"]
    assert "uniform/grid" in counts["mv"] and sum(counts["em"].values()) == 10
    # an explicit sampling never falls back
    assert set(uni.em_methods) == {"uniform/grid"} and set(nested_exact.mv_methods) == {"nested/exact"}


def test_per_draw_method_is_recorded(sparse57):
    """Each draw's method is in the result, its JSON (to_dict), the bench details and the CLI's text."""
    from odeval.render.labelfree import render_emmv

    X = sparse57[:, :20]
    res = emmv("iforest", X[:500], X[500:], draws=4, n_generated=5000, seed=0)
    d = res.to_dict()
    assert d["sampling"] == "auto" and len(d["em_methods"]) == len(d["mv_methods"]) == 4
    assert d["em_methods"] == list(res.em_methods) and all(m.count("/") == 1 for m in d["em_methods"])
    assert d["method_counts"] == res.method_counts()
    assert sum(d["method_counts"]["mv"].values()) == 4 - res.mv_failed

    class _Split:
        features = np.arange(20)

    class _Ev:
        dataset, setting, result, labelled, split = "t", "unsupervised", res, None, _Split()

    text = render_emmv(_Ev())
    assert "estimated with (sampling auto; draws): EM " in text
    for how, n in res.method_counts()["em"].items():
        assert f"{how} {n}" in text


def test_auto_fallback_of_emmv_many_equals_emmv():
    """emmv_all_k / emmv_many (one query per draw for every k) give the same per-draw values and methods as
    emmv of each k, including draws redone with nested points; threads give the same bits."""
    from odeval.labelfree import emmv_all_k

    X = sparse_table(300, 20, 2)
    kw = dict(draws=4, n_generated=5000, seed=1)
    many = emmv_all_k("kNN", X, [3, 10], **kw)
    assert any(m.startswith("nested") for r in many for m in r.em_methods + r.mv_methods)
    for k, r in zip([3, 10], many, strict=True):
        one = emmv(KNNQueryDetector("kNN", k), X, **kw)
        assert np.array_equal(r.em_draws, one.em_draws, equal_nan=True)
        assert np.array_equal(r.mv_draws, one.mv_draws, equal_nan=True)
        assert r.em_methods == one.em_methods and r.mv_methods == one.mv_methods
    threads = emmv(KNNQueryDetector("kNN", 10), X, workers=2, executor="threads", **kw)
    assert np.array_equal(threads.em_draws, many[1].em_draws, equal_nan=True)
    assert threads.em_methods == many[1].em_methods


def test_emmv_many_ldof_on_draws_of_few_distinct_points(monkeypatch):
    """Draws of a few binary attributes (issue 26: Annthyroid's draws of 8–12 distinct points among 6,729): LDOF's
    rows of hundreds of tied neighbours sum by location; EM and MV equal those of the pairwise sums (the scores
    differ in the last bits only, which moves no score across another here)."""
    from odeval.detectors import ldof
    from odeval.labelfree import emmv_algorithm

    rng = np.random.default_rng(8)
    X = np.hstack([(rng.random((600, 9)) < 0.15).astype(float), rng.normal(size=(600, 1))])
    X[:, 9] = np.where(rng.random(600) < 0.9, 0.0, X[:, 9])
    methods = {"LDOF": [20, 150], "LOF": [30]}
    kw = {"n_generated": 4000, "seed": 1, "draws": 4, "warn": False}
    by_location = emmv_algorithm.emmv_many(methods, X, **kw)
    monkeypatch.setattr(ldof, "_TIE_ROW_MIN", 10**9)  # no location sums: the pairwise kernels throughout
    pairwise = emmv_algorithm.emmv_many(methods, X, **kw)
    for m in methods:
        for a, b in zip(by_location[m], pairwise[m], strict=True):
            np.testing.assert_allclose(a.em_draws, b.em_draws, rtol=1e-12, equal_nan=True)
            np.testing.assert_allclose(a.mv_draws, b.mv_draws, rtol=1e-12, equal_nan=True)
            assert np.isfinite(a.em_draws).any()
