"""Evaluate scorings read from files: the library side of ``odeval evaluate``.

The scores are a single vector (:func:`odeval.data.score_files.read_vector`) or a score table written by
``odeval score`` (:func:`odeval.data.score_files.read_score_table`), whose columns are all evaluated; the labels
come from a vector file, a dataset file, or the table's ``label`` column. Every scoring goes through
:func:`odeval.measures.evaluate_scoring`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from odeval._validation import check_labels
from odeval.data.score_files import is_score_table, raw_column_method, read_score_table, read_vector
from odeval.detectors import get_detector, orient
from odeval.measures._ranking import evaluate_scoring

__all__ = ["EvaluationInputError", "FileEvaluation", "evaluate_files", "select_score_columns"]


class EvaluationInputError(ValueError):
    """The inputs given cannot be evaluated together (a missing or superfluous input, not a bad file): the
    command line reports it as a usage error."""


@dataclass
class FileEvaluation:
    """Every external measure of each evaluated scoring.

    ``columns`` is ``[None]`` for a single scoring (a vector file), else the table's evaluated column names;
    ``results[i]`` maps measure name → value for ``columns[i]``. ``n`` is the P@n cut-off asked for, or None.
    """

    columns: list[str | None]
    results: list[dict[str, float]]
    n_objects: int
    n_outliers: int
    n: int | None

    @property
    def single(self) -> bool:
        """True when one scoring from a vector file was evaluated (no table columns)."""
        return self.columns == [None]


def select_score_columns(path: str | os.PathLike[str], names: list[str], scores: np.ndarray,
                         wanted: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The requested columns (all by default) of an ``odeval score`` table, public orientation: raw columns
    (``METHOD-kNNN-raw``) of methods where low = outlier are negated via the detector's metadata.

    ``wanted`` holds column names or 0-based indices (as text). Raises ValueError naming ``path`` for a column
    the table does not have, or a raw column of an unknown method.
    """
    if wanted:
        picked = []
        for w in wanted:
            if w in names:
                picked.append(names.index(w))
            elif w.isdigit() and int(w) < len(names):
                picked.append(int(w))
            else:
                raise ValueError(f"{path}: no score column {w!r} (columns: {', '.join(names)})")
    else:
        picked = list(range(len(names)))
    rows = []
    for i in picked:
        row = scores[i]
        method = raw_column_method(names[i])
        if method is not None:
            try:
                info = get_detector(method).info
            except ValueError:
                raise ValueError(f"{path}: raw column {names[i]!r} of an unknown method {method!r}: its "
                                 "orientation is not known (write public scores, without --raw)") from None
            row = orient(row, info)
        rows.append(row)
    return [names[i] for i in picked], np.vstack(rows)


def _read_scores(scores_file: str, columns: Sequence[str], has_labels: bool
                 ) -> tuple[list[str | None], np.ndarray, Any, str | None]:
    """(names, matrix, labels of the table or None, where those labels come from)."""
    if is_score_table(scores_file):
        table = read_score_table(scores_file)
        names, matrix = select_score_columns(scores_file, table.columns, table.scores, columns)
        return list(names), matrix, table.labels, f"{scores_file} (label column)"
    if len(columns) > 1:
        raise EvaluationInputError("several --column values need a table written by 'odeval score'")
    if not has_labels:
        raise EvaluationInputError("give --labels or --dataset (only an 'odeval score' table carries labels)")
    vector = read_vector(scores_file, what="scores", column=columns[0] if columns else None)
    return [None], vector[None, :], None, None


def _read_labels(labels_file: str | None, dataset_file: str | None) -> tuple[Any, str]:
    if labels_file is not None:
        return read_vector(labels_file, what="labels"), labels_file
    from odeval.data import load_dataset

    ds = load_dataset(dataset_file)
    if ds.y is None:
        raise ValueError(f"{dataset_file}: the dataset has no labels")
    return ds.y, str(dataset_file)


def evaluate_files(scores_file: str, *, labels_file: str | None = None, dataset_file: str | None = None,
                   columns: Sequence[str] = (), n: int | None = None, ascending: bool = False) -> FileEvaluation:
    """Evaluate the scorings of ``scores_file`` against the labels of ``labels_file``, ``dataset_file`` or the
    score table itself.

    Parameters
    ----------
    scores_file : str
        A score vector (one per line, a CSV column, ``.npy``) or an ``odeval score`` table.
    labels_file, dataset_file : str, optional
        At most one: 0/1 labels, or a dataset file whose labels are used. A table's own ``label`` column is
        used when neither is given.
    columns : sequence of str
        A column of a multi-column vector file, or the table columns to evaluate (default: all).
    n : int, optional
        Also compute P@n and adjusted P@n.
    ascending : bool
        Lower score = more outlying: negate first.

    Raises
    ------
    EvaluationInputError
        Inputs that do not fit together (labels missing, several columns of a vector file).
    ValueError, OSError
        A file that cannot be read, labels and scores of different lengths.
    """
    names, matrix, labels, labels_src = _read_scores(scores_file, columns,
                                                     labels_file is not None or dataset_file is not None)
    if labels_file is not None or dataset_file is not None:
        labels, labels_src = _read_labels(labels_file, dataset_file)
    elif labels is None:
        raise EvaluationInputError(f"{scores_file} has no 'label' column: give --labels or --dataset")
    labels = check_labels(labels, name=f"{labels_src}: the labels")
    if labels.size != matrix.shape[1]:
        raise ValueError(f"{labels_src} and {scores_file} differ in length: {labels.size} labels, "
                         f"{matrix.shape[1]} scores (both must list the same objects in the same order)")
    if ascending:
        matrix = orient(matrix, True)
    results = [evaluate_scoring(labels, row, n=n)[0] for row in matrix]
    return FileEvaluation(names, results, int(matrix.shape[1]), int(sum(labels)), n)
