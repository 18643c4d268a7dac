"""Text of ``odeval results``: the studies of a results store (``results studies``)."""

from __future__ import annotations

import json

import pandas as pd

__all__ = ["studies_json", "studies_lines"]

_HEADERS = ("hash", "units", "datasets", "when", "name")


def _when(value: object) -> str:
    """The creation time of a study to the minute (the store keeps it in UTC)."""
    stamp = pd.Timestamp(value) if value is not None and not pd.isna(value) else None
    return "" if stamp is None else stamp.strftime("%Y-%m-%d %H:%M")


def studies_lines(studies: pd.DataFrame, store: str) -> list[str]:
    """One line per study of a store (:meth:`odeval.bench.store.ResultStore.studies`), oldest first: hash, units
    linked, dataset variants, when it was registered, name; then how to report one of them."""
    if studies.empty:
        return [f"{store}: no study"]
    rows = [[str(r.study_hash), str(int(r.n_units)), str(int(r.n_datasets)), _when(r.created), str(r.name)]
            for r in studies.itertuples(index=False)]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(_HEADERS)]

    def line(cells: list[str] | tuple[str, ...]) -> str:
        parts = [f"{c:<{w}}" if i in (0, 3, 4) else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths,
                                                                                            strict=True))]
        return "  ".join(parts).rstrip()

    lines = [f"{store}: {len(rows)} stud{'y' if len(rows) == 1 else 'ies'}", line(_HEADERS), *map(line, rows)]
    if len(rows) > 1:
        lines.append("report one of them: odeval report STORE -o DIR --study HASH|NAME")
    return lines


def studies_json(studies: pd.DataFrame) -> str:
    """The studies as a JSON list (``study_hash``, ``name``, ``n_units``, ``n_datasets``, ``created``, ``source``)."""
    return json.dumps([{"study_hash": str(r.study_hash), "name": str(r.name), "n_units": int(r.n_units),
                        "n_datasets": int(r.n_datasets), "created": _when(r.created), "source": str(r.source)}
                       for r in studies.itertuples(index=False)], indent=1, ensure_ascii=False)
