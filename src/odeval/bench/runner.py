"""Run a study: datasets × methods × k into a results store, resumable, on local processes or a Dask cluster.

Unit of work: one dataset variant × one method × all its k. The kNN graph of a variant is computed once
(for the largest k any of its methods needs) by a *prepare* task and shared by all method units of that
variant. Finished units are written to the store one transaction each, as they arrive, so an interrupted
study loses no finished unit; running it again computes only the units missing from the store.

Scores are a pure function of (dataset file, method, parameters, k, metric): the stored measures are
identical whatever the number of workers or the backend; only ``runtime_s`` differs between runs.
"""

from __future__ import annotations

import hashlib
import json
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
from odeval.bench.store import ResultStore, UnitResult
from odeval.data.catalogue import Variant

__all__ = ["Prepared", "RunSummary", "plan_study", "prepare_variant", "run_study", "run_unit", "unit_id"]


@dataclass
class Prepared:
    """A loaded dataset variant and its kNN graph, shared by all method units of the variant."""

    facts: dict[str, Any]
    labels: np.ndarray
    graph: Any


@dataclass
class VariantPlan:
    ref: Variant
    file_sha256: str
    units: list[tuple[str, MethodSpec]]  # (unit_id, method) still to compute


@dataclass
class RunSummary:
    """What a call to :func:`run_study` did."""

    total_units: int
    already_done: int
    ok: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def computed(self) -> int:
        return self.ok + len(self.failed)


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def unit_id(file_sha256: str, ref: Variant, method: MethodSpec, study: Study) -> str:
    """Content hash identifying a unit: same inputs ⇒ same id, in any study that contains them."""
    payload = json.dumps([file_sha256, ref.name, method.name, method.params_json,
                          parse_k_range(method.ks).canonical(), study.metric,
                          list(study.measures), study.keep_scores], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def plan_study(study: Study, store: ResultStore, *, retry_failed: bool = False) -> tuple[list[VariantPlan], int]:
    """Units still to compute, grouped by dataset variant, and the number already in the store."""
    done = store.finished_units(include_errors=not retry_failed)
    plans, already = [], 0
    for ref in study.datasets:
        sha = _file_sha256(ref.path)
        todo = []
        for m in study.methods:
            uid = unit_id(sha, ref, m, study)
            if uid in done:
                already += 1
            else:
                todo.append((uid, m))
        if todo:
            plans.append(VariantPlan(ref=ref, file_sha256=sha, units=todo))
    return plans, already


# --- the two kinds of task (module level: they are pickled to worker processes) ----------------
def prepare_variant(ref: Variant, methods: list[MethodSpec], metric: str) -> Prepared:
    """Load a dataset variant and build its kNN graph for the largest k its methods need."""
    from odeval.data import load_dataset
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import required_graph_k
    from odeval.neighbors import knn_graph

    ds = load_dataset(ref.path)
    if ds.y is None:
        raise ValueError(f"dataset {ref.path} has no outlier labels; external measures need them")
    X = ds.numeric_matrix()
    n = X.shape[0]
    need = max(required_graph_k(get_detector(m.name, **m.params), m.ks, n) for m in methods)
    graph = knn_graph(X, need, metric=metric)
    facts = {
        "name": ref.name, "base_dataset": ref.base_dataset, "normalized": ref.normalized,
        "deduplicated": ref.deduplicated, "outlier_pct": ref.outlier_pct, "version": ref.version,
        "provenance": json.dumps(ds.provenance, sort_keys=True, default=str),
        "n_objects": n, "n_outliers": int(ds.y.sum()), "n_attributes": int(X.shape[1]),
    }
    return Prepared(facts=facts, labels=ds.y, graph=graph)


def run_unit(prepared: Prepared, uid: str, method: MethodSpec, metric: str, measures: tuple[str, ...],
             keep_scores: bool) -> UnitResult:
    """Score one method at all its k on a prepared variant and evaluate every k. Never raises.

    Scoring and evaluation are the same functions ``odeval score`` and ``odeval evaluate`` use
    (:func:`odeval.detectors.scoring.score_ks`, :func:`odeval.measures.evaluate_scoring`).
    """
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import score_ks
    from odeval.measures import evaluate_scoring, outlier_ranks

    result = UnitResult(unit_id=uid, dataset=prepared.facts, method=method.name, params=method.params_json,
                        metric=metric, status="ok")
    try:
        det = get_detector(method.name, **method.params)
        t0 = time.perf_counter()
        scored = score_ks(det, prepared.graph, method.ks)
        result.runtime_s = time.perf_counter() - t0
        result.skipped.update(scored.skipped)  # type: ignore[arg-type]  # keys: k text ("1", "150..300")
        if not scored.ks:  # a request that computes nothing is an error, as in `odeval score`
            raise ValueError(f"no requested k can be computed on {prepared.facts['n_objects']} objects: "
                             + "; ".join(f"k={ks}: {why}" for ks, why in scored.skipped.items()))
        y = prepared.labels
        objects = np.flatnonzero(y)
        for k, s in zip(scored.ks, scored.scores, strict=True):
            full, r = evaluate_scoring(y, s)
            result.ks.append(k)
            result.measures.append({m: float(full[m]) for m in measures if m in full})
            result.ranks.append((k, objects, np.asarray(outlier_ranks(y, r), dtype=np.float64)))
            if keep_scores:
                result.scores.append((k, s.astype(np.float64)))
    except Exception as exc:  # recorded, never fatal for the study
        result.status = "error"
        where = traceback.extract_tb(exc.__traceback__)[-1]
        result.error = (f"{type(exc).__name__}: {exc} "
                        f"(raised in {Path(where.filename).name}:{where.lineno}, {where.name})")
        result.ks, result.measures, result.ranks, result.scores = [], [], [], []
    return result


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
        except BaseException as exc:
            fut.set_exception(exc)
        return fut

    def wait(self, futures: set[Any]) -> set[Any]:
        return set(futures)

    def materialize(self, fut: Any) -> Any:
        return fut.result()


class _PoolExecutor(_SerialExecutor):
    def __init__(self, workers: int):
        import multiprocessing as mp

        # spawn: numba's threading layers and DuckDB's connection do not survive fork safely
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        return self.pool.submit(fn, *args)

    def wait(self, futures: set[Any]) -> set[Any]:
        return cf_wait(futures, return_when=FIRST_COMPLETED).done

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


class _DaskExecutor:
    def __init__(self, address: str):
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - depends on the extra
            raise RuntimeError("a Dask scheduler needs the optional extra: pip install 'odeval[dask]'") from None
        self.client = Client(address)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.client.submit(fn, *args, pure=False)

    def wait(self, futures: set[Any]) -> set[Any]:
        from distributed import wait

        return set(wait(list(futures), return_when="FIRST_COMPLETED").done)

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
def run_study(study: Study, store_path: str | Path, *, workers: int | None = None, scheduler: str | None = None,
              progress: str = "rich", retry_failed: bool = False) -> RunSummary:
    """Compute every unit of ``study`` missing from the store at ``store_path``.

    Parameters
    ----------
    study : Study
        A validated study (:func:`odeval.bench.config.load_study`).
    store_path : path
        DuckDB results store; created if absent.
    workers : int, optional
        Local worker processes (default: all cores; 1 runs in this process). Ignored with ``scheduler``.
    scheduler : str, optional
        Address of a Dask distributed scheduler (``tcp://HOST:PORT``) to run the units on.
    progress : {"rich", "log", "none"}
        A live progress display, one log line per unit, or nothing.
    retry_failed : bool
        Recompute units that previously ended with an error.
    """
    import os

    workers = workers or os.cpu_count() or 1
    t0 = time.perf_counter()
    with ResultStore(store_path) as store:
        store.register_study(study.study_hash, study.name, study.source, study.definition, __version__)
        plans, already = plan_study(study, store, retry_failed=retry_failed)
        total = already + sum(len(p.units) for p in plans)
        summary = RunSummary(total_units=total, already_done=already)
        with _progress(progress, total, already) as report, _executor(workers, scheduler) as ex:
            _drive(study, plans, store, ex, max(2, 2 * workers), summary, report)
    summary.wall_s = time.perf_counter() - t0
    return summary


def _drive(study: Study, plans: list[VariantPlan], store: ResultStore, ex: Any, max_active: int,
           summary: RunSummary, report: Callable[[UnitResult | None, str], None]) -> None:
    queue = deque(plans)
    inflight: dict[Any, tuple] = {}
    active = 0

    def admit() -> None:
        nonlocal active
        while queue and active < max_active:
            plan = queue.popleft()
            fut = ex.submit(prepare_variant, plan.ref, [m for _, m in plan.units], study.metric)
            inflight[fut] = ("prepare", plan)
            active += 1
            report(None, plan.ref.name)

    def record(res: UnitResult) -> None:
        store.write_unit(res, study_hash=study.study_hash, version=__version__)
        if res.status == "ok":
            summary.ok += 1
        else:
            summary.failed.append({"dataset": res.dataset["name"], "method": res.method, "params": res.params,
                                   "error": res.error or ""})
        report(res, res.dataset["name"])

    remaining_units: dict[str, int] = {}
    admit()
    while inflight:
        for fut in ex.wait(set(inflight)):
            kind, plan, *rest = inflight.pop(fut)
            if kind == "prepare":
                try:
                    prepared = ex.materialize(fut)
                except Exception as exc:  # the whole variant failed to load: every unit records the error
                    active -= 1
                    msg = f"preparing {plan.ref.path} failed: {type(exc).__name__}: {exc}"
                    for uid, m in plan.units:
                        record(_failed_unit(uid, plan.ref, m, study.metric, msg))
                    continue
                remaining_units[plan.ref.name] = len(plan.units)
                for uid, m in plan.units:
                    ufut = ex.submit(run_unit, prepared, uid, m, study.metric, study.measures, study.keep_scores)
                    inflight[ufut] = ("unit", plan, uid, m)
            else:
                uid, m = rest
                try:
                    res = fut.result()
                except Exception as exc:  # a worker died (e.g. out of memory)
                    res = _failed_unit(uid, plan.ref, m, study.metric, f"worker failed: {type(exc).__name__}: {exc}")
                record(res)
                remaining_units[plan.ref.name] -= 1
                if remaining_units[plan.ref.name] == 0:
                    active -= 1
        admit()


@contextmanager
def _progress(mode: str, total: int, already: int) -> Iterator[Callable[[UnitResult | None, str], None]]:
    if mode == "none":
        yield lambda res, name: None
        return
    if mode == "log":
        import sys

        done = [already]

        def log(res: UnitResult | None, name: str) -> None:
            if res is None:
                return
            done[0] += 1
            tail = "" if res.status == "ok" else f"  ERROR {res.error}"
            print(f"[{done[0]}/{total}] {name} {res.method} {res.params} {res.status} "
                  f"({res.runtime_s:.2f}s){tail}", file=sys.stderr, flush=True)

        yield log
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (TextColumn("[bold]units"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[current]}"))
    start = time.perf_counter()
    with Progress(*columns, transient=False) as prog:
        task = prog.add_task("units", total=total, completed=already, rate="", current="")
        current: deque[str] = deque(maxlen=3)
        computed = [0]

        def update(res: UnitResult | None, name: str) -> None:
            if name not in current:
                current.append(name)
            if res is not None:
                computed[0] += 1
                rate = computed[0] / max(time.perf_counter() - start, 1e-9)
                prog.update(task, advance=1, rate=f"{rate:.1f} units/s", current=", ".join(current))
            else:
                prog.update(task, current=", ".join(current))

        yield update


def summary_dict(summary: RunSummary) -> dict[str, Any]:
    return asdict(summary)
