"""What to expect of a label-free selector: its measured record on the labelled Campos collection.

The record ships as ``data/campos_record.json`` (built by ``benchmarks/select_record.py`` from the tables of
docs/model-selection.md, "IREOS with the pinned classifier": 262 variants, the twelve methods × k = 1..100, IREOS
with the classifier the ``ireos`` selectors and the guarded rule run). For each selector: the mean ROC AUC of its
pick, the pick's mean percentile among the candidates (50 = a random candidate), and one-sided Wilcoxon p-values
against a random candidate and against kNN with k = 10. :func:`expectations` turns those rows into plain sentences
that never claim more than the test showed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["RECORD_FILE", "Expectation", "best_by_record", "campos_record", "expectations", "meta_validated"]

RECORD_FILE = Path(__file__).resolve().parent / "data" / "campos_record.json"
#: Significance level of the sentences ("better than ...").
ALPHA = 0.05
#: The record row each selector of ``odeval select`` is judged by, where its name differs: the pruned IREOS pick
#: is judged by IREOS of all candidates (no record exists for the pruned set), the guarded rule by its held-out
#: line (the variants not used to set its threshold).
RECORD_ROW = {"ireos": "ireos", "ireos-guarded": "ireos-guarded"}


@cache
def campos_record() -> dict[str, Any]:
    """The parsed record file (cached)."""
    return json.loads(RECORD_FILE.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Expectation:
    """One selector's record and the sentence that reads it.

    Attributes
    ----------
    selector : str
    mean_roc_auc, mean_percentile : float or None
        Of its pick (or scoring) over the collection's variants.
    p_vs_random, p_vs_reference : float or None
        One-sided Wilcoxon p-values (selector better than a random candidate / than kNN k = 10).
    n_variants : int
    basis : str
        Which rows of the record (e.g. "all candidates, 262 variants", "held-out variants").
    sentence : str
        The plain reading: "better than a random candidate (p = …); not better than kNN k = 10 (p = …)".
    """

    selector: str
    mean_roc_auc: float | None
    mean_percentile: float | None
    p_vs_random: float | None
    p_vs_reference: float | None
    n_variants: int
    basis: str
    sentence: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _sentence(selector: str, p_random: float | None, p_ref: float | None, reference: str) -> str:
    if selector == reference:
        return "the reference: a fixed default, no selection"
    parts = []
    if p_random is not None:
        parts.append(f"better than a random candidate (p = {p_random:.2g})" if p_random < ALPHA else
                     f"not shown better than a random candidate (p = {p_random:.2g})")
    if p_ref is not None:
        parts.append(f"better than kNN k = 10 (p = {p_ref:.2g})" if p_ref < ALPHA else
                     f"not better than kNN k = 10 (p = {p_ref:.2g})")
    return "; ".join(parts) or "no test recorded"


def _meta_row() -> tuple[dict[str, Any] | None, int, str]:
    """The meta-learned selector's record: its own held-out validation (leave-one-base-dataset-out), shipped with its
    model (:mod:`odeval.labelfree.meta`), not a row of the Campos record."""
    from odeval.labelfree.meta import load_model

    try:
        val = load_model().meta.get("validation", {})
    except FileNotFoundError:
        return None, 0, ""
    if "p_vs_default_knn10" not in val:
        return None, 0, ""
    return ({k: val.get(k) for k in ("mean_roc_auc", "mean_percentile", "p_vs_random", "p_vs_default_knn10")},
            int(val.get("n_variants", 0)), f"held out, leave-one-base-dataset-out over {val.get('n_bases')} base "
            f"datasets ({val.get('n_variants')} variants; Campos + ODDS + ADBench; p over base datasets)")


def meta_validated() -> bool:
    """True when the shipped meta-selector beat kNN k = 10 out of sample (one-sided Wilcoxon over the held-out base
    datasets, p < 0.05; :func:`odeval.labelfree.meta.validated`): only then may it make the recommendation
    (:func:`best_by_record`)."""
    from odeval.labelfree.meta import validated

    return validated()


def _row(selector: str) -> tuple[dict[str, Any] | None, int, str]:
    if selector == "meta":
        return _meta_row()
    rec = campos_record()
    table = rec["candidates"]["all"]
    if selector == "ireos-guarded":
        # the registered selector's own run on the variants its threshold was not read off; an older record
        # without it has the rule applied to IREOS of all candidates ("held out")
        for subset, basis in (("registered, held out", "all candidates, the held-out variants, the selector's own run"),
                              ("held out", "all candidates, the held-out variants")):
            held = [g for g in table["ireos_guarded"] if g["subset"] == subset]
            if held:
                g = held[0]
                return ({"mean_roc_auc": g["mean_roc_auc"], "mean_percentile": g["mean_percentile"],
                         "p_vs_random": g["p_vs_random"], "p_vs_default_knn10": g["p_vs_default_knn10"]},
                        g["n_variants"], basis)
        return None, 0, ""
    name = RECORD_ROW.get(selector, selector)
    for row in table["selectors"]:
        if row["selector"] == name:
            basis = "all candidates" + (" (IREOS of every candidate, not a pruned set)" if name == "ireos" else "")
            return row, int(rec["n_variants"]), basis
    return None, 0, ""


def expectations(selectors: Sequence[str]) -> list[Expectation]:
    """The record of each of ``selectors`` (those without a recorded row get a sentence saying so)."""
    reference = campos_record()["reference"]
    out = []
    for sel in selectors:
        row, n, basis = _row(sel)
        if row is None:
            out.append(Expectation(sel, None, None, None, None, 0, "", "no record on the Campos collection"))
            continue
        p_ref = None if sel == reference else row.get("p_vs_default_knn10")
        out.append(Expectation(sel, row.get("mean_roc_auc"), row.get("mean_percentile"), row.get("p_vs_random"),
                               p_ref, n, basis, _sentence(sel, row.get("p_vs_random"), p_ref, reference)))
    return out


def best_by_record(selectors: Sequence[str]) -> str:
    """Of ``selectors``, the one whose pick had the highest mean percentile on the collection (ties: mean ROC
    AUC, then the order given). Selectors without a record are never chosen; raises if none has one. The
    meta-learned selector ``meta`` is chosen when it is among them and :func:`meta_validated`, else never."""
    if "meta" in selectors and meta_validated():
        return "meta"  # validated better than kNN k = 10 out of sample, the best of the Campos record
    best, key = None, None
    for sel in selectors:
        if sel == "meta":  # its held-out record is on another candidate grid: not comparable by percentile
            continue
        row, _, _ = _row(sel)
        if row is None or row.get("mean_percentile") is None:
            continue
        k = (row["mean_percentile"], row.get("mean_roc_auc") or 0.0)
        if key is None or k > key:
            best, key = sel, k
    if best is None:
        raise ValueError(f"none of {list(selectors)} has a record on the Campos collection")
    return best
