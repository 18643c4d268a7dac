"""The report of a study with every label-free part (IREOS and the selectors' picks from the per-variant step, EM/MV
per unit): navigation, names, title, the Nemenyi note, several studies in one store, and the layout at 700 and
1280 px in headless Chromium (no table overflows the page)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from tests.report.conftest import chromium, measure_layout, run_chrome

from odeval._key import ScoringKey
from odeval.bench import run_study, study_from_dict
from odeval.bench.store import ResultStore, StoreError
from odeval.cli import main
from odeval.report import report_from_store

pytest.importorskip("matplotlib")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "report"
NAME = "label-free study"


def _study(data: Path, name: str = NAME, k: str = "2..6") -> dict:
    return {"study": {"name": name, "k": k, "keep_scores": True},
            "internal": ["ireos", "em", "mv"],
            "internal_options": {"knn": "exact", "quadrature": "fixed", "n_gamma": 12, "draws": 2,
                                 "n_generated": 300, "features": 2},
            "selection": {"selectors": ["mc-spearman", "hits", "ensemble", "random", "default-knn10"],
                          "candidates": "all"},
            "datasets": [{"path": str(data / "va.npz")}, {"path": str(data / "vb.npz")}],
            "methods": [{"name": "kNN"}, {"name": "LOF"}, {"name": "kNNW"}]}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A store of one study with IREOS + selection (per-variant step) and EM/MV (per unit) on two small variants."""
    from tests.bench.conftest import make_npz

    tmp = tmp_path_factory.mktemp("labelfree")
    data = tmp / "data"
    data.mkdir()
    make_npz(data / "va.npz", 40, 4, 2, seed=1)
    make_npz(data / "vb.npz", 50, 3, 3, seed=2)
    path = tmp / "r.duckdb"
    assert not run_study(study_from_dict(_study(data), source="test"), path, workers=1, progress="none").failed
    return path


@pytest.fixture(scope="module")
def report(store, tmp_path_factory) -> Path:
    index, messages = report_from_store(store, tmp_path_factory.mktemp("rep") / "report", permutations=0,
                                        simulations=5, pages=[("select/select.html", "odeval select <&>", "a page")])
    assert messages == []  # one study: nothing to say
    return index


def test_label_free_sections_are_in_the_navigation(report):
    html = report.read_text()
    nav = re.search(r'<nav class="toc">(.*?)</nav>', html).group(1)
    anchors = re.findall(r'href="#([^"]+)"', nav)
    assert anchors == ["summary", "ranking", "nemenyi", "datasets", "selection", "internal", "ireos", "pages",
                       "tables"]
    assert '<a href="select/select.html">odeval select &lt;&amp;&gt;</a> — a page' in html  # odeval demo's link
    for anchor in anchors:
        assert f'id="{anchor}"' in html, anchor
    assert ">IREOS<" in nav and ">EM / MV<" in nav and ">Label-free selection<" in nav


def test_title_is_the_study_name_and_candidates_carry_the_scoring_key(report, store):
    html = report.read_text()
    assert f"<title>{NAME}</title>" in html and f"<h1>{NAME}</h1>" in html
    assert not re.search(r"\w k=\d", html)  # the old "kNN k=4" form is gone
    picks = pd.concat([pd.read_csv(report.parent / "tables" / f) for f in ("ireos_picks.csv", "internal_picks.csv")])
    with ResultStore(store, read_only=True) as rs:
        stored = set(rs.variant_table("variant_candidates")["name"])  # the names the per-variant step stored
    for name in picks["pick"]:
        key = ScoringKey.parse(name)
        assert key.k is not None and name == key.label(params=False, metric=False) and name in stored, name
    audit = pd.read_csv(report.parent / "tables" / "selection_picks.csv")
    single = {c for c in audit["choice"].dropna() if not c.startswith(("ensemble of", "expected"))}
    assert single and single <= stored  # the audit names candidates the same way


def test_nemenyi_grid_without_a_significant_pair_says_so(report):
    html = report.read_text()
    table = pd.read_csv(report.parent / "tables" / "nemenyi_table.csv", index_col=0)
    assert table.isna().all().all()  # 3 methods on 2 base datasets: nothing is significant
    assert "No pair of methods differs significantly" in html


def test_several_studies_are_named_and_one_can_be_picked(store, tmp_path):
    from tests.bench.conftest import make_npz

    copy = tmp_path / "two.duckdb"
    copy.write_bytes(store.read_bytes())
    data = store.parent / "data"
    make_npz(tmp_path / "vc.npz", 45, 3, 2, seed=3)
    second_study = {**_study(data, name="second", k="2..4"), "datasets": [{"path": str(tmp_path / "vc.npz")}]}
    assert not run_study(study_from_dict(second_study, source="test"), copy, workers=1, progress="none").failed
    with ResultStore(copy, read_only=True) as rs:
        studies = rs.studies()
    assert list(studies["name"]) == [NAME, "second"] and list(studies["n_datasets"]) == [2, 1]
    first, second = studies["study_hash"]

    res = CliRunner().invoke(main, ["results", "studies", str(copy)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].endswith(": 2 studies") and lines[1].split() == ["hash", "units", "datasets", "when", "name"]
    assert lines[2].startswith(first) and lines[2].endswith(NAME) and lines[3].split()[:3] == [second, "3", "1"]
    assert "--study HASH|NAME" in lines[-1]
    listed = json.loads(CliRunner().invoke(main, ["results", "studies", str(copy), "--json"]).output)
    assert [s["study_hash"] for s in listed] == [first, second]

    fast = ["--simulations", "5", "--permutations", "0", "--no-ensembles"]
    res = CliRunner().invoke(main, ["report", str(copy), "-o", str(tmp_path / "both"), *fast])
    assert res.exit_code == 0, res.output
    warned = [ln for ln in res.output.splitlines() if ln.startswith("warning:")]
    assert len(warned) == 1 and NAME in warned[0] and second in warned[0] and "--study" in warned[0]
    assert f"<title>{NAME} + second</title>" in (tmp_path / "both" / "index.html").read_text()
    for pick in ("second", second[:6]):
        res = CliRunner().invoke(main, ["report", str(copy), "-o", str(tmp_path / pick), "--study", pick, *fast])
        assert res.exit_code == 0 and "warning:" not in res.output, res.output
        html = (tmp_path / pick / "index.html").read_text()
        assert "<title>second</title>" in html and second in html and "2–4" in html and ">vc<" in html
        assert ">va<" not in html
    res = CliRunner().invoke(main, ["report", str(copy), "-o", str(tmp_path / "x"), "--study", "nope"])
    assert res.exit_code == 1 and f"no study 'nope'; studies: {NAME} ({first}), second ({second})" in res.output
    with pytest.raises(StoreError, match="no study"):
        report_from_store(copy, tmp_path / "y", study="nope")

    # a third study scoring a variant again cannot be merged: the error names the studies and --study
    third = {**_study(data, name="third", k="2..3"), "datasets": [{"path": str(data / "va.npz")}]}
    assert not run_study(study_from_dict(third, source="test"), copy, workers=1, progress="none").failed
    res = CliRunner().invoke(main, ["report", str(copy), "-o", str(tmp_path / "three"), *fast])
    assert res.exit_code == 1 and "duplicate" in res.output and "3 studies" in res.output
    assert "pick one with --study HASH|NAME" in res.output


@pytest.mark.parametrize("width", [700, 1280])
def test_no_table_overflows_the_page(report, tmp_path, width):
    exe = chromium()
    if exe is None:
        pytest.skip("chromium not installed (make test installs it: apt-get install chromium)")
    layout = measure_layout(exe, report, width, tmp_path)
    assert layout["viewport"] == width and layout["scroll_width"] <= width, layout  # no horizontal page scroll
    sections = {t["section"] for t in layout["tables"]}
    assert {"selection", "internal", "ireos"} <= sections, sections
    for table in layout["tables"]:
        assert 0 <= table["box_left"] and table["box_right"] <= width, table  # each box inside the page
        if width >= 1280:  # wide enough for every table: nothing hides behind a scroll bar
            assert table["table_width"] <= table["box_width"] + 1, table
    for page in sorted((report.parent / "datasets").glob("*.html"))[:1]:  # a dataset page: no sideways scroll
        other = measure_layout(exe, page, width, tmp_path)
        assert other["scroll_width"] <= width and all(t["box_right"] <= width for t in other["tables"]), other
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / f"labelfree-{width}.png"
    shot.unlink(missing_ok=True)
    res = run_chrome(exe, tmp_path, f"--window-size={width},9000", f"--screenshot={shot}", report.resolve().as_uri())
    assert res.returncode == 0 and shot.is_file(), res.stderr[-2000:]
