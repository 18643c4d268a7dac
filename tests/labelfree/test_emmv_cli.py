"""``odeval emmv``: the thin CLI shell over odeval.labelfree.emmv_algorithm."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from odeval.cli import main


def _npz(path, X, y):
    np.savez(path, X=X, y=y)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("emmv")
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(180, 3)), rng.normal(4, 1, size=(20, 3))]
    y = np.r_[np.zeros(180), np.ones(20)].astype(int)
    wide = np.r_[rng.normal(size=(180, 12)), rng.normal(3, 1, size=(20, 12))]
    const = X.copy()
    const[:, 1] = 2.0
    nan = X.copy()
    nan[5, 0] = np.nan
    return {"low": _npz(d / "low.npz", X, y), "wide": _npz(d / "wide.npz", wide, y),
            "const": _npz(d / "const.npz", const, y), "nan": _npz(d / "nan.npz", nan, y),
            "tiny": _npz(d / "tiny.npz", X[[0, 190, 191]], y[[0, 190, 191]])}


def run(*args):
    return CliRunner().invoke(main, ["emmv", *map(str, args)])


def test_json_novelty(files):
    r = run(files["low"], "--detector", "iforest", "--n-generated", 2000, "--json", "--seed", 1)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["setting"] == "novelty" and out["draws"] == 1 and not out["subsampled"]
    assert out["em"] > 0 and out["mv"] > 0 and 0.5 < out["roc_auc"] <= 1


def test_text_unsupervised_subsampled_knn(files):
    r = run(files["wide"], "-d", "kNN", "--k", 5, "--setting", "unsupervised", "--draws", 3, "--features", 4,
            "--n-generated", 2000)
    assert r.exit_code == 0, r.output
    assert "3 draws of 4 features" in r.output and "EM " in r.output and "ROC AUC" in r.output


@pytest.mark.parametrize(("key", "args", "match"), [
    ("wide", ["--features", 20], "exceeds the 12 attributes"),
    ("wide", ["--draws", 0], "--draws must be at least 1"),
    ("low", ["-d", "ODIN"], "cannot score points outside the fitted data"),
    ("low", ["-d", "nosuch"], "unknown detector"),
    ("const", ["--min-distinct", 0], "constant"),
    ("nan", [], "missing values"),
    ("tiny", ["--max-outlier-ratio", 5, "--min-distinct", 0, "--seed", 1], "empty test split"),
    ("low", ["--no-split"], "needs a train/test split"),
])
def test_bad_input_one_line(files, key, args, match):
    base = ["-d", "iforest", "--n-generated", 500]
    r = run(files[key], *base, *args)
    assert r.exit_code != 0
    assert "Traceback" not in r.output and match in r.output, r.output
    assert len([line for line in r.output.splitlines() if line.startswith("Error")]) == 1


def test_workers_option_and_the_hidden_former_jobs_option(files):
    """--workers (-j) is the option; --jobs, its former name, still works but is no longer shown."""
    help_text = run("--help").output
    assert "--workers" in help_text and "--jobs" not in help_text
    args = [files["wide"], "--detector", "iforest", "--n-generated", 500, "--draws", 2, "--json"]
    new = run(*args, "--workers", 1)
    old = run(*args, "--jobs", 1)
    assert new.exit_code == 0 and old.exit_code == 0, (new.output, old.output)
    assert json.loads(new.output) == json.loads(old.output)
    both = run(*args, "--workers", 1, "--jobs", 1)
    assert both.exit_code == 2 and "not both" in both.output
    zero = run(*args, "--workers", 0)
    assert zero.exit_code == 2 and "-1 (every core)" in zero.output


def test_unlabelled_file(files, tmp_path):
    """EM/MV need no labels: a file without them is read as it is (a note on stderr), in the unsupervised setting;
    the same data with labels give the same EM and MV in that setting (the outlier cap aside: --max-outlier-ratio
    large enough to keep every outlier)."""
    z = np.load(files["low"])
    plain = tmp_path / "plain.npz"
    np.savez(plain, X=z["X"])
    args = ["-d", "kNN", "--k", 5, "--n-generated", 2000, "--max-outlier-ratio", 1, "--json"]
    r = run(plain, *args)
    assert r.exit_code == 0, r.output
    assert r.stderr.strip().endswith(f"note: {plain}: no label array 'y': read without labels (setting unsupervised)")
    out = json.loads(r.stdout)
    assert out["setting"] == "unsupervised" and "roc_auc" not in out
    ref = json.loads(run(files["low"], *args, "--setting", "unsupervised").stdout)
    assert (out["em"], out["mv"]) == (ref["em"], ref["mv"]) and "roc_auc" in ref
    r = run(plain, "-d", "kNN", "--setting", "novelty")
    assert r.exit_code == 1 and "the novelty setting fits on the normal objects and needs them" in r.output
    assert "Traceback" not in r.output
