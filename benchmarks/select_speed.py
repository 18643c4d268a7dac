"""Wall time of ``odeval select`` (issue 24 targets: Annthyroid-size data, 7,200 × 6, under 60 s; a synthetic
100,000 × 20 table under 10 minutes, on the project's 2-core machine).

Each case runs the command line as a user would (a subprocess: loading, preparation, the pool of the twelve
methods × k, the selectors, IREOS on the pruned set, 5 resamples, the threshold, the JSON output), after one warm-up
run of a tiny table so that numba's compilation (cached on disk, docs/scaling.md "First run") is not timed.

    python benchmarks/select_speed.py                 # both cases
    python benchmarks/select_speed.py --small-only    # Annthyroid (ADBench 2_annthyroid.npz, 7,200 × 6) only

The Annthyroid case reads ``../shared/datasets/adbench/2_annthyroid.npz`` (labels held back: ``--check-labels`` is
given a label file, so the ROC AUC of the recommendation is printed too); the synthetic case writes a seeded
100,000 × 20 Gaussian table with 1 % shifted outliers to a temporary ``.npz``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ODEVAL_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
ANNTHYROID = SHARED / "adbench" / "2_annthyroid.npz"


def run(data: Path, *extra: str) -> tuple[float, float, dict]:
    """Wall seconds, CPU seconds (user + sys of the child: the number to read on a shared, loaded machine) and
    the JSON output of one ``odeval select`` process."""
    import resource

    cmd = [sys.executable, "-m", "odeval.cli", "select", str(data), "--json", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr or out.stdout}")
    return wall, cpu, json.loads(out.stdout)


def report(label: str, wall: float, cpu: float, doc: dict, target: float) -> None:
    chk = doc.get("check") or {}
    rec = chk.get("recommended", {})
    load = os.getloadavg()[0]
    print(f"{label}: {wall:.1f} s wall, {cpu:.1f} CPU s, load {load:.1f} (target < {target:.0f} s wall: "
          f"{'met' if wall < target else 'MISSED'}); "
          f"{doc['preparation']['n_objects']} × {doc['preparation']['n_attributes']}, "
          f"{doc['pool']['n_candidates']} candidates, k grid of {len(doc['pool']['ks'])}; "
          f"recommended {doc['recommendation']['candidate']}; IREOS γ_max {doc['ireos'].get('gamma_max')}"
          + (f"; check: ROC AUC {rec['roc_auc']:.3f}, percentile {rec['percentile']:.0f}" if rec else ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small-only", action="store_true", help="time only the Annthyroid case")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny.npz"
        np.savez(tiny, X=np.random.default_rng(0).normal(size=(60, 3)))
        run(tiny, "--resamples", "1")  # warm-up: numba kernels compiled and cached before timing
        if ANNTHYROID.is_file():
            with np.load(ANNTHYROID) as z:
                labels = Path(tmp) / "annthyroid_labels.txt"
                labels.write_text("\n".join(str(int(v)) for v in z["y"]) + "\n")
            wall, cpu, doc = run(ANNTHYROID, "--check-labels", str(labels))
            report("Annthyroid (ADBench 2_annthyroid.npz)", wall, cpu, doc, 60)
        else:
            print(f"Annthyroid case skipped: {ANNTHYROID} not found")
        if not args.small_only:
            rng = np.random.default_rng(0)
            X = rng.normal(size=(100_000, 20))
            X[:1000] += rng.normal(size=(1000, 20)) * 0.5 + 4.0
            big = Path(tmp) / "synthetic_100k_20.npz"
            np.savez(big, X=X)
            wall, cpu, doc = run(big)
            report("synthetic 100,000 × 20", wall, cpu, doc, 600)
    return 0


if __name__ == "__main__":
    sys.exit(main())
