"""Shared input validation: every public function checks its inputs through these helpers, so that
bad input fails with one clear message that names the problem and where it is."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["check_data_matrix", "check_k", "check_labels", "check_labels_scores", "check_numeric_matrix",
           "check_scores"]


def _describe_bad_positions(mask: np.ndarray, limit: int = 5) -> str:
    pos = np.flatnonzero(mask)
    shown = ", ".join(str(int(i)) for i in pos[:limit])
    more = f" and {pos.size - limit} more" if pos.size > limit else ""
    return f"at position(s) {shown}{more}"


def check_labels(labels: Any, *, name: str = "labels", require_both: bool = True) -> np.ndarray:
    """Return ``labels`` as a 1-d bool array (True = outlier).

    Accepts bool, or numeric values that are all 0/1. Anything else (other values, NaN, 2-d input) raises
    ``ValueError``. With ``require_both`` (the default) at least one outlier and one inlier must be present,
    since no external measure is defined otherwise.
    """
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if arr.dtype == bool:
        out = arr
    elif np.issubdtype(arr.dtype, np.number):
        bad = ~np.isin(arr, (0, 1))
        if bad.any():
            vals = np.unique(arr[bad])[:5]
            raise ValueError(
                f"{name} must be binary (bool or 0/1); found value(s) {vals.tolist()} "
                f"{_describe_bad_positions(bad)}"
            )
        out = arr.astype(bool)
    else:
        raise ValueError(f"{name} must be bool or 0/1 numbers, got dtype {arr.dtype}")
    if require_both:
        n_out = int(out.sum())
        if n_out == 0:
            raise ValueError(f"{name} contain no outlier (no True / 1): the measure is undefined")
        if n_out == out.size:
            raise ValueError(f"{name} contain no inlier (all True / 1): the measure is undefined")
    return out


def check_scores(scores: Any, *, name: str = "scores") -> np.ndarray:
    """Return ``scores`` as a 1-d float64 array; NaN or ±inf raise ``ValueError`` naming the positions."""
    arr = np.asarray(scores)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(arr)
    if bad.any():
        hint = ("; for ±inf from LOF-like methods (duplicates), odeval.measures.finite_for_ranking keeps the "
                "ranking and every tie") if not np.isnan(arr).any() else ""
        raise ValueError(f"{name} contain NaN or infinite values {_describe_bad_positions(bad)}{hint}")
    return arr


def check_returned_scores(scores: Any, n_objects: int, *, where: str) -> np.ndarray:
    """Scores an external detector returned for ``n_objects`` objects, flattened to float64: one per object and
    all finite, else a one-line ``ValueError`` starting with ``where`` (the detector and its method)."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if s.shape[0] != n_objects:
        raise ValueError(f"{where} returned {s.shape[0]} scores for {n_objects} objects")
    bad = ~np.isfinite(s)
    if bad.any():
        raise ValueError(f"{where} returned NaN/inf scores {_describe_bad_positions(bad)}")
    return s


def check_labels_scores(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate a (labels, scores) pair of equal length; see :func:`check_labels`, :func:`check_scores`."""
    y = check_labels(labels)
    s = check_scores(scores)
    if y.shape[0] != s.shape[0]:
        raise ValueError(f"labels and scores differ in length: {y.shape[0]} labels, {s.shape[0]} scores")
    return y, s


def check_numeric_matrix(X: Any, *, name: str, rows: str = "row", columns: str = "column",
                         shape_hint: str = "(n_objects, n_attributes)", hint: str = "") -> np.ndarray:
    """Return ``X`` as a C-contiguous 2-d float64 array of finite numbers; the error names up to five
    offending positions as ``(rows r, columns c)`` (e.g. ``(scoring 0, object 3)``), followed by ``hint``."""
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array {shape_hint}, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        r, c = np.nonzero(bad)
        where = ", ".join(f"({rows} {i}, {columns} {j})" for i, j in zip(r[:5], c[:5], strict=True))
        more = f" and {r.size - 5} more" if r.size > 5 else ""
        raise ValueError(f"{name}: NaN or infinite values at {where}{more}{hint}")
    return arr


def check_data_matrix(X: Any, *, name: str = "X", min_rows: int = 2) -> np.ndarray:
    """Return ``X`` as a C-contiguous 2-d float64 array; NaN/inf, wrong shape or too few rows raise."""
    arr = np.asarray(X)
    if arr.ndim == 2 and arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} objects, got {arr.shape[0]}")
    if arr.ndim == 2 and arr.shape[1] < 1:
        raise ValueError(f"{name} has no attributes (shape {arr.shape})")
    return check_numeric_matrix(arr, name=name)


def check_k(k: int, n_objects: int, *, name: str = "k", min_k: int = 1) -> int:
    """Check ``min_k <= k < n_objects`` (k counts neighbours other than the query point)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {k!r}")
    k = int(k)
    if k < min_k:
        raise ValueError(f"{name}={k} is below the minimum {min_k}")
    if k >= n_objects:
        raise ValueError(
            f"{name}={k} needs at least {k + 1} objects (k counts neighbours other than the query point), "
            f"but there are only {n_objects}"
        )
    return k
