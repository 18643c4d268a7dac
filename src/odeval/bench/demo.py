"""The built-in demo study: the vendored Campos datasets, the twelve methods, k = 1..100."""

from __future__ import annotations

from typing import Any

from odeval.detectors.campos import CAMPOS_CKS_METHODS, CAMPOS_METHODS  # declared with the detectors

__all__ = ["CAMPOS_CKS_METHODS", "CAMPOS_METHODS", "demo_study"]

def demo_study(k: str = "1..100") -> dict[str, Any]:
    """The demo study as a dict for :func:`odeval.bench.study_from_dict`.

    Datasets: every vendored variant that is ready for distance-based methods (normalised, numeric — the
    Lymphography variants with IDF-encoded categorical attributes included), so that the demo runs on a
    machine without the shared benchmark folder.
    """
    from odeval.data import catalogue

    paths = sorted(v.path for v in catalogue.vendored() if v.normalized and v.categorical in (None, "idf"))
    return {
        "study": {"name": "odeval-demo", "k": k, "keep_scores": True},
        "datasets": [{"path": p} for p in paths],
        "methods": [dict(m) for m in CAMPOS_METHODS],
    }
