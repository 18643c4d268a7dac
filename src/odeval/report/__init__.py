"""odeval.report — the figures of Campos et al. (2016), §5, and a static HTML report of a study.

:func:`build_report` writes the report; :mod:`odeval.report.plots` holds each figure as a function
returning a matplotlib Figure (matplotlib is imported lazily, only when a figure is drawn).
"""

from odeval.report.from_store import report_from_store
from odeval.report.html import build_report
from odeval.report.store import StoreTables, read_best_k_ranks, read_best_k_scores, read_results_store

__all__ = ["StoreTables", "build_report", "read_best_k_ranks", "read_best_k_scores", "read_results_store",
           "report_from_store"]
