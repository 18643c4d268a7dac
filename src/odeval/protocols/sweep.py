"""The contamination sweep of Fourure et al. (2021), §3.4 and Fig. 4.

A fixed clean split: the *normal* objects are split into train and test (test share β); the model is fitted
on the normal training objects; then 1, 2, …, all anomalies are injected into the test set one after the other
(in a random order). The model and the normal test objects never change, only the test contamination does.
F1 (at the test-estimated threshold of Algorithm 2, at a constant threshold and at the optimal threshold), AVPR
and adjusted AP rise with the contamination; ROC AUC does not depend on it (§4.1, Eq. 6–8).

References
----------
Fourure, D., Javaid, M. U., Posocco, N., Tihon, S. (2021). Anomaly detection: how to artificially increase
your F1-score with a biased evaluation protocol. ECML PKDD. §3.4, Fig. 4.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from odeval.executor import open_executor, workers_renamed_from
from odeval.measures import (
    adjusted_average_precision,
    avpr,
    max_f1,
    precision_recall_f1_at_threshold,
    roc_auc,
)
from odeval.protocols.core import (
    _check_inputs,
    _instantiate,
    _run_executor,
    _scores,
    check_scorer,
    check_test_size,
    estimated_threshold,
    fit_normalizer,
    run_seeds,
)

__all__ = ["SWEEP_COLUMNS", "contamination_sweep", "sweep_counts"]

#: Columns of :func:`contamination_sweep`'s table.
SWEEP_COLUMNS = ("run", "n_anomalies", "contamination", "f1_estimated", "f1_constant", "f1_optimal", "avpr",
                 "adjusted_ap", "auc")


def sweep_counts(n_anomalies: int, points: int | None) -> np.ndarray:
    """Numbers of injected anomalies: all of 1..A, or ``points`` values spread evenly over 1..A."""
    if n_anomalies < 1:
        raise ValueError("the dataset holds no anomaly: nothing to inject")
    if points is None or points >= n_anomalies:
        return np.arange(1, n_anomalies + 1)
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise ValueError(f"points must be an integer ≥ 2 or None, got {points!r}")
    return np.unique(np.round(np.linspace(1, n_anomalies, points)).astype(np.int64))


def _sweep_run(X, y, scorer, beta, counts, run, seed, normalize, constant_contamination) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    normal = np.flatnonzero(~y)
    anomalies = rng.permutation(np.flatnonzero(y))
    perm = rng.permutation(normal)
    n_test = math.ceil(beta * normal.size)
    test, train = np.sort(perm[:n_test]), np.sort(perm[n_test:])
    if train.size < 2 or test.size < 1:
        raise ValueError(f"run {run}: test_size {beta} leaves {train.size} normal training and {test.size} normal "
                         "test objects")
    norm = fit_normalizer(X[train], normalize)
    model = _instantiate(scorer, seed)
    model.fit(norm(X[train]))
    s_all = _scores(model, norm(X), f"sweep run {run} (seed {seed})")
    t_const = estimated_threshold(s_all[train], constant_contamination)
    s_norm, s_anom = s_all[test], s_all[anomalies]
    rows = []
    for j in counts:
        yy = np.concatenate((np.zeros(test.size, bool), np.ones(int(j), bool)))
        ss = np.concatenate((s_norm, s_anom[:j]))
        a = float(yy.mean())
        rows.append({
            "run": run, "n_anomalies": int(j), "contamination": a,
            "f1_estimated": precision_recall_f1_at_threshold(yy, ss, estimated_threshold(ss, a)).f1,
            "f1_constant": precision_recall_f1_at_threshold(yy, ss, t_const).f1,
            "f1_optimal": max_f1(yy, ss), "avpr": avpr(yy, ss), "adjusted_ap": adjusted_average_precision(yy, ss),
            "auc": roc_auc(yy, ss),
        })
    return rows


@workers_renamed_from("n_jobs")
def contamination_sweep(X: Any, y: Any, scorer: Any, *, test_size: float = 0.2, points: int | None = None,
                        runs: int = 10, seed: int = 0, normalize: str | None = "minmax",
                        constant_contamination: float | None = None, workers: int = 1,
                        progress: Callable[[int], None] | None = None, executor: Any = None) -> pd.DataFrame:
    """Measures versus the number of anomalies injected into a fixed clean test set (Fig. 4).

    Parameters
    ----------
    X, y, scorer
        As for :func:`odeval.protocols.run_protocol`.
    test_size : float
        Share β of the *normal* objects in the test set (the paper: 20 %).
    points : int, optional
        Number of injection levels (default: every count 1..A).
    runs : int
        Repetitions, each with its own split, anomaly order and detector seed (from ``seed``).
    constant_contamination : float, optional
        The constant threshold ("f1_constant") is the ``1 − c`` quantile of the training scores, c this value
        (default: the dataset's contamination) — a threshold that does not look at the test set.
    workers, progress, executor
        As for :func:`odeval.protocols.protocol_table` (``workers`` was ``n_jobs``, deprecated).

    Returns
    -------
    DataFrame with the columns :data:`SWEEP_COLUMNS`, one row per (run, injection level).
    """
    X, y = _check_inputs(X, y)
    check_scorer(scorer)
    beta = check_test_size(test_size)
    counts = sweep_counts(int(y.sum()), points)
    c = float(y.mean()) if constant_contamination is None else float(constant_contamination)
    if not 0.0 <= c < 1.0:
        raise ValueError(f"constant_contamination must lie in [0, 1), got {c}")
    seeds = run_seeds(seed, runs)
    args = [(X, y, scorer, beta, counts, r, s, normalize, c) for r, s in enumerate(seeds)]
    rows: list[dict[str, Any]] = []
    with open_executor(_run_executor(executor, workers, runs), workers) as ex:
        for res in ex.imap(_sweep_task, args):  # in run order
            rows.extend(res)
            if progress is not None:
                progress(1)
    return pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))


def _sweep_task(args: tuple) -> list[dict[str, Any]]:
    return _sweep_run(*args)
