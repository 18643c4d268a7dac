"""Faults on real Dask clusters (issue 28): a worker killed with SIGKILL in the middle of a study or of a blockwise
scoring leaves the run to complete with the undisturbed numbers; a scheduler that goes away ends the run with one
line and a store that resumes.

"In the middle" is made certain, not timed: the tasks that matter wait for a gate file and announce themselves
(their process id) in a folder; the test kills while they wait, then opens the gate. Nothing asserts a duration;
every wait polls with a generous deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed")

from odeval.bench import ResultStore, load_study, run_study  # noqa: E402
from odeval.bench.distributed import PartitionedGraph, local_cluster, partitioned  # noqa: E402
from odeval.detectors import get_detector  # noqa: E402
from odeval.detectors.scoring import score_ks  # noqa: E402
from odeval.executor import ClusterLostError  # noqa: E402
from odeval.neighbors import knn_graph  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kill -9")]
SRC = Path(__file__).resolve().parents[2] / "src"
DEADLINE = 300.0  # seconds: generous, for 2 loaded cores


def _poll(what: str, found, timeout: float = DEADLINE):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _started(folder: Path, workers: set[int] | None = None) -> list[int]:
    """Process ids of the tasks that announced themselves and wait for the gate (among ``workers``, the worker
    processes of the cluster: never this process)."""
    pids = [int(p.name.split("-")[0]) for p in folder.iterdir()] if folder.exists() else []
    return [p for p in pids if p != os.getpid() and (workers is None or p in workers)]


def _worker_pids(client) -> set[int]:
    return set(client.run(os.getpid).values())


# --- a study whose estimator units wait for a gate ------------------------------------------------------------
GATED = '''
import os
import time

import numpy as np

GATE, STARTED = {gate!r}, {started!r}


class Gated:
    """Distance to the mean shifted by ``shift`` (deterministic); announces its process, then waits for GATE."""

    def __init__(self, shift=0.0):
        self.shift = shift

    def fit(self, X):
        os.makedirs(STARTED, exist_ok=True)
        open(os.path.join(STARTED, f"{{os.getpid()}}-{{self.shift}}-{{len(X)}}"), "w").close()
        while not os.path.exists(GATE):
            time.sleep(0.02)
        self.mean_ = X.mean(axis=0) + self.shift
        return self

    def decision_function(self, X):
        return -np.sqrt(((X - self.mean_) ** 2).sum(axis=1))
'''


@pytest.fixture
def gated_study(tmp_path, monkeypatch, npz_dataset, study_file):
    """(study file, gate file, started folder): 2 datasets × (kNN, LOF, 4 gated estimator settings) = 12 units."""
    gate, started = tmp_path / "gate", tmp_path / "started"
    study = _plugin_study(tmp_path, monkeypatch, npz_dataset, study_file, "faults", "gated_est",
                          GATED.format(gate=str(gate), started=str(started)), """
        [[methods]]
        name = "LOF"

        [[methods]]
        estimator = "gated_est:Gated"
        grid = { shift = [0.0, 0.5, 1.0, 1.5] }
        """)
    return study, gate, started


def _plugin_study(tmp_path, monkeypatch, npz_dataset, study_file, name, module, source, methods):
    """A study of kNN and ``methods`` on two small datasets, with the estimator module ``module`` (``source``) in a
    plugin folder on the path of this process, of its spawned Dask workers and of processes started by hand."""
    plugin = tmp_path / f"plugin_{name}"
    plugin.mkdir()
    (plugin / f"{module}.py").write_text(textwrap.dedent(source))
    monkeypatch.delitem(sys.modules, module, raising=False)  # a module of another test's folder: not this one
    monkeypatch.syspath_prepend(str(plugin))  # this process and its spawned Dask workers (sys.path is passed on)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SRC), str(plugin)]))  # processes started by hand
    data = tmp_path / "data"
    data.mkdir()
    npz_dataset(data / "fa.npz", 70, 5, 3, seed=4, n_dup=4)
    npz_dataset(data / "fb.npz", 90, 6, 2, seed=5)
    return study_file(tmp_path / f"{name}.toml", textwrap.dedent(f"""
        [study]
        name = "{name}"
        k = "1..10"

        [[datasets]]
        glob = "data/*.npz"

        [[methods]]
        name = "kNN"
        """) + textwrap.dedent(methods))


def _comparable(store: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    with ResultStore(store, read_only=True) as rs:
        runs = rs.runs().drop(columns=["runtime_s"]).sort_values(["unit_id", "k"]).reset_index(drop=True)
        ranks = rs.outlier_ranks().sort_values(["unit_id", "k", "object"]).reset_index(drop=True)
    return runs, ranks


def _reference(study: Path, gate: Path, tmp_path: Path) -> Path:
    """The undisturbed run (this process, gate open); the gate is closed again afterwards."""
    gate.touch()
    ref = tmp_path / "reference.duckdb"
    summary = run_study(load_study(study), ref, workers=1, progress="none")
    assert summary.ok == 12 and not summary.failed
    gate.unlink()
    shutil.rmtree(gate.parent / "started")  # announced by this process: not a worker to kill
    return ref


def _assert_same_store(a: Path, b: Path) -> None:
    for x, y in zip(_comparable(a), _comparable(b), strict=True):
        pd.testing.assert_frame_equal(x, y)


@pytest.mark.parametrize("victims", ["one", "every"])
def test_a_worker_killed_in_the_middle_of_a_study_changes_nothing(gated_study, tmp_path, victims):
    """allowed-failures = 0: Dask itself gives up on the task at once (KilledWorker); the executor retries it.
    "every": all the workers are killed at once (their nannies start new ones; the retried tasks wait for them)."""
    study, gate, started = gated_study
    ref = _reference(study, gate, tmp_path)
    store = tmp_path / "killed.duckdb"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  scheduler_kwargs={"allowed_failures": 0}) as cluster:
        result: dict = {}

        def run() -> None:
            try:
                result["summary"] = run_study(load_study(study), store, scheduler=cluster.scheduler_address,
                                              progress="none")
            except BaseException as exc:  # reported below
                result["error"] = exc

        with distributed.Client(cluster) as client:
            workers = _worker_pids(client)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        victim = _poll("a gated unit running on a worker", lambda: _started(started, workers))[0]
        for pid in [victim] if victims == "one" else sorted(workers):
            os.kill(pid, signal.SIGKILL)
        gate.touch()
        thread.join(DEADLINE)
        assert not thread.is_alive(), "the study did not finish after the worker was killed"
    assert "error" not in result, result.get("error")
    summary = result["summary"]
    assert summary.ok == 12 and not summary.failed, summary.failed
    _assert_same_store(ref, store)


# --- a cluster of separate processes, whose scheduler can be killed --------------------------------------------
@pytest.fixture
def process_cluster(tmp_path):
    """A Dask scheduler and two workers (one thread, no nanny) as processes of their own: (address, scheduler,
    [worker processes])."""
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    info = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", str(info)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        address = _poll("the scheduler", lambda: info.exists() and json.loads(info.read_text() or "{}").get("address"))
        for _ in range(2):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads",
                                           "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"], env=env,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with distributed.Client(address) as client:
            client.wait_for_workers(2, timeout=DEADLINE)
        yield address, procs[0], procs[1:]
    finally:
        for p in procs:  # our own children, by their process ids
            if p.poll() is None:
                p.kill()
            p.wait()


def test_a_scheduler_that_goes_away_ends_the_study_in_one_line_and_the_store_resumes(gated_study, process_cluster,
                                                                                      tmp_path):
    study, gate, started = gated_study
    ref = _reference(study, gate, tmp_path)
    address, scheduler, _ = process_cluster
    store = tmp_path / "resumed.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "odeval.cli", "study", "run", str(study), "--store", str(store),
                             "--scheduler", address, "--quiet"], env=dict(os.environ), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines: list[str] = []
        for line in proc.stderr:  # a unit line is printed once the unit is in the store
            lines.append(line)
            if line.startswith("["):
                break
        assert any(x.startswith("[") for x in lines), "".join(lines)
        _poll("a gated unit in flight", lambda: _started(started))
        scheduler.send_signal(signal.SIGKILL)
        rest = proc.stderr.read()
        rc = proc.wait(DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = "".join(lines) + rest
    errors = [x for x in text.splitlines() if x.startswith("Error:")]
    assert rc == 1 and len(errors) == 1, text
    assert "the Dask scheduler" in errors[0] and "went away" in errors[0] and str(store) in errors[0]
    assert "Traceback" not in text
    gate.touch()
    summary = run_study(load_study(study), store, workers=1, progress="none")  # resumed in this process
    assert summary.already_done >= 1 and summary.already_done + summary.ok == 12 and not summary.failed
    _assert_same_store(ref, store)


def test_a_cluster_left_without_workers_ends_the_study_in_one_line_and_the_store_resumes(
        gated_study, process_cluster, tmp_path):
    """Every worker killed and none coming back (workers without a nanny): the tasks would wait for ever; the
    executor ends the run once the cluster has had no worker for ``no_workers_timeout`` seconds."""
    from odeval.executor import NoWorkersError

    study, gate, started = gated_study
    ref = _reference(study, gate, tmp_path)
    address, _, workers = process_cluster
    store = tmp_path / "no-workers.duckdb"
    result: dict = {}

    def run() -> None:
        try:  # the timeout as `study run --no-workers-timeout 3` passes it
            result["summary"] = run_study(load_study(study), store, scheduler=address, progress="none",
                                          no_workers_timeout=3.0)
        except BaseException as exc:  # reported below
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        _poll("a gated unit running on a worker", lambda: _started(started, {w.pid for w in workers}))
        for w in workers:
            w.kill()
        thread.join(DEADLINE)
        assert not thread.is_alive(), "the study hangs on a cluster without workers"
    finally:
        gate.touch()
    error = result.get("error")
    assert isinstance(error, NoWorkersError), result
    assert "\n" not in str(error) and address in str(error) and "no worker for 3 s" in str(error)
    summary = run_study(load_study(study), store, workers=1, progress="none")  # resumed in this process
    assert summary.already_done + summary.ok == 12 and not summary.failed
    _assert_same_store(ref, store)


# --- a unit that kills every worker it runs on, on `study run --scheduler local:N` -----------------------------
CRASHING = '''
import os
import signal

import numpy as np

FIXED = {fixed!r}


class Crashing:
    """Distance to the mean shifted by ``shift``; with shift 1 on 3 attributes it kills its own process (as a
    crash in compiled code or the out-of-memory killer would) until FIXED exists."""

    def __init__(self, shift=0.0):
        self.shift = shift

    def fit(self, X):
        if self.shift == 1.0 and X.shape[1] == 3 and not os.path.exists(FIXED):
            os.kill(os.getpid(), signal.SIGKILL)
        self.mean_ = X.mean(axis=0) + self.shift
        return self

    def decision_function(self, X):
        return -np.sqrt(((X - self.mean_) ** 2).sum(axis=1))
'''


def test_a_unit_that_kills_every_worker_fails_in_one_line_on_local_n_and_the_store_resumes(
        tmp_path, monkeypatch, npz_dataset, study_file):
    """`odeval study run --scheduler local:2`: the LocalCluster of the run (allowed-failures 3, KILLED_RETRIES
    retries, nannies replacing the dead workers) gives up on the crashing unit — one FAILED line naming it, the
    other units computed (the numbers of the default executor) — and the same store resumes once it is fixed."""
    fixed = tmp_path / "fixed"
    study = _plugin_study(tmp_path, monkeypatch, npz_dataset, study_file, "crash", "crashing_est",
                          CRASHING.format(fixed=str(fixed)), """
        [[methods]]
        estimator = "crashing_est:Crashing"
        grid = { shift = [0.0, 1.0] }
        """)
    fixed.touch()
    ref = tmp_path / "reference.duckdb"
    assert run_study(load_study(study), ref, workers=1, progress="none").ok == 6  # the default executor
    fixed.unlink()
    store = tmp_path / "crash.duckdb"
    proc = subprocess.run([sys.executable, "-m", "odeval.cli", "study", "run", str(study), "--store", str(store),
                           "--scheduler", "local:2", "--quiet"], env=dict(os.environ), capture_output=True,
                          text=True, timeout=2 * DEADLINE)
    text = proc.stdout + proc.stderr
    failed = [x for x in proc.stderr.splitlines() if "FAILED" in x]
    assert proc.returncode == 1 and len(failed) == 1, text
    assert "fa" in failed[0] and "Crashing" in failed[0] and "KilledWorker" in failed[0], failed[0]
    assert "Traceback" not in text, text
    fixed.touch()
    summary = run_study(load_study(study), store, workers=1, progress="none", retry_failed=True)
    assert summary.already_done == 5 and summary.ok == 1 and not summary.failed
    _assert_same_store(ref, store)  # the 5 units of local:2 are those of the default executor, bit for bit


# --- blockwise scoring (odeval score --scheduler) ----------------------------------------------------------------
GATED_LOF = '''
import os
import time
from pathlib import Path

from odeval.detectors.blockwise import Step, kdist_step
from odeval.detectors.lof import LOF

GATE, STARTED = {gate!r}, {started!r}


def _gated_kdist(state):
    """LOF's first block step, after announcing the process and waiting for the gate."""
    Path(STARTED).mkdir(exist_ok=True)
    (Path(STARTED) / f"{{os.getpid()}}-{{state.block.n_objects}}-{{time.monotonic_ns()}}").touch()
    while not os.path.exists(GATE):
        time.sleep(0.02)
    return kdist_step(state)


class GatedLOF(LOF):
    """LOF whose first block step waits for a gate: the same plan and numbers otherwise."""

    def _block_steps(self):
        first, *rest = super()._block_steps()
        return [Step(_gated_kdist, first.send), *rest]
'''


@pytest.fixture
def gated_lof(tmp_path, monkeypatch):
    """(GatedLOF(), gate file, started folder), its module importable by Dask workers started afterwards."""
    import importlib

    plugin = tmp_path / "plugin_lof"
    plugin.mkdir()
    gate, started = tmp_path / "gate", tmp_path / "started"
    (plugin / "gated_lof.py").write_text(textwrap.dedent(GATED_LOF.format(gate=str(gate), started=str(started))))
    monkeypatch.syspath_prepend(str(plugin))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SRC), str(plugin)]))
    monkeypatch.delitem(sys.modules, "gated_lof", raising=False)  # not another test's module (other paths)
    module = importlib.import_module("gated_lof")
    yield module.GatedLOF(), gate, started
    sys.modules.pop("gated_lof", None)


def _blockwise_data():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(400, 3))
    X[50:60] = X[7]  # duplicates
    return X[rng.permutation(len(X))]


def _score_in_thread(det, graph, ks):
    out: dict = {}

    def run() -> None:
        try:
            out["scores"] = score_ks(partitioned(det, graph), graph, ks).scores
        except BaseException as exc:  # reported by the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_worker_killed_in_the_middle_of_a_blockwise_scoring_changes_nothing(gated_lof):
    X = _blockwise_data()
    ks = "1..25"
    expected = score_ks(get_detector("LOF"), knn_graph(X, 25), ks).scores
    det, gate, started = gated_lof
    with local_cluster(2) as cluster, distributed.Client(cluster) as client, \
            PartitionedGraph(client, X, 25, n_blocks=4) as graph:
        workers = _worker_pids(client)
        thread, out = _score_in_thread(det, graph, ks)
        victim = _poll("a block step waiting on a worker", lambda: _started(started, workers))[0]
        os.kill(victim, signal.SIGKILL)  # a worker running a step and holding blocks: both are recomputed
        gate.touch()
        thread.join(DEADLINE)
        assert not thread.is_alive(), "the scoring did not finish after the worker was killed"
        assert "error" not in out, out.get("error")
        assert np.array_equal(out["scores"], expected)
        again = score_ks(partitioned(get_detector("kNN"), graph), graph, ks).scores  # the graph is whole again
        assert np.array_equal(again, score_ks(get_detector("kNN"), knn_graph(X, 25), ks).scores)


def test_a_scheduler_that_goes_away_ends_a_blockwise_scoring_in_one_line(gated_lof, process_cluster):
    address, scheduler, _ = process_cluster
    X = _blockwise_data()
    det, gate, started = gated_lof
    client = distributed.Client(address)
    graph = PartitionedGraph(client, X, 25, n_blocks=4)
    graph._owns_client = True  # closed with the graph
    try:
        thread, out = _score_in_thread(det, graph, "1..25")
        _poll("a block step waiting on a worker", lambda: _started(started))
        scheduler.send_signal(signal.SIGKILL)
        thread.join(DEADLINE)
        assert not thread.is_alive()
    finally:
        gate.touch()
        graph.close()
    assert isinstance(out.get("error"), ClusterLostError), out
    assert "\n" not in str(out["error"]) and address in str(out["error"])


def test_odeval_score_with_no_scheduler_at_the_address_is_one_line(tmp_path):
    from click.testing import CliRunner

    from odeval.cli import main

    path = tmp_path / "d.csv"
    np.savetxt(path, _blockwise_data()[:50], delimiter=",", header="a,b,c", comments="")
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):  # refused at once; do not retry for 30 s
        res = CliRunner().invoke(main, ["score", str(path), "-m", "LOF", "--k", "2:5", "--unlabelled", "--scheduler",
                                        f"tcp://127.0.0.1:{port}", "-o", str(tmp_path / "s.npz")])
    assert res.exit_code == 1, res.output
    assert "Error: the Dask scheduler tcp://127.0.0.1:" in res.output and "went away" in res.output
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_a_cluster_left_without_workers_ends_a_blockwise_scoring_in_one_line(gated_lof, process_cluster,
                                                                             monkeypatch):
    import odeval.executor
    from odeval.executor import NoWorkersError

    address, _, workers = process_cluster
    monkeypatch.setattr(odeval.executor, "NO_WORKERS_TIMEOUT", 600.0)  # the graph's own limit must be the one used
    X = _blockwise_data()
    det, gate, started = gated_lof
    client = distributed.Client(address)
    graph = PartitionedGraph(client, X, 25, n_blocks=4, no_workers_timeout=3.0)  # as `score --no-workers-timeout 3`
    graph._owns_client = True  # closed with the graph
    try:
        thread, out = _score_in_thread(det, graph, "1..25")
        _poll("a block step waiting on a worker", lambda: _started(started, {w.pid for w in workers}))
        for w in workers:
            w.kill()
        thread.join(DEADLINE)
        assert not thread.is_alive(), "the scoring hangs on a cluster without workers"
    finally:
        gate.touch()
        graph.close()
    assert isinstance(out.get("error"), NoWorkersError), out
    assert "\n" not in str(out["error"]) and address in str(out["error"])
    assert "no worker for 3 s" in str(out["error"])
