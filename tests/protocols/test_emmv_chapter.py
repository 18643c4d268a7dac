"""The EM/MV benchmark protocol of Goix (2016) (odeval.protocols.emmv_chapter): the chapter split, one table cell."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from odeval.labelfree import EMMVWarning
from odeval.protocols.emmv_chapter import chapter_split, continuous_features, evaluate_split


def test_chapter_split():
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=(300, 3)), rng.integers(0, 3, 300)]  # last column: 3 distinct values
    y = np.r_[np.zeros(200, bool), np.ones(100, bool)]
    assert continuous_features(X).tolist() == [0, 1, 2]
    nov = chapter_split(X, y, setting="novelty", seed=1)
    assert nov.n_outliers_dropped == 80 and nov.features.tolist() == [0, 1, 2]
    assert nov.X_test.shape[0] == 110 and nov.y_test.sum() <= 20 and nov.X_train.shape[0] <= 110
    assert nov.X_eval.shape[0] == int((~nov.y_test).sum())
    uns = chapter_split(X, y, setting="unsupervised", seed=1)
    assert uns.X_eval is uns.X_test
    same = chapter_split(X, y, setting="unsupervised", split=False)
    assert same.X_train.shape[0] == same.X_eval.shape[0] == 220
    with pytest.raises(ValueError, match="needs a train/test split"):
        chapter_split(X, y, setting="novelty", split=False)
    with pytest.raises(ValueError, match="no labels"):
        chapter_split(X, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EMMVWarning)
        res, lab = evaluate_split("iforest", nov, n_generated=2000)
    assert 0 <= lab["roc_auc"] <= 1 and np.isfinite(res.em)


@pytest.mark.slow
def test_chapter_table_piece_pima_novelty(shared_datasets):
    """One cell of the chapter's novelty table (pima, iForest: EM 5.0e-07, MV 1.2e04): same order of magnitude."""
    from odeval.data import load_dataset

    path = shared_datasets / "odds" / "pima.mat"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    ds = load_dataset(path)
    sp = chapter_split(ds.numeric_matrix(), ds.y, setting="novelty", seed=0)
    res, lab = evaluate_split("iforest", sp, seed=0, n_generated=50_000)
    assert 5.0e-07 / 3 < res.em < 5.0e-07 * 3
    assert 1.2e04 / 2 < res.mv < 1.2e04 * 2
    assert 0.65 < lab["roc_auc"] < 0.85


def _chapter_benchmark():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "emmv_chapter.py"
    spec = importlib.util.spec_from_file_location("emmv_chapter_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: EM / MV orders that the authors' box and grids (box="author", issue 26) change against the earlier box, with
#: the reason (docs/emmv.md): (data set, setting, criterion) -> (order before, order now), best first.
ORDER_CHANGES: dict[tuple[str, str, str], tuple[str, str]] = {}


def test_chapter_orders_under_the_authors_box():
    """The order of iForest, OCSVM and LOF by EM and by MV, per data set and setting of the chapter's tables, is
    the same with box="author" (benchmarks/emmv_chapter_author.jsonl, m = 10 draws) as with the earlier box
    (benchmarks/emmv_chapter.jsonl, its first 10 draws where sub-sampled), except ORDER_CHANGES. annthyroid is
    left out: the chapter sub-samples it (CHAPTER_MAX_DIM), which the earlier run did not."""
    bench = _chapter_benchmark()
    author = bench.load_cache(bench.ROOT / "benchmarks" / "emmv_chapter_author.jsonl")
    earlier = bench.load_cache(bench.ROOT / "benchmarks" / "emmv_chapter.jsonl")
    now, before = bench.detector_orders(author), bench.detector_orders(earlier, author)
    compared = [k for k in now if k[0] != "annthyroid" and k in before]
    assert len(compared) >= 24
    changed = {k: (before[k], now[k]) for k in compared if before[k] != now[k]}
    assert changed == ORDER_CHANGES


def test_chapter_data_estimable_in_90_percent_of_draws_by_default():
    """Issue 26: with the authors' box and grids and the default sampling="auto", EM and MV are estimable in
    ≥ 90 % of the draws on every data set of the chapter's tables that we have (the recorded run of
    ``benchmarks/emmv_chapter.py --estimability``: cells whose uniform run misses a draw rerun with "auto" in
    benchmarks/emmv_chapter_auto.jsonl; the others are "auto"'s cells bit for bit). The uniform points alone
    miss EM in 6–7 of 10 draws on shuttle."""
    bench = _chapter_benchmark()
    uniform = bench.load_cache(bench.ROOT / "benchmarks" / "emmv_chapter_author.jsonl")
    auto = bench.load_cache(bench.ROOT / "benchmarks" / "emmv_chapter_auto.jsonl")
    assert any(r["em_failed"] > 3 for r in uniform.values())
    for key, r in uniform.items():
        if r["em_failed"] or r["mv_failed"]:
            assert key in auto and auto[key]["sampling"] == "auto", key
    cells, per_set = bench.estimability(auto, uniform, 10)
    assert len(per_set) == len(bench.DATASETS)
    for line in cells:
        if "not run" in line:
            continue
        em, mv = (cell.strip().split(" ")[0] for cell in line.split("|")[4:6])
        for ok in (em, mv):
            done, m = map(int, ok.split("/"))
            assert done >= 0.9 * m, line


#: EM / MV orders at m = 50 under today's defaults (box="author", sampling="auto") that differ from the earlier
#: box's m = 50 run: pendigits' iForest and OCSVM, whose EM and MV differ by less than one standard error of
#: either mean (novelty EM 2.53e-04 ± 1.3e-05 against 2.47e-04 ± 1.0e-05; docs/emmv.md).
ORDER_CHANGES_50: dict[tuple[str, str, str], tuple[str, str]] = {
    ("pendigits", setting, crit): ("lof>ocsvm>iforest", "lof>iforest>ocsvm")
    for setting in ("novelty", "unsupervised") for crit in ("em", "mv")
}


def test_chapter_orders_at_50_draws_under_the_defaults():
    """The chapter's tables rerun with today's defaults and m = 50 (benchmarks/emmv_chapter_default.jsonl): every
    m = 50 cell's first 10 draws reproduce its m = 10 run bit for bit (the draw plan is a prefix), and the orders of
    iForest, OCSVM and LOF by EM and MV are the earlier box's m = 50 orders except ORDER_CHANGES_50 (near-ties).
    annthyroid (sub-sampled as the chapter since issue 26) and shuttle (sampling="auto" redoes its missing draws
    with nested points, which changes EM by orders of magnitude) are left out; docs/emmv.md states both."""
    bench = _chapter_benchmark()
    path = bench.ROOT / "benchmarks" / "emmv_chapter_default.jsonl"
    same, total = bench.prefix_check(path)
    assert total >= 24 and same == total
    default = bench.load_cache(path)
    earlier = bench.load_cache(bench.ROOT / "benchmarks" / "emmv_chapter.jsonl")
    now, before = bench.detector_orders(default), bench.detector_orders(earlier, default)
    compared = [k for k in now if k[0] not in ("annthyroid", "shuttle") and k in before]
    assert len(compared) >= 24
    changed = {k: (before[k], now[k]) for k in compared if before[k] != now[k]}
    assert changed == ORDER_CHANGES_50


def test_annthyroid_sub_sampled_orders_are_the_chapters():
    """annthyroid sub-sampled as the chapter did (50 draws of 5 of its 6 attributes, the authors' box; issue 26):
    under today's defaults at m = 50 every pair of detectors is ordered by EM and by MV as in the chapter's tables,
    in both settings (pairs the chapter prints as equal, novelty EM OCSVM = LOF = 6.3e-05, are not compared), and
    every EM / MV is within a factor of 1.6 of the published value (docs/emmv.md, *How to read the tables*)."""
    from itertools import combinations

    bench = _chapter_benchmark()
    default = bench.load_cache(bench.ROOT / "benchmarks" / "emmv_chapter_default.jsonl")
    compared = 0
    for setting in bench.SETTINGS:
        cells = {d: default[("annthyroid", setting, d)] for d in bench.DETECTORS}
        assert all(r["subsampled"] and r["draws"] == 50 and r["em_failed"] == r["mv_failed"] == 0
                   for r in cells.values())
        published = bench.PUBLISHED[setting]["annthyroid"]
        for col, crit in ((2, "em"), (3, "mv")):
            for d in bench.DETECTORS:
                assert 1 / 1.6 <= cells[d][crit] / published[d][col] <= 1.6, (setting, crit, d)
            for a, b in combinations(bench.DETECTORS, 2):
                pa, pb = published[a][col], published[b][col]
                if pa != pb:
                    compared += 1
                    assert np.sign(cells[a][crit] - cells[b][crit]) == np.sign(pa - pb), (setting, crit, a, b)
    assert compared == 11


def test_docs_tables_render_the_default_cache():
    """docs/emmv.md's generated tables are `benchmarks/emmv_chapter.py --write-docs` of today's defaults
    (benchmarks/emmv_chapter_default.jsonl), so the page and the recorded run cannot drift apart."""
    bench = _chapter_benchmark()
    path = bench.ROOT / "benchmarks" / "emmv_chapter_default.jsonl"
    text = (bench.ROOT / "docs" / "emmv.md").read_text()
    section = text[text.index(bench.BEGIN):text.index(bench.END) + len(bench.END)]
    assert section == bench.render(bench.load_cache(path), 50, 100_000, bench.prefix_check(path))
