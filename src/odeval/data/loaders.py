"""Loading outlier-detection datasets from files into :class:`~odeval.data.Dataset` values.

Supported formats (chosen by the file extension in :func:`load_dataset`):

- ``.arff`` — the Campos et al. (2016) benchmark collection ("DAMI" repository) and ARFF in general
  (:func:`load_arff`);
- ``.mat`` — the ODDS library (Rayana, 2016), including MATLAB v7.3 (HDF5) files (:func:`load_mat`);
- ``.npz`` — ADBench (Han et al., 2022) (:func:`load_npz`);
- ``.csv`` — a table with a header line and a named label column (:func:`load_csv`).

``.arff.gz`` and ``.csv.gz`` are decompressed transparently. Loaders never change the data: missing values
become NaN and are reported in ``Dataset.provenance["load"]``, duplicates are kept, nominal attributes are
kept as category codes. Preparation (deduplication, normalisation, encoding) is the job of
:mod:`odeval.data.prepare`.

References
----------
.. [1] G. O. Campos, A. Zimek, J. Sander, R. J. G. B. Campello, B. Micenková, E. Schubert, I. Assent and
   M. E. Houle. "On the evaluation of unsupervised outlier detection: measures, datasets, and an empirical
   study". Data Mining and Knowledge Discovery 30(4):891–927, 2016.
.. [2] S. Rayana. "ODDS Library". Stony Brook University, 2016. https://odds.cs.stonybrook.edu
.. [3] S. Han, X. Hu, H. Huang, M. Jiang and Y. Zhao. "ADBench: Anomaly Detection Benchmark". NeurIPS 2022.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from odeval.data._arff import parse_arff
from odeval.data._errors import DatasetFormatError
from odeval.data.dataset import NOMINAL, NUMERIC, Dataset

__all__ = [
    "DatasetFormatError",
    "SUPPORTED_FORMATS",
    "dataset_format",
    "label_note",
    "load_arff",
    "load_csv",
    "load_dataset",
    "load_mat",
    "load_npz",
]

SUPPORTED_FORMATS = ("arff", "mat", "npz", "csv")

#: Largest decompressed size of a ``.gz`` input (bytes); a bigger file is refused before it fills memory.
MAX_DECOMPRESSED_BYTES = 2 * 2**30
#: Tokens read as a missing value in CSV files (compared case-insensitively after stripping blanks).
CSV_MISSING = frozenset({"", "?", "na", "n/a", "nan", "null", "none"})
_TRUE = frozenset({"true", "t", "yes"})
_FALSE = frozenset({"false", "f", "no"})

PathLike = str | os.PathLike[str]


# --- helpers ------------------------------------------------------------------------------------------
def _file_stem(path: Path) -> str:
    name = path.name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    return name.rsplit(".", 1)[0] if "." in name else name


def dataset_format(path: PathLike) -> str:
    """The format of ``path`` from its extension (``.gz`` ignored): one of :data:`SUPPORTED_FORMATS`.

    Raises
    ------
    DatasetFormatError
        For an unknown extension.
    """
    name = Path(path).name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if ext not in SUPPORTED_FORMATS:
        raise DatasetFormatError(
            path, f"unknown dataset extension {'.' + ext if ext else '(none)'!r}; supported: "
            + ", ".join("." + f for f in SUPPORTED_FORMATS) + " (optionally .gz for .arff/.csv)"
        )
    return ext


def _read(path: Path) -> tuple[bytes, str]:
    """File content (decompressed if ``.gz``) and the sha256 of the file as stored."""
    if path.is_dir():
        raise IsADirectoryError(f"expected a dataset file, got a folder: {path}")
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if path.name.lower().endswith(".gz"):
        raw = _gunzip(path, raw, MAX_DECOMPRESSED_BYTES)
    return raw, digest


def _gunzip(path: Path, raw: bytes, limit: int) -> bytes:
    """Decompress ``raw`` (gzip), refusing more than ``limit`` bytes before memory is spent on them."""
    import io

    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            while chunk := fh.read(1 << 20):
                out += chunk
                if len(out) > limit:
                    raise DatasetFormatError(
                        path, f"decompresses to more than {limit / 2**30:g} GiB (the maximum for .gz inputs, "
                              "odeval.data.loaders.MAX_DECOMPRESSED_BYTES); decompress it yourself to load it")
    except (OSError, EOFError) as exc:
        raise DatasetFormatError(path, f"not a valid gzip file ({exc})") from None
    return bytes(out)


def _decode(raw: bytes) -> tuple[str, str]:
    try:
        return raw.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        return raw.decode("latin-1"), "latin-1"


def _provenance(path: Path, fmt: str, digest: str, load: dict[str, Any]) -> dict[str, Any]:
    return {"source": str(path.resolve()), "format": fmt, "sha256": digest, "load": load}


def _find_name(names: list[str], wanted: str) -> int | None:
    """Index of ``wanted`` in ``names``: exact match first, else a unique case-insensitive match."""
    if wanted in names:
        return names.index(wanted)
    hits = [i for i, n in enumerate(names) if n.lower() == wanted.lower()]
    return hits[0] if len(hits) == 1 else None


def _ids_from_numeric(values: np.ndarray) -> np.ndarray:
    if np.all(values == np.round(values)) and np.all(np.abs(values) < 2**53):
        return values.astype(np.int64)
    return values


def _missing_report(names: list[str] | tuple[str, ...], X: np.ndarray) -> dict[str, Any]:
    per = np.isnan(X).sum(axis=0)
    return {
        "missing_values": int(per.sum()),
        "missing_by_attribute": {names[j]: int(per[j]) for j in np.flatnonzero(per)},
    }


# --- ARFF ---------------------------------------------------------------------------------------------
def load_arff(
    path: PathLike,
    *,
    label_attribute: str | None = "outlier",
    positive: str = "yes",
    id_attribute: str | None = "id",
    name: str | None = None,
    missing_label: str = "error",
) -> Dataset:
    """Load an ARFF file, e.g. one of the Campos et al. (2016) benchmark collection.

    The label attribute becomes ``y`` (parsed by value, whatever the declared order of its categories),
    the id attribute becomes ``ids``; every other attribute is a column of ``X``, in file order.

    Parameters
    ----------
    path : str or path-like
        ``.arff`` or ``.arff.gz`` file.
    label_attribute : str or None, default="outlier"
        Name of the label attribute (matched exactly, else case-insensitively, so ``Outlier`` is found).
        It must exist unless None (then the dataset is unlabelled and every attribute but the id is a
        feature). A nominal label must declare exactly two categories, one of them ``positive``; a numeric
        label must hold only 0 and 1 (1 = outlier).
    positive : str, default="yes"
        The category of a nominal label attribute that marks an outlier.
    id_attribute : str or None, default="id"
        Name of the object-identifier attribute, at any position. With the default ``"id"`` it is optional
        (``ids`` is None when absent); any other name must exist. None keeps an ``id`` attribute as a feature.
    name : str, optional
        Dataset name; default: the file name without extension.
    missing_label : {"error", "unlabelled"}, default="error"
        When ``label_attribute`` is absent: an error, or the data without labels (the note in
        ``provenance["load"]["label_note"]``).

    Returns
    -------
    Dataset
        ``X`` float64 (NaN for ``?``); nominal and string attributes hold category codes
        (``attribute_types`` / ``categories``; string attributes get their categories in order of first
        appearance). ``provenance["load"]`` records the relation name, the id and label attributes, the
        label categories, and missing values per attribute.

    Raises
    ------
    DatasetFormatError
        Malformed file (naming file, line and attribute), missing label / id attribute, non-binary label,
        missing label or id value.

    References
    ----------
    .. [1] Campos et al. (2016), Data Mining and Knowledge Discovery 30(4) — the ARFF collection.
    """
    path = Path(path)
    raw, digest = _read(path)
    text, encoding = _decode(raw)
    content = parse_arff(text, path)
    attrs = content.attributes
    names = [a.name for a in attrs]
    lines = content.lines

    def first_missing_line(col: np.ndarray) -> int:
        return int(lines[int(np.flatnonzero(np.isnan(col))[0])])

    # label
    y = None
    label_idx = None
    label_info: dict[str, Any] = {"label_attribute": None}
    if label_attribute is not None:
        label_idx = _find_name(names, label_attribute)
    if label_attribute is not None and label_idx is None:
        label_info["label_note"] = _absent_label(path, "label attribute", label_attribute, names, missing_label,
                                                 "label_attribute")
    elif label_attribute is not None:
        la, col = attrs[label_idx], content.columns[label_idx]
        if np.isnan(col).any():
            raise DatasetFormatError(path, f"label attribute {la.name!r}: missing value", first_missing_line(col))
        if la.kind == "numeric":
            bad = (col != 0) & (col != 1)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise DatasetFormatError(path, f"numeric label attribute {la.name!r} must be 0/1, found "
                                               f"{col[i]:g}", int(lines[i]))
            y = col == 1
            label_info = {"label_attribute": la.name, "label_type": "numeric 0/1"}
        else:
            cats = la.categories
            if len(cats) != 2 or positive not in cats:
                raise DatasetFormatError(
                    path, f"label attribute {la.name!r} must have two categories, one of them {positive!r} "
                    f"(the outlier value, see positive=); found {list(cats)}", la.line
                )
            y = col == cats.index(positive)
            label_info = {"label_attribute": la.name, "label_categories": list(cats), "positive": positive}

    # id
    ids = None
    id_idx = None
    if id_attribute is not None:
        id_idx = _find_name(names, id_attribute)
        if id_idx is not None and id_idx == label_idx:
            raise DatasetFormatError(path, f"attribute {names[id_idx]!r} cannot be both id and label")
        if id_idx is None and id_attribute != "id":
            raise DatasetFormatError(path, f"no id attribute {id_attribute!r} (attributes: {_short_list(names)})")
        if id_idx is not None:
            ia, col = attrs[id_idx], content.columns[id_idx]
            if np.isnan(col).any():
                raise DatasetFormatError(path, f"id attribute {ia.name!r}: missing value", first_missing_line(col))
            if ia.kind == "numeric":
                ids = _ids_from_numeric(col)
            else:
                ids = np.array(ia.categories, dtype=object)[col.astype(np.int64)].astype(str)

    feat = [j for j in range(len(attrs)) if j not in (label_idx, id_idx)]
    if not feat:
        raise DatasetFormatError(path, "no feature attributes besides the id and label attributes")
    X = np.column_stack([content.columns[j] for j in feat])
    feat_names = tuple(names[j] for j in feat)
    types = tuple(NUMERIC if attrs[j].kind == "numeric" else NOMINAL for j in feat)
    categories = {k: attrs[j].categories for k, j in enumerate(feat) if attrs[j].kind != "numeric"}
    load = {
        "relation": content.relation,
        "encoding": encoding,
        "id_attribute": None if id_idx is None else names[id_idx],
        **label_info,
        "nominal_attributes": [names[j] for j in feat if attrs[j].kind == "nominal"],
        "string_attributes_as_nominal": [names[j] for j in feat if attrs[j].kind == "string"],
        **_missing_report(feat_names, X),
    }
    return Dataset(
        X=X, y=y, name=name or _file_stem(path), attribute_names=feat_names, attribute_types=types,
        categories=categories, ids=ids, provenance=_provenance(path, "arff", digest, load),
    )


def _short_list(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


# --- arrays (MAT, NPZ) ------------------------------------------------------------------------------
def _from_arrays(
    X: Any, y: Any, *, path: Path, fmt: str, digest: str, x_key: str, y_key: str | None, name: str | None,
    extra: dict[str, Any] | None = None,
) -> Dataset:
    X = np.asarray(X)
    if X.ndim != 2:
        raise DatasetFormatError(path, f"{x_key!r} must be a 2-d matrix (objects × attributes), got shape {X.shape}")
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool) or np.iscomplexobj(X):
        raise DatasetFormatError(path, f"{x_key!r} must be real numeric, got dtype {X.dtype}")
    X = np.array(X, dtype=np.float64)
    n, d = X.shape
    inf = np.isinf(X)
    if inf.any():
        r, c = np.argwhere(inf)[0]
        raise DatasetFormatError(path, f"{x_key!r} has an infinite value at row {r}, column {c}")
    labels = None
    if y_key is not None:
        yarr = np.asarray(y)
        if yarr.size != n or (yarr.ndim > 1 and sum(s != 1 for s in yarr.shape) > 1):
            raise DatasetFormatError(path, f"{y_key!r} has shape {yarr.shape}, expected {n} labels (one per row "
                                           f"of {x_key!r})")
        yarr = yarr.reshape(-1)
        if yarr.dtype == bool:
            labels = yarr
        else:
            if not np.issubdtype(yarr.dtype, np.number) or np.iscomplexobj(yarr):
                raise DatasetFormatError(path, f"labels {y_key!r} must be 0/1 numbers, got dtype {yarr.dtype}")
            bad = (yarr != 0) & (yarr != 1)
            if bad.any():
                vals = np.unique(yarr[bad])[:5].tolist()
                first = np.flatnonzero(bad)[:5].tolist()
                raise DatasetFormatError(path, f"labels {y_key!r} are not binary 0/1 (1 = outlier): found value(s) "
                                               f"{vals} at position(s) {first}")
            labels = yarr == 1
    names = tuple(f"att{j + 1}" for j in range(d))
    load = {"x_key": x_key, "y_key": y_key, **(extra or {}), **_missing_report(names, X)}
    return Dataset(X=X, y=labels, name=name or _file_stem(path), attribute_names=names,
                   provenance=_provenance(path, fmt, digest, load))


#: Values of the loaders' ``missing_label``: an absent label attribute is an error, or the data are read unlabelled.
MISSING_LABEL = ("error", "unlabelled")


def _absent_label(path: Path, what: str, wanted: str, present: list[str], missing_label: str, option: str,
                  line: int | None = None) -> str:
    """The label attribute ``wanted`` is not in the file: raise (``missing_label="error"``) or return the note
    recorded in ``provenance["load"]["label_note"]`` when the data are read without labels."""
    if missing_label == "unlabelled":
        return f"no {what} {wanted!r}: read without labels"
    if missing_label != "error":
        raise ValueError(f"missing_label must be one of {MISSING_LABEL}, got {missing_label!r}")
    raise DatasetFormatError(path, f"no {what} {wanted!r} ({what.split()[-1]}s: {_short_list(present)}); name it "
                                   f"({option}=<name>) or load without labels ({option}=None)", line)


def _label_key(path: Path, present: list[str], y_key: str | None, missing_label: str, kind: str,
               container: str) -> tuple[str | None, str | None]:
    """The label array's key of a MAT / npz file and the note when it is absent and ``missing_label`` allows it
    (otherwise :func:`_require_keys` names what is missing)."""
    if y_key is None or y_key in present or missing_label == "error":
        return y_key, None
    return None, _absent_label(path, f"label {kind}", y_key, present, missing_label, "y_key")


def _require_keys(path: Path, present: list[str], x_key: str, y_key: str | None, kind: str, container: str) -> None:
    """The data and label arrays must be among ``present`` (e.g. kind "variable", container "the MAT file")."""
    for key in (x_key, y_key):
        if key is not None and key not in present:
            raise DatasetFormatError(path, f"no {kind} {key!r} in {container} ({kind}s: {present})")


def load_mat(path: PathLike, *, x_key: str = "X", y_key: str | None = "y", name: str | None = None,
             missing_label: str = "error") -> Dataset:
    """Load a MATLAB ``.mat`` file of the ODDS library (Rayana, 2016): a matrix ``X`` and labels ``y``.

    MATLAB v4–v7.2 files are read with :func:`scipy.io.loadmat`; v7.3 files (HDF5, e.g. ODDS
    ``smtp.mat``) need the optional dependency h5py (``pip install 'odeval[mat]'``).

    Parameters
    ----------
    path : str or path-like
    x_key : str, default="X"
        Variable holding the (objects × attributes) data matrix.
    y_key : str or None, default="y"
        Variable holding the labels, 0/1 or logical (1 = outlier); None loads without labels.
    name, missing_label
        As in :func:`load_arff` (``missing_label`` applies when ``y_key`` is absent).

    Returns
    -------
    Dataset
        Attributes are named ``att1`` ... ``attd``.

    Raises
    ------
    DatasetFormatError
        Not a MAT file, missing variable, wrong shapes, non-binary labels, infinite values.
    ImportError
        For a v7.3 file when h5py is not installed.
    """
    path = Path(path)
    raw, digest = _read(path)
    if raw[:128].startswith(b"MATLAB 7.3"):
        X, y, y_key, note = _read_mat_v73(path, x_key, y_key, missing_label)
        extra = {"mat_version": "7.3 (HDF5)"}
    else:
        import scipy.io
        import scipy.sparse

        try:
            m = scipy.io.loadmat(io.BytesIO(raw))
        except Exception as exc:  # scipy raises ValueError, TypeError, MatReadError, ... on bad input
            raise DatasetFormatError(path, f"not a readable MATLAB file ({type(exc).__name__}: {exc})") from None
        present = [k for k in m if not k.startswith("__")]
        y_key, note = _label_key(path, present, y_key, missing_label, "variable", "the MAT file")
        _require_keys(path, present, x_key, y_key, "variable", "the MAT file")
        X = m[x_key]
        if scipy.sparse.issparse(X):
            X = X.toarray()
        y = None if y_key is None else m[y_key]
        if y is not None and scipy.sparse.issparse(y):
            y = y.toarray()
        extra = {"mat_version": "5 (scipy.io.loadmat)"}
    if note:
        extra["label_note"] = note
    return _from_arrays(X, y, path=path, fmt="mat", digest=digest, x_key=x_key, y_key=y_key, name=name,
                        extra=extra)


def _read_mat_v73(path: Path, x_key: str, y_key: str | None,
                  missing_label: str) -> tuple[np.ndarray, np.ndarray | None, str | None, str | None]:
    try:
        import h5py
    except ImportError:
        raise ImportError(
            f"{path} is a MATLAB v7.3 (HDF5) file; reading it needs h5py: pip install 'odeval[mat]'"
        ) from None
    try:
        with h5py.File(path, "r") as f:
            present = sorted(k for k in f if isinstance(f[k], h5py.Dataset))
            y_key, note = _label_key(path, present, y_key, missing_label, "variable", "the MAT file")
            _require_keys(path, present, x_key, y_key, "variable", "the MAT file")
            # MATLAB stores column-major: HDF5 sees the transpose
            X = np.asarray(f[x_key][()]).T
            y = None if y_key is None else np.asarray(f[y_key][()]).T
    except OSError as exc:
        raise DatasetFormatError(path, f"not a readable MATLAB v7.3 (HDF5) file ({exc})") from None
    return X, y, y_key, note


def load_npz(path: PathLike, *, x_key: str = "X", y_key: str | None = "y", name: str | None = None,
             missing_label: str = "error") -> Dataset:
    """Load a NumPy ``.npz`` archive as distributed by ADBench (Han et al., 2022): arrays ``X`` and ``y``.

    Parameters (``missing_label`` included) and result as in :func:`load_mat`, ``x_key`` and ``y_key`` naming
    arrays of the archive (labels 0/1 or bool).

    Raises
    ------
    DatasetFormatError
        Not an npz archive, pickled (object) arrays, missing arrays, wrong shapes, non-binary labels.
    """
    path = Path(path)
    raw, digest = _read(path)
    if not raw.startswith(b"PK"):
        raise DatasetFormatError(path, "not a valid .npz archive (not a zip file)")
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
            y_key, note = _label_key(path, list(npz.files), y_key, missing_label, "array", "the npz archive")
            _require_keys(path, list(npz.files), x_key, y_key, "array", "the npz archive")
            X = npz[x_key]
            y = None if y_key is None else npz[y_key]
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DatasetFormatError(path, f"not a valid .npz archive ({exc})") from None
    except ValueError as exc:  # object arrays need pickle, which is refused for safety
        if isinstance(exc, DatasetFormatError):
            raise
        raise DatasetFormatError(path, f"cannot read arrays ({exc})") from None
    return _from_arrays(X, y, path=path, fmt="npz", digest=digest, x_key=x_key, y_key=y_key, name=name,
                        extra={"label_note": note} if note else None)


# --- CSV ----------------------------------------------------------------------------------------------
def _csv_numeric(col: tuple[str, ...], column: str, lines: list[int], path: Path) -> np.ndarray:
    joined = "\x00".join(col)
    if "_" not in joined and "i" not in joined and "I" not in joined:  # no '1_0', 'inf', 'Infinity'
        try:
            out = np.array(col, dtype=np.float64)
        except ValueError:
            pass
        else:
            if not np.isinf(out).any():
                return out
    out = np.empty(len(col), dtype=np.float64)
    for i, tok in enumerate(col):
        t = tok.strip()
        if t.lower() in CSV_MISSING:
            out[i] = np.nan
            continue
        try:
            if "_" in t or "inf" in t.lower():
                raise ValueError
            out[i] = float(t)
        except ValueError:
            raise DatasetFormatError(path, f"column {column!r}: {t!r} is not a number (all columns but the "
                                           "label and id columns must be numeric)", lines[i]) from None
        if np.isinf(out[i]):
            raise DatasetFormatError(path, f"column {column!r}: {t!r} is out of the float64 range", lines[i])
    return out


def _label_like(col: tuple[str, ...], most: int = 10) -> bool:
    """Whether a non-numeric column looks like labels or classes: at most ``most`` distinct values, not numbers."""
    values = {t.strip() for t in col} - {""}
    return len(values) <= most and all(_float_or_none(v) is None for v in values)


def _csv_labels(col: tuple[str, ...], column: str, positive: Any, lines: list[int], path: Path) -> np.ndarray:
    vals = [t.strip() for t in col]
    for i, v in enumerate(vals):
        if v.lower() in CSV_MISSING:
            raise DatasetFormatError(path, f"label column {column!r}: missing value", lines[i])
    if positive is not None:
        pos = str(positive).strip()
        pf = _float_or_none(pos)
        nums = [_float_or_none(v) for v in vals] if pf is not None else [None]
        if None not in nums:  # numbers compare as numbers: positive=1 matches '1.0'
            y = np.array([x == pf for x in nums], dtype=bool)
        else:
            y = np.array([v == pos for v in vals], dtype=bool)
        if not y.any():
            found = sorted(set(vals))[:10]
            raise DatasetFormatError(path, f"label column {column!r}: no value equals positive={positive!r} "
                                           f"(found: {found})")
        return y
    low = [v.lower() for v in vals]
    distinct = set(low)
    if distinct <= _TRUE | _FALSE:
        return np.array([v in _TRUE for v in low], dtype=bool)
    nums = [_float_or_none(v) for v in vals]
    if all(x in (0.0, 1.0) for x in nums):
        return np.array([x == 1.0 for x in nums], dtype=bool)
    found = sorted(set(vals))[:10]
    first = next(i for i, x in enumerate(nums) if x not in (0.0, 1.0))
    raise DatasetFormatError(
        path, f"label column {column!r} is not binary (0/1 or true/false): found {found}; pass positive=<value> "
        "to name the outlier value", lines[first]
    )


def _float_or_none(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


def load_csv(
    path: PathLike,
    *,
    label_column: str | None = "outlier",
    positive: Any = None,
    id_column: str | None = "id",
    delimiter: str = ",",
    name: str | None = None,
    missing_label: str = "error",
) -> Dataset:
    """Load a CSV table with a header line, numeric attribute columns and a named label column.

    Parameters
    ----------
    path : str or path-like
        ``.csv`` or ``.csv.gz`` file.
    label_column : str or None, default="outlier"
        Name of the label column (exact, else case-insensitive match); it must exist unless None (unlabelled).
        Without ``positive`` its values must be 0/1 (also ``0.0``/``1.0``) or true/false (also t/f, yes/no),
        case-insensitive; 1/true marks an outlier.
    positive : str or number, optional
        The label value marking an outlier; every other value is an inlier. The value must occur.
    id_column : str or None, default="id"
        Object-identifier column. With the default ``"id"`` it is optional; any other name must exist.
    delimiter : str, default=","
    name : str, optional
        Dataset name; default: the file name without extension.
    missing_label : {"error", "unlabelled"}, default="error"
        When ``label_column`` is absent: an error, or the data without labels (the note in
        ``provenance["load"]["label_note"]``).

    Returns
    -------
    Dataset
        Every column but the label and id columns is a numeric attribute. Missing values (empty, ``?``,
        ``NA``, ``N/A``, ``NaN``, ``null``, ``None``) become NaN and are reported in ``provenance["load"]``.

    Raises
    ------
    DatasetFormatError
        Missing header or label column, rows with the wrong number of fields, non-numeric attribute values,
        non-binary labels, missing labels or ids (naming the line and column).
    """
    path = Path(path)
    raw, digest = _read(path)
    text, encoding = _decode(raw)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, skipinitialspace=True)
    header: list[str] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            if header is None:
                header = [h.strip() for h in row]
                header_line = reader.line_num
                continue
            if len(row) != len(header):
                raise DatasetFormatError(path, f"row has {len(row)} fields, expected {len(header)} (as in the "
                                               "header)", reader.line_num)
            rows.append(row)
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise DatasetFormatError(path, f"CSV syntax error: {exc}", reader.line_num) from None
    if header is None:
        raise DatasetFormatError(path, "empty file: no header line")
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise DatasetFormatError(path, f"column {dup!r} appears twice in the header", header_line)
    if not rows:
        raise DatasetFormatError(path, "no data rows after the header", header_line)
    cols = list(zip(*rows, strict=True))

    label_idx = None
    y = None
    label_note = None
    if label_column is not None:
        label_idx = _find_name(header, label_column)
    if label_column is not None and label_idx is None:
        label_note = _absent_label(path, "label column", label_column, header, missing_label, "label_column",
                                   header_line)
    elif label_column is not None:
        y = _csv_labels(cols[label_idx], header[label_idx], positive, lines, path)
    id_idx = None
    ids = None
    if id_column is not None:
        id_idx = _find_name(header, id_column)
        if id_idx is not None and id_idx == label_idx:
            raise DatasetFormatError(path, f"column {header[id_idx]!r} cannot be both id and label", header_line)
        if id_idx is None and id_column != "id":
            raise DatasetFormatError(path, f"no id column {id_column!r} (columns: {_short_list(header)})",
                                     header_line)
        if id_idx is not None:
            raw_ids = [t.strip() for t in cols[id_idx]]
            for i, v in enumerate(raw_ids):
                if v.lower() in CSV_MISSING:
                    raise DatasetFormatError(path, f"id column {header[id_idx]!r}: missing value", lines[i])
            nums = [_float_or_none(v) for v in raw_ids]
            ids = (_ids_from_numeric(np.array(nums, dtype=np.float64)) if None not in nums
                   else np.array(raw_ids, dtype=str))
    feat = [j for j in range(len(header)) if j not in (label_idx, id_idx)]
    if not feat:
        raise DatasetFormatError(path, "no attribute columns besides the id and label columns", header_line)
    parsed = []
    for j in feat:
        try:
            parsed.append(_csv_numeric(cols[j], header[j], lines, path))
        except DatasetFormatError as exc:
            if label_note is None or not _label_like(cols[j]):
                raise
            # read without labels because the default label column is absent: a column of a few words may be it
            raise DatasetFormatError(path, f"{exc.problem}; there is no label column {label_column!r}: if this is "
                                           "the label column, name it (label_column=<name>)", exc.line) from None
    X = np.column_stack(parsed)
    names = tuple(header[j] for j in feat)
    load = {
        "encoding": encoding,
        "delimiter": delimiter,
        "id_attribute": None if id_idx is None else header[id_idx],
        "label_attribute": None if label_idx is None else header[label_idx],
        "positive": None if positive is None else str(positive),
        **({"label_note": label_note} if label_note else {}),
        **_missing_report(names, X),
    }
    return Dataset(X=X, y=y, name=name or _file_stem(path), attribute_names=names, ids=ids,
                   provenance=_provenance(path, "csv", digest, load))


# --- dispatch -----------------------------------------------------------------------------------------
_LOADERS = {"arff": load_arff, "mat": load_mat, "npz": load_npz, "csv": load_csv}
_LABEL_OPTION = {"arff": "label_attribute", "mat": "y_key", "npz": "y_key", "csv": "label_column"}


def load_dataset(path: PathLike, *, format: str | None = None, require_labels: bool = True,
                 **options: Any) -> Dataset:
    """Load a dataset file, choosing the loader by extension (``.arff``, ``.mat``, ``.npz``, ``.csv``).

    Parameters
    ----------
    path : str or path-like
    format : {"arff", "mat", "npz", "csv"}, optional
        Override the extension.
    require_labels : bool, default=True
        False for work that does not need labels (IREOS, EM/MV, scoring, inspection, preparation without
        downsampling): a file without the loader's *default* label attribute (``outlier``; ``y`` in MAT/NPZ) is
        read as it is, unlabelled, and ``provenance["load"]["label_note"]`` says so (:func:`label_note`). A
        label attribute named explicitly must still exist. This is the one place that decides whether a
        missing label attribute is an error.
    **options
        Passed to the format's loader (:func:`load_arff`, :func:`load_mat`, :func:`load_npz`,
        :func:`load_csv`). ``label=`` is accepted as a format-independent alias of ``label_attribute``
        (ARFF), ``label_column`` (CSV) and ``y_key`` (MAT, NPZ).

    Returns
    -------
    Dataset

    Raises
    ------
    DatasetFormatError
        Unknown extension or malformed file.
    TypeError
        An option the chosen loader does not take.

    Examples
    --------
    >>> ds = load_dataset("WBC_withoutdupl_norm_v01.arff")  # doctest: +SKIP
    >>> ds.n_objects, ds.n_attributes, ds.n_outliers  # doctest: +SKIP
    (223, 9, 10)
    """
    if format is None:
        fmt = dataset_format(path)
    elif format in _LOADERS:
        fmt = format
    else:
        raise ValueError(f"format must be one of {SUPPORTED_FORMATS}, got {format!r}")
    if "label" in options:
        options[_LABEL_OPTION[fmt]] = options.pop("label")
    if not require_labels and _LABEL_OPTION[fmt] not in options:
        options["missing_label"] = "unlabelled"
    return _LOADERS[fmt](path, **options)


def label_note(dataset: Dataset) -> str | None:
    """The note of a dataset read without labels because its file has no label attribute (``load_dataset(...,
    require_labels=False)``), e.g. ``"no label column 'outlier': read without labels"``; None otherwise."""
    note = dataset.provenance.get("load", {}).get("label_note") if isinstance(dataset.provenance, dict) else None
    return None if note is None else str(note)
