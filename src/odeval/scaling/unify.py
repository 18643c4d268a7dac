"""``unify(scores, method)``: the recommended regularisation + normalisation per method (Kriegel, Kröger,
Schubert, Zimek, SDM 2011), turning any odeval scoring into comparable outlier probabilities in [0, 1].

The recommendations are those of the ELKI authors' own pipeline for Schubert et al. (SDM 2012) — ELKI 0.5's
``ComputeKNNOutlierScores``, which applied the Kriegel et al. unification per method — extended to the
remaining Campos et al. (2016) methods by the same rules. The recipe is chosen from the method's
:class:`~odeval.detectors.MethodInfo` (its ``scaling`` kind, else ``inverted`` / ``inlier_value``), never from
its name:

=========================== ======================== ==========================================================
method                      regularisation           normalisation
=========================== ======================== ==========================================================
KNN, KNNW                   none (baseline 0)        Gaussian scaling, λ = 1, μ = mean, σ = sample std
LOF, SimplifiedLOF, LDOF,   baseline (inlier value)  Gaussian scaling, λ = 1, centred at the baseline
COF, INFLO                                           (σ = RMS deviation from the baseline; ELKI
                                                     ``StandardDeviationScaling(1.0, 1.0)``)
LoOP, KDEOS                 none                     none: already probabilities (clipped to [0, 1])
ODIN                        linear inversion         Gaussian scaling, λ = 1, μ = mean
FastABOD                    logarithmic inversion    Gaussian scaling, λ = 1, μ = mean
                                                     (ELKI ``MinusLogStandardDeviationScaling(null, 1.0)``)
other / LDF, GLOSH          ``MethodInfo.scaling`` unset: inversion if ``inverted``, baseline-centred if
                            ``inlier_value > 0``, else Gaussian scaling about the mean
=========================== ======================== ==========================================================

Orientation: ``unify`` takes odeval's **public** scores by default (higher = more outlying; ``-raw`` for
ODIN/FastABOD) and converts them to raw scores before the inversions; pass ``orientation="raw"`` for raw
scores (``Detector.raw_scores_all_k``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from odeval.scaling._common import as_score_vector, raw_from_public
from odeval.scaling.normalize import GaussianScaling, ScoreScaling
from odeval.scaling.regularize import linear_inversion, log_inversion

__all__ = ["Unification", "recommended_unification", "unify"]

@dataclass(frozen=True)
class Unification:
    """A regularisation + normalisation recipe for one method.

    Attributes
    ----------
    method : str
    inverted : bool
        Whether the method's raw score is low for outliers (public scores are then ``-raw``).
    regularization : {"none", "baseline", "linear_inversion", "log_inversion"}
    normalization : {"gaussian", "identity"}
    baseline : float or None
        The inlier value used by a baseline-centred normalisation.
    lam : float
        λ of the Gaussian scaling.
    description : str
        One line stating the recipe and its source, for reports.
    """

    method: str
    inverted: bool
    regularization: Literal["none", "baseline", "linear_inversion", "log_inversion"]
    normalization: Literal["gaussian", "identity"]
    baseline: float | None
    lam: float
    description: str

    def scaler(self) -> ScoreScaling | None:
        """The normalisation to fit on the regularised scores (None = identity, clipped to [0, 1])."""
        if self.normalization == "identity":
            return None
        if self.regularization == "baseline":
            return GaussianScaling(self.lam, center=float(self.baseline))  # type: ignore[arg-type]
        return GaussianScaling(self.lam, center="mean")

    def regularize(self, raw: np.ndarray) -> np.ndarray:
        """Apply the regularisation to raw scores. The baseline-centred Gaussian scaling subtracts the baseline
        itself, so ``"baseline"`` leaves the raw scores unchanged here."""
        if self.regularization == "linear_inversion":
            return linear_inversion(raw)
        if self.regularization == "log_inversion":
            return log_inversion(raw)
        return np.asarray(raw, dtype=np.float64).copy()

    def apply(self, scores: Any, *, orientation: Literal["public", "raw"] = "public") -> np.ndarray:
        """Unified scores in [0, 1] (NaN stays NaN) for one scoring of this method."""
        if orientation not in ("public", "raw"):
            raise ValueError(f"orientation must be 'public' or 'raw', got {orientation!r}")
        raw = raw_from_public(scores, self.inverted) if orientation == "public" else as_score_vector(scores)
        reg = self.regularize(raw)
        scaler = self.scaler()
        if scaler is None:
            return np.clip(reg, 0.0, 1.0)
        return scaler.fit_transform(reg)


def _resolve(method: Any) -> Any:
    """The MethodInfo of a name (odeval's registry), a MethodInfo or a Detector; None for an unknown name."""
    info = getattr(method, "info", method)
    if hasattr(info, "name") and hasattr(info, "inverted"):
        return info
    if isinstance(method, str):
        from odeval.detectors import get_detector

        try:
            return get_detector(method).info
        except ValueError:
            return None
    raise TypeError(f"method must be a name, a MethodInfo or a Detector, got {type(method)!r}")


def recommended_unification(method: Any, *, lam: float = 1.0) -> Unification:
    """The recommended regularisation + normalisation for ``method`` (see the module docstring).

    Parameters
    ----------
    method : str, MethodInfo or Detector
        A method name of odeval's registry (case-insensitive), or its ``MethodInfo`` / detector. Unknown names
        without a ``MethodInfo`` get Gaussian scaling about the mean.
    lam : float, default 1.0
        λ of the Gaussian scaling (Kriegel et al.: 1; ELKI's command-line default: 3).

    References
    ----------
    H.-P. Kriegel, P. Kröger, E. Schubert, A. Zimek. Interpreting and Unifying Outlier Scores. SDM 2011.
    E. Schubert, R. Wojdanowski, A. Zimek, H.-P. Kriegel. On Evaluation of Outlier Rankings and Outlier
    Scores. SDM 2012.
    """
    info = _resolve(method)
    if info is None:  # a name outside the registry: no MethodInfo, no recipe
        return Unification(str(method), False, "none", "gaussian", None, lam,
                           f"{method}: Gaussian scaling (λ={lam:g}) about the mean (default for methods without a "
                           "specific recommendation)")
    name, inverted, inlier = str(info.name), bool(info.inverted), info.inlier_value
    kind = getattr(info, "scaling", None)
    if kind is None:  # derived from the orientation and the inlier value
        kind = ("linear_inversion" if inverted else "ratio" if inlier is not None and inlier > 0 else "mean")
    if kind in ("linear_inversion", "log_inversion"):
        what = "linear" if kind == "linear_inversion" else "logarithmic"
        return Unification(name, True, kind, "gaussian", None, lam,  # type: ignore[arg-type]
                           f"{name}: {what} inversion of the raw score, then Gaussian scaling (λ={lam:g}) "
                           "about the mean (Kriegel et al. 2011)")
    if kind == "probability":
        return Unification(name, inverted, "none", "identity", None, lam,
                           f"{name}: already an outlier probability; identity, clipped to [0, 1]")
    if kind == "distance":
        return Unification(name, inverted, "none", "gaussian", None, lam,
                           f"{name}: Gaussian scaling (λ={lam:g}) about the mean, sample std "
                           "(baseline 0; Kriegel et al. 2011)")
    if kind == "ratio":
        base = float(inlier) if inlier is not None else 1.0
        return Unification(name, inverted, "baseline", "gaussian", base, lam,
                           f"{name}: Gaussian scaling (λ={lam:g}) centred at the baseline {base:g}, σ = RMS "
                           "deviation from it (Kriegel et al. 2011 baseline regularisation)")
    return Unification(name, inverted, "none", "gaussian", None, lam,
                       f"{name}: Gaussian scaling (λ={lam:g}) about the mean (default for methods without a "
                       "specific recommendation)")


def unify(
    scores: Any, method: Any, *, orientation: Literal["public", "raw"] = "public", lam: float = 1.0
) -> np.ndarray:
    """Unified outlier scores in [0, 1] with the recommended recipe for ``method`` (Kriegel et al. 2011).

    Parameters
    ----------
    scores : array-like of shape (n_objects,)
        One scoring. NaN and ±inf are allowed: they are ignored when fitting; +inf maps to 1, NaN stays NaN.
    method : str, MethodInfo or Detector
        Which method produced the scores; see :func:`recommended_unification`.
    orientation : {"public", "raw"}, default "public"
        ``"public"``: odeval's public scores (higher = more outlying, ``-raw`` for inverted methods).
    lam : float, default 1.0
        λ of the Gaussian scaling.

    Returns
    -------
    ndarray of shape (n_objects,)
        Comparable outlier probabilities; higher = more outlying for every method.

    Examples
    --------
    >>> import numpy as np
    >>> from odeval.scaling import unify
    >>> unify(np.array([1.0, 1.02, 0.97, 1.01, 3.5]), "LOF").round(3).tolist()
    [0.0, 0.014, 0.0, 0.007, 0.975]
    """
    return recommended_unification(method, lam=lam).apply(scores, orientation=orientation)
