"""Speed of Table 1 of Fourure et al. (2021) (4 settings × 100 runs) on arrhythmia with OneClassSVM.

Side by side in one process run: odeval's ``protocol_table`` serial and on all local cores (results must be
identical), and a plain scikit-learn loop doing the same steps per setting (train_test_split, MinMaxScaler on
the clean training objects, OneClassSVM(gamma="auto", nu=0.9), percentile threshold, sklearn metrics), which
fits once per *setting* and run as a straightforward script does (odeval fits once per test share and run).

    .venv/bin/python benchmarks/protocols.py [--runs 100] [--dataset ../shared/datasets/odds/arrhythmia.mat]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import average_precision_score, f1_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import OneClassSVM

from odeval.data import load_dataset
from odeval.detectors import wrap_estimator
from odeval.protocols import protocol_table, summarize

SHARED = Path(os.environ.get("ODEVAL_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def sklearn_loop(X, y, runs, seed):
    rng = np.random.RandomState(seed)
    out = []
    for algo, beta in ((1, 0.2), (2, 0.2), (2, 0.05), (2, 0.05)):
        for _ in range(runs):
            xtr, xte, ytr, yte = train_test_split(X, y, test_size=beta, random_state=rng)
            clean = xtr[ytr == 0]
            if algo == 2:
                xte, yte = np.vstack((xte, xtr[ytr == 1])), np.r_[yte, ytr[ytr == 1]]
            sc = MinMaxScaler().fit(clean)
            m = OneClassSVM(gamma="auto", nu=0.9).fit(sc.transform(clean))
            ste = -m.score_samples(sc.transform(xte))
            ref, c = (-m.score_samples(sc.transform(xtr)), ytr.mean()) if algo == 1 else (ste, yte.mean())
            t = np.percentile(ref, (1 - c) * 100)
            out.append((f1_score(yte, ste >= t), average_precision_score(yte, ste), roc_auc_score(yte, ste)))
    return out


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    res = fn()
    return res, time.perf_counter() - w, time.process_time() - c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dataset", default=str(SHARED / "odds" / "arrhythmia.mat"))
    a = ap.parse_args()
    ds = load_dataset(a.dataset)
    X, y = ds.numeric_matrix(), ds.y
    det = wrap_estimator(OneClassSVM(gamma="auto", nu=0.9))
    cores = len(os.sched_getaffinity(0))
    print(f"{Path(a.dataset).name}: N={X.shape[0]}, d={X.shape[1]}, anomalies={int(y.sum())}; runs={a.runs}; "
          f"cores={cores}; load average {os.getloadavg()[0]:.1f}")
    serial, ws, cs = timed(lambda: protocol_table(X, y, det, runs=a.runs, seed=a.seed, workers=1))
    par, wp, cp = timed(lambda: protocol_table(X, y, det, runs=a.runs, seed=a.seed, workers=cores))
    _, wr, cr = timed(lambda: sklearn_loop(X, y.astype(int), a.runs, a.seed))
    print(f"{'':34}{'wall s':>9}{'CPU s (this process)':>22}")
    print(f"{'odeval protocol_table, 1 job':34}{ws:9.1f}{cs:22.1f}")
    print(f"{f'odeval protocol_table, {cores} jobs':34}{wp:9.1f}{cp:22.1f}   (workers' CPU not counted)")
    print(f"{'scikit-learn loop (fit per setting)':34}{wr:9.1f}{cr:22.1f}")
    print(f"ratios: serial/parallel wall {ws / wp:.2f}; sklearn loop/odeval serial CPU {cr / cs:.2f}")
    print("parallel results identical to serial:", serial == par)
    for r in summarize(serial):
        print(f"  {r['setting']:<20}{r['metric']:<6}{r['mean']:.3f} ± {r['std']:.3f}")


if __name__ == "__main__":
    main()
