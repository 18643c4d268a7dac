"""Estimator adapters: orientation (higher = more outlying), fit/score on different data, seeds."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import IsolationForest
from sklearn.neighbors import LocalOutlierFactor
from sklearn.svm import OneClassSVM

from odeval.detectors import EstimatorDetector, wrap_estimator


def _data():
    rng = np.random.default_rng(0)
    train = rng.normal(size=(200, 3))
    test = np.vstack([rng.normal(size=(50, 3)), [[6.0, 6.0, 6.0], [-7.0, 5.0, 0.0]]])
    return train, test


@pytest.mark.parametrize("est", [IsolationForest(n_estimators=50), OneClassSVM(gamma=0.1, nu=0.1),
                                 LocalOutlierFactor(n_neighbors=10, novelty=True)])
def test_sklearn_estimators_are_negated_and_outliers_rank_first(est):
    train, test = _data()
    det = wrap_estimator(est, seed=0 if "random_state" in est.get_params() else None)
    s = det.fit(train).score(test)
    assert s.shape == (52,) and s.dtype == np.float64
    np.testing.assert_array_equal(s, -det.estimator_.score_samples(test))
    assert set(np.argsort(s)[-2:]) == {50, 51}


def test_fit_and_score_different_data_and_original_untouched():
    train, test = _data()
    est = IsolationForest(n_estimators=20, random_state=3)
    det = EstimatorDetector(est, seed=5).fit(train)
    assert est.get_params()["random_state"] == 3 and not hasattr(est, "estimators_")
    assert det.estimator_.get_params()["random_state"] == 5
    assert det.score(test).shape == (52,)
    assert det.fit_score(train).shape == (200,)


def test_seed_gives_identical_results():
    train, test = _data()
    a = wrap_estimator(IsolationForest(n_estimators=30), seed=1).fit(train).score(test)
    b = wrap_estimator(IsolationForest(n_estimators=30), seed=1).fit(train).score(test)
    c = wrap_estimator(IsolationForest(n_estimators=30), seed=2).fit(train).score(test)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_decision_function_choice_and_explicit_orientation():
    train, test = _data()
    det = wrap_estimator(OneClassSVM(gamma=0.1), method="decision_function").fit(train)
    np.testing.assert_array_equal(det.score(test), -det.estimator_.decision_function(test))
    det2 = wrap_estimator(OneClassSVM(gamma=0.1), method="decision_function", higher_is_outlier=True).fit(train)
    np.testing.assert_array_equal(det2.score(test), det2.estimator_.decision_function(test))


def test_errors():
    train, test = _data()
    with pytest.raises(ValueError, match="no random_state"):
        wrap_estimator(OneClassSVM(), seed=1).fit(train)
    with pytest.raises(ValueError, match="novelty=True"):
        wrap_estimator(LocalOutlierFactor())
    with pytest.raises(RuntimeError, match="fit"):
        wrap_estimator(IsolationForest()).score(test)
    det = wrap_estimator(IsolationForest(n_estimators=5), seed=0).fit(train)
    with pytest.raises(ValueError, match="attributes"):
        det.score(test[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        det.score(np.where(np.eye(52, 3) > 0, np.nan, test))
    with pytest.raises(ValueError, match="method must be"):
        wrap_estimator(IsolationForest(), method="predict")


def test_pyod_detector_kept_as_is():
    pytest.importorskip("pyod")
    from pyod.models.iforest import IForest

    train, test = _data()
    det = wrap_estimator(IForest(n_estimators=30), seed=0)
    assert det.method == "decision_function" and det.higher_is_outlier
    s = det.fit(train).score(test)
    np.testing.assert_array_equal(s, det.estimator_.decision_function(test))
    assert set(np.argsort(s)[-2:]) == {50, 51}
