"""Scoring by blocks of objects: per-block steps and the exchanges between them (the pure half of a
partitioned, e.g. Dask, run; the Dask half is :mod:`odeval.bench.distributed`).

Each block holds the exact kNN rows of its objects (:func:`odeval.neighbors.blocks.knn_block`) and the whole data
matrix. A method is a short *plan*: steps run on every block where the block lives, separated by exchanges of
small per-object summaries:

* ``halo``: rows of a per-object array of the blocks owning the objects a block's rows reference (its halo,
  :func:`odeval.neighbors.blocks.block_halo`), e.g. the k-distances for all k, then the lrds for all k (LOF);
* ``edges``: the graph edges q → p routed to the block owning p (reverse neighbours: ODIN, INFLO);
* ``scan``: a value folded over the blocks in object order (a global sum that must be added in object order to
  be bit-identical, LoOP's normaliser; a global "all objects" test, FastABOD's degenerate case). With blocks
  that are ranges of object numbers the accumulator passes from block to block; with spatial blocks
  (:func:`odeval.neighbors.blocks.spatial_partition`) the objects' values are gathered into one task and folded
  there in object order (N · T floats once: LoOP's Σ PLOF²), unless the exchange declares that the order does not
  matter (``in_object_order=False``: FastABOD's logical and of one bool per k and block).

Blocks are any sets of objects (:class:`odeval.neighbors.blocks.Partition`); objects keep their numbers, so the
order of every sum over objects or neighbours is the one-process order whatever the partition.

Each detector declares its own plan next to its one-process kernels (``Detector._block_steps`` in its module,
the variants without a plan in ``Detector.block_refusals`` with the reason); this module holds what every plan is
made of (:class:`BlockState`, :class:`Step`, :class:`Exchange`, the steps several methods share) and runs plans.
Every step calls the same numba kernels, with the same arithmetic and summation order, as the one-process
detector (rows are remapped into a local index space: block objects first, then the halo), so the scores are
the one-process scores **bit for bit**; ``tests/detectors/test_blockwise.py`` checks every method against
:meth:`Detector.raw_scores_all_k`, and ``tests/bench/test_distributed.py`` on a real Dask ``LocalCluster``.

What is exchanged, per object of the halo (T = number of k, k_max = the largest):

========================  =========================================  ==============================
method                    exchanges                                  bytes per halo object
========================  =========================================  ==============================
kNN, kNNW, LDOF, FastABOD  none (FastABOD: one bool per k, scanned)  0
LOF                        k-distances (k_max), lrd (T)              8 · (k_max + T)
SimplifiedLOF              densities (T)                             8 · T
COF                        ac-dist (T)                               8 · T
LoOP                       pdist (T); scan of Σ PLOF² (T per block)  8 · T
LDF                        k-distances (k_max); LDE, log LDE (2T)    8 · (k_max + 2T)
ODIN                       in-edges (dst, src, k_min)                24 per graph entry
INFLO                      in-edges; k-distances (T) of halo ∪ RNN   24 per entry + 8 · T
KDEOS                      in-edges with position and distance;      40 per entry + 8 · 5T
                           per source: 1/h, h^-d, point?, cut-off
                           (4T); densities (T)
========================  =========================================  ==============================

KDEOS's density of q adds, in the order of p, the kernel of every p with q ∈ {p} ∪ N_k(p) up to p's cut-off:
the owner of q receives the edges p → q and p's bandwidths and cut-off positions and adds them in ascending p,
as the one-process loop does. The ELKI variants other than those equal to the paper's (kNN, kNNW, LOF,
SimplifiedLOF, ODIN, LDF, KDEOS: ``elki-0.7.1``) re-enact ELKI's list order with a scan over all objects, and
the ``elki-0.7.1-cks`` variants (but kNNW's) rebuild ELKI's batch-tool lists over the whole data: they refuse,
as do FastABOD's ``poly2`` kernel and the methods outside Campos et al.'s twelve (GLOSH).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from odeval.detectors._neighborhood import _iter_blocks, _neighbourhood_sizes
from odeval.detectors.base import Detector, MethodVariant, _not_partitioned, partitioned_methods
from odeval.neighbors.blocks import GraphBlock, Halo, Partition, block_halo, in_edges

__all__ = ["BlockState", "Exchange", "Step", "block_plan", "run_plan", "start_state", "block_raw_scores",
           "partitioned_methods", "halo", "with_halo", "per_chunk", "kdist_step", "edges_step", "IN_EDGES",
           "in_object_order",
           "LIST_ORDER", "BATCH_TOOL_LISTS", "REFUSE_ELKI_VARIANTS", "REFUSE_BATCH_TOOL"]


@dataclass(frozen=True)
class BlockState:
    """What one block keeps between the steps of one method (lives where the block lives)."""

    block: GraphBlock
    halo: Halo
    partition: Partition
    det: Detector | None = None
    ks: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def k_max(self) -> int:
        """The largest k scored."""
        return int(self.ks.max())


@dataclass(frozen=True)
class Exchange:
    """What a step sends: ``kind`` "halo" | "edges" | "scan", the ``key`` of ``data`` sent and the key ``into``
    which it is received; ``wanted`` (halo): key of the ids wanted instead of the halo; ``fold`` (scan):
    ``fold(acc, value)`` continues the accumulator over one block's value (``acc`` None at the start);
    ``in_object_order`` (scan): the fold runs over the objects' values (last axis: the block's objects) in object
    order — False when the value is one per block and the fold does not depend on the order of the blocks."""

    kind: str
    key: str
    into: str
    wanted: str | None = None
    fold: Callable[[Any, Any], Any] | None = None
    in_object_order: bool = True


@dataclass(frozen=True)
class Step:
    """One step of a plan: ``fn(state)`` returns the entries it adds to ``state.data``; then ``send`` runs."""

    fn: Callable[[BlockState], dict[str, Any]]
    send: tuple[Exchange, ...] = ()


# --- what several plans share ---------------------------------------------------------------------------------
#: Why the ELKI variants that re-enact ELKI 0.7.1's list order have no per-block plan (``block_refusals``).
LIST_ORDER = "it re-enacts ELKI's list order with a scan over all objects"
#: Why the ``elki-0.7.1-cks`` variants (but kNNW's) have none.
BATCH_TOOL_LISTS = "it rebuilds ELKI's batch-tool lists over the whole data"
#: ``block_refusals`` of a method both of whose ELKI variants re-enact ELKI over the whole data (COF, LDOF, INFLO,
#: LoOP): ``elki-0.7.1`` its list order, ``elki-0.7.1-cks`` its batch tool's lists.
REFUSE_ELKI_VARIANTS = {"variant": {MethodVariant.ELKI_071: LIST_ORDER, MethodVariant.ELKI_071_CKS: BATCH_TOOL_LISTS}}
#: ``block_refusals`` of a method whose ``elki-0.7.1-cks`` variant alone rebuilds the batch tool's lists (LOF, kNN,
#: ODIN, LDF, KDEOS).
REFUSE_BATCH_TOOL = {"variant": {MethodVariant.ELKI_071_CKS: BATCH_TOOL_LISTS}}


def halo(key: str, wanted: str | None = None) -> Exchange:
    """Send the rows of ``data[key]`` (per object, e.g. ``dens_t``) to the blocks whose halo (or ``wanted`` ids)
    holds the objects; received as ``<key without _t>_halo``."""
    return Exchange("halo", key, key.removesuffix("_t") + "_halo", wanted=wanted)


#: Send ``data["edges"]`` (:func:`edges_step`) to the blocks owning their targets; received as ``data["in"]``.
IN_EDGES = Exchange("edges", "edges", "in")


def with_halo(own: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """(T, B) own values and (E, T) halo values → (T, B + E) in the local index space."""
    return np.ascontiguousarray(np.hstack([own, extra.T]))


def per_chunk(state: BlockState, chunk_fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    """(T, B) values of ``chunk_fn(pairwise distances among {p} ∪ N(p), sizes)`` over the block's rows, and the
    sizes (T, B) — as LDOF and COF do over the whole graph."""
    b = state.block
    sizes = _neighbourhood_sizes(b, state.ks)
    out = np.empty((state.ks.size, b.n_objects))
    for rows, blk in _iter_blocks(b, sizes[-1]):
        out[:, rows] = chunk_fn(blk, np.ascontiguousarray(sizes[:, rows]))
    return out, sizes


def kdist_step(state: BlockState) -> dict[str, Any]:
    """The block's k-distances for k = 1..k_max (``kd``: LOF, LDF)."""
    return {"kd": np.ascontiguousarray(state.block.distances[:, :state.k_max])}


def edges_step(state: BlockState) -> dict[str, Any]:
    """The block's graph edges q → p grouped by the block owning p (``edges``, sent by :data:`IN_EDGES`)."""
    return {"edges": in_edges(state.block, state.partition)}


def block_plan(det: Any) -> list[Step]:
    """The steps of ``det`` on a block (:meth:`Detector.block_plan`, declared by the method's own module), or
    ``NotImplementedError`` naming why the method cannot be partitioned."""
    if not isinstance(det, Detector):  # e.g. a wrapped estimator
        raise NotImplementedError(_not_partitioned(det.info.name))
    return det.block_plan()


# --- running a plan -------------------------------------------------------------------------------------------------
def start_state(block: GraphBlock, partition: Any) -> BlockState:
    """The state of a block shared by every method: its rows and its halo; ``partition``: the
    :class:`~odeval.neighbors.blocks.Partition` of all blocks (or their (start, stop) bounds)."""
    part = Partition.of(partition, block.n_total)
    return BlockState(block=block, halo=block_halo(block, part), partition=part)


def _for_method(base: BlockState, det: Detector, ks: np.ndarray) -> BlockState:
    return replace(base, det=det, ks=np.asarray(ks, dtype=np.int64), data={})


def _apply(fn: Callable[[BlockState], dict[str, Any]], state: BlockState) -> BlockState:
    return replace(state, data={**state.data, **fn(state)})


def _halo_request(state: BlockState, wanted: str | None) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Per owner block: the rows (owner-local) of the objects this block wants (ascending object numbers), and
    the order in which the owners' answers, concatenated, hold them (None: already in the wanted order, as
    with blocks that are ranges)."""
    ids = state.halo.extra if wanted is None else state.data[wanted]
    part = state.partition
    owner = part.owner[ids]
    order = np.argsort(owner, kind="stable")
    cuts = np.searchsorted(owner[order], np.arange(part.n_blocks + 1))
    rows = part.position[ids[order]]
    in_order = bool((np.diff(owner) >= 0).all())
    return [rows[cuts[i]:cuts[i + 1]] for i in range(part.n_blocks)], None if in_order else order


def _take_rows(state: BlockState, key: str, request: tuple[list[np.ndarray], Any], owner: int) -> np.ndarray:
    return state.data[key][request[0][owner]]


def _receive_halo(state: BlockState, into: str, request: tuple[list[np.ndarray], Any], *pieces: Any) -> BlockState:
    """The owners' rows, back in the order of the wanted objects (ascending object numbers)."""
    value = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    order = request[1]
    if order is not None:
        back = np.empty_like(value)
        back[order] = value
        value = back
    return replace(state, data={**state.data, into: value})


def _receive(state: BlockState, into: str, *pieces: Any) -> BlockState:
    if pieces and isinstance(pieces[0], tuple):  # edges: concatenate each component
        value: Any = tuple(np.concatenate(c) for c in zip(*pieces, strict=True))
    elif len(pieces) == 1:
        value = pieces[0]
    else:
        value = np.concatenate(pieces)
    return replace(state, data={**state.data, into: value})


def _pick(state: BlockState, key: str, dest: int) -> Any:
    return state.data[key][dest]


def _fold(fold: Callable[[Any, Any], Any], acc: Any, state: BlockState, key: str) -> Any:
    return fold(acc, state.data[key])


def _objects_values(state: BlockState, key: str) -> tuple[np.ndarray, np.ndarray]:
    return state.block.object_ids, state.data[key]


def _fold_in_object_order(fold: Callable[[Any, Any], Any], *pieces: tuple[np.ndarray, np.ndarray]) -> Any:
    """``fold`` over the values of every object (last axis) put back in object order."""
    n = sum(ids.size for ids, _ in pieces)
    first = pieces[0][1]
    values = np.empty((*first.shape[:-1], n), dtype=first.dtype)
    for ids, v in pieces:
        values[..., ids] = v
    return fold(None, values)


def _raw(state: BlockState) -> np.ndarray:
    return state.data["raw"]


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def run_plan(plan: Sequence[Step], states: list[Any], submit: Callable[..., Any] = _call,
             contiguous: bool = True) -> list[Any]:
    """Run ``plan`` on the blocks' states; ``submit(fn, *args)`` runs a task (default: here, now — a Dask
    ``client.submit`` runs it on the cluster, with futures as handles). ``contiguous``: the blocks are ranges of
    object numbers, in order (a scan then passes its accumulator from block to block). Returns the final states'
    handles."""
    n = len(states)
    for step in plan:
        states = [submit(_apply, step.fn, s) for s in states]
        for ex in step.send:
            if ex.kind == "halo":
                reqs = [submit(_halo_request, s, ex.wanted) for s in states]
                states = [submit(_receive_halo, s, ex.into, reqs[b],
                                 *[submit(_take_rows, states[a], ex.key, reqs[b], a) for a in range(n)])
                          for b, s in enumerate(states)]
            elif ex.kind == "edges":
                states = [submit(_receive, s, ex.into, *[submit(_pick, states[a], ex.key, b) for a in range(n)])
                          for b, s in enumerate(states)]
            elif contiguous or not ex.in_object_order:  # scan: block after block (in object order if it matters)
                acc = None
                for s in states:
                    acc = submit(_fold, ex.fold, acc, s, ex.key)
                states = [submit(_receive, s, ex.into, acc) for s in states]
            else:  # scan in object order over blocks that are not ranges: the values meet in one task
                acc = submit(_fold_in_object_order, ex.fold, *[submit(_objects_values, s, ex.key) for s in states])
                states = [submit(_receive, s, ex.into, acc) for s in states]
    return states


def block_raw_scores(det: Detector, blocks: Sequence[GraphBlock], ks: Sequence[int],
                     submit: Callable[..., Any] = _call, bases: Sequence[Any] | None = None,
                     partition: Partition | None = None) -> Any:
    """Raw scores (len(ks), N) of ``det`` from the blocks (ks ascending, each ≤ the blocks' k_max), in this
    process (or, with ``submit``/``bases``, handles of the per-block (len(ks), B) results, in the order of
    ``partition``'s blocks). The blocks may be any sets of objects (``partition``; default: the blocks' own
    objects); the in-process result is in object order."""
    ks_arr = np.asarray(ks, dtype=np.int64)
    if ks_arr.size == 0 or (np.diff(ks_arr) <= 0).any():
        raise ValueError("ks must be a non-empty ascending sequence without repeats")
    plan = block_plan(det)
    if partition is None:
        partition = Partition.of(blocks)
    if bases is None:
        bases = [submit(start_state, b, partition) for b in blocks]
    states = run_plan(plan, [submit(_for_method, s, det, ks_arr) for s in bases], submit, partition.contiguous)
    results = [submit(_raw, s) for s in states]
    if submit is _call:
        return in_object_order(results, partition)
    return results


def in_object_order(parts: Sequence[np.ndarray], partition: Partition) -> np.ndarray:
    """The per-block (T, B) results of ``partition``'s blocks as one (T, N) array in object order."""
    if partition.contiguous:
        return np.hstack(parts)
    out = np.empty((parts[0].shape[0], partition.n_objects), dtype=parts[0].dtype)
    for ids, part in zip(partition.members, parts, strict=True):
        out[:, ids] = part
    return out
