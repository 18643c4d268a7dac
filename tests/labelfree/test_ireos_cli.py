"""`odeval ireos`: a thin shell over odeval.labelfree.ireos."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from odeval.cli import main


def _files(tmp_path):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (40, 2)), [[6, 6], [-6, 5], [7, -5]]])
    y = np.r_[np.zeros(40), np.ones(3)].astype(int)
    data = tmp_path / "toy.csv"
    with open(data, "w") as fh:
        fh.write("a,b,outlier\n")
        for row, lab in zip(X, y, strict=True):
            fh.write(f"{row[0]},{row[1]},{'yes' if lab else 'no'}\n")
    good = np.linalg.norm(X, axis=1)
    bad = -good
    scores = tmp_path / "scores.npz"
    np.savez(scores, scores=np.vstack([good, bad, rng.random(len(X))]), columns=np.array(["good", "bad", "rand"]))
    return data, scores


def test_cli_json_and_table(tmp_path):
    data, scores = _files(tmp_path)
    runner = CliRunner()
    res = runner.invoke(main, ["ireos", str(data), "--scores", str(scores), "--json", "--gamma-max", "1",
                               "--quadrature", "fixed", "--n-gamma", "5"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    vals = {r["column"]: r for r in out["results"]}
    assert vals["good"]["ireos"] > vals["bad"]["ireos"]
    assert vals["good"]["roc_auc"] == 1.0
    res = runner.invoke(main, ["ireos", str(data), "--scores", str(scores), "--gamma-max", "1", "--adjust",
                               "--pvalue", "--quadrature", "fixed", "--n-gamma", "5", "--column", "good"])
    assert res.exit_code == 0, res.output
    assert "adjusted" in res.output and "p_value" in res.output and "good" in res.output


def test_cli_errors_are_one_line(tmp_path):
    data, scores = _files(tmp_path)
    runner = CliRunner()
    for args in (["--mcl", "huge"], ["--gamma-max", "-1"], ["--column", "nope"]):
        res = runner.invoke(main, ["ireos", str(data), "--scores", str(scores), *args])
        assert res.exit_code != 0
        assert "Traceback" not in res.output and res.output.strip().count("\n") <= 1, res.output


def test_cli_gamma_max_quantile(tmp_path):
    data, scores = _files(tmp_path)
    runner = CliRunner()
    args = ["ireos", str(data), "--scores", str(scores), "--json", "--quadrature", "fixed", "--n-gamma", "5"]
    full = json.loads(runner.invoke(main, args).output)
    part = runner.invoke(main, [*args, "--gamma-max-quantile", "0.5"])
    assert part.exit_code == 0, part.output
    assert json.loads(part.output)["gamma_max"] <= full["gamma_max"]
    bad = runner.invoke(main, [*args, "--gamma-max-quantile", "0"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output


def test_cli_null_option(tmp_path):
    """--null picks the random scorings of the p-values: the paper's uniform weights (default) or permutations."""
    data, scores = _files(tmp_path)
    runner = CliRunner()
    base = ["ireos", str(data), "--scores", str(scores), "--json", "--gamma-max", "1", "--quadrature", "fixed",
            "--n-gamma", "5", "--pvalue", "--column", "rand"]
    out = {}
    for null in ("uniform", "permutation"):
        res = runner.invoke(main, [*base, "--null", null])
        assert res.exit_code == 0, res.output
        out[null] = json.loads(res.output)["results"][0]
    assert out["uniform"]["ireos"] == out["permutation"]["ireos"]
    assert out["uniform"]["p_value"] != out["permutation"]["p_value"]
    default = runner.invoke(main, base)
    assert json.loads(default.output)["results"][0]["p_value"] == out["uniform"]["p_value"]
    assert runner.invoke(main, [*base, "--null", "shuffle"]).exit_code != 0
