"""kNN and kNNW: distance-based outlier scores from the k nearest neighbours.

* kNN (Ramaswamy, Rastogi and Shim 2000): the distance to the k-th nearest neighbour.
* kNNW (Angiulli and Pizzuti 2002, "weight"): the sum of the distances to the k nearest neighbours.

Semantics as ELKI 0.7.1 (``KNNOutlier``, ``KNNWeightOutlier``; ``shared/docs/elki-0.7.1-semantics.md`` §1.1,
§1.2): k excludes the query point, exact duplicates are neighbours at distance 0. Both are tie-independent.
All k come from one :class:`~odeval.neighbors.KNNGraph`: kNN reads column k−1 of the sorted distances, kNNW a
running (left-to-right) sum along the rows, the summation order of ELKI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from odeval.detectors.base import VARIANT, Detector, MethodInfo, MethodVariant, check_ks, register
from odeval.detectors.blockwise import REFUSE_BATCH_TOOL, BlockState, Step
from odeval.neighbors._elki_order import cks_lists

__all__ = ["KNN", "KNNW"]


@register
class KNN(Detector):
    """kNN outlier score: distance to the k-th nearest other object.

    ``score(p) = k-dist(p)`` (ties do not matter). Higher = more outlying; 0 for an object with at least k
    exact duplicates.

    References
    ----------
    Ramaswamy, S., Rastogi, R., Shim, K. (2000). Efficient algorithms for mining outliers from large data
    sets. SIGMOD, 427–438 (the score D^k(p), Section 2).

    Parameters
    ----------
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}, default "paper"
        ``"paper"`` = ``"elki-0.7.1"`` (ELKI's stand-alone ``KNNOutlier``). ``"elki-0.7.1-cks"`` reproduces
        ELKI 0.7.1's batch tool ``ComputeKNNOutlierScores`` (Campos et al. 2016), whose "KNN-k" is the
        (k+1)-distance (semantics doc §0.3), and the (N−1)-distance at k = N − 1 (docs/detectors.md).
    """

    info = MethodInfo.distance("kNN", "Ramaswamy, Rastogi, Shim (2000), SIGMOD")
    novelty = True

    _parameter_constraints: ClassVar[dict[str, Any]] = {"variant": VARIANT}
    block_refusals = REFUSE_BATCH_TOOL

    def _block_steps(self) -> list[Step]:
        return [Step(_knn_block)]  # the block's own rows, no exchange

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        ks_arr = check_ks(ks, graph.n_objects, self.info, graph.k_max)
        if self.variant == MethodVariant.ELKI_071_CKS:
            kd = cks_lists(graph, int(ks_arr.max())).kdist
            return np.ascontiguousarray(kd[:, ks_arr - 1].T)
        return np.ascontiguousarray(graph.distances[:, ks_arr - 1].T)

    def novelty_raw_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Novelty kNN score: the distance of a query object to its k-th nearest *training* object.

        For a training object x queried against the training set without it, this is x's in-sample score
        (k excludes the query point in both cases).
        """
        ks_arr = _novelty_ks(self, graph, query, ks)
        return np.ascontiguousarray(query.distances[:, ks_arr - 1].T)


def _novelty_ks(det: Detector, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
    """Validate ks for novelty scoring: k ≤ the number of training objects and ≤ the query's k_max; only the
    published ("paper") definition has a novelty form."""
    variant = getattr(det, "variant", MethodVariant.PAPER)
    if variant == MethodVariant.ELKI_071_CKS:
        raise NotImplementedError(f"{det.info.name}: variant '{MethodVariant.ELKI_071_CKS}' (ELKI's batch tool) has no "
                                  f"novelty form; use variant='{MethodVariant.PAPER}'")
    return check_ks(ks, graph.n_objects + 1, det.info, query.k_max)


def _knn_block(state: BlockState) -> dict[str, Any]:
    """kNN of a block's objects (:mod:`odeval.detectors.blockwise`)."""
    return {"raw": np.ascontiguousarray(state.block.distances[:, state.ks - 1].T)}


def _knnw_block(state: BlockState) -> dict[str, Any]:
    """kNNW of a block's objects, summed left to right as :meth:`KNNW.raw_scores_all_k`."""
    running = np.cumsum(state.block.distances[:, :state.k_max], axis=1)
    return {"raw": np.ascontiguousarray(running[:, state.ks - 1].T)}


@register
class KNNW(Detector):
    """kNNW outlier score ("weight"): the sum of the distances to the k nearest other objects.

    ``score(p) = Σ_{i=1..k} d(p, o_i)`` over the first k entries of p's sorted neighbour list (no tie
    extension; the sum does not depend on which tied objects are taken). Summed left to right, as
    ELKI's ``KNNWeightOutlier``.

    References
    ----------
    Angiulli, F., Pizzuti, C. (2002). Fast outlier detection in high dimensional spaces. PKDD, 15–27
    (the weight w_k(p), Definition 2).

    Parameters
    ----------
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}, default "paper"
        Accepted for uniformity with the other methods; all three are identical.
    """

    info = MethodInfo.distance("kNNW", "Angiulli, Pizzuti (2002), PKDD")
    novelty = True

    _parameter_constraints: ClassVar[dict[str, Any]] = {"variant": VARIANT}

    def _block_steps(self) -> list[Step]:
        return [Step(_knnw_block)]  # the block's own rows, no exchange (all variants: they are identical)

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        ks_arr = check_ks(ks, graph.n_objects, self.info, graph.k_max)
        kmax = int(ks_arr.max())
        running = np.cumsum(graph.distances[:, :kmax], axis=1)  # sequential left-to-right accumulation
        return np.ascontiguousarray(running[:, ks_arr - 1].T)

    def novelty_raw_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Novelty kNNW score: the sum of the distances of a query object to its k nearest training objects."""
        ks_arr = _novelty_ks(self, graph, query, ks)
        running = np.cumsum(query.distances[:, :int(ks_arr.max())], axis=1)
        return np.ascontiguousarray(running[:, ks_arr - 1].T)
