"""LOF and Simplified LOF: local density ratios over the tie-extended k-neighbourhood.

Semantics as ELKI 0.7.1 (``lof/LOF.java``, ``lof/SimplifiedLOF.java``; ``shared/docs/elki-0.7.1-semantics.md``
§1.3, §1.4, §0.4): N_k(p) are all objects other than p within p's k-distance (ties included, duplicates at
distance 0 included). All requested k are computed from one :class:`~odeval.neighbors.KNNGraph` by numba
kernels (parallel over objects).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from odeval.detectors.base import VARIANT, Detector, MethodInfo, MethodVariant, check_ks, register
from odeval.detectors.blockwise import REFUSE_BATCH_TOOL, BlockState, Step, halo, kdist_step, with_halo
from odeval.neighbors._elki_order import cks_lists

__all__ = ["LOF", "SimplifiedLOF"]


@njit(cache=True, parallel=True)
def _density_all_k(QD, QI, QS, KD, ks, simplified):  # pragma: no cover - numba
    """(dens, sizes), each (len(ks), M): lrd_k (or the simplified density) and |N_k(q)| of every query row.

    Rows (QD, QI, QS) are the neighbour lists of the scored objects — the graph's own rows in-sample, a
    :class:`~odeval.neighbors.QueryKNN` in novelty mode; ``KD[o, k − 1]`` is the training object o's
    k-distance in ``reach-dist(q, o) = max(d(q, o), k-dist(o))`` (plain d(q, o) when ``simplified``): the
    graph's distances, or what ELKI's batch tool reports (:func:`odeval.neighbors._elki_order.cks_lists`).
    Sums run along the rows, in their order.
    """
    M = QD.shape[0]
    T = ks.shape[0]
    dens = np.empty((T, M))
    sizes = np.empty((T, M), np.int64)
    for p in prange(M):
        for t in range(T):
            k = ks[t]
            n = QS[p, k - 1]
            sizes[t, p] = n
            s = 0.0
            for j in range(n):
                d = QD[p, j]
                if not simplified:
                    kd = KD[QI[p, j], k - 1]
                    if kd > d:
                        d = kd
                s += d
            dens[t, p] = n / s if s > 0 else np.inf
    return dens, sizes


@njit(cache=True, parallel=True)
def _ratio_all_k(dens_q, sizes_q, I_q, dens_ref):  # pragma: no cover - numba
    """LOF_k(q) = mean_{o ∈ N_k(q)} dens_ref(o) / dens_q(q); 1 if dens_q(q) = +inf."""
    T, M = dens_q.shape
    out = np.empty((T, M))
    for p in prange(M):
        for t in range(T):
            lp = dens_q[t, p]
            if np.isinf(lp):
                out[t, p] = 1.0
                continue
            n = sizes_q[t, p]
            s = 0.0
            for j in range(n):
                s += dens_ref[t, I_q[p, j]]
            out[t, p] = s / (lp * n)
    return out


@njit(cache=True, parallel=True)
def _density_rows(QD, QI, QS, KD, ks, simplified):  # pragma: no cover - numba
    """:func:`_density_all_k`'s densities in object-major layout, (M, len(ks)), without the sizes (read from
    ``QS`` by :func:`_ratio_rows`): the same sums in the same order, so the same values. One object's densities
    for all k are contiguous, so the ratio pass reads each neighbour's row once per object instead of one scattered
    value per (k, neighbour): at N = 10⁶ the (len(ks), N) layout missed the cache on nearly every read."""
    M = QD.shape[0]
    T = ks.shape[0]
    dens = np.empty((M, T))
    for p in prange(M):
        for t in range(T):
            k = ks[t]
            n = QS[p, k - 1]
            s = 0.0
            for j in range(n):
                d = QD[p, j]
                if not simplified:
                    kd = KD[QI[p, j], k - 1]
                    if kd > d:
                        d = kd
                s += d
            dens[p, t] = n / s if s > 0 else np.inf
    return dens


@njit(cache=True, parallel=True)
def _ratio_rows(dens, QS, QI, ks):  # pragma: no cover - numba
    """:func:`_ratio_all_k` on the object-major densities of :func:`_density_rows` (same sums, same order)."""
    M, T = dens.shape
    out = np.empty((T, M))
    for p in prange(M):
        for t in range(T):
            lp = dens[p, t]
            if np.isinf(lp):
                out[t, p] = 1.0
                continue
            n = QS[p, ks[t] - 1]
            s = 0.0
            for j in range(n):
                s += dens[QI[p, j], t]
            out[t, p] = s / (lp * n)
    return out


def _lof_all_k(D, I, S, ks, simplified, KD):
    """(len(ks), N) LOF (or Simplified LOF) scores; two parallel passes over the objects, all k inside
    (:func:`_density_rows`, :func:`_ratio_rows`: the arithmetic of :func:`_density_all_k` and
    :func:`_ratio_all_k`, which the block steps and the novelty form use)."""
    dens = _density_rows(D, I, S, KD, ks, simplified)
    return _ratio_rows(dens, S, I, ks)


def _novelty_scores(det: Detector, graph: Any, query: Any, ks: Sequence[int], simplified: bool) -> np.ndarray:
    """LOF / Simplified LOF of query objects against a training graph (docs/detectors.md, "Novelty mode")."""
    if getattr(det, "variant", MethodVariant.PAPER) == MethodVariant.ELKI_071_CKS:
        raise NotImplementedError(f"{det.info.name}: variant '{MethodVariant.ELKI_071_CKS}' (ELKI's batch tool) has no "
                                  f"novelty form; use variant='{MethodVariant.PAPER}'")
    ks_arr = check_ks(ks, graph.n_objects + 1, det.info, query.k_max)
    if int(ks_arr.max()) > graph.k_max:
        raise ValueError(f"{det.info.name}: k={int(ks_arr.max())} exceeds the training graph's k_max={graph.k_max}")
    dens_ref, _ = _density_all_k(graph.distances, graph.indices, graph.neighborhood_sizes(), graph.distances,
                                 ks_arr, simplified)
    dens_q, sizes_q = _density_all_k(query.distances, query.indices, query.neighborhood_sizes(), graph.distances,
                                     ks_arr, simplified)
    return _ratio_all_k(dens_q, sizes_q, query.indices, dens_ref)


def _scores(det: Detector, graph: Any, ks: Sequence[int], simplified: bool, cks: bool = False) -> np.ndarray:
    ks_arr = check_ks(ks, graph.n_objects, det.info, graph.k_max)
    if cks:  # ELKI's batch tool: its sublists of one materialised list per object, in ELKI's order
        cl = cks_lists(graph, int(ks_arr.max()))
        g, kd = cl.graph, cl.kdist
    else:
        g, kd = graph, graph.distances
    return _lof_all_k(g.distances, g.indices, g.neighborhood_sizes(), ks_arr, simplified, kd)


def _density_block(state: BlockState) -> dict[str, Any]:
    """Densities of a block's objects (:mod:`odeval.detectors.blockwise`): :func:`_density_all_k` on its rows,
    LOF with the k-distances of the block and of its halo (``kd``, ``kd_halo``)."""
    b = state.block
    simplified = state.det._simplified
    KD = np.zeros((1, state.k_max)) if simplified else np.ascontiguousarray(
        np.vstack([state.data["kd"], state.data["kd_halo"]]))
    dens, sizes = _density_all_k(b.distances, state.halo.local, b.neighborhood_sizes(), KD, state.ks, simplified)
    return {"dens": dens, "sizes": sizes, "dens_t": np.ascontiguousarray(dens.T)}


def _ratio_block(state: BlockState) -> dict[str, Any]:
    """The ratios of a block's objects: :func:`_ratio_all_k` with the densities of the block and of its halo."""
    d = state.data
    return {"raw": _ratio_all_k(d["dens"], d["sizes"], state.halo.local, with_halo(d["dens"], d["dens_halo"]))}


class _LOFFamily(Detector):
    """LOF and Simplified LOF: one code path, the density (``_simplified``) differs."""

    _simplified: ClassVar[bool]
    novelty = True

    _parameter_constraints: ClassVar[dict[str, Any]] = {"variant": VARIANT}
    block_refusals = REFUSE_BATCH_TOOL

    def _block_steps(self) -> list[Step]:
        # the two passes of _lof_all_k, the densities exchanged between them (LOF: the k-distances before)
        density = [Step(_density_block, (halo("dens_t"),)), Step(_ratio_block)]
        return density if self._simplified else [Step(kdist_step, (halo("kd"),)), *density]

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        return _scores(self, graph, ks, simplified=self._simplified, cks=self.variant == MethodVariant.ELKI_071_CKS)

    def novelty_raw_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Novelty scores of query objects q against the training set, with the training objects' k-distances
        and densities; N_k(q) ⊂ training set, ties included.

        LOF (Breunig et al. 2000, Def. 5–7; scikit-learn's ``LocalOutlierFactor(novelty=True)``):
        ``lrd_k(q) = |N_k(q)| / Σ_{o ∈ N_k(q)} max(d(q, o), k-dist(o))``,
        ``LOF_k(q) = mean_{o ∈ N_k(q)} lrd_k(o) / lrd_k(q)``. Simplified LOF:
        ``dens_k(q) = |N_k(q)| / Σ_{o ∈ N_k(q)} d(q, o)``, ``SLOF_k(q) = mean_{o ∈ N_k(q)} dens_k(o) / dens_k(q)``.
        """
        return _novelty_scores(self, graph, query, ks, simplified=self._simplified)


@register
class LOF(_LOFFamily):
    """Local Outlier Factor.

    ``reach-dist_k(p, o) = max(d(p, o), k-dist(o))``,
    ``lrd_k(p) = |N_k(p)| / Σ_{o ∈ N_k(p)} reach-dist_k(p, o)``,
    ``LOF_k(p) = Σ_{o ∈ N_k(p)} lrd_k(o) / (|N_k(p)| · lrd_k(p))`` (Breunig et al. 2000, Definitions 5–7).

    N_k(p) includes every object tied at the k-distance. Duplicates (§0.4 of the semantics doc, as ELKI):
    ``lrd = +inf`` when all reach-distances are 0; ``LOF = 1`` when ``lrd(p) = +inf``; ``LOF = +inf`` when
    some neighbour has ``lrd = +inf`` and ``lrd(p)`` is finite. Never NaN.

    Parameters
    ----------
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}, default "paper"
        ``"paper"`` and ``"elki-0.7.1"`` are identical (ELKI's stand-alone ``LOF`` is the published
        definition). ``"elki-0.7.1-cks"`` reproduces ELKI 0.7.1's batch tool ``ComputeKNNOutlierScores``
        (used by Campos et al. 2016), whose kNN sublists return the (k+1)-distance as "k-distance"
        (semantics doc §0.3): ``reach-dist(p, o) = max(d(p, o), (k+1)-dist(o))``, with N_k(p) itself
        correct (ties decided on the stored distances, ELKI's heap order; docs/detectors.md). A hybrid:
        neither LOF at k nor at k+1.

    References
    ----------
    Breunig, M. M., Kriegel, H.-P., Ng, R. T., Sander, J. (2000). LOF: identifying density-based local
    outliers. SIGMOD, 93–104.
    """

    info = MethodInfo.ratio("LOF", "Breunig, Kriegel, Ng, Sander (2000), SIGMOD")
    _simplified = False


@register
class SimplifiedLOF(_LOFFamily):
    """Simplified LOF: LOF with the plain distance instead of the reachability distance.

    ``dens_k(p) = |N_k(p)| / Σ_{o ∈ N_k(p)} d(p, o)`` (the inverse *mean* distance, as ELKI's
    ``SimplifiedLOF``; +inf if the sum is 0), ``SLOF_k(p) = Σ_{o ∈ N_k(p)} dens_k(o) / (|N_k(p)| · dens_k(p))``,
    1 if ``dens_k(p) = +inf`` (Schubert, Zimek, Kriegel 2014, Section 4.1).

    Parameters
    ----------
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}, default "paper"
        ``"paper"`` = ``"elki-0.7.1"``. ``"elki-0.7.1-cks"``: N_k(p) as ELKI 0.7.1's batch tool
        ``ComputeKNNOutlierScores`` serves it (ties decided on the stored distances, docs/detectors.md).

    References
    ----------
    Schubert, E., Zimek, A., Kriegel, H.-P. (2014). Local outlier detection reconsidered: a generalized view
    on locality with applications to spatial, video, and network outlier detection. Data Mining and
    Knowledge Discovery 28(1), 190–237.
    """

    info = MethodInfo.ratio("SimplifiedLOF", "Schubert, Zimek, Kriegel (2014), DAMI 28(1)")
    _simplified = True
