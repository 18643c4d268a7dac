"""Similarity matrices and greedy ensembles over the score vectors of a real results store, and `odeval ensemble`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
from click.testing import CliRunner

from odeval.bench import run_study, study_from_dict
from odeval.bench.ensembles import (
    NoStoredScoresError,
    ensemble_from_store,
    read_scorings,
    select_scorings,
    similarity_from_store,
    stored_runs,
)
from odeval.cli import main
from odeval.compare import evaluate_ensembles, similarity_matrix
from odeval.data import catalogue, load_dataset
from odeval.detectors import get_detector
from odeval.neighbors import knn_graph
from odeval.render.ensembles import format_ensemble
from odeval.scaling import unify

METHODS = ("kNN", "LOF", "ODIN", "FastABOD")  # ODIN and FastABOD: inverted (public = −raw)
KS = "3..8"
DATASET = "Hepatitis_withoutdupl_norm_05_v01"


def _vendored(name: str) -> Path:
    return next(Path(v.path) for v in catalogue.vendored() if Path(v.path).stem == name)


def build_store(path: Path, *, keep_scores: bool, datasets: tuple[str, ...] = (DATASET,)) -> Path:
    spec = study_from_dict({
        "study": {"name": "ens", "k": KS, "keep_scores": keep_scores},
        "datasets": [{"path": str(_vendored(d))} for d in datasets],
        "methods": [{"name": m} for m in METHODS],
    }, source="test")
    summary = run_study(spec, path, workers=1, progress="none")
    assert not summary.failed
    return path


@pytest.fixture(scope="module")
def kept(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("kept") / "r.duckdb", keep_scores=True,
                       datasets=(DATASET, "Parkinson_withoutdupl_norm_05_v01"))


@pytest.fixture(scope="module")
def not_kept(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("nokept") / "r.duckdb", keep_scores=False)


def test_read_scorings_rebuilds_scores_and_labels(kept):
    sc = read_scorings(kept, DATASET)
    ds = load_dataset(_vendored(DATASET))
    np.testing.assert_array_equal(sc.labels, ds.y)
    assert sc.scores.shape == (len(METHODS) * 6, ds.X.shape[0])
    assert sc.names[:3] == ("FastABOD-003", "FastABOD-004", "FastABOD-005")
    # the stored vectors are the public scores: recompute two of them
    graph = knn_graph(ds.numeric_matrix(), 10)
    for method in ("ODIN", "LOF"):
        public = get_detector(method).score_all_k(graph, [5])[0]
        row = sc.names.index(f"{method}-005")
        np.testing.assert_array_equal(sc.scores[row], public)


def test_unified_uses_the_public_orientation(kept):
    sc = read_scorings(kept, DATASET, methods="ODIN,FastABOD", ks=[4])
    u = sc.unified()
    assert u.names == ("FastABOD-004", "ODIN-004") and not u.dropped
    for i, method in enumerate(("FastABOD", "ODIN")):
        np.testing.assert_array_equal(u.scores[i], unify(sc.scores[i], method, orientation="public"))
        # higher public score (more outlying) never gets a lower probability
        order = np.argsort(sc.scores[i], kind="stable")
        assert np.all(np.diff(u.scores[i][order]) >= 0)
        assert u.scores[i].min() >= 0 and u.scores[i].max() <= 1
    assert any("inversion" in d for d in u.unified_with)


def test_ensemble_from_store_equals_the_core(kept):
    res = ensemble_from_store(kept, DATASET, rate=0.05, n_random=50, seed=3)
    sc = read_scorings(kept, DATASET)
    U = np.vstack([unify(s, m) for s, m in zip(sc.scores, sc.runs["method"], strict=True)])
    greedy, ev = evaluate_ensembles(U, sc.labels, sc.names, rate=0.05, n_random=50, seed=3)
    assert res.greedy.members == greedy.members and res.evaluation == ev
    assert res.n_scorings == U.shape[0] and res.n_outliers == int(sc.labels.sum())
    d = json.loads(json.dumps(res.to_dict()))
    assert d["greedy_members"] == list(greedy.names) and d["dataset"] == DATASET
    frame = res.summary_frame()
    assert list(frame["scorings"]) == [1, U.shape[0], ev.greedy_size, ev.greedy_size]
    assert frame["roc_auc"].iloc[3] == ev.greedy_auc
    text = format_ensemble(res)
    assert "standard deviations" in text and ev.best_single_name in text


def test_similarity_from_store(kept):
    runs = select_scorings(stored_runs(kept, DATASET))
    sim = similarity_from_store(kept, DATASET, runs=runs)
    sc = read_scorings(kept, DATASET, runs=runs).unified()
    np.testing.assert_array_equal(sim.matrix, similarity_matrix(sc.scores, sc.labels))
    assert sim.matrix.shape == (len(runs) + 1,) * 2 and sim.matrix[0, 0] == 1.0
    assert list(sim.frame().columns) == ["truth", *sim.names]


def test_select_scorings_best_k_and_grid(kept):
    runs = stored_runs(kept, DATASET)
    sel = select_scorings(runs)
    for method, grp in runs.groupby("method"):
        chosen = set(sel.loc[sel["method"] == method, "k"])
        best = grp.loc[grp["roc_auc"] == grp["roc_auc"].max(), "k"].min()
        assert {3, 8, best} == chosen


def test_no_stored_scores_names_keep_scores(not_kept):
    with pytest.raises(NoStoredScoresError, match="keep_scores"):
        ensemble_from_store(not_kept, DATASET)


def test_selection_errors(kept):
    with pytest.raises(ValueError, match=r"no dataset 'nope'.*Hepatitis"):
        read_scorings(kept, "nope")
    with pytest.raises(ValueError, match="no stored scores of method"):
        read_scorings(kept, DATASET, methods=["LDOF"])
    with pytest.raises(ValueError, match="no stored scoring matches"):
        read_scorings(kept, DATASET, ks=[99])


def test_scorings_of_two_files_or_foreign_labels_are_refused(kept, tmp_path):
    copy = tmp_path / "broken.duckdb"
    shutil.copy(kept, copy)
    con = duckdb.connect(str(copy))
    con.execute("UPDATE units SET file_sha256 = ? WHERE dataset = ? AND method = ?", ["0" * 64, DATASET, "LOF"])
    con.close()
    with pytest.raises(ValueError, match="2 different dataset files"):
        read_scorings(copy, DATASET)
    con = duckdb.connect(str(copy))
    con.execute("UPDATE units SET file_sha256 = (SELECT min(file_sha256) FROM labels WHERE dataset = ?) "
                "WHERE dataset = ?", [DATASET, DATASET])
    con.execute("UPDATE labels SET n_objects = n_objects + 1 WHERE dataset = ?", [DATASET])
    con.close()
    with pytest.raises(ValueError, match="stored labels"):
        read_scorings(copy, DATASET)


def test_cli_ensemble(kept, not_kept):
    runner = CliRunner()
    res = runner.invoke(main, ["ensemble", str(kept), "--dataset", DATASET, "--random", "50", "--rate", "0.05"])
    assert res.exit_code == 0, res.output
    for text in ("best single scoring", "naive ensemble", "random ensembles (50, seed 0)", "greedy ensemble",
                 "standard deviations", "members"):
        assert text in res.output
    res = runner.invoke(main, ["ensemble", str(kept), "--dataset", DATASET, "--methods", "kNN,LOF", "--k-range",
                               "3..5", "--random", "20", "--seed", "1", "--rule", "max", "--measure", "manhattan",
                               "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["n_scorings"] == 6 and d["rule"] == "max" and d["measure"] == "manhattan" and d["seed"] == 1
    assert all(m.split("-")[0] in ("kNN", "LOF") for m in d["greedy_members"])
    every = runner.invoke(main, ["ensemble", str(kept), "--dataset", DATASET, "--random", "20", "--json"])
    res = runner.invoke(main, ["ensemble", str(kept), "--dataset", DATASET, "--methods", "all", "--random", "20",
                               "--json"])  # 'all': every stored method, as the default
    assert res.exit_code == 0 and json.loads(res.output) == json.loads(every.output)
    res = runner.invoke(main, ["ensemble", str(not_kept), "--dataset", DATASET])
    assert res.exit_code == 1 and "keep_scores = true" in res.output
    res = runner.invoke(main, ["ensemble", str(kept), "--dataset", DATASET, "--k-range", "9..3"])
    assert res.exit_code == 2 and "--k-range" in res.output


def _params_label_before_the_scoring_key(params: str) -> str:
    """The ``(a=1,b=x)`` form candidate names used before odeval._key (bench.ensembles._params_label)."""
    d = json.loads(params) if params else {}
    return "(" + ",".join(f"{k}={v}" for k, v in sorted(d.items())) + ")" if d else ""


def test_stored_keys_reproduce_the_names_of_before():
    """distinct_names of the stored keys gives the names stored_runs and the variant step built by hand before."""
    import pandas as pd

    from odeval._key import distinct_names
    from odeval.bench.ensembles import stored_keys

    rows = [("LOF", {}, "euclidean", 10), ("LOF", {"variant": "elki-0.7.1"}, "euclidean", 10),
            ("LDF", {"c": 0.1, "h": 1.0}, "euclidean", 7), ("LDF", {"c": 0.5, "h": 2}, "euclidean", 7),
            ("kNN", {}, "euclidean", 5), ("kNN", {}, "manhattan", 5), ("KDEOS", {"idim": -1}, "euclidean", 12),
            ("LoOP", {"lam": 3.0}, "euclidean", 120)]
    runs = pd.DataFrame({"method": [r[0] for r in rows], "params": [json.dumps(r[1], sort_keys=True) for r in rows],
                         "metric": [r[2] for r in rows], "k": [r[3] for r in rows]})
    configs = runs.groupby("method")[["params", "metric"]].nunique()
    before = []
    for row in runs.itertuples(index=False):
        label = row.method
        if configs.loc[row.method, "params"] > 1:
            label += _params_label_before_the_scoring_key(row.params)
        if configs.loc[row.method, "metric"] > 1:
            label += f"[{row.metric}]"
        before.append(f"{label}-{int(row.k):03d}")
    assert distinct_names(stored_keys(runs)) == before
    assert before[:2] == ["LOF-010", "LOF(variant=elki-0.7.1)-010"] and before[5] == "kNN[manhattan]-005"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    """A kNN method over k, one over h and k, and an estimator over a grid with two seeds (issue 25), scores kept."""
    spec = study_from_dict({
        "study": {"name": "mixed", "k": "3..5", "keep_scores": True},
        "datasets": [{"path": str(_vendored(DATASET))}],
        "methods": [{"name": "LOF"}, {"name": "LDF", "grid": {"k": "3..4", "h": [0.5, 1.0]}},
                    {"estimator": "sklearn.ensemble:IsolationForest", "grid": {"n_estimators": [5, 10]},
                     "seeds": 2}],
    }, source="test")
    path = tmp_path_factory.mktemp("mixed") / "r.duckdb"
    summary = run_study(spec, path, workers=1, progress="none")
    assert not summary.failed
    return path


def test_stored_runs_key_every_setting_and_seed(mixed):
    runs = stored_runs(mixed, DATASET)
    forest = runs[runs["method"] == "IsolationForest"]
    assert list(runs.loc[runs["method"] == "LOF", "name"]) == ["LOF-003", "LOF-004", "LOF-005"]
    assert sorted(forest["name"]) == [f"IsolationForest-n_estimators={n}@{s}" for n in (10, 5) for s in (0, 1)]
    # LDF at one k over h: two scorings, not merged
    assert list(runs.loc[runs["method"] == "LDF", "name"]) == ["LDF-h=0.5,k=3", "LDF-h=1.0,k=3", "LDF-h=0.5,k=4",
                                                                 "LDF-h=1.0,k=4"]
    assert forest["k"].isna().all() and runs["k"].dtype == "Int64" and sorted(forest["seed"]) == [0, 0, 1, 1]
    from odeval.bench.ensembles import stored_keys
    from odeval.bench.store import run_key

    assert stored_keys(runs) == [run_key(r) for r in runs.to_dict("records")]
    sc = read_scorings(mixed, DATASET, ks=[3])  # the k filter leaves the scorings without k in
    assert sorted(sc.names) == sorted(["LOF-003", "LDF-h=0.5,k=3", "LDF-h=1.0,k=3", *forest["name"]])
    assert len({tuple(row) for row in sc.scores}) == 7  # four distinct forests, two LDF: nothing merged


def test_select_scorings_best_setting_keeps_its_seeds(mixed):
    runs = stored_runs(mixed, DATASET)
    sel = select_scorings(runs, n_grid=1)
    forest = runs[runs["method"] == "IsolationForest"]
    mean = forest.groupby("setting")["roc_auc"].mean()
    best = mean[mean == mean.max()].index[0]
    chosen = sel[sel["method"] == "IsolationForest"]
    # n_grid=1: the best setting and the middle one of the two settings (rounded: the first), each with both seeds
    assert set(chosen["setting"]) == {best, '{"n_estimators": 5}'} and len(chosen) == 2 * len(set(chosen["setting"]))
    assert set(sel.loc[sel["method"] == "LOF", "k"]) >= {4}
    full = select_scorings(runs)  # n_grid=2: the first and the last setting, so every forest
    assert len(full[full["method"] == "IsolationForest"]) == 4
    # LDF's settings ordered by (h, k): the grid is h=0.5,k=3 and h=1.0,k=4, plus the best
    ldf = set(full.loc[full["method"] == "LDF", "name"])
    assert {"LDF-h=0.5,k=3", "LDF-h=1.0,k=4"} <= ldf and len(ldf) <= 3


def test_cli_ensemble_on_a_store_of_any_detector(mixed):
    res = CliRunner().invoke(main, ["ensemble", str(mixed), "--dataset", DATASET, "--random", "20", "--rate",
                                    "0.05", "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d["n_scorings"] == 3 + 4 + 4 and not d["dropped"]
    assert all(m.startswith(("LOF-00", "LDF-h=", "IsolationForest-n_estimators=")) for m in d["greedy_members"])


def test_cli_ireos_reads_a_store_of_any_detector_by_key(mixed):
    res = CliRunner().invoke(main, ["ireos", str(_vendored(DATASET)), "--scores", str(mixed), "--column", "LOF-004",
                                    "--column", "IsolationForest-n_estimators=5@1", "--json"])
    assert res.exit_code == 0, res.output
    assert "IsolationForest-n_estimators=5@1" in res.output and "LOF-004" in res.output


def test_select_audit_candidates_of_a_store_of_any_detector(mixed):
    from odeval.analysis.selection import candidates_from_store

    every = candidates_from_store(mixed, DATASET)
    assert len(every.names) == 3 + 4 + 4 and "IsolationForest-n_estimators=10@1" in every.names
    paper = candidates_from_store(mixed, DATASET, candidates=3)  # the defaults kNN-010 / LOF-020: not stored
    assert len(paper.names) == 3 and not paper.references
