"""odeval.detectors"""

# Method modules register their detectors on import:
# LDOF, COF, FastABOD, INFLO, GLOSH, KNN, KNNW, LOF, SimplifiedLOF, LoOP, ODIN, KDEOS, LDF.
from odeval.detectors import abod, cof, glosh, inflo, kdeos, knn, ldf, ldof, lof, loop, odin  # noqa: F401
from odeval.detectors.adapters import EstimatorDetector, wrap_estimator
from odeval.detectors.base import (
    ALL_METHODS,
    Detector,
    MethodInfo,
    MethodVariant,
    available_methods,
    check_ks,
    expand_methods,
    get_detector,
    novelty_methods,
    orient,
    register,
)
from odeval.detectors.novelty import NoveltyDetector

__all__ = ["ALL_METHODS", "Detector", "MethodInfo", "MethodVariant", "available_methods", "check_ks",
           "expand_methods", "get_detector", "orient",
           "register", "EstimatorDetector", "wrap_estimator", "NoveltyDetector", "novelty_methods"]
