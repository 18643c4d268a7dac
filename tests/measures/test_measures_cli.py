"""``odeval evaluate`` and the vector reader behind it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from odeval.cli import main
from odeval.data.score_files import is_score_table, read_score_table, read_vector
from odeval.measures import MEASURES, MEASURES_AT_N, evaluate

Y = np.array([1, 0, 1, 0, 0])
S = np.array([0.9, 0.8, 0.8, 0.1, 0.0])


@pytest.fixture
def files(tmp_path):
    (tmp_path / "s.txt").write_text("\n".join(map(repr, S.tolist())) + "\n")
    (tmp_path / "l.txt").write_text("# ground truth\n" + "\n".join(map(str, Y)) + "\n\n")
    return tmp_path


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_labels_file_json(files):
    r = run("evaluate", "--scores", files / "s.txt", "--labels", files / "l.txt", "--n", 2, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["n_objects"] == 5 and out["n_outliers"] == 2 and out["n"] == 2
    assert tuple(out["measures"]) == MEASURES + MEASURES_AT_N
    assert out["measures"] == evaluate(Y, S, n=2)


def test_text_output_and_ascending(files):
    r = run("evaluate", "--scores", files / "s.txt", "--labels", files / "l.txt")
    assert r.exit_code == 0, r.output
    assert "roc_auc" in r.output and "0.916667" in r.output and "precision_at_n" not in r.output
    r = run("evaluate", "--scores", files / "s.txt", "--labels", files / "l.txt", "--ascending", "--json")
    assert json.loads(r.output)["measures"]["roc_auc"] == pytest.approx(1 - 0.9166666666666666)


def test_csv_and_npy_scores(files):
    (files / "s.csv").write_text("id,score\n" + "".join(f"{i},{v}\n" for i, v in enumerate(S)))
    np.save(files / "s.npy", S)
    np.save(files / "l.npy", Y)
    ref = run("evaluate", "--scores", files / "s.txt", "--labels", files / "l.txt", "--json").output
    r = run("evaluate", "--scores", files / "s.csv", "--column", "score", "--labels", files / "l.npy", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == json.loads(ref)
    r = run("evaluate", "--scores", files / "s.npy", "--labels", files / "l.txt", "--json")
    assert json.loads(r.output) == json.loads(ref)
    r = run("evaluate", "--scores", files / "s.csv", "--labels", files / "l.txt")
    assert r.exit_code == 1 and "choose one with --column" in r.output


@pytest.mark.parametrize(
    ("content", "what", "match"),
    [
        ("0.1\nnan\n", "scores", "line 2: score 'nan' is not a number"),
        ("0.1\nabc\n", "scores", "line 2: score 'abc' is not a number"),
        ("1\n2\n", "labels", "line 2: label '2' is not 0/1"),
        ("", "scores", "empty"),
        ("a,b\n1,2\n3\n", "scores", "line 3: expected 2 column"),
    ],
)
def test_read_vector_errors(tmp_path, content, what, match):
    f = tmp_path / "v.txt"
    f.write_text(content)
    with pytest.raises(ValueError, match=match):
        read_vector(f, what=what, column="0" if "a,b" in content else None)


def test_bad_inputs(files):
    r = run("evaluate", "--scores", files / "s.txt")
    assert r.exit_code == 2 and "give --labels or --dataset" in r.output
    r = run("evaluate", "--scores", files / "s.txt", "--labels", files / "l.txt", "--dataset", files / "l.txt")
    assert r.exit_code == 2 and "at most one of --labels and --dataset" in r.output
    r = run("evaluate", "--scores", files / "s.txt", "--labels", files / "l.txt", "--column", "0", "--column", "1")
    assert r.exit_code == 2 and "need a table written by 'odeval score'" in r.output
    (files / "short.txt").write_text("1\n0\n")
    r = run("evaluate", "--scores", files / "s.txt", "--labels", files / "short.txt")
    assert r.exit_code == 1 and "differ in length" in r.output
    (files / "none.txt").write_text("0\n0\n0\n0\n0\n")
    r = run("evaluate", "--scores", files / "s.txt", "--labels", files / "none.txt")
    assert r.exit_code == 1 and "no outlier" in r.output
    r = run("evaluate", "--scores", files / "s.txt", "--labels", files / "l.txt", "--n", 9)
    assert r.exit_code == 1 and "n=9 is out of range" in r.output


def test_dataset_labels(dami, tmp_path):
    path = dami / "Glass" / "Glass_withoutdupl_norm.arff"
    pytest.importorskip("odeval.data.loaders")
    from odeval.data import load_dataset

    ds = load_dataset(path)
    s = np.random.default_rng(0).integers(0, 5, size=ds.y.size).astype(float)
    np.save(tmp_path / "s.npy", s)
    r = run("evaluate", "--scores", tmp_path / "s.npy", "--dataset", path, "--n", 10, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["n_outliers"] == 9
    assert out["measures"] == evaluate(ds.y, s, n=10)


# --- tables written by `odeval score` ------------------------------------------------------------------------


def _score_table_csv(path, labels=True, extra=""):
    head = "object,id," + ("label," if labels else "") + "LOF-001,kNN-001" + extra
    rows = [f"{i},{100 + i}," + (f"{bool(y)}," if labels else "") + f"{s},{-s}"
            for i, (y, s) in enumerate(zip(Y, S, strict=True))]
    path.write_text(head + "\n" + "\n".join(rows) + "\n")
    return path


def test_score_table_csv_all_columns_labels_from_table(files):
    table = _score_table_csv(files / "t.csv")
    assert is_score_table(table) and not is_score_table(files / "s.txt")
    r = run("evaluate", "--scores", table, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert [x["column"] for x in out["results"]] == ["LOF-001", "kNN-001"]
    assert out["results"][0]["measures"] == evaluate(Y, S)
    assert out["results"][1]["measures"] == evaluate(Y, -S)
    r = run("evaluate", "--scores", table, "--column", "kNN-001")
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "N = 5, |O| = 2" and lines[1].split()[:2] == ["column", "roc_auc"]
    assert len(lines) == 3 and lines[2].startswith("kNN-001")
    r = run("evaluate", "--scores", table, "--column", "nope")
    assert r.exit_code == 1 and "no score column 'nope'" in r.output


def test_score_table_without_labels_needs_them(files):
    table = _score_table_csv(files / "t.csv", labels=False)
    r = run("evaluate", "--scores", table)
    assert r.exit_code == 2 and "has no 'label' column" in r.output
    r = run("evaluate", "--scores", table, "--labels", files / "l.txt", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["results"][0]["measures"] == evaluate(Y, S)


def test_score_table_npz_raw_columns_are_oriented(files):
    np.savez(files / "t.npz", scores=np.vstack([S, -S]), columns=np.array(["ODIN-002-raw", "LOF-002-raw"]),
             ks=np.array([2]), labels=Y.astype(bool))
    out = json.loads(run("evaluate", "--scores", files / "t.npz", "--json").output)
    # ODIN's raw score is inverted (low = outlier), LOF's is not
    assert out["results"][0]["measures"] == evaluate(Y, -S)
    assert out["results"][1]["measures"] == evaluate(Y, -S)
    np.savez(files / "u.npz", scores=S[None, :], columns=np.array(["Foo-002-raw"]), labels=Y.astype(bool))
    r = run("evaluate", "--scores", files / "u.npz")
    assert r.exit_code == 1 and "unknown method 'Foo'" in r.output


@pytest.mark.parametrize(
    ("write", "match"),
    [
        (lambda p: np.savez(p, x=S), "not an odeval score archive"),
        (lambda p: np.savez(p, scores=S, columns=np.array(["a"])), "has shape"),
        (lambda p: np.savez(p, scores=np.array([[np.nan, 1.0]]), columns=np.array(["LOF-001"])),
         "column 'LOF-001', row 0: score nan is not a number"),
        (lambda p: np.savez(p, scores=S[None, :], columns=np.array(["LOF-001"]), labels=np.arange(5)),
         "'label' column must be"),
    ],
)
def test_read_score_table_errors(tmp_path, write, match):
    path = tmp_path / "t.npz"
    write(path)
    with pytest.raises(ValueError, match=match):
        read_score_table(path)


def test_read_score_table_csv_errors(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("object,label\n0,True\n")
    with pytest.raises(ValueError, match="no score columns"):
        read_score_table(path)
    path.write_text("object,label,LOF-001\n0,True,0.5\n1,False,abc\n")
    with pytest.raises(ValueError, match="column 'LOF-001', row 1: 'abc' is not a number"):
        read_score_table(path)


def test_errors_name_the_wrong_file(tmp_path):
    s, lab = tmp_path / "s.txt", tmp_path / "l.txt"
    s.write_text("\n".join(str(v) for v in np.linspace(0, 1, 150)))
    lab.write_text("\n".join(["1"] * 10 + ["0"] * 190))
    r = run("evaluate", "--scores", s, "--labels", lab)
    assert r.exit_code == 1
    assert f"{lab} and {s} differ in length: 200 labels, 150 scores" in r.output
    lab.write_text("\n".join(["0"] * 150))
    r = run("evaluate", "--scores", s, "--labels", lab)
    assert r.exit_code == 1 and f"{lab}: the labels contain no outlier" in r.output
    s.write_text("\n".join(["inf", "1", "2"]))  # ±inf is ranked (as in studies); NaN is refused
    lab.write_text("1\n0\n0\n")
    r = run("evaluate", "--scores", s, "--labels", lab, "--json")
    assert r.exit_code == 0 and json.loads(r.output)["measures"]["roc_auc"] == 1.0
