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

Streaming (:func:`stream_ks`): the k values are scored in chunks of at most :func:`k_chunk` k, so a method
never holds more than ``chunk_bytes`` of scores (``chunk · N · 8`` bytes, plus the detector's temporaries of
that chunk) however many k are requested; each k is handed over as it is produced and can be evaluated and
dropped. A chunk is computed by the same ``score_all_k`` call as the whole range, and a detector's score at k
does not depend on which other k are requested, so the numbers are identical to :func:`score_ks` (tested for
all methods) — except the "elki-0.7.1-cks" variants (``Detector.depends_on_k_range``), which are always
scored in one chunk. With the default budget (1 GiB) a study at N ≤ 1.3·10⁶ and k = 1..100 is one
chunk, so no work is repeated; beyond it, methods whose all-k cost grows with the largest k (LDOF, COF,
FastABOD, INFLO) repeat the neighbourhoods below each chunk's first k (docs/scaling.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from odeval._key import ScoringKey
from odeval._krange import format_ks, parse_k_range
from odeval.detectors.base import Detector

__all__ = ["DEFAULT_CHUNK_BYTES", "KPlan", "ScoreColumns", "ScoredKs", "k_chunk", "plan_ks", "required_graph_k",
           "score_columns", "score_ks", "stream_ks"]

#: Default bound on the scores of one method held at once by :func:`stream_ks` (bytes): 1 GiB.
DEFAULT_CHUNK_BYTES = 1 << 30


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


def k_chunk(n_objects: int, n_ks: int, chunk_bytes: int | None = DEFAULT_CHUNK_BYTES) -> int:
    """How many k :func:`stream_ks` scores at once: ``chunk_bytes // (8 · N)`` float64 score rows, at least 1
    and at most ``n_ks`` (all of them when ``chunk_bytes`` is None)."""
    if chunk_bytes is None:
        return max(1, int(n_ks))
    if isinstance(chunk_bytes, bool) or not isinstance(chunk_bytes, int) or chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be a positive integer, got {chunk_bytes!r}")
    return max(1, min(int(n_ks), chunk_bytes // (8 * max(1, int(n_objects)))))


def stream_ks(detector: Detector, graph: Any, ks: Any, *, raw: bool = False,
              chunk_bytes: int | None = DEFAULT_CHUNK_BYTES) -> tuple[KPlan, Iterator[tuple[int, np.ndarray]]]:
    """Score ``detector`` at every computable k of ``ks``, one chunk of k at a time; see the module docstring.

    Returns
    -------
    (KPlan, iterator)
        The plan (``plan.ks`` the k that will be attempted; ``plan.skipped`` the k skipped, k text → reason)
        and an iterator of ``(k, scores)`` in increasing k, ``scores`` of shape (N,) (public orientation
        unless ``raw``). A k whose scores hold NaN is not yielded; it is added to ``plan.skipped`` as the
        iteration reaches it. At most :func:`k_chunk` score rows are alive inside the iterator at a time.
    """
    n = int(graph.n_objects)
    plan = plan_ks(detector, ks, n, int(graph.k_max))
    step = k_chunk(n, len(plan.ks), None if detector.depends_on_k_range else chunk_bytes)
    todo = list(plan.ks)

    def produce() -> Iterator[tuple[int, np.ndarray]]:
        for start in range(0, len(todo), step):
            chunk = todo[start:start + step]
            scores = detector.raw_scores_all_k(graph, chunk) if raw else detector.score_all_k(graph, chunk)
            for i, k in enumerate(chunk):
                nan = np.isnan(scores[i])
                if nan.any():
                    bad = np.flatnonzero(nan)
                    plan.skipped[str(k)] = f"NaN scores for {bad.size} object(s), first at {bad[:5].tolist()}"
                else:
                    yield k, scores[i]
            del scores

    return plan, produce()


def score_ks(detector: Detector, graph: Any, ks: Any, *, raw: bool = False) -> ScoredKs:
    """Score ``detector`` at every computable k of ``ks`` on ``graph``; see the module docstring.

    All k are scored in one call (the whole (len(ks), N) matrix is returned); :func:`stream_ks` gives the same
    scores one k at a time with bounded memory.

    Returns
    -------
    ScoredKs
        ``scores`` has shape (len(ks), N): public scores (higher = more outlying, via ``orient``), or the
        method's raw scores with ``raw=True``. ``skipped`` maps k (text) → reason.
    """
    n = int(graph.n_objects)
    plan, it = stream_ks(detector, graph, ks, raw=raw, chunk_bytes=None)
    got = list(it)
    scores = np.array([s for _, s in got]) if got else np.empty((0, n))
    return ScoredKs(detector.info.name, [k for k, _ in got], scores, plan.skipped)


@dataclass
class ScoreColumns:
    """The scorings of several methods on one kNN graph, one row per computed (method, k): a score table's body.

    ``keys[i]`` names row ``i`` of ``scores`` (shape (C, N); public orientation unless ``raw``); ``skipped`` maps
    each method to its skipped k (k text → reason), as :func:`stream_ks` records them.
    """

    keys: list[ScoringKey]
    scores: np.ndarray
    skipped: dict[str, dict[str, str]]
    raw: bool = False

    @property
    def ks(self) -> list[int]:
        """The distinct k of the columns, increasing."""
        return sorted({int(key.k) for key in self.keys if key.k is not None})


def score_columns(detectors: Iterable[Detector], graph: Any, ks: Any, *, raw: bool = False,
                  on_skipped: Callable[[str, dict[str, str]], None] | None = None) -> ScoreColumns:
    """Score every detector at every computable k of ``ks`` on ``graph`` (:func:`stream_ks`, one method after
    the other), named by :class:`~odeval._key.ScoringKey` (method and k: ``LOF-010``).

    The matrix is filled k by k as the chunks stream in: no second copy of it is ever made. ``on_skipped(method,
    skipped)`` is called after each method with its skipped k (possibly empty).
    """
    n = int(graph.n_objects)
    streams = [(det, *stream_ks(det, graph, ks, raw=raw)) for det in detectors]
    scores = np.empty((sum(len(plan.ks) for _, plan, _ in streams), n))
    keys: list[ScoringKey] = []
    skipped: dict[str, dict[str, str]] = {}
    for det, plan, produced in streams:
        for k, row in produced:
            scores[len(keys)] = row
            keys.append(ScoringKey.make(det.info.name, k=k))
        skipped[det.info.name] = plan.skipped
        if on_skipped is not None:
            on_skipped(det.info.name, plan.skipped)
    return ScoreColumns(keys, scores[:len(keys)], skipped, raw)  # a k with NaN scores was skipped

