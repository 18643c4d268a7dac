"""Writing prepared datasets: ARFF in the layout of the Campos et al. (2016) collection, plus a JSON sidecar.

The ARFF layout is the published one::

    @RELATION 'Annthyroid, without duplicates, with normalization, downsampled to 05 pct, v01'

    @ATTRIBUTE 'att1' real
    ...
    @ATTRIBUTE 'id' real
    @ATTRIBUTE 'outlier' {'no','yes'}

    @DATA
    0.75,0.0,...,1.0,'no'

Numbers are written with Python's shortest round-trip representation (``repr``), so reading the file back
gives the same float64 values bit for bit. Missing values are written ``?``; nominal attributes keep their
declared categories. The sidecar ``<name>.json`` holds the dataset's summary and its full provenance (source
and every preparation step with its parameters and result).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from odeval.data.dataset import NOMINAL, Dataset

__all__ = ["describe_variant", "write_arff", "write_dataset", "write_provenance"]


def _quote(s: str) -> str:
    return "'" + str(s).replace("\\", "\\\\").replace("'", "\\'") + "'"


def describe_variant(ds: Dataset) -> str:
    """A relation line in the words of the published files, from ``provenance["variant"]`` or the name."""
    from odeval.data.catalogue import parse_variant_name

    flags = ds.provenance.get("variant") if isinstance(ds.provenance, dict) else None
    if not flags:
        parsed = parse_variant_name(ds.name)
        flags = {"base": ds.name} if parsed is None else {**asdict(parsed), "downsampled": parsed.downsampled}
    parts = [str(flags.get("base") or ds.name)]
    if flags.get("deduplicated"):
        parts.append("without duplicates")
    if flags.get("normalized"):
        norm = flags.get("normalization")
        parts.append("with standardization (z-score)" if norm == "zscore" else "with normalization")
    cat = flags.get("categorical")
    if cat:
        parts.append({"catremoved": "categorical attributes removed", "1ofn": "1-of-n", "idf": "idf",
                      "original": "original version"}.get(cat, cat))
    pct = flags.get("outlier_pct")
    if pct is not None:
        p = f"{int(pct):02d}" if float(pct).is_integer() else f"{pct:g}"
        parts.append(f"downsampled to {p} pct" if flags.get("downsampled") else f"{p} pct of outliers")
    if flags.get("version") is not None:
        parts.append(f"v{int(flags['version']):02d}")
    return ", ".join(parts)


def _format_column(col: np.ndarray, j: int, ds: Dataset) -> list[str]:
    if ds.attribute_types[j] == NOMINAL:
        cats = ds.categories[j]
        return ["?" if np.isnan(v) else _quote(cats[int(v)]) for v in col]
    return ["?" if v != v else repr(v) for v in col.tolist()]


def write_arff(ds: Dataset, path: str | os.PathLike[str], *, relation: str | None = None) -> Path:
    """Write ``ds`` as ARFF in the published layout (attributes, then ``id``, then ``outlier``).

    Parameters
    ----------
    ds : Dataset
    path : path
        Output file; parent folders are created.
    relation : str, optional
        The ``@RELATION`` text; default :func:`describe_variant`.

    Returns
    -------
    Path
        The written file. Objects without ids get ids 1..n. Unlabelled data get no ``outlier`` attribute.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lower = [n.lower() for n in ds.attribute_names]
    for reserved in ("id", "outlier"):
        if reserved in lower:
            raise ValueError(f"write_arff: dataset {ds.name!r} has an attribute named {reserved!r}, which the "
                             "layout reserves for the object id / label; rename it first")
    lines = [f"@RELATION {_quote(relation or describe_variant(ds))}", ""]
    for j, name in enumerate(ds.attribute_names):
        if ds.attribute_types[j] == NOMINAL:
            decl = "{" + ",".join(_quote(c) for c in ds.categories[j]) + "}"
        else:
            decl = "real"
        lines.append(f"@ATTRIBUTE {_quote(name)} {decl}")
    lines.append("@ATTRIBUTE 'id' real")
    if ds.y is not None:
        lines.append("@ATTRIBUTE 'outlier' {'no','yes'}")
    lines += ["", "@DATA"]
    cols = [_format_column(ds.X[:, j], j, ds) for j in range(ds.n_attributes)]
    ids = np.arange(1, ds.n_objects + 1, dtype=np.float64) if ds.ids is None else np.asarray(ds.ids)
    if np.issubdtype(ids.dtype, np.number):
        cols.append([repr(float(v)) for v in ids.tolist()])
    else:
        cols.append([_quote(v) for v in ids.tolist()])
    if ds.y is not None:
        cols.append(["'yes'" if v else "'no'" for v in ds.y.tolist()])
    rows = (",".join(vals) for vals in zip(*cols, strict=True)) if cols else ()
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
        for row in rows:
            f.write(row + "\n")
    return path


def _finite(o: Any) -> Any:
    """Replace non-finite floats (not valid JSON) by None, recursively."""
    if isinstance(o, float | np.floating):
        return float(o) if np.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list | tuple):
        return [_finite(v) for v in o]
    return o


def _json_default(o: Any) -> Any:
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON-serialisable: {type(o).__name__}")


def write_provenance(ds: Dataset, path: str | os.PathLike[str], *, data_file: str | os.PathLike[str] | None = None
                     ) -> Path:
    """Write the JSON sidecar: summary (name, sizes), the sha256 of ``data_file`` if given, and provenance."""
    from odeval import __version__

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc: dict[str, Any] = {
        "name": ds.name,
        "n_objects": ds.n_objects,
        "n_outliers": ds.n_outliers,
        "n_attributes": ds.n_attributes,
        "attribute_names": list(ds.attribute_names),
        "odeval_version": __version__,
    }
    if data_file is not None:
        data = Path(data_file)
        doc["data_file"] = data.name
        doc["sha256"] = hashlib.sha256(data.read_bytes()).hexdigest()
    doc["provenance"] = ds.provenance
    text = json.dumps(_finite(doc), indent=2, default=_json_default, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def write_dataset(ds: Dataset, directory: str | os.PathLike[str], *, relation: str | None = None
                  ) -> tuple[Path, Path]:
    """Write ``<directory>/<ds.name>.arff`` and its sidecar ``<directory>/<ds.name>.json``."""
    directory = Path(directory)
    arff = write_arff(ds, directory / f"{ds.name}.arff", relation=relation)
    side = write_provenance(ds, directory / f"{ds.name}.json", data_file=arff)
    return arff, side
