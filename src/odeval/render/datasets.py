"""Text of ``odeval datasets``: ``info`` (a rich table per file), ``prepare`` (one line per written variant and
the preparation steps) and ``list`` (the catalogue's files, or what is present and missing)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from odeval.data import DatasetInfos
from odeval.data.catalogue import ENV_VAR, Variant, vendored_dir
from odeval.data.dataset import NOMINAL, Dataset

__all__ = ["attribute_rows", "catalogue_presence", "infos_json", "prepared_steps", "prepared_variant", "render_info",
           "variant_lines", "variants_json"]


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


def infos_json(infos: DatasetInfos) -> str:
    """Every file's facts (or error) as a JSON list."""
    return json.dumps(infos.entries, indent=2)


# --- odeval datasets prepare -------------------------------------------------------------------------------
def prepared_variant(variant: Dataset, arff: Path, sidecar: Path) -> str:
    """The line of one written variant: ``out/x.arff  N=… |O|=… d=…  (+ x.json)``."""
    return f"{arff}  N={variant.n_objects} |O|={variant.n_outliers} d={variant.n_attributes}  (+ {sidecar.name})"


_STEP_NOTES = {
    "handle_missing": lambda r: f"dropped {len(r['dropped_attributes'])} attribute(s), "
                                f"{r['dropped_objects']['count']} object(s)",
    "remove_duplicates": lambda r: f"removed {r['n_removed']} duplicate(s) "
                                   f"({r.get('removed_outliers', 0)} outliers, "
                                   f"{r['n_label_conflicts']} label conflict(s))",
    "encode_categorical": lambda r: f"{len(r['encoded_attributes'])} nominal attribute(s) → "
                                    f"{r['n_attributes_after']} attributes",
    "define_outliers": lambda r: f"{r['n_outliers']} outliers, {r['n_inliers']} inliers",
}


def prepared_steps(variant: Dataset) -> list[str]:
    """One line per preparation step of ``variant``'s provenance that has something to say."""
    lines = []
    for step in variant.provenance.get("steps", []):
        note = _STEP_NOTES.get(step["step"])
        if note:
            lines.append(f"  {step['step']}: {note(step['result'])}")
    return lines


# --- odeval datasets list ----------------------------------------------------------------------------------
def variants_json(found: Sequence[Variant]) -> str:
    return json.dumps([v.to_dict() for v in found], indent=2)


def variant_lines(found: Sequence[Variant]) -> list[str]:
    """One line per selected file (name, base, flags, path) and the count."""
    lines = []
    for v in found:
        flags = [v.variant or v.collection]
        if v.outlier_pct is not None:
            flags.append(f"{v.outlier_pct}%")
        if v.version is not None:
            flags.append(f"v{v.version:02d}")
        lines.append(f"{v.name:45s} {v.base:14s} {' '.join(flags):28s} {v.path}")
    lines.append(f"{len(found)} file(s)")
    return lines


def _base_lines(entry: dict[str, Any], vendored: bool, show_missing: bool) -> list[str]:
    b = entry["base"]
    status = "ok" if not entry["missing"] else ("MISSING" if not entry["present"] else "incomplete")
    if vendored:
        status = "vendored"
    size = f"N={b.n_objects} |O|={b.n_outliers} d={b.n_attributes}"
    lines = [f"  {b.name:22s} {len(entry['present']):3d}/{len(b.files):<3d} {status:10s} {size}"]
    if vendored:
        lines += [f"      {name}" for name in entry["present"]]
    elif entry["missing"] and (show_missing or len(entry["missing"]) <= 3):
        lines += [f"      missing: {m}" for m in entry["missing"]]
    elif entry["missing"]:
        lines.append(f"      missing: {entry['missing'][0]} ... ({len(entry['missing'])} files; --missing lists all)")
    return lines


def catalogue_presence(rep: dict[str, Any], *, collections: Sequence[str] = (), show_missing: bool = False
                       ) -> list[str]:
    """The lines of :func:`odeval.data.catalogue.presence`: per collection, each base dataset's files present /
    expected, its status and size, and the missing files (all with ``show_missing``, else up to three)."""
    if rep["vendored"]:
        lines = [f"no data directory found (--data-dir, ${ENV_VAR}, ../shared/datasets); showing the vendored "
                 f"datasets in {vendored_dir()}"]
    else:
        lines = [f"datasets in {rep['where']}"]
    current = None
    for entry in rep["bases"]:
        b = entry["base"]
        if collections and b.collection not in collections:
            continue
        if b.collection != current:
            current = b.collection
            lines.append(f"\n{current}:")
        lines += _base_lines(entry, rep["vendored"], show_missing)
    if rep["unregistered"]:
        lines.append(f"\nnot in the catalogue: {', '.join(rep['unregistered'])}")
    return lines
