"""External evaluation measures of outlier scorings (ground-truth labels needed).

Every function takes ``labels`` (bool or 0/1, True = outlier) and ``scores`` (higher = more outlying) and follows
ELKI 0.7.1's tie rules, the reference implementation of Campos et al. (2016). :func:`evaluate` computes all of
:data:`MEASURES` from one sort. See ``docs/measures.md``. Internal measures (no labels) live in
:mod:`odeval.measures.internal`.
"""

from odeval.measures._ranking import (
    MEASURES,
    MEASURES_AT_N,
    PrecisionRecallF1,
    adjust_for_chance,
    adjusted_average_precision,
    adjusted_max_f1,
    adjusted_precision_at_n,
    adjusted_r_precision,
    adjusted_roc_auc,
    average_precision,
    avpr,
    evaluate,
    evaluate_many,
    finite_for_ranking,
    max_f1,
    max_f1_threshold,
    outlier_ranks,
    precision_at_n,
    precision_recall_curve,
    precision_recall_f1_at_count,
    precision_recall_f1_at_threshold,
    r_precision,
    roc_auc,
    roc_curve,
)

__all__ = [
    "MEASURES",
    "MEASURES_AT_N",
    "PrecisionRecallF1",
    "adjust_for_chance",
    "adjusted_average_precision",
    "adjusted_max_f1",
    "adjusted_precision_at_n",
    "adjusted_r_precision",
    "adjusted_roc_auc",
    "average_precision",
    "avpr",
    "evaluate",
    "evaluate_many",
    "max_f1",
    "max_f1_threshold",
    "outlier_ranks",
    "precision_at_n",
    "precision_recall_curve",
    "precision_recall_f1_at_count",
    "precision_recall_f1_at_threshold",
    "r_precision",
    "roc_auc",
    "roc_curve",
    "finite_for_ranking",
]
