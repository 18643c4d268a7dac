"""Normalisation of (regularised) outlier scores to [0, 1] (Kriegel, Kröger, Schubert, Zimek, SDM 2011,
Section 3.2; Gao & Tan, ICDM 2006).

Every normalisation is *fitted* on one scoring (``fit``) and then maps scores of that scoring (or of another
one, e.g. new objects) to [0, 1] (``transform``); ``fit_transform`` does both. Inputs are oriented scores,
higher = more outlying: odeval's public scores, or raw scores after a regularisation of
:mod:`odeval.scaling.regularize`. Each class has a pure-function twin (``gaussian_scaling(scores, ...)`` =
``GaussianScaling(...).fit_transform(scores)``).

NaN and ±inf
    ``fit`` ignores NaN and ±inf (as ELKI 0.7.1's ``prepare()`` does) and raises ``ValueError`` if too few
    finite scores remain. ``transform`` maps +inf to 1 and −inf to 0; NaN stays NaN (except
    :class:`MixtureModelScaling`, which follows ELKI and maps an undefined posterior to 0).

Conformance
    The formulas, the fitted statistics (sample standard deviation, moment fit) and the degenerate cases
    follow the ELKI 0.7.1 classes named in each docstring; ``tests/scaling/test_elki_conformance.py`` checks
    them against fixtures produced with ELKI's ``ComputeKNNOutlierScores -scaling ...``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
from scipy import special

from odeval.scaling._common import as_score_vector, finite_values

__all__ = [
    "ScoreScaling",
    "LinearScaling",
    "GaussianScaling",
    "GammaScaling",
    "SigmoidScaling",
    "MixtureModelScaling",
    "linear_scaling",
    "gaussian_scaling",
    "gamma_scaling",
    "sigmoid_scaling",
    "mixture_model_scaling",
]

_MIN_NORMAL = np.finfo(np.float64).tiny  # Java's Double.MIN_NORMAL
_MAX_VALUE = np.finfo(np.float64).max
_SQRT2 = math.sqrt(2.0)


class ScoreScaling:
    """Base class: ``fit(scores) -> self``, ``transform(scores) -> ndarray``, ``fit_transform(scores)``.

    Fitted parameters are attributes with a trailing underscore (scikit-learn style); ``params()`` returns the
    constructor parameters, ``fitted_params()`` the fitted ones.
    """

    _fitted: tuple[str, ...] = ()
    name: str = "scaling"

    def fit(self, scores: Any) -> ScoreScaling:
        x = as_score_vector(scores)
        self._fit(x)
        return self

    def transform(self, scores: Any) -> np.ndarray:
        if not self._fitted or not hasattr(self, self._fitted[0]):
            raise RuntimeError(f"{type(self).__name__} is not fitted yet: call fit(scores) first")
        x = as_score_vector(scores)
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            return self._transform(x)

    def fit_transform(self, scores: Any) -> np.ndarray:
        return self.fit(scores).transform(scores)

    def params(self) -> dict[str, Any]:
        return {}

    def fitted_params(self) -> dict[str, float]:
        return {a: float(getattr(self, a)) for a in self._fitted if hasattr(self, a)}

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({p})"

    def _fit(self, x: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _transform(self, x: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


# --------------------------------------------------------------------------------------------------- linear
class LinearScaling(ScoreScaling):
    """Linear normalisation ``(S − lower) / (upper − lower)``, clipped to [0, 1] (Kriegel et al. 2011).

    Parameters
    ----------
    lower : float or {"min", "mean"}, default "min"
        The score mapped to 0: the smallest finite score (min–max normalisation), the mean of the finite
        scores (ELKI ``-linearscale.usemean``), or a fixed value, e.g. the method's baseline (inlier value)
        for "linear normalisation from the baseline".
    upper : float or None, default None
        The score mapped to 1; default the largest finite score.

    Notes
    -----
    ELKI 0.7.1 ``OutlierLinearScaling``: ``x ≤ lower → 0``, else ``min(1, (x − lower)/(upper − lower))``.
    Difference: ELKI takes min and max over *all* scores including ±inf (one +inf then maps every finite
    score to 0); odeval uses the finite scores. If ``upper == lower``, every score above ``lower`` maps to 1.
    """

    _fitted = ("lower_", "upper_")
    name = "linear"

    def __init__(self, lower: float | Literal["min", "mean"] = "min", upper: float | None = None) -> None:
        if not (lower in ("min", "mean") or isinstance(lower, int | float)):
            raise ValueError(f"lower must be 'min', 'mean' or a number, got {lower!r}")
        self.lower = lower
        self.upper = upper

    def params(self) -> dict[str, Any]:
        return {"lower": self.lower, "upper": self.upper}

    def _fit(self, x: np.ndarray) -> None:
        need = 0 if (not isinstance(self.lower, str) and self.upper is not None) else 1
        fin = finite_values(x, minimum=need, what="linear scaling") if need else x[np.isfinite(x)]
        if self.lower == "min":
            lo = float(fin.min())
        elif self.lower == "mean":
            lo = float(fin.mean())
        else:
            lo = float(self.lower)
        hi = float(fin.max()) if self.upper is None else float(self.upper)
        if hi < lo:
            raise ValueError(f"linear scaling: upper={hi!r} is below lower={lo!r}")
        self.lower_, self.upper_ = lo, hi

    def _transform(self, x: np.ndarray) -> np.ndarray:
        out = np.minimum(1.0, (x - self.lower_) / (self.upper_ - self.lower_))
        out[x <= self.lower_] = 0.0
        return out


# ------------------------------------------------------------------------------------------------- gaussian
class GaussianScaling(ScoreScaling):
    """Gaussian scaling ``max(0, erf((S − μ) / (λ·σ·√2)))`` (Kriegel et al. 2011, Sect. 3.2).

    The score is mapped to the probability mass of N(μ, σ²) that lies closer to μ than S, on the outlying side
    only: scores at or below μ map to 0, μ + λσ maps to erf(1/√2) = 0.683.

    Parameters
    ----------
    lam : float, default 1.0
        λ; the paper uses 1. **ELKI's command-line default for** ``StandardDeviationScaling`` **is 3**
        (``-stddevscale.lambda``; its Java no-argument constructor uses 1).
    center : {"mean", "median"} or float, default "mean"
        μ. ``"mean"``: the mean of the finite scores, σ = their *sample* standard deviation (ddof = 1), as
        ELKI. ``"median"`` or a fixed number c (ELKI ``-stddevscale.mean c``; e.g. LOF's baseline 1): μ = c
        and σ = the root mean square deviation about c, sqrt(mean((S − c)²)) — the robust variant.

    Notes
    -----
    ELKI 0.7.1 ``StandardDeviationScaling`` (``MinusLogStandardDeviationScaling`` = this after
    :func:`~odeval.scaling.log_inversion`). A zero σ is replaced by the smallest normal double, as in ELKI,
    so a constant scoring maps to 0 and anything above it to 1. erf is ``scipy.special.erf`` (ELKI uses its own;
    the two agree to ~1e-14).

    References
    ----------
    H.-P. Kriegel, P. Kröger, E. Schubert, A. Zimek. Interpreting and Unifying Outlier Scores. SDM 2011.
    """

    _fitted = ("mean_", "std_", "factor_")
    name = "gaussian"

    def __init__(self, lam: float = 1.0, center: float | Literal["mean", "median"] = "mean") -> None:
        if not (isinstance(lam, int | float) and lam > 0 and math.isfinite(lam)):
            raise ValueError(f"lam must be a positive finite number, got {lam!r}")
        if not (center in ("mean", "median") or (isinstance(center, int | float) and math.isfinite(center))):
            raise ValueError(f"center must be 'mean', 'median' or a finite number, got {center!r}")
        self.lam = float(lam)
        self.center = center

    def params(self) -> dict[str, Any]:
        return {"lam": self.lam, "center": self.center}

    def _fit(self, x: np.ndarray) -> None:
        if self.center == "mean":
            fin = finite_values(x, minimum=2, what="Gaussian scaling")
            mu = float(fin.mean())
            sd = float(fin.std(ddof=1))
        else:
            fin = finite_values(x, minimum=1, what="Gaussian scaling")
            mu = float(np.median(fin)) if self.center == "median" else float(self.center)
            sd = math.sqrt(float(np.mean((fin - mu) ** 2)))
        factor = self.lam * sd * _SQRT2
        self.mean_, self.std_, self.factor_ = mu, sd, (factor if factor != 0.0 else _MIN_NORMAL)

    def _transform(self, x: np.ndarray) -> np.ndarray:
        out = np.maximum(0.0, special.erf((x - self.mean_) / self.factor_))
        out[x <= self.mean_] = 0.0
        return out


# ---------------------------------------------------------------------------------------------------- gamma
class GammaScaling(ScoreScaling):
    """Gamma scaling (Kriegel et al. 2011, Sect. 3.2): fit a Gamma distribution by moments and map
    ``max(0, (F(S) − F(μ)) / (1 − F(μ)))``.

    k = μ²/σ², θ = σ²/μ (μ, σ² = mean and sample variance of the finite scores), F the Gamma(k, θ) CDF
    (the regularised lower incomplete gamma function P(k, S/θ)). Scores at or below the mean map to 0.

    Meant for non-negative scores with a skewed distribution (kNN distances, regularised LOF); regularise
    first (:func:`~odeval.scaling.baseline_regularization`, :func:`~odeval.scaling.log_inversion`).
    A negative score is treated as 0 (F = 0).

    Notes
    -----
    ELKI 0.7.1 ``OutlierGammaScaling`` (without ``-gammascale.normalize``) and, after
    ``log_inversion(raw, normalize=True)``, ``MinusLogGammaScaling``. ELKI maps NaN and ±inf to 1; odeval
    maps +inf to 1, −inf to 0 and keeps NaN. Degenerate case (σ = 0, a constant scoring): ELKI produces NaN;
    odeval maps scores at or below the constant to 0 and above it to 1. A non-positive mean (with σ > 0)
    raises ``ValueError``: the moment fit is undefined.

    References
    ----------
    H.-P. Kriegel, P. Kröger, E. Schubert, A. Zimek. Interpreting and Unifying Outlier Scores. SDM 2011.
    """

    _fitted = ("mean_", "k_", "theta_", "cdf_at_mean_")
    name = "gamma"

    def _fit(self, x: np.ndarray) -> None:
        fin = finite_values(x, minimum=2, what="Gamma scaling")
        mu = float(fin.mean())
        var = float(fin.var(ddof=1))
        if var == 0.0:
            self.mean_, self.k_, self.theta_, self.cdf_at_mean_ = mu, math.inf, 0.0, 0.0
            return
        if not mu > 0.0:
            raise ValueError(
                f"Gamma scaling needs scores with a positive mean (got mean {mu!r}); regularise the scores "
                "first, e.g. baseline_regularization or log_inversion"
            )
        k = mu * mu / var
        theta = var / mu
        self.mean_, self.k_, self.theta_ = mu, k, theta
        self.cdf_at_mean_ = float(special.gammainc(k, mu / theta))

    def _transform(self, x: np.ndarray) -> np.ndarray:
        if self.theta_ == 0.0:  # constant scoring
            out = (x > self.mean_).astype(np.float64)
            out[np.isnan(x)] = np.nan
            return out
        z = x / self.theta_
        z[z < 0.0] = 0.0  # F(negative) = 0; NaN stays NaN
        cdf = special.gammainc(self.k_, z)
        out = np.maximum(0.0, (cdf - self.cdf_at_mean_) / (1.0 - self.cdf_at_mean_))
        out[np.isposinf(x)] = 1.0
        return out


# -------------------------------------------------------------------------------------------------- sigmoid
class SigmoidScaling(ScoreScaling):
    """Sigmoid calibration of Gao & Tan (ICDM 2006): ``P(outlier | S) = 1 / (1 + exp(−A·S − B))``.

    A and B are fitted by the EM-like loop of ELKI 0.7.1's ``SigmoidOutlierScalingFunction``: start A = 1,
    B = −mean(S); E-step: label objects with A·S + B > 0 as outliers; M-step: Platt's sigmoid fit with the
    Newton / backtracking method of Lin, Lin & Weng (2007) (≤ 10 Newton steps); repeat until the labelling no
    longer changes (≤ 101 M-steps). The start value uses ELKI's running mean, so that scores tied exactly at
    the mean are labelled as ELKI labels them.

    Notes
    -----
    The M-step targets are ELKI's: ``1/(n₀+2)`` for the objects labelled outlier and ``(n₁+1)/(n₁+2)`` for
    the others (for the inlier probability), where n₁ / n₀ count the objects labelled outlier / inlier. Platt's
    prior correction would use the other class's count in each target; odeval follows ELKI so that
    results match it. Only finite scores enter the fit (ELKI's ``prepare(OutlierResult)`` also uses NaN/±inf,
    which makes the fit NaN).

    References
    ----------
    J. Gao, P.-N. Tan. Converting Output Scores from Outlier Detection Algorithms into Probability Estimates.
    ICDM 2006.
    H.-T. Lin, C.-J. Lin, R. C. Weng. A note on Platt's probabilistic outputs for support vector machines.
    Machine Learning 68, 2007.
    """

    _fitted = ("a_", "b_", "n_iter_")
    name = "sigmoid"

    def _fit(self, x: np.ndarray) -> None:
        fin = finite_values(x, minimum=2, what="sigmoid scaling")
        a, b = 1.0, -_incremental_mean(fin)
        t = np.zeros(fin.size, dtype=bool)
        it = 0
        with np.errstate(over="ignore", under="ignore"):
            while True:
                new_t = a * fin + b > 0
                if np.array_equal(new_t, t):
                    break
                t = new_t
                a, b = _platt_mstep(fin, t, a, b)
                it += 1
                if it > 100:
                    break
        self.a_, self.b_, self.n_iter_ = a, b, it

    def _transform(self, x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-self.a_ * x - self.b_))


def _incremental_mean(x: np.ndarray) -> float:
    """The running mean ``m += (x_i − m)/i`` of ELKI's ``MeanVariance``. Used only for the sigmoid's start
    value B = −mean, where a last-bit difference decides the first E-step for scores tied at the mean
    (e.g. ODIN's in-degrees, whose mean is exactly 1)."""
    m = 0.0
    for i, v in enumerate(x.tolist(), start=1):
        m += (v - m) / i
    return m


def _platt_objective(x: np.ndarray, ti: np.ndarray, a: float, b: float) -> float:
    f = x * a + b
    pos = f >= 0
    e = np.exp(-np.abs(f))
    val = np.where(pos, ti * f, (ti - 1.0) * f) + np.log(1.0 + e)
    return float(val.sum())


def _platt_mstep(x: np.ndarray, t: np.ndarray, a: float, b: float) -> tuple[float, float]:
    """One M-step: Platt's sigmoid fit (Lin, Lin & Weng 2007, Algorithm 1) with ELKI 0.7.1's targets."""
    prior1 = int(t.sum())
    prior0 = t.size - prior1
    lo_target = (prior1 + 1.0) / (prior1 + 2.0)
    hi_target = 1.0 / (prior0 + 2.0)
    ti = np.where(t, hi_target, lo_target)
    maxiter, minstep, sigma = 10, 1e-8, 1e-12
    fval = _platt_objective(x, ti, a, b)
    for it in range(maxiter):
        f = x * a + b
        e = np.exp(-np.abs(f))
        pos = f >= 0
        p = np.where(pos, e / (1.0 + e), 1.0 / (1.0 + e))
        q = np.where(pos, 1.0 / (1.0 + e), e / (1.0 + e))
        d2 = p * q
        h11 = sigma + float(np.sum(x * x * d2))
        h22 = sigma + float(np.sum(d2))
        h21 = float(np.sum(x * d2))
        d1 = ti - p
        g1 = float(np.sum(x * d1))
        g2 = float(np.sum(d1))
        if abs(g1) < 1e-5 and abs(g2) < 1e-5:
            break
        det = h11 * h22 - h21 * h21
        d_a = -(h22 * g1 - h21 * g2) / det
        d_b = -(-h21 * g1 + h11 * g2) / det
        gd = g1 * d_a + g2 * d_b
        step = 1.0
        while step >= minstep:
            new_a, new_b = a + step * d_a, b + step * d_b
            newf = _platt_objective(x, ti, new_a, new_b)
            if newf < fval + 0.0001 * step * gd:
                a, b, fval = new_a, new_b, newf
                break
            step /= 2.0
        if it + 1 >= maxiter:
            break
    return a, b


# -------------------------------------------------------------------------------------------------- mixture
class MixtureModelScaling(ScoreScaling):
    """Mixture-model calibration of Gao & Tan (ICDM 2006): scores are modelled as
    ``α·N(μ, σ²)`` (outliers) ``+ (1 − α)·Exp(λ)`` (inliers), fitted by EM; the transform is the posterior
    outlier probability ``α·p(S) / (α·p(S) + (1 − α)·q(S))``.

    Start (ELKI 0.7.1 ``MixtureModelOutlierScalingFunction``): μ = 2·mean, σ = sample standard deviation,
    λ = 1/μ, α = 0.05; EM until all four parameters change by less than 1e-4 (the previous parameters are
    kept), at most 101 iterations.

    Notes
    -----
    Only finite scores enter the fit. As in ELKI, an undefined posterior (0/0: both densities underflow, e.g.
    far beyond the Gaussian) maps to 0; odeval additionally maps +inf to 1 and −inf to 0 and keeps NaN.
    The exponential component gives far-out scores to the *inlier* class once the Gaussian density underflows
    — a property of the model, not of the implementation.

    References
    ----------
    J. Gao, P.-N. Tan. Converting Output Scores from Outlier Detection Algorithms into Probability Estimates.
    ICDM 2006.
    """

    _fitted = ("mu_", "sigma_", "lambda_", "alpha_", "n_iter_")
    name = "mixture"

    def _fit(self, x: np.ndarray) -> None:
        fin = finite_values(x, minimum=2, what="mixture-model scaling")
        mu = float(fin.mean()) * 2.0
        if mu == 0.0:
            mu = _MIN_NORMAL
        sigma = max(float(fin.std(ddof=1)), _MIN_NORMAL)
        lam = min(1.0 / mu, _MAX_VALUE)
        alpha = 0.05
        delta = 0.0001
        it = 0
        with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
            while True:
                ti = _posterior(fin, alpha, mu, sigma, lam)
                otisum = float(ti.sum())
                itisum = float((1.0 - ti).sum())
                owsum = float((ti * fin).sum())
                iwsum = float(((1.0 - ti) * fin).sum())
                osqsum = float((ti * fin * fin).sum())
                if otisum <= 0.0 or owsum <= 0.0:
                    break
                new_mu = owsum / otisum
                new_sigma = max(math.sqrt(max(osqsum / otisum - new_mu * new_mu, 0.0)), _MIN_NORMAL)
                new_lam = min(itisum / iwsum, _MAX_VALUE) if iwsum != 0 else _MAX_VALUE
                new_alpha = otisum / fin.size
                if (abs(new_mu - mu) < delta and abs(new_sigma - sigma) < delta and abs(new_lam - lam) < delta
                        and abs(new_alpha - alpha) < delta):
                    break
                if new_sigma <= 0.0 or new_alpha <= 0.0:
                    break
                mu, sigma, lam, alpha = new_mu, new_sigma, new_lam, new_alpha
                it += 1
                if it > 100:
                    break
        self.mu_, self.sigma_, self.lambda_, self.alpha_, self.n_iter_ = mu, sigma, lam, alpha, it

    def _transform(self, x: np.ndarray) -> np.ndarray:
        out = _posterior(x, self.alpha_, self.mu_, self.sigma_, self.lambda_)
        nan_in = np.isnan(x)
        out[np.isnan(out) & ~nan_in] = 0.0
        out[np.isposinf(x)] = 1.0
        out[np.isneginf(x)] = 0.0
        return out


_ONE_BY_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _posterior(f: np.ndarray, alpha: float, mu: float, sigma: float, lam: float) -> np.ndarray:
    fmu = f - mu
    p = _ONE_BY_SQRT2PI / sigma * np.exp(fmu * fmu / (-2.0 * sigma * sigma))
    q = lam * np.exp(-lam * f)
    return (alpha * p) / (alpha * p + (1.0 - alpha) * q)


# ------------------------------------------------------------------------------------------- pure functions
def linear_scaling(
    scores: Any, lower: float | Literal["min", "mean"] = "min", upper: float | None = None
) -> np.ndarray:
    """``LinearScaling(lower, upper).fit_transform(scores)``; see :class:`LinearScaling`."""
    return LinearScaling(lower, upper).fit_transform(scores)


def gaussian_scaling(scores: Any, lam: float = 1.0, center: float | Literal["mean", "median"] = "mean") -> np.ndarray:
    """``GaussianScaling(lam, center).fit_transform(scores)``; see :class:`GaussianScaling` (Kriegel et al.
    2011, Gaussian scaling)."""
    return GaussianScaling(lam, center).fit_transform(scores)


def gamma_scaling(scores: Any) -> np.ndarray:
    """``GammaScaling().fit_transform(scores)``; see :class:`GammaScaling` (Kriegel et al. 2011)."""
    return GammaScaling().fit_transform(scores)


def sigmoid_scaling(scores: Any) -> np.ndarray:
    """``SigmoidScaling().fit_transform(scores)``; see :class:`SigmoidScaling` (Gao & Tan 2006)."""
    return SigmoidScaling().fit_transform(scores)


def mixture_model_scaling(scores: Any) -> np.ndarray:
    """``MixtureModelScaling().fit_transform(scores)``; see :class:`MixtureModelScaling` (Gao & Tan 2006)."""
    return MixtureModelScaling().fit_transform(scores)
