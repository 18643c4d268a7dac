"""The meta-learned selector inside ``odeval select`` (:func:`meta_selection`): its pick with its out-of-sample
record, from :mod:`odeval.labelfree.meta` (kept apart so that the model module imports no selector code)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from odeval.labelfree.meta import load_model, validated
from odeval.labelfree.selection import Selection, run_selector

__all__ = ["meta_selection"]


def meta_selection(scores: Any, names: Sequence[str], X: Any, seed: int = 0) -> Selection:
    """The ``meta`` selector's :class:`~odeval.labelfree.selection.Selection` for ``odeval select``, with its
    out-of-sample record in the note; no choice (``index`` None, the reason in the note) where it cannot run
    (no model file, a table too small for the meta-features, its pick outside the pool)."""
    try:
        sel = run_selector("meta", scores, list(names), X=X, seed=seed)
    except (ValueError, FileNotFoundError) as exc:
        return Selection("meta", None, note=f"meta-learned selector not run: {exc}")
    val = load_model().meta.get("validation", {})
    p = val.get("p_vs_default_knn10")
    p_txt = "no validation recorded" if p is None else f"p = {p:.2g}"
    verdict = (f"validated better than kNN k = 10 out of sample ({p_txt}); it makes the recommendation"
               if validated() else
               f"NOT shown better than kNN k = 10 out of sample ({p_txt}, leave-one-base-dataset-out over "
               f"{val.get('n_bases')} base datasets): reported, not used to recommend")
    return Selection("meta", sel.index, criterion=sel.criterion, note=f"{sel.note}; {verdict}")
