"""odeval.analysis — aggregation, statistics and dataset characterisation over a results store.

Every function takes and returns pandas DataFrames of the results-store schema (DEVELOPERS.md, "bench →
analysis"): the ``runs`` table (one row per dataset variant, method, params, k, with one column per
measure) and the ``outlier_ranks`` table. They answer the questions of Campos et al. (2016), §5.
"""

from odeval.analysis._schema import (
    DEFAULT_MEASURES,
    check_ranks_frame,
    check_runs_frame,
    dataset_table,
    known_measures,
    measure_columns,
)
from odeval.analysis.aggregate import (
    STATISTICS,
    aggregate_datasets,
    aggregate_variants,
    filter_variants,
    per_variant_summary,
    seed_spread,
    study_summary,
)
from odeval.analysis.characterize import (
    best_k_binned_ranks,
    bin_ranks,
    dataset_baselines,
    difficulty_diversity,
    difficulty_diversity_from_bins,
    label_permutation_test,
    permutation_test_summary,
    permutation_tests,
    pooled_permutation_summary,
    random_ranker_baselines,
    rank_objects,
)
from odeval.analysis.selection import (
    CandidateSet,
    SelectionAudit,
    audit_selection,
    candidates_from_store,
    paper_candidates,
)
from odeval.analysis.stats import (
    TABLE_SYMBOLS,
    average_ranks,
    friedman_test,
    nemenyi_claims,
    nemenyi_critical_difference,
    nemenyi_table,
    nemenyi_test,
    performance_matrix,
    rank_matrix,
)

__all__ = [
    "DEFAULT_MEASURES",
    "CandidateSet",
    "SelectionAudit",
    "audit_selection",
    "candidates_from_store",
    "paper_candidates",
    "STATISTICS",
    "TABLE_SYMBOLS",
    "aggregate_datasets",
    "aggregate_variants",
    "average_ranks",
    "best_k_binned_ranks",
    "bin_ranks",
    "check_ranks_frame",
    "check_runs_frame",
    "dataset_baselines",
    "dataset_table",
    "difficulty_diversity",
    "difficulty_diversity_from_bins",
    "filter_variants",
    "friedman_test",
    "known_measures",
    "label_permutation_test",
    "measure_columns",
    "nemenyi_claims",
    "nemenyi_critical_difference",
    "nemenyi_table",
    "nemenyi_test",
    "per_variant_summary",
    "performance_matrix",
    "permutation_test_summary",
    "permutation_tests",
    "pooled_permutation_summary",
    "random_ranker_baselines",
    "rank_matrix",
    "rank_objects",
    "seed_spread",
    "study_summary",
]
