"""Run a study: datasets × methods × k into a results store, resumable, on local processes or a Dask cluster.

Unit of work: one dataset variant × one method × all its k. The kNN graph of a variant is computed once
(for the largest k any of its methods needs) by a *prepare* task and shared by all method units of that
variant. Finished units are written to the store as whole units, a variant's units in one transaction when the
variant is done (or earlier, once a finished unit has waited :data:`FLUSH_SECONDS`); Ctrl-C and failures of the
driver write the pending units first, so an interrupted study loses no finished unit (SIGKILL: at most the
pending ones); running it again computes only the units missing from the store. Every k of a unit is
evaluated by :class:`odeval.measures.ScoringEvaluator` (the numbers of ``evaluate_scoring``, bit for bit).

Scores are a pure function of (dataset file, method, parameters, k, metric): the stored measures are
identical whatever the number of workers or the backend; only ``runtime_s`` differs between runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as cf_wait
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from odeval import __version__
from odeval._krange import parse_k_range
from odeval.bench.config import MethodSpec, Study
from odeval.bench.store import ResultStore, StoreInUseError, UnitResult, is_interrupt
from odeval.bench.variant_step import failed_variant_tasks, plan_variant_tasks, run_variant_job, task_display
from odeval.data.catalogue import Variant

__all__ = ["MAX_RANK_ROWS", "Prepared", "Progress", "RunSummary", "StudyInterrupted", "best_ks", "evaluate_unit",
           "make_progress", "plan_study", "prepare_variant", "run_study", "run_unit", "scoring_version", "unit_id",
           "worker_init"]


@dataclass
class Prepared:
    """A loaded dataset variant and its kNN graph, shared by all method units of the variant."""

    facts: dict[str, Any]
    labels: np.ndarray
    graph: Any
    X: np.ndarray | None = None  # the data matrix, kept only when the study asks for internal measures


@dataclass
class VariantPlan:
    ref: Variant
    file_sha256: str
    units: list[tuple[str, MethodSpec]]  # (unit_id, method) still to compute
    variant_tasks: list[Any] = field(default_factory=list)  # variant_step.VariantTask still to compute
    all_methods: list[tuple[MethodSpec, str]] = field(default_factory=list)  # (method, unit_id), every method


@dataclass
class RunSummary:
    """What a call to :func:`run_study` did."""

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


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def scoring_version(method: MethodSpec) -> int:
    """The method's :attr:`~odeval.detectors.MethodInfo.scoring_version` (1 unless its definition changed)."""
    from odeval.detectors import get_detector

    return int(get_detector(method.name, **method.params).info.scoring_version)


def unit_id(file_sha256: str, ref: Variant, method: MethodSpec, study: Study, version: int | None = None) -> str:
    """Content hash identifying a unit: same inputs ⇒ same id, in any study that contains them.

    The method's scoring version (``version``, default: the current one, :func:`scoring_version`) is part of
    the id from version 2 on, so a changed scoring definition gives new ids and is recomputed; version 1
    leaves the id as it was before versions existed.
    """
    version = scoring_version(method) if version is None else version
    payload = json.dumps([file_sha256, ref.name, method.name, method.params_json,
                          parse_k_range(method.ks).canonical(), study.metric,
                          list(study.measures), study.keep_scores]
                         + ([study.internal_key] if study.internal else [])
                         + ([{"scoring_version": version}] if version > 1 else []), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def plan_study(study: Study, store: ResultStore, *, retry_failed: bool = False,
               all_units: list[str] | None = None, outdated: list[str] | None = None,
               all_variant_tasks: list[str] | None = None) -> tuple[list[VariantPlan], int]:
    """Units and per-variant tasks still to compute, grouped by dataset variant, and the number of units
    already in the store.

    ``all_units`` / ``all_variant_tasks``, when given, receive the id of every unit / per-variant task of the
    study (done or not); ``outdated`` the ids of the store's units that computed a unit of the study with an
    older scoring version of its method (they are replaced, see :func:`run_study`).
    """
    done = store.finished_units(include_errors=not retry_failed)
    present = store.finished_units() if retry_failed else done
    vdone = store.finished_variant_tasks(include_errors=not retry_failed) if study.variant_step else set()
    plans, already = [], 0
    for ref in study.datasets:
        sha = _file_sha256(ref.path)
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


# --- the two kinds of task (module level: they are pickled to worker processes) ----------------
def prepare_variant(ref: Variant, methods: list[MethodSpec], metric: str, keep_data: bool = False) -> Prepared:
    """Load a dataset variant and build its kNN graph for the largest k its methods need."""
    from odeval.bench.config import variant_k_plans
    from odeval.data import load_dataset
    from odeval.neighbors import knn_graph

    ds = load_dataset(ref.path)
    if ds.y is None:
        raise ValueError(f"dataset {ref.path} has no outlier labels; external measures need them")
    X = ds.numeric_matrix()
    n = X.shape[0]
    need, _ = variant_k_plans(methods, n)
    graph = knn_graph(X, need, metric=metric)
    facts = {
        "name": ref.name, "base_dataset": ref.base_dataset, "normalized": ref.normalized,
        "deduplicated": ref.deduplicated, "outlier_pct": ref.outlier_pct, "version": ref.version,
        "provenance": json.dumps(ds.provenance, sort_keys=True, default=str),
        "n_objects": n, "n_outliers": int(ds.y.sum()), "n_attributes": int(X.shape[1]),
        "outliers": np.flatnonzero(ds.y).tolist(),  # the store's labels table
    }
    return Prepared(facts=facts, labels=ds.y, graph=graph, X=X if keep_data else None)


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
    from odeval.detectors import get_detector

    result = UnitResult(unit_id=uid, dataset=prepared.facts, method=method.name, params=method.params_json,
                        metric=metric, status="ok")
    try:
        det = get_detector(method.name, **method.params)
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


def internal_rows(prepared: Prepared, method: MethodSpec, ks: list[int], internal: tuple[str, ...],
                  options: dict[str, int]) -> list[tuple[int, str, float, dict[str, Any]]]:
    """EM / MV of one method at every k in ``ks`` on the variant's data (fitted and evaluated on the same data,
    the unsupervised setting), as ``UnitResult.internal`` rows (k, measure, value, details).

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
            res = emmv_all_k(method.name, prepared.X, ks, **options)
    except ValueError as exc:  # e.g. ±inf LOF scores on duplicate points of a feature draw: recorded per k
        return [(k, name, float("nan"), {"error": f"EM/MV failed: {exc}"}) for k in ks for name in internal]
    rows: list[tuple[int, str, float, dict[str, Any]]] = []
    for k, r in zip(ks, res, strict=True):
        d = r.to_dict()
        details = {key: d[key] for key in ("draws", "subsampled", "features_per_draw", "em_failed", "mv_failed",
                                           "reasons", "n_generated", "seed")}
        for name in internal:
            rows.append((k, name, float(getattr(r, name)), details))
    return rows


def _failed_unit(uid: str, ref: Variant, method: MethodSpec, metric: str, error: str) -> UnitResult:
    facts = {"name": ref.name, "base_dataset": ref.base_dataset, "normalized": ref.normalized,
             "deduplicated": ref.deduplicated, "outlier_pct": ref.outlier_pct, "version": ref.version,
             "n_objects": None, "n_outliers": None, "n_attributes": None}
    return UnitResult(unit_id=uid, dataset=facts, method=method.name, params=method.params_json, metric=metric,
                      status="error", error=error)


# --- executors ----------------------------------------------------------------------------------
class _SerialExecutor:
    """Runs tasks in this process, at submission (workers=1: simplest to debug, no pickling)."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        fut: Future = Future()
        try:
            fut.set_result(fn(*args))
        except Exception as exc:  # KeyboardInterrupt goes straight to the driver
            if is_interrupt(exc):
                raise
            fut.set_exception(exc)
        return fut

    def wait(self, futures: set[Any], timeout: float | None = None) -> set[Any]:
        return set(futures)  # every task ran at submission

    def materialize(self, fut: Any) -> Any:
        return fut.result()


class _PoolExecutor(_SerialExecutor):
    def __init__(self, workers: int):
        import multiprocessing as mp

        # spawn: numba's threading layers and DuckDB's connection do not survive fork safely
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                        initializer=worker_init, initargs=(os.getpid(),))

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        return self.pool.submit(fn, *args)

    def wait(self, futures: set[Any], timeout: float | None = None) -> set[Any]:
        return cf_wait(futures, timeout=timeout, return_when=FIRST_COMPLETED).done

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    def terminate(self) -> None:
        """Stop the workers now (Ctrl-C): running tasks are abandoned, nothing of theirs is written."""
        for proc in list(getattr(self.pool, "_processes", {}).values()):  # no public API for this
            if proc.is_alive():
                proc.terminate()
        self.close()


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


class _DaskExecutor:
    def __init__(self, address: str):
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - depends on the extra
            raise RuntimeError("a Dask scheduler needs the optional extra: pip install 'odeval[dask]'") from None
        self.client = Client(address)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.client.submit(fn, *args, pure=False)

    def wait(self, futures: set[Any], timeout: float | None = None) -> set[Any]:
        from distributed import wait

        try:
            return set(wait(list(futures), timeout=timeout, return_when="FIRST_COMPLETED").done)
        except TimeoutError:  # nothing finished within the timeout
            return set()

    def materialize(self, fut: Any) -> Any:
        if fut.status == "error":
            fut.result()  # raises the task's exception here
        return fut  # pass the future itself: the graph stays on the cluster

    def close(self) -> None:
        self.client.close()


@contextmanager
def _executor(workers: int, scheduler: str | None) -> Iterator[Any]:
    if scheduler:
        ex: Any = _DaskExecutor(scheduler)
    elif workers <= 1:
        ex = _SerialExecutor()
    else:
        ex = _PoolExecutor(workers)
    try:
        yield ex
    finally:
        if hasattr(ex, "close"):
            ex.close()


# --- the driver -----------------------------------------------------------------------------------
class StudyInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped :func:`run_study`; every unit finished before it is saved.

    ``summary`` says what the call did before the interruption (``summary.computed`` units written).
    """

    def __init__(self, summary: RunSummary):
        super().__init__("study interrupted")
        self.summary = summary


def run_study(study: Study, store_path: str | Path, *, workers: int | None = None, scheduler: str | None = None,
              progress: str = "rich", retry_failed: bool = False, wait: float = 0.0) -> RunSummary:
    """Compute every unit of ``study`` missing from the store at ``store_path``.

    Every unit of the study — computed now or by an earlier study — is linked to the study in the store
    (``study_units``), so reading the study shows all of them. Units that computed a unit of the study with an
    older scoring version of its method (:attr:`odeval.detectors.MethodInfo.scoring_version`) are removed from
    the store first and computed again (``RunSummary.replaced``): a store never mixes two definitions.

    Parameters
    ----------
    study : Study
        A validated study (:func:`odeval.bench.config.load_study`).
    store_path : path
        DuckDB results store; created if absent.
    workers : int, optional
        Local worker processes (default: all cores; 1 runs in this process). Ignored with ``scheduler``.
        Workers die with this process (:func:`worker_init`).
    scheduler : str, optional
        Address of a Dask distributed scheduler (``tcp://HOST:PORT``) to run the units on.
    progress : {"rich", "log", "none"}
        On stderr: a live bar (plain periodic lines when stderr is not a terminal), one log line per unit, or
        nothing. Unless "none", a resumed run first says how many units it skips.
    retry_failed : bool
        Recompute units that previously ended with an error.
    wait : float
        Seconds to wait for the store while another process holds it (default 0: fail at once). Unless
        ``progress`` is "none", the wait is announced on stderr with the PID holding the store.

    Raises
    ------
    StoreError
        The store cannot be opened or written (one line; :class:`StoreInUseError` when another process holds
        it, naming its PID).
    StudyInterrupted
        On Ctrl-C, after stopping the workers; finished units are saved.
    """
    workers = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    summary = RunSummary(total_units=len(study.datasets) * len(study.methods), already_done=0)
    def waiting(exc: StoreInUseError) -> None:
        if progress != "none":
            who = f"PID {exc.pid}" if exc.pid is not None else "another process"
            print(f"results store {store_path} is in use by {who}; waiting up to {wait:g} s for it",
                  file=sys.stderr, flush=True)

    with ResultStore.open_waiting(store_path, wait=wait, on_wait=waiting) as store, _sigint_seen() as sigint:
        try:
            all_units: list[str] = []
            outdated: list[str] = []
            all_tasks: list[str] = []
            plans, summary.already_done = plan_study(study, store, retry_failed=retry_failed, all_units=all_units,
                                                     outdated=outdated, all_variant_tasks=all_tasks)
            summary.replaced = store.drop_units(outdated)
            store.register_study(study.study_hash, study.name, study.source, study.definition, __version__,
                                 all_units)
            store.link_variant_tasks(study.study_hash, all_tasks)
            summary.variant_tasks_total = len(all_tasks)
            summary.variant_tasks_done = len(all_tasks) - sum(len(p.variant_tasks) for p in plans)
            with make_progress(progress, summary.total_units + summary.variant_tasks_total,
                               summary.already_done + summary.variant_tasks_done) as report, \
                    _executor(workers, scheduler) as ex:
                try:
                    _drive(study, plans, store, ex, max(2, 2 * workers), summary, report)
                except BaseException:  # Ctrl-C or a failure of the driver: the workers stop now
                    if hasattr(ex, "terminate"):
                        ex.terminate()
                    raise
        except BaseException as exc:  # Ctrl-C, also when DuckDB caught it during a query and raised its own error
            if not (is_interrupt(exc) or sigint.is_set()):
                raise
            summary.wall_s = time.perf_counter() - t0
            raise StudyInterrupted(summary) from None
    summary.wall_s = time.perf_counter() - t0
    return summary


@contextmanager
def _sigint_seen() -> Iterator[threading.Event]:
    """Note every SIGINT while running (then raise KeyboardInterrupt as Python does): DuckDB may turn the
    KeyboardInterrupt into its own error when the signal arrives during a query, and the flag still tells."""
    seen = threading.Event()

    def handler(signum: int, frame: Any) -> None:
        seen.set()
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield seen
        return
    if previous is signal.SIG_IGN:  # e.g. a background job: Ctrl-C is not ours to handle
        signal.signal(signal.SIGINT, previous)
        yield seen
        return
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _drive(study: Study, plans: list[VariantPlan], store: ResultStore, ex: Any, max_active: int,
           summary: RunSummary, report: Progress) -> None:
    queue = deque(plans)
    inflight: dict[Any, tuple] = {}
    active = 0

    def admit() -> None:
        nonlocal active
        while queue and active < max_active:
            plan = queue.popleft()
            # a per-variant task rescores every method of the study and may need the data (IREOS)
            methods = [m for m, _ in plan.all_methods] if plan.variant_tasks else [m for _, m in plan.units]
            fut = ex.submit(prepare_variant, plan.ref, methods, study.metric,
                            bool(study.internal) or bool(plan.variant_tasks))
            inflight[fut] = ("prepare", plan)
            active += 1
            report.started(plan.ref.name)

    pending: list[tuple[UnitResult, str]] = []  # finished units not yet in the store (see flush)
    pending_since = 0.0

    def flush() -> None:
        """Write the pending units in one transaction (:meth:`ResultStore.write_units`), then count and report
        them (a reported unit is in the store)."""
        if not pending:
            return
        batch = list(pending)
        pending.clear()
        store.write_units([r for r, _ in batch], study_hash=study.study_hash, version=__version__,
                          file_sha256=[sha for _, sha in batch])
        for res, _ in batch:
            if res.status == "ok":
                summary.ok += 1
            else:
                summary.failed.append({"dataset": res.dataset["name"], "method": res.method, "params": res.params,
                                       "error": res.error or ""})
            report.finished(res)

    def record(res: UnitResult, plan: VariantPlan) -> None:
        # finished units are written together when their variant is done, or once the oldest has waited
        # FLUSH_SECONDS (a small unit's cost was mostly its own store transaction); on Ctrl-C or a failure of
        # the driver the pending units are written before the error propagates (see below)
        nonlocal pending_since
        if not pending:
            pending_since = time.monotonic()
        pending.append((res, plan.file_sha256))
        if time.monotonic() - pending_since >= FLUSH_SECONDS or len(pending) >= FLUSH_UNITS:
            flush()

    def record_variant(results: list[Any]) -> None:
        for res in results:
            store.write_variant_task(res, study_hash=study.study_hash, version=__version__)
            if res.status == "ok":
                summary.variant_tasks_ok += 1
            else:
                summary.failed.append({"dataset": res.dataset, "method": f"[{res.kind}]",
                                       "params": f"candidates {res.candidates_mode}", "error": res.error or ""})
            report.finished(task_display(res))

    remaining_units: dict[str, int] = {}
    try:
        admit()
        while inflight:
            timeout = max(pending_since + FLUSH_SECONDS - time.monotonic(), 0.0) if pending else None
            done = ex.wait(set(inflight), timeout)
            if not done:  # the oldest pending unit has waited FLUSH_SECONDS
                flush()
                continue
            for fut in [f for f in inflight if f in done]:  # in submission order
                kind, plan, *rest = inflight.pop(fut)
                if kind == "prepare":
                    try:
                        prepared = ex.materialize(fut)
                    except Exception as exc:  # the whole variant failed to load: every unit records the error
                        active -= 1
                        msg = f"preparing {plan.ref.path} failed: {type(exc).__name__}: {exc}"
                        for uid, m in plan.units:
                            record(_failed_unit(uid, plan.ref, m, study.metric, msg), plan)
                        record_variant(failed_variant_tasks(plan, study.metric, msg))
                        flush()
                        report.done_with(plan.ref.name)
                        continue
                    remaining_units[plan.ref.name] = len(plan.units) + (1 if plan.variant_tasks else 0)
                    for uid, m in plan.units:
                        ufut = ex.submit(run_unit, prepared, uid, m, study.metric, study.measures,
                                         study.keep_scores, study.internal, study.internal_options)
                        inflight[ufut] = ("unit", plan, uid, m)
                    if plan.variant_tasks:
                        vfut = ex.submit(run_variant_job, prepared, plan.ref.name, plan.file_sha256,
                                         plan.all_methods, study.metric, plan.variant_tasks)
                        inflight[vfut] = ("variant", plan)
                elif kind == "variant":
                    try:
                        results = fut.result()
                    except Exception as exc:  # a worker died (e.g. out of memory)
                        why = f"worker failed: {type(exc).__name__}: {exc}"
                        results = failed_variant_tasks(plan, study.metric, why)
                    record_variant(results)
                    remaining_units[plan.ref.name] -= 1
                    if remaining_units[plan.ref.name] == 0:
                        active -= 1
                        flush()
                        report.done_with(plan.ref.name)
                else:
                    uid, m = rest
                    try:
                        res = fut.result()
                    except Exception as exc:  # a worker died (e.g. out of memory)
                        why = f"worker failed: {type(exc).__name__}: {exc}"
                        res = _failed_unit(uid, plan.ref, m, study.metric, why)
                    record(res, plan)
                    remaining_units[plan.ref.name] -= 1
                    if remaining_units[plan.ref.name] == 0:
                        active -= 1
                        flush()
                        report.done_with(plan.ref.name)
            admit()
    except BaseException:
        flush()  # finished units are never lost: written before the interruption or failure propagates
        raise
    flush()


# --- progress -------------------------------------------------------------------------------------
def _duration(seconds: float) -> str:
    """Compact duration: 12s, 3m05s, 1h02m."""
    if not np.isfinite(seconds):
        return "?"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"


class Progress:
    """What the driver reports to; this base class prints nothing (``progress="none"``)."""

    def __init__(self, total: int, already: int, stream: Any = None, width: int = 80):
        self.total, self.already = total, already
        self.computed = 0
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.current: dict[str, None] = {}  # variants being computed, in start order
        self.t0 = time.perf_counter()

    # events
    def started(self, name: str) -> None:
        self.current[name] = None

    def done_with(self, name: str) -> None:
        self.current.pop(name, None)

    def finished(self, res: UnitResult) -> None:
        self.computed += 1

    # figures
    @property
    def done(self) -> int:
        return self.already + self.computed

    def rate(self) -> float:
        return self.computed / max(time.perf_counter() - self.t0, 1e-9)

    def eta(self) -> float:
        r = self.rate()
        return (self.total - self.done) / r if r > 0 else float("inf")

    def names(self, width: int) -> str:
        text = ", ".join(self.current)
        return text if len(text) <= width else text[: max(width - 1, 0)] + "…"

    def say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def opening(self) -> str | None:
        todo = self.total - self.already
        if self.already:
            return (f"resuming: {self.already} of {self.total} units are already in the store and are skipped; "
                    f"{todo} to compute")
        return None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


class _LogProgress(Progress):
    """One line per finished unit (``--quiet``)."""

    def __enter__(self) -> Progress:
        if self.opening():
            self.say(self.opening())
        return self

    def finished(self, res: UnitResult) -> None:
        super().finished(res)
        tail = "" if res.status == "ok" else f"  ERROR {res.error}"
        self.say(f"[{self.done}/{self.total}] {res.dataset['name']} {res.method} {res.params} {res.status} "
                 f"({res.runtime_s:.2f}s){tail}")


class _PlainProgress(Progress):
    """Periodic plain lines (output not a terminal): count, percentage, rate, ETA; datasets on the next line."""

    def __init__(self, *args: Any, interval: float = 10.0, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.interval = interval
        self.last = -float("inf")

    def __enter__(self) -> Progress:
        if self.opening():
            self.say(self.opening())
        self.say(f"{self.total - self.already} units to compute")
        return self

    def line(self) -> str:
        pct = 100.0 * self.done / max(self.total, 1)
        return (f"units {self.done}/{self.total} ({pct:.0f}%)  {self.rate():.2f} units/s  "
                f"ETA {_duration(self.eta())}")

    def finished(self, res: UnitResult) -> None:
        super().finished(res)
        now = time.perf_counter()
        if now - self.last >= self.interval or self.done == self.total:
            self.last = now
            self.say(self.line())
            if self.current and self.done < self.total:
                self.say("  now: " + self.names(self.width - 7))

    def __exit__(self, *exc: object) -> None:
        if self.computed and time.perf_counter() - self.last > 0 and self.done != self.total:
            self.say(self.line())


class _RichProgress(Progress):
    """A live bar on a terminal (fits 80 columns) with the datasets being computed on the line below."""

    def __enter__(self) -> Progress:
        from rich.console import Console, Group
        from rich.live import Live
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
        from rich.progress import Progress as Bar

        self.console = Console(file=self.stream)
        if self.opening():
            self.console.print(self.opening(), highlight=False)
        self.bar = Bar(TextColumn("units"), BarColumn(bar_width=28), MofNCompleteColumn(),
                       TextColumn("{task.fields[rate]}"), TextColumn("ETA"), TimeRemainingColumn(),
                       console=self.console)
        self.task = self.bar.add_task("units", total=self.total, completed=self.already, rate="")
        self._group = Group
        self.live = Live(self._renderable(), console=self.console, refresh_per_second=4, transient=False)
        self.live.__enter__()
        return self

    def _renderable(self) -> Any:
        from rich.text import Text

        width = min(self.console.width, self.width)
        names = Text("  now: " + self.names(width - 7) if self.current else "", no_wrap=True, overflow="ellipsis")
        return self._group(self.bar, names)

    def _show(self, force: bool = False) -> None:
        now = time.perf_counter()
        if force or now - getattr(self, "_shown", -1.0) >= 0.1:  # at most ten redraws a second
            self._shown = now
            self.live.update(self._renderable(), refresh=True)

    def started(self, name: str) -> None:
        super().started(name)
        self._show()

    def done_with(self, name: str) -> None:
        super().done_with(name)
        self._show()

    def finished(self, res: UnitResult) -> None:
        super().finished(res)
        self.bar.update(self.task, advance=1, rate=f"{self.rate():.1f}/s")
        self._show()

    def __exit__(self, *exc: object) -> None:
        self._show(force=True)
        self.live.__exit__(None, None, None)


def make_progress(mode: str, total: int, already: int, stream: Any = None) -> Progress:
    """The progress display of ``mode`` ("rich": a live bar on a terminal, else periodic lines; "log"; "none")."""
    stream = sys.stderr if stream is None else stream
    if mode == "none":
        return Progress(total, already, stream)
    if mode == "log":
        return _LogProgress(total, already, stream)
    if mode != "rich":
        raise ValueError(f"progress must be 'rich', 'log' or 'none', got {mode!r}")
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return _RichProgress(total, already, stream)
    return _PlainProgress(total, already, stream)


def summary_dict(summary: RunSummary) -> dict[str, Any]:
    return asdict(summary)
