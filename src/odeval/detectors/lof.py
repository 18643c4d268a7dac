"""LOF and Simplified LOF: local density ratios over the tie-extended k-neighbourhood.

Semantics as ELKI 0.7.1 (``lof/LOF.java``, ``lof/SimplifiedLOF.java``; ``shared/docs/elki-0.7.1-semantics.md``
§1.3, §1.4, §0.4): N_k(p) are all objects other than p within p's k-distance (ties included, duplicates at
distance 0 included). All requested k are computed from one :class:`~odeval.neighbors.KNNGraph` by numba
kernels (parallel over objects).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit, prange

from odeval.detectors.base import Detector, MethodInfo, check_ks, check_variant, register
from odeval.neighbors._elki_order import cks_lists

__all__ = ["LOF", "SimplifiedLOF"]


@njit(cache=True, parallel=True)
def _lof_all_k(D, I, S, ks, simplified, KD):  # pragma: no cover - numba
    """(len(ks), N) LOF (or Simplified LOF) scores; two parallel passes over the objects, all k inside.

    ``KD`` (N, ≥ max k): the neighbours' "k-distance" for the reachability distance, column k−1 (the graph's
    k-distances, or what ELKI's batch tool reports, see :func:`odeval.neighbors._elki_order.cks_lists`).
    Sums run along the rows, in their order.
    """
    N = D.shape[0]
    T = ks.shape[0]
    out = np.empty((T, N))
    dens = np.empty((T, N))
    sizes = np.empty((T, N), np.int64)
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            n = S[p, k - 1]
            sizes[t, p] = n
            s = 0.0
            for j in range(n):
                d = D[p, j]
                if not simplified:
                    kd = KD[I[p, j], k - 1]
                    if kd > d:
                        d = kd
                s += d
            dens[t, p] = n / s if s > 0 else np.inf
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            lp = dens[t, p]
            if np.isinf(lp):
                out[t, p] = 1.0
                continue
            n = sizes[t, p]
            s = 0.0
            for j in range(n):
                s += dens[t, I[p, j]]
            out[t, p] = s / (lp * n)
    return out


_VARIANTS = ("paper", "elki-0.7.1", "elki-0.7.1-cks")


def _scores(det: Detector, graph: Any, ks: Sequence[int], simplified: bool, cks: bool = False) -> np.ndarray:
    ks_arr = check_ks(ks, graph.n_objects, det.info, graph.k_max)
    if cks:  # ELKI's batch tool: its sublists of one materialised list per object, in ELKI's order
        cl = cks_lists(graph, int(ks_arr.max()))
        g, kd = cl.graph, cl.kdist
    else:
        g, kd = graph, graph.distances
    return _lof_all_k(g.distances, g.indices, g.neighborhood_sizes(), ks_arr, simplified, kd)


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
        correct (ties decided on the stored distances, ELKI's heap order; docs/detectors.md). A hybrid:
        neither LOF at k nor at k+1.

    References
    ----------
    Breunig, M. M., Kriegel, H.-P., Ng, R. T., Sander, J. (2000). LOF: identifying density-based local
    outliers. SIGMOD, 93–104.
    """

    info = MethodInfo(name="LOF", min_k=1, inverted=False, inlier_value=1.0, score_range=(0.0, np.inf),
                      reference="Breunig, Kriegel, Ng, Sander (2000), SIGMOD")

    def __init__(self, variant: str = "paper") -> None:
        self.variant = check_variant("LOF", variant, _VARIANTS)

    def params(self) -> dict[str, Any]:
        return {"variant": self.variant}

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        return _scores(self, graph, ks, simplified=False, cks=self.variant == "elki-0.7.1-cks")


@register
class SimplifiedLOF(Detector):
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

    info = MethodInfo(name="SimplifiedLOF", min_k=1, inverted=False, inlier_value=1.0,
                      score_range=(0.0, np.inf), reference="Schubert, Zimek, Kriegel (2014), DAMI 28(1)")

    def __init__(self, variant: str = "paper") -> None:
        self.variant = check_variant("SimplifiedLOF", variant, _VARIANTS)

    def params(self) -> dict[str, Any]:
        return {"variant": self.variant}

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        return _scores(self, graph, ks, simplified=True, cks=self.variant == "elki-0.7.1-cks")
