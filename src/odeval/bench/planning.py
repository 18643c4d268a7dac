"""Planning a study run: which units and per-variant tasks are still to compute, grouped by dataset variant,
and the *prepare* task that loads a variant and builds its kNN graph once for all its method units."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from odeval.bench.config import MethodSpec, Study
from odeval.bench.identity import file_sha256, scoring_version, unit_id
from odeval.bench.store import ResultStore
from odeval.bench.variant_step import plan_variant_tasks
from odeval.data.catalogue import Variant

__all__ = ["Prepared", "VariantPlan", "plan_study", "prepare_variant"]


@dataclass
class Prepared:
    """A loaded dataset variant and its kNN graph, shared by all method units of the variant."""

    facts: dict[str, Any]
    labels: np.ndarray
    graph: Any  # None when no method of the variant scores from a kNN graph (imported estimators only)
    X: np.ndarray | None = None  # the data matrix, kept when the study asks for internal measures

    @property
    def data(self) -> np.ndarray:
        """The data matrix (the graph's, else the one kept)."""
        if self.X is not None:
            return self.X
        if self.graph is not None:
            return self.graph.X
        raise ValueError("the prepared variant kept no data matrix")


@dataclass
class VariantPlan:
    """What is still to compute on one dataset variant."""

    ref: Variant
    file_sha256: str
    units: list[tuple[str, MethodSpec]]  # (unit_id, method) still to compute
    variant_tasks: list[Any] = field(default_factory=list)  # variant_step.VariantTask still to compute
    all_methods: list[tuple[MethodSpec, str]] = field(default_factory=list)  # (method, unit_id), every method

    def prepare_methods(self) -> list[MethodSpec]:
        """The methods the variant's kNN graph must serve: every method of the study when a per-variant task
        rescores them all, else the methods of the units still to compute."""
        if self.variant_tasks:
            return [m for m, _ in self.all_methods]
        return [m for _, m in self.units]


def plan_study(study: Study, store: ResultStore, *, retry_failed: bool = False,
               all_units: list[str] | None = None, outdated: list[str] | None = None,
               all_variant_tasks: list[str] | None = None) -> tuple[list[VariantPlan], int]:
    """Units and per-variant tasks still to compute, grouped by dataset variant, and the number of units
    already in the store.

    ``all_units`` / ``all_variant_tasks``, when given, receive the id of every unit / per-variant task of the
    study (done or not); ``outdated`` the ids of the store's units that computed a unit of the study with an
    older scoring version of its method (they are replaced, see :func:`odeval.bench.runner.run_study`).
    """
    done = store.finished_units(include_errors=not retry_failed)
    present = store.finished_units() if retry_failed else done
    vdone = store.finished_variant_tasks(include_errors=not retry_failed) if study.variant_step else set()
    plans, already = [], 0
    for ref in study.datasets:
        sha = file_sha256(ref.path)
        todo, every = [], []
        for m in study.methods:
            current = scoring_version(m)
            uid = unit_id(sha, ref, m, study, current)
            every.append((m, uid))
            if all_units is not None:
                all_units.append(uid)
            if outdated is not None:
                outdated.extend(old for v in range(1, current)
                                if (old := unit_id(sha, ref, m, study, v)) in present)
            if uid in done:
                already += 1
            else:
                todo.append((uid, m))
        vtasks = plan_variant_tasks(study, sha, ref)
        if all_variant_tasks is not None:
            all_variant_tasks.extend(t.task_id for t in vtasks)
        vtodo = [t for t in vtasks if t.task_id not in vdone]
        if todo or vtodo:
            plans.append(VariantPlan(ref=ref, file_sha256=sha, units=todo, variant_tasks=vtodo, all_methods=every))
    return plans, already


# module level: pickled to worker processes
def prepare_variant(ref: Variant, methods: list[MethodSpec], metric: str, keep_data: bool = False) -> Prepared:
    """Load a dataset variant and build its kNN graph for the largest k its methods need (no graph when every
    method is an imported estimator; the data matrix is then kept instead)."""
    from odeval.bench.config import variant_k_plans
    from odeval.data import load_dataset
    from odeval.neighbors import knn_graph

    ds = load_dataset(ref.path)
    if ds.y is None:
        raise ValueError(f"dataset {ref.path} has no outlier labels; external measures need them")
    X = ds.numeric_matrix()
    n = X.shape[0]
    need, _ = variant_k_plans(methods, n)
    graph = None if need is None else knn_graph(X, need, metric=metric)
    keep_data = keep_data or graph is None
    facts = {
        "name": ref.name, "base_dataset": ref.base_dataset, "normalized": ref.normalized,
        "deduplicated": ref.deduplicated, "outlier_pct": ref.outlier_pct, "version": ref.version,
        "provenance": json.dumps(ds.provenance, sort_keys=True, default=str),
        "n_objects": n, "n_outliers": int(ds.y.sum()), "n_attributes": int(X.shape[1]),
        "outliers": np.flatnonzero(ds.y).tolist(),  # the store's labels table
    }
    return Prepared(facts=facts, labels=ds.y, graph=graph, X=X if keep_data else None)
