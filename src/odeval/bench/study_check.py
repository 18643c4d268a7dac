"""What a study file would run, without running it: the library side of ``odeval study check``."""

from __future__ import annotations

import os
from dataclasses import dataclass

from odeval._krange import KRange
from odeval.bench.config import (
    MethodSpec,
    Study,
    VariantKPlan,
    emmv_not_applicable,
    load_study,
    method_k_plans,
    study_k_plans,
)

__all__ = ["StudyCheck", "check_study"]


@dataclass
class StudyCheck:
    """The validated ``study``; per method the k it will run and skip (:func:`~odeval.bench.config.method_k_plans`);
    per dataset variant the k each method will run (:func:`~odeval.bench.config.study_k_plans`, which reads
    every file); the methods without EM/MV when the study asks for internal measures, with the reason."""

    study: Study
    method_plans: list[tuple[MethodSpec, KRange, dict[str, str]]]
    variant_plans: list[VariantKPlan]
    no_internal: list[tuple[MethodSpec, str]]


def check_study(study_file: str | os.PathLike[str]) -> StudyCheck:
    """Validate ``study_file`` and plan it. Raises :class:`~odeval.bench.StudyError` listing every problem."""
    spec = load_study(study_file)
    no_internal = []
    if spec.internal:
        no_internal = [(m, why) for m in spec.methods if (why := emmv_not_applicable(m)) is not None]
    return StudyCheck(spec, method_k_plans(spec), list(study_k_plans(spec)), no_internal)
