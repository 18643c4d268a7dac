"""A small, strict and fast parser for (dense) ARFF files.

Written for the files of the Campos et al. (2016) collection, but following the general ARFF grammar of
Weka: ``%`` comment lines, case-insensitive ``@relation`` / ``@attribute`` / ``@data`` keywords, quoted
(``'...'`` or ``"..."``, backslash escapes) names and values, ``numeric`` / ``real`` / ``integer``,
nominal ``{a, b, ...}`` and ``string`` attributes, and ``?`` for a missing value. Sparse data lines
(``{0 1, 3 2}``), instance weights, and ``date`` / ``relational`` attributes are rejected with a clear
error. Every error names the file, the line and the attribute concerned.

Speed: data lines are split with ``str.split`` (falling back to a quote-aware tokenizer only for lines
whose quoted values contain commas) and each column is converted in one vectorised step, with a slow
per-value path only to handle missing values or to report the exact position of a bad value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from odeval.data._errors import DatasetFormatError

__all__ = ["ArffAttribute", "ArffContent", "parse_arff"]

_NUMERIC_TYPES = frozenset({"numeric", "real", "integer"})
_QUOTES = "'\""
_DECLARATION = re.compile(r"(@[^\s{]*)\s*(.*)$")
_ESCAPE = re.compile(r"\\(.)")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}


@dataclass
class ArffAttribute:
    """One declared attribute: ``kind`` is ``"numeric"``, ``"nominal"`` or ``"string"``."""

    name: str
    kind: str
    line: int
    categories: tuple[str, ...] = ()


@dataclass
class ArffContent:
    """A parsed ARFF file.

    ``columns[j]`` is a float64 array: the value for numeric attributes, the category code (index into
    ``attributes[j].categories``) for nominal and string attributes, NaN where the value is missing.
    ``lines[i]`` is the 1-based file line of data row ``i``.
    """

    relation: str | None
    attributes: list[ArffAttribute]
    columns: list[np.ndarray]
    lines: np.ndarray
    missing: list[int] = field(default_factory=list)


def _unescape(inner: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), inner)


def _unquote(token: str, path: Path, lineno: int, what: str) -> tuple[str, bool]:
    """Strip blanks and one level of quotes from ``token``; returns (value, was_quoted)."""
    t = token.strip()
    if t and t[0] in _QUOTES:
        q = t[0]
        i = 1
        while i < len(t) and t[i] != q:
            i += 2 if t[i] == "\\" else 1
        if i >= len(t):
            raise DatasetFormatError(path, f"unbalanced quote in {what}: {t!r}", lineno)
        if i != len(t) - 1:
            raise DatasetFormatError(path, f"text after the closing quote in {what}: {t!r}", lineno)
        return _unescape(t[1:-1]), True
    return t, False


def _split_raw(s: str, path: Path, lineno: int, what: str) -> list[str]:
    """Split ``s`` at commas outside quotes; tokens keep their quotes (stripped of blanks only).

    A quote character opens a quoted value only at the start of a value, as in Weka's tokenizer.
    """
    tokens: list[str] = []
    start = 0
    quote = None
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in _QUOTES and not s[start:i].strip():
            quote = c
        elif c == ",":
            tokens.append(s[start:i].strip())
            start = i + 1
        i += 1
    if quote is not None:
        raise DatasetFormatError(path, f"unbalanced quote {quote} in {what}", lineno)
    tokens.append(s[start:].strip())
    return tokens


def _parse_attribute(rest: str, path: Path, lineno: int) -> ArffAttribute:
    """Parse what follows ``@attribute``: a (possibly quoted) name and a type."""
    rest = rest.strip()
    if not rest:
        raise DatasetFormatError(path, "@attribute without a name", lineno)
    if rest[0] in _QUOTES:
        q = rest[0]
        i = 1
        while i < len(rest) and rest[i] != q:
            i += 2 if rest[i] == "\\" else 1
        if i >= len(rest):
            raise DatasetFormatError(path, "unbalanced quote in attribute name", lineno)
        name = _unescape(rest[1:i])
        type_spec = rest[i + 1 :].strip()
    else:
        parts = rest.split(None, 1)
        name = parts[0]
        if "{" in name:  # e.g. @attribute class{a,b}
            name, brace, tail = name.partition("{")
            type_spec = brace + tail + (" " + parts[1] if len(parts) > 1 else "")
        else:
            type_spec = parts[1].strip() if len(parts) > 1 else ""
    if not type_spec:
        raise DatasetFormatError(path, f"attribute {name!r} has no type", lineno)
    low = type_spec.lower()
    if low in _NUMERIC_TYPES:
        return ArffAttribute(name, "numeric", lineno)
    if low == "string":
        return ArffAttribute(name, "string", lineno)
    if type_spec.startswith("{"):
        if not type_spec.endswith("}"):
            raise DatasetFormatError(path, f"nominal attribute {name!r}: missing closing '}}'", lineno)
        what = f"the categories of attribute {name!r}"
        raw = _split_raw(type_spec[1:-1], path, lineno, what)
        cats = tuple(_unquote(t, path, lineno, what)[0] for t in raw)
        if cats == ("",):
            raise DatasetFormatError(path, f"nominal attribute {name!r} declares no categories", lineno)
        if "" in cats:
            raise DatasetFormatError(path, f"nominal attribute {name!r} declares an empty category", lineno)
        if len(set(cats)) != len(cats):
            dup = sorted({c for c in cats if cats.count(c) > 1})
            raise DatasetFormatError(path, f"nominal attribute {name!r} declares category {dup[0]!r} twice", lineno)
        return ArffAttribute(name, "nominal", lineno, cats)
    kind = low.split()[0]
    if kind in ("date", "relational"):
        raise DatasetFormatError(path, f"attribute {name!r}: {kind} attributes are not supported", lineno)
    raise DatasetFormatError(path, f"attribute {name!r}: unknown type {type_spec!r}", lineno)


def _bad_numeric_token(tok: str) -> bool:
    # float() also accepts '1_000', 'inf', 'infinity'; ARFF does not.
    return "_" in tok or "inf" in tok.lower()


def _token_value(tok: str, attr: ArffAttribute, line: int, path: Path) -> str | None:
    """The value of one data token of ``attr``: unquoted, or None for the missing value ``?``."""
    t = tok.strip()
    return None if t == "?" else _unquote(t, path, line, f"attribute {attr.name!r}")[0]


def _convert_numeric(col: tuple[str, ...], attr: ArffAttribute, lines: np.ndarray, path: Path) -> np.ndarray:
    joined = "\x00".join(col)
    if "_" not in joined and "i" not in joined and "I" not in joined:  # no '1_0', 'inf', 'Infinity'
        try:
            return np.array(col, dtype=np.float64)
        except ValueError:
            pass  # missing values, quotes or a bad value: resolve value by value below
    out = np.empty(len(col), dtype=np.float64)
    for i, tok in enumerate(col):
        t = _token_value(tok, attr, int(lines[i]), path)
        if t is None:
            out[i] = np.nan
            continue
        try:
            if _bad_numeric_token(t):
                raise ValueError
            out[i] = float(t)
        except ValueError:
            shown = tok.strip()
            raise DatasetFormatError(
                path, f"attribute {attr.name!r} (numeric): {shown!r} is not a number", int(lines[i])
            ) from None
    return out


def _category_map(categories: tuple[str, ...]) -> dict[str, float]:
    """Raw token -> code, for the unquoted and the two quoted spellings of each category."""
    m: dict[str, float] = {}
    for code, c in enumerate(categories):
        esc = c.replace("\\", "\\\\")
        for spelled in (c, "'" + esc.replace("'", "\\'") + "'", '"' + esc.replace('"', '\\"') + '"'):
            m.setdefault(spelled, float(code))
    m["?"] = np.nan
    return m


def _convert_nominal(col: tuple[str, ...], attr: ArffAttribute, lines: np.ndarray, path: Path) -> np.ndarray:
    m = _category_map(attr.categories)
    try:
        return np.fromiter(map(m.__getitem__, col), dtype=np.float64, count=len(col))
    except KeyError:
        pass  # blanks, unusual quoting or an unknown value: resolve value by value below
    index = {c: float(k) for k, c in enumerate(attr.categories)}
    out = np.empty(len(col), dtype=np.float64)
    for i, tok in enumerate(col):
        code = m.get(tok)
        if code is None:
            v = _token_value(tok, attr, int(lines[i]), path)
            if v is None:
                code = np.nan
            else:
                code = index.get(v)
                if code is None:
                    declared = ", ".join(repr(c) for c in attr.categories)
                    raise DatasetFormatError(
                        path,
                        f"attribute {attr.name!r}: unknown nominal value {v!r} (declared: {declared})",
                        int(lines[i]),
                    )
        out[i] = code
    return out


def _convert_string(col: tuple[str, ...], attr: ArffAttribute, lines: np.ndarray, path: Path) -> np.ndarray:
    """String attribute -> codes; categories in order of first appearance (stored on ``attr``)."""
    index: dict[str, int] = {}
    out = np.empty(len(col), dtype=np.float64)
    for i, tok in enumerate(col):
        v = _token_value(tok, attr, int(lines[i]), path)
        out[i] = np.nan if v is None else index.setdefault(v, len(index))
    attr.categories = tuple(index)
    return out


def parse_arff(text: str, path: str | Path) -> ArffContent:
    """Parse the text of a dense ARFF file.

    Parameters
    ----------
    text : str
        The file content.
    path : str or Path
        Used in error messages only.

    Returns
    -------
    ArffContent

    Raises
    ------
    DatasetFormatError
        For any deviation from the grammar, naming the line and the attribute.
    """
    path = Path(path)
    lines = text.split("\n")
    relation = None
    attributes: list[ArffAttribute] = []
    data_start = None
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line[0] == "%":
            continue
        if line[0] != "@":
            raise DatasetFormatError(path, f"unexpected line before @data: {line[:60]!r}", i + 1)
        m = _DECLARATION.match(line)
        keyword, rest = m.group(1).lower(), m.group(2)
        if keyword == "@relation":
            relation = _unquote(rest, path, i + 1, "the relation name")[0]
        elif keyword == "@attribute":
            attr = _parse_attribute(rest, path, i + 1)
            if any(a.name == attr.name for a in attributes):
                raise DatasetFormatError(path, f"attribute {attr.name!r} is declared twice", i + 1)
            attributes.append(attr)
        elif keyword == "@data":
            if rest.strip():
                raise DatasetFormatError(path, f"unexpected text after @data: {rest.strip()[:60]!r}", i + 1)
            data_start = i + 1
            break
        elif keyword == "@end":
            raise DatasetFormatError(path, "relational attributes (@end) are not supported", i + 1)
        else:
            raise DatasetFormatError(path, f"unknown declaration {keyword!r}", i + 1)
    if data_start is None:
        raise DatasetFormatError(path, "no @data section found (end of file)", max(1, len(lines) - (lines[-1] == "")))
    if not attributes:
        raise DatasetFormatError(path, "no @attribute declared before @data", data_start)

    d = len(attributes)
    rows: list[list[str]] = []
    line_numbers: list[int] = []
    for i in range(data_start, len(lines)):
        line = lines[i].strip()
        if not line or line[0] == "%":
            continue
        if line[0] == "{":
            raise DatasetFormatError(path, "sparse ARFF data lines ({index value, ...}) are not supported", i + 1)
        toks = line.split(",")
        if len(toks) != d:
            if "'" in line or '"' in line:
                toks = _split_raw(line, path, i + 1, "data line")
            if len(toks) != d:
                raise DatasetFormatError(path, f"data line has {len(toks)} values, expected {d} "
                                               f"(one per @attribute)", i + 1)
        rows.append(toks)
        line_numbers.append(i + 1)
    if not rows:
        raise DatasetFormatError(path, "no data lines after @data", data_start)

    line_arr = np.asarray(line_numbers, dtype=np.int64)
    columns: list[np.ndarray] = []
    for attr, col in zip(attributes, zip(*rows, strict=True), strict=True):
        if attr.kind == "numeric":
            values = _convert_numeric(col, attr, line_arr, path)
        elif attr.kind == "nominal":
            values = _convert_nominal(col, attr, line_arr, path)
        else:
            values = _convert_string(col, attr, line_arr, path)
        columns.append(values)
    for attr, values in zip(attributes, columns, strict=True):
        inf = np.isinf(values)
        if inf.any():
            i = int(np.flatnonzero(inf)[0])
            raise DatasetFormatError(path, f"attribute {attr.name!r}: value out of the float64 range "
                                           f"({rows[i][attributes.index(attr)].strip()!r})", int(line_arr[i]))
    missing = [int(np.isnan(c).sum()) for c in columns]
    return ArffContent(relation, attributes, columns, line_arr, missing)
