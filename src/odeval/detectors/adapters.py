"""Adapters: any scikit-learn-style outlier estimator as an odeval scorer (higher = more outlying).

scikit-learn's ``score_samples`` and ``decision_function`` are "higher = more normal" (IsolationForest,
OneClassSVM, LocalOutlierFactor with ``novelty=True``, EllipticEnvelope, ...): the adapter negates them.
PyOD detectors' ``decision_function`` is already "higher = more outlying": the adapter keeps it. Fitting and
scoring may use different data (train/test protocols, EM/MV), and a seed is passed to the estimator's
``random_state``.

>>> from sklearn.ensemble import IsolationForest
>>> det = wrap_estimator(IsolationForest(n_estimators=50), seed=0)
>>> scores = det.fit(X_train).score(X_test)          # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np

from odeval._validation import check_data_matrix, check_returned_scores
from odeval.detectors.base import MethodInfo, orient

__all__ = ["EstimatorDetector", "wrap_estimator"]

_METHODS = ("auto", "score_samples", "decision_function")


def _is_pyod(estimator: Any) -> bool:
    """A PyOD detector: from the pyod package, or a subclass of its ``BaseDetector`` (a user's own PyOD model)."""
    # by the modules of its classes: never imports pyod for a scikit-learn estimator
    return any(c.__module__.split(".")[0] == "pyod" for c in type(estimator).__mro__)


class EstimatorDetector:
    """A fitted-then-scored outlier estimator whose scores are oriented higher = more outlying.

    Parameters
    ----------
    estimator : object
        Unfitted estimator with ``fit(X)`` and ``score_samples(X)`` and/or ``decision_function(X)``. It is
        cloned on :meth:`fit` (``sklearn.base.clone``), so the object passed in is never modified.
    seed : int, optional
        Passed as ``random_state`` if the estimator has that parameter (IsolationForest, PyOD's IForest,
        ...). None keeps the estimator's own setting.
    method : {"auto", "score_samples", "decision_function"}
        Which method gives the scores. "auto": PyOD detectors → ``decision_function``; otherwise
        ``score_samples`` if present, else ``decision_function``.
    higher_is_outlier : bool, optional
        Orientation of the chosen method's output. Default: True for PyOD detectors, False otherwise
        (scikit-learn's convention), in which case the output is negated.
    name : str, optional
        Display name; default the estimator's class name.
    clone : bool, default True
        Fit a clone of ``estimator`` (the object passed in is never modified). False fits ``estimator`` itself
        (a study unit builds a fresh one per scoring, so a clone would only cost time).

    Attributes
    ----------
    estimator_ : object
        The fitted clone (after :meth:`fit`).
    info : MethodInfo
        ``inverted=False`` (scores are already oriented), ``min_k=0`` (no neighbourhood size),
        ``inlier_value=None``.
    """

    def __init__(self, estimator: Any, *, seed: int | None = None, method: str = "auto",
                 higher_is_outlier: bool | None = None, name: str | None = None, clone: bool = True) -> None:
        if not hasattr(estimator, "fit"):
            raise ValueError(f"estimator {estimator!r} has no fit method")
        if method not in _METHODS:
            raise ValueError(f"method must be one of {', '.join(_METHODS)}, got {method!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
            raise ValueError(f"seed must be an integer or None, got {seed!r}")
        pyod = _is_pyod(estimator)
        if method == "auto":
            if pyod or not hasattr(estimator, "score_samples"):
                method = "decision_function"
            else:
                method = "score_samples"
        if not hasattr(estimator, method):
            hint = " (LocalOutlierFactor scores new data only with novelty=True)" if type(
                estimator).__name__ == "LocalOutlierFactor" else "; choose another `method`"
            raise ValueError(f"{type(estimator).__name__} has no {method} method{hint}")
        self.estimator = estimator
        self.clone = bool(clone)
        self.pyod = pyod
        self.seed = None if seed is None else int(seed)
        self.method = method
        self.higher_is_outlier = pyod if higher_is_outlier is None else bool(higher_is_outlier)
        self.name = name or type(estimator).__name__
        self.info = MethodInfo(name=self.name, min_k=0, inverted=not self.higher_is_outlier, inlier_value=None,
                               score_range=(-np.inf, np.inf), reference=f"{type(estimator).__module__}."
                               f"{type(estimator).__qualname__}")

    def params(self) -> dict[str, Any]:
        """The estimator's parameters (``get_params(deep=False)`` when available) plus seed and method."""
        p: dict[str, Any] = {}
        if hasattr(self.estimator, "get_params"):
            p.update({k: v for k, v in self.estimator.get_params(deep=False).items()})
        if self.seed is not None:
            p["random_state"] = self.seed
        p["score_method"] = self.method
        return p

    def _clone(self) -> Any:
        if not self.clone:
            est = self.estimator
            if self.seed is not None:
                self._set_seed(est)
            return est
        try:
            from sklearn.base import clone

            est = clone(self.estimator)
        except Exception:  # not a scikit-learn compatible estimator: deep copy instead
            import copy

            est = copy.deepcopy(self.estimator)
        if self.seed is not None:
            self._set_seed(est)
        return est

    def _set_seed(self, est: Any) -> None:
        if hasattr(est, "get_params") and "random_state" in est.get_params(deep=False):
            est.set_params(random_state=self.seed)
        elif hasattr(est, "random_state") and not hasattr(est, "get_params"):
            est.random_state = self.seed
        else:
            raise ValueError(f"{self.name}: a seed was given but the estimator has no random_state parameter")

    def fit(self, X: Any, y: Any = None) -> EstimatorDetector:
        """Fit a clone of the estimator on ``X`` (unsupervised; ``y`` is ignored)."""
        X = check_data_matrix(X, name="X (training data)")
        est = self._clone()
        est.fit(X)
        self.estimator_ = est
        self.n_features_in_ = X.shape[1]
        return self

    def score(self, X: Any) -> np.ndarray:
        """Outlier scores of the rows of ``X`` (higher = more outlying), shape (n,) float64."""
        if not hasattr(self, "estimator_"):
            raise RuntimeError(f"{self.name}: call fit(X_train) before score(X)")
        X = check_data_matrix(X, name="X (test data)", min_rows=1)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"{self.name}: X has {X.shape[1]} attributes, the model was fitted on "
                             f"{self.n_features_in_}")
        try:
            raw = getattr(self.estimator_, self.method)(X)
        except AttributeError as exc:  # e.g. LocalOutlierFactor(novelty=False).score_samples
            raise ValueError(f"{self.name}: {self.method} is not available ({exc}); for LocalOutlierFactor "
                             "use novelty=True to score new data") from None
        return orient(check_returned_scores(raw, X.shape[0], where=f"{self.name}.{self.method}"), self.info)

    def training_scores(self, X: Any) -> np.ndarray:
        """Fit on ``X`` and score ``X`` the unsupervised way, higher = more outlying, shape (n,) float64.

        A PyOD detector gives its own training scores, ``decision_scores_`` (what PyOD defines as the outlier
        scores of the training data: its kNN methods leave each point out of its own neighbourhood, and no
        second pass over the data is made); any other estimator gives :meth:`score` of ``X`` after :meth:`fit`.
        NaN/inf scores or a wrong number of them raise ``ValueError`` naming the estimator.
        """
        self.fit(X)
        if self.pyod and self.method == "decision_function" and hasattr(self.estimator_, "decision_scores_"):
            raw = self.estimator_.decision_scores_
            return orient(check_returned_scores(raw, np.shape(X)[0], where=f"{self.name}.decision_scores_"),
                          self.info)
        return self.score(X)

    def fit_score(self, X: Any) -> np.ndarray:
        """:meth:`fit` on ``X``, then :meth:`score` the same ``X``."""
        return self.fit(X).score(X)

    def __repr__(self) -> str:
        return f"EstimatorDetector({self.estimator!r}, seed={self.seed!r}, method={self.method!r})"


def wrap_estimator(estimator: Any, *, seed: int | None = None, method: str = "auto",
                   higher_is_outlier: bool | None = None, name: str | None = None,
                   clone: bool = True) -> EstimatorDetector:
    """Wrap a scikit-learn-style (or PyOD) outlier estimator; see :class:`EstimatorDetector`."""
    return EstimatorDetector(estimator, seed=seed, method=method, higher_is_outlier=higher_is_outlier, name=name,
                             clone=clone)
