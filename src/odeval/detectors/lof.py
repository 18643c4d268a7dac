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

from odeval.detectors.base import Detector, MethodInfo, Options, check_ks, register

__all__ = ["LOF", "SimplifiedLOF"]


@njit(cache=True, parallel=True)
def _density_all_k(QD, QI, QS, D, ks, simplified, cks):  # pragma: no cover - numba
    """(dens, sizes), each (len(ks), M): lrd_k (or the simplified density) and |N_k(q)| of every query row.

    Rows (QD, QI, QS) are the neighbour lists of the scored objects — the graph's own rows in-sample, a
    :class:`~odeval.neighbors.QueryKNN` in novelty mode; ``D`` is the training graph, whose k-distances enter
    ``reach-dist(q, o) = max(d(q, o), k-dist(o))`` (plain d(q, o) when ``simplified``).
    ``cks``: ELKI 0.7.1 ``ComputeKNNOutlierScores`` — N_k with ties on the stored distances (its kNN
    sublists) and the (k+1)-distance of the neighbours in the reachability distance.
    """
    M = QD.shape[0]
    W = QD.shape[1]
    T = ks.shape[0]
    dens = np.empty((T, M))
    sizes = np.empty((T, M), np.int64)
    for p in prange(M):
        for t in range(T):
            k = ks[t]
            n = QS[p, k - 1]
            if cks:
                while n < W and QD[p, n] == QD[p, k - 1]:
                    n += 1
            sizes[t, p] = n
            s = 0.0
            for j in range(n):
                d = QD[p, j]
                if not simplified:
                    kd = D[QI[p, j], k] if cks else D[QI[p, j], k - 1]
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


def _lof_all_k(D, I, S, ks, simplified, cks):
    """(len(ks), N) LOF (or Simplified LOF) scores; two parallel passes over the objects, all k inside."""
    dens, sizes = _density_all_k(D, I, S, D, ks, simplified, cks)
    return _ratio_all_k(dens, sizes, I, dens)


def _novelty_scores(det: Detector, graph: Any, query: Any, ks: Sequence[int], simplified: bool) -> np.ndarray:
    """LOF / Simplified LOF of query objects against a training graph (docs/detectors.md, "Novelty mode")."""
    if getattr(det, "variant", "paper") == "elki-0.7.1-cks":
        raise NotImplementedError(f"{det.info.name}: variant 'elki-0.7.1-cks' (ELKI's batch tool) has no novelty "
                                  "form; use variant='paper'")
    ks_arr = check_ks(ks, graph.n_objects + 1, det.info, query.k_max)
    if int(ks_arr.max()) > graph.k_max:
        raise ValueError(f"{det.info.name}: k={int(ks_arr.max())} exceeds the training graph's k_max={graph.k_max}")
    dens_ref, _ = _density_all_k(graph.distances, graph.indices, graph.neighborhood_sizes(), graph.distances,
                                 ks_arr, simplified, False)
    dens_q, sizes_q = _density_all_k(query.distances, query.indices, query.neighborhood_sizes(), graph.distances,
                                     ks_arr, simplified, False)
    return _ratio_all_k(dens_q, sizes_q, query.indices, dens_ref)


_VARIANTS = ("paper", "elki-0.7.1", "elki-0.7.1-cks")


def _scores(det: Detector, graph: Any, ks: Sequence[int], simplified: bool, cks: bool = False) -> np.ndarray:
    ks_arr = check_ks(ks, graph.n_objects, det.info, graph.k_max)
    if cks:
        _check_cks_ks(det.info.name, ks_arr, graph)
    return _lof_all_k(graph.distances, graph.indices, graph.neighborhood_sizes(), ks_arr, simplified, cks)


def _check_cks_ks(name: str, ks_arr: np.ndarray, graph: Any) -> None:
    """The ComputeKNNOutlierScores variant reads the (k+1)-distance: the graph must hold k+1 neighbours."""
    k = int(ks_arr.max())
    if k + 1 > graph.k_max:
        raise ValueError(f"{name} (variant 'elki-0.7.1-cks') at k={k} reads the (k+1)-distance; build the graph "
                         f"with k_max ≥ {k + 1} (detector.required_k_max(k))")


@register
class LOF(Detector):
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
        correct (ties decided on the stored distances). It needs a graph with ``k_max ≥ k + 1``
        (:meth:`required_k_max`). A hybrid: neither LOF at k nor at k+1.

    References
    ----------
    Breunig, M. M., Kriegel, H.-P., Ng, R. T., Sander, J. (2000). LOF: identifying density-based local
    outliers. SIGMOD, 93–104.
    """

    info = MethodInfo(name="LOF", min_k=1, inverted=False, inlier_value=1.0, score_range=(0.0, np.inf),
                      reference="Breunig, Kriegel, Ng, Sander (2000), SIGMOD", scaling="ratio")
    novelty = True

    _parameter_constraints: ClassVar[dict[str, Any]] = {"variant": Options(_VARIANTS)}

    def required_k_max(self, k: int) -> int:
        return k + 1 if self.variant == "elki-0.7.1-cks" else k

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        return _scores(self, graph, ks, simplified=False, cks=self.variant == "elki-0.7.1-cks")

    def novelty_raw_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Novelty LOF of query objects q against the training set (Breunig et al. 2000, Def. 5–7, with the
        training objects' k-distances and lrds; scikit-learn's ``LocalOutlierFactor(novelty=True)``):
        ``lrd_k(q) = |N_k(q)| / Σ_{o ∈ N_k(q)} max(d(q, o), k-dist(o))``,
        ``LOF_k(q) = mean_{o ∈ N_k(q)} lrd_k(o) / lrd_k(q)``; N_k(q) ⊂ training set, ties included."""
        return _novelty_scores(self, graph, query, ks, simplified=False)


@register
class SimplifiedLOF(Detector):
    """Simplified LOF: LOF with the plain distance instead of the reachability distance.

    ``dens_k(p) = |N_k(p)| / Σ_{o ∈ N_k(p)} d(p, o)`` (the inverse *mean* distance, as ELKI's
    ``SimplifiedLOF``; +inf if the sum is 0), ``SLOF_k(p) = Σ_{o ∈ N_k(p)} dens_k(o) / (|N_k(p)| · dens_k(p))``,
    1 if ``dens_k(p) = +inf`` (Schubert, Zimek, Kriegel 2014, Section 4.1).

    Parameters
    ----------
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}, default "paper"
        Accepted for uniformity with the other methods; all three are identical (ELKI's batch tool is not
        affected by its k-distance off-by-one here).

    References
    ----------
    Schubert, E., Zimek, A., Kriegel, H.-P. (2014). Local outlier detection reconsidered: a generalized view
    on locality with applications to spatial, video, and network outlier detection. Data Mining and
    Knowledge Discovery 28(1), 190–237.
    """

    info = MethodInfo(name="SimplifiedLOF", min_k=1, inverted=False, inlier_value=1.0,
                      score_range=(0.0, np.inf), reference="Schubert, Zimek, Kriegel (2014), DAMI 28(1)",
                      scaling="ratio")
    novelty = True

    _parameter_constraints: ClassVar[dict[str, Any]] = {"variant": Options(_VARIANTS)}

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        return _scores(self, graph, ks, simplified=True)

    def novelty_raw_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Novelty Simplified LOF: ``dens_k(q) = |N_k(q)| / Σ_{o ∈ N_k(q)} d(q, o)`` over q's training
        neighbours, ``SLOF_k(q) = mean_{o ∈ N_k(q)} dens_k(o) / dens_k(q)`` with the training densities."""
        return _novelty_scores(self, graph, query, ks, simplified=True)
