"""Score one method at the requested k on a kNN graph: the one scoring path of odeval.

``odeval score``, ``odeval evaluate`` (through the study runner's rules) and the study runner all call
:func:`plan_ks` and :func:`score_ks`, so the same rules apply everywhere:

* k values are given in the one k syntax (:mod:`odeval._krange`) and capped at N − 1 *before* expanding;
* a k below the method's minimum (``MethodInfo.min_k``), a k ≥ N, or a k for which the graph holds too few
  neighbours (``Detector.required_k_max``) is *skipped* with a reason, recorded as ``{k text: reason}``;
* a k whose scores contain NaN is skipped with the positions;
* scores are oriented by :func:`odeval.detectors.base.orient` only (public: higher = more outlying);
* ±inf scores (LOF-like methods on duplicates) are kept; ranking them uses
  :func:`odeval.measures.finite_for_ranking` (the evaluation step, :func:`odeval.measures.evaluate_scoring`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from odeval._krange import format_ks, parse_k_range
from odeval.detectors.base import Detector

__all__ = ["KPlan", "ScoredKs", "plan_ks", "required_graph_k", "score_ks", "skipped_lines"]


@dataclass
class KPlan:
    """The k values a method will actually be scored at, and the skipped ones with their reason."""

    ks: list[int]
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass
class ScoredKs:
    """Scores of one method: ``scores[i]`` is the scoring at ``ks[i]`` (public orientation unless raw)."""

    method: str
    ks: list[int]
    scores: np.ndarray
    skipped: dict[str, str] = field(default_factory=dict)


def plan_ks(detector: Detector, ks: Any, n_objects: int, k_max: int | None = None) -> KPlan:
    """Which of the requested ``ks`` can be computed for ``detector`` on ``n_objects`` objects.

    Parameters
    ----------
    detector : Detector
    ks : k specification
        Anything :func:`odeval._krange.parse_k_range` accepts (``"1..100"``, ``"1:100:5"``, ``[1, 5]``, ...).
    n_objects : int
        N; k counts neighbours other than the query point, so k ≤ N − 1.
    k_max : int, optional
        Neighbours the kNN graph holds (``graph.k_max``); k needing more are skipped.
    """
    rng = parse_k_range(ks)
    info = detector.info
    name = info.name
    skipped: dict[str, str] = {}
    low = rng.capped(info.min_k - 1) if info.min_k > 1 else None
    if low is not None:
        skipped[str(low)] = f"{name} is defined for k ≥ {info.min_k}"
    high = rng.above(n_objects)
    if high is not None:
        skipped[str(high)] = f"k ≥ N = {n_objects} objects (k counts neighbours other than the query point)"
    usable = [k for k in rng.values(upper=n_objects - 1) if k >= info.min_k]
    if k_max is not None:
        short = [k for k in usable if detector.required_k_max(k) > k_max]
        if short:
            skipped[format_ks(short)] = (f"{name} at k={short[0]} needs {detector.required_k_max(short[0])} "
                                         f"neighbours; the graph holds {k_max}")
            usable = [k for k in usable if detector.required_k_max(k) <= k_max]
    return KPlan(ks=usable, skipped=skipped)


def required_graph_k(detector: Detector, ks: Any, n_objects: int) -> int:
    """Neighbours a kNN graph needs so that every computable k of ``ks`` can be scored (≥ 1, ≤ N − 1)."""
    plan = plan_ks(detector, ks, n_objects)
    need = max((detector.required_k_max(k) for k in plan.ks), default=1)
    return max(1, min(need, n_objects - 1))


def score_ks(detector: Detector, graph: Any, ks: Any, *, raw: bool = False) -> ScoredKs:
    """Score ``detector`` at every computable k of ``ks`` on ``graph``; see the module docstring.

    Returns
    -------
    ScoredKs
        ``scores`` has shape (len(ks), N): public scores (higher = more outlying, via ``orient``), or the
        method's raw scores with ``raw=True``. ``skipped`` maps k (text) → reason.
    """
    n = int(graph.n_objects)
    plan = plan_ks(detector, ks, n, int(graph.k_max))
    if not plan.ks:
        return ScoredKs(detector.info.name, [], np.empty((0, n)), plan.skipped)
    scores = detector.raw_scores_all_k(graph, plan.ks) if raw else detector.score_all_k(graph, plan.ks)
    keep = []
    for i, k in enumerate(plan.ks):
        nan = np.isnan(scores[i])
        if nan.any():
            bad = np.flatnonzero(nan)
            plan.skipped[str(k)] = f"NaN scores for {bad.size} object(s), first at {bad[:5].tolist()}"
        else:
            keep.append(i)
    return ScoredKs(detector.info.name, [plan.ks[i] for i in keep], scores[keep], plan.skipped)


def skipped_lines(method: str, skipped: dict[str, str]) -> list[str]:
    """Human-readable lines ``"LDOF: skipped k=1 (LDOF is defined for k ≥ 2)"``, one per reason."""
    return [f"{method}: skipped k={ks} ({reason})" for ks, reason in skipped.items()]

