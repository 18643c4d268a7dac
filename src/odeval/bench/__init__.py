"""Stage: studies — the study definition (TOML), the runner and the DuckDB results store."""

from odeval.bench.config import DatasetRef, MethodSpec, Study, StudyError, load_study, parse_k_range, study_from_dict
from odeval.bench.runner import RunSummary, run_study
from odeval.bench.store import ResultStore

__all__ = ["DatasetRef", "MethodSpec", "ResultStore", "RunSummary", "Study", "StudyError", "load_study",
           "parse_k_range", "run_study", "study_from_dict"]
