"""Similarity of scorings and ensembles for the report: one :class:`ScoreComparison` per base dataset.

For the first variant (by name) of every base dataset the report shows, when the store kept the score vectors
(study option ``keep_scores``):

* the class-balanced similarity matrix (Schubert et al. 2012, Sect. 3; ground truth as row 0) of a readable
  subset of the scorings — each method at its best k for the report's measure plus the smallest and largest
  stored k (:func:`odeval.bench.ensembles.select_scorings`);
* the greedy ensemble of all stored scorings of that variant (Schubert et al. 2012, Sect. 4.3) against the best
  single scoring, the naive ensemble and random ensembles (Table 4 style). When the variant has more than
  ``max_values`` stored scores (R · N), every method's k values are thinned evenly (one k in s) and the
  report says so.

The computations live in :mod:`odeval.bench.ensembles` (store reader + :mod:`odeval.scaling` +
:mod:`odeval.compare`); this module only chooses what the report shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["ScoreComparison", "comparisons_from_store"]


@dataclass(frozen=True)
class ScoreComparison:
    """What the report shows for one base dataset (see the module docstring).

    ``similarity`` / ``ensemble`` are :class:`odeval.bench.ensembles.StoreSimilarity` /
    :class:`~odeval.bench.ensembles.StoreEnsemble` or None; ``note`` explains what is missing or thinned.
    """

    variant: str
    similarity: Any = None
    ensemble: Any = None
    note: str | None = None


def _thin(runs: pd.DataFrame, n_objects: int, max_values: int) -> tuple[pd.DataFrame, int]:
    """Keep every s-th stored k of each (method, params, metric) so that R · N ≤ max_values."""
    step = max(1, math.ceil(len(runs) * n_objects / max_values))
    if step == 1:
        return runs, 1
    keep = runs.groupby(["method", "params", "metric"], sort=False).cumcount() % step == 0
    return runs[keep], step


def comparisons_from_store(
    store: str | Path,
    variants: dict[str, str],
    *,
    measure: str = "roc_auc",
    n_random: int = 1000,
    seed: int = 0,
    rate: float = 0.01,
    max_values: int = 20_000_000,
) -> dict[str, ScoreComparison]:
    """Similarity matrix and greedy ensemble per base dataset.

    Parameters
    ----------
    store : path
        The results store.
    variants : dict
        Base dataset → the variant to analyse (the report passes the first variant by name).
    measure : str
        Defines each method's best k in the similarity subset.
    n_random, seed, rate
        Settings of :func:`odeval.bench.ensembles.ensemble_from_store`.
    max_values : int
        Budget of stored scores (R · N) read for one ensemble; beyond it the k values are thinned.

    Returns
    -------
    dict
        Base dataset → :class:`ScoreComparison`. A variant without stored scores, or whose scorings cannot
        be compared, gets a comparison with only a ``note`` (the reason).
    """
    from odeval.bench.ensembles import (
        ensemble_from_store,
        read_scorings,
        select_scorings,
        similarity_from_store,
        stored_runs,
    )

    out: dict[str, ScoreComparison] = {}
    for base, variant in sorted(variants.items()):
        try:
            runs = stored_runs(store, variant, measure=measure)
        except ValueError as exc:  # NoStoredScoresError (study option keep_scores) or an unknown variant
            out[base] = ScoreComparison(variant, note=str(exc))
            continue
        notes: list[str] = []
        similarity = ensemble = None
        try:
            similarity = similarity_from_store(store, variant, runs=select_scorings(runs, measure=measure))
        except Exception as exc:  # shown on the page; the rest of the report must not fail
            notes.append(f"similarity matrix not available: {type(exc).__name__}: {exc}")
        try:
            n_objects = int(read_scorings(store, variant, runs=runs.iloc[:1]).labels.size)
            chosen, step = _thin(runs, n_objects, max_values)
            if step > 1:
                notes.append(f"ensemble over one stored k in {step} of each method ({len(chosen)} of "
                             f"{len(runs)} scorings) to stay within {max_values:,} stored scores")
            ensemble = ensemble_from_store(store, variant, runs=chosen, rate=rate, n_random=n_random, seed=seed)
        except Exception as exc:  # shown on the page; the rest of the report must not fail
            notes.append(f"ensemble not available: {type(exc).__name__}: {exc}")
        out[base] = ScoreComparison(variant, similarity, ensemble, "; ".join(notes) or None)
    return out
