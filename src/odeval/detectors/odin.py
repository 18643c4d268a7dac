"""ODIN: outlier detection using the in-degree of the kNN graph (Hautamäki, Kärkkäinen, Fränti 2004).

Semantics as ELKI 0.7.1 (``distance/ODIN.java``; ``shared/docs/elki-0.7.1-semantics.md`` §1.7): the
in-degree counts the objects q ≠ p whose tie-extended neighbourhood N_k(q) contains p, scaled by 1/k.
All k come from one pass over the graph (:func:`odeval.neighbors.in_degrees_all_k`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit

from odeval.detectors.base import VARIANT, Detector, MethodInfo, MethodVariant, check_ks, register
from odeval.detectors.blockwise import IN_EDGES, REFUSE_BATCH_TOOL, BlockState, Step, edges_step
from odeval.neighbors import in_degrees_all_k
from odeval.neighbors._elki_order import cks_lists

__all__ = ["ODIN"]


@njit(cache=True)
def _repeated_sums(deg, ks):  # pragma: no cover - numba
    """deg[t, p] copies of 1/ks[t] added one by one (ELKI's ``ODIN``: ``s += 1/k`` per in-edge)."""
    T, N = deg.shape
    out = np.empty((T, N))
    for t in range(T):
        inc = 1.0 / ks[t]
        table = np.zeros(deg[t].max() + 1)
        for c in range(1, table.shape[0]):
            table[c] = table[c - 1] + inc
        for p in range(N):
            out[t, p] = table[deg[t, p]]
    return out


def _odin_block(state: BlockState) -> dict[str, Any]:
    """ODIN of a block's objects from the in-edges it received (:mod:`odeval.detectors.blockwise`): integer
    in-degree counts, the same in any order, then divided by k as :meth:`ODIN.raw_scores_all_k` does."""
    b = state.block
    dst, _, km = state.data["in"]
    acc = np.zeros((b.k_max + 1) * b.n_objects, dtype=np.int64)
    np.add.at(acc, (km - 1) * b.n_objects + b.local(dst), 1)
    deg = np.cumsum(acc.reshape(b.k_max + 1, b.n_objects)[: b.k_max], axis=0)[state.ks - 1]
    return {"raw": deg / state.ks[:, None].astype(np.float64)}


@register
class ODIN(Detector):
    """ODIN: in-degree of the kNN graph, ``ODIN_k(p) = |{q ≠ p : p ∈ N_k(q)}| / k``.

    **Low = outlier** (``info.inverted``); :meth:`score_all_k` returns the negated value. N_k(q) includes
    the objects tied at q's k-distance and q's exact duplicates. Scores are multiples of 1/k, so there are
    many ties. The 1/k scaling (ELKI's) does not change rankings; the average raw score is ≈ 1.

    References
    ----------
    Hautamäki, V., Kärkkäinen, I., Fränti, P. (2004). Outlier detection using k-nearest neighbour graph.
    ICPR, 430–433.

    Parameters
    ----------
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}, default "paper"
        ``"paper"`` = ``"elki-0.7.1"``. ``"elki-0.7.1-cks"``: N_k(q) as ELKI 0.7.1's batch tool
        ``ComputeKNNOutlierScores`` serves it (ties on the stored distances, docs/detectors.md), 1/k added once
        per in-edge as ELKI does.
    """

    info = MethodInfo(name="ODIN", min_k=1, inverted=True, inlier_value=None, score_range=(0.0, np.inf),
                      reference="Hautamäki, Kärkkäinen, Fränti (2004), ICPR", scaling="linear_inversion")

    _parameter_constraints: ClassVar[dict[str, Any]] = {"variant": VARIANT}
    block_refusals = REFUSE_BATCH_TOOL

    def _block_steps(self) -> list[Step]:
        return [Step(edges_step, (IN_EDGES,)), Step(_odin_block)]

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        ks_arr = check_ks(ks, graph.n_objects, self.info, graph.k_max)
        if self.variant == MethodVariant.ELKI_071_CKS:  # ELKI's batch tool: ties decided on its stored distances
            graph = cks_lists(graph, int(ks_arr.max())).graph
        deg = in_degrees_all_k(graph, ks_arr)
        if self.variant == MethodVariant.ELKI_071_CKS:  # ELKI adds 1/k once per in-edge: the same rounding
            return _repeated_sums(deg, ks_arr)
        return deg / ks_arr[:, None].astype(np.float64)
