"""The built-in demo study: the vendored Campos datasets, the twelve methods, k = 1..100."""

from __future__ import annotations

from typing import Any

__all__ = ["CAMPOS_CKS_METHODS", "CAMPOS_METHODS", "demo_study"]

#: The twelve methods of Campos et al. (2016), in the paper's order, with the study's parameters.
CAMPOS_METHODS: tuple[dict[str, Any], ...] = (
    {"name": "kNN"}, {"name": "kNNW"}, {"name": "LOF"}, {"name": "SimplifiedLOF"}, {"name": "LoOP"},
    {"name": "LDOF"}, {"name": "ODIN"}, {"name": "KDEOS"}, {"name": "COF"}, {"name": "FastABOD"},
    {"name": "LDF", "params": {"h": 1.0, "c": 0.1}}, {"name": "INFLO"},
)

#: The same methods configured as ELKI 0.7.1's batch tool ``ComputeKNNOutlierScores`` ran them (the numbers
#: Campos et al. published): every kNN method in its ``elki-0.7.1-cks`` variant, FastABOD with ELKI's
#: (x·y)² kernel, the tool's hard-coded parameters. Reproduces the tool's evaluation cell by cell
#: (docs/elki-conformance.md, tests/detectors/test_cks_reference.py).
CAMPOS_CKS_METHODS: tuple[dict[str, Any], ...] = (
    {"name": "kNN", "params": {"variant": "elki-0.7.1-cks"}},
    {"name": "kNNW", "params": {"variant": "elki-0.7.1-cks"}},
    {"name": "LOF", "params": {"variant": "elki-0.7.1-cks"}},
    {"name": "SimplifiedLOF", "params": {"variant": "elki-0.7.1-cks"}},
    {"name": "LoOP", "params": {"lam": 1.0, "variant": "elki-0.7.1-cks"}},
    {"name": "LDOF", "params": {"variant": "elki-0.7.1-cks"}},
    {"name": "ODIN", "params": {"variant": "elki-0.7.1-cks"}},
    {"name": "KDEOS", "params": {"scale": 0.5, "idim": 2, "min_bandwidth": 0.0, "variant": "elki-0.7.1-cks"}},
    {"name": "COF", "params": {"variant": "elki-0.7.1-cks"}},
    {"name": "FastABOD", "params": {"kernel": "poly2"}},
    {"name": "LDF", "params": {"h": 1.0, "c": 0.1, "variant": "elki-0.7.1-cks"}},
    {"name": "INFLO", "params": {"m": 1.0, "variant": "elki-0.7.1-cks"}},
)


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
