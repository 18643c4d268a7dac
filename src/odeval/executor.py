"""Where parallel work runs: in this thread, in threads, in local processes or on a Dask cluster.

The one executor of odeval: the study runner, IREOS, EM/MV and the protocols hand their tasks to it. Two
arguments choose it everywhere in the public API:

``workers``
    the degree of parallelism: an integer ≥ 1, or -1 for every core this process may use
    (:func:`check_workers`).
``executor``
    the kind: ``"serial"`` (this thread, in order), ``"threads"``, ``"processes"`` (local processes, started
    with the *spawn* method), a Dask scheduler address (``"tcp://host:port"``), ``"local:N"`` (a Dask
    ``LocalCluster`` of N single-threaded worker processes, started for the executor and closed with it:
    :func:`local_cluster`), a ``distributed.Client``, an already built :class:`Executor` (a pool that outlives
    several calls), a ``concurrent.futures.Executor`` or a map-like callable ``f(function, tasks) -> results in
    order``.

Whatever the choice, :meth:`Executor.map` returns the results in task order and every task runs the same
code on the same input, so the numbers are the same bit for bit (the callers' tests check it); only the
time differs. A local worker process limits BLAS/LAPACK to one thread (no spinning BLAS threads on a loaded
machine; one thread gives the same bits everywhere), and its tasks are pickled with cloudpickle when it is
installed (lambdas and closures work, as they did under joblib).

:func:`get_executor` builds an executor, :func:`open_executor` builds one for a ``with`` block and closes
(or, on an exception such as Ctrl-C, terminates) only what it built. Besides ``map`` / ``imap`` an executor
offers what a driver of dependent tasks needs (the study runner): :meth:`Executor.submit`,
:meth:`Executor.wait` (the finished futures, with a timeout), :meth:`Executor.as_completed` (each future with
the task it belongs to, in completion order), :meth:`Executor.argument` (a result passed on to further tasks,
kept on the cluster with Dask), :meth:`Executor.cancel` and :meth:`Executor.terminate` (stop now: Ctrl-C).

Faults on a Dask cluster: a worker that dies is Dask's to handle — its tasks are rescheduled and the results it
held recomputed from their tasks (the same numbers). A task that was running on as many dying workers as the
scheduler allows (``distributed.scheduler.allowed-failures``) comes back as ``KilledWorker``; :class:`DaskExecutor`
then retries it, up to :data:`KILLED_RETRIES` times (a kill of one worker never fails a task, even on a cluster
that allows no failure), and only then reports it as the task's error; the retry includes the erred tasks it
depends on, also those whose futures the caller dropped (:func:`retry_tasks`). A scheduler that goes away (the client
lost its connection) raises :class:`ClusterLostError`, one line: that is the run's end, not a task's failure.
A cluster left without any worker (all of them died or left, and none came back: workers without a nanny, a
cluster manager that gave up) would leave its tasks waiting for ever; once it has had no worker for
:data:`NO_WORKERS_TIMEOUT` seconds, :meth:`DaskExecutor.wait` raises :class:`NoWorkersError` (a
:class:`ClusterLostError`: the run ends in one line, finished work is kept). The ``LocalCluster`` of
``local:N`` is the executor's own: without workers for :data:`REVIVE_AFTER` seconds, its workers are replaced
first (nannies that gave up).

``dask.distributed`` is imported only when a Dask executor is asked for (optional extra ``odeval[dask]``).
This module imports no pipeline stage.
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import os
import pickle
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures import Executor as _FuturesPool
from concurrent.futures import wait as _futures_wait
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["ALLOWED_FAILURES", "KILLED_RETRIES", "KINDS", "NO_WORKERS_TIMEOUT", "REVIVE_AFTER", "ClusterLostError",
           "DaskExecutor", "Executor", "FuturesExecutor", "MapExecutor", "NoWorkersError", "ProcessExecutor",
           "SerialExecutor", "ThreadExecutor", "available_cores", "check_workers", "cluster_lost", "gather_retrying",
           "get_executor", "interrupted", "killed_worker", "local_cluster", "open_executor", "parse_local",
           "quiet_distributed", "retry_tasks", "workers_renamed_from"]

#: The kinds named by a string (anything else given as a string with a ``:`` is a Dask scheduler address).
KINDS = ("serial", "threads", "processes")

#: How many times a Dask task reported as ``KilledWorker`` (its workers died while running it) is submitted
#: again before the executor reports the error (each time the scheduler allows its ``allowed-failures`` again).
KILLED_RETRIES = 2

#: Workers that may die while running one task before Dask gives up on it (``KilledWorker``), set on the
#: LocalCluster that ``local:N`` starts (Dask's default, stated here on purpose: one lost worker — a kill, an
#: out-of-memory kill of another process — must never fail a run, while a task that itself kills every worker it
#: runs on must end as an error after a few tries instead of taking the whole cluster down in turn).
ALLOWED_FAILURES = 3

#: Seconds a Dask cluster that had workers may have none before :meth:`DaskExecutor.wait` ends the run
#: (:class:`NoWorkersError`): long enough for nannies or a cluster manager to replace dead workers.
NO_WORKERS_TIMEOUT = 120.0

#: Seconds the ``LocalCluster`` of ``local:N`` may have no worker before the executor replaces its workers
#: (:meth:`DaskExecutor.wait`): a nanny restarts a dead worker within about a second, but one whose new worker
#: dies again while it is being started (a unit that kills every worker it runs on, on a loaded machine) is left
#: without any (distributed logs "Failed to restart worker after its process exited" and gives up).
REVIVE_AFTER = 10.0

#: How often (seconds) a Dask executor waiting for its tasks checks that the cluster still has workers.
_WORKERS_POLL = 2.0


class ClusterLostError(RuntimeError):
    """The Dask scheduler went away (the client lost its connection): the run cannot go on. One line."""


class NoWorkersError(ClusterLostError):
    """The Dask cluster has had no worker for :data:`NO_WORKERS_TIMEOUT` seconds: the run cannot go on. One line."""


def cluster_lost(address: Any, exc: BaseException | None = None) -> ClusterLostError:
    """The :class:`ClusterLostError` for the scheduler at ``address`` (the cause's first line appended)."""
    cause = ""
    if exc is not None:
        first = str(exc).splitlines()[0] if str(exc) else ""
        cause = f" ({type(exc).__name__}{': ' + first if first else ''})"
    return ClusterLostError(f"the Dask scheduler {address} went away{cause}")


def killed_worker(exc: BaseException) -> bool:
    """Whether ``exc`` is Dask's ``KilledWorker`` (a task whose workers died while running it)."""
    return type(exc).__name__ == "KilledWorker"


def _connection_lost(client: Any, exc: BaseException) -> bool:
    """Whether ``exc`` (raised waiting for or fetching a result) means that ``client`` lost its scheduler."""
    if isinstance(exc, CancelledError) and "scheduler-connection-lost" in str(exc):
        return True
    lost = isinstance(exc, CancelledError | OSError | TimeoutError) or type(exc).__name__ == "CommClosedError"
    return lost and getattr(client, "status", "running") not in ("running", "newly-created")


@contextmanager
def quiet_distributed() -> Iterator[None]:
    """Silence ``distributed``'s own error logs (a client closed while it tries to reconnect to a scheduler that
    went away logs a traceback): the run's end is reported once, as :class:`ClusterLostError`."""
    import logging

    loggers = [logging.getLogger(name) for name in ("distributed", "distributed.client", "distributed.utils")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _address(client: Any) -> str:
    try:
        return str(client.scheduler.address)
    except AttributeError:  # pragma: no cover - a client without a scheduler
        return "(unknown address)"


class _WorkerWatch:
    """Whether a Dask cluster that had workers has had none for :data:`NO_WORKERS_TIMEOUT` seconds (then
    :meth:`check` raises :class:`NoWorkersError`). A cluster that never had a worker (an adaptive cluster still
    starting them) is waited for."""

    def __init__(self, client: Any, timeout: float | None = None, revive: Callable[[], None] | None = None) -> None:
        self.client, self.timeout, self.revive = client, timeout, revive
        self.seen = False
        self.since: float | None = None
        self.revived = False  # revive is called once per spell without workers
        self.check()

    def check(self) -> None:
        if getattr(self.client, "status", "running") != "running":
            return  # reconnecting or closed: the caller's connection rule tells (no blocking call here)
        try:
            n = len(self.client.nthreads())
        except Exception:  # the scheduler is unreachable: that is for the caller's connection rule to tell
            return
        if n:
            self.seen, self.since, self.revived = True, None, False
            return
        if not self.seen:
            return
        now = time.monotonic()
        limit = NO_WORKERS_TIMEOUT if self.timeout is None else self.timeout
        if self.since is None:
            self.since = now
        elif self.revive is not None and not self.revived and now - self.since >= min(REVIVE_AFTER, limit / 2):
            self.revived = True
            self.revive()
        elif now - self.since >= limit:
            raise NoWorkersError(f"the Dask cluster {_address(self.client)} has had no worker for {limit:g} s "
                                 "(they died or left and none came back)")


def _wait_all(client: Any, futures: Sequence[Any], watch: _WorkerWatch) -> None:
    """Wait until every future of ``futures`` has finished (a result or an error), checking meanwhile that the
    cluster still has workers."""
    from distributed import wait

    while True:
        try:
            wait(list(futures), timeout=_WORKERS_POLL)
            return
        except TimeoutError:
            if _connection_lost(client, TimeoutError()):
                return  # gather raises the connection error, reported by the caller
            watch.check()


def gather_retrying(client: Any, futures: Sequence[Any], retries: int = KILLED_RETRIES,
                    no_workers_timeout: float | None = None) -> list[Any]:
    """``client.gather(futures)``, retrying the tasks reported as ``KilledWorker`` (at most ``retries`` times
    each), raising :class:`ClusterLostError` when the scheduler went away and :class:`NoWorkersError` when the
    cluster has had no worker for ``no_workers_timeout`` seconds (default :data:`NO_WORKERS_TIMEOUT`)."""
    tries: dict[Any, int] = {}
    watch = _WorkerWatch(client, no_workers_timeout)
    while True:
        try:
            _wait_all(client, futures, watch)
            return client.gather(list(futures))
        except Exception as exc:
            if _connection_lost(client, exc):
                raise cluster_lost(_address(client), exc) from None
            killed = [f for f in futures if f.status == "error" and killed_worker(f.exception())]
            if not killed or any(tries.get(f.key, 0) >= retries for f in killed):
                raise
            for f in killed:
                tries[f.key] = tries.get(f.key, 0) + 1
            retry_tasks(client, killed)


def retry_tasks(client: Any, futures: Sequence[Any]) -> None:
    """Compute the erred tasks of ``futures`` again, with every erred task they depend on (``client.retry``).

    ``Client.retry`` itself raises ``KeyError`` naming a dependency when the scheduler retried an erred task this
    client holds no future of — a result passed on to later tasks and then dropped by the caller (the study
    runner's prepared variant: its future is dropped once its units are submitted). That happens when every
    worker dies: the dependency, lost with its worker, is computed again on the last one the scheduler still
    counts, which dies in turn, so that the dependency comes back as ``KilledWorker`` and so do its dependents.
    The scheduler had retried the whole chain by then, but the client stopped before marking the futures it
    holds as pending again. Here the same request is sent to the scheduler, and only the futures this client
    holds are marked (on the client's event loop, as ``Client.retry`` does).
    """
    keys = list(dict.fromkeys(f.key for f in futures))
    if not keys:
        return
    if not all(hasattr(client, name) for name in ("scheduler", "futures", "id", "sync")):  # pragma: no cover
        client.retry(list(futures))  # a Client without the attributes used below (another distributed version)
        return

    async def retry() -> None:
        retried = await client.scheduler.retry(keys=keys, client=client.id)
        for key in retried:
            state = client.futures.get(key)
            if state is not None:  # None: an erred dependency retried with them, of which this client holds no future
                state.retry()

    client.sync(retry)

def parse_local(executor: Any) -> int | None:
    """N of ``"local:N"`` (``"local"`` alone: 2), None for anything else.

    Raises
    ------
    ValueError
        ``local:`` followed by anything but a positive integer (one line).
    """
    if not isinstance(executor, str) or not (executor == "local" or executor.startswith("local:")):
        return None
    n = executor.partition(":")[2]
    try:
        workers = int(n) if n else 2
    except ValueError:
        workers = 0
    if workers < 1:
        raise ValueError(f"scheduler {executor!r}: expected local:N with N a positive integer")
    return workers


def local_cluster(n_workers: int, **kwargs: Any) -> Any:
    """A Dask ``LocalCluster`` of ``n_workers`` processes with one thread each (numba and BLAS included: one
    thread each, so that N workers use N cores and the numbers do not depend on thread counts), replaced by their
    nannies when they die, with :data:`ALLOWED_FAILURES`; its worker processes die with this one (Dask's own
    rule). Dask's logs are silenced below CRITICAL: the recovery from a dead worker logs errors and tracebacks
    that are not the run's (what fails for good reaches the caller as the task's error). ``kwargs`` override
    these settings."""
    import logging

    try:
        from distributed import LocalCluster
    except ImportError:  # pragma: no cover - depends on the environment
        raise ValueError("a Dask LocalCluster (local:N) needs the optional extra: pip install 'odeval[dask]'") \
            from None
    one = {name: "1" for name in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                  "MKL_NUM_THREADS")}
    options = {"threads_per_worker": 1, "processes": True, "dashboard_address": ":0",
               "silence_logs": logging.CRITICAL, "env": one,
               "scheduler_kwargs": {"allowed_failures": ALLOWED_FAILURES}}
    import dask

    # one task per worker thread at a time (Dask's default saturation 1.1 sends a single-threaded worker two):
    # a unit that kills its worker then takes no queued, innocent unit with it into KilledWorker
    with dask.config.set({"distributed.scheduler.worker-saturation": 1.0}):
        return LocalCluster(n_workers=n_workers, **{**options, **kwargs})


T = TypeVar("T")


# ------------------------------------------------------------------------------------------------ workers
def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform has one, else ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def check_workers(workers: Any) -> int:
    """The number of workers ``workers`` asks for: an integer ≥ 1 as it is, -1 = :func:`available_cores`.

    Raises
    ------
    ValueError
        Anything else (0, -2, 1.5, True, "2"), in one line.
    """
    integer = (isinstance(workers, int) and not isinstance(workers, bool)) or _is_numpy_int(workers)
    if not integer or (workers < 1 and workers != -1):
        raise ValueError(f"workers (or -1: every core) must be an integer ≥ 1, got {workers!r}")
    return available_cores() if workers == -1 else int(workers)


def _is_numpy_int(value: Any) -> bool:
    return type(value).__module__ == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iu"


def workers_renamed_from(*old_names: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator: accept the old keyword(s) of ``workers`` (``n_jobs``, ``jobs``) for one release, with a
    :class:`DeprecationWarning`; giving both the old and the new name is a ``TypeError``."""

    def decorate(fn: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> T:
            for old in old_names:
                if old in kwargs:
                    if "workers" in kwargs:
                        raise TypeError(f"{fn.__name__}() got both workers and its deprecated name {old}")
                    warnings.warn(f"{fn.__name__}({old}=...) is deprecated; use workers=... (same meaning)",
                                  DeprecationWarning, stacklevel=2)
                    kwargs["workers"] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is a KeyboardInterrupt or was caused by one (numba reports Ctrl-C inside a compiled
    function as ``SystemError: ... returned a result with an exception set``, the KeyboardInterrupt as its
    cause): such an error stops the caller instead of being recorded as a task's failure."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, KeyboardInterrupt):
            return True
        e = e.__cause__ or e.__context__
    return False


def _note_task(exc: BaseException, index: int, total: int) -> None:
    """Name the failed task on its exception (shown under the traceback; ``str(exc)`` is unchanged)."""
    note = f"(raised by task {index} of {total} in odeval.executor)"
    if note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)


# ------------------------------------------------------------------------------------------------ executors
class Executor:
    """Runs a function over tasks. Subclasses implement :meth:`submit` (and :meth:`wait` when their futures are
    not ``concurrent.futures`` futures); everything else follows.

    Attributes
    ----------
    kind : str
        "serial", "threads", "processes", "dask", "futures" (a ``concurrent.futures.Executor``) or "map".
    local : bool
        True when tasks run in this process, sharing its memory ("serial", "threads").
    """

    kind = "serial"
    local = True

    def __init__(self, workers: int = 1) -> None:
        self._workers = check_workers(workers)

    @property
    def workers(self) -> int:
        """Tasks that may run at once."""
        return self._workers

    # -- single tasks
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Start ``fn(*args, **kwargs)``; returns its future (``concurrent.futures.Future`` or Dask's)."""
        raise NotImplementedError

    def wait(self, futures: Iterable[Any], timeout: float | None = None) -> list[Any]:
        """The finished futures among ``futures``, in the order given, once at least one has finished or
        ``timeout`` seconds have passed (then possibly none)."""
        futures = list(futures)
        done = _futures_wait(futures, timeout=timeout, return_when=FIRST_COMPLETED).done
        return [f for f in futures if f in done]

    def as_completed(self, futures: Mapping[Any, T], timeout: float | None = None) -> Iterator[tuple[Any, T]]:
        """``(future, task)`` for every future of ``futures`` (a mapping future → the task it belongs to) as it
        finishes; futures finishing together come in the order given. ``timeout`` bounds each wait: when nothing
        finished in time, the iteration stops (the rest are still running)."""
        left = dict(futures)
        while left:
            done = self.wait(left, timeout)
            if not done:
                return
            for fut in done:
                yield fut, left.pop(fut)

    def result(self, future: Any) -> Any:
        """The value of a finished task (raises the task's exception)."""
        return future.result()

    def argument(self, future: Any) -> Any:
        """A task's result in the form to pass to later tasks of this executor: the value (raising the task's
        exception), or with Dask the future itself, so that the data stays on the cluster."""
        return self.result(future)

    def cancel(self, futures: Iterable[Any]) -> None:
        """Cancel the tasks of ``futures`` that have not started (running ones finish; see :meth:`terminate`)."""
        for fut in futures:
            fut.cancel()

    # -- many tasks
    def imap(self, fn: Callable[[Any], T], tasks: Iterable[Any]) -> Iterator[T]:
        """``fn(task)`` of every task, yielded in task order as they become available. A task's exception is
        raised here, naming the task in a note; the tasks not yet started are then cancelled (also when the
        caller stops iterating or is interrupted)."""
        tasks = list(tasks)
        futures = [self.submit(fn, task) for task in tasks]
        finished = 0
        try:
            for i, fut in enumerate(futures):
                try:
                    value = self.result(fut)
                except Exception as exc:
                    _note_task(exc, i, len(tasks))
                    raise
                finished = i + 1
                yield value
        finally:
            if finished < len(futures):
                self.cancel(futures[finished:])

    def map(self, fn: Callable[[Any], T], tasks: Iterable[Any],
            on_result: Callable[[int, T], None] | None = None) -> list[T]:
        """``[fn(task) for task in tasks]``, computed by the workers; ``on_result(i, value)`` is called for each
        result in task order (progress)."""
        out: list[T] = []
        for value in self.imap(fn, tasks):
            if on_result is not None:
                on_result(len(out), value)
            out.append(value)
        return out

    # -- life cycle
    def close(self) -> None:
        """Release the workers after their tasks (nothing to do for a serial executor)."""

    def terminate(self) -> None:
        """Stop now (Ctrl-C): pending tasks are cancelled, running ones abandoned where the kind allows it."""
        self.close()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None:
            self.terminate()
        else:
            self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(workers={self.workers})"


class SerialExecutor(Executor):
    """Runs every task in the calling thread when it is submitted (simplest to debug, nothing pickled).

    ``fatal``: exceptions that stop the caller instead of being kept in the task's future (default
    :func:`interrupted`: Ctrl-C, also inside a compiled kernel).
    """

    kind = "serial"

    def __init__(self, workers: int = 1, *, fatal: Callable[[BaseException], bool] = interrupted) -> None:
        super().__init__(1)
        self.fatal = fatal

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        fut: Future = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except Exception as exc:  # a KeyboardInterrupt (not an Exception) goes straight to the caller
            if self.fatal(exc):
                raise
            fut.set_exception(exc)
        return fut

    def wait(self, futures: Iterable[Any], timeout: float | None = None) -> list[Any]:
        return list(futures)  # every task ran when it was submitted

    def imap(self, fn: Callable[[Any], T], tasks: Iterable[Any]) -> Iterator[T]:
        tasks = list(tasks)
        for i, task in enumerate(tasks):  # one at a time, when the caller asks for the next result
            try:
                value = fn(task)
            except Exception as exc:
                _note_task(exc, i, len(tasks))
                raise
            yield value


class ThreadExecutor(Executor):
    """A pool of ``workers`` threads in this process (for work that releases the GIL: numba, BLAS)."""

    kind = "threads"

    def __init__(self, workers: int = 1) -> None:
        super().__init__(workers)
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="odeval-worker")
        return self._pool.submit(fn, *args, **kwargs)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def terminate(self) -> None:
        if self._pool is not None:  # threads cannot be killed: drop what has not started, do not wait
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


def _load_cloudpickle() -> Any:
    try:
        import cloudpickle
    except ImportError:
        try:
            from joblib.externals import cloudpickle  # scikit-learn's joblib vendors it
        except ImportError:  # pragma: no cover - neither installed: plain pickle
            return None
    return cloudpickle


class _Call:
    """``fn(*args, **kwargs)`` for a worker process, pickled with cloudpickle (by value where plain pickle
    cannot: lambdas, closures, classes of ``__main__``) when the pool sends it, not before."""

    __slots__ = ("call",)

    def __init__(self, fn: Callable[..., Any], args: tuple, kwargs: dict) -> None:
        self.call = (fn, args, kwargs)

    def __reduce__(self) -> tuple:
        cp = _load_cloudpickle()
        if cp is None:  # pragma: no cover
            return _Call, self.call
        return _unpickle_call, (cp.dumps(self.call, protocol=pickle.HIGHEST_PROTOCOL),)

    def __call__(self) -> Any:
        fn, args, kwargs = self.call
        return fn(*args, **kwargs)


def _unpickle_call(blob: bytes) -> _Call:
    call = _Call.__new__(_Call)
    call.call = pickle.loads(blob)
    return call


def _run_call(call: _Call) -> Any:
    return call()


def _start_worker(pids: Any, limit_blas: bool, initializer: _Call | None) -> None:
    """Initializer of every local worker process: report its pid (for :meth:`ProcessExecutor.terminate`), limit
    BLAS/LAPACK to one thread, then run the caller's initializer."""
    pids.put(os.getpid())
    if limit_blas:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1)
    if initializer is not None:
        initializer()


class ProcessExecutor(Executor):
    """A pool of ``workers`` local processes, started with *spawn* (numba's threading layers and DuckDB's
    connections do not survive ``fork``) when the first task is submitted and kept until :meth:`close`.

    Parameters
    ----------
    workers : int
        Processes (-1: every core).
    initializer, initargs
        Run in every worker process once it started (after the pid report and the BLAS limit).
    limit_blas : bool
        Limit BLAS/LAPACK to one thread in the workers (default; ``threadpoolctl``).
    """

    kind = "processes"
    local = False

    def __init__(self, workers: int = 1, *, initializer: Callable[..., Any] | None = None, initargs: tuple = (),
                 limit_blas: bool = True) -> None:
        super().__init__(workers)
        self.initializer, self.initargs, self.limit_blas = initializer, tuple(initargs), limit_blas
        self._pool: ProcessPoolExecutor | None = None
        self._pids: Any = None  # the workers report their pid here (terminate kills exactly those)
        self._seen_pids: list[int] = []

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            ctx = mp.get_context("spawn")
            self._pids = ctx.SimpleQueue()
            init = None if self.initializer is None else _Call(self.initializer, self.initargs, {})
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_start_worker,
                                             initargs=(self._pids, self.limit_blas, init))
        return self._pool

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        return self._ensure_pool().submit(_run_call, _Call(fn, args, kwargs))

    def worker_pids(self) -> list[int]:
        """The process ids of the workers started so far."""
        while self._pids is not None and not self._pids.empty():
            self._seen_pids.append(self._pids.get())
        return list(self._seen_pids)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def terminate(self) -> None:
        """Cancel the pending tasks and kill the workers now: running tasks are abandoned."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        pool.shutdown(wait=False, cancel_futures=True)
        mine = set(self.worker_pids())
        for proc in mp.active_children():  # our children only: a pid of another process is never signalled
            if proc.pid in mine and proc.is_alive():
                proc.terminate()


class DaskExecutor(Executor):
    """Tasks on a Dask cluster, through a ``distributed.Client`` (given, or connected to ``address``, or to the
    ``LocalCluster`` that ``"local:N"`` starts: :func:`local_cluster`, :attr:`cluster`).

    A client this executor connected, and a cluster it started, are closed by :meth:`close`; a given client is
    left open. A cluster that had workers and has had none for ``no_workers_timeout`` seconds (default
    :data:`NO_WORKERS_TIMEOUT`) raises :class:`NoWorkersError` in :meth:`wait`. Results passed on to
    later tasks stay on the cluster (:meth:`argument`). A task reported as ``KilledWorker`` is retried up to
    ``killed_retries`` times (:meth:`wait`, :meth:`result`); a lost scheduler raises :class:`ClusterLostError`.
    """

    kind = "dask"
    local = False

    def __init__(self, client_or_address: Any, workers: int = 1, *, killed_retries: int = KILLED_RETRIES,
                 no_workers_timeout: float | None = None) -> None:
        super().__init__(workers)
        self.killed_retries = killed_retries
        self._tries: dict[Any, int] = {}  # task key -> times retried after KilledWorker
        self.cluster: Any = None  # the LocalCluster of "local:N", owned by this executor
        n_local = parse_local(client_or_address)
        if n_local is not None:
            from distributed import Client  # (local_cluster says when the extra is missing)

            self.cluster = local_cluster(n_local)
            self._n_local = n_local
            try:
                self.client, self.owns_client = Client(self.cluster), True
            except BaseException:
                self.cluster.close()
                raise
        elif isinstance(client_or_address, str):
            try:
                from distributed import Client
            except ImportError:  # pragma: no cover - depends on the environment
                raise ValueError("a Dask scheduler address needs the optional extra: pip install 'odeval[dask]'") \
                    from None
            try:
                self.client, self.owns_client = Client(client_or_address), True
            except OSError as exc:  # no scheduler there (anymore)
                raise cluster_lost(client_or_address, exc) from None
        else:
            self.client, self.owns_client = client_or_address, False
        self.address = _address(self.client)
        self._watch = _WorkerWatch(self.client, no_workers_timeout,
                                   revive=self._replace_local_workers if self.cluster is not None else None)

    def _replace_local_workers(self) -> None:
        """Replace the workers of the owned ``LocalCluster`` (all its nannies: closed, then started anew) when it
        has had none for :data:`REVIVE_AFTER` seconds (a nanny gives up when its new worker dies while starting)."""
        self.cluster.scale(0)
        deadline = time.monotonic() + 30.0
        while self.cluster.workers and time.monotonic() < deadline:
            time.sleep(0.1)
        self.cluster.scale(self._n_local)

    @property
    def workers(self) -> int:
        """Threads of the cluster's workers (the ``workers`` given while it has none)."""
        try:
            return max(1, sum(self.client.nthreads().values()))
        except Exception:  # pragma: no cover - a client without workers yet
            return self._workers

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # Client.submit has keywords of its own (workers=, key=, ...): bind the task's first
            fn = functools.partial(fn, **kwargs)
        return self.client.submit(fn, *args, pure=False)

    def wait(self, futures: Iterable[Any], timeout: float | None = None) -> list[Any]:
        """As :meth:`Executor.wait`; a finished task reported as ``KilledWorker`` is retried (not returned) while
        it has retries left. Meanwhile the cluster is checked every few seconds for workers: none for
        :data:`NO_WORKERS_TIMEOUT` seconds raises :class:`NoWorkersError`."""
        from distributed import wait

        futures = list(futures)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = _WORKERS_POLL if deadline is None else max(0.0, min(_WORKERS_POLL, deadline - time.monotonic()))
            try:
                done = wait(futures, timeout=step, return_when="FIRST_COMPLETED").done
            except TimeoutError:  # nothing finished within the step
                if _connection_lost(self.client, TimeoutError()):
                    raise cluster_lost(self.address) from None
                self._watch.check()
                if deadline is not None and time.monotonic() >= deadline:
                    return []
                continue
            except Exception as exc:
                if _connection_lost(self.client, exc):
                    raise cluster_lost(self.address, exc) from None
                raise
            finished = [f for f in futures if f in done and not self._retried(f)]
            if finished or len(done) == 0:
                return finished
            # every task that finished was retried: wait again

    def _retried(self, future: Any) -> bool:
        """Retry ``future`` if it failed with ``KilledWorker`` and has retries left; whether it was retried."""
        if future.status != "error" or not killed_worker(future.exception()):
            return False
        tries = self._tries.get(future.key, 0)
        if tries >= self.killed_retries:
            return False
        self._tries[future.key] = tries + 1
        retry_tasks(self.client, [future])
        return True

    def result(self, future: Any) -> Any:
        """The task's value; waits for it checking that the cluster still has workers (a finished result held
        by a worker that died is computed again: Dask's future is then pending again)."""
        while True:
            try:
                return future.result(timeout=_WORKERS_POLL)
            except Exception as exc:
                if _connection_lost(self.client, exc):
                    raise cluster_lost(self.address, exc) from None
                if isinstance(exc, TimeoutError) and future.status != "error":  # not (again) finished yet
                    self._watch.check()
                    continue
                if not self._retried(future):
                    raise

    def argument(self, future: Any) -> Any:
        if future.status == "error":
            self.result(future)  # raises the task's exception here (after the retries of a KilledWorker)
        return future

    def cancel(self, futures: Iterable[Any]) -> None:
        futures = list(futures)
        if futures:
            self.client.cancel(futures)

    def close(self) -> None:
        if self.owns_client and self.client is not None:
            client, self.client = self.client, None
            if client.status == "running":
                client.close(timeout=10)
            else:  # the scheduler went away: stop the reconnection attempts without their tracebacks
                with quiet_distributed():
                    client.close(timeout=10)
        if self.cluster is not None:  # local:N: its workers stop now (running tasks are abandoned)
            cluster, self.cluster = self.cluster, None
            with quiet_distributed():
                cluster.close()

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r})"


class FuturesExecutor(Executor):
    """A given ``concurrent.futures.Executor`` (left open: its owner shuts it down)."""

    kind = "futures"
    local = False

    def __init__(self, pool: _FuturesPool, workers: int = 1) -> None:
        super().__init__(workers)
        self.pool = pool

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        return self.pool.submit(fn, *args, **kwargs)


class MapExecutor(Executor):
    """A map-like callable ``f(function, tasks) -> results in task order`` (e.g. a cluster's own map).

    It runs whole maps only: :meth:`submit` is not available.
    """

    kind = "map"
    local = False

    def __init__(self, map_fn: Callable[[Callable[[Any], Any], Sequence[Any]], Iterable[Any]],
                 workers: int = 1) -> None:
        super().__init__(workers)
        self.map_fn = map_fn

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a map-like callable runs whole maps only (Executor.map / imap), not single tasks")

    def imap(self, fn: Callable[[Any], T], tasks: Iterable[Any]) -> Iterator[T]:
        yield from self.map_fn(fn, list(tasks))


# ------------------------------------------------------------------------------------------------ construction
def get_executor(executor: Any = None, workers: int = 1, *, initializer: Callable[..., Any] | None = None,
                 initargs: tuple = (), limit_blas: bool = True,
                 fatal: Callable[[BaseException], bool] = interrupted,
                 no_workers_timeout: float | None = None) -> Executor:
    """The executor ``executor`` names, with ``workers`` workers.

    Parameters
    ----------
    executor : None, str, Executor, distributed.Client, concurrent.futures.Executor or callable
        None or "serial": this thread; "threads" (one thread: serial); "processes"; a Dask scheduler address
        ("tcp://host:port"); "local:N": a Dask ``LocalCluster`` of N single-threaded worker processes, started
        here and closed with the executor (:func:`local_cluster`); a ``distributed.Client``; an
        :class:`Executor` (returned as it is); a ``concurrent.futures.Executor``; a map-like callable
        ``f(function, tasks)``.
    workers : int
        Degree of parallelism, -1 = every core (:func:`check_workers`); a Dask cluster has its own.
    initializer, initargs, limit_blas
        Of local worker processes (:class:`ProcessExecutor`); ignored by the other kinds.
    fatal
        Exceptions a serial executor lets through instead of keeping them in the task's future
        (:class:`SerialExecutor`).
    no_workers_timeout : float, optional
        Of a Dask cluster (:class:`DaskExecutor`): seconds without any worker before :class:`NoWorkersError`
        (default :data:`NO_WORKERS_TIMEOUT`); ignored by the other kinds.

    Raises
    ------
    ValueError
        An unknown kind (one line), a bad ``workers``.
    """
    n = check_workers(workers)
    if isinstance(executor, Executor):
        return executor
    if executor is None or executor == "serial" or (executor == "threads" and n == 1):
        return SerialExecutor(fatal=fatal)
    if executor == "threads":
        return ThreadExecutor(n)
    if executor == "processes":
        return ProcessExecutor(n, initializer=initializer, initargs=initargs, limit_blas=limit_blas)
    if isinstance(executor, str) and (":" in executor or parse_local(executor) is not None):
        return DaskExecutor(executor, n, no_workers_timeout=no_workers_timeout)
    if type(executor).__module__.startswith("distributed"):
        return DaskExecutor(executor, n, no_workers_timeout=no_workers_timeout)
    if isinstance(executor, _FuturesPool):
        return FuturesExecutor(executor, n)
    if callable(executor) and not isinstance(executor, str | bytes | int | float):
        return MapExecutor(executor, n)
    raise ValueError(f"executor must be 'serial', 'threads', 'processes', a Dask scheduler address "
                     f"('tcp://host:port'), 'local:N' (a Dask LocalCluster of N processes), a distributed.Client, "
                     f"an odeval.executor.Executor, a concurrent.futures.Executor or a map-like callable; "
                     f"got {executor!r}")


@contextmanager
def open_executor(executor: Any = None, workers: int = 1, **options: Any) -> Iterator[Executor]:
    """:func:`get_executor` for a ``with`` block: what it built is closed at the end of the block, or terminated
    when the block raises (Ctrl-C: the workers stop now); an :class:`Executor`, ``Client`` or pool given by the
    caller stays open."""
    ex = get_executor(executor, workers, **options)
    owned = ex is not executor
    try:
        yield ex
    except BaseException:
        if owned:
            ex.terminate()
        raise
    if owned:
        ex.close()
