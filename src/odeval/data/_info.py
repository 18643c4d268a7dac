"""Basic facts about a loaded dataset, for ``odeval datasets info`` (and anyone else who needs them).

The text is rendered by :mod:`odeval.render.datasets`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from odeval.data.dataset import NOMINAL, Dataset
from odeval.data.loaders import SUPPORTED_FORMATS, DatasetFormatError, dataset_format, label_note, load_dataset

__all__ = ["DatasetInfos", "dataset_info", "dataset_infos"]


def _num(v: float) -> float | int | None:
    if not np.isfinite(v):
        return None
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else float(v)


def dataset_info(dataset: Dataset) -> dict[str, Any]:
    """Summarise a dataset: size, outliers, duplicates, missing values and per-attribute ranges.

    Parameters
    ----------
    dataset : Dataset

    Returns
    -------
    dict
        JSON-serialisable, with keys ``name``, ``source``, ``format``, ``sha256``, ``n_objects`` (N),
        ``n_attributes`` (d), ``n_outliers`` (|O|, None if unlabelled), ``outlier_pct`` (100·|O|/N),
        ``n_duplicates`` (objects whose feature vector repeats an earlier object's, exact equality, missing
        values equal to each other), ``n_missing`` (missing values), ``n_objects_with_missing``,
        ``nominal_attributes`` (names), ``id_attribute``, and ``attributes``: one dict per attribute with
        ``name``, ``type``, ``min``, ``max`` (ignoring missing values; None if all missing; for a nominal
        attribute the range of its category codes), ``n_missing``, ``n_distinct`` and, for nominal
        attributes, ``categories``.
    """
    X = dataset.X
    n, d = X.shape
    missing = np.isnan(X)
    miss_per = missing.sum(axis=0)
    attributes = []
    for j in range(d):
        col = X[:, j]
        present = col[~missing[:, j]]
        entry: dict[str, Any] = {
            "name": dataset.attribute_names[j],
            "type": dataset.attribute_types[j],
            "min": _num(present.min()) if present.size else None,
            "max": _num(present.max()) if present.size else None,
            "n_missing": int(miss_per[j]),
            "n_distinct": int(np.unique(present).size),
        }
        if dataset.attribute_types[j] == NOMINAL:
            entry["categories"] = list(dataset.categories[j])
        attributes.append(entry)
    prov = dataset.provenance
    return {
        "name": dataset.name,
        "source": prov.get("source"),
        "format": prov.get("format"),
        "sha256": prov.get("sha256"),
        "n_objects": n,
        "n_attributes": d,
        "n_outliers": dataset.n_outliers,
        "outlier_pct": None if dataset.y is None or n == 0 else 100.0 * dataset.n_outliers / n,
        "n_duplicates": dataset.n_duplicates(),
        "n_missing": int(miss_per.sum()),
        "n_objects_with_missing": int(missing.any(axis=1).sum()),
        "nominal_attributes": [dataset.attribute_names[j] for j in dataset.nominal_columns],
        "id_attribute": prov.get("load", {}).get("id_attribute"),
        "attributes": attributes,
    }


@dataclass
class DatasetInfos:
    """The facts of every dataset file found, for ``odeval datasets info``.

    ``entries`` holds, per file in order, the :func:`dataset_info` dict or ``{"path": ..., "error": ...}`` for
    a file that could not be loaded; ``problems`` names the folders without any dataset file; ``notes`` the files
    read without labels because they have no label attribute (``"<file>: no label column 'outlier': read without
    labels"``).
    """

    entries: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """True when a folder held no dataset file or a file could not be loaded."""
        return bool(self.problems) or any("error" in e for e in self.entries)


def _dataset_files(paths: Iterable[str | os.PathLike[str]], problems: list[str]) -> list[Path]:
    """The files of ``paths``: files as given, folders searched recursively for supported formats."""
    files: list[Path] = []
    for p in map(Path, paths):
        if not p.is_dir():
            files.append(p)
            continue
        found = []
        for f in sorted(p.rglob("*")):
            try:
                if f.is_file() and dataset_format(f) in SUPPORTED_FORMATS:
                    found.append(f)
            except DatasetFormatError:
                continue
        if not found:
            problems.append(f"no dataset files ({', '.join('.' + x for x in SUPPORTED_FORMATS)}) in {p}")
        files.extend(found)
    return files


def dataset_infos(paths: Iterable[str | os.PathLike[str]], *, label: str | None = None,
                  positive: str | None = None, unlabelled: bool = False) -> DatasetInfos:
    """:func:`dataset_info` of every dataset file in ``paths`` (files, or folders searched recursively).

    ``label`` / ``unlabelled`` choose the label attribute (or none); ``positive`` the outlier value of ARFF and
    CSV labels. A file without the default label attribute is summarised unlabelled (a line in ``notes``); a label
    attribute named by ``label`` must exist. A file that cannot be loaded is an error entry; the others are still
    summarised.
    """
    out = DatasetInfos()
    for f in _dataset_files(paths, out.problems):
        options: dict[str, Any] = {}
        try:
            fmt = dataset_format(f)
            if unlabelled:
                options["label"] = None
            elif label is not None:
                options["label"] = label
            if positive is not None and fmt in ("arff", "csv"):
                options["positive"] = positive
            ds = load_dataset(f, require_labels=False, **options)
            if (note := label_note(ds)) is not None:
                out.notes.append(f"{f}: {note}")
            out.entries.append(dataset_info(ds))
        except (ValueError, ImportError, OSError) as exc:  # DatasetFormatError is a ValueError
            out.entries.append({"path": str(f), "error": str(exc)})
    return out
