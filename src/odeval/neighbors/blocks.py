"""The exact kNN graph by blocks of query objects: pure per-block functions for a partitioned (e.g. Dask) run.

A block is a set of objects: the contiguous range ``start ≤ p < stop`` (:func:`knn_block`, :func:`block_bounds`)
or any ascending set of object numbers (:func:`knn_rows`), e.g. the cells of a k-d split of the data
(:func:`spatial_partition`); a :class:`Partition` says which block holds each object. A block's rows are
computed against *all* objects (the data matrix is whole on every worker), with the arithmetic and the tie rule of
:func:`odeval.neighbors.knn_graph` (brute force), and objects keep their numbers (rows of ``X``) whatever the
partition, so the rows of all blocks together are the one-process exact graph, bit for bit
(:func:`assemble_blocks`). What a scorer needs from *other* blocks is exchanged as per-object summaries:
:func:`block_halo` names the objects outside the block that its rows reference (the "halo") and remaps the rows
into a local index space (block objects first, then the halo objects); :func:`in_edges` routes the edges q → p
of the block's rows to the block owning p (reverse neighbours, for ODIN and INFLO). Spatial blocks keep the halo
to the objects near a block's boundary; index ranges of data in random order reference almost every object
(:func:`exchange_volume` counts both). See docs/scaling.md, "Beyond one machine".
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from odeval._validation import check_data_matrix, check_k
from odeval.neighbors import _kernels
from odeval.neighbors._metrics import resolve_metric
from odeval.neighbors.graph import (
    _MAX_ABS_VALUE,
    _NUMBA_METRICS,
    KNNGraph,
    _assemble,
    _block_rows,
    _brute_parts,
    _select_rows,
    _stack,
)

__all__ = ["GraphBlock", "Partition", "block_bounds", "knn_block", "knn_rows", "assemble_blocks", "block_halo",
           "in_edges", "membership_k", "spatial_partition", "block_exchange", "exchange_volume"]


@dataclass(eq=False)
class GraphBlock(KNNGraph):
    """Rows of the exact kNN graph: a :class:`KNNGraph` whose row r is object ``object_ids[r]`` and whose
    ``indices`` are *global* object numbers (rows of ``X``, the whole data matrix).

    A block of a range holds objects ``start + r`` (``rows`` None); a block of any set holds the ascending object
    numbers ``rows`` (``start`` = −1). ``n_objects`` is the number of rows (B); ``n_total`` the number of objects
    of the data set (N).
    """

    start: int = 0
    n_total: int = 0
    rows: np.ndarray | None = None

    @property
    def stop(self) -> int:
        if self.rows is not None:
            raise ValueError("a block of an object set (not a range) has no stop: use object_ids")
        return self.start + self.n_objects

    @property
    def object_ids(self) -> np.ndarray:
        """The global numbers of the block's objects, ascending (row r is object ``object_ids[r]``)."""
        if self.rows is None:
            return np.arange(self.start, self.start + self.n_objects, dtype=np.int64)
        return self.rows

    def holds(self, ids: np.ndarray) -> np.ndarray:
        """Whether each object of ``ids`` (global numbers) is one of the block's objects."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.rows is None:
            return (ids >= self.start) & (ids < self.start + self.n_objects)
        pos = np.minimum(np.searchsorted(self.rows, ids), self.n_objects - 1)
        return self.rows[pos] == ids

    def local(self, ids: np.ndarray) -> np.ndarray:
        """The rows of the block's objects ``ids`` (global numbers, all held by the block)."""
        ids = np.asarray(ids, dtype=np.int64)
        return ids - self.start if self.rows is None else np.searchsorted(self.rows, ids)

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


@dataclass(frozen=True, eq=False)
class Partition:
    """Which block holds each object: ``members[b]`` are the ascending global numbers of block b's objects
    (together every object 0..N−1 exactly once).

    ``contiguous``: every block is a range and the blocks follow each other in object order (the index-range
    partition of :func:`block_bounds`); then a value folded block after block is folded in object order.
    """

    members: tuple[np.ndarray, ...]
    n_objects: int

    @classmethod
    def of(cls, blocks: Any, n_objects: int | None = None) -> Partition:
        """A partition as given, or from (start, stop) bounds, from arrays of members, or from
        :class:`GraphBlock` s."""
        if isinstance(blocks, Partition):
            return blocks
        members = []
        for b in blocks:
            if isinstance(b, GraphBlock):
                members.append(b.object_ids)
            elif isinstance(b, tuple) and len(b) == 2:
                members.append(np.arange(b[0], b[1], dtype=np.int64))
            else:
                members.append(np.asarray(b, dtype=np.int64))
        n = sum(m.size for m in members) if n_objects is None else n_objects
        seen = np.zeros(n, dtype=np.int64)
        for m in members:
            if m.size == 0 or (m.size > 1 and (np.diff(m) <= 0).any()) or m[0] < 0 or m[-1] >= n:
                raise ValueError("every block must hold a non-empty ascending set of object numbers within 0..N-1")
            seen[m] += 1
        if not (seen == 1).all():
            raise ValueError("the blocks do not cover every object exactly once")
        return cls(members=tuple(members), n_objects=int(n))

    @property
    def n_blocks(self) -> int:
        return len(self.members)

    @cached_property
    def contiguous(self) -> bool:
        nxt = 0
        for m in self.members:
            if m[0] != nxt or m[-1] != nxt + m.size - 1:
                return False
            nxt += m.size
        return True

    @cached_property
    def owner(self) -> np.ndarray:
        """(N,) the block holding each object."""
        out = np.empty(self.n_objects, dtype=np.int64)
        for b, m in enumerate(self.members):
            out[m] = b
        return out

    @cached_property
    def position(self) -> np.ndarray:
        """(N,) each object's row in its block."""
        out = np.empty(self.n_objects, dtype=np.int64)
        for m in self.members:
            out[m] = np.arange(m.size)
        return out

    def bounds(self) -> list[tuple[int, int]]:
        """The (start, stop) of every block of a contiguous partition."""
        if not self.contiguous:
            raise ValueError("the blocks are not ranges of object numbers")
        return [(int(m[0]), int(m[-1]) + 1) for m in self.members]


def spatial_partition(X: Any, n_blocks: int) -> Partition:
    """``n_blocks`` blocks of objects that are near each other: a k-d split of the data.

    The objects are split recursively at the quantile that gives each side its share of the blocks, along the
    attribute of largest range (the first on ties), ordering by (value, object number) — deterministic, no
    randomness. Block sizes differ by at most about one object per level. The numbers of the objects are kept
    (each block lists its objects in ascending order): only which block holds an object changes, so every
    result is the one of the index-range blocks, bit for bit. For the exchanges it makes a block's halo the
    objects near its boundary instead of nearly every object (data in random order; docs/scaling.md).
    """
    X = check_data_matrix(X, min_rows=1)
    n = X.shape[0]
    if isinstance(n_blocks, bool) or not isinstance(n_blocks, int | np.integer) or n_blocks < 1:
        raise ValueError(f"the number of blocks must be a positive integer, got {n_blocks!r}")
    members: list[np.ndarray] = []

    def split(ids: np.ndarray, m: int) -> None:
        if m == 1:
            members.append(np.sort(ids))
            return
        sub = X[ids]
        dim = int(np.argmax(sub.max(axis=0) - sub.min(axis=0)))
        ordered = ids[np.lexsort((ids, sub[:, dim]))]
        left = m // 2
        cut = round(ids.size * left / m)
        split(ordered[:cut], left)
        split(ordered[cut:], m - left)

    split(np.arange(n, dtype=np.int64), int(min(n_blocks, n)))
    return Partition(members=tuple(members), n_objects=n)


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
    spec = resolve_metric(metric, p=p, metric_params=metric_params).fit_to(X)
    if spec.name == "euclidean" and float(np.abs(X).max()) > _MAX_ABS_VALUE:
        raise ValueError("X holds values whose squared Euclidean distances would overflow float64 — rescale the data")
    parts = _brute_parts(X, k_max, spec, start, stop, _block_rows(n, None))
    parts = [(rows - start, keys, idx, cnt) for rows, keys, idx, cnt in parts]
    keys, idx = _stack(parts, stop - start)
    return GraphBlock(distances=spec.key_to_distance(keys), indices=idx, k_max=k_max, metric=spec.label, X=X,
                      keys=keys, metric_spec=spec, backend="exact", search="brute",
                      search_reason=f"exact brute force, block {start}..{stop - 1}", start=start, n_total=n)


def knn_rows(X: Any, rows: Any, k_max: int, metric: str = "euclidean", *, p: float | None = None,
             metric_params: dict[str, Any] | None = None) -> GraphBlock:
    """Exact kNN rows (+ ties at the k_max-distance) of the objects ``rows`` (ascending object numbers, any set)
    among all of ``X``: row r equals row ``rows[r]`` of ``knn_graph(X, k_max, metric)`` up to the padding width.

    For the metrics of the numba kernel the block's objects are moved to the front of a reordered copy of X, the
    kernel computes their rows there (each key summed pair by pair in attribute order: the same bits in any
    object order, and every object tied at the k_max-distance is kept), and the rows are mapped back to the
    object numbers and sorted by (key, object number) — the graph's order. Other metrics compute the rows from
    full distance rows of the original X (as :func:`knn_block` does).
    """
    X = check_data_matrix(X, min_rows=2)
    n = X.shape[0]
    k_max = check_k(k_max, n, name="k_max")
    ids = np.asarray(rows, dtype=np.int64).reshape(-1)
    if ids.size == 0 or (np.diff(ids) <= 0).any() or ids[0] < 0 or ids[-1] >= n:
        raise ValueError(f"block rows must be a non-empty ascending set of object numbers within 0..{n - 1}")
    if ids[-1] - ids[0] + 1 == ids.size:  # a range: the kernel on X itself
        return knn_block(X, int(ids[0]), int(ids[-1]) + 1, k_max, metric, p=p, metric_params=metric_params)
    spec = resolve_metric(metric, p=p, metric_params=metric_params).fit_to(X)  # fitted on X in its own order
    if spec.name == "euclidean" and float(np.abs(X).max()) > _MAX_ABS_VALUE:
        raise ValueError("X holds values whose squared Euclidean distances would overflow float64 — rescale the data")
    B = ids.size
    if spec.name in _NUMBA_METRICS:
        others = np.ones(n, dtype=bool)
        others[ids] = False
        perm = np.concatenate([ids, np.flatnonzero(others)])  # reordered position -> object number
        parts = _brute_parts(np.ascontiguousarray(X[perm]), k_max, spec, 0, B, _block_rows(n, None))
        parts = [(r, keys, np.where(idx >= 0, perm[np.maximum(idx, 0)], -1), cnt) for r, keys, idx, cnt in parts]
    else:
        parts = _select_rows(X, spec, ids, k_max, _block_rows(n, None))
        parts = [(np.searchsorted(ids, r), keys, idx, cnt) for r, keys, idx, cnt in parts]
    keys, idx = _stack(parts, B)
    # the graph's row order: (key, object number); padding (key +inf, index -1) stays last
    order = np.lexsort((np.where(idx >= 0, idx, n), keys), axis=1)
    keys = np.take_along_axis(keys, order, axis=1)
    idx = np.take_along_axis(idx, order, axis=1)
    return GraphBlock(distances=spec.key_to_distance(keys), indices=idx, k_max=k_max, metric=spec.label, X=X,
                      keys=keys, metric_spec=spec, backend="exact", search="brute",
                      search_reason=f"exact brute force, block of {B} objects", start=-1, n_total=n, rows=ids)


def assemble_blocks(blocks: list[GraphBlock]) -> KNNGraph:
    """The whole graph from the blocks of :func:`knn_block` (in any order; together they must cover 0..N−1)."""
    if not blocks:
        raise ValueError("no blocks to assemble")
    b0 = blocks[0]
    n = b0.n_total
    covered = np.zeros(n, dtype=np.int64)
    parts = []
    for b in blocks:
        rows = b.object_ids
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

    ``extra``: the halo's global object numbers, ascending. ``local``: the block's ``indices`` with the block's
    object of row r ↦ r and ``extra[h]`` ↦ B + h (padding stays −1). ``owner``: the block holding each object of
    ``extra``; ``n_blocks``: the number of blocks of the partition.
    """

    extra: np.ndarray
    local: np.ndarray
    owner: np.ndarray
    n_blocks: int

    @property
    def owner_slices(self) -> list[slice]:
        """The slice of ``extra`` held by each block (index-range blocks only: then ``extra``, ascending, is
        grouped by block)."""
        if (np.diff(self.owner) < 0).any():
            raise ValueError("the halo is not grouped by block: the blocks are not ranges of object numbers")
        cuts = np.searchsorted(self.owner, np.arange(self.n_blocks + 1))
        return [slice(int(a), int(b)) for a, b in itertools.pairwise(cuts)]


def block_halo(block: GraphBlock, partition: Any) -> Halo:
    """The halo of ``block`` (every valid entry of its rows, all k ≤ k_max) and its local rows; ``partition``:
    the :class:`Partition` (or the (start, stop) bounds) of all blocks."""
    part = Partition.of(partition, block.n_total)
    idx = block.indices
    valid = idx >= 0
    inside = np.zeros(idx.shape, dtype=bool)
    inside[valid] = block.holds(idx[valid])
    extra = np.unique(idx[valid & ~inside])
    local = np.full(idx.shape, -1, dtype=np.int64)
    local[inside] = block.local(idx[inside])
    out = valid & ~inside
    local[out] = block.n_objects + np.searchsorted(extra, idx[out])
    return Halo(extra=extra, local=local, owner=part.owner[extra], n_blocks=part.n_blocks)


def membership_k(block: KNNGraph) -> np.ndarray:
    """Smallest k at which each row entry belongs to the row's tie-extended neighbourhood N_k (k_max + 1 for
    padding), shape of ``block.indices``."""
    starts = _kernels.tie_group_starts(block.keys)
    kmin = starts + 1
    kmin[starts < 0] = block.k_max + 1
    return kmin


def in_edges(block: GraphBlock, partition: Any, positions: bool = False) -> list[tuple]:
    """The edges q → p (p ∈ N_k(q), q in this block) grouped by the block owning p.

    Returns, for every block b of ``partition`` (a :class:`Partition` or (start, stop) bounds), ``(dst, src,
    kmin)``: int64 arrays of the global p and q and the smallest k with p ∈ N_k(q), sorted by (dst, src); with
    ``positions`` also p's column in q's row and the distance. 3 · 8 (5 · 8) bytes per edge; all blocks together
    send each graph entry once (N · W edges).
    """
    part = Partition.of(partition, block.n_total)
    kmin = membership_k(block)
    valid = kmin <= block.k_max
    rows = np.broadcast_to(block.object_ids[:, None], kmin.shape)
    cols = np.broadcast_to(np.arange(kmin.shape[1], dtype=np.int64)[None, :], kmin.shape)
    parts = [block.indices[valid], rows[valid], kmin[valid]]
    if positions:
        parts += [cols[valid], block.distances[valid]]
    owner = part.owner[parts[0]]
    order = np.lexsort((parts[1], parts[0], owner))
    parts = [a[order] for a in parts]
    cuts = np.searchsorted(owner[order], np.arange(part.n_blocks + 1))
    return [tuple(a[cuts[i]:cuts[i + 1]] for a in parts) for i in range(part.n_blocks)]


def block_exchange(block: GraphBlock, partition: Any, halo: Halo | None = None) -> tuple[int, int, int]:
    """(halo objects, graph entries, graph entries whose target another block holds) of one block (see
    :func:`exchange_volume`)."""
    part = Partition.of(partition, block.n_total)
    n_halo = (halo if halo is not None else block_halo(block, part)).extra.size
    valid = membership_k(block) <= block.k_max
    sources = np.broadcast_to(block.object_ids[:, None], valid.shape)[valid]
    cross = int((part.owner[block.indices[valid]] != part.owner[sources]).sum())
    return int(n_halo), int(valid.sum()), cross


def exchange_volume(blocks: Sequence[Any], partition: Any = None) -> dict[str, Any]:
    """What the exchanges between ``blocks`` move: per block the halo (objects of other blocks its rows
    reference, all k ≤ k_max) and the in-edges it sends to other blocks. ``blocks``: :class:`GraphBlock` s, or
    their :func:`block_exchange` triples (``partition`` then required).

    Returns ``halo_objects`` (per block), ``halo_total`` (Σ over blocks: the rows of one per-object summary
    shipped by one halo exchange; × 8 · c bytes for c floats per object), ``halo_fraction`` (``halo_total`` /
    (N · (P − 1)): 1 when every block needs every other object), ``cross_edges`` (graph entries q → p with p and
    q in different blocks: what an edge exchange ships, 24–40 B each) and ``edges`` (all graph entries).
    """
    if partition is None:
        partition = Partition.of(blocks)
    part = Partition.of(partition)
    counts = [b if isinstance(b, tuple) else block_exchange(b, part) for b in blocks]
    halo = [c[0] for c in counts]
    n, p = part.n_objects, part.n_blocks
    return {"halo_objects": halo, "halo_total": int(sum(halo)),
            "halo_fraction": float(sum(halo)) / (n * (p - 1)) if p > 1 else 0.0,
            "cross_edges": sum(c[2] for c in counts), "edges": sum(c[1] for c in counts)}
