"""Scoring by blocks of objects: per-block steps and the exchanges between them (the pure half of a
partitioned, e.g. Dask, run; the Dask half is :mod:`odeval.bench.distributed`).

Each block holds the exact kNN rows of its objects (:func:`odeval.neighbors.blocks.knn_block`) and the whole data
matrix. A method is a short *plan*: steps run on every block where the block lives, separated by exchanges of
small per-object summaries:

* ``halo``: rows of a per-object array of the blocks owning the objects a block's rows reference (its halo,
  :func:`odeval.neighbors.blocks.block_halo`), e.g. the k-distances for all k, then the lrds for all k (LOF);
* ``edges``: the graph edges q → p routed to the block owning p (reverse neighbours: ODIN, INFLO);
* ``scan``: a value folded over the blocks in object order (a global sum that must be added in object order to
  be bit-identical, LoOP's normaliser; a global "all objects" test, FastABOD's degenerate case).

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
from odeval.detectors.base import Detector
from odeval.neighbors.blocks import GraphBlock, Halo, block_halo, in_edges

__all__ = ["BlockState", "Exchange", "Step", "block_plan", "run_plan", "start_state", "block_raw_scores",
           "SUPPORTED"]

#: method name → the variants a block plan exists for
SUPPORTED: dict[str, tuple[str, ...]] = {
    "kNN": ("paper", "elki-0.7.1"), "kNNW": ("paper", "elki-0.7.1", "elki-0.7.1-cks"),
    "LOF": ("paper", "elki-0.7.1"), "SimplifiedLOF": ("paper", "elki-0.7.1"), "LDOF": ("paper",),
    "COF": ("paper",), "ODIN": ("paper", "elki-0.7.1"), "FastABOD": ("linear",), "LoOP": ("paper",),
    "LDF": ("paper", "elki-0.7.1"), "INFLO": ("paper",), "KDEOS": ("paper", "elki-0.7.1"),
}


@dataclass(frozen=True)
class BlockState:
    """What one block keeps between the steps of one method (lives where the block lives)."""

    block: GraphBlock
    halo: Halo
    bounds: tuple[tuple[int, int], ...]
    det: Detector | None = None
    ks: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Exchange:
    """What a step sends: ``kind`` "halo" | "edges" | "scan", the ``key`` of ``data`` sent and the key ``into``
    which it is received; ``wanted`` (halo): key of the ids wanted instead of the halo; ``fold`` (scan)."""

    kind: str
    key: str
    into: str
    wanted: str | None = None
    fold: Callable[[Any, Any], Any] | None = None


@dataclass(frozen=True)
class Step:
    fn: Callable[[BlockState], dict[str, Any]]
    send: tuple[Exchange, ...] = ()


# --- helpers ---------------------------------------------------------------------------------------------------
def _with_extra(own: np.ndarray, extra: np.ndarray) -> np.ndarray:
    """(T, B) own values and (E, T) halo values → (T, B + E) in the local index space."""
    return np.ascontiguousarray(np.hstack([own, extra.T]))


def _kmax(state: BlockState) -> int:
    return int(state.ks.max())


# --- kNN, kNNW, LDOF, FastABOD: no exchange -----------------------------------------------------------------------
def _knn(state: BlockState) -> dict[str, Any]:
    return {"raw": np.ascontiguousarray(state.block.distances[:, state.ks - 1].T)}


def _knnw(state: BlockState) -> dict[str, Any]:
    running = np.cumsum(state.block.distances[:, :_kmax(state)], axis=1)  # as KNNW: left to right
    return {"raw": np.ascontiguousarray(running[:, state.ks - 1].T)}


def _per_chunk(state: BlockState, chunk_fn: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    """(T, B) values of ``chunk_fn(pairwise distances among {p} ∪ N(p), sizes)`` over the block's rows, and the
    sizes (T, B) — as LDOF and COF do over the whole graph."""
    b = state.block
    sizes = _neighbourhood_sizes(b, state.ks)
    out = np.empty((state.ks.size, b.n_objects))
    for rows, blk in _iter_blocks(b, sizes[-1]):
        out[:, rows] = chunk_fn(blk, np.ascontiguousarray(sizes[:, rows]))
    return out, sizes


def _ldof(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.ldof import _ldof_chunk

    return {"raw": _per_chunk(state, _ldof_chunk)[0]}


def _abod_local(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.abod import _NO_PAIR_VALUE, _abof_linear

    b = state.block
    if str(b.metric) != "euclidean":
        raise ValueError(f"FastABOD: the linear kernel needs a Euclidean kNN graph, got metric {b.metric!r}")
    B = b.n_objects
    # row p of the kernel is object p of its X: put the block's objects first, shift the neighbour numbers
    X = np.ascontiguousarray(np.vstack([b.X[b.start:b.stop], b.X]))
    idx = np.where(b.indices >= 0, b.indices + B, -1)
    raw = _abof_linear(X, idx, _neighbourhood_sizes(b, state.ks), _NO_PAIR_VALUE)
    return {"abof": raw, "nopair": (raw == _NO_PAIR_VALUE).all(axis=1)}


def _fold_and(acc: Any, part: np.ndarray) -> np.ndarray:
    return part.copy() if acc is None else acc & part


def _abod_final(state: BlockState) -> dict[str, Any]:
    raw = state.data["abof"]
    undefined = state.data["nopair_all"]  # as abod._degenerate_rows_to_zero, over all objects
    if undefined.any():
        raw = raw.copy()
        raw[undefined] = 0.0
    return {"raw": raw}


# --- LOF, SimplifiedLOF ---------------------------------------------------------------------------------------------
def _kd_summary(state: BlockState) -> dict[str, Any]:
    return {"kd": np.ascontiguousarray(state.block.distances[:, :_kmax(state)])}


def _lof_density(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.lof import _density_all_k

    b = state.block
    simplified = state.det.info.name == "SimplifiedLOF"
    KD = np.zeros((1, _kmax(state))) if simplified else np.ascontiguousarray(
        np.vstack([state.data["kd"], state.data["kd_halo"]]))
    dens, sizes = _density_all_k(b.distances, state.halo.local, b.neighborhood_sizes(), KD, state.ks, simplified)
    return {"dens": dens, "sizes": sizes, "dens_t": np.ascontiguousarray(dens.T)}


def _lof_ratio(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.lof import _ratio_all_k

    d = state.data
    ref = _with_extra(d["dens"], d["dens_halo"])
    return {"raw": _ratio_all_k(d["dens"], d["sizes"], state.halo.local, ref)}


# --- COF ------------------------------------------------------------------------------------------------------------
def _cof_acdist(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.cof import _acdist_chunk_paper

    ac, sizes = _per_chunk(state, _acdist_chunk_paper)
    return {"ac": ac, "ac_t": np.ascontiguousarray(ac.T), "sizes": sizes}


def _cof_ratio(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.cof import _cof_from_acdist

    d = state.data
    ac = _with_extra(d["ac"], d["ac_halo"])
    B, E = state.block.n_objects, d["ac_halo"].shape[0]
    # the kernel runs over every column of ac: the halo's rows are empty neighbourhoods, their output dropped
    idx = np.vstack([state.halo.local, np.full((E, state.halo.local.shape[1]), -1, np.int64)])
    sizes = np.ascontiguousarray(np.hstack([d["sizes"], np.zeros((state.ks.size, E), np.int64)]))
    dist = np.zeros((1, 1))
    return {"raw": _cof_from_acdist(ac, state.block.X, dist, idx, sizes, state.ks, False, False)[:, :B]}


# --- ODIN -----------------------------------------------------------------------------------------------------------
def _edges(state: BlockState) -> dict[str, Any]:
    return {"edges": in_edges(state.block, list(state.bounds))}


def _in_degrees(state: BlockState) -> np.ndarray:
    """(T, B) |{q : p ∈ N_k(q)}| from the received in-edges (integer counts: any order gives the same)."""
    b = state.block
    dst, _, km = state.data["in"]
    acc = np.zeros((b.k_max + 1) * b.n_objects, dtype=np.int64)
    np.add.at(acc, (km - 1) * b.n_objects + (dst - b.start), 1)
    deg = np.cumsum(acc.reshape(b.k_max + 1, b.n_objects)[: b.k_max], axis=0)
    return deg[state.ks - 1]


def _odin(state: BlockState) -> dict[str, Any]:
    return {"raw": _in_degrees(state) / state.ks[:, None].astype(np.float64)}


# --- LoOP -----------------------------------------------------------------------------------------------------------
def _loop_pdist_step(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.loop import _loop_pdist

    pdist = _loop_pdist(state.block.distances, state.ks)
    return {"pdist": pdist, "pdist_t": np.ascontiguousarray(pdist.T)}


def _loop_plof_step(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.loop import _loop_plof, _loop_sums

    d = state.data
    sums = _loop_sums(_with_extra(d["pdist"], d["pdist_halo"]), state.halo.local, state.ks, state.block.n_objects)
    return {"plof": _loop_plof(d["pdist"], sums, state.ks, False)}


def _fold_loop_acc(acc: Any, plof: np.ndarray) -> np.ndarray:
    """Σ PLOF² continued over one more block, in object order (LoOP's normaliser, bit-identical)."""
    from odeval.detectors.loop import _loop_acc

    out = np.zeros(plof.shape[0]) if acc is None else acc.copy()
    _loop_acc(plof, False, out)
    return out


def _loop_final(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.loop import _loop_erf

    d = state.data
    return {"raw": _loop_erf(d["plof"], d["acc"], state.block.n_total, float(state.det.lam), False)}


# --- LDF ------------------------------------------------------------------------------------------------------------
def _ldf_lde_step(state: BlockState) -> dict[str, Any]:
    from odeval.detectors._numeric import GAUSS_NORM
    from odeval.detectors.ldf import _LOG_SQRT_2PI, _ldf_lde

    b, d = state.block, state.data
    KD = np.ascontiguousarray(np.vstack([d["kd"], d["kd_halo"]]))
    sizes, lde, loglde = _ldf_lde(b.distances, state.halo.local, b.neighborhood_sizes(), state.ks,
                                  float(state.det.h), int(b.X.shape[1]), _LOG_SQRT_2PI, GAUSS_NORM, KD)
    return {"sizes": sizes, "lde": lde, "loglde": loglde, "lde2_t": np.ascontiguousarray(np.vstack([lde, loglde]).T)}


def _ldf_final(state: BlockState) -> dict[str, Any]:
    from odeval.detectors.ldf import _ldf_factor

    d = state.data
    T = state.ks.size
    lde = _with_extra(d["lde"], d["lde2_halo"][:, :T])
    loglde = _with_extra(d["loglde"], d["lde2_halo"][:, T:])
    return {"raw": _ldf_factor(state.halo.local, d["sizes"], lde, loglde, float(state.det.c))}


# --- INFLO ----------------------------------------------------------------------------------------------------------
def _inflo_wanted(state: BlockState) -> dict[str, Any]:
    """The objects whose k-distances INFLO needs: the halo and the reverse neighbours from other blocks."""
    b = state.block
    src = state.data["in"][1]
    outside = src[(src < b.start) | (src >= b.stop)]
    wanted = np.union1d(state.halo.extra, outside)
    kd = np.ascontiguousarray(b.distances[:, :_kmax(state)]) if "kd" not in state.data else state.data["kd"]
    return {"wanted": wanted, "kd": kd}


def _inflo_final(state: BlockState) -> dict[str, Any]:
    from odeval.detectors._blockwise_kernels import inflo_block

    b, d = state.block, state.data
    B = b.n_objects
    wanted = d["wanted"]

    def to_local(ids: np.ndarray) -> np.ndarray:
        inside = (ids >= b.start) & (ids < b.stop)
        return np.where(inside, ids - b.start, B + np.searchsorted(wanted, ids))

    lidx = np.where(b.indices >= 0, to_local(b.indices), -1)
    dst, src, km = d["in"]
    order = np.lexsort((src, dst))
    dst, src, km = dst[order], src[order], km[order]
    ptr = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst - b.start, minlength=B), out=ptr[1:])
    kd = _with_extra(np.ascontiguousarray(d["kd"][:, state.ks - 1].T), d["kd_halo"][:, state.ks - 1])
    sizes = _neighbourhood_sizes(b, state.ks)
    return {"raw": inflo_block(lidx, sizes, kd, to_local(src), km, ptr, state.ks, float(state.det.m))}


# --- KDEOS ----------------------------------------------------------------------------------------------------------
def _kdeos_params(state: BlockState) -> tuple[float, float, int]:
    from odeval.detectors.kdeos import GAUSSIAN_CANONICAL_BANDWIDTH

    det = state.det
    s = det.scale * GAUSSIAN_CANONICAL_BANDWIDTH
    iminbw = 1.0 / (det.min_bandwidth * s) if det.min_bandwidth > 0 else np.inf
    dim = det.idim if det.idim >= 0 else int(state.block.X.shape[1])
    return s, iminbw, dim


def _kdeos_sources(state: BlockState) -> dict[str, Any]:
    from odeval.detectors._blockwise_kernels import kdeos_sources
    from odeval.detectors._numeric import GAUSS_NORM
    from odeval.detectors.kdeos import _CUTOFF

    b = state.block
    s, iminbw, dim = _kdeos_params(state)
    src = kdeos_sources(b.distances, b.neighborhood_sizes(), state.ks, s, iminbw, dim, GAUSS_NORM, _CUTOFF)
    return {"src": src, "src_t": np.ascontiguousarray(src.T),
            "edges": in_edges(b, list(state.bounds), positions=True)}


def _kdeos_wanted(state: BlockState) -> dict[str, Any]:
    b = state.block
    src = state.data["in"][1]
    return {"wanted": np.unique(src[(src < b.start) | (src >= b.stop)])}


def _kdeos_density(state: BlockState) -> dict[str, Any]:
    from odeval.detectors._blockwise_kernels import kdeos_density
    from odeval.detectors._numeric import GAUSS_NORM

    b, d = state.block, state.data
    B = b.n_objects
    dst, src, km, pos, dist = d["in"]
    order = np.lexsort((src, dst))
    dst, src, km, pos, dist = dst[order], src[order], km[order], pos[order], dist[order]
    inside = (src >= b.start) & (src < b.stop)
    src_local = np.where(inside, src - b.start, B + np.searchsorted(d["wanted"], src))
    ptr = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst - b.start, minlength=B), out=ptr[1:])
    info = _with_extra(d["src"], d["src_halo"])
    dens = kdeos_density(b.start, info, ptr, src, src_local, pos, dist, km, state.ks, GAUSS_NORM)
    return {"dens": dens, "dens_t": np.ascontiguousarray(dens.T)}


def _kdeos_final(state: BlockState) -> dict[str, Any]:
    from odeval.detectors._blockwise_kernels import kdeos_scores

    b, d = state.block, state.data
    dens = _with_extra(d["dens"], d["dens_halo"])
    elki = state.det.variant != "paper"
    return {"raw": kdeos_scores(b.distances, state.halo.local, b.neighborhood_sizes(), state.ks, dens, elki)}


# --- the plans ------------------------------------------------------------------------------------------------------
def _halo(key: str, wanted: str | None = None) -> Exchange:
    return Exchange("halo", key, key.removesuffix("_t") + "_halo", wanted=wanted)


def block_plan(det: Detector) -> list[Step]:
    """The steps of ``det`` on a block, or ``NotImplementedError`` naming why the method cannot be partitioned."""
    name = det.info.name
    variant = getattr(det, "variant", None) or getattr(det, "kernel", None)
    if name not in SUPPORTED:
        raise NotImplementedError(f"{name} is not block-partitioned (the partitioned run covers "
                                  f"{', '.join(SUPPORTED)}); score it in one process")
    if variant not in SUPPORTED[name]:
        raise NotImplementedError(f"{name} variant {variant!r} is not block-partitioned (it re-enacts ELKI's list "
                                  f"order over all objects); partitioned variants: {', '.join(SUPPORTED[name])}")
    if name == "kNN":
        return [Step(_knn)]
    if name == "kNNW":
        return [Step(_knnw)]
    if name == "LDOF":
        return [Step(_ldof)]
    if name == "FastABOD":
        return [Step(_abod_local, (Exchange("scan", "nopair", "nopair_all", fold=_fold_and),)), Step(_abod_final)]
    if name == "LOF":
        return [Step(_kd_summary, (_halo("kd"),)), Step(_lof_density, (_halo("dens_t"),)), Step(_lof_ratio)]
    if name == "SimplifiedLOF":
        return [Step(_lof_density, (_halo("dens_t"),)), Step(_lof_ratio)]
    if name == "COF":
        return [Step(_cof_acdist, (_halo("ac_t"),)), Step(_cof_ratio)]
    if name == "ODIN":
        return [Step(_edges, (Exchange("edges", "edges", "in"),)), Step(_odin)]
    if name == "LoOP":
        return [Step(_loop_pdist_step, (_halo("pdist_t"),)),
                Step(_loop_plof_step, (Exchange("scan", "plof", "acc", fold=_fold_loop_acc),)), Step(_loop_final)]
    if name == "KDEOS":
        return [Step(_kdeos_sources, (Exchange("edges", "edges", "in"),)),
                Step(_kdeos_wanted, (_halo("src_t", "wanted"),)), Step(_kdeos_density, (_halo("dens_t"),)),
                Step(_kdeos_final)]
    if name == "LDF":
        return [Step(_kd_summary, (_halo("kd"),)), Step(_ldf_lde_step, (_halo("lde2_t"),)), Step(_ldf_final)]
    # INFLO
    return [Step(_edges, (Exchange("edges", "edges", "in"),)), Step(_inflo_wanted, (_halo("kd", "wanted"),)),
            Step(_inflo_final)]


# --- running a plan -------------------------------------------------------------------------------------------------
def start_state(block: GraphBlock, bounds: Sequence[tuple[int, int]]) -> BlockState:
    """The state of a block shared by every method: its rows and its halo."""
    return BlockState(block=block, halo=block_halo(block, list(bounds)), bounds=tuple(bounds))


def _for_method(base: BlockState, det: Detector, ks: np.ndarray) -> BlockState:
    return replace(base, det=det, ks=np.asarray(ks, dtype=np.int64), data={})


def _apply(fn: Callable[[BlockState], dict[str, Any]], state: BlockState) -> BlockState:
    return replace(state, data={**state.data, **fn(state)})


def _halo_request(state: BlockState, wanted: str | None) -> list[np.ndarray]:
    """Per owner block: the rows (owner-local) of the objects this block wants."""
    ids = state.halo.extra if wanted is None else state.data[wanted]
    cuts = np.searchsorted(ids, [a for a, _ in state.bounds] + [state.bounds[-1][1]])
    return [ids[cuts[i]:cuts[i + 1]] - a for i, (a, _) in enumerate(state.bounds)]


def _take_rows(state: BlockState, key: str, request: list[np.ndarray], owner: int) -> np.ndarray:
    return state.data[key][request[owner]]


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


def _raw(state: BlockState) -> np.ndarray:
    return state.data["raw"]


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


def run_plan(plan: Sequence[Step], states: list[Any], submit: Callable[..., Any] = _call) -> list[Any]:
    """Run ``plan`` on the blocks' states; ``submit(fn, *args)`` runs a task (default: here, now — a Dask
    ``client.submit`` runs it on the cluster, with futures as handles). Returns the final states' handles."""
    n = len(states)
    for step in plan:
        states = [submit(_apply, step.fn, s) for s in states]
        for ex in step.send:
            if ex.kind == "halo":
                reqs = [submit(_halo_request, s, ex.wanted) for s in states]
                states = [submit(_receive, s, ex.into,
                                 *[submit(_take_rows, states[a], ex.key, reqs[b], a) for a in range(n)])
                          for b, s in enumerate(states)]
            elif ex.kind == "edges":
                states = [submit(_receive, s, ex.into, *[submit(_pick, states[a], ex.key, b) for a in range(n)])
                          for b, s in enumerate(states)]
            else:  # scan: folded over the blocks in object order
                acc = None
                for s in states:
                    acc = submit(_fold, ex.fold, acc, s, ex.key)
                states = [submit(_receive, s, ex.into, acc) for s in states]
    return states


def block_raw_scores(det: Detector, blocks: Sequence[GraphBlock], ks: Sequence[int],
                     submit: Callable[..., Any] = _call, bases: Sequence[Any] | None = None) -> Any:
    """Raw scores (len(ks), N) of ``det`` from the blocks (ks ascending, each ≤ the blocks' k_max), in this
    process (or, with ``submit``/``bases``, handles of the per-block (len(ks), B) results)."""
    ks_arr = np.asarray(ks, dtype=np.int64)
    if ks_arr.size == 0 or (np.diff(ks_arr) <= 0).any():
        raise ValueError("ks must be a non-empty ascending sequence without repeats")
    plan = block_plan(det)
    if bases is None:
        bounds = [(b.start, b.stop) for b in blocks]
        bases = [submit(start_state, b, bounds) for b in blocks]
    states = run_plan(plan, [submit(_for_method, s, det, ks_arr) for s in bases], submit)
    results = [submit(_raw, s) for s in states]
    if submit is _call:
        return np.hstack(results)
    return results
