"""HTML building blocks shared by the report's pages: escaping, tables, figures, the page and its CSV context.

:mod:`odeval.report.html` (the study report), :mod:`odeval.report.internal` and :mod:`odeval.report.selection`
(the label-free sections) build their pages from these; this module imports none of them, so the report
package has no import circle. Every value written into the HTML goes through :func:`escape`.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from odeval import __version__

__all__ = ["CSS", "Page", "ReportContext", "cards", "escape", "format_value", "html_figure", "html_table",
           "nav_html", "page_html", "svg_data_uri"]

CSS = """
:root { --fg:#1d2733; --muted:#5b6b7c; --line:#dfe5ec; --accent:#1f4e79; --bg:#ffffff; --soft:#f5f8fb; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color:var(--fg); background:var(--bg); }
header.top { background:var(--accent); color:#fff; padding:18px 0 14px; }
header.top .wrap { display:flex; align-items:baseline; gap:18px; flex-wrap:wrap; }
header.top h1 { margin:0; font-size:22px; font-weight:600; }
header.top a { color:#dbe8f5; }
header.top .sub { color:#c9d9ea; font-size:13px; }
.wrap { max-width:1120px; margin:0 auto; padding:0 24px; }
main.wrap { padding-top:8px; padding-bottom:48px; }
nav.toc { font-size:13px; margin:14px 0 4px; color:var(--muted); }
nav.toc a { margin-right:14px; display:inline-block; }
h2 { font-size:19px; margin:34px 0 8px; padding-bottom:4px; border-bottom:2px solid var(--line); }
h3 { font-size:16px; margin:22px 0 6px; }
p.note, .muted { color:var(--muted); font-size:13px; }
a { color:var(--accent); }
table { border-collapse:collapse; font-size:13px; margin:6px 0 4px; font-variant-numeric: tabular-nums; }
th, td { padding:4px 10px; border-bottom:1px solid var(--line); text-align:right; white-space:nowrap; }
th { background:var(--soft); font-weight:600; position:sticky; top:0; white-space:normal; vertical-align:bottom; }
td.txt, th.txt { text-align:left; }
tbody tr:nth-child(even) td { background:#fafcfd; }
tbody tr:hover td { background:#eef4fa; }
.tablebox { overflow-x:auto; max-width:100%; }  /* a table wider than the page scrolls inside its own box */
.csv { font-size:12px; }
.cards { display:flex; gap:12px; flex-wrap:wrap; margin:12px 0; }
.card { background:var(--soft); border:1px solid var(--line); border-radius:6px; padding:8px 14px; min-width:120px; }
.card .v { font-size:20px; font-weight:600; color:var(--accent); }
.card .l { font-size:12px; color:var(--muted); }
figure { margin:14px 0; }
figure img { max-width:100%; height:auto; border:1px solid var(--line); border-radius:4px; background:#fff; }
figcaption { font-size:12.5px; color:var(--muted); max-width:860px; }
/* two figures side by side only where each still gets its natural width (7 in = 672 px): never shrink text */
.grid2 { display:grid; grid-template-columns: repeat(auto-fit, minmax(min(660px, 100%), 1fr)); gap:8px 22px; }
td.sym { text-align:center; font-size:14px; }
td.up { color:#1e7b34; } td.down { color:#b03a2e; }
details summary { cursor:pointer; color:var(--accent); font-size:13px; margin:6px 0; }
footer { color:var(--muted); font-size:12px; border-top:1px solid var(--line); margin-top:40px; padding-top:10px; }
"""


def escape(value: Any) -> str:
    """HTML-escape any value (quotes too)."""
    return html.escape("" if value is None else str(value), quote=True)


def format_value(value: Any, digits: int = 3) -> str:
    """A table cell's text: '' for missing values, yes/no for booleans, floats with ``digits`` decimals (whole
    numbers from 1000 on without)."""
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        if np.isnan(value):
            return ""
        if float(value).is_integer() and abs(value) >= 1000:
            return f"{int(value):d}"
        return f"{value:.{digits}f}"
    return str(value)


def svg_data_uri(fig: Any) -> str:
    """A matplotlib figure as a ``data:`` SVG URI, byte-stable (fixed hash salt, no date, text kept as text)."""
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "odeval", "text.parse_math": False}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


@dataclass
class Page:
    """Accumulates the HTML body of one page."""

    title: str
    parts: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.parts.append(text)


@dataclass
class ReportContext:
    """Where a report is written (``out``) and the CSV exports written so far (file → description)."""

    out: Path
    tables: dict[str, str] = field(default_factory=dict)  # csv file → description

    def csv(self, frame: pd.DataFrame, name: str, description: str) -> str:
        """Write ``tables/<name>.csv``; return its path relative to the report root."""
        rel = f"tables/{name}.csv"
        frame.to_csv(self.out / rel, index=isinstance(frame.index, pd.MultiIndex) or frame.index.name is not None)
        self.tables[rel] = description
        return rel


def html_table(
    frame: pd.DataFrame,
    *,
    csv: str | None = None,
    prefix: str = "",
    digits: int = 3,
    links: Mapping[str, Callable[[Any], str | None]] | None = None,
    sym_columns: bool = False,
    index: bool = False,
) -> str:
    """Render a DataFrame as an escaped HTML table (+ a link to its CSV export)."""
    df = frame.reset_index() if index else frame
    links = links or {}
    # float columns holding only whole numbers (counts, nominal percentages) print without decimals
    whole = {c for c in df.columns if pd.api.types.is_float_dtype(df[c])
             and all(pd.isna(v) or float(v).is_integer() for v in df[c])}
    head = "".join(
        f'<th class="{"txt" if not pd.api.types.is_numeric_dtype(df[c]) else ""}">{_breakable(c)}</th>'
        for c in df.columns
    )
    body = []
    for row in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, row, strict=True):
            text = escape(format_value(v, 0 if c in whole else digits))
            numeric = pd.api.types.is_numeric_dtype(df[c])
            cls = "" if numeric else "txt"
            if sym_columns and c != df.columns[0]:
                cls = "sym " + ("up" if v in ("▲", "△") else "down" if v in ("▼", "▽") else "")
            if c in links:
                href = links[c](v)
                if href:
                    text = f'<a href="{escape(href)}">{text}</a>'
            cells.append(f'<td class="{cls.strip()}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    link = f'<div class="csv"><a href="{escape(prefix + csv)}">CSV</a></div>' if csv else ""
    return (f'<div class="tablebox"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
            f"{link}")


def _breakable(name: Any) -> str:
    """A column name, escaped, that may wrap after its underscores: headers wrap, so that a table of many
    columns (the IREOS and EM/MV picks) fits the page instead of overflowing it."""
    return escape(name).replace("_", "_<wbr>")


def html_figure(fig_fn: Callable[[], Any], caption: str, alt: str) -> str:
    """Render the figure ``fig_fn()`` draws as an <img> with a data URI; a failure becomes a visible note.

    ``caption`` is HTML (escape the names in it); ``alt`` is escaped here."""
    try:
        fig = fig_fn()
    except (ValueError, KeyError) as exc:
        return f'<p class="note">Figure not available ({escape(alt)}): {escape(exc)}</p>'
    uri = svg_data_uri(fig)
    return f'<figure><img src="{uri}" alt="{escape(alt)}"><figcaption>{caption}</figcaption></figure>'


def nav_html(sections: Sequence[tuple[str, str]]) -> str:
    """The top navigation of a page: one link per (anchor, label), in page order."""
    links = "".join(f'<a href="#{escape(anchor)}">{escape(label)}</a>' for anchor, label in sections)
    return f'<nav class="toc">{links}</nav>'


def page_html(page: Page, *, home: str | None, subtitle: str) -> str:
    """The whole HTML document of ``page``: header (title, subtitle, link back to ``home``), body, footer."""
    back = f'<a href="{escape(home)}">← report index</a>' if home else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{escape(page.title)}</title><style>{CSS}</style></head><body>"
        f'<header class="top"><div class="wrap"><h1>{escape(page.title)}</h1>'
        f'<span class="sub">{escape(subtitle)}</span>{back}</div></header>'
        f'<main class="wrap">{"".join(page.parts)}'
        f"<footer>Generated by odeval {escape(__version__)}. Analysis after Campos et al. (2016), DAMI 30(4), §5; "
        "statistics after Demšar (2006), JMLR 7. This page uses no scripts and no network.</footer>"
        "</main></body></html>\n"
    )


def cards(items: Sequence[tuple[str, Any]]) -> str:
    """A row of (label, value) cards, e.g. the study summary."""
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="v">{escape(v)}</div><div class="l">{escape(label)}</div></div>'
        for label, v in items
    ) + "</div>"
