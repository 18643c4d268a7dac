"""Build the report straight from a results store: the one path used by ``odeval report`` and ``odeval demo``."""

from __future__ import annotations

import warnings
from pathlib import Path

__all__ = ["report_from_store"]


def report_from_store(store: str | Path, out_dir: str | Path, *, measure: str = "roc_auc", statistic: str = "best",
                      study_hash: str | None = None, title: str = "odeval study report", simulations: int = 200,
                      seed: int = 0, permutations: int = 1000, min_outlier_pct: float | None = None,
                      max_outlier_pct: float | None = None, normalized: bool | None = None,
                      deduplicated: bool | None = None, ensembles: bool = True,
                      ensemble_random: int = 1000, selection: str | None = None) -> tuple[Path, list[str]]:
    """Read a results store, analyse it and write the static HTML report.

    The label permutation test (Campos §5.3) runs when the store kept score vectors (study option
    ``keep_scores``) and ``permutations`` > 0. Returns the path of ``index.html`` and the warnings raised
    while testing (e.g. variants without stored scores).

    With stored score vectors and ``ensembles``, each base dataset page also shows the similarity matrix of
    the scorings and the greedy ensemble (Schubert et al. 2012) of its first variant, with ``ensemble_random``
    random ensembles as control group (:func:`odeval.report.comparison.comparisons_from_store`).

    ``selection`` ("all" or a number, e.g. "10"): also audit label-free model selection on every variant with
    stored scores (:func:`odeval.analysis.selection.audit_selection`) and add its section to the index page.

    Raises
    ------
    ValueError
        If the store holds no run matching the filters, or ``selection`` is not 'all' or a positive integer.
    """
    from odeval.analysis import filter_variants, per_variant_summary, permutation_tests
    from odeval.report.html import build_report
    from odeval.report.store import read_best_k_ranks, read_best_k_scores, read_results_store

    if selection is not None and not (selection == "all" or (str(selection).isdigit() and int(selection) > 0)):
        raise ValueError(f"selection must be 'all' or a positive integer, got {selection!r}")
    tables = read_results_store(store, study_hash=study_hash, with_ranks=False)
    runs = filter_variants(tables.runs, min_outlier_pct=min_outlier_pct, max_outlier_pct=max_outlier_pct,
                           normalized=normalized, deduplicated=deduplicated)
    if runs.empty:
        raise ValueError("no run of the store matches the variant filters")
    summary = per_variant_summary(runs, measure)
    ranks = read_best_k_ranks(store, summary, measure)  # only the rows the characterisation needs
    permutation, messages = None, []
    if permutations and tables.n_scores and ranks is not None:
        best_scores = read_best_k_scores(store, summary, measure)
        if len(best_scores):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                permutation = permutation_tests(summary, ranks, best_scores, measure, n_permutations=permutations,
                                                seed=seed)
            messages = [str(w.message) for w in caught]
    comparisons = None
    if ensembles and tables.n_scores:
        from odeval.report.comparison import comparisons_from_store

        ok_runs = runs[runs["status"].astype(str) == "ok"] if "status" in runs.columns else runs
        firsts = ok_runs.groupby(ok_runs["base_dataset"].astype(str))["dataset"].min()
        comparisons = comparisons_from_store(store, {str(b): str(d) for b, d in firsts.items()}, measure=measure,
                                             n_random=ensemble_random, seed=seed)
    audit = None
    if selection is not None and tables.n_scores:
        from functools import partial

        from odeval.analysis.selection import audit_selection, candidates_from_store, stored_variants

        wanted = set(runs["dataset"].astype(str))
        names = [n for n in stored_variants(store) if n in wanted]
        mode = selection if selection == "all" else int(selection)
        from odeval.analysis.selection import AUDIT_MEASURES

        audit = audit_selection([(n, partial(candidates_from_store, store, n, candidates=mode, measure=measure))
                                 for n in names], measure=measure if measure in AUDIT_MEASURES else "roc_auc",
                                seed=seed, candidates_mode=str(selection))
    index = build_report(runs, ranks, out_dir, measure=measure, statistic=statistic, title=title,
                         n_simulations=simulations, seed=seed, permutation=permutation, units=tables.units,
                         comparisons=comparisons, selection=audit)
    return Path(index), messages
