"""Stage: studies — the study definition (TOML), the runner and the DuckDB results store."""

from odeval.bench.config import MethodSpec, Study, StudyError, load_study, parse_k_range, study_from_dict
from odeval.bench.ensembles import (
    NoStoredScoresError,
    StoredScorings,
    StoreEnsemble,
    StoreSimilarity,
    ensemble_from_store,
    read_scorings,
    similarity_from_store,
)
from odeval.bench.runner import RunSummary, run_study
from odeval.bench.store import InternalMeasure, ResultStore, StoreError, StoreInUseError, StoreVersionError

__all__ = ["InternalMeasure", "MethodSpec", "NoStoredScoresError", "ResultStore", "RunSummary", "StoreEnsemble",
           "StoreError", "StoreInUseError", "StoreSimilarity", "StoreVersionError", "StoredScorings", "Study",
           "StudyError", "ensemble_from_store", "load_study", "parse_k_range", "read_scorings", "run_study",
           "similarity_from_store", "study_from_dict"]
