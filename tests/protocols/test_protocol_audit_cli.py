"""`odeval protocol-audit`: Table 1, the sweep files, findings, JSON rows and one-line errors (CliRunner)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from odeval.cli import main


@pytest.fixture()
def npz(tmp_path):
    rng = np.random.default_rng(0)
    X = np.vstack((rng.normal(size=(150, 3)), rng.normal(size=(15, 3)) + 2.5))
    y = np.r_[np.zeros(150), np.ones(15)]
    path = tmp_path / "toy.npz"
    np.savez(path, X=X, y=y)
    return path


def test_protocol_audit_json_and_files(npz, tmp_path):
    out = tmp_path / "audit"
    res = CliRunner().invoke(main, ["protocol-audit", str(npz), "--detector", "kNN", "--k", "5", "--runs", "4",
                                    "--sweep-runs", "2", "-j", "1", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout[res.stdout.index("["):])
    assert [(r["setting"], r["metric"]) for r in rows][:3] == [("alg1-20-estimated", m) for m in ("f1", "avpr", "auc")]
    assert len(rows) == 12 and all(r["runs"] == 4 and set(r) == {"setting", "metric", "mean", "std", "runs"}
                                   for r in rows)
    for name in ("table1.csv", "runs.csv", "sweep.csv", "sweep.png", "findings.txt"):
        assert (out / name).stat().st_size > 0


def test_protocol_audit_text_with_adapter(npz, tmp_path):
    res = CliRunner().invoke(main, ["protocol-audit", str(npz), "--detector", "ocsvm", "--param", "nu=0.9",
                                    "--param", "gamma=auto", "--runs", "3", "--sweep-runs", "0", "-j", "1",
                                    "-o", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert "alg2-5-optimal" in res.output and "× the unbiased protocol's" in res.output
    assert "ROC AUC moves by at most" in res.output


@pytest.mark.parametrize("args, message", [
    (["--detector", "nosuch"], "unknown detector"),
    (["--detector", "LOF"], "--k"),
    (["--detector", "COF", "--k", "3"], "no novelty"),
    (["--detector", "ocsvm", "--param", "bogus=1"], "ocsvm"),
    (["--detector", "iforest", "--k", "3"], "--k does not apply"),
])
def test_protocol_audit_errors_are_one_line(npz, tmp_path, args, message):
    res = CliRunner().invoke(main, ["protocol-audit", str(npz), *args, "--runs", "2", "-o", str(tmp_path / "x")])
    assert res.exit_code != 0
    assert message in res.output and "Traceback" not in res.output
    assert len([ln for ln in res.output.splitlines() if ln.startswith("Error")]) == 1


def test_protocol_audit_reads_odds_mat(shared_datasets, tmp_path):
    path = shared_datasets / "odds" / "arrhythmia.mat"
    if not path.exists():
        pytest.skip(f"{path} not found")
    res = CliRunner().invoke(main, ["protocol-audit", str(path), "--detector", "iforest", "--param",
                                    "n_estimators=20", "--runs", "2", "--sweep-runs", "0", "-j", "1",
                                    "-o", str(tmp_path / "m"), "--json"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.stdout[res.stdout.index("["):])) == 12
