"""The study unit streams its k (issue 17): same measures and ranks as scoring all k at once, bounded ranks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from odeval.analysis import per_variant_summary
from odeval.bench import execution
from odeval.bench.runner import Prepared, best_ks, evaluate_unit
from odeval.bench.store import UnitResult
from odeval.detectors import get_detector
from odeval.detectors.scoring import score_ks
from odeval.measures import MEASURES, evaluate_scoring, outlier_ranks
from odeval.neighbors import knn_graph

CAMPOS_12 = ["kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "KDEOS", "LDF", "INFLO", "COF",
             "FastABOD"]


@pytest.fixture(scope="module")
def prepared():
    rng = np.random.default_rng(7)
    X = np.round(rng.normal(size=(90, 4)), 1)
    X[10] = X[11]  # a duplicate: infinite LOF-like scores
    y = np.zeros(90, bool)
    y[[3, 10, 40, 77, 89]] = True
    return Prepared(facts={"name": "t", "n_objects": 90}, labels=y, graph=knn_graph(X, 15))


def _unit(prepared, name, chunk_bytes):
    res = UnitResult(unit_id="u", dataset=prepared.facts, method=name, params="{}", metric="euclidean",
                     status="ok")
    evaluate_unit(res, get_detector(name), prepared, "1..15", MEASURES, True, chunk_bytes=chunk_bytes)
    return res


@pytest.mark.parametrize("name", CAMPOS_12)
def test_streamed_unit_equals_the_all_k_path(prepared, name):
    """Measures, outlier ranks and kept scores are those of score_ks + evaluate_scoring on the whole matrix."""
    y = prepared.labels
    whole = score_ks(get_detector(name), prepared.graph, "1..15")
    res = _unit(prepared, name, chunk_bytes=8 * 90 * 2)  # chunks of 2 k
    assert res.ks == whole.ks and res.skipped == whole.skipped
    for i, s in enumerate(whole.scores):
        full, r = evaluate_scoring(y, s)
        assert res.measures[i] == {m: float(full[m]) for m in MEASURES}
        k, objects, ranks = res.ranks[i]
        assert k == whole.ks[i]
        np.testing.assert_array_equal(objects, np.flatnonzero(y))
        np.testing.assert_array_equal(ranks, outlier_ranks(y, r))
        np.testing.assert_array_equal(res.scores[i][1], s)


def test_rank_rows_are_bounded_to_the_best_k(prepared, monkeypatch):
    full = _unit(prepared, "LOF", None)
    assert len(full.ranks) == len(full.ks)  # 5 outliers × 15 k: under the bound, every k
    monkeypatch.setattr(execution, "MAX_RANK_ROWS", 20)  # where evaluate_unit reads it
    res = _unit(prepared, "LOF", None)
    assert res.measures == full.measures
    kept = {k for k, _, _ in res.ranks}
    assert kept == best_ks(res.ks, res.measures) and len(res.ranks) * 5 <= 5 * len(MEASURES)
    # the same best k as the analysis (smallest k reaching the best value): the report's characterisation
    # finds its rows
    runs = pd.DataFrame([{"dataset": "t", "base_dataset": "t", "method": "LOF", "params": "{}", "k": k, **m}
                         for k, m in zip(res.ks, res.measures, strict=True)])
    summary = per_variant_summary(runs)
    assert set(summary["best_k"].dropna().astype(int)) == kept


def test_best_ks_ignores_nan_and_takes_the_smallest_k():
    ms = [{"a": np.nan, "b": 0.5}, {"a": 0.7, "b": 0.9}, {"a": 0.7, "b": 0.9}, {"a": 0.2, "b": np.nan}]
    assert best_ks([1, 2, 3, 4], ms) == {2}
    assert best_ks([1], [{"a": np.nan}]) == set()
