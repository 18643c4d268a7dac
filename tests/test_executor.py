"""odeval.executor: every kind gives the same results in task order; errors, cancellation, Ctrl-C, workers=-1."""

from __future__ import annotations

import math
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from odeval.executor import (
    DaskExecutor,
    Executor,
    ProcessExecutor,
    SerialExecutor,
    ThreadExecutor,
    available_cores,
    check_workers,
    get_executor,
    interrupted,
    open_executor,
    workers_renamed_from,
)

TASKS = list(range(8))


@pytest.fixture(scope="module", autouse=True)
def _functions_by_value():
    """Worker processes cannot import this test module (pytest's importlib mode): ship its functions by value."""
    import cloudpickle

    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    yield
    cloudpickle.unregister_pickle_by_value(module)


def work(x: int) -> float:
    """A float that depends on every bit of a seeded computation; later tasks finish first."""
    time.sleep(0.002 * (len(TASKS) - x))
    v = np.random.default_rng(x).normal(size=200)
    return float(np.sqrt(np.abs(v)).sum() / (1.0 + x))


def fail_at_3(x: int) -> int:
    if x == 3:
        raise ValueError(f"task {x} cannot be computed")
    return x


EXPECTED = [work(x) for x in TASKS]


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cl:
        yield cl


@pytest.mark.parametrize("kind", ["serial", "threads", "processes"])
def test_local_kinds_give_the_same_results_in_task_order(kind):
    with open_executor(kind, 2) as ex:
        assert ex.map(work, TASKS) == EXPECTED
        assert list(ex.imap(work, TASKS)) == EXPECTED


def test_a_dask_cluster_by_client_and_by_address_gives_the_same_results(cluster):
    from distributed import Client

    with Client(cluster) as client:
        with open_executor(client) as ex:
            assert isinstance(ex, DaskExecutor) and ex.workers == 2
            assert ex.map(work, TASKS) == EXPECTED
        assert client.status == "running"  # a given client stays open
    with open_executor(cluster.scheduler_address) as ex:
        assert ex.map(work, TASKS) == EXPECTED
        client = ex.client
    assert client.status == "closed"  # the executor's own client is closed with it


def test_a_given_pool_a_map_callable_and_an_executor_are_used_as_they_are():
    with ThreadPoolExecutor(2) as pool:
        assert get_executor(pool, 2).map(work, TASKS) == EXPECTED
    assert get_executor(lambda f, xs: [f(x) for x in xs]).map(work, TASKS) == EXPECTED
    ex = ThreadExecutor(2)
    assert get_executor(ex) is ex
    with open_executor(ex) as same:  # a pool that outlives several calls: not closed by the block
        assert same.map(work, TASKS) == EXPECTED
    assert ex.map(work, TASKS) == EXPECTED
    ex.close()


def test_on_result_sees_every_result_in_task_order():
    seen = []
    with open_executor("threads", 3) as ex:
        ex.map(work, TASKS, on_result=lambda i, v: seen.append((i, v)))
    assert seen == list(enumerate(EXPECTED))


def test_process_workers_take_lambdas_outlive_several_maps_and_run_the_initializer():
    ex = ProcessExecutor(2, initializer=_set_marker, initargs=("ready",))
    try:
        assert ex.map(lambda x: x * x, range(5)) == [x * x for x in range(5)]
        first = set(ex.worker_pids())
        assert ex.map(_marker, range(4)) == ["ready"] * 4  # the initializer ran in every worker
        assert ex.map(_blas_threads, range(2)) == [1, 1]  # BLAS limited to one thread in the workers
        assert first and first <= set(ex.worker_pids())  # the same pool served every map
    finally:
        ex.close()


def _set_marker(value: str) -> None:  # shipped by value: its effect must live outside this module's globals
    import os

    os.environ["ODEVAL_TEST_WORKER_MARKER"] = value


def _marker(_: int) -> str | None:
    import os

    return os.environ.get("ODEVAL_TEST_WORKER_MARKER")


def _blas_threads(_: int) -> int:
    from threadpoolctl import threadpool_info

    info = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    return max(info) if info else 1


@pytest.mark.parametrize("kind", ["serial", "threads", "processes", "dask"])
def test_a_task_error_propagates_with_its_type_message_and_task(kind, request):
    executor = request.getfixturevalue("cluster").scheduler_address if kind == "dask" else kind
    with open_executor(executor, 2) as ex, pytest.raises(ValueError, match="task 3 cannot be computed") as info:
        ex.map(fail_at_3, TASKS)
    assert "(raised by task 3 of 8 in odeval.executor)" in getattr(info.value, "__notes__", [])
    assert str(info.value) == "task 3 cannot be computed"  # the message itself is unchanged


def test_a_failed_map_cancels_the_tasks_not_started():
    ran = []

    def slow(x):
        if x == 0:
            raise RuntimeError("first task fails")
        ran.append(x)
        time.sleep(0.05)
        return x

    with open_executor("threads", 1) as ex, pytest.raises(RuntimeError):
        ex.map(slow, range(40))
    time.sleep(0.2)
    assert len(ran) < 5  # the others were cancelled, not run


def test_submit_wait_and_as_completed_tag_each_result_with_its_task():
    with open_executor("threads", 2) as ex:
        gate = threading.Event()
        held = ex.submit(gate.wait, 5)
        assert ex.wait([held], timeout=0.01) == []  # nothing finished in time
        futures = {ex.submit(work, x): f"task {x}" for x in TASKS}
        got = {tag: ex.result(fut) for fut, tag in ex.as_completed(futures)}
        assert got == {f"task {x}": EXPECTED[x] for x in TASKS}
        gate.set()
        assert ex.wait([held]) == [held] and ex.argument(held) is True


def test_serial_executor_keeps_task_errors_and_lets_ctrl_c_through():
    ex = SerialExecutor()
    fut = ex.submit(fail_at_3, 3)
    with pytest.raises(ValueError):
        fut.result()

    def ctrl_c_in_a_kernel():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ki:  # how numba reports a SIGINT inside compiled code
            raise SystemError("returned a result with an exception set") from ki

    with pytest.raises(SystemError):
        ex.submit(ctrl_c_in_a_kernel)
    assert interrupted(KeyboardInterrupt()) and not interrupted(ValueError())
    kept = SerialExecutor(fatal=lambda exc: False).submit(ctrl_c_in_a_kernel)
    assert isinstance(kept.exception(), SystemError)


def test_ctrl_c_in_a_with_block_stops_the_process_workers_now():
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt), open_executor("processes", 2) as ex:
        fut = ex.submit(time.sleep, 60)
        while not ex.worker_pids():
            time.sleep(0.05)
        time.sleep(0.5)
        raise KeyboardInterrupt
    pids = set(ex.worker_pids())
    deadline = time.monotonic() + 10
    import multiprocessing as mp

    while {p.pid for p in mp.active_children()} & pids and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not {p.pid for p in mp.active_children()} & pids
    assert time.monotonic() - t0 < 30  # the 60 s task was abandoned
    assert not fut.done() or fut.cancelled() or fut.exception() is not None


def test_workers_minus_one_is_every_core_and_bad_values_are_one_line():
    assert check_workers(-1) == available_cores() >= 1
    assert check_workers(np.int64(3)) == 3
    assert get_executor("threads", -1).workers == available_cores()
    for bad in (0, -2, 1.5, True, "2", None):
        with pytest.raises(ValueError, match=r"workers \(or -1: every core\) must be an integer ≥ 1") as info:
            check_workers(bad)
        assert "\n" not in str(info.value)


def test_one_thread_is_serial_and_an_unknown_kind_is_one_line():
    assert isinstance(get_executor("threads", 1), SerialExecutor)
    assert isinstance(get_executor(None, 4), SerialExecutor)
    for bad in (3, "thread", object()):
        with pytest.raises(ValueError, match="executor must be") as info:
            get_executor(bad)
        assert "\n" not in str(info.value)
    assert issubclass(ThreadExecutor, Executor)


def test_the_old_keyword_is_accepted_with_a_deprecation_warning():
    @workers_renamed_from("n_jobs", "jobs")
    def run(*, workers: int = 1) -> int:
        return workers

    with pytest.warns(DeprecationWarning, match=r"run\(n_jobs=...\) is deprecated; use workers="):
        assert run(n_jobs=3) == 3
    with pytest.warns(DeprecationWarning):
        assert run(jobs=2) == 2
    with pytest.raises(TypeError, match="both workers and"):
        run(n_jobs=2, workers=2)
    assert run(workers=4) == 4


def killed_the_first_time(flag: str) -> int:
    """Reports ``KilledWorker`` (as Dask does for a task whose workers died) the first time, 7 afterwards."""
    import os
    from types import SimpleNamespace

    from distributed.scheduler import KilledWorker

    if not os.path.exists(flag):
        open(flag, "w").close()
        raise KilledWorker("killed_the_first_time", SimpleNamespace(address="tcp://127.0.0.1:1"), 0)
    return 7


def plus_one(x: int) -> int:
    return x + 1


def test_a_task_whose_dropped_dependency_died_is_retried_with_it(cluster, tmp_path):
    """A result passed on to a later task, then dropped by the caller (the study runner's prepared variant), that
    comes back as ``KilledWorker`` when every worker died: its dependent reports the same error and is retried with
    it — ``Client.retry`` alone raised ``KeyError`` naming the dependency (no future of the client held it)."""
    from distributed import Client

    from odeval.executor import gather_retrying

    with DaskExecutor(cluster.scheduler_address) as ex:
        dep = ex.submit(killed_the_first_time, str(tmp_path / "executor"))
        fut = ex.submit(plus_one, dep)  # with Dask the future itself is the argument (Executor.argument)
        del dep
        assert ex.wait([fut]) == [fut]
        assert ex.result(fut) == 8
    with Client(cluster) as client:
        dep = client.submit(killed_the_first_time, str(tmp_path / "gather"), pure=False)
        fut = client.submit(plus_one, dep, pure=False)
        del dep
        assert gather_retrying(client, [fut]) == [8]


GATED_TASK = """
import os
import time

import numpy as np


def gated_work(x, gate, started):
    \"\"\"A seeded float, after announcing the worker process and waiting for the gate file.\"\"\"
    open(os.path.join(started, f"{os.getpid()}-{x}"), "w").close()
    while not os.path.exists(gate):
        time.sleep(0.02)
    return float(np.sqrt(np.abs(np.random.default_rng(x).normal(size=200))).sum() / (1.0 + x))
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kill -9 of a worker process")
def test_a_task_whose_worker_was_killed_is_retried_not_failed(tmp_path, monkeypatch):
    """On a cluster that allows no failure (allowed-failures = 0) Dask reports a task whose worker died as
    ``KilledWorker`` at once: the executor submits it again (``KILLED_RETRIES``); with no retries it is the error."""
    import importlib
    import os
    import signal
    from pathlib import Path

    distributed = pytest.importorskip("distributed")
    (tmp_path / "gated_task.py").write_text(GATED_TASK)  # importable by the worker processes started below
    monkeypatch.syspath_prepend(str(tmp_path))
    src = Path(__file__).resolve().parents[1] / "src"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(src), str(tmp_path)]))
    gated_work = importlib.import_module("gated_task").gated_work

    def kill_a_running_task(ex, futures, gate, started, workers):
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            pids = [int(p.name.split("-")[0]) for p in started.iterdir()]
            pids = [p for p in pids if p in workers]
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                gate.touch()
                return
            time.sleep(0.05)
        raise AssertionError("no task started in time")

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  scheduler_kwargs={"allowed_failures": 0}) as cluster, \
            distributed.Client(cluster) as client:
        for retries, case in ((0, "fails"), (2, "retried")):
            gate, started = tmp_path / f"gate-{case}", tmp_path / f"started-{case}"
            started.mkdir()
            ex = DaskExecutor(client, killed_retries=retries)
            workers = set(client.run(os.getpid).values())
            futures = [ex.submit(gated_work, x, str(gate), str(started)) for x in TASKS[:4]]
            kill_a_running_task(ex, futures, gate, started, workers)
            if case == "fails":
                with pytest.raises(Exception) as info:
                    for f in futures:
                        ex.result(f)
                assert type(info.value).__name__ == "KilledWorker"
                client.wait_for_workers(2, timeout=300)  # the nanny restarted the killed worker
            else:
                assert {f: ex.result(f) for f in futures} == dict(zip(futures, EXPECTED[:4], strict=True))
                assert ex.wait(futures) == futures
    sys.modules.pop("gated_task", None)


def test_local_n_is_parsed_and_a_bad_n_is_one_line():
    from odeval.executor import parse_local

    assert parse_local("local:3") == 3 and parse_local("local") == parse_local("local:") == 2
    assert parse_local("tcp://h:8786") is None and parse_local("localhost:8786") is None and parse_local(3) is None
    for bad in ("local:0", "local:x", "local:-1"):
        with pytest.raises(ValueError, match="expected local:N with N a positive integer") as info:
            get_executor(bad)
        assert "\n" not in str(info.value)


@pytest.mark.slow
def test_local_n_starts_a_cluster_of_its_own_and_closes_it():
    pytest.importorskip("distributed")
    with open_executor("local:2") as ex:
        assert isinstance(ex, DaskExecutor) and ex.workers == 2 and ex.cluster is not None
        cluster = ex.cluster
        assert ex.map(math.sqrt, TASKS) == [math.sqrt(x) for x in TASKS]  # (workers cannot import this module)
    assert ex.cluster is None and cluster.status.name == "closed"


def test_a_cluster_without_workers_ends_the_wait_in_one_line(monkeypatch):
    """The cluster had a worker, it left, none came back: the task would wait for ever; NoWorkersError instead."""
    distributed = pytest.importorskip("distributed")
    import odeval.executor
    from odeval.executor import ClusterLostError, NoWorkersError

    monkeypatch.setattr(odeval.executor, "_WORKERS_POLL", 0.2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cl, \
            distributed.Client(cl) as client:
        ex = DaskExecutor(client, no_workers_timeout=1.0)
        assert ex.result(ex.submit(work, 3)) == work(3)
        cl.scale(0)  # (the cluster manager does not start it again)
        _poll_until(lambda: not client.nthreads())
        fut = ex.submit(work, 4)
        with pytest.raises(NoWorkersError, match=r"has had no worker for 1 s") as info:
            ex.wait([fut])
        assert isinstance(info.value, ClusterLostError) and "\n" not in str(info.value)
        with pytest.raises(NoWorkersError):
            ex.result(fut)


def test_local_n_replaces_workers_whose_nannies_gave_up(monkeypatch):
    """local:N owns its LocalCluster: when every nanny has lost its worker for good (distributed's Nanny gives up
    when the new worker dies while starting: "Failed to restart worker after its process exited"; here the nannies
    are closed), the executor replaces the workers after REVIVE_AFTER seconds and the waiting task runs, instead of
    ending the run with NoWorkersError (seen once under CI load: a unit that kills every worker it runs on)."""
    pytest.importorskip("distributed")
    import odeval.executor

    monkeypatch.setattr(odeval.executor, "_WORKERS_POLL", 0.2)
    monkeypatch.setattr(odeval.executor, "REVIVE_AFTER", 0.5)
    with DaskExecutor("local:2", no_workers_timeout=60.0) as ex:
        assert ex.map(math.sqrt, TASKS) == [math.sqrt(x) for x in TASKS]
        for nanny in list(ex.cluster.workers.values()):
            ex.cluster.sync(nanny.close)
        _poll_until(lambda: not ex.client.nthreads())
        assert list(ex.cluster.workers)  # the closed nannies are still the cluster's: nothing would replace them
        fut = ex.submit(math.sqrt, 16.0)
        assert ex.wait([fut]) == [fut] and ex.result(fut) == 4.0
        _poll_until(lambda: len(ex.client.nthreads()) == 2)  # both replaced


def _poll_until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_study_run_refuses_a_bad_local_n_in_one_line(tmp_path):
    from click.testing import CliRunner

    from odeval.cli import main

    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "s"\nk = "1..3"\n\n[[datasets]]\nglob = "*.npz"\n\n[[methods]]\nname = "kNN"\n')
    res = CliRunner().invoke(main, ["study", "run", str(study), "--scheduler", "local:0"])
    assert res.exit_code == 2 and "expected local:N with N a positive integer" in res.output
    assert "Traceback" not in res.output


def test_study_run_no_workers_timeout_needs_a_scheduler_and_reaches_the_dask_executor(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import odeval.executor
    from odeval.cli import main

    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "s"\nk = "1..3"\n\n[[datasets]]\nglob = "*.npz"\n\n[[methods]]\nname = "kNN"\n')
    res = CliRunner().invoke(main, ["study", "run", str(study), "--no-workers-timeout", "5"])
    assert res.exit_code == 2 and "--no-workers-timeout is for a Dask cluster: it needs --scheduler" in res.output
    res = CliRunner().invoke(main, ["study", "run", str(study), "--scheduler", "local:1", "--no-workers-timeout", "0"])
    assert res.exit_code == 2 and "--no-workers-timeout" in res.output and "Traceback" not in res.output
    seen = {}

    class Recorder:  # stands in for DaskExecutor: records how get_executor builds it
        def __init__(self, address, workers, *, no_workers_timeout=None):
            seen.update(address=address, timeout=no_workers_timeout)

    monkeypatch.setattr(odeval.executor, "DaskExecutor", Recorder)
    odeval.executor.get_executor("tcp://127.0.0.1:1", 1, no_workers_timeout=7.5)
    assert seen == {"address": "tcp://127.0.0.1:1", "timeout": 7.5}


def test_score_no_workers_timeout_needs_a_scheduler_and_reaches_the_partitioned_graph(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import odeval.bench.distributed
    from odeval.bench.score_file import score_file
    from odeval.cli import main

    path = tmp_path / "d.npz"
    np.savez(path, X=np.random.default_rng(0).normal(size=(30, 2)))
    out = str(tmp_path / "s.npz")
    res = CliRunner().invoke(main, ["score", str(path), "-m", "LOF", "--k", "2:3", "--unlabelled",
                                    "--no-workers-timeout", "5", "-o", out])
    assert res.exit_code == 2 and "--no-workers-timeout is for a Dask cluster: it needs --scheduler" in res.output
    res = CliRunner().invoke(main, ["score", str(path), "-m", "LOF", "--k", "2:3", "--unlabelled", "--scheduler",
                                    "local:1", "--no-workers-timeout", "0", "-o", out])
    assert res.exit_code == 2 and "--no-workers-timeout" in res.output and "Traceback" not in res.output
    with pytest.raises(ValueError, match="no_workers_timeout is for a Dask cluster"):
        score_file(path, ["LOF"], out, k="2:3", load_options={"label": None}, no_workers_timeout=5.0)
    seen = {}

    def connect(X, k_max, scheduler, **kwargs):  # stands in for PartitionedGraph.connect: records the limit
        seen.update(scheduler=scheduler, timeout=kwargs.get("no_workers_timeout"))
        raise ValueError("recorded")

    monkeypatch.setattr(odeval.bench.distributed.PartitionedGraph, "connect", staticmethod(connect))
    res = CliRunner().invoke(main, ["score", str(path), "-m", "LOF", "--k", "2:3", "--unlabelled", "--scheduler",
                                    "tcp://127.0.0.1:1", "--no-workers-timeout", "7.5", "-o", out])
    assert res.exit_code == 1 and "recorded" in res.output
    assert seen == {"scheduler": "tcp://127.0.0.1:1", "timeout": 7.5}
    with pytest.raises(ValueError, match="no_workers_timeout must be a positive number of seconds, got 0"):
        odeval.bench.distributed.PartitionedGraph(object(), np.zeros((5, 2)), 2, no_workers_timeout=0)
