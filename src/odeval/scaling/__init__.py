"""odeval.scaling: regularisation and normalisation of outlier scores (Kriegel, Kröger, Schubert, Zimek,
SDM 2011; Gao & Tan, ICDM 2006), so that scorings of different methods become comparable outlier
probabilities in [0, 1]. See ``docs/scaling-and-ensembles.md``."""

from odeval.scaling._common import public_from_raw, raw_from_public
from odeval.scaling.normalize import (
    GammaScaling,
    GaussianScaling,
    LinearScaling,
    MixtureModelScaling,
    ScoreScaling,
    SigmoidScaling,
    gamma_scaling,
    gaussian_scaling,
    linear_scaling,
    mixture_model_scaling,
    sigmoid_scaling,
)
from odeval.scaling.regularize import baseline_regularization, linear_inversion, log_inversion, regularize
from odeval.scaling.unify import Unification, recommended_unification, unify

__all__ = [
    "GammaScaling",
    "GaussianScaling",
    "LinearScaling",
    "MixtureModelScaling",
    "ScoreScaling",
    "SigmoidScaling",
    "Unification",
    "baseline_regularization",
    "gamma_scaling",
    "gaussian_scaling",
    "linear_inversion",
    "linear_scaling",
    "log_inversion",
    "mixture_model_scaling",
    "public_from_raw",
    "raw_from_public",
    "recommended_unification",
    "regularize",
    "sigmoid_scaling",
    "unify",
]
