"""Detectors from anywhere: import paths, plugin modules and the ``odeval.detectors`` entry point group.

A study's ``[[methods]]`` entry may name a class by its import path, ``estimator = "package.module:Class"``
(``"package.module.Class"`` is read the same way). Three kinds of class are accepted (:func:`classify`):

``"detector"``
    an odeval :class:`~odeval.detectors.base.Detector` subclass: it scores from the kNN graph at every k, like
    the registered twelve (it is registered under its ``info.name`` when imported);
``"pyod"``
    a PyOD ``BaseDetector`` subclass: fitted on the data, its training scores ``decision_scores_`` (PyOD's own
    unsupervised scores, higher = more outlying; for PyOD's kNN methods the point itself is not its own
    neighbour) are the scores;
``"sklearn"``
    any class with ``fit`` and ``score_samples`` or ``decision_function`` (scikit-learn's convention: higher =
    more normal, so the scores are negated, unless the entry says ``higher_is_outlier = true``).

Orientation is applied in one place, :func:`odeval.detectors.adapters.EstimatorDetector` (through
:func:`odeval.detectors.base.orient`), as for the registered methods. :func:`check_estimator_params` checks the
parameters and grid values a study gives against the class's constructor, so a typo fails at ``study check``
time; :func:`fit_score` is what a study unit runs.

``plugins = ["module"]`` in a study file, and the entry points of the group :data:`ENTRY_POINT_GROUP` of the
installed packages, are modules that register detectors with :func:`odeval.detectors.register` when imported
(:func:`import_plugins`, :func:`load_entry_points`).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from typing import Any

import numpy as np

from odeval.detectors.base import ENTRY_POINT_GROUP, load_entry_points

__all__ = ["ENTRY_POINT_GROUP", "ESTIMATOR_KINDS", "check_estimator_params", "check_scores_usable", "classify",
           "fit_score", "import_plugins", "load_entry_points", "resolve_class"]

#: What :func:`classify` returns.
ESTIMATOR_KINDS = ("detector", "pyod", "sklearn")


def resolve_class(path: str) -> type:
    """The class an import path names: ``"package.module:Class"`` or ``"package.module.Class"``.

    Raises ``ValueError`` with one line saying what failed: the module does not import (and why), or it has no
    such attribute, or the attribute is not a class.
    """
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"estimator must be an import path 'package.module:Class', got {path!r}")
    text = path.strip()
    module_name, sep, attr = text.partition(":")
    if not sep:
        module_name, _, attr = text.rpartition(".")
    if not module_name or not attr:
        raise ValueError(f"estimator {text!r} is not an import path 'package.module:Class'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or whatever the module raises while importing
        raise ValueError(f"estimator {text!r}: module {module_name!r} does not import "
                         f"({type(exc).__name__}: {exc})") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ValueError(f"estimator {text!r}: module {module_name!r} has no attribute {attr!r}") from None
    if not inspect.isclass(obj):
        raise ValueError(f"estimator {text!r} is a {type(obj).__name__}, not a class")
    return obj


def _is_pyod_class(cls: type) -> bool:
    return any(c.__module__.split(".")[0] == "pyod" for c in cls.__mro__)


def classify(cls: type, where: str = "") -> str:
    """Which of :data:`ESTIMATOR_KINDS` ``cls`` is; ``ValueError`` naming what is missing when none."""
    from odeval.detectors.base import Detector

    if issubclass(cls, Detector):
        if inspect.isabstract(cls):
            raise ValueError(f"{where}{cls.__qualname__} is an abstract Detector: implement raw_scores_all_k")
        return "detector"
    if _is_pyod_class(cls):
        return "pyod"
    if callable(getattr(cls, "fit", None)) and (callable(getattr(cls, "score_samples", None))
                                               or callable(getattr(cls, "decision_function", None))):
        return "sklearn"
    missing = [m for m in ("fit",) if not callable(getattr(cls, m, None))]
    if not (callable(getattr(cls, "score_samples", None)) or callable(getattr(cls, "decision_function", None))):
        missing.append("score_samples or decision_function")
    raise ValueError(f"{where}{cls.__module__}.{cls.__qualname__} has no {' and no '.join(missing)} method: a study "
                     "method needs fit + score_samples/decision_function (scikit-learn style), a PyOD BaseDetector "
                     "or an odeval Detector")


def _constructor(cls: type) -> tuple[dict[str, inspect.Parameter], bool]:
    """The keyword parameters of ``cls.__init__`` and whether it also takes ``**kwargs``."""
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature: accept anything
        return {}, True
    named = {n: p for n, p in sig.parameters.items() if n != "self"
             and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    return named, var_kw


def _type_problem(default: Any, value: Any) -> str | None:
    """Why ``value`` cannot stand for a parameter whose default is ``default`` (None when it can).

    A bool needs a bool; a number (int or float default) needs a number, or a word scikit-learn accepts in its
    place ("auto", "scale"), never a number written as a string nor a bool; a string default takes a string or a
    number. A default of None (or none) says nothing about the type: anything goes.
    """
    if default is inspect.Parameter.empty or default is None:
        return None
    if isinstance(value, list | dict):
        return "a single value"
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "true or false"
    if isinstance(default, int | float | np.integer | np.floating):
        if isinstance(value, bool):
            return "a number"
        if isinstance(value, str):
            try:
                float(value)
            except ValueError:
                return None  # a word in place of the number ("auto")
            return "a number (it is a string: write it without quotes)"
        return None
    if isinstance(default, str) and isinstance(value, bool):
        return "a string or a number"
    return None


def check_estimator_params(cls: type, params: dict[str, Any], grid: dict[str, list[Any]], *,
                           seeded: bool) -> list[str]:
    """Problems with the fixed ``params`` and the ``grid`` axes a study gives an estimator class (empty when none).

    A name the constructor does not take, a grid value whose type does not fit the parameter's default (an
    integer parameter given a string of letters, a bool given a number, ...), and ``seeded`` (the entry asks for
    seeds) on a class without ``random_state`` are problems. Each is one line naming the parameter.
    """
    named, var_kw = _constructor(cls)
    problems = []
    for name in [*params, *grid]:
        if name not in named and not var_kw:
            problems.append(f"{cls.__name__} takes no parameter {name!r}; it takes: {', '.join(named) or 'none'}")
    for name, values in grid.items():
        default = named[name].default if name in named else inspect.Parameter.empty
        for v in values:
            why = _type_problem(default, v)
            if why:
                problems.append(f"grid.{name}: value {v!r} is not {why} (the default of {cls.__name__}'s {name} is "
                                f"{default!r})")
    for name, v in params.items():
        default = named[name].default if name in named else inspect.Parameter.empty
        why = _type_problem(default, v)
        if why:
            problems.append(f"params.{name}: value {v!r} is not {why} (the default is {default!r})")
    if seeded and "random_state" in params:
        problems.append("give seeds = N or params.random_state, not both")
    if seeded and "random_state" not in named and not var_kw:
        problems.append(f"seeds given but {cls.__name__} has no random_state parameter (it is not randomised)")
    return problems


def check_scores_usable(scores: np.ndarray, where: str) -> np.ndarray:
    """Refuse scores that rank nothing: all equal (a constant scoring); NaN and length are checked before."""
    if scores.size and np.all(scores == scores[0]):
        raise ValueError(f"{where} returned constant scores (all {scores[0]!r}): they rank no object above another")
    return scores


def fit_score(cls: type, params: dict[str, Any], X: np.ndarray, *, seed: int | None = None,
              higher_is_outlier: bool | None = None, name: str | None = None) -> np.ndarray:
    """Fit an instance of ``cls(**params)`` on ``X`` and return the scores of ``X``, higher = more outlying.

    PyOD detectors give their training scores (``decision_scores_``), others ``score_samples`` (else
    ``decision_function``) of ``X``, oriented by :class:`~odeval.detectors.adapters.EstimatorDetector`. ``seed``
    becomes ``random_state``. NaN/inf scores, a wrong number of scores and constant scores raise ``ValueError``.
    """
    from odeval.detectors.adapters import EstimatorDetector

    det = EstimatorDetector(cls(**params), seed=seed, higher_is_outlier=higher_is_outlier, name=name, clone=False)
    return check_scores_usable(det.training_scores(X), det.name)


def import_plugins(modules: Iterable[str]) -> None:
    """Import each module (it registers its detectors); ``ValueError`` naming the module that does not import."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:
            raise ValueError(f"plugin module {module!r} does not import ({type(exc).__name__}: {exc})") from None
