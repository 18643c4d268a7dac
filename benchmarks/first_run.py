"""The first run of a fresh install: numba compilation cold vs the on-disk cache warm (issue 17).

Each step is a separate ``odeval`` process with ``NUMBA_CACHE_DIR`` pointing at a fresh temporary folder, so
"cold" is exactly a fresh install's first call. Prints CPU time (user+sys of the child, the honest number on a
loaded machine) and wall time, side by side:

1. ``odeval score DATASET -m LOF -m kNN --k 1:100`` with an empty cache (cold),
2. the same again (warm: kernels loaded from the cache),
3. in a second empty cache: ``odeval warmup -m LOF -m kNN`` (what ``make install`` runs, for all methods), then
4. ``odeval score`` — the first run a user meets after ``make install``.

Usage: python benchmarks/first_run.py [DATASET]   (default: the vendored Glass dataset, 214 × 7)

``python benchmarks/first_run.py --installed [DATASET]`` times one ``odeval score`` with the environment's own
numba cache (the one ``make install`` filled with ``odeval warmup``): what a new user's first command costs.
``make demo`` runs it first. Both modes end with the target line of issue 17 (first score under 10 s wall).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "src" / "odeval" / "data" / "vendored" / "dami" / "Glass" / "Glass_withoutdupl_norm.arff"
TARGET_S = 10.0


def target_line(what: str, cpu: float, wall: float) -> str:
    return (f"TARGET first odeval score ({what}): {wall:.2f} s wall, {cpu:.2f} s CPU, load "
            f"{os.getloadavg()[0]:.1f} — target {TARGET_S:g} s: {'MET' if wall <= TARGET_S else 'NOT MET'}")


def run(args: list[str], cache: str | None) -> tuple[float, float]:
    """(CPU s, wall s) of one ``python -m odeval.cli ARGS`` process with NUMBA_CACHE_DIR=cache (None: the
    environment's own cache)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "odeval.cli", *args], env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def score_args(dataset: Path, tmp: str) -> list[str]:
    return ["score", str(dataset), "-m", "LOF", "-m", "kNN", "--k", "1:100", "-o", str(Path(tmp) / "s.npz")]


def main() -> None:
    args = sys.argv[1:]
    installed = "--installed" in args
    args = [a for a in args if a != "--installed"]
    dataset = Path(args[0]) if args else DEFAULT
    if installed:
        with tempfile.TemporaryDirectory() as tmp:
            cpu, wall = run(score_args(dataset, tmp), None)
        print(target_line(f"{dataset.name}, -m LOF -m kNN --k 1:100, this install's cache", cpu, wall))
        return
    with tempfile.TemporaryDirectory() as tmp:
        score = score_args(dataset, tmp)
        cold_cache, warm_cache = str(Path(tmp) / "c1"), str(Path(tmp) / "c2")
        rows = [("score, empty cache (cold)", run(score, cold_cache)),
                ("score again (warm cache)", run(score, cold_cache)),
                ("warmup -m LOF -m kNN, empty cache", run(["warmup", "-m", "LOF", "-m", "kNN"], warm_cache)),
                ("score after warmup", run(score, warm_cache))]
    print(f"dataset {dataset.name}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'step':38s} {'CPU s':>8s} {'wall s':>8s}")
    for name, (cpu, wall) in rows:
        print(f"{name:38s} {cpu:8.2f} {wall:8.2f}")
    print(f"cold / warm CPU ratio: {rows[0][1][0] / rows[1][1][0]:.1f}")
    print(target_line(f"{dataset.name}, after warmup in a fresh cache", *rows[3][1]))


if __name__ == "__main__":
    main()
