"""Input handling shared by the scaling functions: 1-d score vectors in which NaN and ±inf are allowed
(detectors legitimately produce them, e.g. LOF = +inf next to duplicates), plus the orientation helpers."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_score_vector", "finite_values", "raw_from_public", "public_from_raw", "is_inverted"]


def as_score_vector(scores: Any, *, name: str = "scores") -> np.ndarray:
    """Return ``scores`` as a 1-d float64 array. Unlike :func:`odeval._validation.check_scores`, NaN and ±inf
    are kept: each scaling documents what it does with them."""
    arr = np.asarray(scores)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    return arr.astype(np.float64, copy=False)


def finite_values(x: np.ndarray, *, minimum: int, what: str) -> np.ndarray:
    """The finite entries of ``x`` (NaN and ±inf are ignored when fitting, as ELKI's ``prepare()`` does);
    raise if fewer than ``minimum`` remain."""
    fin = x[np.isfinite(x)]
    if fin.size < minimum:
        raise ValueError(
            f"{what} needs at least {minimum} finite score(s) to fit, got {fin.size} "
            f"(of {x.size}; NaN and ±inf are ignored when fitting)"
        )
    return fin


def is_inverted(method_or_flag: Any) -> bool:
    """``inverted`` from a bool, a :class:`~odeval.detectors.base.MethodInfo` or a detector."""
    if isinstance(method_or_flag, bool | np.bool_):
        return bool(method_or_flag)
    info = getattr(method_or_flag, "info", method_or_flag)
    if hasattr(info, "inverted"):
        return bool(info.inverted)
    raise TypeError(f"expected a bool, a MethodInfo or a Detector for 'inverted', got {type(method_or_flag)!r}")


def raw_from_public(scores: Any, inverted: Any) -> np.ndarray:
    """Raw (method-oriented) scores from odeval's public scores: ``-scores`` for inverted methods
    (ODIN, FastABOD; low raw score = outlier), the scores themselves otherwise.

    This undoes :func:`odeval.detectors.base.orient`; the Kriegel et al. (2011) inversions need the raw
    orientation.
    """
    from odeval.detectors.base import orient

    return orient(as_score_vector(scores), is_inverted(inverted)).copy()


def public_from_raw(raw: Any, inverted: Any) -> np.ndarray:
    """Public scores (higher = more outlying) from raw scores; the same map as
    :func:`odeval.detectors.base.orient`."""
    from odeval.detectors.base import orient

    return orient(as_score_vector(raw, name="raw"), is_inverted(inverted)).copy()
