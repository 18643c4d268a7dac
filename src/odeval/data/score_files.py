"""Score files: the one owner of the ``odeval score`` table format (read and write), and of the single score /
label vectors ``odeval evaluate`` reads.

A score table has one row per object (columns ``object``, ``id`` where the dataset has ids, ``label`` where it
has labels) and one column per scoring, named by :func:`score_column_name`: the scoring's
:class:`odeval._key.ScoringKey` name (``LOF-010``), with ``-raw`` appended for raw scores in the method's own
orientation (``ODIN-005-raw``). ``.parquet`` and ``.csv`` hold that table; ``.npz`` holds the arrays ``scores``
(one row per column), ``columns``, ``ks`` and, when labelled, ``labels``.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from odeval._key import ScoringKey

__all__ = ["RAW_SUFFIX", "SCORE_TABLE_SUFFIXES", "ScoreTable", "is_score_table", "raw_column_method",
           "read_score_table", "read_vector", "score_column_name", "write_score_table"]

#: The file extensions of a score table, chosen by :func:`write_score_table` from the path.
SCORE_TABLE_SUFFIXES = (".parquet", ".csv", ".npz")
#: Appended to the name of a column of raw scores (the method's own orientation).
RAW_SUFFIX = "-raw"

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


def score_column_name(key: ScoringKey, *, raw: bool = False) -> str:
    """The column of scoring ``key`` in a score table: ``LOF-010``, or ``LOF-010-raw`` for raw scores."""
    return key.name + (RAW_SUFFIX if raw else "")


def raw_column_method(column: str) -> str | None:
    """The method of a raw-score column (``ODIN-005-raw`` → ``ODIN``); None for a column of public scores."""
    if not column.endswith(RAW_SUFFIX):
        return None
    try:
        return ScoringKey.parse(column[:-len(RAW_SUFFIX)]).method
    except ValueError:  # not a key odeval wrote: the text before the last two '-' parts, as always
        return column.rsplit("-", 2)[0]


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


def write_score_table(path: str | os.PathLike[str], columns: list[str], scores: np.ndarray, *,
                      ks: list[int] | None = None, labels: np.ndarray | None = None,
                      ids: np.ndarray | None = None) -> Path:
    """Write a score table (the format :func:`read_score_table` reads), by the extension of ``path``.

    Parameters
    ----------
    path : path
        ``.parquet``, ``.csv`` or ``.npz`` (:data:`SCORE_TABLE_SUFFIXES`); missing folders are created.
    columns : list of str
        Column names (:func:`score_column_name`), one per row of ``scores``.
    scores : ndarray, shape (C, N)
        One scoring per row; CSV writes every digit (``%.17g``), so reading back is exact.
    ks : list of int, optional
        The k values of the columns (the ``ks`` array of ``.npz``).
    labels : bool ndarray, optional
        The ``label`` column (``labels`` array of ``.npz``).
    ids : ndarray, optional
        The ``id`` column (tables only; ignored unless it has one entry per object).

    Raises
    ------
    ValueError
        For another extension, or Parquet without pyarrow.
    """
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in SCORE_TABLE_SUFFIXES:
        raise ValueError(f"{out}: the extension must be .parquet, .csv or .npz")
    n = scores.shape[1]
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".npz":
        extra = {} if labels is None else {"labels": labels}
        np.savez_compressed(out, scores=scores, columns=np.array(columns), ks=np.array(sorted(ks or [])), **extra)
        return out
    import pandas as pd

    table = {"object": np.arange(n)}
    if ids is not None and len(ids) == n:
        table["id"] = np.asarray(ids)
    if labels is not None:
        table["label"] = labels
    frame = pd.concat([pd.DataFrame(table), pd.DataFrame(scores.T, columns=columns)], axis=1)
    if suffix == ".csv":
        frame.to_csv(out, index=False, float_format="%.17g")
    else:
        try:
            frame.to_parquet(out, index=False)
        except ImportError as exc:
            raise ValueError(f"writing Parquet needs pyarrow (pip install pyarrow): {exc}") from None
    return out
