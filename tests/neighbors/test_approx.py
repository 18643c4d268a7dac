"""The approximate backend (NN-descent candidates + exact distances); needs the optional pynndescent."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.neighbors import knn_graph

pytest.importorskip("pynndescent")


@pytest.mark.slow  # pynndescent's numba compilation takes ~40 s on first use
def test_approx_backend_recall_exact_distances_and_seed():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 6))
    X[100:106] = X[5]
    exact = knn_graph(X, 15)
    g = knn_graph(X, 15, backend="approx", seed=3)
    assert g.backend == "approx" and 0.95 <= g.approx_recall <= 1.0
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
    with pytest.raises(ValueError, match="does not support metric"):
        knn_graph(X, 5, backend="approx", metric="jensenshannon")
