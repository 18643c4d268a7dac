"""Regularisations (Kriegel et al. 2011, Sect. 3.1), orientation helpers and ``unify``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from odeval.detectors.base import MethodInfo
from odeval.scaling import (
    GaussianScaling,
    baseline_regularization,
    linear_inversion,
    log_inversion,
    public_from_raw,
    raw_from_public,
    recommended_unification,
    regularize,
    unify,
)

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "scaling" / "elki_scaling.npz"

ODIN_INFO = MethodInfo("ODIN", 1, True, None, (0.0, np.inf), "Hautamäki et al. 2004")
LOF_INFO = MethodInfo("LOF", 1, False, 1.0, (0.0, np.inf), "Breunig et al. 2000")


def test_baseline_regularization():
    out = baseline_regularization(np.array([0.5, 1.0, 1.5, np.inf, np.nan]), 1.0)
    assert out[:4].tolist() == [0.0, 0.0, 0.5, np.inf] and np.isnan(out[4])
    with pytest.raises(ValueError, match="baseline"):
        baseline_regularization(np.array([1.0]), np.nan)


def test_linear_inversion_and_public_scores():
    raw = np.array([0.0, 0.5, 2.0, 1.0])  # ODIN in-degrees: low = outlier
    assert linear_inversion(raw).tolist() == [2.0, 1.5, 0.0, 1.0]
    assert linear_inversion(raw, maximum=3.0).tolist() == [3.0, 2.5, 1.0, 2.0]
    public = public_from_raw(raw, ODIN_INFO)
    np.testing.assert_array_equal(public, -raw)
    np.testing.assert_array_equal(linear_inversion(raw), public - public.min())
    np.testing.assert_array_equal(raw_from_public(public, True), raw)


def test_log_inversion():
    raw = np.array([0.01, 0.1, 1.0, 0.0])
    out = log_inversion(raw)
    np.testing.assert_allclose(out[:3], [np.log(100), np.log(10), 0.0])
    assert np.isposinf(out[3])
    np.testing.assert_allclose(log_inversion(raw[:3], normalize=True), [1.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="0 < min < max"):
        log_inversion(raw, normalize=True)
    with pytest.raises(ValueError, match="positive maximum"):
        log_inversion(np.array([-1.0, -2.0]))


def test_regularize_dispatch_and_orientation():
    raw = np.array([0.2, 0.4, 0.8])
    public = -raw
    np.testing.assert_array_equal(regularize(public, "linear_inversion", inverted=True, orientation="public"),
                                  linear_inversion(raw))
    np.testing.assert_array_equal(regularize(public, "log_inversion", inverted=ODIN_INFO, orientation="public"),
                                  log_inversion(raw))
    np.testing.assert_array_equal(regularize(raw, "baseline", baseline=0.4), [0.0, 0.0, 0.4])
    np.testing.assert_array_equal(regularize(raw, "none"), raw)
    with pytest.raises(ValueError, match="baseline"):
        regularize(raw, "baseline")
    with pytest.raises(ValueError, match="unknown regularisation"):
        regularize(raw, "sqrt")
    with pytest.raises(ValueError, match="orientation"):
        regularize(raw, "none", orientation="up")
    with pytest.raises(TypeError):
        raw_from_public(raw, "yes")


@pytest.mark.parametrize(
    ("method", "reg", "norm"),
    [("KNN", "none", "gaussian"), ("knnw", "none", "gaussian"), ("LOF", "baseline", "gaussian"),
     ("LoOP", "none", "identity"), ("KDEOS", "none", "identity"), ("ODIN", "linear_inversion", "gaussian"),
     ("FastABOD", "log_inversion", "gaussian"), ("COF", "baseline", "gaussian")],
)
def test_recommendations(method, reg, norm):
    u = recommended_unification(method)
    assert (u.regularization, u.normalization) == (reg, norm)
    assert u.description.startswith(u.method)


def test_recommendation_from_method_info_and_detector():
    assert recommended_unification(ODIN_INFO).inverted
    custom = MethodInfo("Ratio", 1, False, 2.0, (0.0, np.inf), "-")
    u = recommended_unification(custom)
    assert (u.regularization, u.baseline) == ("baseline", 2.0)
    inv = MethodInfo("Sim", 1, True, None, (0.0, 1.0), "-")
    assert recommended_unification(inv).regularization == "linear_inversion"
    from odeval.detectors import get_detector

    det = get_detector("LDOF")  # a Detector instance: its own MethodInfo decides (LDOF, a ratio: baseline 1)
    assert recommended_unification(det).baseline == det.info.inlier_value == 1.0
    with pytest.raises(TypeError):
        recommended_unification(3.0)


def test_unify_orientation_public_vs_raw():
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 20, 100) / 10.0  # ODIN-like in-degrees, low = outlier
    pub = -raw
    a = unify(pub, "ODIN")
    b = unify(raw, "ODIN", orientation="raw")
    np.testing.assert_allclose(a, b)
    # linear inversion + Gaussian about the mean = Gaussian scaling of the public scores
    np.testing.assert_allclose(a, GaussianScaling().fit_transform(pub), atol=1e-12)
    assert a[np.argmin(raw)] == a.max() and a[np.argmax(raw)] == 0.0
    loop = np.array([0.0, 0.2, 0.9, 1.0 + 1e-12])
    assert unify(loop, "LoOP").tolist() == [0.0, 0.2, 0.9, 1.0]
    with pytest.raises(ValueError, match="orientation"):
        unify(loop, "LoOP", orientation="down")


def test_unify_matches_elki_pipeline():
    """KNN: StandardDeviationScaling(λ=1); LOF: StandardDeviationScaling(mean 1, λ=1);
    FastABOD: MinusLogStandardDeviationScaling(λ=1) — ELKI's own unification in ComputeKNNOutlierScores of
    Schubert et al. (2012). Checked against the ELKI 0.7.1 fixtures."""
    with np.load(FIX) as z:
        names = list(z["plain/names"])
        raw = z["plain/raw"]
        refs = {s: z[f"plain/scaled/{s}"] for s in ("stddev_l1", "stddev_mean1_l1", "minuslog_stddev_l1")}
    for i, name in enumerate(names):
        method = name.split("-")[0]
        spec = {"KNN": "stddev_l1", "LOF": "stddev_mean1_l1", "FastABOD": "minuslog_stddev_l1"}.get(method)
        if spec is None:
            continue
        np.testing.assert_allclose(unify(raw[i], method, orientation="raw"), refs[spec][i], rtol=1e-9,
                                   atol=1e-12, err_msg=name)
        public = -raw[i] if method == "FastABOD" else raw[i]
        np.testing.assert_allclose(unify(public, method), refs[spec][i], rtol=1e-9, atol=1e-12, err_msg=name)


def test_recipe_comes_from_method_info_not_from_the_name():
    """A method called "LOF" that declares itself a probability gets the probability recipe; the name decides
    nothing. Sign flips go through odeval.detectors.orient (public ↔ raw)."""
    from odeval.detectors import get_detector
    from odeval.scaling import recommended_unification

    prob = MethodInfo("LOF", 1, False, 0.0, (0.0, 1.0), "-", scaling="probability")
    assert recommended_unification(prob).normalization == "identity"
    assert recommended_unification("lof").regularization == "baseline"
    for name in ("ODIN", "FastABOD", "kNN", "LoOP", "COF"):
        info = get_detector(name).info
        assert recommended_unification(name) == recommended_unification(info)
    assert recommended_unification("FastABOD").regularization == "log_inversion"
    assert recommended_unification("not-a-method").normalization == "gaussian"
