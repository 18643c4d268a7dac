"""The exact kNN graph by blocks of query objects: pure per-block functions for a partitioned (e.g. Dask) run.

A block is the contiguous range of objects ``start ≤ p < stop``; its rows are computed against *all* objects
(the data matrix is whole on every worker), with the arithmetic and the tie rule of
:func:`odeval.neighbors.knn_graph` (brute force), so the rows of all blocks together are the one-process exact
graph, bit for bit (:func:`assemble_blocks`). What a scorer needs from *other* blocks is exchanged as
per-object summaries: :func:`block_halo` names the objects outside the block that its rows reference (the
"halo") and remaps the rows into a local index space (block objects first, then the halo objects);
:func:`in_edges` routes the edges q → p of the block's rows to the block owning p (reverse neighbours, for
ODIN and INFLO). See docs/scaling.md, "Beyond one machine".
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from odeval._validation import check_data_matrix, check_k
from odeval.neighbors import _kernels
from odeval.neighbors._metrics import resolve_metric
from odeval.neighbors.graph import _MAX_ABS_VALUE, KNNGraph, _assemble, _block_rows, _brute_parts, _stack

__all__ = ["GraphBlock", "block_bounds", "knn_block", "assemble_blocks", "block_halo", "in_edges",
           "membership_k"]


@dataclass(eq=False)
class GraphBlock(KNNGraph):
    """The rows ``start ≤ p < stop`` of the exact kNN graph: a :class:`KNNGraph` whose row r is object
    ``start + r`` and whose ``indices`` are *global* object numbers (rows of ``X``, the whole data matrix).

    ``n_objects`` is the number of rows (B); ``n_total`` the number of objects of the data set (N).
    """

    start: int = 0
    n_total: int = 0

    @property
    def stop(self) -> int:
        return self.start + self.n_objects

    def _check_k(self, k: int) -> int:
        k = check_k(k, self.n_total, name="k")
        if k > self.k_max:
            raise ValueError(f"k={k} exceeds the graph's k_max={self.k_max}")
        return k


def block_bounds(n: int, n_blocks: int) -> list[tuple[int, int]]:
    """``n_blocks`` contiguous ranges (start, stop) covering 0..n−1, sizes differing by at most one."""
    if isinstance(n_blocks, bool) or not isinstance(n_blocks, int | np.integer) or n_blocks < 1:
        raise ValueError(f"the number of blocks must be a positive integer, got {n_blocks!r}")
    n_blocks = int(min(n_blocks, n))
    cuts = np.linspace(0, n, n_blocks + 1).round().astype(np.int64)
    return [(int(a), int(b)) for a, b in itertools.pairwise(cuts)]


def knn_block(X: Any, start: int, stop: int, k_max: int, metric: str = "euclidean", *, p: float | None = None,
              metric_params: dict[str, Any] | None = None) -> GraphBlock:
    """Exact kNN rows (+ ties at the k_max-distance) of the objects ``start ≤ p < stop`` among all of ``X``.

    Same semantics, arithmetic and tie rule as :func:`odeval.neighbors.knn_graph` (brute force): row r equals
    row ``start + r`` of ``knn_graph(X, k_max, metric)`` up to the padding width.
    """
    X = check_data_matrix(X, min_rows=2)
    n = X.shape[0]
    k_max = check_k(k_max, n, name="k_max")
    if not (0 <= start < stop <= n):
        raise ValueError(f"block rows {start}..{stop} are not a non-empty range within 0..{n}")
    spec = resolve_metric(metric, p=p, metric_params=metric_params)
    if spec.name == "euclidean" and float(np.abs(X).max()) > _MAX_ABS_VALUE:
        raise ValueError("X holds values whose squared Euclidean distances would overflow float64 — rescale the data")
    parts = _brute_parts(X, k_max, spec, start, stop, _block_rows(n, None))
    parts = [(rows - start, keys, idx, cnt) for rows, keys, idx, cnt in parts]
    keys, idx = _stack(parts, stop - start)
    return GraphBlock(distances=spec.key_to_distance(keys), indices=idx, k_max=k_max, metric=spec.label, X=X,
                      keys=keys, metric_spec=spec, backend="exact", search="brute",
                      search_reason=f"exact brute force, block {start}..{stop - 1}", start=start, n_total=n)


def assemble_blocks(blocks: list[GraphBlock]) -> KNNGraph:
    """The whole graph from the blocks of :func:`knn_block` (in any order; together they must cover 0..N−1)."""
    if not blocks:
        raise ValueError("no blocks to assemble")
    b0 = blocks[0]
    n = b0.n_total
    covered = np.zeros(n, dtype=np.int64)
    parts = []
    for b in blocks:
        rows = np.arange(b.start, b.stop, dtype=np.int64)
        covered[rows] += 1
        parts.append((rows, b.keys, b.indices, b.neighborhood_sizes()[:, b.k_max - 1]))
    if not (covered == 1).all():
        raise ValueError("the blocks do not cover every object exactly once")
    g = _assemble(b0.X, b0.k_max, b0.metric_spec, parts, "exact")
    g.search, g.search_reason = "brute", f"exact brute force in {len(blocks)} blocks"
    return g


@dataclass(frozen=True)
class Halo:
    """The objects outside a block referenced by its rows, and the rows in the local index space.

    ``extra``: the halo's global object numbers, ascending. ``local``: the block's ``indices`` with object
    ``start + r`` ↦ r and ``extra[h]`` ↦ B + h (padding stays −1). ``owner_slices[b]``: the slice of ``extra``
    owned by block b of ``bounds`` (contiguous, because blocks are contiguous ranges and ``extra`` is sorted).
    """

    extra: np.ndarray
    local: np.ndarray
    owner_slices: list[slice]


def block_halo(block: GraphBlock, bounds: list[tuple[int, int]]) -> Halo:
    """The halo of ``block`` (every valid entry of its rows, all k ≤ k_max) and its local rows."""
    idx = block.indices
    valid = idx >= 0
    inside = valid & (idx >= block.start) & (idx < block.stop)
    extra = np.unique(idx[valid & ~inside])
    local = np.full(idx.shape, -1, dtype=np.int64)
    local[inside] = idx[inside] - block.start
    out = valid & ~inside
    local[out] = block.n_objects + np.searchsorted(extra, idx[out])
    starts = np.array([a for a, _ in bounds], dtype=np.int64)
    stops = np.array([b for _, b in bounds], dtype=np.int64)
    lo = np.searchsorted(extra, starts)
    hi = np.searchsorted(extra, stops)
    return Halo(extra=extra, local=local, owner_slices=[slice(int(a), int(b)) for a, b in zip(lo, hi, strict=True)])


def membership_k(block: KNNGraph) -> np.ndarray:
    """Smallest k at which each row entry belongs to the row's tie-extended neighbourhood N_k (k_max + 1 for
    padding), shape of ``block.indices``."""
    starts = _kernels.tie_group_starts(block.keys)
    kmin = starts + 1
    kmin[starts < 0] = block.k_max + 1
    return kmin


def in_edges(block: GraphBlock, bounds: list[tuple[int, int]], positions: bool = False) -> list[tuple]:
    """The edges q → p (p ∈ N_k(q), q in this block) grouped by the block owning p.

    Returns, for every block b of ``bounds``, ``(dst, src, kmin)``: int64 arrays of the global p and q and the
    smallest k with p ∈ N_k(q), sorted by (dst, src); with ``positions`` also p's column in q's row and the
    distance. 3 · 8 (5 · 8) bytes per edge; all blocks together send each graph entry once (N · W edges).
    """
    kmin = membership_k(block)
    valid = kmin <= block.k_max
    rows = np.broadcast_to(np.arange(block.start, block.stop, dtype=np.int64)[:, None], kmin.shape)
    cols = np.broadcast_to(np.arange(kmin.shape[1], dtype=np.int64)[None, :], kmin.shape)
    parts = [block.indices[valid], rows[valid], kmin[valid]]
    if positions:
        parts += [cols[valid], block.distances[valid]]
    order = np.lexsort((parts[1], parts[0]))
    parts = [a[order] for a in parts]
    cuts = np.searchsorted(parts[0], [a for a, _ in bounds] + [bounds[-1][1]])
    return [tuple(a[cuts[i]:cuts[i + 1]] for a in parts) for i in range(len(bounds))]
