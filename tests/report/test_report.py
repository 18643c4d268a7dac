"""The static HTML report: content, escaping, local links, CSV exports, the CLI, and a headless-Chromium render."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from tests.report.conftest import chromium, run_chrome

from odeval.bench.store import ResultStore
from odeval.cli import main
from odeval.measures import MEASURES
from odeval.report import build_report

pytest.importorskip("matplotlib")

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "report"

EVIL_BASE = '<b>Evil & "Co"</b>'
EVIL_METHOD = "<img src=x onerror=alert(1)>"


def _evil(runs: pd.DataFrame, ranks: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rename one base dataset and one method to HTML-injection strings."""
    first = runs["base_dataset"].iloc[0]
    mapping = {d: d.replace(first, EVIL_BASE) for d in runs["dataset"].unique() if d.startswith(first)}
    runs = runs.assign(dataset=runs["dataset"].replace(mapping),
                       base_dataset=runs["base_dataset"].replace({first: EVIL_BASE}),
                       method=runs["method"].replace({"LDOF": EVIL_METHOD}))
    ranks = ranks.assign(dataset=ranks["dataset"].replace(mapping),
                         method=ranks["method"].replace({"LDOF": EVIL_METHOD}))
    return runs, ranks


@pytest.fixture(scope="module")
def report(small_study, tmp_path_factory):
    runs, ranks = _evil(*small_study)
    runs = pd.concat([runs, runs.iloc[:1].assign(k=99, status="error", error="boom")], ignore_index=True)
    out = tmp_path_factory.mktemp("report")
    index = build_report(runs, ranks, out, n_simulations=20, max_curves_per_dataset=1)
    return index, runs


def _pages(index: Path) -> list[Path]:
    return [index, *sorted((index.parent / "datasets").glob("*.html"))]


def test_report_layout_and_key_sections(report):
    index, runs = report
    text = index.read_text(encoding="utf-8")
    for anchor in ('id="summary"', 'id="ranking"', 'id="nemenyi"', 'id="datasets"', 'id="tables"'):
        assert anchor in text
    assert "Friedman χ²" in text and "critical difference" in text.lower()
    assert text.count("<img ") >= 5  # bars, CD diagram, Fig. 6, Fig. 3, Fig. 4
    assert "1 run(s) failed" in text
    pages = _pages(index)
    assert len(pages) == 1 + runs["base_dataset"].nunique()
    for page in pages[1:]:
        t = page.read_text(encoding="utf-8")
        assert "Measure vs k" in t and "Binned ranks of the outliers" in t and "../index.html" in t


def test_every_name_is_escaped(report):
    index, _ = report
    for page in _pages(index):
        t = page.read_text(encoding="utf-8")
        assert EVIL_METHOD not in t and EVIL_BASE not in t and "<script" not in t.lower()
    t = index.read_text(encoding="utf-8")
    assert html.escape(EVIL_METHOD, quote=True) in t and html.escape(EVIL_BASE, quote=True) in t
    # the dataset page of the evil base dataset has a safe file name
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+\.html", p.name) for p in _pages(index)[1:])


def test_pages_are_self_contained_and_links_resolve(report):
    index, _ = report
    for page in _pages(index):
        t = page.read_text(encoding="utf-8")
        refs = re.findall(r'(?:href|src)="([^"]*)"', t)
        assert refs
        for ref in refs:
            assert not re.match(r"(?i)(https?:)?//", ref), f"{page.name} references the network: {ref}"
            if ref.startswith(("data:", "#")):
                continue
            target = (page.parent / html.unescape(ref)).resolve()
            assert target.is_file(), f"{page.name}: broken link {ref}"


def test_csv_exports_hold_the_tables(report):
    index, runs = report
    tables = index.parent / "tables"
    summary = pd.read_csv(tables / "summary_per_variant.csv")
    ok = runs[runs["status"] == "ok"]
    assert len(summary) == ok["dataset"].nunique() * ok["method"].nunique() * summary["measure"].nunique()
    assert EVIL_METHOD in set(summary["method"])  # CSV keeps the raw names
    ranks = pd.read_csv(tables / "average_ranks.csv")
    assert sorted(ranks["config"]) == sorted(ok["method"].unique())
    table = pd.read_csv(tables / "nemenyi_table.csv", index_col=0, keep_default_na=False)
    assert table.shape == (4, 4)
    for name in ("friedman_test", "nemenyi_pairwise", "difficulty_diversity", "random_baselines", "binned_ranks",
                 "datasets", "aggregate_collection"):
        assert (tables / f"{name}.csv").is_file()


def test_report_without_ranks_says_so(small_study, tmp_path):
    runs, _ = small_study
    index = build_report(runs[(runs["base_dataset"] != "Base2") & (runs["version"] == 1)], None, tmp_path,
                         n_simulations=5, max_curves_per_dataset=1)
    text = index.read_text(encoding="utf-8")
    assert "Difficulty and diversity not available" in text and "outlier_ranks" in text
    with pytest.raises(ValueError, match="measure"):
        build_report(runs, None, tmp_path, measure="nope")


def _write_store(path: Path, runs: pd.DataFrame, ranks: pd.DataFrame) -> None:
    """Write synthetic frames through the store's own writer, one unit per (dataset, method, params)."""
    import numpy as np

    from odeval.bench.store import ResultStore, UnitResult

    with ResultStore(path) as rs:
        rs.register_study("synthetic", "synthetic", "test", {}, "0")
        for (dataset, method, params), grp in runs.groupby(["dataset", "method", "params"], sort=True):
            first = grp.iloc[0]
            facts = {c: first[c] for c in ("base_dataset", "normalized", "deduplicated", "outlier_pct", "version",
                                           "provenance", "n_objects", "n_outliers", "n_attributes")}
            facts["name"] = dataset
            uid = f"{dataset}|{method}|{params}"
            res = UnitResult(unit_id=uid, dataset=facts, method=method, params=params, metric="euclidean",
                             status="ok", ks=[int(k) for k in grp["k"]],
                             measures=[{m: row[m] for m in grp.columns if m in MEASURES} for _, row in grp.iterrows()])
            r = ranks[(ranks["dataset"] == dataset) & (ranks["method"] == method) & (ranks["params"] == params)]
            res.ranks = [(int(k), g["object"].to_numpy(np.int64), g["rank"].to_numpy(np.float64))
                         for k, g in r.groupby("k")]
            rs.write_unit(res, study_hash="synthetic", version="0")


def test_cli_report_reads_a_duckdb_store(small_study, tmp_path):
    runs, ranks = small_study
    runs = runs[(runs["base_dataset"] != "Base2") & (runs["version"] == 1)]
    ranks = ranks[ranks["dataset"].isin(runs["dataset"])]
    store = tmp_path / "results.duckdb"
    _write_store(store, runs, ranks)
    with ResultStore(store, read_only=True) as rs:
        assert len(rs.runs()) == len(runs) and len(rs.outlier_ranks()) == len(ranks) and len(rs.units())
    out = tmp_path / "rep"
    res = CliRunner().invoke(main, ["report", str(store), "-o", str(out), "--simulations", "5"])
    assert res.exit_code == 0, res.output
    assert (out / "index.html").is_file() and "report written to" in res.output
    bad = CliRunner().invoke(main, ["report", str(store), "-o", str(out), "--study-hash", "nope"])
    assert bad.exit_code == 1 and "no study with study_hash 'nope'" in bad.output


def test_report_renders_in_headless_chromium(report, tmp_path):
    exe = chromium()
    if exe is None:
        pytest.skip("chromium not installed (make test installs it: apt-get install chromium)")
    index, _ = report
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    pages = {"index": index, "dataset": _pages(index)[1]}
    for label, page in pages.items():
        url = page.resolve().as_uri()
        dom = run_chrome(exe, tmp_path, "--dump-dom", url)
        assert dom.returncode == 0, dom.stderr[-2000:]
        console = [ln for ln in dom.stderr.splitlines() if ":CONSOLE" in ln]
        assert not console, f"console messages on {label}: {console}"
        assert "<h2" in dom.stdout and "<table" in dom.stdout and "<img" in dom.stdout
        if label == "index":
            for text in ("Study summary", "Method ranking", "Nemenyi test", "Dataset map"):
                assert text in dom.stdout
        else:  # the ensembles section (here without stored scores: its keep_scores note)
            assert "Similarity of scorings and ensembles" in dom.stdout and "keep_scores" in dom.stdout
        shot = ARTIFACTS / f"{label}.png"
        shot.unlink(missing_ok=True)
        res = run_chrome(exe, tmp_path, "--window-size=1280,2600", f"--screenshot={shot}", url)
        assert res.returncode == 0 and shot.is_file() and shot.stat().st_size > 10_000, res.stderr[-2000:]
        assert not [ln for ln in res.stderr.splitlines() if ":CONSOLE" in ln]


@pytest.mark.slow
def test_report_is_deterministic(small_study, tmp_path):
    runs, ranks = small_study
    runs = runs[(runs["base_dataset"] == "Base0") & runs["method"].isin(["KNN", "LOF"]) & (runs["version"] == 1)]
    ranks = ranks[ranks["dataset"].isin(runs["dataset"])]
    a = build_report(runs, ranks, tmp_path / "a", n_simulations=5, max_curves_per_dataset=1)
    b = build_report(runs, ranks, tmp_path / "b", n_simulations=5, max_curves_per_dataset=1)
    assert a.read_bytes() == b.read_bytes()
    np.testing.assert_array_equal(pd.read_csv(a.parent / "tables" / "random_baselines.csv").to_numpy(),
                                  pd.read_csv(b.parent / "tables" / "random_baselines.csv").to_numpy())
