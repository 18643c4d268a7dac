"""`odeval demo` shows both halves: the labelled study with its report, and `odeval select` on a vendored dataset
with its labels held back, whose page the report links."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from odeval.bench.demo import DEMO_SELECT, demo_select, demo_select_command
from odeval.cli import main
from odeval.report.select_page import write_select_page

pytest.importorskip("matplotlib")


def test_demo_select_holds_the_labels_back_and_replaces_its_own_files(tmp_path):
    out = tmp_path / "report" / "select"
    rec, _, written = demo_select(out, page=write_select_page)
    assert {p.name for p in written} == {"scores.csv", "select.json", "select.html"}
    saved = json.loads((out / "select.json").read_text())
    assert saved["dataset"]["name"] == DEMO_SELECT["dataset"] and saved["pool"]["ks"][-1] <= DEMO_SELECT["k_max"]
    assert rec.check and "never passed to it" in rec.check["note"]  # evaluated afterwards only
    again, _, _ = demo_select(out, page=write_select_page)  # a second demo run replaces the files
    assert again.recommended == rec.recommended and sorted(p.name for p in out.iterdir()) == sorted(
        p.name for p in written)
    (out / "mine.txt").write_text("x")
    with pytest.raises(ValueError, match="did not write"):
        demo_select(out)
    command = demo_select_command()
    assert command.startswith("odeval select ") and f"--check-labels {DEMO_SELECT['labels']}" in command


@pytest.mark.slow
def test_demo_prints_both_halves_and_the_report_links_the_select_page(tmp_path):
    res = CliRunner().invoke(main, ["demo", "-o", str(tmp_path), "--k", "1..3", "-q"])
    assert res.exit_code == 0, res.output
    assert "Label-free half: odeval select on WBC_withoutdupl_norm_v01" in res.output
    assert re.search(r"Recommendation: \S+", res.output)
    assert re.search(r"check against the held-back labels \(\d+ outliers of \d+\): \S+ ROC AUC 0\.\d{3}", res.output)
    index = (tmp_path / "report" / "index.html").read_text()
    assert '<a href="#pages">' in index and 'href="select/select.html"' in index
    assert (tmp_path / "report" / "select" / "select.html").is_file()
    assert "<title>odeval-demo</title>" in index  # the study's name
