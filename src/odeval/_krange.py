"""The one k-range syntax of odeval (CLI options and study files), parsed without expanding.

Accepted forms (combinable with commas in a string): ``"10"``, ``"1..100"`` or ``"1:100"`` (inclusive),
``"2..50:2"`` or ``"2:50:2"`` (with a step), ``"1,5,10"``, an integer, or a list / tuple of integers (a TOML
array). A :class:`KRange` keeps the ranges as (first, last, step) triples; :meth:`KRange.values` caps them at an
upper bound (N − 1 for a data set of N objects) *before* expanding, so ``"1..1000000000"`` never becomes a list
of a billion integers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KRange", "MAX_EXPANDED", "format_ks", "parse_k_range"]

# Expanding without an upper bound refuses ranges with more values than this.
MAX_EXPANDED = 1_000_000

_PART = re.compile(r"^(\d+)(?:(?:\.\.|:)(\d+)(?::(\d+))?)?$")
_SYNTAX = "use K, A..B or A:B (inclusive), A..B:STEP or A:B:STEP, or a comma-separated list such as 1,5,10"


@dataclass(frozen=True)
class KRange:
    """A set of k values as (first, last, step) triples, first ≤ last, step ≥ 1 (nothing expanded)."""

    parts: tuple[tuple[int, int, int], ...]

    @property
    def min(self) -> int:
        return min(a for a, _, _ in self.parts)

    @property
    def max(self) -> int:
        return max(a + (b - a) // s * s for a, b, s in self.parts)

    def count(self) -> int:
        """Number of distinct values (computed without expanding when the parts do not overlap)."""
        total = sum((b - a) // s + 1 for a, b, s in self.parts)
        return total if total > MAX_EXPANDED or len(self.parts) == 1 else len(self.values())

    def capped(self, upper: int) -> KRange | None:
        """The values ≤ ``upper`` (None if there are none); nothing is expanded."""
        parts = tuple((a, min(b, upper), s) for a, b, s in self.parts if a <= upper)
        return KRange(parts) if parts else None

    def above(self, lower: int) -> KRange | None:
        """The values ≥ ``lower`` (None if there are none)."""
        parts = []
        for a, b, s in self.parts:
            if b < lower:
                continue
            first = a if a >= lower else a + -(-(lower - a) // s) * s
            if first <= b:
                parts.append((first, b, s))
        return KRange(tuple(parts)) if parts else None

    def values(self, upper: int | None = None) -> tuple[int, ...]:
        """Sorted unique k values, only those ≤ ``upper`` when given (capped before expanding)."""
        rng = self if upper is None else self.capped(upper)
        if rng is None:
            return ()
        count = sum((b - a) // s + 1 for a, b, s in rng.parts)  # an upper bound (parts may overlap)
        if count > MAX_EXPANDED:
            raise ValueError(f"k range {rng} has {count} values (more than {MAX_EXPANDED}); give a smaller range")
        out: set[int] = set()
        for a, b, s in rng.parts:
            out.update(range(a, b + 1, s))
        return tuple(sorted(out))

    def canonical(self) -> Any:
        """A JSON-able identity for hashes: the expanded list for ordinary ranges, the text for huge ones."""
        count = sum((b - a) // s + 1 for a, b, s in self.parts)
        return list(self.values()) if count <= 10_000 else str(self)

    def __str__(self) -> str:
        return ",".join(str(a) if a == b else f"{a}..{b}" + (f":{s}" if s > 1 else "") for a, b, s in self.parts)


def parse_k_range(value: Any) -> KRange:
    """Parse a k specification (see the module docstring) into a :class:`KRange`; ``ValueError`` if invalid.

    A :class:`KRange` is returned unchanged.
    """
    if isinstance(value, KRange):
        return value
    if isinstance(value, bool):
        raise ValueError(f"k must be an integer, a list or a range such as '1..100', got {value!r}")
    parts: list[tuple[int, int, int]] = []
    if isinstance(value, int) or (hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0):
        parts.append((int(value), int(value), 1))
    elif isinstance(value, list | tuple):
        if not value:
            raise ValueError("k list is empty")
        for v in value:
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError(f"k list must hold integers, got {value!r}")
            parts.append((v, v, 1))
    elif isinstance(value, str):
        items = [p.strip().replace(" ", "") for p in value.split(",")]
        if not value.strip() or any(not p for p in items):
            raise ValueError(f"k range {value!r}: {_SYNTAX}")
        for item in items:
            m = _PART.match(item)
            if not m:
                raise ValueError(f"k range {value!r}: {_SYNTAX}")
            lo = int(m.group(1))
            hi = int(m.group(2)) if m.group(2) is not None else lo
            step = int(m.group(3)) if m.group(3) is not None else 1
            if lo > hi or step < 1:
                raise ValueError(f"k range {value!r} is empty ({item}: first > last or step < 1)")
            parts.append((lo, hi, step))
    else:
        raise ValueError(f"k must be an integer, a list or a range such as '1..100', got {value!r}")
    if min(a for a, _, _ in parts) < 1:
        raise ValueError(f"k values must be ≥ 1, got {value!r}")
    return KRange(tuple(sorted(set(parts))))


def format_ks(ks: Iterable[int] | KRange) -> str:
    """Compact text of k values: runs of consecutive values as ``A..B`` (``"1..3,7,9..12"``)."""
    if isinstance(ks, KRange):
        return str(ks)
    vals: Sequence[int] = sorted(set(int(k) for k in ks))
    out, i = [], 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(str(vals[i]) if i == j else f"{vals[i]}..{vals[j]}")
        i = j + 1
    return ",".join(out)
