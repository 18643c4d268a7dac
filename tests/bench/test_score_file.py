"""odeval.bench.score_file / detectors.scoring.score_columns: the library side of `odeval score`."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.bench.score_file import score_file
from odeval.data.score_files import read_score_table
from odeval.detectors import get_detector
from odeval.detectors.scoring import score_columns, score_ks
from odeval.neighbors import knn_graph


def _data():
    X = np.random.default_rng(1).normal(size=(30, 3))
    X[4] = X[5]
    return X


def test_score_columns_match_score_ks():
    X = _data()
    g = knn_graph(X, 6)
    dets = [get_detector("LOF"), get_detector("KDEOS")]
    seen = []
    cols = score_columns(dets, g, "1:6", on_skipped=lambda m, s: seen.append((m, dict(s))))
    assert [k.name for k in cols.keys] == [f"LOF-{k:03d}" for k in range(1, 7)] + \
        [f"KDEOS-{k:03d}" for k in range(2, 7)]
    assert cols.ks == list(range(1, 7))
    expected = np.vstack([score_ks(d, g, "1:6").scores for d in dets])
    np.testing.assert_array_equal(cols.scores, expected)
    assert seen == [("LOF", {}), ("KDEOS", {"1": "KDEOS is defined for k ≥ 2"})]
    assert cols.skipped["KDEOS"] == {"1": "KDEOS is defined for k ≥ 2"}


def test_score_file_writes_what_the_detectors_compute(tmp_path):
    X = _data()
    np.savez(tmp_path / "d.npz", X=X, y=np.arange(30) < 3)
    graphs = []
    res = score_file(tmp_path / "d.npz", ["ODIN", "kNN", "ODIN"], tmp_path / "s.npz", k="2,4", raw=True,
                     on_graph=graphs.append)
    assert res.columns == ["ODIN-002-raw", "ODIN-004-raw", "kNN-002-raw", "kNN-004-raw"]
    assert res.methods == ["ODIN", "kNN", "ODIN"] or res.methods == ["ODIN", "kNN"]
    assert len(graphs) == 1 and res.metric == "euclidean" and res.n_objects == 30
    table = read_score_table(res.path)
    g = knn_graph(X, 4)
    np.testing.assert_array_equal(table.scores[:2], get_detector("ODIN").raw_scores_all_k(g, [2, 4]))
    assert table.labels.sum() == 3


def test_nothing_to_compute(tmp_path):
    np.savez(tmp_path / "d.npz", X=_data())
    with pytest.raises(ValueError, match="nothing to compute"):
        score_file(tmp_path / "d.npz", ["KDEOS"], tmp_path / "s.csv", k="1", load_options={"label": None})
    assert not (tmp_path / "s.csv").exists()
