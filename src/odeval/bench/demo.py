"""The built-in demo: the labelled half (a study on the vendored Campos datasets, the twelve methods, k = 1..100)
and the label-free half (``odeval select`` on one vendored dataset with its labels held back)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from odeval.detectors.campos import CAMPOS_CKS_METHODS, CAMPOS_METHODS  # declared with the detectors

__all__ = ["CAMPOS_CKS_METHODS", "CAMPOS_METHODS", "DEMO_SELECT", "demo_select", "demo_study"]

DEMO_SELECT = {"dataset": "WBC_withoutdupl_norm_v01", "labels": "outlier", "k_max": 30, "resamples": 2}
"""The label-free half of the demo: the vendored dataset, its label column (held back: read only after the
selection, by ``--check-labels``) and the small settings that keep it to seconds (``odeval select`` defaults:
k ≤ 100 and 10 resamples, about ten times longer)."""

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


def demo_select_path() -> Path:
    """The vendored file of :data:`DEMO_SELECT`."""
    from odeval.data import catalogue

    return next(Path(v.path) for v in catalogue.vendored() if Path(v.path).stem == DEMO_SELECT["dataset"])


_SELECT_FILES = ("scores.csv", "select.json", "select.html")


def demo_select(out_dir: str | Path, page: Callable[[Any, Path], Any] | None = None) -> tuple[Any, list[str],
                                                                                             list[Path]]:
    """Run ``odeval select`` on the demo's vendored dataset with its labels held back, and write its files.

    The same as ``odeval select FILE --check-labels outlier --k-max 30 --resamples 2 -o OUT_DIR``: the labels are
    read after the selection and only evaluate it. ``page`` writes the HTML page
    (:func:`odeval.report.select_page.write_select_page`; the report is a later stage, so the caller passes it).
    The files of an earlier demo run in ``out_dir`` are replaced; any other file there is an error.

    Returns
    -------
    (Recommendation, notes, written paths)
    """
    from odeval.labelfree import SelectSettings
    from odeval.labelfree.table import select_file, write_outputs

    out = Path(out_dir)
    if out.is_dir():
        others = sorted(p.name for p in out.iterdir() if p.name not in _SELECT_FILES)
        if others:
            raise ValueError(f"{out}: holds files the demo did not write ({', '.join(others)}); give another folder")
    settings = SelectSettings(k_max=int(DEMO_SELECT["k_max"]), resamples=int(DEMO_SELECT["resamples"]),
                              details=True)
    rec, notes = select_file(demo_select_path(), check_labels=str(DEMO_SELECT["labels"]), settings=settings)
    for name in _SELECT_FILES:  # an earlier demo's files: replaced only once the new selection has succeeded
        (out / name).unlink(missing_ok=True)
    if out.is_dir():
        out.rmdir()
    return rec, notes, write_outputs(rec, out, page=page)


def demo_select_command() -> str:
    """The ``odeval select`` command line the demo's label-free half equals (printed for the user to rerun)."""
    import os

    path = demo_select_path()
    rel = os.path.relpath(path)
    path = Path(rel) if not rel.startswith("..") else path  # inside the working folder (a checkout): short
    return (f"odeval select {path} --check-labels {DEMO_SELECT['labels']} --k-max {DEMO_SELECT['k_max']} "
            f"--resamples {DEMO_SELECT['resamples']}")
