"""The meta-features and the meta-learned selector (issue 27)."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.labelfree.meta import (
    MODEL_FILE,
    MetaConfig,
    fit_meta_model,
    grid_candidates,
    load_model,
    read_model,
    save_model,
)
from odeval.labelfree.metafeatures import FEATURE_NAMES, meta_features
from odeval.labelfree.selection import get_selector, run_selector


def _table(seed: int = 0, n: int = 150, d: int = 4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:5] += 6.0
    X[10] = X[11]  # one exact duplicate
    return X


def test_meta_features_are_finite_named_and_deterministic() -> None:
    X = _table()
    f = meta_features(X)
    assert f.shape == (len(FEATURE_NAMES),) and np.isfinite(f).all()
    assert np.array_equal(f, meta_features(X.copy()))
    named = dict(zip(FEATURE_NAMES, f, strict=True))
    assert named["log_n"] == pytest.approx(np.log(150)) and named["log_d"] == pytest.approx(np.log(4))
    assert named["dup_rate"] == pytest.approx(1 / 150)
    assert 1.0 < named["id_mle"] < 8.0  # Gaussian data in 4 dimensions
    assert -1.0 <= named["agree_min"] <= named["agree_mean"] <= 1.0


def test_meta_features_refuse_tiny_or_nonfinite_tables() -> None:
    with pytest.raises(ValueError, match="N >= 12"):
        meta_features(np.zeros((5, 2)))
    X = _table()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        meta_features(X)


def _training(seed: int = 0, n: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(n, len(FEATURE_NAMES)))
    G = rng.normal(scale=0.05, size=(n, len(grid_candidates())))
    G[:, grid_candidates().index(("kNN", 10))] = 0.0
    w = rng.uniform(0.2, 1.0, size=n)
    return F, G, w


def test_forest_prediction_equals_scikit_learn_and_is_deterministic(tmp_path) -> None:
    from sklearn.ensemble import RandomForestRegressor

    F, G, w = _training()
    cfg = MetaConfig("forest", n_trees=7, min_leaf=3, seed=3)
    m1 = fit_meta_model(F, G, w, cfg, grid_candidates(), FEATURE_NAMES)
    m2 = fit_meta_model(F, G, w, cfg, grid_candidates(), FEATURE_NAMES)
    Q = np.random.default_rng(9).normal(size=(6, F.shape[1]))
    assert np.array_equal(m1.predict_gain(Q), m2.predict_gain(Q))
    rf = RandomForestRegressor(n_estimators=7, min_samples_leaf=3, max_features=cfg.max_features, bootstrap=False,
                               random_state=3, n_jobs=1).fit(F, G, sample_weight=w)
    np.testing.assert_allclose(m1.predict_gain(Q), rf.predict(Q), rtol=1e-10, atol=1e-12)
    back = read_model(save_model(m1, tmp_path / "m.npz"))
    assert np.array_equal(back.predict_gain(Q), m1.predict_gain(Q))
    assert back.config == cfg


@pytest.mark.parametrize("kind", ["neighbors", "fixed"])
def test_other_kinds_round_trip_and_fall_back_to_knn10(tmp_path, kind: str) -> None:
    F, G, w = _training()
    G[:] = -0.1  # nothing beats kNN k = 10 ...
    G[:, grid_candidates().index(("kNN", 10))] = 0.0
    m = fit_meta_model(F, G, w, MetaConfig(kind, n_neighbors=5), grid_candidates(), FEATURE_NAMES)
    assert m.choose(F[0]) == (("kNN", 10), 0.0)
    G[:, grid_candidates().index(("LOF", 20))] = 0.2  # ... but LOF k = 20 beats it everywhere
    m = fit_meta_model(F, G, w, MetaConfig(kind, n_neighbors=5, margin=0.05), grid_candidates(), FEATURE_NAMES)
    assert m.choose(F[0])[0] == ("LOF", 20)
    assert m.choose(F[0], available=[("kNN", 10), ("kNN", 20)])[0] == ("kNN", 10)
    back = read_model(save_model(m, tmp_path / "m.npz"))
    assert np.array_equal(back.predict_gain(F), m.predict_gain(F))


@pytest.mark.skipif(not MODEL_FILE.exists(), reason="the shipped model is built by benchmarks/meta_train.py")
def test_shipped_model_records_its_provenance_and_selects() -> None:
    model = load_model()
    for key in ("store_study_hash", "results_sha256", "script", "config", "validation"):
        assert key in model.meta
    assert tuple(model.feature_names) == FEATURE_NAMES
    X = _table(1)
    names = [f"{m}-{k:03d}" for m, k in grid_candidates() if k < X.shape[0]]
    S = np.random.default_rng(0).normal(size=(len(names), X.shape[0]))
    info = get_selector("meta")
    assert info.needs_data and not info.default
    a = run_selector("meta", S, names, X=X)
    b = run_selector("meta", S, names, X=X)
    assert a.index == b.index and a.note == b.note
    assert "kNN k = 10" in a.note
    with pytest.raises(ValueError, match="needs the data"):
        run_selector("meta", S, names)


@pytest.mark.skipif(not MODEL_FILE.exists(), reason="the shipped model is built by benchmarks/meta_train.py")
def test_select_reports_meta_with_its_out_of_sample_record() -> None:
    from odeval.labelfree.recommend import SelectSettings, recommend
    from odeval.labelfree.record import expectations, meta_validated

    X = _table(2, n=120, d=3)
    rec = recommend(X, settings=SelectSettings(ireos=False, resamples=0, k_max=20))
    meta = {c.selector: c for c in rec.choices}["meta"]
    assert meta.kind == "candidate" and meta.name
    assert ("validated better" in meta.note) == meta_validated()
    if not meta_validated():
        assert "NOT shown better than kNN k = 10" in meta.note and rec.recommended_by != "meta"
    exp = expectations(["meta"])[0]
    assert exp.p_vs_reference is not None and "leave-one-base-dataset-out" in exp.basis
    off = recommend(X, settings=SelectSettings(ireos=False, resamples=0, k_max=20, meta=False))
    assert "meta" not in {c.selector for c in off.choices}


# ------------------------------------------------------------------ attempt 2: default, lowrank, winprob kinds
def test_low_rank_is_the_weighted_truncated_svd() -> None:
    from odeval.labelfree.meta import low_rank

    _, G, w = _training()
    full, _ = low_rank(G, w, min(G.shape))
    np.testing.assert_allclose(full, G, atol=1e-12)  # full rank reconstructs the matrix
    rec3, U3 = low_rank(G, w, 3)
    assert U3.shape == (G.shape[0], 3)
    again = low_rank(G.copy(), w.copy(), 3)
    assert np.array_equal(rec3, again[0]) and np.array_equal(U3, again[1])
    mu = w @ G / w.sum()
    # the rank-3 reconstruction is the best rank-3 weighted approximation: no worse than a random rank-3 projection
    Q, _ = np.linalg.qr(np.random.default_rng(1).normal(size=(G.shape[1], 3)))
    err = lambda R: float(w @ ((G - R) ** 2).sum(axis=1))  # noqa: E731
    assert err(rec3) <= err(mu + (G - mu) @ Q @ Q.T)
    with pytest.raises(ValueError, match="rank 0"):
        low_rank(G, w, 0)


def test_lowrank_prediction_equals_scikit_learn_on_the_latent_factors(tmp_path) -> None:
    from sklearn.ensemble import RandomForestRegressor

    from odeval.labelfree.meta import low_rank

    F, G, w = _training()
    cfg = MetaConfig("lowrank", rank=4, n_trees=7, min_leaf=3, seed=5)
    m1 = fit_meta_model(F, G, w, cfg, grid_candidates(), FEATURE_NAMES)
    m2 = fit_meta_model(F, G, w, cfg, grid_candidates(), FEATURE_NAMES)
    Q = np.random.default_rng(9).normal(size=(6, F.shape[1]))
    assert np.array_equal(m1.predict_gain(Q), m2.predict_gain(Q))
    rec, U = low_rank(G, w, 4)
    mu = w @ G / w.sum()
    V = np.linalg.lstsq(U, rec - mu, rcond=None)[0]  # (r, R): rec = mu + U V
    rf = RandomForestRegressor(n_estimators=7, min_samples_leaf=3, max_features=cfg.max_features, bootstrap=False,
                               random_state=5, n_jobs=1).fit(F, U, sample_weight=w)
    np.testing.assert_allclose(m1.predict_gain(Q), mu + rf.predict(Q) @ V, rtol=1e-9, atol=1e-10)
    back = read_model(save_model(m1, tmp_path / "m.npz"))
    assert back.config == cfg and np.array_equal(back.predict_gain(Q), m1.predict_gain(Q))


def test_winprob_estimates_the_probability_of_beating_knn10(tmp_path) -> None:
    F, G, w = _training()
    G[:] = -0.1
    knn10 = grid_candidates().index(("kNN", 10))
    lof20 = grid_candidates().index(("LOF", 20))
    G[:, knn10] = 0.0
    G[:, lof20] = np.where(np.arange(G.shape[0]) % 4 == 0, -0.3, 0.01)  # LOF k = 20 wins on 3 tables in 4
    m = fit_meta_model(F, G, w, MetaConfig("winprob", n_trees=5, min_leaf=50, margin=0.6), grid_candidates(),
                       FEATURE_NAMES)
    p = m.predict_gain(F[0])
    assert p[knn10] == 0.0 and p[lof20] == pytest.approx(w[np.arange(len(w)) % 4 != 0].sum() / w.sum())
    assert m.choose(F[0])[0] == ("LOF", 20)
    strict = fit_meta_model(F, G, w, MetaConfig("winprob", n_trees=5, min_leaf=50, margin=0.9), grid_candidates(),
                            FEATURE_NAMES)
    assert strict.choose(F[0]) == (("kNN", 10), 0.0)
    back = read_model(save_model(m, tmp_path / "m.npz"))
    assert back.config == m.config and np.array_equal(back.predict_gain(F), m.predict_gain(F))


def test_default_kind_always_picks_knn10() -> None:
    F, G, w = _training()
    G[:, grid_candidates().index(("LOF", 20))] = 0.5
    m = fit_meta_model(F, G, w, MetaConfig("default"), grid_candidates(), FEATURE_NAMES)
    assert all(m.choose(f) == (("kNN", 10), 0.0) for f in F[:5])
    assert m.config.label() == "default"
