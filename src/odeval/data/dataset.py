"""The :class:`Dataset` value that flows through the whole pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = ["Dataset"]

NUMERIC = "numeric"
NOMINAL = "nominal"


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled (or unlabelled) outlier-detection dataset.

    Attributes
    ----------
    X : ndarray of shape (n_objects, n_attributes), float64
        Attribute values. Missing values are NaN (they are reported, never silently dropped; see
        :mod:`odeval.data.prepare`). A nominal attribute holds the integer code of its category, an index
        into ``categories[j]``.
    y : ndarray of shape (n_objects,), bool, or None
        True marks an outlier. None for unlabelled data.
    name : str
        Short name, e.g. ``"WBC_withoutdupl_norm_v01"``.
    attribute_names : tuple of str
        One name per column of ``X``.
    attribute_types : tuple of str
        ``"numeric"`` or ``"nominal"`` per column.
    categories : dict of int to tuple of str
        For each nominal column index, its declared categories (the codes in ``X`` index this tuple).
    ids : ndarray of shape (n_objects,) or None
        The original object identifiers (e.g. the ARFF ``id`` attribute), or None.
    provenance : dict
        Where the data came from and every step applied to it (source path, format, preparation steps).
        JSON-serialisable.
    """

    X: np.ndarray
    y: np.ndarray | None
    name: str
    attribute_names: tuple[str, ...]
    attribute_types: tuple[str, ...] = ()
    categories: dict[int, tuple[str, ...]] = field(default_factory=dict)
    ids: np.ndarray | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        X = np.asarray(self.X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"dataset {self.name!r}: X must be 2-d, got shape {X.shape}")
        object.__setattr__(self, "X", X)
        n, d = X.shape
        if len(self.attribute_names) != d:
            raise ValueError(
                f"dataset {self.name!r}: {len(self.attribute_names)} attribute names for {d} columns"
            )
        object.__setattr__(self, "attribute_names", tuple(self.attribute_names))
        types = tuple(self.attribute_types) or (NUMERIC,) * d
        if len(types) != d or any(t not in (NUMERIC, NOMINAL) for t in types):
            raise ValueError(f"dataset {self.name!r}: attribute_types must be 'numeric'/'nominal' per column")
        object.__setattr__(self, "attribute_types", types)
        for j, t in enumerate(types):
            if t == NOMINAL and j not in self.categories:
                raise ValueError(f"dataset {self.name!r}: nominal attribute {self.attribute_names[j]!r} "
                                 "has no categories")
        if np.isinf(X).any():
            r, c = np.argwhere(np.isinf(X))[0]
            raise ValueError(f"dataset {self.name!r}: infinite value at row {r}, attribute "
                             f"{self.attribute_names[c]!r}")
        if self.y is not None:
            y = np.asarray(self.y)
            if y.dtype != bool:
                raise ValueError(f"dataset {self.name!r}: y must be bool, got {y.dtype}")
            if y.shape != (n,):
                raise ValueError(f"dataset {self.name!r}: y has shape {y.shape}, expected ({n},)")
        if self.ids is not None and len(self.ids) != n:
            raise ValueError(f"dataset {self.name!r}: {len(self.ids)} ids for {n} objects")

    # --- derived facts -------------------------------------------------------------------------
    @property
    def n_objects(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_attributes(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_outliers(self) -> int | None:
        return None if self.y is None else int(self.y.sum())

    @property
    def outlier_fraction(self) -> float | None:
        return None if self.y is None else float(self.y.mean())

    @property
    def nominal_columns(self) -> tuple[int, ...]:
        return tuple(j for j, t in enumerate(self.attribute_types) if t == NOMINAL)

    @property
    def missing_mask(self) -> np.ndarray:
        """Bool (n_objects, n_attributes): True where a value is missing."""
        return np.isnan(self.X)

    @property
    def n_missing(self) -> int:
        return int(self.missing_mask.sum())

    def n_duplicates(self) -> int:
        """Number of objects whose feature vector repeats an earlier object's (exact equality)."""
        if self.n_objects == 0:
            return 0
        # NaN != NaN, so compare on a bit view where missing values are equal to each other
        view = np.ascontiguousarray(np.where(np.isnan(self.X), np.inf, self.X))
        _, first = np.unique(view, axis=0, return_index=True)
        return self.n_objects - first.size

    def numeric_matrix(self, *, context: str | None = None) -> np.ndarray:
        """``X`` as needed by distance-based methods: raises if nominal attributes or missing values remain.

        ``context`` (e.g. a preparation step's name) prefixes the error message.
        """
        where = f"{context}: " if context else ""
        if self.nominal_columns:
            names = [self.attribute_names[j] for j in self.nominal_columns]
            raise ValueError(f"{where}dataset {self.name!r} has nominal attributes {names}; encode or drop them "
                             "first (odeval.data.prepare.encode_categorical)")
        if self.n_missing:
            r, c = np.argwhere(np.isnan(self.X))[0]
            raise ValueError(f"{where}dataset {self.name!r} has {self.n_missing} missing values (first at row {r}, "
                             f"attribute {self.attribute_names[c]!r}); handle them first "
                             "(odeval.data.prepare.handle_missing)")
        return self.X

    def with_changes(self, **changes: Any) -> Dataset:
        """A copy with some fields replaced (datasets are immutable)."""
        return replace(self, **changes)

    def __repr__(self) -> str:
        lab = "unlabelled" if self.y is None else f"{self.n_outliers} outliers"
        return f"Dataset({self.name!r}, {self.n_objects}×{self.n_attributes}, {lab})"
