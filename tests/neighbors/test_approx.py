"""The approximate backend (faiss HNSW candidates + exact distances); needs the optional faiss-cpu."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from odeval.neighbors import knn_graph

pytest.importorskip("faiss")


def test_approx_backend_recall_exact_distances_and_seed():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 6))
    X[100:106] = X[5]
    exact = knn_graph(X, 15)
    g = knn_graph(X, 15, backend="approx", seed=3)
    assert g.backend == "approx" and g.search == "hnsw" and 0.95 <= g.approx_recall <= 1.0
    assert g.distances.shape[1] >= 15 and np.all(np.isfinite(g.distances[:, :15]))
    # every listed distance is the exact one, rows sorted by (distance, index), self excluded
    p = np.repeat(np.arange(1500), 15)
    np.testing.assert_array_equal(g.distance_between(p, g.indices[:, :15].ravel()), g.distances[:, :15].ravel())
    assert np.all(np.diff(g.distances[:, :15], axis=1) >= 0)
    assert not np.any(g.indices[:, :15] == np.arange(1500)[:, None])
    agree = np.mean([set(g.indices[i, :15]) == set(exact.indices[i, :15]) for i in range(1500)])
    assert agree > 0.9
    again = knn_graph(X, 15, backend="approx", seed=3)
    np.testing.assert_array_equal(again.indices, g.indices)
    np.testing.assert_array_equal(again.distances, g.distances)
    with pytest.raises(ValueError, match="does not support metric"):
        knn_graph(X, 5, backend="approx", metric="jensenshannon")


@pytest.mark.parametrize("metric, kw", [("cityblock", {}), ("chebyshev", {}), ("minkowski", {"p": 3.0}),
                                        ("cosine", {}), ("correlation", {}), ("canberra", {}),
                                        ("braycurtis", {}), ("seuclidean", {}), ("mahalanobis", {})])
def test_approx_backend_every_supported_metric(metric, kw):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 5)) + 3.0
    # seuclidean / mahalanobis without V / VI: both sides take them from the whole data (Metric.fit_to)
    g = knn_graph(X, 10, metric=metric, backend="approx", **kw)
    assert g.approx_recall >= 0.9, (metric, g.approx_recall)


_SCRIPT = """
import hashlib, numpy as np
from odeval.neighbors import knn_graph
X = np.random.default_rng(5).normal(size=(3000, 10))
g = knn_graph(X, 20, backend="approx", seed=11)
print(hashlib.sha256(g.indices.tobytes() + g.distances.tobytes() + g.counts.tobytes()).hexdigest(), g.approx_recall)
"""


def test_approx_backend_bit_identical_across_processes_and_thread_counts():
    # the index is built on one thread; the search runs on OMP_NUM_THREADS threads and must not depend on them
    outs = [subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True,
                           env={**os.environ, "OMP_NUM_THREADS": threads}).stdout
            for threads in ("1", "2", "2")]
    assert outs[0] == outs[1] == outs[2] and outs[0].strip()
