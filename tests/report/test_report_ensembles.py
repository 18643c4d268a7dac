"""The report's "similarity of scorings and ensembles" section: present with stored scores, a note without."""

from __future__ import annotations

import html
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from odeval.bench import run_study, study_from_dict
from odeval.cli import main
from odeval.report import build_report, report_from_store

pytest.importorskip("matplotlib")

EVIL = 'ev&l<b>"x'


def _store(tmp: Path, keep_scores: bool) -> Path:
    rng = np.random.default_rng(0)
    data = tmp / "data"
    data.mkdir()
    for name, seed in ((f"{EVIL}_withoutdupl_norm", 1), ("Plain_withoutdupl_norm_05_v01", 2),
                       ("Plain_withoutdupl_norm_05_v02", 3)):
        rng = np.random.default_rng(seed)
        X = np.vstack([rng.normal(0, 1, (45, 3)), rng.uniform(-5, 5, (5, 3))])
        np.savez(data / f"{name}.npz", X=X, y=np.r_[np.zeros(45), np.ones(5)])
    spec = study_from_dict({
        "study": {"name": "rep-ens", "k": "2..6", "keep_scores": keep_scores},
        "datasets": [{"glob": str(data / "*.npz")}],
        "methods": [{"name": "kNN"}, {"name": "LOF"}, {"name": "ODIN"}],
    }, source="test")
    store = tmp / "r.duckdb"
    assert not run_study(spec, store, workers=1, progress="none").failed
    return store


@pytest.fixture(scope="module")
def kept_report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ens_kept")
    store = _store(tmp, True)
    index, _ = report_from_store(store, tmp / "report", permutations=0, simulations=5, ensemble_random=30)
    return index, store


def _page(index: Path, stem: str) -> str:
    pages = [p for p in (index.parent / "datasets").glob("*.html") if p.stem.startswith(stem)]
    assert len(pages) == 1, pages
    return pages[0].read_text(encoding="utf-8")


def test_section_present_when_scores_are_kept(kept_report):
    kept_report, _ = kept_report
    tables = kept_report.parent / "tables"
    text = _page(kept_report, "Plain")
    assert 'id="ensembles"' in text and "Greedy ensemble" in text and "Similarity of the scorings" in text
    assert 'alt="similarity matrix Plain_withoutdupl_norm_05_v01"' in text  # first variant by name
    assert "standard deviations" in text and "random ensembles (30, seed 0)" in text
    sim = pd.read_csv(tables / "ds_Plain_similarity.csv", index_col=0)
    assert sim.index[0] == "truth" and sim.iloc[0, 0] == 1.0 and sim.shape[0] == sim.shape[1]
    # each method at its best k and at k = 2 and 6
    assert {"kNN-002", "kNN-006", "LOF-002", "ODIN-006"} <= set(sim.index)
    ens = pd.read_csv(tables / "ds_Plain_ensemble.csv")
    assert list(ens["scorings"])[:2] == [1, 15] and ens["ensemble"].str.startswith("greedy").iloc[3]
    overview = pd.read_csv(tables / "ensembles.csv")
    assert len(overview) == 2 and set(overview["dataset"]) == {"Plain_withoutdupl_norm_05_v01",
                                                             f"{EVIL}_withoutdupl_norm"}
    assert "tables/ensembles.csv" in kept_report.read_text(encoding="utf-8")
    # the dataset name from the file is escaped everywhere
    evil = _page(kept_report, "ev")
    assert EVIL not in evil and html.escape(EVIL, quote=True) in evil and "Greedy ensemble" in evil


def test_note_when_scores_are_not_kept(tmp_path):
    store = _store(tmp_path, False)
    out = tmp_path / "report"
    res = CliRunner().invoke(main, ["report", str(store), "-o", str(out), "--simulations", "5"])
    assert res.exit_code == 0, res.output
    text = _page(out / "index.html", "Plain")
    assert "Similarity of scorings and ensembles" in text and "keep_scores = true" in text
    assert "Greedy ensemble" not in text
    assert not list((out / "tables").glob("*ensemble*")) and not list((out / "tables").glob("*similarity*"))


def test_no_ensembles_option_and_frames_only(tmp_path, small_study, kept_report):
    _, store = kept_report
    out = tmp_path / "off"
    res = CliRunner().invoke(main, ["report", str(store), "-o", str(out), "--simulations", "5", "--permutations",
                                    "0", "--no-ensembles"])
    assert res.exit_code == 0, res.output
    text = _page(out / "index.html", "Plain")
    assert "keep_scores = true" in text and "Greedy ensemble" not in text
    runs, ranks = small_study
    runs = runs[runs["base_dataset"] == "Base0"]
    index = build_report(runs, ranks[ranks["dataset"].isin(runs["dataset"])], tmp_path / "frames",
                         n_simulations=5, max_curves_per_dataset=1)
    text = next((index.parent / "datasets").glob("*.html")).read_text(encoding="utf-8")
    assert "keep_scores = true" in text and "Greedy ensemble" not in text


def test_ensemble_section_renders_in_chromium(kept_report, tmp_path):
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        pytest.skip("chromium not installed")
    page = next(p for p in (kept_report[0].parent / "datasets").glob("Plain*.html"))
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={tmp_path}",
           "--enable-logging=stderr", "--v=0", "--dump-dom", page.resolve().as_uri()]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert not [ln for ln in dom.stderr.splitlines() if ":CONSOLE" in ln]
    for text in ("Similarity of scorings and ensembles", "Greedy ensemble", "similarity matrix", "naive ensemble"):
        assert text in dom.stdout


def test_comparisons_thin_large_variants_and_say_so(kept_report):
    from odeval.report.comparison import comparisons_from_store

    _, store = kept_report
    comps = comparisons_from_store(store, {"Plain": "Plain_withoutdupl_norm_05_v01", "Gone": "nope"},
                                   n_random=5, max_values=15 * 50 // 2)
    plain = comps["Plain"]
    assert plain.ensemble.n_scorings == 9  # k = 2, 4, 6 of each of the 3 methods
    assert "one stored k in 2" in plain.note and "9 of 15 scorings" in plain.note
    gone = comps["Gone"]
    assert gone.ensemble is None and gone.similarity is None and "no dataset 'nope'" in gone.note
