"""Theory curves of Fourure et al. (2021): how F1 depends on the test contamination (§3.4, Fig. 5–7).

* :func:`f1_from_rates` — F1 at a *constant* threshold from the model's true positive rate p⁺ and true negative
  rate p⁻ and the test contamination α (§3.4): precision = α p⁺ / (α p⁺ + (1 − α)(1 − p⁻)), recall = p⁺.
* :func:`triangular_f1` — the toy model of Fig. 6, P⁺(s) = 2s and P⁻(s) = 2(1 − s) on [0, 1]: TPR(t) = 1 − t²,
  TNR(t) = 1 − (1 − t)²; :func:`triangular_thresholds` gives its fp = fn threshold (what a test-estimated
  contamination yields) and its F1-optimal threshold.
* :func:`ring_toy_data` and :func:`ring_toy_curve` — the toy data of Fig. 7: normal objects from N(0, I₂),
  anomalies on a noisy ring of radius r; a Gaussian fitted on the clean training objects scores them. F1 at a
  constant threshold (fixed on the training data) and at the test-estimated threshold, and ROC AUC, versus the
  contamination of the test set.

References
----------
Fourure, D., Javaid, M. U., Posocco, N., Tihon, S. (2021). Anomaly detection: how to artificially increase
your F1-score with a biased evaluation protocol. ECML PKDD. §3.4 (Fig. 5, 6), §3.6 (Fig. 7).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from odeval.measures import precision_recall_f1_at_threshold, roc_auc
from odeval.protocols.core import estimated_threshold, run_seeds

__all__ = ["f1_from_rates", "triangular_f1", "triangular_rates", "triangular_thresholds", "ring_toy_data",
           "ring_toy_curve"]


def _contamination(alpha: Any) -> np.ndarray:
    a = np.asarray(alpha, dtype=np.float64)
    if np.any(~((a > 0) & (a < 1))):
        raise ValueError("contamination α must lie in (0, 1)")
    return a


def f1_from_rates(tpr: Any, tnr: Any, contamination: Any) -> np.ndarray:
    """F1 at a constant threshold from (TPR, TNR) and the test contamination α (broadcast).

    F1 = 2 α p⁺ / (α p⁺ + (1 − α)(1 − p⁻) + α) — precision rises with α, recall p⁺ does not depend on it,
    so F1 rises with α whenever p⁻ < 1 (Fourure et al. 2021, §3.4, Fig. 5).
    """
    p = np.asarray(tpr, dtype=np.float64)
    n = np.asarray(tnr, dtype=np.float64)
    if np.any((p < 0) | (p > 1)) or np.any((n < 0) | (n > 1)):
        raise ValueError("tpr and tnr must lie in [0, 1]")
    a = _contamination(contamination)
    tp = a * p
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = 2.0 * tp / (tp + (1.0 - a) * (1.0 - n) + a)
    return np.where(tp > 0, f1, 0.0)


def triangular_rates(threshold: Any) -> tuple[np.ndarray, np.ndarray]:
    """(TPR, TNR) of the Fig. 6 toy model at threshold t ∈ [0, 1]: 1 − t² and 1 − (1 − t)²."""
    t = np.asarray(threshold, dtype=np.float64)
    if np.any((t < 0) | (t > 1)):
        raise ValueError("threshold must lie in [0, 1] for the toy model")
    return 1.0 - t * t, 1.0 - (1.0 - t) ** 2


def triangular_f1(threshold: Any, contamination: Any) -> np.ndarray:
    """F1 of the Fig. 6 toy model (P⁺(s) = 2s, P⁻(s) = 2(1 − s)) at threshold t and contamination α."""
    tpr, tnr = triangular_rates(threshold)
    return f1_from_rates(tpr, tnr, contamination)


def triangular_thresholds(contamination: float) -> tuple[float, float]:
    """The toy model's fp = fn threshold and its F1-optimal threshold at contamination α.

    fp = fn ⇔ α t² = (1 − α)(1 − t)² ⇔ t = √(1 − α) / (√α + √(1 − α)) (the threshold a perfectly estimated
    contamination gives, "dots" of Fig. 6); the optimum ("crosses") by a fine grid search refined by bisection
    of the derivative's sign.
    """
    a = float(_contamination(contamination))
    t_eq = np.sqrt(1.0 - a) / (np.sqrt(a) + np.sqrt(1.0 - a))
    grid = np.linspace(0.0, 1.0, 100_001)
    f = triangular_f1(grid, a)
    return float(t_eq), float(grid[int(np.argmax(f))])


def ring_toy_data(n_normal: int, n_anomalies: int, radius: float, *, noise: float = 0.4,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Normal objects from N(0, I₂) and anomalies at angle U(0, 2π) on a ring of radius ``radius`` plus
    N(0, noise²) noise per coordinate (Fig. 7; the authors use noise 0.4, radius 2.5 "easy", 2.1 "hard").
    Returns X (normal objects first) and boolean labels."""
    if n_normal < 0 or n_anomalies < 0:
        raise ValueError("n_normal and n_anomalies must be non-negative")
    if not radius > 0 or not noise >= 0:
        raise ValueError("radius must be > 0 and noise ≥ 0")
    rng = np.random.default_rng(seed)
    normal = rng.standard_normal((n_normal, 2))
    angle = rng.uniform(0.0, 2.0 * np.pi, n_anomalies)
    ring = radius * np.column_stack((np.cos(angle), np.sin(angle))) + rng.normal(0.0, noise, (n_anomalies, 2))
    X = np.vstack((normal, ring))
    y = np.concatenate((np.zeros(n_normal, bool), np.ones(n_anomalies, bool)))
    return X, y


def _gaussian_scores(train: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Squared Mahalanobis distance under the Gaussian fitted on ``train`` (monotone in −log-likelihood)."""
    mu = train.mean(axis=0)
    cov = np.cov(train, rowvar=False)
    diff = X - mu
    return np.einsum("ij,ij->i", diff @ np.linalg.inv(cov), diff)


def ring_toy_curve(contaminations: Any, *, radius: float = 2.5, noise: float = 0.4, n_train: int = 500,
                   n_test_normal: int = 1000, constant_quantile: float = 0.95, runs: int = 20,
                   seed: int = 0) -> pd.DataFrame:
    """F1 (constant vs test-estimated threshold) and ROC AUC of the Fig. 7 toy model versus contamination.

    Per run and contamination α: ``n_train`` clean training objects fit the Gaussian; the test set holds
    ``n_test_normal`` normal objects and ``int(n_test_normal · α / (1 − α))`` ring anomalies (the authors'
    rule). The constant threshold is the ``constant_quantile`` quantile of the training scores (independent of
    the test set, as in Algorithm 1); the estimated one is the test-contamination quantile of the test scores
    (Algorithm 2).

    Returns
    -------
    DataFrame
        One row per (run, contamination): ``run``, ``contamination`` (realised), ``f1_constant``,
        ``f1_estimated``, ``auc``.
    """
    alphas = np.atleast_1d(_contamination(contaminations))
    if not 0.0 < constant_quantile < 1.0:
        raise ValueError("constant_quantile must lie in (0, 1)")
    rows = []
    for r, s in enumerate(run_seeds(seed, runs)):
        rng_seeds = np.random.SeedSequence(s).spawn(alphas.size + 1)
        train, _ = ring_toy_data(n_train, 0, radius, noise=noise, seed=int(rng_seeds[0].generate_state(1)[0]))
        t_const = float(np.quantile(_gaussian_scores(train, train), constant_quantile))
        for a, ss in zip(alphas, rng_seeds[1:], strict=True):
            n_anom = int(n_test_normal * (a / (1.0 - a)))
            if n_anom < 1:
                raise ValueError(f"contamination {a} gives no anomaly with {n_test_normal} normal test objects")
            X, y = ring_toy_data(n_test_normal, n_anom, radius, noise=noise, seed=int(ss.generate_state(1)[0]))
            sc = _gaussian_scores(train, X)
            t_est = estimated_threshold(sc, float(y.mean()))
            rows.append({"run": r, "contamination": float(y.mean()),
                         "f1_constant": precision_recall_f1_at_threshold(y, sc, t_const).f1,
                         "f1_estimated": precision_recall_f1_at_threshold(y, sc, t_est).f1,
                         "auc": roc_auc(y, sc)})
    return pd.DataFrame(rows)
