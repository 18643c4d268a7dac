"""The one scoring path (odeval.detectors.scoring) and what every command does with it: skipped k with reasons,
degenerate data, duplicates through score → evaluate, declared parameter constraints, the registry."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from odeval.cli import main
from odeval.detectors import available_methods, get_detector
from odeval.detectors.base import Detector, MethodInfo, register
from odeval.detectors.scoring import plan_ks, required_graph_k, score_ks
from odeval.measures import evaluate_scoring, finite_for_ranking
from odeval.neighbors import knn_graph


def _variants(name: str) -> list[dict]:
    spec = type(get_detector(name))._parameter_constraints
    key = "variant" if "variant" in spec else "kernel" if "kernel" in spec else None
    return [{}] if key is None else [{key: v} for v in spec[key].values]


def test_plan_skips_below_min_k_above_n_and_beyond_the_graph_with_reasons():
    det = get_detector("LDOF")
    plan = plan_ks(det, "1..1000000000", 10)  # capped at N − 1 before expanding
    assert plan.ks == list(range(2, 10))
    assert plan.skipped == {"1": "LDOF is defined for k ≥ 2",
                            "10..1000000000": "k ≥ N = 10 objects (k counts neighbours other than the query point)"}
    cks = get_detector("LOF", variant="elki-0.7.1-cks")  # builds the batch tool's lists from X: needs k only
    plan = plan_ks(cks, [3, 4, 6], 10, k_max=5)
    assert plan.ks == [3, 4] and "needs 6 neighbours; the graph holds 5" in plan.skipped["6"]
    assert required_graph_k(cks, "1:100", 10) == 9
    assert required_graph_k(get_detector("KDEOS"), 1, 10) == 1  # nothing computable: the smallest graph


def test_score_ks_orients_and_matches_the_detector():
    X = np.random.default_rng(1).normal(size=(30, 2))
    g = knn_graph(X, 5)
    det = get_detector("ODIN")
    got = score_ks(det, g, "1..5")
    assert got.ks == [1, 2, 3, 4, 5] and not got.skipped
    np.testing.assert_array_equal(got.scores, -det.raw_scores_all_k(g, got.ks))
    np.testing.assert_array_equal(score_ks(det, g, "2,4", raw=True).scores, det.raw_scores_all_k(g, [2, 4]))
    none = score_ks(get_detector("KDEOS"), g, 1)
    assert none.ks == [] and none.scores.shape == (0, 30) and "k ≥ 2" in none.skipped["1"]


@pytest.mark.parametrize("method", sorted(available_methods()))
def test_every_method_on_all_duplicate_data_gives_one_finite_tie(method):
    """Degenerate data: all objects coincide, so all are equally outlying — every variant, every k."""
    X = np.ones((12, 2))
    g = knn_graph(X, 5)
    y = np.zeros(12, dtype=bool)
    y[:3] = True
    for params in _variants(method):
        det = get_detector(method, **params)
        got = score_ks(det, g, "1..4")
        assert got.ks, (method, params)
        for k, s in zip(got.ks, got.scores, strict=True):
            assert np.isfinite(s).all() and (s == s[0]).all(), (method, params, k, s)
            assert evaluate_scoring(y, s)[0]["roc_auc"] == 0.5


def test_all_duplicate_data_through_score_and_evaluate(tmp_path):
    path = tmp_path / "dup.csv"
    pd.DataFrame({"a": np.ones(12), "b": np.ones(12), "outlier": [1] * 3 + [0] * 9}).to_csv(path, index=False)
    out = tmp_path / "s.csv"
    args = ["score", str(path), "--k", "1:4", "-o", str(out)]
    for m in available_methods():
        args += ["-m", m]
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["evaluate", "--scores", str(out), "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)["results"]
    assert {r["column"].rsplit("-", 1)[0] for r in got} == set(available_methods())
    assert all(r["measures"]["roc_auc"] == 0.5 for r in got)


def test_score_then_evaluate_on_data_with_duplicates(tmp_path):
    """LOF is +inf for an object next to a duplicate group; evaluate ranks it as the runner does."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 2))
    X[1:5] = X[0] + 0.0  # a duplicate group
    X[5] = X[0] + 0.01  # an object next to it: LOF +inf at small k
    y = np.zeros(30, dtype=bool)
    y[5] = True
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "outlier": y.astype(int)}).to_csv(path, index=False)
    for suffix in ("csv", "parquet", "npz"):
        out = tmp_path / f"s.{suffix}"
        res = CliRunner().invoke(main, ["score", str(path), "-m", "LOF", "-m", "FastABOD", "--k", "1:4",
                                        "-o", str(out)])
        assert res.exit_code == 0, res.output
        assert "FastABOD: skipped k=1..2 (FastABOD is defined for k ≥ 3)" in res.output
        res = CliRunner().invoke(main, ["evaluate", "--scores", str(out), "--json"])
        assert res.exit_code == 0, res.output
        got = {r["column"]: r["measures"] for r in json.loads(res.output)["results"]}
        g = knn_graph(X, 4)
        s = get_detector("LOF").score_all_k(g, [2])[0]
        assert np.isposinf(s[5])
        assert got["LOF-002"] == evaluate_scoring(y, s)[0]


def test_finite_for_ranking_near_the_float_maximum():
    big = np.finfo(np.float64).max
    s = np.array([np.inf, big, big / 2, -big, -np.inf, 1.0, big, np.nan])
    r = finite_for_ranking(s)
    assert np.isfinite(r[:7]).all() and np.isnan(r[7])
    order = np.argsort(s[:7], kind="stable")
    np.testing.assert_array_equal(np.argsort(r[:7], kind="stable"), order)
    assert r[1] == r[6] and r[0] > r[1] and r[4] < r[3]
    np.testing.assert_array_equal(finite_for_ranking([np.inf, 1.0, 2.0]), [5.0, 1.0, 2.0])  # unchanged rule


def test_a_second_registration_of_a_name_is_an_error():
    class Again(Detector):
        info = MethodInfo(name="lof", min_k=1, inverted=False, inlier_value=1.0, score_range=(0.0, np.inf),
                          reference="-")

        def raw_scores_all_k(self, graph, ks):  # pragma: no cover - never called
            raise AssertionError

    with pytest.raises(ValueError, match="'lof' is already registered"):
        register(Again)
    assert type(get_detector("LOF")).__name__ == "LOF"


@pytest.mark.parametrize(("name", "params", "message"), [
    ("LOF", {"x": 1}, "LOF: unknown parameter(s) x; accepted: variant"),
    ("GLOSH", {"variant": "paper"}, "GLOSH: unknown parameter(s) variant; accepted: min_cluster_size"),
    ("LoOP", {"lam": 0}, "LoOP: invalid parameter lam=0: lam must be a finite number > 0"),
    ("LoOP", {"lam": "2"}, "lam must be a finite number > 0"),
    ("KDEOS", {"idim": 1.5}, "KDEOS: invalid parameter idim=1.5: idim must be an integer ≥ -1"),
    ("GLOSH", {"min_cluster_size": 1}, "min_cluster_size must be an integer ≥ 2 or None"),
    ("FastABOD", {"kernel": "rbf"}, "FastABOD: unknown kernel 'rbf'; choose one of linear, poly2"),
    ("LDF", {"h": float("nan")}, "LDF: invalid parameter h=nan"),
])
def test_parameter_errors_come_from_the_declared_constraints(name, params, message):
    with pytest.raises(ValueError) as info:
        get_detector(name, **params)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_params_are_the_declared_parameters():
    for name in available_methods():
        det = get_detector(name)
        assert set(det.params()) == set(type(det)._parameter_constraints), name
    assert get_detector("KDEOS", idim=-1).params() == {"scale": 0.5, "idim": -1, "min_bandwidth": 0.0,
                                                       "variant": "paper"}
