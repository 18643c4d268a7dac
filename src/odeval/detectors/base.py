"""Detector metadata, the common interface, central score orientation and the method registry.

Every detector computes its scores for *all* requested k from one :class:`~odeval.neighbors.KNNGraph`.
Orientation is handled here, once: ``raw_scores_all_k`` returns the method's own scores (ODIN and FastABOD:
low = outlier), ``score_all_k`` returns public scores, always higher = more outlying (the negated raw score
for inverted methods, which keeps every rank and every tie).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

import numpy as np

from odeval._method_variant import MethodVariant

__all__ = ["MethodInfo", "Detector", "Number", "Options", "register", "get_detector", "available_methods",
           "expand_methods", "ALL_METHODS", "orient",
           "check_ks", "check_params", "check_variant", "novelty_methods", "partitioned_methods", "MethodVariant",
           "VARIANT", "VARIANTS"]


@dataclass(frozen=True)
class MethodInfo:
    """What a method is, as later stages need to know it.

    Attributes
    ----------
    name : str
        Canonical name, e.g. ``"LOF"`` (the registry key).
    min_k : int
        Smallest k for which the method is defined (LDOF, KDEOS: 2; FastABOD: 3).
    inverted : bool
        True if the raw score is low for outliers (ODIN, FastABOD). Public scores are then ``-raw``.
    inlier_value : float or None
        Expected raw score of a clear inlier (the "baseline" of Kriegel et al. 2011 regularisation):
        1.0 for LOF-like ratios, 0.0 for distances, None if there is none.
    score_range : tuple of float
        Theoretical (min, max) of the raw score, ``np.inf`` for unbounded.
    reference : str
        The publication that defines the method.
    scaling : {"distance", "ratio", "probability", "linear_inversion", "log_inversion"} or None
        What kind of score it is, which chooses the Kriegel et al. (2011) unification recipe
        (:func:`odeval.scaling.recommended_unification`): a distance (Gaussian scaling about the mean), a ratio
        with baseline ``inlier_value`` (Gaussian scaling centred there), already a probability (identity),
        or an inverted score needing a linear / logarithmic inversion first. None: derived from ``inverted``
        and ``inlier_value``.
    scoring_version : int
        Version of the method's scoring definition, 1 unless it changed: a change of the values a method
        computes (e.g. LDOF's limit at inner distance 0, FastABOD's all-duplicate case: version 2) bumps it, so
        results of the older definition in a results store are recomputed, never mixed with the new ones
        (the version is part of the study runner's unit ids, :func:`odeval.bench.runner.unit_id`).
    """

    name: str
    min_k: int
    inverted: bool
    inlier_value: float | None
    score_range: tuple[float, float]
    reference: str
    scaling: str | None = None
    scoring_version: int = 1

    @classmethod
    def ratio(cls, name: str, reference: str, *, min_k: int = 1, **more: Any) -> MethodInfo:
        """A LOF-like ratio score: about 1 for inliers, in [0, ∞), unified by Gaussian scaling centred at 1."""
        return cls(name=name, min_k=min_k, inverted=False, inlier_value=1.0, score_range=(0.0, np.inf),
                   reference=reference, scaling="ratio", **more)

    @classmethod
    def distance(cls, name: str, reference: str, *, min_k: int = 1, **more: Any) -> MethodInfo:
        """A distance score (kNN-like): 0 for an object among duplicates, in [0, ∞), Gaussian scaling."""
        return cls(name=name, min_k=min_k, inverted=False, inlier_value=0.0, score_range=(0.0, np.inf),
                   reference=reference, scaling="distance", **more)


def orient(raw: np.ndarray, info: MethodInfo | bool) -> np.ndarray:
    """Public scores (higher = more outlying) from raw scores: the one place orientation is applied.

    ``info`` is a :class:`MethodInfo` (or just its ``inverted`` flag). The map is its own inverse (a negation
    for inverted methods), so ``orient(public, info)`` gives the raw scores back; every sign flip of odeval
    (public ↔ raw, ``odeval evaluate --ascending``, adapters) goes through here.
    """
    inverted = bool(info) if isinstance(info, bool | np.bool_) else bool(info.inverted)
    return -raw if inverted else raw


def check_ks(ks: int | Sequence[int], n_objects: int, info: MethodInfo, k_max: int | None = None) -> np.ndarray:
    """Validate the requested k values for a method: integers, ≥ ``info.min_k``, < n_objects, ≤ graph's k_max."""
    from odeval._validation import check_k

    arr = np.atleast_1d(np.asarray(ks))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{info.name}: ks must be a non-empty 1-d sequence of integers")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{info.name}: ks must be integers, got {arr.dtype}")
    for k in arr:
        check_k(int(k), n_objects, name=f"{info.name} k", min_k=info.min_k)
        if k_max is not None and k > k_max:
            raise ValueError(f"{info.name}: k={int(k)} exceeds the graph's k_max={k_max}; build the graph "
                             "for the largest k you need")
    return arr.astype(np.int64)


def check_variant(method: str, variant: str, allowed: Sequence[str]) -> str:
    """Validate a method's ``variant`` parameter ("paper" = the published definition; "elki-0.7.1…" =
    ELKI 0.7.1's behaviour, see docs/detectors.md)."""
    if variant not in allowed:
        raise ValueError(f"{method}: unknown variant {variant!r}; choose one of {', '.join(allowed)}")
    return variant


@dataclass(frozen=True)
class Options:
    """Parameter constraint: one of ``values``; the default is the first."""

    values: tuple[Any, ...]

    @property
    def default(self) -> Any:
        return self.values[0]

    def check(self, value: Any) -> str | None:
        return None if value in self.values else f"choose one of {', '.join(map(str, self.values))}"

    def cast(self, value: Any) -> Any:
        # a str enum member (MethodVariant) is stored as its plain value: params(), their JSON and unit ids stay
        # the strings they always were, and repr() shows 'paper', not <MethodVariant.PAPER: 'paper'>
        return value.value if isinstance(value, Enum) else value


@dataclass(frozen=True)
class Number:
    """Parameter constraint: a finite number (an integer with ``integer``) in an interval; ``None`` if allowed."""

    default: float | int | None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    integer: bool = False
    allow_none: bool = False

    def cast(self, value: Any) -> Any:
        return None if value is None else int(value) if self.integer else float(value)

    def check(self, value: Any) -> str | None:
        kind = "an integer" if self.integer else "a finite number"
        bounds = []
        if self.low is not None:
            bounds.append(f"{'>' if self.low_open else '≥'} {self.low:g}")
        if self.high is not None:
            bounds.append(f"≤ {self.high:g}")
        need = f"must be {kind}" + (f" {' and '.join(bounds)}" if bounds else "") + (" or None" if self.allow_none
                                                                                    else "")
        if value is None:
            return None if self.allow_none else need
        types = (int, np.integer) if self.integer else (int, float, np.integer, np.floating)
        if isinstance(value, bool) or not isinstance(value, types) or not np.isfinite(value):
            return need
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return need
        if self.high is not None and value > self.high:
            return need
        return None


#: The values of the ``variant`` parameter of the neighbourhood detectors (:class:`MethodVariant`, as plain
#: strings): ``"paper"`` (the published definition), ``"elki-0.7.1"`` (ELKI 0.7.1's behaviour),
#: ``"elki-0.7.1-cks"`` (ELKI's batch tool, as the Campos et al. 2016 reference results were made); see
#: docs/detectors.md.
VARIANTS: tuple[str, ...] = tuple(v.value for v in MethodVariant)
#: The parameter constraint of ``variant`` (default ``"paper"``).
VARIANT = Options(VARIANTS)


def check_params(name: str, constraints: dict[str, Any], params: dict[str, Any]) -> None:
    """Validate ``params`` against a detector's declared ``_parameter_constraints``; one-line ``ValueError``."""
    unknown = sorted(set(params) - set(constraints))
    if unknown:
        raise ValueError(f"{name}: unknown parameter(s) {', '.join(unknown)}; accepted: "
                         f"{', '.join(constraints) or 'none'}")
    for key, value in params.items():
        problem = constraints[key].check(value)
        if problem and isinstance(constraints[key], Options):
            raise ValueError(f"{name}: unknown {key} {value!r}; {problem}")
        if problem:
            raise ValueError(f"{name}: invalid parameter {key}={value!r}: {key} {problem}")


class Detector(ABC):
    """Base class: subclasses set ``info``, declare ``_parameter_constraints`` (parameter name → constraint,
    the scikit-learn idiom; the constructor's keyword arguments and the attributes that hold them) and
    implement :meth:`raw_scores_all_k`."""

    info: ClassVar[MethodInfo]
    _parameter_constraints: ClassVar[dict[str, Any]] = {}

    def __init__(self, **params: Any) -> None:
        """Keyword parameters as declared in ``_parameter_constraints`` (validated there; defaults from it)."""
        check_params(self.info.name, self._parameter_constraints, params)
        for name, constraint in self._parameter_constraints.items():
            setattr(self, name, constraint.cast(params.get(name, constraint.default)))

    def params(self) -> dict[str, Any]:
        """The method's parameters (besides k), for provenance and results stores (``get_params``)."""
        return {name: getattr(self, name) for name in self._parameter_constraints}

    def required_k_max(self, k: int) -> int:
        """Neighbours the graph must hold to score at ``k`` (most methods: k; some need k+1)."""
        return k

    @abstractmethod
    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        """Raw scores, shape (len(ks), n_objects), in the method's own orientation."""

    def score_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        """Public scores (higher = more outlying), shape (len(ks), n_objects)."""
        return orient(self.raw_scores_all_k(graph, ks), self.info)

    @property
    def depends_on_k_range(self) -> bool:
        """True if the score at one k depends on the largest k of the same call: variant "elki-0.7.1-cks"
        (ELKI's batch tool orders tied neighbours in lists materialised for the run's largest k), so such a
        detector is never scored in chunks of k (:func:`odeval.detectors.scoring.stream_ks`)."""
        return getattr(self, "variant", None) == MethodVariant.ELKI_071_CKS

    #: True if the method has an out-of-sample ("novelty") form: :meth:`novelty_raw_scores_all_k` scores query
    #: objects against a training graph (docs/detectors.md, "Novelty mode").
    novelty: ClassVar[bool] = False

    def novelty_raw_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Raw scores of query objects against the training graph, shape (len(ks), n_queries).

        ``graph`` is the training set's :class:`~odeval.neighbors.KNNGraph`, ``query`` the
        :class:`~odeval.neighbors.QueryKNN` of the query objects against it (``query.reference is graph``).
        Methods without a well-defined novelty form raise ``NotImplementedError``.
        """
        raise NotImplementedError(f"{self.info.name} has no novelty (out-of-sample) form in odeval; methods that "
                                  f"have one: {', '.join(novelty_methods())}")

    def novelty_scores_all_k(self, graph: Any, query: Any, ks: Sequence[int]) -> np.ndarray:
        """Public novelty scores (higher = more outlying), shape (len(ks), n_queries)."""
        if query.reference is not graph:
            raise ValueError("query was not computed against this graph (query_knn(graph, Q))")
        return orient(self.novelty_raw_scores_all_k(graph, query, ks), self.info)

    #: Parameter values whose scores cannot be computed block by block, each with the reason: parameter →
    #: {value: reason} (:meth:`block_plan`; e.g. the ELKI variants that re-enact ELKI's list order over all objects).
    block_refusals: ClassVar[dict[str, dict[str, str]]] = {}

    def block_plan(self) -> list[Any]:
        """This method's steps on one block of objects, and the exchanges between them (a list of
        :class:`odeval.detectors.blockwise.Step`, run by :func:`odeval.detectors.blockwise.run_plan`).

        Raises ``NotImplementedError`` naming why if the method has no per-block plan (it does not define
        ``_block_steps``) or if a parameter takes a value :attr:`block_refusals` refuses.
        """
        if not _has_block_plan(type(self)):
            raise NotImplementedError(_not_partitioned(self.info.name))
        for param, reasons in self.block_refusals.items():
            value = getattr(self, param)
            if value in reasons:
                raise NotImplementedError(
                    f"{self.info.name} variant {value!r} is not block-partitioned ({reasons[value]}); partitioned "
                    f"variants: {', '.join(block_variants(type(self)))}")
        return self._block_steps()

    def _block_steps(self) -> list[Any]:
        """The per-block steps of a method that has a plan (it overrides this; :meth:`block_plan` has checked
        :attr:`block_refusals` before calling it)."""
        raise NotImplementedError(_not_partitioned(self.info.name))

    def score(self, X_or_graph: Any, k: int, **graph_options: Any) -> np.ndarray:
        """Convenience: public scores at a single k, from a data matrix or a prebuilt graph."""
        from odeval.neighbors import KNNGraph, knn_graph

        graph = X_or_graph if isinstance(X_or_graph, KNNGraph) else knn_graph(
            X_or_graph, self.required_k_max(k), **graph_options)
        return self.score_all_k(graph, [k])[0]

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({p})"


_REGISTRY: dict[str, Callable[..., Detector]] = {}

#: The entry point group whose modules register detectors (``[project.entry-points."odeval.detectors"]``).
ENTRY_POINT_GROUP = "odeval.detectors"
_entry_points_loaded = False


def load_entry_points() -> list[str]:
    """Import the modules of the :data:`ENTRY_POINT_GROUP` entry points of the installed packages (once per
    process; they register detectors); returns their names. A plugin that fails to import raises ``ValueError``
    naming it."""
    global _entry_points_loaded
    from importlib.metadata import entry_points

    found = list(entry_points(group=ENTRY_POINT_GROUP))
    if _entry_points_loaded:
        return [ep.name for ep in found]
    _entry_points_loaded = True
    for ep in found:
        try:
            ep.load()
        except Exception as exc:
            raise ValueError(f"odeval.detectors entry point {ep.name!r} ({ep.value}) does not load "
                             f"({type(exc).__name__}: {exc})") from None
    return [ep.name for ep in found]


def register(cls: type[Detector]) -> type[Detector]:
    """Class decorator: make a detector available by its ``info.name`` (case-insensitive lookup).

    A second registration of a name (case-insensitive) is an error, not a silent overwrite.
    """
    key = cls.info.name.lower()
    if key in _REGISTRY and _REGISTRY[key] is not cls:
        raise ValueError(f"a method named {cls.info.name!r} is already registered "
                         f"({_REGISTRY[key].__module__}.{_REGISTRY[key].__qualname__})")
    _REGISTRY[key] = cls
    return cls


def get_detector(name: str, **params: Any) -> Detector:
    """Instantiate a registered method by name, e.g. ``get_detector("LOF", variant="elki-0.7.1")``.

    Parameters are checked against the method's declared ``_parameter_constraints`` first: an unknown name or
    an invalid value raises a one-line ``ValueError`` naming the method, the parameter and what is accepted.
    """
    if str(name).lower() not in _REGISTRY:  # perhaps an installed plugin's (the odeval.detectors entry points)
        load_entry_points()
    try:
        factory = _REGISTRY[str(name).lower()]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; available: {', '.join(available_methods())}") from None
    check_params(factory.info.name, getattr(factory, "_parameter_constraints", {}), params)  # type: ignore[attr-defined]
    return factory(**params)


def available_methods() -> list[str]:
    return sorted(cls.info.name for cls in _REGISTRY.values())  # type: ignore[attr-defined]


#: The method name that stands for every registered method (``-m all`` of the command line).
ALL_METHODS = "all"


def expand_methods(names: Sequence[str]) -> list[str]:
    """``names`` with :data:`ALL_METHODS` (``"all"``, any case) replaced by :func:`available_methods`, repeats
    dropped (first occurrence kept, compared case-insensitively); other names are left for :func:`get_detector`
    to check."""
    out: dict[str, str] = {}
    for name in names:
        for one in available_methods() if str(name).lower() == ALL_METHODS else [name]:
            out.setdefault(str(one).lower(), one)
    return list(out.values())


def novelty_methods() -> list[str]:
    """Registered methods with a novelty (out-of-sample) form."""
    return sorted(cls.info.name for cls in _REGISTRY.values() if getattr(cls, "novelty", False))  # type: ignore


def _has_block_plan(cls: type) -> bool:
    return getattr(cls, "_block_steps", Detector._block_steps) is not Detector._block_steps


def block_variants(cls: type[Detector]) -> tuple[str, ...]:
    """The values of the parameter a method's :attr:`~Detector.block_refusals` name (``variant`` unless it names
    another, FastABOD: ``kernel``) that have a per-block plan; () if the method has no plan or no such
    parameter."""
    if not _has_block_plan(cls):
        return ()
    refusals = cls.block_refusals or {"variant": {}}
    (param, refused), = refusals.items()
    constraint = cls._parameter_constraints.get(param)
    return tuple(v for v in getattr(constraint, "values", ()) if v not in refused)


def partitioned_methods() -> dict[str, tuple[str, ...]]:
    """Registered methods with a per-block plan (:meth:`Detector.block_plan`) → the variants that have one."""
    classes = sorted(_REGISTRY.values(), key=lambda c: c.info.name)  # type: ignore[attr-defined]
    return {cls.info.name: block_variants(cls) for cls in classes if _has_block_plan(cls)}  # type: ignore


def _not_partitioned(name: str) -> str:
    return (f"{name} is not block-partitioned (the partitioned run covers {', '.join(partitioned_methods())}); "
            "score it in one process")
