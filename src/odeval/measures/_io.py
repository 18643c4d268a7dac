"""Reading score and label vectors, and ``odeval score`` tables, from files for ``odeval evaluate``."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["ScoreTable", "is_score_table", "read_score_table", "read_vector"]

_TRUE = frozenset({"1", "1.0", "true", "yes"})
_FALSE = frozenset({"0", "0.0", "false", "no"})


def _is_number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return True


def read_vector(path: str | os.PathLike[str], *, what: str = "scores", column: str | None = None) -> np.ndarray:
    """Read one vector (scores or labels) from ``path``.

    * ``.npy``: a 1-d array, or 2-d with one column (or ``column`` as a 0-based index).
    * any other file: text with one value per line, or a CSV table (comma, semicolon or tab separated) with an
      optional header line; a table with several columns needs ``column`` (a header name or a 0-based index).
      Blank lines and lines starting with ``#`` are skipped.

    For ``what="labels"`` the values must be 0/1 (or true/false, yes/no); the result is bool.
    For scores, the result is float64; NaN raises, naming the line; ±inf is kept (``odeval evaluate`` ranks it
    through :func:`odeval.measures.finite_for_ranking`, like the study runner).

    Raises
    ------
    ValueError
        Naming the file, and the line and column where applicable.
    """
    path = Path(path)
    if path.suffix.lower() == ".npy":
        return _from_npy(path, what, column)
    with open(path, newline="", encoding="utf-8") as fh:
        text = fh.read()
    lines = [
        (i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not lines:
        raise ValueError(f"{path}: no {what} found (the file is empty)")
    first = lines[0][1]
    delim = next((d for d in (",", ";", "\t") if d in first), None)
    rows = (
        [(i, [c.strip() for c in next(csv.reader([ln], delimiter=delim))]) for i, ln in lines]
        if delim
        else [(i, ln.split()) for i, ln in lines]
    )
    header = None
    if not all(_is_number(c) for c in rows[0][1]) and not (
        what == "labels" and all(c.lower() in _TRUE | _FALSE for c in rows[0][1])
    ):
        header = rows[0][1]
        rows = rows[1:]
    width = len(header) if header else len(rows[0][1]) if rows else 0
    col = _column_index(path, header, width, column)
    values: list[str] = []
    for lineno, cells in rows:
        if len(cells) != width:
            raise ValueError(f"{path}, line {lineno}: expected {width} column(s), found {len(cells)}")
        values.append(cells[col])
    if not values:
        raise ValueError(f"{path}: no {what} found (only a header line)")
    linenos = [i for i, _ in rows]
    if what == "labels":
        out = np.empty(len(values), dtype=bool)
        for k, v in enumerate(values):
            low = v.lower()
            if low in _TRUE:
                out[k] = True
            elif low in _FALSE:
                out[k] = False
            else:
                raise ValueError(f"{path}, line {linenos[k]}: label {v!r} is not 0/1 (or true/false, yes/no)")
        return out
    out = np.empty(len(values), dtype=np.float64)
    for k, v in enumerate(values):
        try:
            out[k] = float(v)
        except ValueError:
            raise ValueError(f"{path}, line {linenos[k]}: score {v!r} is not a number") from None
        if np.isnan(out[k]):
            raise ValueError(f"{path}, line {linenos[k]}: score {v!r} is not a number")
    return out


def _column_index(path: Path, header: list[str] | None, width: int, column: str | None) -> int:
    if column is None:
        if width != 1:
            names = f" ({', '.join(header)})" if header else ""
            raise ValueError(f"{path}: {width} columns{names}; choose one with --column (name or 0-based index)")
        return 0
    if header and column in header:
        return header.index(column)
    if column.isdigit() and int(column) < width:
        return int(column)
    raise ValueError(f"{path}: no column {column!r} (columns: {', '.join(header) if header else width})")


def _from_npy(path: Path, what: str, column: str | None) -> np.ndarray:
    arr = np.load(path, allow_pickle=False)
    if arr.ndim == 2:
        if column is not None:
            if not column.isdigit() or int(column) >= arr.shape[1]:
                raise ValueError(f"{path}: no column {column!r} in an array of shape {arr.shape}")
            arr = arr[:, int(column)]
        elif arr.shape[1] == 1:
            arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{path}: expected a 1-d array of {what}, got shape {arr.shape}")
    if what == "labels":
        return arr
    bad = np.isnan(arr.astype(np.float64))
    if bad.any():
        raise ValueError(f"{path}: {what} contain NaN at index {int(np.flatnonzero(bad)[0])}")
    return arr.astype(np.float64)


# Columns of an ``odeval score`` table that are not scores.
_TABLE_META = ("object", "id", "label")


class ScoreTable(NamedTuple):
    """The score columns of an ``odeval score`` output file.

    ``scores`` has one row per column (shape (C, N)); ``labels`` is the table's ``label`` column (bool) or None.
    """

    columns: list[str]
    scores: np.ndarray
    labels: np.ndarray | None


def is_score_table(path: str | os.PathLike[str]) -> bool:
    """True for the files ``odeval score`` writes: ``.parquet``, ``.npz``, and ``.csv`` whose header starts
    with ``object``. Everything else is read as a single vector by :func:`read_vector`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".npz"):
        return True
    if suffix != ".csv":
        return False
    with open(path, encoding="utf-8") as fh:
        first = fh.readline()
    return first.split(",")[0].strip() == "object"


def read_score_table(path: str | os.PathLike[str]) -> ScoreTable:
    """Read a table written by ``odeval score`` (``.parquet``, ``.csv`` or ``.npz``).

    Raises
    ------
    ValueError
        Naming the file: no score columns, a non-numeric or NaN score (with its column and row),
        a ``label`` column that is not boolean.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            missing = [key for key in ("scores", "columns") if key not in z.files]
            if missing:
                raise ValueError(f"{path}: not an odeval score archive (no array {', '.join(missing)}; "
                                 f"it holds {', '.join(z.files) or 'nothing'})")
            columns = [str(c) for c in z["columns"]]
            scores = np.asarray(z["scores"], dtype=np.float64)
            labels = np.asarray(z["labels"]) if "labels" in z.files else None
        if scores.ndim != 2 or scores.shape[0] != len(columns):
            raise ValueError(f"{path}: 'scores' has shape {scores.shape} but there are {len(columns)} columns")
    else:
        import pandas as pd

        try:
            frame = pd.read_parquet(path) if suffix == ".parquet" else pd.read_csv(path)
        except ImportError as exc:
            raise ValueError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow): {exc}") from None
        columns = [str(c) for c in frame.columns if c not in _TABLE_META]
        for c in columns:
            if not pd.api.types.is_numeric_dtype(frame[c]):
                bad = pd.to_numeric(frame[c], errors="coerce").isna().to_numpy()
                row = int(np.flatnonzero(bad)[0]) if bad.any() else 0
                raise ValueError(f"{path}: column {c!r}, row {row}: {frame[c].iloc[row]!r} is not a number")
        scores = frame[columns].to_numpy(dtype=np.float64).T if columns else np.empty((0, len(frame)))
        labels = frame["label"].to_numpy() if "label" in frame else None
    if not columns:
        raise ValueError(f"{path}: no score columns")
    bad = np.isnan(scores)
    if bad.any():
        c, row = (int(i[0]) for i in np.nonzero(bad))
        raise ValueError(f"{path}: column {columns[c]!r}, row {row}: score nan is not a number")
    if labels is not None:
        if labels.dtype != bool:
            if not np.isin(labels, (0, 1)).all():
                raise ValueError(f"{path}: the 'label' column must be true/false or 0/1")
            labels = labels.astype(bool)
    return ScoreTable(columns, scores, labels)
