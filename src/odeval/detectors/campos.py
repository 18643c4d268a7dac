"""The method configurations of Campos et al. (2016): the study's twelve methods, and the same as ELKI 0.7.1's
batch tool ran them. Declared once here (the detectors stage) for every later stage: the demo study
(:mod:`odeval.bench.demo`), the candidate pool of ``odeval select`` (:mod:`odeval.labelfree.recommend`), the
ELKI conformance benchmarks."""

from __future__ import annotations

from typing import Any

__all__ = ["CAMPOS_CKS_METHODS", "CAMPOS_METHODS"]

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
