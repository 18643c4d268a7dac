"""odeval.report — the figures of Campos et al. (2016), §5, and a static HTML report of a study.

:func:`build_report` writes the report; :mod:`odeval.report.plots` holds each figure as a function
returning a matplotlib Figure (matplotlib is imported lazily, only when a figure is drawn).
"""

from odeval.report.from_store import report_from_store
from odeval.report.html import build_report

__all__ = ["build_report", "report_from_store"]
