"""LoOP: Local Outlier Probabilities (Kriegel, Kröger, Schubert, Zimek 2009).

Reference and comparison sets are the first k neighbours (kref = kcomp = k), *without* tie extension, as
ELKI 0.7.1's ``lof/LoOP.java`` (``shared/docs/elki-0.7.1-semantics.md`` §1.5, §0.8). Running sums over the
sorted neighbour lists serve all k; the per-k work is one pass over N · k entries (numba, parallel).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from odeval.detectors._erf import elki_erf
from odeval.detectors.base import VARIANT, Detector, MethodInfo, MethodVariant, Number, check_ks, register
from odeval.detectors.blockwise import REFUSE_ELKI_VARIANTS, BlockState, Exchange, Step, halo, with_halo
from odeval.neighbors._elki_order import cks_lists, heap_drain, heap_offer

__all__ = ["LoOP"]


def _loop_all_k(X, D, I, S, ks, lam, elki, elki_order):
    """(len(ks), N) LoOP scores: the steps below, in order (the block-partitioned run,
    :mod:`odeval.detectors.blockwise`, runs the same steps per block)."""
    pdist = _loop_pdist(D, ks)
    if elki_order:
        sums = _loop_sums(pdist, I, ks, D.shape[0])
    else:  # object-major copy: a neighbour's pdist for all k contiguous (same sums, same order)
        sums = _loop_sums_rows(np.ascontiguousarray(pdist.T), I, ks)
    if elki_order:
        for t in range(ks.shape[0]):
            _elki_comparison_sums(X, D, I, S, ks[t], pdist[t], sums[t])
    plof = _loop_plof(pdist, sums, ks, elki)
    del pdist, sums  # peak memory: three (len(ks), N) matrices at a time, not four (0.8 GB each at 10⁶ × 100 k)
    acc = np.zeros(ks.shape[0])
    _loop_acc(plof, elki, acc)
    return _loop_erf(plof, acc, D.shape[0], lam, elki)


@njit(cache=True, parallel=True)
def _loop_pdist(D, ks):  # pragma: no cover - numba
    """pdist (len(ks), rows): sqrt of the mean squared distance to the first k neighbours."""
    N = D.shape[0]
    T = ks.shape[0]
    kmax = 0
    for t in range(T):
        kmax = max(kmax, ks[t])
    # running sums of squared distances along each row (left to right, as ELKI sums them)
    sq = np.empty((N, kmax))
    for p in prange(N):
        s = 0.0
        for j in range(kmax):
            d = D[p, j]
            s += d * d
            sq[p, j] = s
    pdist = np.empty((T, N))
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            pdist[t, p] = math.sqrt(sq[p, k - 1] / k)
    return pdist


@njit(cache=True, parallel=True)
def _loop_sums(pdist, I, ks, N):  # pragma: no cover - numba
    """Σ pdist over the first k neighbours of each of the N rows of I (pdist indexed by I's entries)."""
    T = ks.shape[0]
    sums = np.empty((T, N))
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            s = 0.0
            for j in range(k):
                s += pdist[t, I[p, j]]
            sums[t, p] = s
    return sums


@njit(cache=True, parallel=True)
def _loop_sums_rows(pdist_rows, I, ks):  # pragma: no cover - numba
    """:func:`_loop_sums` on object-major pdist (N, len(ks)): the same sums in the same order, without one
    scattered read per (k, neighbour) (cache misses at large N)."""
    N, T = pdist_rows.shape
    sums = np.empty((T, N))
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            s = 0.0
            for j in range(k):
                s += pdist_rows[I[p, j], t]
            sums[t, p] = s
    return sums


@njit(cache=True, parallel=True)
def _loop_plof(pdist, sums, ks, elki):  # pragma: no cover - numba
    T, N = sums.shape
    plof = np.empty((T, N))
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            r = pdist[t, p] * k / sums[t, p]
            if not np.isfinite(r):  # 0/0 or x/0: no evidence either way
                r = 1.0
            plof[t, p] = max(r, 1.0) if elki else r - 1.0
    return plof


@njit(cache=True, parallel=True)
def _loop_acc(plof, elki, acc):  # pragma: no cover - numba
    """acc[t] += Σ_p PLOF² in object order (continued from acc: blocks in order give the same sum)."""
    T, N = plof.shape
    for t in prange(T):
        a = acc[t]
        for p in range(N):  # in object order, as ELKI
            v = plof[t, p] - 1.0 if elki else plof[t, p]
            a += v * v
        acc[t] = a


@njit(cache=True, parallel=True)
def _loop_erf(plof, acc, n, lam, elki):  # pragma: no cover - numba
    """LoOP from PLOF and the Σ PLOF² over all n objects."""
    T, N = plof.shape
    out = np.empty((T, N))
    norm = np.empty(T)
    for t in range(T):
        nplof = lam * math.sqrt(acc[t] / n)
        if not nplof > 0:
            nplof = 1.0
        norm[t] = 1.0 / (nplof * math.sqrt(2.0))
    for p in prange(N):
        for t in range(T):
            if elki:  # ELKI's NormalDistribution.erf (its variant of Cody's erfc, _erf.py): its rounding, its ties
                out[t, p] = elki_erf((plof[t, p] - 1.0) * norm[t])
            else:
                out[t, p] = max(0.0, math.erf(plof[t, p] * norm[t]))
    return out


@njit(cache=True)
def _elki_knn_list(X, q, K):  # pragma: no cover - numba
    """Object indices of ELKI 0.7.1's kNN list of q (K entries incl. q, + ties), in ELKI's order: a linear
    scan in index order over squared distances summed in attribute order, into ELKI's kNN heap
    (:mod:`odeval.neighbors._elki_order`)."""
    N, d = X.shape
    hk = np.empty(K)
    hv = np.empty(K, np.int64)
    ties = np.empty(N, np.int64)
    size, nties, kdist = 0, 0, np.inf
    for o in range(N):
        s = 0.0
        for j in range(d):
            t = X[q, j] - X[o, j]
            s += t * t
        size, nties, kdist = heap_offer(hk, hv, ties, K, size, nties, kdist, s, o)
    out = np.empty(size + nties, np.int64)
    heap_drain(hk, hv, ties, size, nties, out)
    return out


@njit(cache=True, parallel=True)
def _elki_comparison_sums(X, D, I, S, k, pdist, sums):  # pragma: no cover - numba
    """Σ pdist over the first k non-self entries of ELKI's list, for objects whose k-th neighbour is tied.

    ELKI 0.7.1's kNN preprocessor computes the list of the first object (in index order) of each group of
    exact duplicates and shares it with the whole group; the comparison set of p is then the first k
    entries of that list other than p.
    """
    N = D.shape[0]
    for p in prange(N):
        if S[p, k - 1] <= k:
            continue  # no tie at the k-distance: the first k neighbours are unambiguous
        q = np.int64(p)
        j = 0
        while j < S[p, k - 1] and D[p, j] == 0.0:
            if I[p, j] < q:
                q = I[p, j]
            j += 1
        lst = _elki_knn_list(X, q, k + 1)
        s = 0.0
        c = 0
        for i in range(lst.shape[0]):
            if c == k:
                break
            o = lst[i]
            if o == p:
                continue
            s += pdist[o]
            c += 1
        sums[p] = s


def _pdist_block(state: BlockState) -> dict[str, Any]:
    """pdist of a block's objects (:mod:`odeval.detectors.blockwise`): :func:`_loop_pdist` on its rows."""
    pdist = _loop_pdist(state.block.distances, state.ks)
    return {"pdist": pdist, "pdist_t": np.ascontiguousarray(pdist.T)}


def _plof_block(state: BlockState) -> dict[str, Any]:
    """PLOF of a block's objects: :func:`_loop_sums` with the pdists of the block and of its halo."""
    d = state.data
    sums = _loop_sums(with_halo(d["pdist"], d["pdist_halo"]), state.halo.local, state.ks, state.block.n_objects)
    return {"plof": _loop_plof(d["pdist"], sums, state.ks, False)}


def _fold_plof_squares(acc: Any, plof: np.ndarray) -> np.ndarray:
    """Σ PLOF² continued over one more block, in object order (LoOP's normaliser, bit-identical)."""
    out = np.zeros(plof.shape[0]) if acc is None else acc.copy()
    _loop_acc(plof, False, out)
    return out


def _loop_block(state: BlockState) -> dict[str, Any]:
    """LoOP of a block's objects from their PLOF and the normaliser summed over all blocks."""
    d = state.data
    return {"raw": _loop_erf(d["plof"], d["acc"], state.block.n_total, float(state.det.lam), False)}


@register
class LoOP(Detector):
    """Local Outlier Probability.

    With S(p) the first k neighbours of p (no tie extension; ``kref = kcomp = k``):

    * ``pdist(p) = sqrt(Σ_{o ∈ S(p)} d(p, o)² / k)`` (the paper's λ·σ; λ cancels in the ratio below);
    * ``PLOF(p) = pdist(p) · k / Σ_{o ∈ S(p)} pdist(o) − 1`` (Eq. 6);
    * ``nPLOF = λ · sqrt(mean_p PLOF(p)²)`` (Eq. 7);
    * ``LoOP(p) = max(0, erf(PLOF(p) / (nPLOF · √2)))`` (Eq. 8).

    Parameters
    ----------
    lam : float, default 1.0
        λ, the significance multiplier of the normaliser. It only rescales the scores monotonically (ranks
        are unchanged). 1.0 is the value ELKI 0.7.1's ``ComputeKNNOutlierScores`` uses (the Campos et al.
        study); the ELKI CLI default is 2.0, the paper suggests 3.
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}, default "paper"
        ``"elki-0.7.1"`` reproduces ELKI 0.7.1's ``LoOP``: the density ratio is clipped to ≥ 1 *before* the
        normaliser is computed, ``nPLOF = λ · sqrt(mean_p (max(ratio, 1) − 1)²)``,
        ``LoOP = erf((max(ratio, 1) − 1) / (nPLOF √2))``. This gives the same ranking, but different values
        (the normaliser only sees positive deviations), and many exact zeros. It also reproduces which
        objects ELKI takes as "the first k" when several are tied at the k-distance (Euclidean metric): the
        order of its kNN heap (a linear scan in index order into ``DoubleIntegerDBIDKNNHeap``, lists shared
        between exact duplicates by ``MaterializeKNNPreprocessor``) — emulated for the objects with such a
        tie, at O(N log k) each. The ``"paper"`` variant takes tied objects in index order.
        ``"elki-0.7.1-cks"`` (ELKI's batch tool ``ComputeKNNOutlierScores``): the same, with "the first k"
        taken from the tool's materialised lists (a heap of capacity maxk + 2, docs/detectors.md). Both ELKI
        variants use ELKI's erf (Cody's approximation, :mod:`odeval.detectors._erf`).

    Notes
    -----
    Zero distances (§0.4): a ratio that is 0/0 or x/0 (all comparison neighbours have pdist 0) is taken
    as 1 (PLOF 0, score 0) in both variants, as ELKI does; a normaliser of 0 is replaced by 1. Never NaN.

    References
    ----------
    Kriegel, H.-P., Kröger, P., Schubert, E., Zimek, A. (2009). LoOP: local outlier probabilities. CIKM,
    1649–1652.
    """

    info = MethodInfo(name="LoOP", min_k=1, inverted=False, inlier_value=0.0, score_range=(0.0, 1.0),
                      reference="Kriegel, Kröger, Schubert, Zimek (2009), CIKM", scaling="probability")
    novelty = True

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        "lam": Number(1.0, low=0, low_open=True),
        "variant": VARIANT,
    }
    block_refusals = REFUSE_ELKI_VARIANTS

    def _block_steps(self) -> list[Step]:
        # the passes of _loop_all_k; the normaliser is a sum over all objects: a scan in object order
        return [Step(_pdist_block, (halo("pdist_t"),)),
                Step(_plof_block, (Exchange("scan", "plof", "acc", fold=_fold_plof_squares),)), Step(_loop_block)]

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        ks_arr = check_ks(ks, graph.n_objects, self.info, graph.k_max)
        elki = self.variant != MethodVariant.PAPER
        if self.variant == MethodVariant.ELKI_071_CKS:  # rows already in the order of ELKI's batch-tool lists
            g = cks_lists(graph, int(ks_arr.max())).graph
            return _loop_all_k(g.X, g.distances, g.indices, g.neighborhood_sizes(), ks_arr, self.lam, True, False)
        # ELKI's order among tied neighbours is emulated for its Euclidean linear scan only
        order = elki and str(graph.metric) == "euclidean"
        return _loop_all_k(graph.X, graph.distances, graph.indices, graph.neighborhood_sizes(), ks_arr, self.lam,
                           elki, order)

    def novelty_raw_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Novelty LoOP (variant "paper"): a query object q is compared with its first k *training* neighbours
        S(q); pdist(o) of the training objects and the normaliser nPLOF come from the training set only:

        ``PLOF(q) = pdist(q) · k / Σ_{o ∈ S(q)} pdist(o) − 1``, ``LoOP(q) = max(0, erf(PLOF(q) / (nPLOF √2)))``
        with ``nPLOF = λ · sqrt(mean_{p ∈ train} PLOF(p)²)`` (Kriegel et al. 2009, Eq. 6–8). Zero distances:
        a non-finite ratio is taken as 1, as in-sample.
        """
        if self.variant != MethodVariant.PAPER:
            raise NotImplementedError(f"LoOP: the novelty form is defined for variant='{MethodVariant.PAPER}' only "
                                      "(the ELKI variants emulate ELKI's in-sample tie order)")
        ks_arr = check_ks(ks, graph.n_objects + 1, self.info, query.k_max)
        if int(ks_arr.max()) > graph.k_max:
            raise ValueError(f"LoOP: k={int(ks_arr.max())} exceeds the training graph's k_max={graph.k_max}")
        kmax = int(ks_arr.max())
        sq_ref = np.cumsum(graph.distances[:, :kmax] ** 2, axis=1)  # left to right, as the in-sample kernel
        sq_q = np.cumsum(query.distances[:, :kmax] ** 2, axis=1)
        out = np.empty((ks_arr.size, query.n_queries))
        with np.errstate(divide="ignore", invalid="ignore"):
            for t, k in enumerate(ks_arr):
                k = int(k)
                pd_ref = np.sqrt(sq_ref[:, k - 1] / k)
                ratio_ref = pd_ref * k / pd_ref[graph.indices[:, :k]].sum(axis=1)
                plof_ref = np.where(np.isfinite(ratio_ref), ratio_ref, 1.0) - 1.0
                nplof = self.lam * math.sqrt(float(np.mean(plof_ref * plof_ref)))
                if not nplof > 0:
                    nplof = 1.0
                pd_q = np.sqrt(sq_q[:, k - 1] / k)
                ratio_q = pd_q * k / pd_ref[query.indices[:, :k]].sum(axis=1)
                plof_q = np.where(np.isfinite(ratio_q), ratio_q, 1.0) - 1.0
                out[t] = np.maximum(0.0, _erf(plof_q / (nplof * math.sqrt(2.0))))
        return out


def _erf(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return erf(x)
