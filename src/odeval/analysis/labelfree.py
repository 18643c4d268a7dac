"""IREOS of stored or tabled scorings: the library side of ``odeval ireos``.

:func:`ireos_of_scorings` reads the candidate scorings of a data set — a score table written by ``odeval score``
or the kept score vectors of a results store — keeps the columns asked for and the finite ones, optionally the
candidates of Marques et al. (2020, §4.2) spread over ROC AUC, and computes their IREOS index
(:func:`odeval.labelfree.ireos`) with the given :class:`~odeval.labelfree.ireos.IREOSSettings`. The labels, when
known, give ROC AUC for comparison only: IREOS never sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from odeval.labelfree.ireos import IREOSResult, IREOSSettings

__all__ = ["IREOSOfScorings", "ireos_of_scorings"]


@dataclass(frozen=True)
class IREOSOfScorings:
    """The IREOS of a data set's candidate scorings (:func:`ireos_of_scorings`).

    Attributes
    ----------
    dataset : str
        The data set as given (a path).
    n_objects : int
    names : list of str
        The scorings evaluated, in the order of ``result``.
    roc_auc : ndarray or None
        ROC AUC of each scoring when labels are known (never used by IREOS).
    result : IREOSResult
    adjust, p_values : bool
        Whether the adjusted index and the p-values were computed.
    skipped : tuple of str
        Scorings left out because they hold NaN or ±inf.
    label_note : str or None
        Why DATASET was read without labels (it has no label attribute; IREOS needs none).
    gamma_max_searched : bool
        Whether γ_max was searched (Sect. 3.4) rather than given.
    """

    dataset: str
    n_objects: int
    names: list[str]
    roc_auc: np.ndarray | None = field(repr=False)
    result: IREOSResult = field(repr=False)
    adjust: bool = False
    p_values: bool = False
    skipped: tuple[str, ...] = ()
    label_note: str | None = None
    gamma_max_searched: bool = True

    @property
    def best(self) -> int:
        """Position (in ``names``) of the pick: the largest index (the first of equal ones)."""
        return int(np.argmax(self.result.index))


def ireos_of_scorings(dataset: str | Path, scores: str | Path, *, columns: Sequence[str] = (),
                      store_dataset: str | None = None, candidates: int | None = None,
                      settings: IREOSSettings | None = None, adjust: bool = False, p_values: bool = False,
                      seed: int = 0, workers: int = 1, executor: Any = None,
                      progress: Callable[[str, int], None] | None = None, device: str = "cpu") -> IREOSOfScorings:
    """IREOS (Marques et al. 2020) of the candidate scorings of ``dataset``, without labels.

    Parameters
    ----------
    dataset : path
        The data file (any format of :func:`odeval.data.load_dataset`); its labels, if any, give ROC AUC; a file
        without a label attribute is read as it is (``label_note``).
    scores : path
        A score table (``.parquet``/``.csv``/``.npz``, ``odeval score``) or a results store that kept score
        vectors (study option ``keep_scores``).
    columns : names of the scorings to evaluate (default: all).
    store_dataset : the variant name in the store (default: the data file's stem).
    candidates : keep this many scorings spread over ROC AUC (:func:`odeval.labelfree.selection.paper_candidates`;
        needs labels).
    settings : :class:`~odeval.labelfree.ireos.IREOSSettings` (default: its defaults; above
        ``settings.exact_max_objects`` objects the default ``knn="auto"`` approximates, ``result.approximated``).
    adjust, p_values, seed, workers, executor, progress, device : as :func:`odeval.labelfree.ireos`.

    Raises
    ------
    ValueError
        Unknown columns, scorings of another size than the data, ``candidates`` without labels, bad settings
        or data (one line each).
    """
    from odeval.data import label_note, load_dataset
    from odeval.data.score_files import is_score_table, read_score_table
    from odeval.labelfree import ireos
    from odeval.labelfree.selection import paper_candidates
    from odeval.measures import roc_auc

    settings = IREOSSettings() if settings is None else settings
    ds = load_dataset(dataset, require_labels=False)
    X = ds.numeric_matrix()
    if is_score_table(scores):
        table = read_score_table(scores)
        names, matrix, labels = list(table.columns), table.scores, table.labels
    else:
        from odeval.bench.ensembles import read_scorings

        stored = read_scorings(scores, store_dataset or Path(dataset).stem)
        names, matrix, labels = list(stored.runs["name"]), stored.scores, stored.labels
    if labels is None:
        labels = ds.y
    if columns:
        missing = [c for c in columns if c not in names]
        if missing:
            raise ValueError(f"{scores}: no column(s) {', '.join(missing)}; columns: {', '.join(names)}")
        keep = [names.index(c) for c in columns]
        names, matrix = [names[i] for i in keep], matrix[keep]
    if matrix.shape[1] != X.shape[0]:
        raise ValueError(f"{scores}: scorings have {matrix.shape[1]} objects, {dataset} has {X.shape[0]}")
    finite = np.isfinite(matrix).all(axis=1)
    skipped = tuple(n for n, f in zip(names, finite, strict=True) if not f)
    names, matrix = [n for n, f in zip(names, finite, strict=True) if f], matrix[finite]
    aucs = (np.array([roc_auc(labels, row) for row in matrix]) if labels is not None and 0 < labels.sum()
            < labels.size else None)
    if candidates is not None:
        if aucs is None:
            raise ValueError("--candidates needs labels (in the scores table, the store or DATASET)")
        keep = paper_candidates(aucs, candidates)
        names, matrix, aucs = [names[i] for i in keep], matrix[keep], aucs[keep]
    try:
        res = ireos(X, list(matrix), adjust=adjust, p_values=p_values, seed=seed, workers=workers, progress=progress,
                    executor=executor, device=device, **settings.kwargs())
    except ValueError as exc:  # bad data (too few objects, constant): say which file
        raise ValueError(f"{dataset}: {exc}") from None
    return IREOSOfScorings(str(dataset), int(X.shape[0]), names, aucs, res, adjust, p_values, skipped,
                           label_note(ds), settings.gamma_max is None)
