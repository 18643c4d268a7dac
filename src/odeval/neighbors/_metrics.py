"""Metric resolution for :func:`odeval.neighbors.knn_graph`: names, aliases and exact pairwise evaluation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Metric", "resolve_metric"]

_ALIASES = {
    "euclidean": "euclidean",
    "l2": "euclidean",
    "manhattan": "cityblock",
    "cityblock": "cityblock",
    "l1": "cityblock",
    "taxicab": "cityblock",
    "chebyshev": "chebyshev",
    "linf": "chebyshev",
    "infinity": "chebyshev",
    "maximum": "chebyshev",
    "minkowski": "minkowski",
    "cosine": "cosine",
}

# scipy.spatial.distance metrics that are evaluated directly (not via a dot-product expansion) and are
# defined for real-valued vectors; boolean-only metrics are deliberately left out.
_SCIPY_REAL = {
    "braycurtis", "canberra", "chebyshev", "cityblock", "correlation", "cosine", "euclidean", "jensenshannon",
    "minkowski", "seuclidean", "sqeuclidean", "mahalanobis",
}


@dataclass(frozen=True)
class Metric:
    """A resolved distance: canonical ``name`` (scipy spelling) and its parameters.

    ``name == "euclidean"`` is special-cased by the graph builder: neighbour keys are squared distances
    (ties are decided on them, as ELKI does) and final values are ``sqrt`` of the key. Every other metric
    uses the distance itself as the key.
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """Human-readable name for provenance, e.g. ``"minkowski(p=3)"``."""
        if not self.params:
            return self.name
        inner = ", ".join(f"{k}={v!r}" if not isinstance(v, np.ndarray) else f"{k}=<array>"
                          for k, v in sorted(self.params.items()))
        return f"{self.name}({inner})"

    def fit_to(self, X: np.ndarray) -> Metric:
        """This metric with the data-derived parameters scipy would otherwise estimate per call, fixed from X.

        ``seuclidean`` without ``V`` and ``mahalanobis`` without ``VI``: scipy's ``cdist`` estimates them from
        the rows of each call (``vstack([XA, XB])``), so a blocked graph would use a different V for every
        block. Here V = var(X, ddof=1) and VI = inv(cov(X)) of the whole data set, once.
        """
        if self.name == "seuclidean" and "V" not in self.params:
            return Metric(self.name, {**self.params, "V": np.var(X, axis=0, ddof=1)})
        if self.name == "mahalanobis" and "VI" not in self.params:
            try:
                VI = np.linalg.inv(np.cov(X.T)).T
            except np.linalg.LinAlgError as exc:
                raise ValueError("metric 'mahalanobis' needs an invertible covariance of the data (pass VI= "
                                 "in metric_params otherwise)") from exc
            return Metric(self.name, {**self.params, "VI": VI})
        return self

    def pairwise(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        """Exact distances between all rows of A and all rows of B, shape (len(A), len(B)).

        Evaluated by scipy's direct loops (sum over coordinate differences), never by a dot-product
        expansion. The Euclidean graph builder does not use this (it has its own exact kernel).
        """
        from scipy.spatial import distance as _sd  # lazy: ~0.25 s of every odeval start-up otherwise

        D = _sd.cdist(A, B, metric=self.name, **self.params)
        bad = ~np.isfinite(D)
        if bad.any():
            r, c = np.nonzero(bad)
            raise ValueError(
                f"metric {self.label!r} is undefined (NaN/inf) between object pairs such as "
                f"({int(r[0])}, {int(c[0])}) of the current block; for 'cosine'/'correlation' this means an "
                "all-zero (or constant) row"
            )
        return D

    def key_to_distance(self, keys: np.ndarray) -> np.ndarray:
        return np.sqrt(keys) if self.name == "euclidean" else keys


def resolve_metric(metric: str, p: float | None = None, metric_params: dict[str, Any] | None = None) -> Metric:
    """Resolve a metric name (scikit-learn or scipy spelling) to a :class:`Metric`.

    Parameters
    ----------
    metric : str
        ``"euclidean"`` (default of the graph), ``"manhattan"``/``"cityblock"``/``"l1"``, ``"chebyshev"``,
        ``"minkowski"`` (with ``p``), ``"cosine"``, or any other real-valued scipy metric
        (``"canberra"``, ``"braycurtis"``, ``"correlation"``, ``"seuclidean"``, ``"mahalanobis"``, ...).
    p : float, optional
        Minkowski exponent (``p >= 1``); ``p=1``, ``2``, ``inf`` resolve to manhattan, euclidean, chebyshev.
    metric_params : dict, optional
        Further keyword arguments of the scipy metric (e.g. ``V`` for ``seuclidean``, ``VI`` for
        ``mahalanobis``).
    """
    if not isinstance(metric, str):
        raise ValueError(f"metric must be a string name, got {type(metric).__name__}")
    key = metric.strip().lower()
    name = _ALIASES.get(key, key)
    params = dict(metric_params or {})
    if name == "minkowski":
        if p is None:
            p = params.pop("p", 2.0)
        p = float(p)
        if not p >= 1:
            raise ValueError(f"minkowski metric needs p >= 1, got p={p}")
        if p == 1:
            return Metric("cityblock")
        if p == 2:
            return Metric("euclidean")
        if np.isinf(p):
            return Metric("chebyshev")
        return Metric("minkowski", {"p": p})
    if p is not None:
        raise ValueError(f"parameter p only applies to the minkowski metric, not {metric!r}")
    if name not in _SCIPY_REAL:
        known = sorted(set(_ALIASES) | _SCIPY_REAL)
        raise ValueError(f"unknown or unsupported metric {metric!r}; choose one of: {', '.join(known)}")
    if name == "sqeuclidean":
        raise ValueError("metric 'sqeuclidean' is not a distance; use 'euclidean' (ties are decided on squared "
                         "Euclidean distances anyway)")
    return Metric(name, params)
