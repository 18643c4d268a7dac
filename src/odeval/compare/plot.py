"""Heat map of a similarity matrix (Schubert et al. 2012, Figs. 3–5 style). matplotlib is imported lazily
(extra ``odeval[plot]``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["plot_similarity_matrix"]


def plot_similarity_matrix(
    matrix: Any,
    names: Sequence[str] | None = None,
    *,
    ax: Any = None,
    truth_name: str = "truth",
    measure: str = "pearson",
    cmap: str | None = None,
    vmin: float | None = None,
    vmax: float | None = None,
    title: str | None = None,
    annotate: bool | None = None,
) -> Any:
    """Draw the (R + 1, R + 1) matrix of :func:`odeval.compare.similarity_matrix` as a heat map.

    Parameters
    ----------
    matrix : array-like of shape (R + 1, R + 1)
        Row/column 0 is the ground truth.
    names : sequence of str, optional
        The R scoring names (``truth_name`` is prepended); default ``1..R``.
    ax : matplotlib Axes, optional
        Axes to draw into; a new figure is created otherwise.
    measure : str
        Only used for the defaults: correlations use a diverging map on [−1, 1], distances a sequential one
        from 0.
    annotate : bool, optional
        Write the values into the cells (default: only for at most 20 rows).

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    M = np.asarray(matrix, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"matrix must be square, got shape {M.shape}")
    R = M.shape[0] - 1
    labels = [truth_name, *(list(names) if names is not None else [str(i) for i in range(1, R + 1)])]
    if len(labels) != M.shape[0]:
        raise ValueError(f"names has {len(labels) - 1} entries for a matrix of {R} scorings (+ truth)")
    correlation = measure in ("pearson", "spearman", "kendall")
    if cmap is None:
        cmap = "RdBu_r" if correlation else "viridis_r"
    if vmin is None:
        vmin = -1.0 if correlation else 0.0
    if vmax is None:
        vmax = 1.0 if correlation else float(np.nanmax(M)) if np.isfinite(M).any() else 1.0
    if ax is None:
        size = max(4.0, min(16.0, 0.35 * (R + 1) + 2.0))
        _, ax = plt.subplots(figsize=(size + 1.0, size))
    im = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest")
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label=measure)
    ticks = np.arange(M.shape[0])
    if M.shape[0] <= 60:
        ax.set_xticks(ticks, labels, rotation=90, fontsize="small")
        ax.set_yticks(ticks, labels, fontsize="small")
    if annotate if annotate is not None else M.shape[0] <= 20:
        for i in range(M.shape[0]):
            for j in range(M.shape[1]):
                ax.text(j, i, f"{M[i, j]:.2f}", ha="center", va="center", fontsize="x-small")
    if title:
        ax.set_title(title)
    return ax
