"""Run a study: datasets × methods × k into a results store, resumable, on local processes or a Dask cluster.

The runner is split by concern: the identity of a unit (:mod:`odeval.bench.identity`: :func:`unit_id`,
:func:`scoring_version`), planning (:mod:`odeval.bench.planning`: :func:`plan_study`, :func:`prepare_variant`),
execution (:mod:`odeval.bench.execution`: :func:`run_unit`, :func:`evaluate_unit`, the driver) on an
:mod:`odeval.executor`, and the progress display (:mod:`odeval.bench.progress`). This module is the entry point,
:func:`run_study`, and keeps every name of the former single module importable.

Unit of work: one dataset variant × one method × all its k; running a study again computes only the units
missing from the store. Scores are a pure function of (dataset file, method, parameters, k, metric): the stored
measures are identical whatever the number of workers or the backend; only ``runtime_s`` differs between runs.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from odeval import __version__
from odeval.bench.config import Study
from odeval.bench.execution import (
    FLUSH_SECONDS,
    FLUSH_UNITS,
    MAX_RANK_ROWS,
    RunSummary,
    best_ks,
    drive,
    evaluate_unit,
    internal_rows,
    run_unit,
    worker_init,
)
from odeval.bench.identity import file_sha256, scoring_version, unit_id
from odeval.bench.planning import Prepared, VariantPlan, plan_study, prepare_variant
from odeval.bench.progress import Progress, make_progress
from odeval.bench.store import ResultStore, StoreInUseError, is_interrupt
from odeval.executor import Executor, check_workers, open_executor

__all__ = ["FLUSH_SECONDS", "FLUSH_UNITS", "MAX_RANK_ROWS", "Prepared", "Progress", "RunSummary", "StudyInterrupted",
           "VariantPlan", "best_ks", "evaluate_unit", "internal_rows", "make_progress", "plan_study",
           "prepare_variant", "run_study", "run_unit", "scoring_version", "unit_id", "worker_init"]

_file_sha256 = file_sha256  # the former private name (tests and scripts import it from here)


class StudyInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped :func:`run_study`; every unit finished before it is saved.

    ``summary`` says what the call did before the interruption (``summary.computed`` units written).
    """

    def __init__(self, summary: RunSummary):
        super().__init__("study interrupted")
        self.summary = summary


def run_study(study: Study, store_path: str | Path, *, workers: int | None = None, scheduler: str | None = None,
              progress: str = "rich", retry_failed: bool = False, wait: float = 0.0,
              executor: Any = None, no_workers_timeout: float | None = None) -> RunSummary:
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
        Local worker processes (default and -1: all cores; 1 runs in this process). Ignored with ``scheduler``.
        Workers die with this process (:func:`worker_init`).
    scheduler : str, optional
        Address of a Dask distributed scheduler (``tcp://HOST:PORT``) to run the units on, or ``local:N``: a Dask
        ``LocalCluster`` of N single-threaded worker processes started for this run and closed at its end
        (:func:`odeval.executor.local_cluster`); the same as ``executor=`` that string. The stored measures are
        those of the default executor, bit for bit.
    executor : optional
        Where the units run, as :func:`odeval.executor.get_executor` names it: "serial", "processes", a Dask
        address, a ``distributed.Client`` or an :class:`odeval.executor.Executor` (a given client or executor is
        left open). Default: ``scheduler``, else "processes" with more than one worker, else "serial".
    no_workers_timeout : float, optional
        On a Dask cluster: seconds the cluster may have no worker at all before the run ends with
        :class:`odeval.executor.NoWorkersError` (default :data:`odeval.executor.NO_WORKERS_TIMEOUT`, 120 s; the
        store keeps every finished unit and resumes).
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
    if scheduler and executor is not None:
        raise ValueError("give the Dask scheduler either as scheduler= or as executor=, not both")
    _refuse_in_spawned_import()
    workers = check_workers(workers) if workers else (os.cpu_count() or 1)
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
                    _executor(workers, scheduler, executor, no_workers_timeout) as ex:  # Ctrl-C, failure: workers stop
                drive(study, plans, store, ex, max(2, 2 * (ex.workers if ex.kind == "dask" else workers)), summary,
                      report)
        except BaseException as exc:  # Ctrl-C, also when DuckDB caught it during a query and raised its own error
            if not (is_interrupt(exc) or sigint.is_set()):
                raise
            summary.wall_s = time.perf_counter() - t0
            raise StudyInterrupted(summary) from None
    summary.wall_s = time.perf_counter() - t0
    return summary


def _refuse_in_spawned_import() -> None:
    """Stop a worker process that runs the study again because it imported a script without the
    ``if __name__ == "__main__":`` guard: the message lands on the terminal, and the parent records the dead
    worker for every unit with the usual causes."""
    import multiprocessing

    # a spawned child imports the parent's script while it is "inheriting" (multiprocessing's own test, in
    # spawn._check_not_importing_main): run_study called then is the script's top level run again
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError(
            "run_study was called while a worker process imported the script that started the study: put "
            "the study's code under `if __name__ == \"__main__\":` (worker processes import the script again; see "
            "docs/custom-detectors.md)")


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


def _executor(workers: int, scheduler: str | None, executor: Any = None, no_workers_timeout: float | None = None
              ) -> AbstractContextManager[Executor]:
    """The study's executor for a ``with`` block: ``executor`` as given, else the Dask ``scheduler``, else local
    processes (spawned, dying with this process: :func:`worker_init`) or, with one worker, this process. What it
    builds is terminated on Ctrl-C or a failure of the driver, closed otherwise.

    Local worker processes run BLAS/LAPACK with one thread each: ``workers`` processes each starting a thread per
    core oversubscribe the machine, and an estimator whose time is in BLAS (PyOD's GMM, OCSVM) then ran ~100×
    slower than alone (a PenDigits GMM unit: 377 s against ≈ 3 s in the mixed-zoo run, two workers).
    With one worker the study runs in this process and BLAS keeps the caller's setting."""
    if executor is None:
        executor = scheduler or ("serial" if workers <= 1 else "processes")
    return open_executor(executor, workers, initializer=worker_init, initargs=(os.getpid(),), limit_blas=True,
                         fatal=is_interrupt, no_workers_timeout=no_workers_timeout)


def summary_dict(summary: RunSummary) -> dict[str, Any]:
    return asdict(summary)
