"""``odeval select`` with any detector in its pool (issue 25): registered methods with other parameters, imported
estimators over a grid and seeds, spelled as a study's [[methods]] entry; bad entries are one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from odeval._key import ScoringKey
from odeval.cli import main
from odeval.data import Dataset
from odeval.labelfree.recommend import (
    CAMPOS_POOL,
    PoolMethod,
    SelectSettings,
    candidate_pool,
    parse_pool_methods,
    recommend,
)

IFOREST = '{estimator = "pyod.models.iforest:IForest", grid = {n_estimators = [10, 20]}, seeds = 2}'


def _blobs(n: int = 60, d: int = 3, n_out: int = 4, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:n_out] = rng.normal(size=(n_out, d)) * 0.5 + 6.0
    y = np.zeros(n, dtype=bool)
    y[:n_out] = True
    return X, y


def test_entries_are_spelled_as_in_a_study_file():
    got = parse_pool_methods([IFOREST, "pyod.models.ecod:ECOD", {"name": "LDF", "grid": {"h": [0.5, 2.0]}},
                              {"estimator": "sklearn.ensemble:IsolationForest", "name": "skIF", "params":
                               {"n_estimators": 5}, "higher_is_outlier": False}])
    keys = [m.key().name for m in got]
    assert keys[:4] == ["IForest-n_estimators=10@0", "IForest-n_estimators=10@1", "IForest-n_estimators=20@0",
                        "IForest-n_estimators=20@1"]
    assert keys[4] == "ECOD" and keys[5:7] == ["LDF-h=0.5", "LDF-h=2.0"] and keys[7] == "skIF(n_estimators=5)"
    assert got[0].estimator == "pyod.models.iforest:IForest" and got[5].estimator is None
    assert got[7].higher_is_outlier is False
    assert parse_pool_methods(["kNN"]) == (PoolMethod("kNN", entry="kNN"),)


@pytest.mark.parametrize("entry, cause", [
    ("pyod.models.iforest:IForst", "has no attribute 'IForst'"),
    ("no_such_module_xyz:Thing", "does not import"),
    ('{estimator = "pyod.models.hbos:HBOS", k = 3}', "k is the pool's"),
    ('{estimator = "pyod.models.hbos:HBOS", params = {bogus = 1}}', "HBOS takes no parameter 'bogus'"),
    ('{estimator = "pyod.models.hbos:HBOS", grid = {n_bins = [true]}}', "grid.n_bins: value True is not a number"),
    ('{estimator = "pyod.models.hbos:HBOS", seeds = 2}', "has no random_state parameter"),
    ('{name = "kNN", seeds = 2}', "kNN is deterministic"),
    ('{name = "kNN", grid = {h = [1]}}', "kNN has no parameter 'h'"),
    ("NoSuchMethod", "unknown method"),
    ('{estimator = "x', "not an inline TOML table"),
    ("pyod.models.lof:LOF", "give this estimator another name (name = \"pyod_LOF\")"),
    ('{name = "kNN", color = 1}', "unknown key(s) ['color']"),
])
def test_bad_entries_are_one_line_errors_naming_the_option(entry, cause):
    with pytest.raises(ValueError) as info:
        parse_pool_methods([entry], option="--method")
    text = str(info.value)
    assert text.startswith(f"--method {entry!r}: ") and cause in text and "\n" not in text
    with pytest.raises(ValueError, match="methods "):
        SelectSettings(methods=(entry,))


def test_settings_refuse_an_empty_pool_and_a_duplicate_of_the_twelve():
    with pytest.raises(ValueError, match="the pool is empty"):
        SelectSettings(campos=False)
    with pytest.raises(ValueError, match="kNN is already in the pool"):
        SelectSettings(methods=("kNN",))
    assert SelectSettings(methods=("kNN",), campos=False).pool_methods()[0].name == "kNN"


def test_the_pool_adds_estimators_and_keeps_the_twelve_as_they_were():
    from pyod.models.iforest import IForest

    from odeval.detectors.imported import fit_score
    from odeval.measures import finite_for_ranking

    X, _ = _blobs()
    extra = parse_pool_methods([IFOREST, {"name": "LOF", "params": {"variant": "elki-0.7.1"}}])
    base = candidate_pool(X, [2, 5, 10])
    pool = candidate_pool(X, [2, 5, 10], methods=extra)
    twelve = len(base.names)
    np.testing.assert_array_equal(pool.scores[:twelve], base.scores)
    assert pool.keys[:twelve] == base.keys
    added = dict(zip(pool.names[twelve:], pool.scores[twelve:], strict=True))
    assert "LOF(variant=elki-0.7.1)-005" in added and "LOF-005" in pool.names  # params tell apart
    direct = finite_for_ranking(fit_score(IForest, {"n_estimators": 20}, X, seed=1))
    np.testing.assert_array_equal(added["IForest-n_estimators=20@1"], direct)
    assert ScoringKey.parse("IForest-n_estimators=20@1").seed == 1
    only = candidate_pool(X, [2, 5], methods=parse_pool_methods(["pyod.models.ecod:ECOD",
                                                                 f"{__name__}:Broken"]), campos=False)
    assert only.names == ("ECOD",) and only.skipped[0].startswith("Broken: left out (TypeError: ")


class Broken:
    """An estimator that fails in fit (left out of the pool with the reason)."""

    def fit(self, X):
        raise TypeError("cannot fit")

    def score_samples(self, X):  # pragma: no cover - never reached
        return X[:, 0]


def test_recommend_with_estimators_only(tmp_path):
    X, y = _blobs(80)
    settings = SelectSettings(methods=(IFOREST, "pyod.models.ecod:ECOD"), campos=False, ireos=False, resamples=1)
    rec = recommend(Dataset(X=X, y=None, name="t", attribute_names=("a", "b", "c")), settings=settings, labels=y)
    assert rec.pool["n_candidates"] == 5 and rec.pool["methods"] == ["IForest", "ECOD"]
    assert rec.pool["added"][0] == "IForest-n_estimators=10@0" and not rec.pool["campos"]
    assert rec.recommended in rec.pool["added"] and rec.check is not None
    path = tmp_path / "t.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,c,outlier", comments="")
    res = CliRunner().invoke(main, ["select", str(path), "--check-labels", "outlier", "--no-ireos", "--resamples",
                                    "0", "--k-max", "5", "--method", IFOREST, "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["pool"]["n_candidates"] == 12 * 5 - 4 + 4 and out["pool"]["added_methods"] == ["IForest"]
    res = CliRunner().invoke(main, ["select", str(path), "--method", "pyod.models.hbos:HBOS", "--method",
                                    '{name = "kNN", seeds = 2}'])
    assert res.exit_code == 1 and res.output.strip().splitlines() == [
        "Error: --method '{name = \"kNN\", seeds = 2}': seeds given but kNN is deterministic (it has no seed "
        "parameter)"]
    res = CliRunner().invoke(main, ["select", str(path), "--no-campos", "--no-ireos", "--resamples", "0",
                                    "--method", "pyod.models.hbos:HBOS"])
    assert res.exit_code == 0 and "candidates: 1 (1 added configuration(s) of HBOS)" in res.output, res.output
    assert CAMPOS_POOL  # the twelve stay the default pool
