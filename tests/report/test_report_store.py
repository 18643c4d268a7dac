"""End to end: `odeval study run` writes a real results store, `odeval report` turns it into the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from odeval.cli import main

pytest.importorskip("matplotlib")


@pytest.mark.slow
@pytest.mark.shared_data
def test_study_store_to_report(dami: Path, tmp_path: Path):
    study = tmp_path / "study.toml"
    study.write_text(
        "[study]\nname = \"report-e2e\"\nk = \"1..12\"\nkeep_scores = true\n\n"
        f"[[datasets]]\nglob = \"{dami}/WBC/WBC_withoutdupl_norm_v0[1-2].arff\"\n"
        f"[[datasets]]\nglob = \"{dami}/Glass/Glass_withoutdupl_norm.arff\"\n"
        f"[[datasets]]\nglob = \"{dami}/Hepatitis/Hepatitis_withoutdupl_norm_05_v01.arff\"\n\n"
        "[[methods]]\nname = \"kNN\"\n[[methods]]\nname = \"LOF\"\n[[methods]]\nname = \"LDOF\"\n",
        encoding="utf-8",
    )
    store = tmp_path / "results.duckdb"
    run = CliRunner().invoke(main, ["study", "run", str(study), "--store", str(store), "--workers", "1", "-q"])
    assert run.exit_code == 0, run.output
    out = tmp_path / "report"
    res = CliRunner().invoke(main, ["report", str(store), "-o", str(out), "--permutations", "99",
                                    "--simulations", "20"])
    assert res.exit_code == 0, res.output
    tables = out / "tables"
    summary = pd.read_csv(tables / "summary_per_variant.csv")
    assert summary["dataset"].nunique() == 4 and summary["method"].nunique() == 3
    chars = pd.read_csv(tables / "difficulty_diversity.csv")
    assert len(chars) == 4 and chars["n_methods"].eq(3).all()
    perm = pd.read_csv(tables / "permutation_test.csv").set_index("dataset")
    assert perm.loc["WBC_withoutdupl_norm_v01", "p_value"] == pytest.approx(1 / 100)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "Observed" in index or "permuted" in index
    assert len(list((out / "datasets").glob("*.html"))) == 3
