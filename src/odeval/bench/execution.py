"""Executing a study: the unit task (score one method at all its k on a prepared variant and evaluate every k),
the per-variant job, and the driver that runs them on an :mod:`odeval.executor` and writes finished units to the
store.

Unit of work: one dataset variant × one method × all its k. The kNN graph of a variant is computed once
(for the largest k any of its methods needs) by a *prepare* task (:func:`odeval.bench.planning.prepare_variant`)
and shared by all method units of that variant. Finished units are written to the store as whole units, a
variant's units in one transaction when the variant is done (or earlier, once a finished unit has waited
:data:`FLUSH_SECONDS`); Ctrl-C and failures of the driver write the pending units first, so an interrupted study
loses no finished unit (SIGKILL: at most the pending ones). Every k of a unit is evaluated by
:class:`odeval.measures.ScoringEvaluator` (the numbers of ``evaluate_scoring``, bit for bit).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from odeval import __version__
from odeval.bench.config import MethodSpec, Study
from odeval.bench.planning import Prepared, VariantPlan, prepare_variant
from odeval.bench.progress import Progress
from odeval.bench.store import ResultStore, UnitResult, is_interrupt
from odeval.bench.variant_step import failed_variant_tasks, run_variant_job, task_display
from odeval.data.catalogue import Variant
from odeval.executor import ClusterLostError, Executor

__all__ = ["FLUSH_SECONDS", "FLUSH_UNITS", "MAX_RANK_ROWS", "PrepareTask", "RunSummary", "UnitTask",
           "VariantJobTask", "WORKER_DIED_HINT", "best_ks", "drive", "evaluate_estimator_unit", "evaluate_unit",
           "internal_rows", "run_unit", "worker_failure", "worker_init"]


@dataclass
class RunSummary:
    """What a call to :func:`odeval.bench.runner.run_study` did."""

    total_units: int
    already_done: int
    ok: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    wall_s: float = 0.0
    replaced: int = 0  # units of an older scoring version removed from the store (recomputed now)
    variant_tasks_total: int = 0  # per-variant tasks (odeval.bench.variant_step): all of the study
    variant_tasks_done: int = 0  # already in the store
    variant_tasks_ok: int = 0

    @property
    def computed(self) -> int:
        return self.ok + len(self.failed)


# --- the unit task (module level: pickled to worker processes) -----------------------------------
def run_unit(prepared: Prepared, uid: str, method: MethodSpec, metric: str, measures: tuple[str, ...],
             keep_scores: bool, internal: tuple[str, ...] = (), internal_options: dict[str, int] | None = None
             ) -> UnitResult:
    """Score one method at all its k on a prepared variant and evaluate every k. Never raises.

    ``internal`` (e.g. ``("em", "mv")``) adds label-free measures for every computed k (see
    :func:`internal_rows`).

    Scoring and evaluation are the same functions ``odeval score`` and ``odeval evaluate`` use
    (:func:`odeval.detectors.scoring.stream_ks`, :func:`odeval.measures.evaluate_scoring`), streamed: see
    :func:`evaluate_unit` for what is held in memory and what reaches the store.
    """
    from odeval.bench.config import method_detector

    result = UnitResult(unit_id=uid, dataset=prepared.facts, method=method.name, params=method.params_json,
                        metric=metric if method.is_knn else "", status="ok", setting=method.setting_json,
                        seed=method.seed)
    try:
        if not method.is_knn:
            evaluate_estimator_unit(result, method, prepared, measures, keep_scores)
            if internal:
                result.internal = internal_rows(prepared, method, result.ks, internal, internal_options or {})
            return result
        det = method_detector(method)
        evaluate_unit(result, det, prepared, method.ks, measures, keep_scores)
        if internal:
            result.internal = internal_rows(prepared, method, result.ks, internal, internal_options or {})
    except Exception as exc:  # recorded, never fatal for the study
        if is_interrupt(exc):  # Ctrl-C inside a compiled kernel arrives as a SystemError: not the unit's error
            raise
        result.status = "error"
        where = traceback.extract_tb(exc.__traceback__)[-1]
        result.error = (f"{type(exc).__name__}: {exc} "
                        f"(raised in {Path(where.filename).name}:{where.lineno}, {where.name})")
        result.ks, result.measures, result.ranks, result.scores = [], [], [], []
        result.internal = []
    return result


#: The driver writes finished units in batches (one transaction each, :meth:`ResultStore.write_units`): all
#: pending units when a variant is done, or as soon as the oldest pending unit has waited this many seconds or
#: :data:`FLUSH_UNITS` units are pending. A process killed with SIGKILL loses at most these; Ctrl-C and
#: failures of the driver write the pending units first.
FLUSH_SECONDS = 1.0
FLUSH_UNITS = 64

#: Most outlier-rank rows one unit sends to the store (``|O|`` per k): above it only the ranks at the best k of
#: each stored measure are kept (what the report's dataset characterisation reads). Every Campos et al. (2016)
#: dataset stays below it at k = 1..100 (ALOI: 1,508 outliers × 100 k).
MAX_RANK_ROWS = 200_000


def evaluate_unit(result: UnitResult, det: Any, prepared: Prepared, ks: Any, measures: tuple[str, ...],
                  keep_scores: bool, chunk_bytes: int | None = None) -> None:
    """Score ``det`` on the prepared variant one chunk of k at a time, evaluate every k as it is produced and
    fill ``result`` (k, measures, outlier ranks, scores if kept, skipped k, ``runtime_s`` = scoring time).

    Memory: the graph, the labels and one chunk of scores (:func:`odeval.detectors.scoring.stream_ks`, at most
    ``chunk_bytes``, default :data:`~odeval.detectors.scoring.DEFAULT_CHUNK_BYTES`) plus O(N) for the
    evaluation of one k; what is kept is O(len(ks) · (measures + |O|)) — never the (len(ks), N) matrix, unless
    the study keeps scores (``keep_scores``, an explicit request for len(ks) · N values).
    The store receives ``|O|`` outlier ranks per k while ``|O| · len(ks) ≤`` :data:`MAX_RANK_ROWS`, else the
    ranks at the best k of each stored measure only (:func:`best_ks`). Raises ``ValueError`` when no k can
    be computed.
    """
    from odeval.detectors.scoring import DEFAULT_CHUNK_BYTES, stream_ks
    from odeval.measures import ScoringEvaluator

    plan, scores = stream_ks(det, prepared.graph, ks, chunk_bytes=chunk_bytes or DEFAULT_CHUNK_BYTES)
    y = prepared.labels
    evaluator = ScoringEvaluator(y)  # = evaluate_scoring + outlier_ranks per k, bit for bit, one compiled pass
    objects = evaluator.objects
    spent = 0.0
    t0 = time.perf_counter()
    for k, s in scores:
        spent += time.perf_counter() - t0
        full, ranks = evaluator(s)
        result.ks.append(k)
        result.measures.append({m: full[m] for m in measures if m in full})
        result.ranks.append((k, objects, ranks))
        if keep_scores:
            result.scores.append((k, s.astype(np.float64)))
        t0 = time.perf_counter()
    result.runtime_s = spent + (time.perf_counter() - t0)
    result.skipped.update(plan.skipped)  # type: ignore[arg-type]  # keys: k text ("1", "150..300")
    if not result.ks:  # a request that computes nothing is an error, as in `odeval score`
        raise ValueError(f"no requested k can be computed on {prepared.facts['n_objects']} objects: "
                         + "; ".join(f"k={k}: {why}" for k, why in plan.skipped.items()))
    if objects.size * len(result.ks) > MAX_RANK_ROWS:
        keep = best_ks(result.ks, result.measures)
        result.ranks = [row for row in result.ranks if row[0] in keep]


def evaluate_estimator_unit(result: UnitResult, method: MethodSpec, prepared: Prepared, measures: tuple[str, ...],
                            keep_scores: bool) -> None:
    """Fit the imported estimator of ``method`` on the variant's data, score the same data (the unsupervised
    setting) and evaluate the one scoring into ``result`` (k None; ``runtime_s`` = fit and score time).

    The class is imported here, in the worker (:func:`odeval.detectors.imported.resolve_class`); scores that
    are NaN/inf, of the wrong length or constant raise ``ValueError`` naming the method entry, so the unit is
    recorded as failed with that reason.
    """
    from odeval.detectors.imported import fit_score, resolve_class
    from odeval.measures import ScoringEvaluator

    cls = resolve_class(method.estimator)  # type: ignore[arg-type]
    X = prepared.data
    t0 = time.perf_counter()
    try:
        s = fit_score(cls, {**method.params, **method.setting}, X, seed=method.seed,
                      higher_is_outlier=method.higher_is_outlier, name=method.name)
    except ValueError as exc:
        raise ValueError(f"{method.entry or method.name}: {exc}") from None
    spent = time.perf_counter() - t0
    evaluator = ScoringEvaluator(prepared.labels)
    full, ranks = evaluator(s)
    result.ks.append(None)  # type: ignore[arg-type]  # one scoring, no k
    result.measures.append({m: full[m] for m in measures if m in full})
    result.ranks.append((None, evaluator.objects, ranks))  # type: ignore[arg-type]
    if keep_scores:
        result.scores.append((None, s.astype(np.float64)))  # type: ignore[arg-type]
    result.runtime_s = spent


def best_ks(ks: list[int], measures: list[dict[str, float]]) -> set[int]:
    """The best k of every measure: the smallest k reaching the largest non-NaN value (the rule of
    :func:`odeval.analysis.per_variant_summary`'s ``best_k``)."""
    best: set[int] = set()
    for name in dict.fromkeys(m for row in measures for m in row):
        values = np.array([row.get(name, np.nan) for row in measures], dtype=np.float64)
        if not np.isnan(values).all():
            top = np.nanmax(values)
            best.add(min(k for k, v in zip(ks, values, strict=True) if v == top))
    return best


def internal_rows(prepared: Prepared, method: MethodSpec, ks: list[int | None], internal: tuple[str, ...],
                  options: dict[str, int]) -> list[tuple[int | None, str, float, dict[str, Any]]]:
    """EM / MV of one method at every k in ``ks`` on the variant's data (fitted and evaluated on the same data,
    the unsupervised setting), as ``UnitResult.internal`` rows (k, measure, value, details).

    An imported estimator's unit (``ks == [None]``) is its one scoring: the estimator (its parameters, grid point
    and the unit's seed as ``random_state``) is fitted on the variant's data — on each feature draw when
    d > ``max_dim`` — and scores those objects and the uniform sample itself (:func:`odeval.labelfree.emmv`), so
    any estimator that scores new points has EM/MV; its rows have k None.

    A method EM/MV does not apply to (no novelty form, non-default parameters) gets one NaN row per k and
    measure whose details say why (``not_applicable``), so the gap is recorded, never silent; so does a
    method whose EM/MV computation raises (``error``, e.g. infinite LOF scores on duplicates of a feature
    draw). :func:`odeval.labelfree.emmv_all_k`; Goix (2016), Algorithm evaluation:algo:EMMV.
    """
    from odeval.bench.config import emmv_not_applicable
    from odeval.labelfree import emmv_all_k

    why = emmv_not_applicable(method)
    if why is not None:
        return [(k, name, float("nan"), {"not_applicable": why}) for k in ks for name in internal]
    if prepared.X is None:
        raise ValueError("internal measures requested but the prepared variant kept no data matrix")
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # failed draws are counted in the details (em_failed / mv_failed)
            if method.is_knn:
                res = emmv_all_k(method.name, prepared.X, ks, **options)
            else:
                res = [_estimator_emmv(method, prepared.X, options)]
    except ValueError as exc:  # e.g. ±inf LOF scores on duplicate points of a feature draw: recorded per k
        return [(k, name, float("nan"), {"error": f"EM/MV failed: {exc}"}) for k in ks for name in internal]
    rows: list[tuple[int | None, str, float, dict[str, Any]]] = []
    for k, r in zip(ks, res, strict=True):
        d = r.to_dict()
        details = {key: d[key] for key in ("draws", "subsampled", "features_per_draw", "em_failed", "mv_failed",
                                           "reasons", "n_generated", "seed", "box", "sampling", "method_counts")}
        for name in internal:
            rows.append((k, name, float(getattr(r, name)), details))
    return rows


def _estimator_emmv(method: MethodSpec, X: np.ndarray, options: dict[str, int]) -> Any:
    """:func:`odeval.labelfree.emmv` of an imported estimator's configuration on ``X`` (fitted and evaluated on
    ``X``; the unit's seed is the estimator's ``random_state``, ``options["seed"]`` seeds the draws and the
    uniform samples)."""
    from odeval.detectors.adapters import wrap_estimator
    from odeval.detectors.imported import resolve_class
    from odeval.labelfree import emmv

    cls = resolve_class(method.estimator)  # type: ignore[arg-type]
    try:
        det = wrap_estimator(cls(**method.params, **method.setting), seed=method.seed,
                             higher_is_outlier=method.higher_is_outlier, name=method.name)
    except Exception as exc:  # the constructor's own checks
        raise ValueError(f"{method.entry or method.name}: {type(exc).__name__}: {exc}") from None
    return emmv(det, X, **options)


#: Appended to the error of a unit whose worker process died: what usually causes it.
WORKER_DIED_HINT = ("the worker process running this unit died (usual causes: out of memory — fewer workers or "
                    "smaller datasets help —, a crash inside compiled code, or, when the study runs from a Python "
                    "script, a script without the `if __name__ == \"__main__\":` guard around run_study: each "
                    "worker process imports the script again, see docs/custom-detectors.md)")


def worker_failure(exc: BaseException) -> str:
    """The error text of a unit whose task did not come back from its worker."""
    text = f"worker failed: {type(exc).__name__}: {exc}"
    died = type(exc).__name__ in ("BrokenProcessPool", "BrokenExecutor", "KilledWorker", "CancelledError",
                                  "EOFError", "ConnectionResetError")
    return f"{text} — {WORKER_DIED_HINT}" if died else text


def _failed_unit(uid: str, ref: Variant, method: MethodSpec, metric: str, error: str) -> UnitResult:
    facts = {"name": ref.name, "base_dataset": ref.base_dataset, "normalized": ref.normalized,
             "deduplicated": ref.deduplicated, "outlier_pct": ref.outlier_pct, "version": ref.version,
             "n_objects": None, "n_outliers": None, "n_attributes": None}
    return UnitResult(unit_id=uid, dataset=facts, method=method.name, params=method.params_json,
                      metric=metric if method.is_knn else "", status="error", error=error,
                      setting=method.setting_json, seed=method.seed)



# --- local worker processes ----------------------------------------------------------------------
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def worker_init(parent_pid: int) -> None:
    """Initializer of every local worker process: die with the parent, leave Ctrl-C to the parent.

    On Linux the kernel sends SIGKILL to the worker when its parent dies (``prctl(PR_SET_PDEATHSIG)``);
    everywhere a daemon thread also checks once a second that the parent is still the same process and
    exits otherwise. SIGINT is ignored: the parent handles Ctrl-C and terminates the workers.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl: the watch thread remains
            pass
    if os.getppid() != parent_pid:  # the parent died before the prctl took effect
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent_pid,), name="odeval-parent-watch", daemon=True).start()


def _watch_parent(parent_pid: int, interval: float = 1.0) -> None:
    while True:
        time.sleep(interval)
        if os.getppid() != parent_pid:
            os._exit(1)



# --- the driver ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PrepareTask:
    """Loading a variant and building its kNN graph (:func:`prepare_variant`); when it is done, the variant's
    units and its per-variant job are submitted with the prepared variant."""

    plan: VariantPlan


@dataclass(frozen=True)
class UnitTask:
    """One method at all its k on a prepared variant (:func:`run_unit`)."""

    plan: VariantPlan
    uid: str
    method: MethodSpec


@dataclass(frozen=True)
class VariantJobTask:
    """The per-variant tasks of a prepared variant (:func:`odeval.bench.variant_step.run_variant_job`)."""

    plan: VariantPlan


Task = PrepareTask | UnitTask | VariantJobTask


class _Driver:
    """Runs the plans' tasks on an executor and writes what they produce to the store.

    At most ``max_active`` variants are in progress at a time (a prepared variant holds its graph in memory
    until its last unit is done). Finished units wait in ``pending`` and are written together when their
    variant is done, or once the oldest has waited :data:`FLUSH_SECONDS` (a small unit's cost was mostly its
    own store transaction); on Ctrl-C or a failure of the driver the pending units are written before the
    error propagates.
    """

    def __init__(self, study: Study, plans: list[VariantPlan], store: ResultStore, ex: Executor,
                 max_active: int, summary: RunSummary, report: Progress) -> None:
        self.study, self.store, self.ex = study, store, ex
        self.summary, self.report = summary, report
        self.queue = deque(plans)  # variants not started
        self.max_active = max_active
        self.active = 0  # variants started and not done
        self.inflight: dict[Any, Task] = {}  # future → its task, in submission order
        self.remaining: dict[str, int] = {}  # variant → its units and job not yet finished
        self.pending: list[tuple[UnitResult, str]] = []  # finished units not yet in the store (see flush)
        self.pending_since = 0.0
        self.waiting: dict[str, Any] = {}  # variant → its prepared data, the job waiting for its estimator units

    def run(self) -> None:
        try:
            self.admit()
            while self.inflight:
                timeout = (max(self.pending_since + FLUSH_SECONDS - time.monotonic(), 0.0) if self.pending
                           else None)
                done = set(self.ex.wait(self.inflight, timeout))
                if not done:  # the oldest pending unit has waited FLUSH_SECONDS
                    self.flush()
                    continue
                for fut in [f for f in self.inflight if f in done]:  # in submission order
                    self.finish(self.inflight.pop(fut), fut)
                self.admit()
        except BaseException:
            self.flush()  # finished units are never lost: written before the interruption or failure propagates
            raise
        self.flush()

    # --- tasks
    def submit(self, task: Task, fn: Any, *args: Any) -> None:
        self.inflight[self.ex.submit(fn, *args)] = task

    def admit(self) -> None:
        """Start preparing variants while fewer than ``max_active`` are in progress."""
        while self.queue and self.active < self.max_active:
            plan = self.queue.popleft()
            # a per-variant task rescores every method of the study and may need the data (IREOS)
            self.submit(PrepareTask(plan), prepare_variant, plan.ref, plan.prepare_methods(), self.study.metric,
                        bool(self.study.internal) or bool(plan.variant_tasks))
            self.active += 1
            self.report.started(plan.ref.name)

    def finish(self, task: Task, fut: Any) -> None:
        match task:
            case PrepareTask(plan):
                self.prepared(plan, fut)
            case UnitTask(plan, uid, method):
                try:
                    res = self.ex.result(fut)
                except ClusterLostError:  # the run ends here, the unit did not fail: a rerun computes it
                    raise
                except Exception as exc:  # a worker died (e.g. out of memory)
                    res = _failed_unit(uid, plan.ref, method, self.study.metric, worker_failure(exc))
                self.record(res, plan)
                self.one_less(plan)
            case VariantJobTask(plan):
                try:
                    results = self.ex.result(fut)
                except ClusterLostError:
                    raise
                except Exception as exc:  # a worker died (e.g. out of memory)
                    results = failed_variant_tasks(plan, self.study.metric, worker_failure(exc))
                self.record_variant(results)
                self.one_less(plan)

    def prepared(self, plan: VariantPlan, fut: Any) -> None:
        """Submit the units and the per-variant job of a prepared variant, or record them all as failed."""
        study = self.study
        try:
            prepared = self.ex.argument(fut)  # with Dask the graph stays on the cluster
        except ClusterLostError:
            raise
        except Exception as exc:  # the whole variant failed to load: every unit records the error
            self.active -= 1
            msg = f"preparing {plan.ref.path} failed: {worker_failure(exc).removeprefix('worker failed: ')}"
            for uid, m in plan.units:
                self.record(_failed_unit(uid, plan.ref, m, study.metric, msg), plan)
            self.record_variant(failed_variant_tasks(plan, study.metric, msg))
            self.flush()
            self.report.done_with(plan.ref.name)
            return
        self.remaining[plan.ref.name] = len(plan.units) + (1 if plan.variant_tasks else 0)
        for uid, m in plan.units:
            self.submit(UnitTask(plan, uid, m), run_unit, prepared, uid, m, study.metric, study.measures,
                        study.keep_scores, study.internal, study.internal_options)
        if plan.variant_tasks:
            if self.reads_kept(plan) and any(not m.is_knn for _, m in plan.units):
                self.waiting[plan.ref.name] = prepared  # after the variant's estimator units: their kept scores
            else:
                self.submit_job(plan, prepared)

    def reads_kept(self, plan: VariantPlan) -> bool:
        """Whether the per-variant job of ``plan`` takes its estimators' scores from the store (kept scores)."""
        return self.study.keep_scores and any(not m.is_knn for m, _ in plan.all_methods)

    def submit_job(self, plan: VariantPlan, prepared: Any) -> None:
        """Submit the per-variant job, with the kept score vectors of the variant's estimator units when the study
        keeps scores (read here, at the edge: the job stays a pure function and does not fit them again)."""
        kept = None
        if self.reads_kept(plan):
            self.flush()  # the variant's finished units are in the store before their scores are read
            kept = self.store.kept_unit_scores(plan.ref.name, [uid for m, uid in plan.all_methods if not m.is_knn])
        self.submit(VariantJobTask(plan), run_variant_job, prepared, plan.ref.name, plan.file_sha256,
                    plan.all_methods, self.study.metric, plan.variant_tasks, kept)

    def one_less(self, plan: VariantPlan) -> None:
        """A unit or the job of ``plan`` finished: when it was the variant's last, write and report the variant
        (when only a job waiting for the units is left, submit it)."""
        self.remaining[plan.ref.name] -= 1
        if self.remaining[plan.ref.name] == 1 and plan.ref.name in self.waiting:
            self.submit_job(plan, self.waiting.pop(plan.ref.name))
        if self.remaining[plan.ref.name] == 0:
            self.active -= 1
            self.flush()
            self.report.done_with(plan.ref.name)

    # --- the store
    def record(self, res: UnitResult, plan: VariantPlan) -> None:
        if not self.pending:
            self.pending_since = time.monotonic()
        self.pending.append((res, plan.file_sha256))
        if time.monotonic() - self.pending_since >= FLUSH_SECONDS or len(self.pending) >= FLUSH_UNITS:
            self.flush()

    def flush(self) -> None:
        """Write the pending units in one transaction (:meth:`ResultStore.write_units`), then count and report
        them (a reported unit is in the store)."""
        if not self.pending:
            return
        batch = list(self.pending)
        self.pending.clear()
        self.store.write_units([r for r, _ in batch], study_hash=self.study.study_hash, version=__version__,
                               file_sha256=[sha for _, sha in batch])
        for res, _ in batch:
            if res.status == "ok":
                self.summary.ok += 1
            else:
                self.summary.failed.append({"dataset": res.dataset["name"], "method": res.method,
                                            "params": res.params, "error": res.error or ""})
            self.report.finished(res)

    def record_variant(self, results: list[Any]) -> None:
        for res in results:
            self.store.write_variant_task(res, study_hash=self.study.study_hash, version=__version__)
            if res.status == "ok":
                self.summary.variant_tasks_ok += 1
            else:
                self.summary.failed.append({"dataset": res.dataset, "method": f"[{res.kind}]",
                                            "params": f"candidates {res.candidates_mode}", "error": res.error or ""})
            self.report.finished(task_display(res))


def drive(study: Study, plans: list[VariantPlan], store: ResultStore, ex: Executor, max_active: int,
          summary: RunSummary, report: Progress) -> None:
    """Compute the ``plans`` on ``ex`` (at most ``max_active`` variants at a time), writing every finished
    unit and per-variant task to ``store`` and counting them in ``summary``; see :class:`_Driver`."""
    _Driver(study, plans, store, ex, max_active, summary, report).run()
