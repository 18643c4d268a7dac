"""Plain-text primitives shared by the renderers: aligned name/value lines and tables of named rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["named_rows", "name_value_lines"]


def name_value_lines(values: Mapping[str, Any], fmt: Callable[[Any], str]) -> list[str]:
    """``name  value`` lines, names left-aligned to the longest."""
    width = max(map(len, values))
    return [f"{name:<{width}}  {fmt(value)}" for name, value in values.items()]


def named_rows(names: Sequence[str], headers: Sequence[str], rows: Sequence[Mapping[str, Any]],
               widths: Mapping[str, int], cell: Callable[[Any, int], str], *, first: str = "column") -> list[str]:
    """A header line and one line per row: the row's name left-aligned under ``first``, then each header's
    cell right-aligned in ``widths[header]`` characters (``cell(value, width)`` formats it)."""
    width = max(len(first), *map(len, names))
    lines = [f"{first:<{width}}  " + "  ".join(f"{h:>{widths[h]}}" for h in headers)]
    for name, row in zip(names, rows, strict=True):
        lines.append(f"{name:<{width}}  " + "  ".join(cell(row[h], widths[h]) for h in headers))
    return lines
