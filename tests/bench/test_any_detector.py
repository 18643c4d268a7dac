"""Any detector in a study (issue 25): import paths, grids, seeds, plugins, their errors and the stored rows."""

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from odeval._key import ScoringKey
from odeval.bench import StudyError, study_from_dict
from odeval.bench.execution import WORKER_DIED_HINT, worker_failure
from odeval.bench.identity import unit_id
from odeval.bench.runner import run_study
from odeval.bench.store import ResultStore, run_key

VENDORED = Path(__file__).resolve().parents[2] / "src" / "odeval" / "data" / "vendored" / "dami"
SMALL = [str(VENDORED / "Hepatitis" / "Hepatitis_withoutdupl_norm_05_v01.arff"),
         str(VENDORED / "Parkinson" / "Parkinson_withoutdupl_norm_05_v01.arff")]

PLUGIN = '''
import numpy as np
from odeval.detectors import Detector, MethodInfo, register


class KNNMedian(Detector):
    """Median distance to the k nearest neighbours (not registered: named by its import path)."""
    info = MethodInfo.distance("TestKNNMedian", "a test detector")  # not docs' KNNMedian: one registry per process

    def raw_scores_all_k(self, graph, ks):
        return np.array([np.median(graph.distances[:, :k], axis=1) for k in ks])


@register
class KNNMax(Detector):
    """Registered when the module is imported (a plugin)."""
    info = MethodInfo.distance("TestKNNMax", "a test detector")

    def raw_scores_all_k(self, graph, ks):
        return np.array([graph.distances[:, k - 1] for k in ks])


class NaNScores:
    def fit(self, X):
        return self

    def score_samples(self, X):
        return np.full(len(X), np.nan)


class Constant:
    def __init__(self, value=1.0):
        self.value = value

    def fit(self, X):
        return self

    def decision_function(self, X):
        return np.full(len(X), self.value)


class Short:
    def fit(self, X):
        return self

    def score_samples(self, X):
        return np.zeros(3)


class NoScores:
    def fit(self, X):
        return self
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "anydet_plugin.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(folder))
    return "anydet_plugin"


def _study(methods, **extra):
    return study_from_dict({"study": {"name": "any", "k": "2..6", **extra.pop("study", {})},
                            "datasets": [{"path": p} for p in SMALL], "methods": methods, **extra},
                           source="any.toml")


def _problems(methods, **extra):
    with pytest.raises(StudyError) as info:
        _study(methods, **extra)
    return info.value.problems


def test_check_time_errors_name_the_entry_and_the_cause(plugin):
    problems = _problems([
        {"estimator": "no_such_module_xyz:Thing"},
        {"estimator": "sklearn.ensemble:NoSuchForest"},
        {"estimator": f"{plugin}:NoScores"},
        {"estimator": "sklearn.ensemble:IsolationForest", "params": {"n_trees": 5}},
        {"estimator": "pyod.models.hbos:HBOS", "grid": {"n_bins": [5, True]}},
        {"estimator": "pyod.models.hbos:HBOS", "grid": {"n_bins": ["5"]}},
        {"estimator": "pyod.models.hbos:HBOS", "seeds": 3},
        {"estimator": "pyod.models.lof:LOF"},
        {"estimator": "pyod.models.iforest:IForest", "k": "1..5"},
        {"name": "LOF", "grid": {"radius": [1, 2]}},
        {"name": "LOF", "seeds": 2},
    ])
    text = "\n".join(problems)
    assert len(problems) == 11, text
    assert "[[methods]] #1 (no_such_module_xyz:Thing): estimator 'no_such_module_xyz:Thing': module " \
           "'no_such_module_xyz' does not import" in text
    assert "#2 (sklearn.ensemble:NoSuchForest)" in text and "has no attribute 'NoSuchForest'" in text
    assert "#3" in text and "has no score_samples or decision_function method" in text
    assert "#4" in text and "takes no parameter 'n_trees'" in text
    assert "#5 (pyod.models.hbos:HBOS): grid.n_bins: value True is not a number" in text
    assert "#6" in text and "grid.n_bins: value '5' is not a number" in text
    assert "#7" in text and "HBOS has no random_state parameter" in text
    assert "#8" in text and "'LOF' is the name of odeval's registered method" in text
    assert "#9" in text and "k is the axis of the kNN-graph family" in text
    assert "#10 (LOF).grid: LOF has no parameter 'radius'" in text
    assert "#11 (LOF): seeds given but LOF is deterministic" in text


def test_grid_axes_give_their_product_and_seeds_each_a_spec(plugin):
    study = _study([{"estimator": "sklearn.ensemble:IsolationForest",
                     "grid": {"n_estimators": [10, 20], "max_features": [0.5, 1.0]}, "seeds": 2}])
    settings = [(m.setting["n_estimators"], m.setting["max_features"], m.seed) for m in study.methods]
    assert settings == [(n, f, s) for n in (10, 20) for f in (0.5, 1.0) for s in (0, 1)]
    assert all(m.ks is None and m.estimator == "sklearn.ensemble:IsolationForest" for m in study.methods)
    m = study.methods[0]
    assert m.key() == ScoringKey.make("IsolationForest", setting={"n_estimators": 10, "max_features": 0.5}, seed=0)
    assert m.key().name == "IsolationForest-max_features=0.5,n_estimators=10@0"


def test_plain_knn_units_keep_their_ids_and_a_grid_gives_new_ones(tmp_path):
    plain = _study([{"name": "LDF"}])
    grid = _study([{"name": "LDF", "grid": {"k": "2..6", "h": [0.5, 1.0]}}])
    (m,) = plain.methods
    assert m.plain and m.identity() == []
    ref = plain.datasets[0]
    payload = json.dumps(["sha", ref.name, "LDF", m.params_json, [2, 3, 4, 5, 6], "euclidean",
                          list(plain.measures), False], sort_keys=True)  # the formula of every earlier store
    import hashlib

    assert unit_id("sha", ref, m, plain, 1) == hashlib.sha256(payload.encode()).hexdigest()[:24]
    assert [g.setting for g in grid.methods] == [{"h": 0.5}, {"h": 1.0}]
    assert all("h" not in g.params and g.ks.canonical() == [2, 3, 4, 5, 6] for g in grid.methods)
    ids = {unit_id("sha", ref, g, grid) for g in grid.methods}
    assert len(ids) == 2 and unit_id("sha", ref, m, plain) not in ids
    assert plain.study_hash == _study([{"name": "LDF"}]).study_hash


def test_a_study_of_imported_and_registered_detectors_runs_and_stores_one_row_per_scoring_key(tmp_path, plugin):
    study = _study([
        {"name": "LOF"},
        {"estimator": f"{plugin}:KNNMedian"},
        {"name": "TestKNNMax", "k": "2..3"},
        {"estimator": "sklearn.ensemble:IsolationForest", "params": {"n_estimators": 20}, "seeds": 2},
        {"estimator": "pyod.models.hbos:HBOS", "grid": {"n_bins": [5, 10]}},
        {"estimator": f"{plugin}:NaNScores"},
        {"estimator": f"{plugin}:Constant"},
        {"estimator": f"{plugin}:Short"},
    ], plugins=[plugin])
    store = tmp_path / "r.duckdb"
    summary = run_study(study, store, workers=1, progress="none")
    assert summary.total_units == 2 * 10 and summary.ok == 2 * 7
    errors = {f["method"]: f["error"] for f in summary.failed}
    assert "NaN/inf scores" in errors["NaNScores"] and "[[methods]] #6" in errors["NaNScores"]
    assert "constant scores" in errors["Constant"] and "[[methods]] #7" in errors["Constant"]
    assert "returned 3 scores for" in errors["Short"]
    with ResultStore(store, read_only=True) as rs:
        runs = rs.runs(study_hash=study.study_hash)
        units = rs.units(study_hash=study.study_hash)
        ranks = rs.outlier_ranks(study_hash=study.study_hash, at=runs[["unit_id", "k"]])
    one = runs[runs["dataset"] == runs["dataset"].iloc[0]]
    forest = one[one["method"] == "IsolationForest"]
    assert forest["k"].isna().all() and sorted(forest["seed"]) == [0, 1] and (forest["metric"] == "").all()
    assert set(one.loc[one["method"] == "HBOS", "setting"]) == {'{"n_bins": 5}', '{"n_bins": 10}'}
    assert list(one.loc[one["method"] == "TestKNNMedian", "k"]) == [2, 3, 4, 5, 6]
    assert list(one.loc[one["method"] == "TestKNNMax", "k"]) == [2, 3]
    assert (one.loc[one["method"] == "LOF", "setting"] == "").all()
    # one row per scoring key
    keys = [run_key(r) for _, r in one.iterrows()]
    assert len(set(keys)) == len(keys) == 5 + 5 + 2 + 2 + 2
    assert ScoringKey.make("IsolationForest", {"n_estimators": 20}, seed=1) in keys
    assert ScoringKey.make("HBOS", setting={"n_bins": 5}) in keys
    assert ScoringKey.make("LOF", {"variant": "paper"}, metric="euclidean", k=2) in keys
    assert set(units.loc[units["status"] == "error", "method"]) == {"NaNScores", "Constant", "Short"}
    assert ranks["k"].isna().sum() > 0  # the estimators' ranks, read back through a null-safe `at`
    # the seeds differ, the scores are deterministic for a seed: rerunning computes nothing
    again = run_study(study, store, workers=1, progress="none")
    assert again.already_done == 20 and again.computed == 0
    # downstream: best setting per curve, and the report builds with the non-k axis
    from odeval.analysis import per_variant_summary
    from odeval.report.from_store import report_from_store

    summary = per_variant_summary(runs, measures=["roc_auc"]).set_index(["dataset", "config"])
    first = summary.loc[runs["dataset"].iloc[0]]
    assert first.loc["HBOS", "best_setting"] in ("n_bins=5", "n_bins=10")
    assert first.loc["IsolationForest", "n_seeds"] == 2
    assert first.loc["LOF", "best_setting"] == f"k={first.loc['LOF', 'best_k']}"
    index, _ = report_from_store(store, tmp_path / "report", simulations=5, permutations=0)
    assert "HBOS" in index.read_text()


def test_a_pyod_detector_scores_its_training_data_as_pyod_does(tmp_path):
    from pyod.models.knn import KNN

    from odeval.data import load_dataset
    from odeval.detectors.imported import fit_score

    X = load_dataset(SMALL[0]).numeric_matrix()
    direct = KNN(n_neighbors=5).fit(X).decision_scores_
    assert np.array_equal(fit_score(KNN, {"n_neighbors": 5}, X), direct)


def test_sklearn_scores_are_negated_unless_declared(tmp_path):
    from sklearn.ensemble import IsolationForest

    from odeval.data import load_dataset
    from odeval.detectors.imported import fit_score

    X = load_dataset(SMALL[0]).numeric_matrix()
    direct = IsolationForest(n_estimators=10, random_state=3).fit(X).score_samples(X)
    assert np.array_equal(fit_score(IsolationForest, {"n_estimators": 10}, X, seed=3), -direct)
    assert np.array_equal(fit_score(IsolationForest, {"n_estimators": 10}, X, seed=3, higher_is_outlier=True),
                          direct)


def test_a_dead_worker_is_named_with_the_usual_causes():
    from concurrent.futures.process import BrokenProcessPool

    text = worker_failure(BrokenProcessPool("A process in the process pool was terminated abruptly"))
    assert text.startswith("worker failed: BrokenProcessPool:") and WORKER_DIED_HINT in text
    assert 'if __name__ == "__main__":' in text and "out of memory" in text
    assert worker_failure(ValueError("bad")) == "worker failed: ValueError: bad"


def test_plugins_that_do_not_import_are_named(plugin):
    problems = _problems([{"name": "LOF"}], plugins=["no_such_plugin_xyz"])
    assert problems == ["plugins: plugin module 'no_such_plugin_xyz' does not import (ModuleNotFoundError: No "
                        "module named 'no_such_plugin_xyz')"]


def test_em_mv_of_estimator_units_fit_the_estimator_and_score_the_uniform_sample(tmp_path):
    """internal = ["em", "mv"] with imported estimators: each estimator unit's EM/MV is odeval.labelfree.emmv of the
    estimator (its grid point, the unit's seed as random_state) fitted on the variant's data, stored with k NULL;
    a registered method over a non-k grid axis gets "not applicable" rows (EM/MV over k need default parameters)."""
    from sklearn.ensemble import IsolationForest

    from odeval.data import load_dataset
    from odeval.detectors.adapters import wrap_estimator
    from odeval.labelfree import emmv

    options = {"n_generated": 500, "draws": 2, "features": 3, "max_dim": 4, "seed": 7}
    study = _study([{"name": "kNN"},
                    {"estimator": "sklearn.ensemble:IsolationForest", "grid": {"n_estimators": [5, 10]}, "seeds": 2},
                    {"name": "LDF", "grid": {"h": [0.5, 1.0]}}],
                   internal=["em", "mv"], internal_options=options)
    store = tmp_path / "r.duckdb"
    summary = run_study(study, store, workers=1, progress="none")
    assert not summary.failed
    with ResultStore(store, read_only=True) as rs:
        im = rs.internal_measures(study_hash=study.study_hash)
        runs = rs.runs(study_hash=study.study_hash)
    forest = im[im["method"] == "IsolationForest"]
    assert forest["k"].isna().all() and len(forest) == 2 * 4 * 2  # 2 variants × 4 units × (em, mv)
    assert np.isfinite(forest["value"]).all()
    one = runs[(runs["method"] == "IsolationForest") & (runs["seed"] == 1)
               & (runs["setting"] == '{"n_estimators": 10}') & (runs["dataset"] == runs["dataset"].min())].iloc[0]
    X = load_dataset(SMALL[0] if "Hepatitis" in one["dataset"] else SMALL[1]).numeric_matrix()
    ref = emmv(wrap_estimator(IsolationForest(n_estimators=10), seed=1), X, **options)
    got = forest[forest["unit_id"] == one["unit_id"]].set_index("measure")["value"]
    assert got["em"] == ref.em and got["mv"] == ref.mv
    ldf = im[im["method"] == "LDF"]
    assert ldf["value"].isna().all() and ldf["details"].str.contains("not applicable").all()
    knn = im[im["method"] == "kNN"]
    assert np.isfinite(knn["value"]).all() and knn["k"].notna().all()
    # the report's EM/MV picks: every kNN k and every estimator unit is a candidate (joined on unit_id, k NULL)
    from odeval.report.from_store import report_from_store
    from odeval.report.internal import internal_picks

    picks = internal_picks(im, runs)
    assert set(picks["candidates"]) == {5 + 4}
    index, _ = report_from_store(store, tmp_path / "report", simulations=5, permutations=0, ensembles=False)
    assert 'id="internal"' in index.read_text()


@pytest.mark.slow
def test_imported_detectors_run_in_worker_processes(tmp_path, plugin):
    """Spawned workers import the classes themselves: an unregistered Detector named by its import path, a plugin's
    registered detector and an estimator all compute there."""
    study = _study([{"estimator": f"{plugin}:KNNMedian"}, {"name": "TestKNNMax"},
                    {"estimator": "pyod.models.iforest:IForest", "params": {"n_estimators": 10}, "seeds": 1}],
                   plugins=[plugin])
    summary = run_study(study, tmp_path / "r.duckdb", workers=2, progress="none")
    assert summary.failed == [] and summary.ok == 6


@pytest.mark.slow
def test_a_script_without_the_main_guard_says_so(tmp_path):
    """Every unit fails with the dead-worker text, and each worker says why on the terminal."""
    import subprocess
    import sys

    script = tmp_path / "noguard.py"
    script.write_text(textwrap.dedent(f'''
        from odeval.bench import run_study, study_from_dict

        study = study_from_dict({{"study": {{"name": "noguard", "k": "2..5"}}, "datasets": [{{"path": {SMALL[0]!r}}}],
                                 "methods": [{{"name": "LOF"}}]}})
        summary = run_study(study, "noguard.duckdb", workers=2, progress="none")
        print("ERRORS", [f["error"] for f in summary.failed])
    '''))
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    res = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert "ERRORS" in res.stdout and WORKER_DIED_HINT in res.stdout
    assert "run_study was called while a worker process imported the script" in res.stderr


def test_entry_point_plugins_register_detectors(monkeypatch, plugin, tmp_path):
    """An installed package's `odeval.detectors` entry point is imported when a name is not registered."""
    import importlib
    import importlib.metadata

    import odeval.detectors.base as base
    from odeval.detectors import get_detector

    class EntryPoint:
        name, value = "testplugin", "anydet_entry_plugin"

        def load(self):
            return importlib.import_module(self.value)

    (tmp_path / "plugin" / "anydet_entry_plugin.py").write_text(textwrap.dedent('''
        import numpy as np
        from odeval.detectors import Detector, MethodInfo, register


        @register
        class EntryKNN(Detector):
            info = MethodInfo.distance("TestEntryKNN", "a test detector")

            def raw_scores_all_k(self, graph, ks):
                return np.array([graph.distances[:, k - 1] for k in ks])
    '''))
    importlib.invalidate_caches()
    monkeypatch.setattr(base, "_entry_points_loaded", False)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [EntryPoint()] if group == base.ENTRY_POINT_GROUP else [])
    assert type(get_detector("TestEntryKNN")).__name__ == "EntryKNN"
    assert [m.name for m in _study([{"name": "TestEntryKNN"}]).methods] == ["TestEntryKNN"]


def test_one_name_for_two_estimators_is_refused():
    problems = _problems([{"estimator": "sklearn.ensemble:IsolationForest", "name": "Forest"},
                          {"estimator": "pyod.models.iforest:IForest", "name": "Forest"}])
    assert problems == ["[[methods]]: the name 'Forest' stands for 2 methods (pyod.models.iforest:IForest, "
                        "sklearn.ensemble:IsolationForest); give each its own name"]
