"""`odeval score`: the command-line shell over knn_graph + detectors (CliRunner)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from odeval.cli import main
from odeval.detectors import get_detector
from odeval.neighbors import knn_graph


@pytest.fixture
def dataset(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    X[5] = X[6]
    y = np.zeros(40, dtype=int)
    y[:3] = 1
    X[:3] += 6
    path = tmp_path / "toy.csv"
    pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "outlier": np.where(y == 1, "yes", "no")}).to_csv(path, index=False)
    return path, X, y.astype(bool)


def test_score_parquet_matches_library(dataset, tmp_path):
    path, X, y = dataset
    out = tmp_path / "s.parquet"
    assert y.sum() == 3
    res = CliRunner().invoke(main, ["score", str(path), "-m", "LOF", "-m", "ODIN", "--k", "1:4", "-o", str(out)])
    assert res.exit_code == 0, res.output
    df = pd.read_parquet(out)
    assert list(df.columns[:2]) == ["object", "id"] or list(df.columns[:1]) == ["object"]
    assert "label" in df and df["label"].sum() == 3
    g = knn_graph(X, 4)
    np.testing.assert_array_equal(df[[f"LOF-{k:03d}" for k in range(1, 5)]].to_numpy().T,
                                  get_detector("LOF").score_all_k(g, [1, 2, 3, 4]))
    # public orientation: ODIN negated
    np.testing.assert_array_equal(df["ODIN-002"].to_numpy(), -get_detector("ODIN").raw_scores_all_k(g, [2])[0])


def test_score_csv_npz_raw_params_and_min_k(dataset, tmp_path):
    path, X, _ = dataset
    out = tmp_path / "s.npz"
    res = CliRunner().invoke(main, ["score", str(path), "-m", "KDEOS", "--k", "1,3", "--raw", "--metric", "manhattan",
                                    "--param", "variant=\"elki-0.7.1\"", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "KDEOS: skipped k=1 (KDEOS is defined for k ≥ 2)" in res.output
    z = np.load(out)
    assert list(z["columns"]) == ["KDEOS-003-raw"]
    g = knn_graph(X, 3, metric="manhattan")
    np.testing.assert_array_equal(z["scores"][0],
                                  get_detector("KDEOS", variant="elki-0.7.1").raw_scores_all_k(g, [3])[0])
    out_csv = tmp_path / "s.csv"
    res = CliRunner().invoke(main, ["score", str(path), "-m", "LoOP", "-m", "KNN", "--k", "2:6:2",
                                    "--param", "LoOP.lam=2", "-o", str(out_csv)])
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out_csv)
    assert [c for c in df.columns if "-" in c] == ["LoOP-002", "LoOP-004", "LoOP-006", "kNN-002", "kNN-004",
                                                   "kNN-006"]
    np.testing.assert_allclose(df["LoOP-004"], get_detector("LoOP", lam=2).score_all_k(knn_graph(X, 4), [4])[0],
                               rtol=1e-15)


@pytest.mark.parametrize("args,msg", [
    (["-m", "NOPE"], "unknown method"),
    (["-m", "LOF", "--k", "0:3"], "must be ≥ 1"),
    (["-m", "LOF", "--k", "a:b"], "A..B"),
    (["-m", "LOF", "--k", "40"], "nothing to compute"),
    (["-m", "LOF", "--k", "40"], "skipped k=40 (k ≥ N = 40 objects"),
    (["-m", "KDEOS", "--k", "1"], "nothing to compute"),
    (["-m", "LOF", "--param", "x=1"], "unknown parameter(s) x; accepted: variant"),
    (["-m", "LOF", "-m", "KNN", "--param", "x=1"], "METHOD.x"),
    (["-m", "LoOP", "--param", "lam=-1"], "LoOP: invalid parameter lam=-1: lam must be a finite number > 0"),
    (["-m", "LOF", "--param", "variant=cks"], "LOF: unknown variant 'cks'; choose one of paper"),
    (["-m", "LOF", "--label-column", "nope"], "no label column 'nope'"),
])
def test_score_errors(dataset, tmp_path, args, msg):
    path, _, _ = dataset
    res = CliRunner().invoke(main, ["score", str(path), *args, "-o", str(tmp_path / "x.parquet")])
    assert res.exit_code != 0
    assert msg in res.output


def test_score_rejects_unknown_extension(dataset, tmp_path):
    path, _, _ = dataset
    res = CliRunner().invoke(main, ["score", str(path), "-m", "LOF", "-o", str(tmp_path / "x.txt")])
    assert res.exit_code != 0 and ".parquet, .csv or .npz" in res.output


def test_score_then_evaluate_round_trip(dataset, tmp_path):
    """`odeval evaluate` reads the table `odeval score` wrote: every column, the stored labels, and --raw
    columns oriented like public scores."""
    import json

    from odeval.measures import evaluate

    path, X, y = dataset
    g = knn_graph(X, 3)
    for out, extra in ((tmp_path / "s.parquet", []), (tmp_path / "r.csv", ["--raw"])):
        res = CliRunner().invoke(main, ["score", str(path), "-m", "ODIN", "-m", "LOF", "--k", "2:3", *extra,
                                        "-o", str(out)])
        assert res.exit_code == 0, res.output
        res = CliRunner().invoke(main, ["evaluate", "--scores", str(out), "--json"])
        assert res.exit_code == 0, res.output
        got = json.loads(res.output)["results"]
        suffix = "-raw" if extra else ""
        assert [r["column"] for r in got] == [f"{m}-{k:03d}{suffix}" for m in ("ODIN", "LOF") for k in (2, 3)]
        for r, (m, k) in zip(got, [(m, k) for m in ("ODIN", "LOF") for k in (2, 3)], strict=True):
            assert r["measures"] == evaluate(y, get_detector(m).score_all_k(g, [k])[0])


def test_score_label_column_and_unlabelled(dataset, tmp_path):
    path, _, _ = dataset
    frame = pd.read_csv(path).rename(columns={"outlier": "is_out"})
    renamed = tmp_path / "renamed.csv"
    frame.to_csv(renamed, index=False)
    out = tmp_path / "s.csv"
    res = CliRunner().invoke(main, ["score", str(renamed), "-m", "KNN", "--k", "2", "-o", str(out)])
    # no 'outlier' column: read unlabelled, so the yes/no column is an attribute, and the error says what to do
    assert res.exit_code == 1 and "'is_out': 'yes' is not a number" in res.output
    assert "if this is the label column, name it" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(main, ["score", str(renamed), "-m", "KNN", "--k", "2", "--label-column", "is_out",
                                    "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert pd.read_csv(out)["label"].sum() == 3
    plain = tmp_path / "plain.csv"
    frame.drop(columns="is_out").to_csv(plain, index=False)
    res = CliRunner().invoke(main, ["score", str(plain), "-m", "KNN", "--k", "2", "--unlabelled", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "label" not in pd.read_csv(out)
    res = CliRunner().invoke(main, ["score", str(renamed), "-m", "KNN", "--unlabelled", "--label-column", "x",
                                    "-o", str(out)])
    assert res.exit_code == 2 and "at most one of --label-column and --unlabelled" in res.output


def test_score_unlabelled_file_is_read_as_it_is(dataset, tmp_path):
    """Scoring needs no labels: a table without the label column is scored, with a one-line note on stderr."""
    path, X, _ = dataset
    plain = tmp_path / "plain.csv"
    pd.read_csv(path).drop(columns="outlier").to_csv(plain, index=False)
    out = tmp_path / "s.csv"
    res = CliRunner().invoke(main, ["score", str(plain), "-m", "KNN", "--k", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    notes = [line for line in res.stderr.splitlines() if line.startswith("note:")]
    assert notes == [f"note: {plain}: no label column 'outlier': read without labels"]
    df = pd.read_csv(out)
    assert "label" not in df
    np.testing.assert_array_equal(df["kNN-002"].to_numpy(), get_detector("KNN").score_all_k(knn_graph(X, 2), [2])[0])
    # a labelled file gets no note and keeps its labels
    res = CliRunner().invoke(main, ["score", str(path), "-m", "KNN", "--k", "2", "-o", str(out)])
    assert res.exit_code == 0 and "note:" not in res.stderr and pd.read_csv(out)["label"].sum() == 3


def test_score_all_methods(dataset, tmp_path):
    """`-m all` scores with every registered method (once, whatever else is named)."""
    from odeval.detectors import available_methods, expand_methods

    path, _, _ = dataset
    out = tmp_path / "s.csv"
    res = CliRunner().invoke(main, ["score", str(path), "-m", "all", "-m", "lof", "--k", "3", "-o", str(out)])
    assert res.exit_code == 0, res.output
    cols = [c for c in pd.read_csv(out).columns if c.endswith("-003")]
    assert sorted(c[:-4] for c in cols) == sorted(available_methods())
    # 'all' in any case; repeats dropped case-insensitively, the first spelling kept
    assert expand_methods(["LOF", "ALL", "knn"]) == ["LOF"] + [m for m in available_methods() if m != "LOF"]
