"""Figures of the protocol audit: the contamination sweep (Fig. 4) and the theory curves (Fig. 5–6).
matplotlib (extra ``odeval[plot]``) is imported lazily, with the non-interactive Agg backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["plot_sweep", "plot_theory"]

_SWEEP_LINES = (("f1_estimated", "F1, test-estimated threshold (Alg. 2)"), ("f1_constant", "F1, constant threshold"),
                ("avpr", "AVPR"), ("adjusted_ap", "adjusted AP"), ("auc", "ROC AUC"))


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is a dev dependency
        raise ImportError("figures need matplotlib: pip install 'odeval[plot]'") from exc
    return plt


def plot_sweep(sweep: pd.DataFrame, path: str | Path, *, title: str = "") -> Path:
    """Measures versus test contamination (mean over runs, band = ± one std), as Fig. 4. Returns the path."""
    plt = _pyplot()
    g = sweep.groupby("n_anomalies")
    mean, std = g.mean(numeric_only=True), g.std(ddof=1, numeric_only=True).fillna(0.0)
    x = mean["contamination"].to_numpy()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for col, label in _SWEEP_LINES:
        m, s = mean[col].to_numpy(), std[col].to_numpy()
        ax.plot(x, m, label=label)
        ax.fill_between(x, m - s, m + s, alpha=0.15)
    ax.set_xlabel("contamination of the test set")
    ax.set_ylabel("score")
    ax.set_ylim(min(0.0, float(np.nanmin(mean[[c for c, _ in _SWEEP_LINES]].to_numpy()))) - 0.02, 1.02)
    ax.set_title(title or "Measures vs injected anomalies (Fourure et al. 2021, Fig. 4)", fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_theory(path: str | Path, *, rates: Any = ((0.9, 0.9), (0.8, 0.8), (0.6, 0.9), (0.9, 0.6)),
                contaminations: Any = (0.05, 0.1, 0.2, 0.4)) -> Path:
    """Fig. 5 (F1 vs contamination at a constant threshold for several (TPR, TNR)) and Fig. 6 (the triangular
    toy model: F1 vs threshold per contamination, dots = fp = fn threshold, crosses = optimum) side by side."""
    from odeval.protocols.theory import f1_from_rates, triangular_f1, triangular_thresholds

    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    alpha = np.linspace(0.005, 0.995, 400)
    for tpr, tnr in rates:
        a1.plot(alpha, f1_from_rates(tpr, tnr, alpha), label=f"TPR={tpr}, TNR={tnr}")
    a1.set_xlabel("contamination of the test set")
    a1.set_ylabel("F1")
    a1.set_title("F1 at a constant threshold (Fig. 5)", fontsize=10)
    a1.legend(fontsize=8)
    t = np.linspace(0, 1, 400)
    for c in contaminations:
        (line,) = a2.plot(t, triangular_f1(t, c), label=f"α={c}")
        t_eq, t_opt = triangular_thresholds(c)
        a2.plot([t_eq], triangular_f1(t_eq, c), "o", color=line.get_color())
        a2.plot([t_opt], triangular_f1(t_opt, c), "x", color=line.get_color())
    a2.set_xlabel("threshold")
    a2.set_title("Toy model P⁺=2s, P⁻=2(1−s) (Fig. 6): ● fp=fn, × optimum", fontsize=10)
    a2.legend(fontsize=8)
    for ax in (a1, a2):
        ax.grid(alpha=0.3)
        ax.set_ylim(0, 1.02)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
