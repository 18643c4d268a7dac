"""Algorithms 1 and 2 of Fourure et al. (2021), thresholds, seeding and bad input, on synthetic data."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.detectors import NoveltyDetector
from odeval.measures import max_f1, max_f1_threshold
from odeval.protocols import (
    SETTINGS,
    Setting,
    estimated_threshold,
    protocol_table,
    repeat_protocol,
    run_protocol,
    run_seeds,
    split_train_test,
    summarize,
)


def _data(n_normal=400, n_anom=40, shift=2.0, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack((rng.normal(size=(n_normal, 4)), rng.normal(size=(n_anom, 4)) + shift))
    y = np.r_[np.zeros(n_normal, bool), np.ones(n_anom, bool)]
    p = rng.permutation(y.size)
    return X[p], y[p]


def test_algorithm2_estimated_threshold_gives_p_equal_r_equal_f1(gauss):
    X, y = _data()
    for seed in range(5):
        for beta in (0.05, 0.2, 0.5):
            r = run_protocol(X, y, gauss(), algorithm=2, test_size=beta, seed=seed)
            assert r.precision == r.recall == r.f1
            assert r.n_test_anomalies == y.sum()  # every anomaly ends up in the test set
            assert r.contamination == pytest.approx(r.test_contamination)


def test_algorithm1_threshold_comes_from_the_training_set(gauss):
    X, y = _data()
    r = run_protocol(X, y, gauss(), algorithm=1, test_size=0.2, seed=3, normalize=None)
    train, test = split_train_test(y, 0.2, 3)
    model = gauss().fit(X[train][~y[train]])
    s_tr = model.score(X[train])
    assert r.contamination == pytest.approx(y[train].mean())
    assert r.threshold == estimated_threshold(s_tr, y[train].mean())
    assert int((s_tr >= r.threshold).sum()) == int(y[train].sum())  # fp = fn on the training set
    assert r.n_test == test.size and r.n_test_anomalies == int(y[test].sum())


def test_optimal_threshold_never_splits_a_tie_group():
    y = np.array([1, 1, 0, 0, 0, 0], bool)
    s = np.array([2, 1, 1, 1, 1, 0], float)
    t, prf = max_f1_threshold(y, s)
    # t = 2: F1 = 2/3; t = 1: F1 = 4/7; a one-object-at-a-time sweep would take the anomaly out of the tie
    # group at 1 first and report F1 = 1
    assert prf.f1 == max_f1(y, s) == pytest.approx(2 / 3)
    assert t == 2.0
    pred = s >= t
    assert prf.precision == (pred & y).sum() / pred.sum()


def test_optimal_f1_is_at_least_the_estimated_f1(gauss):
    X, y = _data()
    res = protocol_table(X, y, gauss(), runs=8, seed=1)
    f1 = {(r.run, r.setting): r.f1 for r in res}
    for run in range(8):
        assert f1[(run, "alg2-5-optimal")] >= f1[(run, "alg2-5-estimated")]


def test_table1_ordering_on_synthetic_data(gauss):
    """The paper's finding on data with a known answer: recycling and a small test share inflate F1 and AVPR,
    ROC AUC stays put (means over runs)."""
    X, y = _data(shift=1.5)
    rows = summarize(protocol_table(X, y, gauss(), runs=30, seed=0))
    m = {(r["setting"], r["metric"]): r["mean"] for r in rows}
    names = [s.name for s in SETTINGS]
    f1 = [m[(s, "f1")] for s in names]
    assert f1[0] < f1[1] < f1[2] <= f1[3]
    assert m[(names[0], "avpr")] < m[(names[1], "avpr")] < m[(names[2], "avpr")]
    aucs = [m[(s, "auc")] for s in names]
    assert max(aucs) - min(aucs) < 0.03
    assert all(r["runs"] == 30 for r in rows)


def test_runs_are_seeded_and_independent_of_parallelism():
    X, y = _data(n_normal=150, n_anom=20)
    det = NoveltyDetector("kNNW", 5)  # importable by the worker processes (a test-module class may not be)
    a = protocol_table(X, y, det, runs=6, seed=7)
    b = protocol_table(X, y, det, runs=6, seed=7, workers=2)
    assert a == b
    assert protocol_table(X, y, det, runs=6, seed=7, workers=2, executor="threads") == a
    with pytest.warns(DeprecationWarning, match="use workers="):  # the former name, for one release
        assert protocol_table(X, y, det, runs=6, seed=7, n_jobs=2, executor="threads") == a
    c = protocol_table(X, y, det, runs=6, seed=8)
    assert a != c
    # the settings of one β share the split; repeat_protocol reproduces a table column
    rep = repeat_protocol(X, y, det, algorithm=1, test_size=0.2, runs=6, seed=7)
    assert [r.f1 for r in rep] == [r.f1 for r in a if r.setting == "alg1-20-estimated"]
    assert run_seeds(7, 6) == run_seeds(7, 6) and len(set(run_seeds(7, 6))) == 6


def test_novelty_detector_and_factory_scorers(gauss):
    X, y = _data(n_normal=120, n_anom=15)
    r = run_protocol(X, y, NoveltyDetector("LOF", 5), algorithm=2, test_size=0.2, seed=0)
    assert r.precision == r.recall == r.f1 and 0.5 < r.auc <= 1
    seen = []

    def factory(seed):
        seen.append(seed)
        return gauss()

    repeat_protocol(X, y, factory, runs=3, seed=5)
    assert seen == run_seeds(5, 3)


def test_split_sizes_and_stratification():
    y = np.r_[np.zeros(95, bool), np.ones(5, bool)]
    train, test = split_train_test(y, 0.2, 0)
    assert test.size == 20 and np.intersect1d(train, test).size == 0 and train.size + test.size == 100
    train, test = split_train_test(y, 0.2, 0, stratify=True)
    assert y[test].sum() == 1 and (~y[test]).sum() == 19


@pytest.mark.parametrize("beta", [0, 1, 1.5, -0.2, "0.2", True])
def test_bad_test_size(beta, gauss):
    X, y = _data(n_normal=50, n_anom=5)
    with pytest.raises(ValueError, match=r"test_size β must"):
        run_protocol(X, y, gauss(), test_size=beta)


def test_split_without_anomaly_or_normal_in_test(gauss):
    X, y = _data(n_normal=60, n_anom=1)
    with pytest.raises(ValueError, match="no anomaly in the test set"):
        protocol_table(X, y, gauss(), settings=[Setting("a1", 1, 0.1, "estimated")], runs=20, seed=0)
    y2 = np.r_[np.ones(9, bool), np.zeros(3, bool)]
    X2 = np.random.default_rng(0).normal(size=(12, 2))
    seed = next(s for s in range(100) if y2[split_train_test(y2, 0.05, s)[1]].all())
    with pytest.raises(ValueError, match="no normal object in the test set"):
        run_protocol(X2, y2, gauss(), algorithm=2, test_size=0.05, seed=seed)


def test_bad_detector_and_labels(gauss):
    X, y = _data(n_normal=50, n_anom=5)
    with pytest.raises(ValueError, match="no fit/score"):
        run_protocol(X, y, object())
    with pytest.raises(ValueError, match="binary"):
        run_protocol(X, np.where(y, 2, 0), gauss())
    with pytest.raises(ValueError, match="objects but labels"):
        run_protocol(X, y[:-1], gauss())
