"""Preparation of outlier datasets: explicit, seeded, recorded steps (Campos et al. 2016, §4).

Campos et al. (2016) show that the choices made when a classification dataset becomes an outlier dataset —
handling of missing values and categorical attributes, removal of duplicates, normalisation, the definition
of the outlier class and its downsampling — change the conclusions of a benchmark, and that a single random
downsampling is not enough. Each choice is therefore one function here. A step takes a
:class:`~odeval.data.Dataset` and returns a new one, and appends one record to
``provenance["steps"]``: ``{"step": name, "params": {...}, "result": {...}}``. ``result`` says what the
step did: which attributes and objects were dropped, how many duplicates were found, which outliers the
downsampling kept. A report can then say exactly how a variant was made, and the variant can be made again.

Steps
-----
- :func:`define_outliers` — turn a class attribute into outlier labels (which classes are outliers).
- :func:`handle_missing` — the missing-value rule of §4.1 (drop instances or drop the attribute).
- :func:`remove_duplicates` — remove repeated feature vectors; label conflicts are handled explicitly.
- :func:`encode_categorical` — drop nominal attributes, 1-of-n encoding or IDF encoding (§4.1).
- :func:`downsample_outliers` / :func:`downsample_repeats` — keep all inliers and a random subset of the
  outliers, at a target rate r (|O| = ⌊r/(1−r)·|I|⌋) or a target count, repeated with versioned seeds.
- :func:`normalize` — attribute-wise linear scaling to [0, 1] (constant attributes → 0) or z-scores.
- :func:`prepare` — the whole pipeline in the order the published collection was made, naming each
  resulting variant like the published files (``Annthyroid_withoutdupl_norm_05_v03``).

How the published collection was made
-------------------------------------
Worked out by regenerating the published files from their nearest-raw variants (see
``tests/data/test_reproduce_dami.py`` and ``docs/datasets.md``):

1. duplicates are removed on the *full original record*, before categorical attributes are treated
   (``Lymphography_withoutdupl_catremoved`` keeps all 148 objects although only 28 distinct vectors remain
   after the 15 nominal attributes are dropped); of each group of repeated vectors the first occurrence is
   kept (the published ``id`` values confirm this);
2. the outlier class is downsampled next, keeping every inlier;
3. normalisation comes last and uses the minimum and maximum of the *downsampled* data, computed as
   ``(x - min) / (max - min)`` (bit-identical to the published values; ``(x - min) * (1 / (max - min))``
   is not);
4. IDF uses the natural logarithm and the number of objects after duplicate removal, N / f_t where f_t is
   the number of objects having value t in that attribute;
5. 1-of-n creates one 0/1 column per *declared* category, named ``"attribute = value"``.

References
----------
.. [1] G. O. Campos, A. Zimek, J. Sander, R. J. G. B. Campello, B. Micenková, E. Schubert, I. Assent and
   M. E. Houle. "On the evaluation of unsupervised outlier detection: measures, datasets, and an empirical
   study." Data Mining and Knowledge Discovery 30(4):891–927, 2016. §4.1 (preprocessing), §4.2–4.3
   (datasets, downsampling).
"""

from __future__ import annotations

import copy
import math
import os
import warnings
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from odeval.data.dataset import NOMINAL, NUMERIC, Dataset

__all__ = [
    "CATEGORICAL_METHODS",
    "NORMALIZATION_METHODS",
    "ON_CONFLICT",
    "define_outliers",
    "downsample_outliers",
    "downsample_repeats",
    "encode_categorical",
    "handle_missing",
    "n_outliers_for_rate",
    "normalize",
    "prepare",
    "prepare_file",
    "remove_duplicates",
]

CATEGORICAL_METHODS = ("remove", "onehot", "idf")
"""Treatments of nominal attributes; published names: ``catremoved``, ``1ofn``, ``idf``."""
_CATEGORICAL_ALIASES = {"remove": "remove", "catremoved": "remove", "drop": "remove",
                        "onehot": "onehot", "1ofn": "onehot", "one-hot": "onehot", "idf": "idf"}
CATEGORICAL_TOKENS = {"remove": "catremoved", "onehot": "1ofn", "idf": "idf"}
"""The variant-name token of each categorical treatment, as in the published file names."""

NORMALIZATION_METHODS = ("minmax", "zscore")
ON_CONFLICT = ("error", "first", "outlier", "inlier", "drop")
"""What :func:`remove_duplicates` does when copies of one feature vector carry different labels."""

_MAX_LISTED = 1000  # row lists longer than this are summarised in provenance (count + first entries)


# --- helpers -----------------------------------------------------------------------------------------
def _record(ds: Dataset, step: str, params: dict[str, Any], result: dict[str, Any], **changes: Any) -> Dataset:
    """A copy of ``ds`` with ``changes`` applied and one step appended to ``provenance["steps"]``."""
    prov = copy.deepcopy(ds.provenance) if ds.provenance else {}
    steps = list(prov.get("steps", []))
    steps.append({"step": step, "params": params, "result": result})
    prov["steps"] = steps
    return ds.with_changes(provenance=prov, **changes)


def _listed(values: Sequence[Any] | np.ndarray) -> list[Any]:
    """A JSON-friendly list of at most ``_MAX_LISTED`` entries (ints/floats/str)."""
    out = []
    for v in list(values)[:_MAX_LISTED]:
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        out.append(v)
    return out


def _id_list(ds: Dataset, rows: np.ndarray) -> dict[str, Any]:
    """Describe a set of rows by position (0-based) and, when present, by object id."""
    rows = np.asarray(rows, dtype=np.int64)
    out: dict[str, Any] = {"count": int(rows.size), "rows": _listed(rows)}
    if ds.ids is not None:
        out["ids"] = _listed(np.asarray(ds.ids)[rows])
    if rows.size > _MAX_LISTED:
        out["truncated"] = True
    return out


def _take_rows(ds: Dataset, rows: np.ndarray) -> dict[str, Any]:
    rows = np.asarray(rows, dtype=np.int64)
    return {
        "X": ds.X[rows],
        "y": None if ds.y is None else ds.y[rows],
        "ids": None if ds.ids is None else np.asarray(ds.ids)[rows],
    }


def _take_columns(ds: Dataset, cols: Sequence[int]) -> dict[str, Any]:
    cols = list(cols)
    return {
        "X": ds.X[:, cols],
        "attribute_names": tuple(ds.attribute_names[j] for j in cols),
        "attribute_types": tuple(ds.attribute_types[j] for j in cols),
        "categories": {new: ds.categories[old] for new, old in enumerate(cols) if old in ds.categories},
    }


def _require_labels(ds: Dataset, step: str) -> np.ndarray:
    if ds.y is None:
        raise ValueError(f"{step}: dataset {ds.name!r} has no outlier labels; define them first "
                         "(odeval.data.prepare.define_outliers)")
    return ds.y


def _require_numeric(ds: Dataset, step: str) -> None:
    ds.numeric_matrix(context=step)


def _check_seed(seed: Any, name: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {seed!r}")
    return int(seed)


# --- outlier definition --------------------------------------------------------------------------------
def define_outliers(ds: Dataset, outlier_classes: Sequence[str | float], column: str = "class") -> Dataset:
    """Turn a class attribute into outlier labels: objects of ``outlier_classes`` are outliers.

    The class attribute is removed from the attributes. This is how the "semantic" datasets of Campos et
    al. (2016, §4.3) are made from classification data (e.g. Annthyroid: the non-healthy classes are the
    outliers); downsample the outlier class afterwards with :func:`downsample_outliers`.

    Parameters
    ----------
    ds : Dataset
        The classification dataset. ``ds.y`` is replaced if present (the step records that it was).
    outlier_classes : sequence of str or float
        The classes whose objects are outliers: category names for a nominal class attribute, values for a
        numeric one.
    column : str, default "class"
        Name of the class attribute (case-insensitive if no exact match).

    Returns
    -------
    Dataset
        Without the class attribute, with ``y`` True for objects of the outlier classes.
    """
    names = list(ds.attribute_names)
    if column in names:
        j = names.index(column)
    else:
        lowered = [n.lower() for n in names]
        if column.lower() not in lowered:
            raise ValueError(f"define_outliers: dataset {ds.name!r} has no attribute {column!r} "
                             f"(attributes: {names})")
        j = lowered.index(column.lower())
    if not outlier_classes:
        raise ValueError("define_outliers: outlier_classes is empty; name at least one class")
    col = ds.X[:, j]
    if np.isnan(col).any():
        r = int(np.flatnonzero(np.isnan(col))[0])
        raise ValueError(f"define_outliers: class attribute {names[j]!r} is missing at row {r}")
    if ds.attribute_types[j] == NOMINAL:
        cats = list(ds.categories[j])
        unknown = [c for c in outlier_classes if str(c) not in cats]
        if unknown:
            raise ValueError(f"define_outliers: class(es) {unknown} not among the categories {cats} of "
                             f"attribute {names[j]!r}")
        codes = [cats.index(str(c)) for c in outlier_classes]
        y = np.isin(col, codes)
        labels = np.array(cats, dtype=object)[col.astype(np.int64)]
    else:
        values = [float(c) for c in outlier_classes]
        missing = [v for v in values if not (col == v).any()]
        if missing:
            raise ValueError(f"define_outliers: class value(s) {missing} do not occur in attribute {names[j]!r}")
        y = np.isin(col, values)
        labels = col
    classes, counts = np.unique(labels.astype(str), return_counts=True)
    keep = [c for c in range(ds.n_attributes) if c != j]
    result = {
        "class_counts": {str(c): int(n) for c, n in zip(classes, counts, strict=True)},
        "n_outliers": int(y.sum()),
        "n_inliers": int((~y).sum()),
        "replaced_labels": ds.y is not None,
    }
    params = {"column": names[j], "outlier_classes": [str(c) for c in outlier_classes]}
    return _record(ds, "define_outliers", params, result, y=y, **_take_columns(ds, keep))


# --- missing values ------------------------------------------------------------------------------------
def handle_missing(ds: Dataset, max_fraction: float = 0.10) -> Dataset:
    """Handle missing values attribute by attribute (Campos et al. 2016, §4.1).

    For each attribute: if fewer than ``max_fraction`` of the objects miss it, those objects are dropped;
    otherwise the attribute is dropped. Fractions are computed on the input dataset, attributes are
    decided first, then every object missing a value in a kept attribute is dropped.

    Parameters
    ----------
    ds : Dataset
    max_fraction : float, default 0.10
        An attribute missing in a fraction ``>= max_fraction`` of the objects is dropped.

    Returns
    -------
    Dataset
        Without missing values. The step's result lists the dropped attributes (with their missing
        fraction) and the dropped objects (rows and ids).
    """
    if not 0.0 < max_fraction <= 1.0:
        raise ValueError(f"handle_missing: max_fraction must be in (0, 1], got {max_fraction!r}")
    miss = np.isnan(ds.X)
    n = ds.n_objects
    frac = miss.mean(axis=0) if n else np.zeros(ds.n_attributes)
    drop_attr = frac >= max_fraction
    keep_cols = np.flatnonzero(~drop_attr)
    if keep_cols.size == 0:
        raise ValueError(f"handle_missing: every attribute of {ds.name!r} misses at least "
                         f"{max_fraction:.0%} of its values; nothing would remain")
    drop_rows = np.flatnonzero(miss[:, keep_cols].any(axis=1))
    keep_rows = np.setdiff1d(np.arange(n), drop_rows)
    if keep_rows.size == 0 and n:
        raise ValueError(f"handle_missing: every object of {ds.name!r} misses a value; nothing would remain")
    result = {
        "dropped_attributes": [
            {"name": ds.attribute_names[j], "missing_fraction": float(frac[j])} for j in np.flatnonzero(drop_attr)
        ],
        "dropped_objects": _id_list(ds, drop_rows),
        "missing_fraction_per_attribute": {
            ds.attribute_names[j]: float(frac[j]) for j in range(ds.n_attributes) if frac[j] > 0
        },
    }
    if ds.y is not None:
        result["dropped_outliers"] = int(ds.y[drop_rows].sum())
    changes = _take_columns(ds, keep_cols)
    changes.update(_take_rows(ds, keep_rows))
    changes["X"] = ds.X[np.ix_(keep_rows, keep_cols)]
    return _record(ds, "handle_missing", {"max_fraction": max_fraction}, result, **changes)


# --- duplicates ----------------------------------------------------------------------------------------
def _duplicate_groups(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(group, first)``: group id of each row (rows with equal vectors share it, NaN equals NaN, -0 == 0)
    and, per group, the index of its first row."""
    if X.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    key = np.where(np.isnan(X), np.inf, X) + 0.0  # inf never occurs in a Dataset; + 0.0 maps -0.0 to 0.0
    _, first, inverse = np.unique(np.ascontiguousarray(key), axis=0, return_index=True, return_inverse=True)
    return inverse.reshape(-1), first


def remove_duplicates(ds: Dataset, on_conflict: str = "error") -> Dataset:
    """Remove repeated feature vectors, keeping the first occurrence of each (Campos et al. 2016, §4.1).

    Two objects are duplicates when all their attribute values are equal (missing equals missing, nominal
    attributes compare by category). Ids and labels do not take part in the comparison.

    Parameters
    ----------
    ds : Dataset
    on_conflict : {"error", "first", "outlier", "inlier", "drop"}, default "error"
        What to do when copies of one vector carry different labels (one copy is an outlier, another an
        inlier). Such a vector is not an outlier of the data as a detector sees it, and no choice is neutral,
        so by default this raises and names the conflicting rows. ``"first"`` keeps the first occurrence with
        its label; ``"outlier"`` / ``"inlier"`` keep the first occurrence labelled as such; ``"drop"``
        removes every copy. The published collection has no such conflict in the files it derives from.

    Returns
    -------
    Dataset
        One object per distinct vector, in the order of first occurrence. The step's result gives the
        number of removed objects (and removed outliers), the number of repeated vectors and of conflicts,
        and the removed rows / ids.
    """
    if on_conflict not in ON_CONFLICT:
        raise ValueError(f"remove_duplicates: on_conflict must be one of {ON_CONFLICT}, got {on_conflict!r}")
    group, first = _duplicate_groups(ds.X)
    sizes = np.bincount(group, minlength=first.size)
    y = ds.y
    conflict_groups = np.zeros(first.size, dtype=bool)
    if y is not None and first.size:
        n_out = np.bincount(group, weights=y.astype(np.float64), minlength=first.size)
        conflict_groups = (n_out > 0) & (n_out < sizes)
    n_conflicts = int(conflict_groups.sum())
    if n_conflicts and on_conflict == "error":
        g = int(np.flatnonzero(conflict_groups)[0])
        rows = np.flatnonzero(group == g)
        where = f"rows {rows.tolist()[:6]}" + (f" (ids {_listed(np.asarray(ds.ids)[rows][:6])})"
                                                if ds.ids is not None else "")
        raise ValueError(
            f"remove_duplicates: {n_conflicts} repeated vector(s) of {ds.name!r} carry both labels, first at "
            f"{where}; choose on_conflict='first', 'outlier', 'inlier' or 'drop'")
    keep_groups = np.ones(first.size, dtype=bool)
    if on_conflict == "drop":
        keep_groups &= ~conflict_groups
    keep = np.sort(first[keep_groups])
    new_y = None if y is None else y[keep].copy()
    if y is not None and n_conflicts and on_conflict in ("outlier", "inlier"):
        kept_conflict = conflict_groups[group[keep]]
        new_y[kept_conflict] = on_conflict == "outlier"
    removed = np.setdiff1d(np.arange(ds.n_objects), keep)
    result: dict[str, Any] = {
        "n_removed": int(removed.size),
        "n_repeated_vectors": int((sizes > 1).sum()),
        "n_label_conflicts": n_conflicts,
        "removed_objects": _id_list(ds, removed),
    }
    if y is not None:
        result["removed_outliers"] = int(y.sum() - new_y.sum())
    changes = _take_rows(ds, keep)
    changes["y"] = new_y
    return _record(ds, "remove_duplicates", {"on_conflict": on_conflict}, result, **changes)


# --- categorical attributes ----------------------------------------------------------------------------
def encode_categorical(ds: Dataset, method: str) -> Dataset:
    """Treat nominal attributes: drop them, 1-of-n encode them, or IDF-encode them (Campos et al. 2016, §4.1).

    Parameters
    ----------
    ds : Dataset
        Must not miss nominal values (use :func:`handle_missing` first).
    method : {"remove", "onehot", "idf"}
        Also accepted: the published tokens ``"catremoved"``, ``"1ofn"``.

        - ``"remove"``: nominal attributes are dropped.
        - ``"onehot"``: each nominal attribute becomes one 0/1 attribute per declared category, in declared
          order, at the attribute's position, named ``"attribute = category"``.
        - ``"idf"``: each value t of a nominal attribute becomes ln(N / f_t), N the number of objects and
          f_t the number of objects with value t in that attribute (inverse document frequency: rare values
          are far from common ones). The attribute keeps its name and position.

    Returns
    -------
    Dataset
        With numeric attributes only. Removing attributes can make objects repeat each other; the step's
        result gives the number of repeated vectors it leaves (``n_duplicates_after``).
    """
    m = _CATEGORICAL_ALIASES.get(str(method).lower())
    if m is None:
        raise ValueError(f"encode_categorical: method must be one of {CATEGORICAL_METHODS} "
                         f"(or 'catremoved', '1ofn'), got {method!r}")
    nominal = ds.nominal_columns
    for j in nominal:
        col = ds.X[:, j]
        if np.isnan(col).any():
            r = int(np.flatnonzero(np.isnan(col))[0])
            raise ValueError(f"encode_categorical: nominal attribute {ds.attribute_names[j]!r} of {ds.name!r} "
                             f"is missing at row {r}; handle missing values first (handle_missing)")
    n = ds.n_objects
    cols: list[np.ndarray] = []
    names: list[str] = []
    encoded: list[dict[str, Any]] = []
    for j in range(ds.n_attributes):
        name = ds.attribute_names[j]
        if j not in nominal:
            cols.append(ds.X[:, j])
            names.append(name)
            continue
        cats = ds.categories[j]
        codes = ds.X[:, j].astype(np.int64)
        counts = np.bincount(codes, minlength=len(cats))
        if m == "remove":
            encoded.append({"attribute": name})
        elif m == "onehot":
            for c, cat in enumerate(cats):
                cols.append((codes == c).astype(np.float64))
                names.append(f"{name} = {cat}")
            encoded.append({"attribute": name, "columns": [f"{name} = {cat}" for cat in cats]})
        else:  # idf
            with np.errstate(divide="ignore"):
                weight = np.log(n / counts.astype(np.float64))  # ln(N / f_t); absent categories never used
            cols.append(weight[codes])
            names.append(name)
            encoded.append({"attribute": name,
                            "idf": {cat: (float(weight[c]) if counts[c] else None) for c, cat in enumerate(cats)}})
    X = np.column_stack(cols) if cols else np.zeros((n, 0))
    if X.shape[1] == 0:
        raise ValueError(f"encode_categorical: {ds.name!r} has only nominal attributes; removing them leaves none")
    out = ds.with_changes(X=X, attribute_names=tuple(names), attribute_types=(NUMERIC,) * len(names),
                          categories={})
    result = {"encoded_attributes": encoded, "n_attributes_before": ds.n_attributes,
              "n_attributes_after": len(names), "n_duplicates_after": out.n_duplicates()}
    return _record(out, "encode_categorical", {"method": m}, result)


# --- downsampling --------------------------------------------------------------------------------------
def _as_fraction(rate: float) -> Fraction:
    if isinstance(rate, bool) or not isinstance(rate, int | float | np.floating | Fraction):
        raise ValueError(f"rate must be a number in (0, 1), got {rate!r}")
    r = rate if isinstance(rate, Fraction) else Fraction(repr(float(rate)))
    if not 0 < r < 1:
        raise ValueError(f"rate must be in (0, 1) (a fraction, e.g. 0.05 for 5 %), got {rate!r}")
    return r


def n_outliers_for_rate(n_inliers: int, rate: float) -> int:
    """Number of outliers that makes them a fraction ``rate`` of the data when all inliers are kept.

    |O| = ⌊r / (1 − r) · |I|⌋, computed in exact rational arithmetic (``rate`` is read as the decimal it
    prints as, so 0.05 is exactly 1/20). This reproduces every downsampled file of the Campos et al. (2016)
    collection, e.g. Annthyroid without duplicates: 6595 inliers → 134 outliers at 2 %, 347 at 5 %.
    """
    r = _as_fraction(rate)
    return math.floor(r / (1 - r) * int(n_inliers))


def downsample_outliers(ds: Dataset, rate: float | None = None, *, n_outliers: int | None = None,
                        seed: int = 0, version: int = 1, outlier_ids: Sequence[Any] | None = None) -> Dataset:
    """Keep all inliers and a uniformly random subset of the outliers (Campos et al. 2016, §4.3).

    Parameters
    ----------
    ds : Dataset
        Labelled.
    rate : float, optional
        Target outlier fraction r in (0, 1): keeps |O| = ⌊r/(1−r)·|I|⌋ outliers
        (:func:`n_outliers_for_rate`). Exactly one of ``rate`` and ``n_outliers`` is given.
    n_outliers : int, optional
        Target number of outliers (the "literature" datasets: e.g. WBC and WDBC keep 10).
    seed : int, default 0
        Seed of the draw.
    version : int, default 1
        Repetition number (v01, v02, ...). The draw uses ``np.random.default_rng([seed, version])``, so
        each version of a seed is an independent, reproducible draw.
    outlier_ids : sequence, optional
        Instead of drawing, keep exactly the outliers with these ids (e.g. the ``kept_outliers`` of an
        earlier result, or the outliers of a published file whose seed is unknown). With ``rate`` or
        ``n_outliers`` also given, their count must agree.

    Returns
    -------
    Dataset
        Rows in their input order. The step's result lists the kept outliers (rows and ids) so the variant
        can be rebuilt without the seed.

    Raises
    ------
    ValueError
        If the rate needs more outliers than exist, or yields none.
    """
    y = _require_labels(ds, "downsample_outliers")
    seed = _check_seed(seed)
    version = _check_seed(version, "version")
    out_idx = np.flatnonzero(y)
    n_in = int((~y).sum())
    if outlier_ids is not None:
        return _keep_outliers(ds, y, out_idx, n_in, outlier_ids, rate, n_outliers)
    if (rate is None) == (n_outliers is None):
        raise ValueError("downsample_outliers: give exactly one of rate and n_outliers")
    if rate is not None:
        k = n_outliers_for_rate(n_in, rate)
        target = f"rate {float(rate):.4g} ({float(rate) * 100:g} %)"
    else:
        if isinstance(n_outliers, bool) or not isinstance(n_outliers, int | np.integer) or n_outliers < 1:
            raise ValueError(f"downsample_outliers: n_outliers must be a positive integer, got {n_outliers!r}")
        k = int(n_outliers)
        target = f"{k} outliers"
    if k < 1:
        raise ValueError(f"downsample_outliers: {target} with {n_in} inliers of {ds.name!r} leaves no outlier")
    if k > out_idx.size:
        raise ValueError(f"downsample_outliers: {target} needs {k} outliers for {n_in} inliers, but "
                         f"{ds.name!r} has only {out_idx.size}")
    rng = np.random.default_rng([seed, version])
    chosen = np.sort(rng.choice(out_idx, size=k, replace=False))
    keep = np.sort(np.concatenate([np.flatnonzero(~y), chosen]))
    params = {"rate": None if rate is None else float(rate), "n_outliers": None if n_outliers is None else k,
              "seed": seed, "version": version}
    result = {"n_inliers": n_in, "n_outliers_before": int(out_idx.size), "n_outliers": k,
              "kept_outliers": _id_list(ds, chosen)}
    return _record(ds, "downsample_outliers", params, result, **_take_rows(ds, keep))


def _keep_outliers(ds: Dataset, y: np.ndarray, out_idx: np.ndarray, n_in: int, outlier_ids: Sequence[Any],
                   rate: float | None, n_outliers: int | None) -> Dataset:
    if ds.ids is None:
        raise ValueError(f"downsample_outliers: dataset {ds.name!r} has no ids; outlier_ids cannot be matched")
    wanted = np.asarray(list(outlier_ids))
    ids = np.asarray(ds.ids)
    if np.unique(wanted).size != wanted.size:
        raise ValueError("downsample_outliers: outlier_ids repeats an id")
    hit = np.isin(ids[out_idx], wanted)
    chosen = out_idx[hit]
    unknown = np.setdiff1d(wanted, ids[out_idx])
    if unknown.size:
        raise ValueError(f"downsample_outliers: id(s) {_listed(unknown[:10])} are not outliers of {ds.name!r}")
    k = int(chosen.size)
    expected = (n_outliers_for_rate(n_in, rate) if rate is not None else n_outliers)
    if expected is not None and expected != k:
        raise ValueError(f"downsample_outliers: {k} outlier_ids given, but the rate / n_outliers asks for {expected}")
    keep = np.sort(np.concatenate([np.flatnonzero(~y), chosen]))
    params = {"rate": None if rate is None else float(rate), "n_outliers": n_outliers, "outlier_ids": _listed(wanted)}
    result = {"n_inliers": n_in, "n_outliers_before": int(out_idx.size), "n_outliers": k,
              "kept_outliers": _id_list(ds, chosen)}
    return _record(ds, "downsample_outliers", params, result, **_take_rows(ds, keep))


def downsample_repeats(ds: Dataset, rate: float | None = None, *, n_outliers: int | None = None,
                       repeats: int = 10, seed: int = 0) -> list[Dataset]:
    """``repeats`` independent downsamplings (versions 1..repeats) of :func:`downsample_outliers`.

    Campos et al. (2016, §4.3) draw 10 (v01..v10) because a single random downsampling is not enough.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int | np.integer) or repeats < 1:
        raise ValueError(f"downsample_repeats: repeats must be a positive integer, got {repeats!r}")
    return [downsample_outliers(ds, rate, n_outliers=n_outliers, seed=seed, version=v)
            for v in range(1, int(repeats) + 1)]


# --- normalisation -------------------------------------------------------------------------------------
def normalize(ds: Dataset, method: str = "minmax") -> Dataset:
    """Attribute-wise normalisation (Campos et al. 2016, §4.1).

    Parameters
    ----------
    ds : Dataset
        Numeric attributes only, no missing values.
    method : {"minmax", "zscore"}, default "minmax"
        ``"minmax"``: x' = (x − min) / (max − min), linear to [0, 1], computed in exactly this order
        (bit-identical to the published collection). ``"zscore"``: x' = (x − mean) / std with the
        population standard deviation (ddof = 0). A constant attribute becomes 0 in both.

    Returns
    -------
    Dataset
        The step's result holds the per-attribute parameters (min/max or mean/std), and the names of the
        constant attributes.
    """
    if method not in NORMALIZATION_METHODS:
        raise ValueError(f"normalize: method must be one of {NORMALIZATION_METHODS}, got {method!r}")
    _require_numeric(ds, "normalize")
    X = ds.X
    if ds.n_objects == 0:
        raise ValueError(f"normalize: dataset {ds.name!r} has no objects")
    if method == "minmax":
        lo, hi = X.min(axis=0), X.max(axis=0)
        span = hi - lo
        const = span == 0
        Xn = (X - lo) / np.where(const, 1.0, span)
        params = {"min": lo.tolist(), "max": hi.tolist()}
    else:
        mu, sd = X.mean(axis=0), X.std(axis=0)
        const = sd == 0
        Xn = (X - mu) / np.where(const, 1.0, sd)
        params = {"mean": mu.tolist(), "std": sd.tolist()}
    Xn[:, const] = 0.0
    result = {**params, "constant_attributes": [ds.attribute_names[j] for j in np.flatnonzero(const)]}
    return _record(ds, "normalize", {"method": method}, result, X=Xn)


# --- the pipeline --------------------------------------------------------------------------------------
def prepare(
    ds: Dataset,
    *,
    outlier_classes: Sequence[str | float] | None = None,
    class_column: str = "class",
    missing: bool = False,
    max_missing_fraction: float = 0.10,
    dedup: bool = False,
    on_conflict: str = "error",
    categorical: str | None = None,
    rate: float | None = None,
    n_outliers: int | None = None,
    repeats: int = 1,
    normalization: str | None = None,
    seed: int = 0,
    base: str | None = None,
) -> list[Dataset]:
    """Apply the preparation steps in the order the published collection was made, and name the results.

    Order: :func:`define_outliers` (if ``outlier_classes``) → :func:`handle_missing` (if ``missing``) →
    :func:`remove_duplicates` (if ``dedup``) → :func:`encode_categorical` (if ``categorical``) →
    :func:`downsample_outliers` ``repeats`` times (if ``rate`` or ``n_outliers``) → :func:`normalize`
    (if ``normalization``) on each downsampled dataset. Duplicates are thus removed on the full record,
    and normalisation uses the minimum and maximum of each final variant — both as in Campos et al. (2016).

    Parameters
    ----------
    ds : Dataset
    outlier_classes, class_column
        See :func:`define_outliers`.
    missing, max_missing_fraction
        See :func:`handle_missing`.
    dedup, on_conflict
        See :func:`remove_duplicates`.
    categorical : {"remove", "onehot", "idf"} or None
        See :func:`encode_categorical`.
    rate, n_outliers, repeats, seed
        See :func:`downsample_repeats`.
    normalization : {"minmax", "zscore"} or None
        See :func:`normalize`.
    base : str, optional
        Base name for the variants; default: ``ds.name`` without its variant tokens.

    Returns
    -------
    list of Dataset
        One dataset per repetition (one if not downsampling), named like the published files, e.g.
        ``Annthyroid_withoutdupl_norm_05_v03``. ``provenance["variant"]`` holds the variant's flags.
    """
    from odeval.data.catalogue import VariantName, format_variant_name, parse_variant_name

    parsed = parse_variant_name(ds.name) or VariantName(base=ds.name)
    base = base or parsed.base
    source_name = ds.name
    if outlier_classes:
        ds = define_outliers(ds, outlier_classes, class_column)
    if missing:
        ds = handle_missing(ds, max_missing_fraction)
    elif ds.n_missing:
        warnings.warn(f"{ds.name!r} has {ds.n_missing} missing values; use missing=True to apply the §4.1 rule",
                      stacklevel=2)
    if dedup:
        ds = remove_duplicates(ds, on_conflict)
    cat_token = parsed.categorical if parsed.categorical != "original" else None
    if categorical:
        ds = encode_categorical(ds, categorical)
        cat_token = CATEGORICAL_TOKENS[_CATEGORICAL_ALIASES[categorical.lower()]]
    downsampling = rate is not None or n_outliers is not None
    if downsampling:
        variants = downsample_repeats(ds, rate, n_outliers=n_outliers, repeats=repeats, seed=seed)
        versions: list[int | None] = list(range(1, len(variants) + 1))
        pct = None if rate is None else round(float(rate) * 100, 6)
    else:
        if repeats != 1:
            raise ValueError("prepare: repeats > 1 needs downsampling (rate or n_outliers)")
        variants, versions, pct = [ds], [parsed.version], parsed.outlier_pct
    if normalization:
        variants = [normalize(v, normalization) for v in variants]
    out = []
    for v, version in zip(variants, versions, strict=True):
        flags = {
            "base": base,
            "deduplicated": bool(dedup or parsed.deduplicated),
            "normalized": bool(normalization or parsed.normalized),
            "normalization": normalization,
            "categorical": cat_token,
            "outlier_pct": pct,
            "version": version,
            "downsampled": bool(downsampling or parsed.downsampled),
        }
        name = format_variant_name(base, deduplicated=flags["deduplicated"], normalized=flags["normalized"],
                                   categorical=cat_token, outlier_pct=pct, version=version)
        prov = copy.deepcopy(v.provenance)
        prov["derived_from"] = source_name
        prov["variant"] = flags
        out.append(v.with_changes(name=name, provenance=prov))
    return out


def prepare_file(path: str | os.PathLike[str], *, label: str | None = None,
                 outlier_classes: str | Sequence[str] | None = None, **steps: Any) -> list[Dataset]:
    """Load the dataset file ``path`` and :func:`prepare` it: the library side of ``odeval datasets prepare``.

    ``label`` is the loader's label attribute (None: the loader's default). With ``outlier_classes`` (a
    comma-separated string or a sequence) the file is loaded unlabelled unless ``label`` is given, since the
    class attribute defines the outliers. ``steps`` are :func:`prepare`'s other keyword arguments.

    Labels are needed only by downsampling: a file without the default label attribute is prepared unlabelled
    (normalisation, encoding, missing values, deduplication; ``provenance["load"]["label_note"]`` says so), and
    downsampling it is refused with the reason (ValueError).
    """
    from odeval.data.loaders import label_note, load_dataset

    options: dict[str, Any] = {}
    if outlier_classes:
        options["label"] = label  # None: unlabelled, the class attribute defines the outliers
    elif label is not None:
        options["label"] = label
    if isinstance(outlier_classes, str):
        outlier_classes = [c.strip() for c in outlier_classes.split(",")]
    ds = load_dataset(path, require_labels=False, **options)
    downsampling = steps.get("rate") is not None or steps.get("n_outliers") is not None
    if downsampling and ds.y is None and not outlier_classes:
        why = (label_note(ds) or "no labels").split(":")[0]
        raise ValueError(f"{path}: downsampling needs outlier labels and the file has {why}; name the label "
                         "attribute (--label NAME) or define the outliers (--outlier-classes A,B)")
    return prepare(ds, outlier_classes=outlier_classes or None, **steps)
