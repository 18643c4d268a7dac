"""Streamed all-k scoring (``stream_ks``, chunks of k) gives exactly the scores of one all-k call (issue 17)."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.detectors import get_detector
from odeval.detectors.base import Options
from odeval.detectors.scoring import k_chunk, score_ks, stream_ks
from odeval.measures import evaluate_scoring
from odeval.neighbors import knn_graph

CAMPOS_12 = ["kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "KDEOS", "LDF", "INFLO", "COF",
             "FastABOD"]


def _configs():
    for name in CAMPOS_12:
        cls = type(get_detector(name))
        for param, c in cls._parameter_constraints.items():
            if isinstance(c, Options):
                for value in c.values:
                    yield name, {param: value}
                break
        else:
            yield name, {}


@pytest.fixture(scope="module")
def graph():
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(70, 3)), 1)
    X[5] = X[6] = X[7]  # duplicates: ties, zero distances, ±inf LOF-like scores
    return knn_graph(X, 12)


@pytest.mark.parametrize(("name", "params"), list(_configs()), ids=lambda v: str(v))
def test_streamed_chunks_equal_one_call(graph, name, params):
    det = get_detector(name, **params)
    whole = score_ks(det, graph, "1..12")
    n = graph.n_objects
    y = np.zeros(n, bool)
    y[[0, 5, 33]] = True
    for rows in (1, 5):
        plan, it = stream_ks(det, graph, "1..12", chunk_bytes=8 * n * rows)
        got = list(it)
        assert [k for k, _ in got] == whole.ks
        assert plan.skipped == whole.skipped
        for (k, s), row in zip(got, whole.scores, strict=True):
            np.testing.assert_array_equal(s, row, err_msg=f"{name} {params} k={k} chunk={rows}")
            assert evaluate_scoring(y, s)[0] == evaluate_scoring(y, row)[0]


def test_k_chunk_bounds():
    assert k_chunk(10**6, 100) == 100  # default 1 GiB: 134 rows of 10⁶
    assert k_chunk(10**7, 100) == 13
    assert k_chunk(10**6, 100, 8 * 10**6 * 7) == 7
    assert k_chunk(10**9, 100, 1) == 1
    assert k_chunk(10, 5, None) == 5
    with pytest.raises(ValueError, match="chunk_bytes"):
        k_chunk(10, 5, 0)
