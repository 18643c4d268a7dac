"""The exact kNN graph by blocks of objects equals the one-process graph, bit for bit."""

import numpy as np
import pytest

from odeval.neighbors import in_degrees_all_k, knn_graph
from odeval.neighbors.blocks import (
    Partition,
    assemble_blocks,
    block_bounds,
    block_exchange,
    block_halo,
    exchange_volume,
    in_edges,
    knn_block,
    knn_rows,
    spatial_partition,
)


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


@pytest.mark.parametrize("metric, p", [("euclidean", None), ("cityblock", None), ("chebyshev", None),
                                       ("minkowski", 3.0), ("seuclidean", None)])
def test_blocks_of_any_object_set_assemble_to_the_exact_graph(metric, p):
    """Objects keep their numbers in any partition: spatial blocks and interleaved blocks give the graph bit for
    bit (ties among reordered objects are put back in object-number order)."""
    X = _data()
    X = X[np.random.default_rng(0).permutation(len(X))]  # random order: duplicates and ties scattered
    ref = knn_graph(X, 18, metric=metric, p=p)
    for part in (spatial_partition(X, 4), Partition.of([np.arange(i, len(X), 3) for i in range(3)])):
        blocks = [knn_rows(X, m, 18, metric=metric, p=p) for m in part.members]
        got = assemble_blocks(blocks)
        assert np.array_equal(got.distances, ref.distances)
        assert np.array_equal(got.indices, ref.indices)
        assert np.array_equal(got.neighborhood_sizes(), ref.neighborhood_sizes())
        for blk, m in zip(blocks, part.members, strict=True):
            assert np.array_equal(blk.object_ids, m) and blk.holds(m).all()
            assert np.array_equal(blk.local(m), np.arange(m.size))


def test_spatial_partition_is_deterministic_balanced_and_covers_every_object():
    X = _data(101)
    a, b = spatial_partition(X, 6), spatial_partition(X.copy(), 6)
    assert all(np.array_equal(x, y) for x, y in zip(a.members, b.members, strict=True))
    sizes = [m.size for m in a.members]
    assert sum(sizes) == 101 and max(sizes) - min(sizes) <= 2
    assert np.array_equal(np.sort(np.concatenate(a.members)), np.arange(101))
    assert not a.contiguous and Partition.of(block_bounds(101, 6)).contiguous
    assert spatial_partition(X, 500).n_blocks == 101
    with pytest.raises(ValueError, match="exactly once"):
        Partition.of([np.arange(0, 5), np.arange(4, 10)])
    with pytest.raises(ValueError, match="ascending"):
        knn_rows(X, [5, 3], 4)


def test_spatial_blocks_shrink_the_halo_of_data_in_random_order():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 3))
    ranges = [knn_block(X, a, b, 15) for a, b in block_bounds(len(X), 4)]
    part = spatial_partition(X, 4)
    spatial = [knn_rows(X, m, 15) for m in part.members]
    by_index, by_space = exchange_volume(ranges), exchange_volume(spatial, part)
    assert exchange_volume([block_exchange(b, part) for b in spatial], part) == by_space
    assert by_index["edges"] == by_space["edges"]
    assert by_index["halo_fraction"] > 0.8 > 0.3 > by_space["halo_fraction"]
    assert by_space["cross_edges"] < by_index["cross_edges"] / 3


def test_halo_and_in_edges_of_spatial_blocks():
    X = _data()
    part = spatial_partition(X, 3)
    blocks = [knn_rows(X, m, 12) for m in part.members]
    g = knn_graph(X, 12)
    deg = np.zeros((12, len(X)), dtype=np.int64)
    parts = [in_edges(blk, part) for blk in blocks]
    for blk in blocks:
        h = block_halo(blk, part)
        valid = blk.indices >= 0
        ids = np.concatenate([blk.object_ids, h.extra])
        assert np.array_equal(ids[h.local[valid]], blk.indices[valid])
        assert np.array_equal(h.owner, part.owner[h.extra])
    for b in range(part.n_blocks):
        for dst, _, km in (p[b] for p in parts):
            assert (part.owner[dst] == b).all()
            for k in range(1, 13):
                np.add.at(deg[k - 1], dst[km <= k], 1)
    assert np.array_equal(deg, in_degrees_all_k(g, np.arange(1, 13)))
