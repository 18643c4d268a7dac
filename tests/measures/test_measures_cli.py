"""``odeval evaluate`` and the vector reader behind it."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from odeval.cli import main
from odeval.measures import MEASURES, MEASURES_AT_N, evaluate
from odeval.measures._io import read_vector

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
        ("0.1\nnan\n", "scores", "line 2: score 'nan' is not finite"),
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
    assert r.exit_code == 2 and "exactly one of --labels and --dataset" in r.output
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
