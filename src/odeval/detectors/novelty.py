"""Novelty mode: an odeval kNN method as a fit-on-train / score-new-objects scorer.

``fit(X_train)`` builds the training set's :class:`~odeval.neighbors.KNNGraph`; ``score(Q)`` finds every query
object's neighbours among the training objects (:func:`odeval.neighbors.query_knn`) and applies the method's
novelty form (:meth:`odeval.detectors.Detector.novelty_raw_scores_all_k`; definitions in docs/detectors.md,
"Novelty mode"). Same interface as :class:`odeval.detectors.adapters.EstimatorDetector`, so train/test
protocols (:mod:`odeval.protocols`) take either.

>>> det = NoveltyDetector("LOF", k=10).fit(X_train)   # doctest: +SKIP
>>> scores = det.score(X_test)                        # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from odeval._validation import check_data_matrix
from odeval.detectors.base import Detector, get_detector, novelty_methods, orient

__all__ = ["NoveltyDetector"]


class NoveltyDetector:
    """Score new objects with an odeval method against a training set (higher = more outlying).

    Parameters
    ----------
    method : str or Detector
        A registered method name (``"kNN"``, ``"LOF"``, ...) or a detector instance.
    k : int
        Neighbourhood size (training objects).
    metric : str, default "euclidean"
        Distance, as for :func:`odeval.neighbors.knn_graph`.
    **params
        Method parameters when ``method`` is a name.

    Raises
    ------
    ValueError
        If the method has no novelty form (the message lists those that have one).
    """

    def __init__(self, method: str | Detector, k: int, *, metric: str = "euclidean", **params: Any) -> None:
        det = get_detector(method, **params) if isinstance(method, str) else method
        if not isinstance(det, Detector):
            raise ValueError(f"method must be a method name or an odeval Detector, got {type(method).__name__}")
        if not getattr(det, "novelty", False):
            raise ValueError(f"{det.info.name} has no novelty (out-of-sample) form; methods that have one: "
                             f"{', '.join(novelty_methods())}")
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < det.info.min_k:
            raise ValueError(f"{det.info.name}: k must be an integer ≥ {det.info.min_k}, got {k!r}")
        self.detector = det
        self.k = int(k)
        self.metric = metric
        self.info = det.info
        self.name = det.info.name

    def params(self) -> dict[str, Any]:
        return {**self.detector.params(), "k": self.k, "metric": self.metric}

    def fit(self, X: Any, y: Any = None) -> NoveltyDetector:
        """Build the training graph of ``X`` (``y`` is ignored)."""
        from odeval.neighbors import knn_graph

        X = check_data_matrix(X, name="X (training data)")
        if self.k >= X.shape[0]:
            raise ValueError(f"{self.name}: k={self.k} needs more than {self.k} training objects, got {X.shape[0]}")
        self.graph_ = knn_graph(X, self.k, metric=self.metric)
        return self

    def score(self, X: Any) -> np.ndarray:
        """Novelty scores of the rows of ``X`` against the training set, shape (n,) float64."""
        from odeval.neighbors import query_knn

        if not hasattr(self, "graph_"):
            raise RuntimeError(f"{self.name}: call fit(X_train) before score(X)")
        X = check_data_matrix(X, name="X (test data)", min_rows=1)
        query = query_knn(self.graph_, X, self.k)
        raw = self.detector.novelty_raw_scores_all_k(self.graph_, query, [self.k])[0]
        return orient(raw, self.info)

    def __repr__(self) -> str:
        return f"NoveltyDetector({self.detector!r}, k={self.k}, metric={self.metric!r})"
