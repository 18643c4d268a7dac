"""The exact kNN graph by blocks of objects equals the one-process graph, bit for bit."""

import numpy as np
import pytest

from odeval.neighbors import in_degrees_all_k, knn_graph
from odeval.neighbors.blocks import assemble_blocks, block_bounds, block_halo, in_edges, knn_block


def _data(n=240, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, 3)).astype(float)  # a grid: heavy ties
    X[n // 2:] += rng.normal(scale=0.3, size=(n - n // 2, 3))
    X[10:25] = X[0]  # duplicates
    return X


@pytest.mark.parametrize("metric, p", [("euclidean", None), ("cityblock", None), ("chebyshev", None),
                                       ("minkowski", 3.0)])
@pytest.mark.parametrize("n_blocks", [1, 2, 5])
def test_blocks_assemble_to_the_exact_graph(metric, p, n_blocks):
    X = _data()
    ref = knn_graph(X, 18, metric=metric, p=p)
    blocks = [knn_block(X, a, b, 18, metric=metric, p=p) for a, b in block_bounds(len(X), n_blocks)]
    got = assemble_blocks(blocks[::-1])
    assert np.array_equal(got.distances, ref.distances)
    assert np.array_equal(got.indices, ref.indices)
    assert np.array_equal(got.neighborhood_sizes(), ref.neighborhood_sizes())


def test_block_bounds_cover_and_validate():
    assert block_bounds(10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert block_bounds(3, 8) == [(0, 1), (1, 2), (2, 3)]
    with pytest.raises(ValueError, match="positive integer"):
        block_bounds(10, 0)
    X = _data(40)
    with pytest.raises(ValueError, match="non-empty range"):
        knn_block(X, 5, 5, 3)
    with pytest.raises(ValueError, match="exactly once"):
        assemble_blocks([knn_block(X, 0, 20, 3)])


def test_block_accepts_k_beyond_its_own_size():
    X = _data(60)
    b = knn_block(X, 0, 4, 30)  # 4 rows, k up to 30 of the 60 objects
    assert b.neighborhood_size(30).shape == (4,)
    assert np.array_equal(b.kdist(30), knn_graph(X, 30).kdist(30)[:4])


def test_halo_and_in_edges():
    X = _data()
    bounds = block_bounds(len(X), 3)
    blocks = [knn_block(X, a, b, 12) for a, b in bounds]
    g = knn_graph(X, 12)
    for blk in blocks:
        h = block_halo(blk, bounds)
        valid = blk.indices >= 0
        ids = np.concatenate([np.arange(blk.start, blk.stop), h.extra])
        assert np.array_equal(ids[h.local[valid]], blk.indices[valid])
        assert not np.isin(h.extra, np.arange(blk.start, blk.stop)).any()
        for (a, b), sl in zip(bounds, h.owner_slices, strict=True):
            assert ((h.extra[sl] >= a) & (h.extra[sl] < b)).all()
    # in-edges routed to their owners give the in-degrees of the whole graph, for every k
    parts = [in_edges(blk, bounds) for blk in blocks]
    deg = np.zeros((12, len(X)), dtype=np.int64)
    for b in range(len(bounds)):
        for dst, _, km in (p[b] for p in parts):
            assert ((dst >= bounds[b][0]) & (dst < bounds[b][1])).all()
            for k in range(1, 13):
                np.add.at(deg[k - 1], dst[km <= k], 1)
    assert np.array_equal(deg, in_degrees_all_k(g, np.arange(1, 13)))
