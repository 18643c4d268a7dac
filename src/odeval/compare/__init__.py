"""odeval.compare: similarity of outlier scorings and outlier ensembles (Schubert, Wojdanowski, Zimek,
Kriegel, SDM 2012; ``docs/scaling-and-ensembles.md``) and label-free model selection
(:mod:`odeval.compare.selection`; ``docs/model-selection.md``)."""

from odeval.compare.ensemble import (
    COMBINATION_RULES,
    EnsembleEvaluation,
    GreedyEnsemble,
    combine,
    evaluate_ensembles,
    gain,
    greedy_ensemble,
    random_ensemble_aucs,
)
from odeval.compare.plot import plot_similarity_matrix
from odeval.compare.selection import (
    SELECTORS,
    Selection,
    SelectorInfo,
    available_selectors,
    get_selector,
    model_centrality,
    register_selector,
    run_selector,
)
from odeval.compare.similarity import (
    MEASURES,
    check_score_matrix,
    class_balanced_weights,
    estimated_outliers,
    kendall_tau_b,
    similarity,
    similarity_matrix,
    spearman_rho,
    weighted_manhattan,
    weighted_pearson,
    weighted_squared_euclidean,
)

__all__ = [
    "COMBINATION_RULES",
    "MEASURES",
    "SELECTORS",
    "EnsembleEvaluation",
    "GreedyEnsemble",
    "Selection",
    "SelectorInfo",
    "available_selectors",
    "get_selector",
    "model_centrality",
    "register_selector",
    "run_selector",
    "check_score_matrix",
    "class_balanced_weights",
    "combine",
    "estimated_outliers",
    "evaluate_ensembles",
    "gain",
    "greedy_ensemble",
    "kendall_tau_b",
    "plot_similarity_matrix",
    "random_ensemble_aucs",
    "similarity",
    "similarity_matrix",
    "spearman_rho",
    "weighted_manhattan",
    "weighted_pearson",
    "weighted_squared_euclidean",
]
