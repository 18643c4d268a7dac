"""Regularisation of raw outlier scores (Kriegel, Kröger, Schubert, Zimek, SDM 2011, Section 3.1).

A regularisation maps a method's *raw* score S to a score in [0, ∞) where 0 is the value of a perfect inlier
and larger values are more outlying. It takes the **raw** orientation of the method: for inverted methods
(ODIN, FastABOD: low raw score = outlier), odeval's public scores are ``-raw``, so convert first with
:func:`odeval.scaling.raw_from_public` (or call :func:`regularize` / :func:`odeval.scaling.unify` with
``orientation="public"``).

======================== ====================================== ==============================================
regularisation           formula (raw score S)                  for
======================== ====================================== ==============================================
baseline                 max(0, S − base)                       high = outlier, known inlier value ``base``
                                                                (LOF-like ratios: 1, distances: 0)
linear inversion         S_max − S                              low = outlier, linear scale (ODIN)
logarithmic inversion    −log(S / S_max)                        low = outlier, multiplicative scale (ABOD)
======================== ====================================== ==============================================

From odeval's public scores P (= −S for inverted methods): the linear inversion is ``P − min(P)``
(= S_max − S), the logarithmic inversion is ``−log(−P / max(−P))``, i.e. it needs the raw score S = −P.

NaN stays NaN; ±inf follow the formula (e.g. log inversion of S = 0 is +inf); ``S_max`` (and ``S_min``)
are taken over the finite scores only, as ELKI 0.7.1 does.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from odeval.scaling._common import as_score_vector, finite_values, raw_from_public

__all__ = ["baseline_regularization", "linear_inversion", "log_inversion", "regularize"]


def baseline_regularization(raw: Any, baseline: float) -> np.ndarray:
    """Baseline regularisation ``Reg_base(o) = max(0, S(o) − base)`` (Kriegel et al. 2011, Sect. 3.1).

    Parameters
    ----------
    raw : array-like of shape (n_objects,)
        Raw scores, high = outlier (for an inverted method use an inversion instead).
    baseline : float
        The expected score of an inlier (:attr:`MethodInfo.inlier_value`): 1 for LOF-like ratios, 0 for
        distances (kNN), for which the regularisation is the identity on non-negative scores.

    Returns
    -------
    ndarray of shape (n_objects,)
        Non-negative scores, 0 for everything at or below the baseline. NaN stays NaN, +inf stays +inf.

    References
    ----------
    H.-P. Kriegel, P. Kröger, E. Schubert, A. Zimek. Interpreting and Unifying Outlier Scores. SDM 2011.
    """
    s = as_score_vector(raw, name="raw")
    base = float(baseline)
    if not np.isfinite(base):
        raise ValueError(f"baseline must be a finite number, got {baseline!r}")
    out = s - base
    np.maximum(out, 0.0, out=out, where=~np.isnan(out))
    return out


def linear_inversion(raw: Any, maximum: float | None = None) -> np.ndarray:
    """Linear inversion ``Reg_lin(o) = S_max − S(o)`` for methods where low = outlier (Kriegel et al. 2011).

    Parameters
    ----------
    raw : array-like of shape (n_objects,)
        Raw scores of an inverted method (ODIN: in-degree / k; low = outlier).
    maximum : float, optional
        ``S_max``: the theoretical maximum if the method has one, else (default) the largest finite score.

    Returns
    -------
    ndarray of shape (n_objects,)
        ``S_max − S``: 0 for the most inlying object, larger = more outlying. With the observed maximum this is
        ``P − min(P)`` for odeval's public scores ``P = −S``.
    """
    s = as_score_vector(raw, name="raw")
    smax = float(np.max(finite_values(s, minimum=1, what="linear inversion"))) if maximum is None else float(maximum)
    return smax - s


def log_inversion(raw: Any, maximum: float | None = None, *, normalize: bool = False) -> np.ndarray:
    """Logarithmic inversion ``Reg_log(o) = −log(S(o) / S_max)`` (Kriegel et al. 2011), for ABOD/FastABOD.

    Parameters
    ----------
    raw : array-like of shape (n_objects,)
        Raw, non-negative scores of an inverted method with a multiplicative scale (FastABOD's angle variance;
        low = outlier). A raw score of 0 gives +inf; negative scores give NaN.
    maximum : float, optional
        ``S_max``; default the largest finite score (which then maps to 0).
    normalize : bool, default False
        Divide by ``−log(S_min / S_max)`` (``S_min`` = smallest finite score), so that the finite scores map
        to [0, 1]. This is ELKI 0.7.1's ``OutlierMinusLogScaling`` and the first step of its
        ``MinusLogGammaScaling``.

    Returns
    -------
    ndarray of shape (n_objects,)
    """
    s = as_score_vector(raw, name="raw")
    fin = finite_values(s, minimum=1, what="logarithmic inversion")
    smax = float(np.max(fin)) if maximum is None else float(maximum)
    if not smax > 0:
        raise ValueError(f"logarithmic inversion needs a positive maximum score, got {smax!r}")
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -np.log(s / smax)
    if normalize:
        smin = float(np.min(fin))
        if not 0.0 < smin < smax:
            raise ValueError(
                f"log_inversion(normalize=True) needs 0 < min < max over the finite scores, got min={smin!r}, "
                f"max={smax!r} (a raw score of 0 has an infinite log inversion)"
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            out = out / -np.log(smin / smax)
    return out


def regularize(
    scores: Any,
    kind: Literal["baseline", "linear_inversion", "log_inversion", "none"],
    *,
    inverted: Any = False,
    baseline: float | None = None,
    orientation: Literal["raw", "public"] = "raw",
) -> np.ndarray:
    """Apply one of the Kriegel et al. (2011) regularisations, from raw or from odeval's public scores.

    Parameters
    ----------
    scores : array-like of shape (n_objects,)
    kind : {"baseline", "linear_inversion", "log_inversion", "none"}
    inverted : bool, MethodInfo or Detector
        Whether low raw scores mean outlier; used to recover the raw scores from public ones.
    baseline : float, optional
        The inlier value for ``kind="baseline"``.
    orientation : {"raw", "public"}
        ``"public"``: ``scores`` are odeval public scores (``-raw`` for inverted methods) and are converted to
        raw scores first.
    """
    if orientation not in ("raw", "public"):
        raise ValueError(f"orientation must be 'raw' or 'public', got {orientation!r}")
    raw = raw_from_public(scores, inverted) if orientation == "public" else as_score_vector(scores)
    if kind == "baseline":
        if baseline is None:
            raise ValueError("regularize(kind='baseline') needs the method's baseline (inlier value)")
        return baseline_regularization(raw, baseline)
    if kind == "linear_inversion":
        return linear_inversion(raw)
    if kind == "log_inversion":
        return log_inversion(raw)
    if kind == "none":
        return raw.copy()
    raise ValueError(f"unknown regularisation {kind!r}; use 'baseline', 'linear_inversion', 'log_inversion' or 'none'")
