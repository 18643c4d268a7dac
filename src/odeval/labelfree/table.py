"""The edges of ``odeval select``: read an unlabelled table (labels held back or absent), read held-back labels,
write the outputs whole or not at all.

Formats: CSV, TSV (``.tsv``, ``.tab``), Parquet (``.parquet``, ``.pq``), ARFF, NPZ, MAT — the first, ARFF, NPZ and
MAT through :func:`odeval.data.load_dataset`. A label column is never a feature: the one named by
``label`` (``--check-labels COLUMN``) is read as held-back labels, and without it a column named like the
format's default label (``outlier`` in CSV/TSV/ARFF/Parquet, ``y`` in NPZ/MAT) is left out of the features
and reported, so an ARFF file of the Campos collection can be given as it is.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from odeval.data import Dataset, load_dataset
from odeval.data.dataset import NOMINAL, NUMERIC

__all__ = ["TABLE_FORMATS", "load_table", "read_labels", "select_file", "write_outputs"]

TABLE_FORMATS = ("csv", "tsv", "parquet", "arff", "npz", "mat")
_EXT = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet", ".arff": "arff",
        ".npz": "npz", ".mat": "mat"}
DEFAULT_LABEL = {"csv": "outlier", "tsv": "outlier", "parquet": "outlier", "arff": "outlier", "npz": "y", "mat": "y"}


def table_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    fmt = _EXT.get(Path(name).suffix)
    if fmt is None:
        raise ValueError(f"unknown table extension {Path(name).suffix or '(none)'!r}; supported: "
                         + ", ".join(sorted(_EXT)))
    return fmt


def _load_parquet(path: Path, label: str | None) -> Dataset:
    import hashlib

    import pandas as pd

    try:
        frame = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises its own types; one line naming the file is what counts
        raise ValueError(f"cannot read Parquet: {str(exc).splitlines()[0]}") from None
    y = None
    if label is not None:
        hits = [c for c in frame.columns if str(c) == label] or [c for c in frame.columns
                                                                  if str(c).lower() == label.lower()]
        if not hits:
            raise ValueError(f"no label column {label!r} (columns: {', '.join(map(str, frame.columns[:12]))})")
        col = frame.pop(hits[0])
        if col.isna().any():
            raise ValueError(f"label column {label!r}: missing value at row {int(np.flatnonzero(col.isna())[0])}")
        values = col.astype(str).str.strip().str.lower()
        if not values.isin(["0", "1", "0.0", "1.0", "true", "false"]).all():
            bad = values[~values.isin(["0", "1", "0.0", "1.0", "true", "false"])].iloc[0]
            raise ValueError(f"label column {label!r}: value {bad!r} is not 0/1 or true/false")
        y = values.isin(["1", "1.0", "true"]).to_numpy()
    cols, types, cats = [], [], {}
    for j, name in enumerate(frame.columns):
        s = frame[name]
        if s.dtype.kind in "biuf":
            cols.append(s.to_numpy(dtype=np.float64, na_value=np.nan))
            types.append(NUMERIC)
        else:  # strings, categories, booleans: a nominal attribute (encoded by the preparation)
            codes, uniques = pd.factorize(s.astype("string"), sort=True)
            cols.append(np.where(codes < 0, np.nan, codes).astype(np.float64))
            types.append(NOMINAL)
            cats[j] = tuple(str(u) for u in uniques)
    X = np.column_stack(cols) if cols else np.zeros((len(frame), 0))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Dataset(X=X, y=y, name=path.stem, attribute_names=tuple(map(str, frame.columns)),
                   attribute_types=tuple(types), categories=cats,
                   provenance={"source": str(path.resolve()), "format": "parquet", "sha256": digest, "load": {}})


def _drop_attribute(ds: Dataset, name: str) -> tuple[Dataset, str | None]:
    hits = [j for j, a in enumerate(ds.attribute_names) if a.lower() == name.lower()]
    if not hits:
        return ds, None
    keep = [j for j in range(ds.n_attributes) if j != hits[0]]
    cats = {keep.index(j): c for j, c in ds.categories.items() if j in keep}
    return ds.with_changes(X=ds.X[:, keep], attribute_names=tuple(ds.attribute_names[j] for j in keep),
                           attribute_types=tuple(ds.attribute_types[j] for j in keep),
                           categories=cats), ds.attribute_names[hits[0]]


def load_table(path: str | os.PathLike[str], *, label: str | None = None) -> tuple[Dataset, list[str]]:
    """Read a table for :func:`odeval.labelfree.recommend.recommend`.

    Parameters
    ----------
    path : path-like
    label : str, optional
        A label column held back for the check (it must exist); ``y`` of the result. Without it, a column
        named like the format's default label is left out of the features (and noted), the rest is read as is.

    Returns
    -------
    (Dataset, list of str)
        The table and notes ("column 'outlier' left out of the features").

    Raises
    ------
    ValueError, OSError
        One line naming the cause (the caller adds the file name where the message lacks it).
    """
    p = Path(path)
    fmt = table_format(p)
    notes: list[str] = []
    if fmt == "parquet":
        ds = _load_parquet(p, label)
    elif fmt in ("npz", "mat"):
        ds = load_dataset(p, label=label)
    else:
        opts: dict[str, Any] = {"label": label}
        if fmt == "tsv":
            opts.update(format="csv", delimiter="\t")
        ds = load_dataset(p, **opts)
    if label is None:
        ds, dropped = _drop_attribute(ds, DEFAULT_LABEL[fmt])
        if dropped is not None:
            notes.append(f"column {dropped!r} looks like labels: left out of the features and not used "
                         f"(--check-labels {dropped} evaluates the recommendation against it)")
        else:
            notes.append("no label column: the table is read as unlabelled")
    return ds, notes


def read_labels(path: str | os.PathLike[str]) -> np.ndarray:
    """Held-back labels from a file: one 0/1 (or true/false) per line, or a CSV/TSV with a header whose only
    column, or whose ``outlier`` / ``label`` column, holds them."""
    import pandas as pd

    p = Path(path)
    sep = "\t" if p.suffix.lower() in (".tsv", ".tab") else ","
    frame = pd.read_csv(p, sep=sep, header=None, dtype=str, skip_blank_lines=True)
    first = [str(v).strip().lower() for v in frame.iloc[0]]
    if not set(first) <= {"0", "1", "0.0", "1.0", "true", "false"}:  # a header line
        frame.columns = first
        frame = frame.iloc[1:]
        pick = [c for c in ("outlier", "label") if c in frame.columns]
        if len(frame.columns) > 1 and not pick:
            raise ValueError(f"{p}: several columns and none named 'outlier' or 'label'")
        col = frame[pick[0]] if pick else frame.iloc[:, 0]
    elif frame.shape[1] == 1:
        col = frame.iloc[:, 0]
    else:
        raise ValueError(f"{p}: expected one label per line, got {frame.shape[1]} columns")
    values = col.astype(str).str.strip().str.lower()
    ok = values.isin(["0", "1", "0.0", "1.0", "true", "false"])
    if not ok.all():
        raise ValueError(f"{p}: label {values[~ok].iloc[0]!r} at data line {int(np.flatnonzero(~ok)[0]) + 1} is not "
                         "0/1 or true/false")
    return values.isin(["1", "1.0", "true"]).to_numpy()


def select_file(path: str | os.PathLike[str], *, check_labels: str | None = None, settings: Any = None,
                progress: Any = None) -> tuple[Any, list[str]]:
    """Load ``path`` and run :func:`odeval.labelfree.recommend.recommend` on it.

    ``check_labels``: a column of the table or a label file (:func:`read_labels`), evaluated only after the
    selection. Errors are one line starting with the file name.
    """
    from odeval.labelfree.recommend import SelectSettings, recommend

    p = Path(path)
    try:
        column = check_labels if check_labels is not None and not Path(check_labels).is_file() else None
        ds, notes = load_table(p, label=column)
        labels = ds.y if column is not None else (read_labels(check_labels) if check_labels is not None else None)
        rec = recommend(ds, settings=settings or SelectSettings(), labels=labels, progress=progress)
    except (ValueError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        for prefix in (f"{p.stem}: ", f"dataset {p.stem!r}: "):  # the file name below says it already
            msg = msg.removeprefix(prefix)
        raise ValueError(msg if str(p) in msg else f"{p}: {msg}") from None
    return rec, notes


def write_outputs(rec: Any, out_dir: str | os.PathLike[str], *, fmt: str = "csv",
                  page: Any = None) -> list[Path]:
    """Write the recommendation's files into ``out_dir`` whole or not at all.

    Files: ``scores.{csv,parquet}`` (row, id, the recommended scoring, its outlier probability and flag, the
    ensemble), ``select.json`` (:meth:`Recommendation.to_dict`), and ``select.html`` when ``page`` is given
    (``page(rec, path)``, e.g. :func:`odeval.report.select_page.write_select_page`: the report is a later stage, so
    the caller passes it in). They are written into a temporary folder beside ``out_dir`` and moved into place at
    the end; ``out_dir`` must not exist or be empty.
    """
    import pandas as pd

    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out}: exists and is not an empty folder; give a new one")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o777 & ~umask)  # mkdtemp makes it private; the folder is the user's output
    try:
        frame = pd.DataFrame({"row": np.arange(rec.scores.size)})
        if rec.ids is not None:
            frame["id"] = rec.ids
        frame[rec.recommended] = rec.scores
        frame["probability"] = rec.probabilities
        frame["flagged"] = rec.probabilities > rec.threshold["cutoff"]
        frame["ensemble"] = rec.ensemble_scores
        table = tmp / f"scores.{fmt}"
        if fmt == "parquet":
            frame.to_parquet(table, index=False)
        else:
            frame.to_csv(table, index=False)
        (tmp / "select.json").write_text(json.dumps(rec.to_dict(), indent=1, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
        names = [f"scores.{fmt}", "select.json"]
        if page is not None:
            page(rec, tmp / "select.html")
            names.append("select.html")
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return [out / name for name in names]
