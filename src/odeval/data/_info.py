"""Basic facts about a loaded dataset, for ``odeval datasets info`` (and anyone else who needs them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from odeval.data.dataset import NOMINAL, Dataset

__all__ = ["dataset_info"]


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


# --- text rendering (odeval datasets info) ------------------------------------------------------------
def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    return str(v) if isinstance(v, int) else f"{v:.6g}"


def _span(lo: int, hi: int) -> str:
    return str(lo) if lo == hi else f"{lo}–{hi}"


def attribute_rows(info: dict[str, Any]) -> list[dict[str, str]]:
    """Rows for the attribute table: consecutive attributes with equal type, range and missing count share
    one row (``"att2 … att9 (8)"``), which keeps wide normalised datasets readable."""
    groups: list[list[dict[str, Any]]] = []
    for a in info["attributes"]:
        key = (a["type"], a["min"], a["max"], a["n_missing"], len(a.get("categories", ())))
        if groups and groups[-1][0]["_key"] == key:
            groups[-1].append({**a, "_key": key})
        else:
            groups.append([{**a, "_key": key}])
    rows = []
    for g in groups:
        first, last = g[0], g[-1]
        label = first["name"] if len(g) == 1 else f"{first['name']} … {last['name']} ({len(g)})"
        distinct = [a["n_distinct"] for a in g]
        if first["type"] == NOMINAL:
            typ, lo, hi = f"nominal({len(first['categories'])})", "—", "—"
        else:
            typ, lo, hi = first["type"], _fmt(first["min"]), _fmt(first["max"])
        rows.append({"attribute": label, "type": typ, "min": lo, "max": hi,
                     "missing": str(first["n_missing"]), "distinct": _span(min(distinct), max(distinct))})
    return rows


def render_info(info: dict[str, Any], console: Any, *, max_rows: int = 20) -> None:
    """Print ``info`` (from :func:`dataset_info`) on a :class:`rich.console.Console`.

    ``max_rows`` limits the attribute table (0 = no limit); the JSON form has every attribute.
    """
    from rich.table import Table
    from rich.text import Text

    console.print(Text(info["name"], style="bold"))
    if info["n_outliers"] is None:
        outl = "unlabelled"
    else:
        outl = f"{info['n_outliers']} ({info['outlier_pct']:.2f} %)"
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="cyan")
    facts.add_column(overflow="fold")
    facts.add_row("source", str(info["source"]))
    facts.add_row("format", str(info["format"]))
    facts.add_row("objects (N)", str(info["n_objects"]))
    facts.add_row("attributes (d)", str(info["n_attributes"]))
    facts.add_row("outliers (|O|)", outl)
    facts.add_row("duplicate vectors", str(info["n_duplicates"]))
    facts.add_row("missing values", f"{info['n_missing']} (in {info['n_objects_with_missing']} objects)")
    facts.add_row("nominal attributes", ", ".join(info["nominal_attributes"]) or "none")
    facts.add_row("id attribute", info["id_attribute"] or "none")
    console.print(facts)
    rows = attribute_rows(info)
    table = Table(box=None, pad_edge=False, header_style="bold")
    for col, justify in (("attribute", "left"), ("type", "left"), ("min", "right"), ("max", "right"),
                         ("missing", "right"), ("distinct", "right")):
        table.add_column(col, justify=justify, overflow="fold", no_wrap=col != "attribute")
    shown = rows if max_rows == 0 else rows[:max_rows]
    for r in shown:
        table.add_row(r["attribute"], r["type"], r["min"], r["max"], r["missing"], r["distinct"])
    console.print(table)
    if len(shown) < len(rows):
        console.print(Text(f"… {len(rows) - len(shown)} more rows (--max-rows 0 shows all, --json gives "
                           "every attribute)", style="dim"))
