"""Real `odeval study run` processes: kill -9 at real points, workers dying with their parent, two processes on
one store, Ctrl-C. Nothing in odeval is switched on for these tests; they act on the process from outside."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import odeval.bench.ensembles  # imported now: the lock checks below must be quick
import odeval.report.from_store  # noqa: F401
from odeval.bench import ResultStore, load_study, run_study
from odeval.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]
SRC = Path(__file__).resolve().parents[2] / "src"


def _start(study: Path, store: Path, workers: int, path: tuple[Path, ...] = ()) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, (SRC, *path))))
    # SIGINT's default action in the child: a pytest-xdist worker ignores SIGINT, and a child would inherit that
    return subprocess.Popen([sys.executable, "-m", "odeval.cli", "study", "run", str(study), "--store", str(store),
                             "--workers", str(workers), "--quiet"], env=env, stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_units(proc: subprocess.Popen, n: int, timeout: float = 300) -> list[str]:
    """Read the per-unit log lines (written after each unit's commit) until ``n`` units are in the store."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    for line in proc.stderr:
        if line.startswith("["):
            seen.append(line)
        if len(seen) >= n:
            return seen
        assert time.monotonic() < deadline, "the study did not write its units in time"
    raise AssertionError(f"the study ended after {len(seen)} units (rc={proc.wait()})")


def _stat(pid: int) -> tuple[str, int] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])  # state, ppid


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (st := _stat(int(d.name))) is not None:
            children.setdefault(st[1], []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _comparable(store: Path) -> tuple[pd.DataFrame, ...]:
    with ResultStore(store, read_only=True) as rs:
        return (rs.runs().drop(columns=["runtime_s"]).reset_index(drop=True),
                rs.outlier_ranks().reset_index(drop=True),
                rs.labels_table().reset_index(drop=True),
                rs.units().drop(columns=["runtime_s", "finished"]).reset_index(drop=True))


def _assert_consistent(store: Path, n_k: int | set[int]) -> int:
    """Only whole units: every unit has all its runs, ranks and labels; returns the number of units."""
    with ResultStore(store, read_only=True) as rs:
        units, runs, ranks, labels = rs.units(), rs.runs(), rs.outlier_ranks(), rs.labels_table()
    assert set(runs.unit_id) == set(units.unit_id)
    n_k = {n_k} if isinstance(n_k, int) else n_k  # runs per unit: len(ks), or 1 for a unit without k
    assert runs.groupby("unit_id").size().isin(n_k).all()
    assert ranks.groupby("unit_id")["k"].nunique(dropna=False).isin(n_k).all()  # k is null for a unit without k
    assert set(ranks.unit_id) == set(units.unit_id)
    assert set(units.dataset) <= set(labels.dataset)
    return len(units)


@pytest.fixture
def crash_study(tmp_path, npz_dataset, study_file) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for i in range(6):
        npz_dataset(data / f"v{i}.npz", 300, 10, 3, seed=10 + i)
    return study_file(tmp_path / "s.toml", '[study]\nk = "1..10"\n[[datasets]]\nglob = "data/*.npz"\n'
                                           '[[methods]]\nname = "kNN"\n[[methods]]\nname = "LOF"\n'
                                           '[[methods]]\nname = "kNNW"\n')


def test_kill_9_with_two_workers_leaves_whole_units_and_no_process(crash_study, tmp_path, capsys):
    store = tmp_path / "r.duckdb"
    proc = _start(crash_study, store, workers=2)
    _wait_for_units(proc, 3)
    tree = _descendants(proc.pid)
    assert sum("spawn_main" in _cmdline(p) for p in tree) == 2, [_cmdline(p) for p in tree]
    assert any("resource_tracker" in _cmdline(p) for p in tree)
    proc.kill()  # SIGKILL: no handler runs in the parent
    proc.wait()
    deadline = time.monotonic() + 30
    while any(_alive(p) for p in tree) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [f"{p}: {_cmdline(p)}" for p in tree if _alive(p)]
    assert not left, f"processes outlived their killed parent: {left}"

    done = _assert_consistent(store, n_k=10)
    assert 3 <= done < 18
    summary = run_study(load_study(crash_study), store, workers=1, progress="log")
    assert summary.already_done == done and summary.ok == 18 - done and not summary.failed
    assert f"resuming: {done} of 18 units are already in the store and are skipped" in capsys.readouterr().err
    run_study(load_study(crash_study), tmp_path / "clean.duckdb", workers=1, progress="none")
    for a, b in zip(_comparable(store), _comparable(tmp_path / "clean.duckdb"), strict=True):
        pd.testing.assert_frame_equal(a, b)


WAITING = '''
import time


class Waiting:
    """Distance to the mean; on the last dataset (215 objects) its fit never ends by itself, so the study cannot
    finish before the test interrupts it."""

    def fit(self, X):
        while len(X) >= 210:
            time.sleep(0.02)
        self.mean_ = X.mean(axis=0)
        return self

    def decision_function(self, X):
        return -((X - self.mean_) ** 2).sum(axis=1)
'''


@pytest.fixture
def long_study(tmp_path, npz_dataset, study_file, monkeypatch) -> tuple[Path, Path]:
    """(study, plugin folder): 3 datasets × (kNN, an estimator that waits for ever on the last one). Units run
    dataset by dataset, so d00's and d01's units are stored while d02's waiting unit holds the run until a
    signal — however fast the machine (a study of real detectors once finished before the Ctrl-C arrived)."""
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "waiting_est.py").write_text(WAITING)
    monkeypatch.delitem(sys.modules, "waiting_est", raising=False)
    monkeypatch.syspath_prepend(str(plugin))  # the in-process commands below load the study too
    data = tmp_path / "data"
    data.mkdir()
    for i in range(3):
        npz_dataset(data / f"d{i:02d}.npz", 210 if i == 2 else 200, 5, 5, seed=i)
    study = study_file(tmp_path / "long.toml", '[study]\nk = "1..40"\n[[datasets]]\nglob = "data/*.npz"\n'
                                               '[[methods]]\nname = "kNN"\n'
                                               '[[methods]]\nestimator = "waiting_est:Waiting"\n')
    return study, plugin


def test_a_store_in_use_and_ctrl_c(long_study, tmp_path):
    """While one study runs, every other command on its store says which PID holds it; Ctrl-C then says what
    is saved and how to resume."""
    long_study, plugin = long_study
    store = tmp_path / "r.duckdb"
    proc = _start(long_study, store, workers=1, path=(plugin,))
    try:
        _wait_for_units(proc, 1)
        runner = CliRunner()
        results = {
            "study run": runner.invoke(main, ["study", "run", str(long_study), "--store", str(store), "-q"]),
            "report": runner.invoke(main, ["report", str(store), "-o", str(tmp_path / "rep")]),
            "ensemble": runner.invoke(main, ["ensemble", str(store), "--dataset", "d00"]),
            "export": runner.invoke(main, ["results", "export", str(store), "-o", str(tmp_path / "runs.csv")]),
        }
        assert proc.poll() is None, "the study cannot end by itself"
        for name, res in results.items():
            assert res.exit_code == 1, (name, res.output)
            text = res.output.strip()
            assert len(text.splitlines()) == 1 and "Traceback" not in text, (name, text)
            assert f"is in use by PID {proc.pid}" in text and str(store) in text, (name, text)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # Ctrl-C on a run of its own, right after its first unit: the checks above can outlast the whole study
    store = tmp_path / "interrupted.duckdb"
    proc = _start(long_study, store, workers=1, path=(plugin,))
    try:
        _wait_for_units(proc, 1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "interrupted:" in err and f"saved in {store}" in err
    resume = next(ln for ln in err.splitlines() if ln.startswith("resume with: "))
    assert resume == f"resume with: odeval study run {long_study} --store {store} --workers 1"
    assert "Traceback" not in err
    assert 1 <= _assert_consistent(store, n_k={40, 1}) < 6  # the waiting unit is never stored


def _hold_store(store: Path, seconds: float) -> subprocess.Popen:
    """Another process holding the store's lock for ``seconds`` (prints "ready" once it holds it)."""
    env = dict(os.environ, PYTHONPATH=str(SRC))
    code = ("import sys, time; from odeval.bench.store import ResultStore; s = ResultStore(sys.argv[1]); "
            "print('ready', flush=True); time.sleep(float(sys.argv[2])); s.close()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(store), str(seconds)], env=env, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_study_run_wait_waits_for_the_store_or_fails_naming_the_lock(toy_study, tmp_path):
    store = tmp_path / "r.duckdb"
    runner = CliRunner()
    holder = _hold_store(store, 4)
    try:
        t0 = time.monotonic()
        res = runner.invoke(main, ["study", "run", str(toy_study), "--store", str(store), "-q", "--workers", "1",
                                   "--wait", "120"])
        waited = time.monotonic() - t0
    finally:
        holder.kill()
        holder.wait()
    assert res.exit_code == 0, res.output
    assert f"results store {store} is in use by PID {holder.pid}; waiting up to 120 s for it" in res.output
    assert "6 computed" in res.output and waited > 1

    holder = _hold_store(store, 60)
    try:
        res = runner.invoke(main, ["study", "run", str(toy_study), "--store", str(store), "-q", "--wait", "1"])
    finally:
        holder.kill()
        holder.wait()
    assert res.exit_code == 1
    last = res.output.strip().splitlines()[-1]
    assert f"is in use by PID {holder.pid}" in last and last.endswith("(waited 1 s)") and "Traceback" not in res.output
