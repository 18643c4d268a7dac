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
    # --device: unknown, or CUDA where PyTorch sees none (or is not installed): one line, never a silent CPU run
    for args in (["--mcl", "huge"], ["--gamma-max", "-1"], ["--column", "nope"], ["--device", "gpu"],
                 ["--exact", "--device", "cuda"]):
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


def _unlabelled(tmp_path, n=43):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (n - 3, 2)), [[6, 6], [-6, 5], [7, -5]]])
    data = tmp_path / "plain.csv"
    data.write_text("a,b\n" + "".join(f"{a},{b}\n" for a, b in X), encoding="utf-8")
    good = np.linalg.norm(X, axis=1)
    scores = tmp_path / "plain_scores.npz"
    np.savez(scores, scores=np.vstack([-good, rng.random(len(X)), good]), columns=np.array(["bad", "rand", "good"]))
    return data, scores


def test_cli_unlabelled_sorted_pick_and_p_values(tmp_path):
    """A table without labels is read as it is (a note on stderr); rows sorted by the index, the pick marked; the
    p-values explained; with labels the ROC AUC column stays."""
    data, scores = _unlabelled(tmp_path)
    args = ["--scores", str(scores), "--gamma-max", "1", "--quadrature", "fixed", "--n-gamma", "5"]
    res = CliRunner().invoke(main, ["ireos", str(data), *args, "--adjust", "--pvalue"])
    assert res.exit_code == 0, res.output
    assert res.stderr.strip() == f"note: {data}: no label column 'outlier': read without labels"
    lines = res.stdout.splitlines()
    rows = [line for line in lines if line[2:].split(" ")[0] in ("good", "rand", "bad")]
    assert [r[2:].split()[0] for r in rows] == ["good", "rand", "bad"] and rows[0].startswith("* ")
    assert "roc_auc" not in res.stdout and "pick: good" in res.stdout
    assert "1/1001" in res.stdout and "do not separate candidates" in res.stdout and "262 of 262" in res.stdout
    out = json.loads(CliRunner().invoke(main, ["ireos", str(data), *args, "--json"]).stdout)
    assert out["pick"] == "good" and [r["column"] for r in out["results"]] == ["good", "rand", "bad"]
    assert out["knn"] is None and out["approximated"] is None
    labelled, lscores = _files(tmp_path)
    res = CliRunner().invoke(main, ["ireos", str(labelled), "--scores", str(lscores), *args[2:]])
    assert res.exit_code == 0 and "roc_auc" in res.stdout and "note:" not in res.stderr
    assert "p-values" not in res.stdout  # not computed: nothing to explain


def test_cli_approximates_above_the_stated_size(tmp_path):
    """Above --exact-max objects the default is the kNN-subset approximation (knn = 250), said on stderr; --exact
    and --knn choose explicitly."""
    data, scores = _unlabelled(tmp_path, n=300)
    args = ["ireos", str(data), "--scores", str(scores), "--gamma-max", "1", "--quadrature", "fixed", "--n-gamma", "3",
            "--json"]
    res = CliRunner().invoke(main, [*args, "--exact-max", "200"])
    assert res.exit_code == 0, res.output
    assert "N = 300 > 200: kNN-subset approximation with knn = 250" in res.stderr
    approx = json.loads(res.stdout)
    assert approx["knn"] == 250 and approx["approximated"].startswith("N = 300 > 200")
    same = json.loads(CliRunner().invoke(main, [*args, "--knn", "250"]).stdout)
    assert [r["ireos"] for r in same["results"]] == [r["ireos"] for r in approx["results"]]
    exact = CliRunner().invoke(main, [*args, "--exact-max", "200", "--exact"])
    assert json.loads(exact.stdout)["knn"] is None and "approximation" not in exact.stderr
    bad = CliRunner().invoke(main, [*args, "--exact", "--knn", "5"])
    assert bad.exit_code == 2 and "at most one of --exact and --knn" in bad.output


def test_gamma_max_high_is_explained(tmp_path):
    """A searched γ_max above the threshold of the classifier that ran (GAMMA_MAX_WARNING: 100 for both, the
    optimum's being the guarded rule's) gets a line saying what it means; a given one does not."""
    from dataclasses import replace

    from odeval.analysis.labelfree import ireos_of_scorings
    from odeval.labelfree import GuardedSettings, IREOSSettings
    from odeval.labelfree.ireos import GAMMA_MAX_WARNING
    from odeval.render.labelfree import render_ireos

    assert GAMMA_MAX_WARNING["optimum"] == GuardedSettings.threshold == 100
    assert GAMMA_MAX_WARNING["pinned"] == 100
    data, scores = _unlabelled(tmp_path)
    run = ireos_of_scorings(data, scores, settings=IREOSSettings(quadrature="fixed", n_gamma=3))
    assert run.gamma_max_searched and run.result.gamma_max < 100 and run.result.classifier == "pinned"
    assert "gamma_max =" not in render_ireos(run).split("\n", 1)[1]
    assert json.loads(render_ireos(run, as_json=True))["classifier"] == "pinned"
    # the pinned default: at or below 100 no line (the Campos audit with the pinned classifier)
    assert "ended high" not in render_ireos(replace(run, result=replace(run.result, gamma_max=100.0)))
    high = replace(run, result=replace(run.result, gamma_max=1640.0))
    text = render_ireos(high)
    assert "gamma_max = 1640 > 100 (classifier pinned): the search ended high" in text
    assert "near random" in text
    # the optimum: the guarded rule's threshold and its finding
    opt = replace(run, result=replace(run.result, gamma_max=523.0, classifier="optimum"))
    text = render_ireos(opt)
    assert "gamma_max = 523 > 100 (classifier optimum): the search ended high" in text and "near random" in text
    assert "the search ended high" in json.loads(render_ireos(opt, as_json=True))["notes"][0]
    assert "ended high" not in render_ireos(replace(opt, gamma_max_searched=False))
    assert "ended high" not in render_ireos(replace(high, gamma_max_searched=False))


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
        # the note says which random scorings the p-values were tested against
        note = json.loads(res.output)["notes"][0]
        assert ("its own weights shuffled" in note) == (null == "permutation")
        assert ("i.i.d. uniform weights" in note) == (null == "uniform")
    assert out["uniform"]["ireos"] == out["permutation"]["ireos"]
    assert out["uniform"]["p_value"] != out["permutation"]["p_value"]
    default = runner.invoke(main, base)
    assert json.loads(default.output)["results"][0]["p_value"] == out["uniform"]["p_value"]
    assert runner.invoke(main, [*base, "--null", "shuffle"]).exit_code != 0


def test_cli_classifier_option(tmp_path):
    """--classifier: the reference code's pinned classifier (default) or the exact KLR optimum; they give other
    separabilities, so another gamma_max (docs/ireos.md, *The classifier, exactly*)."""
    data, scores = _files(tmp_path)
    runner = CliRunner()
    args = ["ireos", str(data), "--scores", str(scores), "--json", "--quadrature", "fixed", "--n-gamma", "5"]
    default = runner.invoke(main, args)
    optimum = runner.invoke(main, [*args, "--classifier", "optimum"])
    assert default.exit_code == 0 and optimum.exit_code == 0, default.output + optimum.output
    assert json.loads(default.output)["gamma_max"] != json.loads(optimum.output)["gamma_max"]
    bad = runner.invoke(main, [*args, "--classifier", "svm"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output
