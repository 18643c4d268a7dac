"""Build the report straight from a results store: the one path used by ``odeval report`` and ``odeval demo``."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["best_k_scorings", "report_from_store", "resolve_study"]


def resolve_study(studies: pd.DataFrame, study: str, store: str | Path) -> str:
    """The hash of the study ``study`` names in a store's :meth:`~odeval.bench.store.ResultStore.studies`: its
    hash, a unique prefix of it, or its name (unique in the store).

    Raises
    ------
    StoreError
        One line naming the store, what matched (nothing, or several) and the studies it holds.
    """
    from odeval.bench.store import StoreError

    hashes, names = studies["study_hash"].astype(str), studies["name"].astype(str)
    for hit in (hashes == study, names == study, hashes.str.startswith(study)):
        if hit.sum() == 1:
            return str(hashes[hit].iloc[0])
        if hit.sum() > 1:
            raise StoreError(f"{store}: {study!r} names {int(hit.sum())} studies ("
                             + ", ".join(hashes[hit]) + "); give the hash")
    known = ", ".join(f"{n} ({h})" for n, h in zip(names, hashes, strict=True)) or "none"
    raise StoreError(f"{store}: no study {study!r}; studies: {known}")


def studies_note(studies: pd.DataFrame) -> str | None:
    """One line when a report merges several studies of a store, naming them and how to pick one."""
    if len(studies) < 2:
        return None
    named = ", ".join(f"{n} ({h})" for n, h in zip(studies["name"], studies["study_hash"], strict=True))
    return f"the store holds {len(studies)} studies, reported together: {named}; pick one with --study HASH|NAME"


def best_k_scorings(summary, measure: str = "roc_auc"):
    """(unit_id, k) of every method's best k for ``measure`` in a :func:`odeval.analysis.per_variant_summary`.

    The rows to read from the store's ``outlier_ranks`` and ``scores`` (:meth:`ResultStore.outlier_ranks` with
    ``at=``).
    """
    best = summary[(summary["measure"] == measure) & summary["best_k"].notna()]
    return best[["unit_id", "best_k"]].rename(columns={"best_k": "k"}).astype({"k": "int64"})


def report_from_store(store: str | Path, out_dir: str | Path, *, measure: str = "roc_auc", statistic: str = "best",
                      study_hash: str | None = None, title: str | None = None, simulations: int = 200,
                      seed: int = 0, permutations: int = 1000, min_outlier_pct: float | None = None,
                      max_outlier_pct: float | None = None, normalized: bool | None = None,
                      deduplicated: bool | None = None, ensembles: bool = True,
                      ensemble_random: int = 1000, selection: str | None = None,
                      study: str | None = None, pages: Sequence[tuple[str, str, str]] = ()) -> tuple[Path, list[str]]:
    """Read a results store, analyse it and write the static HTML report.

    The label permutation test (Campos §5.3) runs when the store kept score vectors (study option
    ``keep_scores``) and ``permutations`` > 0. Returns the path of ``index.html`` and the warnings raised
    while testing (e.g. variants without stored scores).

    With stored score vectors and ``ensembles``, each base dataset page also shows the similarity matrix of
    the scorings and the greedy ensemble (Schubert et al. 2012) of its first variant, with ``ensemble_random``
    random ensembles as control group (:func:`odeval.report.comparison.comparisons_from_store`).

    When the store holds label-free measures (study option ``internal``), the index page gets a section with
    each criterion's pick per dataset (:mod:`odeval.report.internal`): EM/MV per unit, IREOS from the per-variant
    step (one gamma_max per variant, :mod:`odeval.bench.variant_step`).

    Every read goes through :class:`odeval.bench.store.ResultStore`; with ``study_hash`` (or ``study``: a hash, a
    unique hash prefix or a study's name, :func:`resolve_study`) the report shows every unit linked to that study,
    also those an earlier study computed. Without either, a store holding several studies is reported as one and
    the returned messages say so first (:func:`studies_note`). ``title`` defaults to the study's name (the names
    joined with " + " when several are merged).

    ``selection`` ("all" or a number, e.g. "10"): also audit label-free model selection on every variant with
    stored scores (:func:`odeval.analysis.selection.audit_store`) and add its section to the index page. Picks
    stored by the study's per-variant step (``[selection]``) are used as they are, and add the section even
    without ``selection``.

    ``pages``: (href, title, description) of other pages the index links (:func:`odeval.report.html.build_report`).

    Raises
    ------
    StoreError
        If the store cannot be opened (one line: missing, not DuckDB, in use by PID N, other schema version) or
        has no study ``study_hash``.
    ValueError
        If the store holds no run matching the filters, or ``selection`` is not 'all' or a positive integer.
    """
    from odeval.analysis import filter_variants, per_variant_summary, permutation_tests
    from odeval.bench.store import ResultStore
    from odeval.report.html import build_report

    if selection is not None and not (selection == "all" or (str(selection).isdigit() and int(selection) > 0)):
        raise ValueError(f"selection must be 'all' or a positive integer, got {selection!r}")
    with ResultStore(store, read_only=True) as rs:
        studies = rs.studies()
        if study is not None:
            study_hash = resolve_study(studies, study, store)
        picked = studies if study_hash is None else studies[studies["study_hash"] == study_hash]
        merged = [n for n in [studies_note(studies)] if n and study_hash is None]
        if title is None:
            title = " + ".join(dict.fromkeys(picked["name"].astype(str))) or "odeval study report"
        all_runs = rs.runs(study_hash=study_hash)
        if all_runs.empty:
            raise ValueError(f"{store}: no run" + ("" if study_hash is None else f" of study {study_hash}"))
        units = rs.units(study_hash=study_hash)
        n_scores = rs.n_scores(study_hash=study_hash)
        try:
            runs = filter_variants(all_runs, min_outlier_pct=min_outlier_pct, max_outlier_pct=max_outlier_pct,
                                   normalized=normalized, deduplicated=deduplicated)
            if runs.empty:
                raise ValueError("no run of the store matches the variant filters")
            summary = per_variant_summary(runs, measure)
        except ValueError as exc:  # e.g. studies that scored the same variant twice cannot be merged
            raise ValueError(f"{exc}; {merged[0]}" if merged else str(exc)) from None
        at = best_k_scorings(summary, measure)
        ranks = rs.outlier_ranks(at=at)  # only the rows the characterisation needs
        ranks = ranks if len(ranks) else None
        best_scores = rs.scores(at=at) if permutations and n_scores and ranks is not None else None
        labels = rs.labels_by_dataset(study_hash=study_hash) if best_scores is not None else None
        internal = rs.internal_measures(study_hash=study_hash)
        internal = internal[internal["dataset"].isin(set(runs["dataset"]))] if len(internal) else None
        ireos = _ireos_frame(rs, study_hash, set(runs["dataset"]))
        stored_modes = list(dict.fromkeys(rs.variant_tasks(study_hash=study_hash, kind="selection",
                                                           status="ok")["candidates"].astype(str)))
    permutation, messages = None, list(merged)
    if best_scores is not None and len(best_scores):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            permutation = permutation_tests(summary, ranks, best_scores, measure, n_permutations=permutations,
                                            seed=seed, labels=labels)
        messages += [str(w.message) for w in caught]
    comparisons = None
    if ensembles and n_scores:
        from odeval.report.comparison import comparisons_from_store

        ok_runs = runs[runs["status"].astype(str) == "ok"] if "status" in runs.columns else runs
        firsts = ok_runs.groupby(ok_runs["base_dataset"].astype(str))["dataset"].min()
        comparisons = comparisons_from_store(store, {str(b): str(d) for b, d in firsts.items()}, measure=measure,
                                             n_random=ensemble_random, seed=seed)
    audit = None
    mode = str(selection) if selection is not None else (stored_modes[0] if stored_modes else None)
    if mode is not None and (n_scores or mode in stored_modes):
        from odeval.analysis.selection import AUDIT_MEASURES, audit_store

        audit, _, notes = audit_store(store, candidates=mode, measure=measure if measure in AUDIT_MEASURES
                                      else "roc_auc", datasets=sorted(set(runs["dataset"].astype(str))),
                                      study_hash=study_hash if mode in stored_modes else None)
        messages += notes
    index = build_report(runs, ranks, out_dir, measure=measure, statistic=statistic, title=title,
                         n_simulations=simulations, seed=seed, permutation=permutation, units=units,
                         comparisons=comparisons, selection=audit, internal=internal, ireos=ireos, pages=pages)
    return Path(index), messages


def _ireos_frame(rs: Any, study_hash: str | None, datasets: set[str]) -> pd.DataFrame | None:
    """IREOS of every candidate from the per-variant step (``variant_values`` with the candidates' quality), in
    the long form of ``internal_measures`` (dataset, unit_id, method, k, measure, value) plus ``roc_auc``,
    ``average_precision``, ``candidates`` and ``gamma_max``; None when the store has none."""
    import json

    tasks = rs.variant_tasks(study_hash=study_hash, kind="ireos", status="ok")
    tasks = tasks[tasks["dataset"].isin(datasets)]
    if tasks.empty:
        return None
    ids = list(tasks["task_id"])
    values = rs.variant_table("variant_values", task_ids=ids)
    cands = rs.variant_table("variant_candidates", task_ids=ids)
    frame = values.merge(cands.drop(columns=["dataset"]), on=["task_id", "candidate"], how="inner")
    info = tasks.set_index("task_id")
    frame["candidates"] = frame["task_id"].map(info["candidates"].astype(str))
    frame["gamma_max"] = frame["task_id"].map({t: json.loads(d).get("gamma_max") for t, d in info["details"].items()})
    return frame
