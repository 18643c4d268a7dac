"""The per-variant step of a study: label-free work that needs *all* candidates of a dataset variant at once.

IREOS (Marques et al. 2020) must use one γ_max for all candidates of a variant (§3.4: the smallest γ at which
every object with weight ≥ 0.5 in *any* candidate is separable), so it cannot be a column of the per-unit
work; neither can the label-free selectors of :mod:`odeval.labelfree.selection`, which compare the candidates
with each other. A *variant task* therefore sees every candidate of one variant: every method × k of the study
(``candidates = "all"``) or the ten candidates of §4.2 (``candidates = 10``: best, worst and evenly spaced
ROC AUC, :func:`odeval.labelfree.selection.paper_candidates`).

One job per variant (:func:`run_variant_job`) rescores the kNN-family candidates from the variant's prepared
kNN graph with the one scoring path (:func:`odeval.detectors.scoring.score_ks`, as the units do; ±inf mapped by
:func:`odeval.measures.finite_for_ranking`) instead of storing R × N score vectors. Candidates of other detectors
(imported estimators, any grid axis, seeds) are keyed by their whole :class:`~odeval._key.ScoringKey` (method,
parameters, metric, setting, seed): an estimator's scores are the unit's kept score vector when the study keeps
scores (the runner reads them from the store and hands them to the job), else the estimator is fitted again by
:func:`odeval.detectors.imported.fit_score` with the unit's seed (the unit's scores, bit for bit). Then the job
runs every task of the variant still missing from the store:

* ``ireos`` — :func:`odeval.labelfree.ireos` of every candidate (Eq. 9, adjusted Eq. 13 when asked),
  one γ_max per variant; values ``ireos``, ``ireos_adjusted``, ``ireos_p_value`` per candidate.
* ``selection`` — the study's selectors (:func:`odeval.labelfree.selection.run_selectors`), their picks.

Both store the candidates' quality by the labels (never shown to IREOS or a selector) so the audit and the
report judge the picks without the score vectors. A task id is a content hash of the dataset file, the
candidate definition (methods, parameters, k, metric, candidates mode), the kind and its options — not of the
study — so a resumed study skips finished tasks and another study with the same variant and candidates reuses
them (``study_variant_tasks``, like ``study_units``). Results are a pure function of those inputs: identical
for any number of workers or backend.

References
----------
H. O. Marques, R. J. G. B. Campello, J. Sander, A. Zimek. Internal evaluation of unsupervised outlier
detection. ACM TKDD 14(4), 2020, §3.4 (γ_max), Eq. 9 and 13, §4.2 (ten candidates, model selection).
M. Q. Ma, Y. Zhao, X. Zhang, L. Akoglu. The need for unsupervised outlier model selection. SIGKDD
Explorations 25(1), 2023 (selectors).
"""

from __future__ import annotations

import hashlib
import json
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from odeval._key import distinct_names
from odeval._krange import parse_k_range
from odeval.bench.config import MethodSpec, Study
from odeval.bench.store import VARIANT_QUALITY, VariantCandidate, VariantTaskResult, is_interrupt
from odeval.data.catalogue import Variant

__all__ = ["VariantTask", "candidate_scorings", "failed_variant_tasks", "ireos_settings", "plan_variant_tasks",
           "run_variant_job", "task_display", "variant_task_id"]


@dataclass(frozen=True)
class VariantTask:
    """One per-variant task to run: ``kind`` ('ireos' | 'selection'), ``candidates`` ('all' or a number) and the
    kind's ``options`` (IREOS options, or ``{"selectors": [...], "seed": s}``)."""

    task_id: str
    kind: str
    candidates: str
    options: dict[str, Any]


def variant_task_id(file_sha256: str, ref: Variant, study: Study, kind: str, candidates: str,
                    options: dict[str, Any]) -> str:
    """Content hash of a per-variant task: same file, candidates and options ⇒ same id, in any study.

    Each method's scoring version is part of the candidate definition, so a changed scoring definition
    (:attr:`odeval.detectors.MethodInfo.scoring_version`) recomputes the task.
    """
    from odeval.bench.identity import scoring_version
    from odeval.detectors import get_detector

    plain = sorted((m.name, m.params_json, parse_k_range(m.ks).canonical(),
                    int(get_detector(m.name, **m.params).info.scoring_version))
                   for m in study.methods if m.plain)
    # the other candidates (a grid axis, seeds, an estimator) with what tells them apart in unit ids; absent for a
    # study of the kNN family over k alone, whose task ids stay those of every earlier store
    other = sorted(([m.name, m.params_json, parse_k_range(m.ks).canonical() if m.is_knn else None,
                     scoring_version(m), *m.identity()] for m in study.methods if not m.plain),
                   key=lambda row: json.dumps(row, sort_keys=True, default=str))
    payload = json.dumps([file_sha256, ref.name, kind, candidates, study.metric, plain + other, options],
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]


def plan_variant_tasks(study: Study, file_sha256: str, ref: Variant) -> list[VariantTask]:
    """The per-variant tasks ``study`` asks for on one variant (empty without IREOS and ``[selection]``)."""
    step = study.variant_step
    if step is None:
        return []
    tasks = []
    if step.ireos is not None:
        opts = {k: v for k, v in step.ireos.items() if k != "candidates"}
        tasks.append(("ireos", str(step.ireos["candidates"]), opts))
    if step.selectors is not None:
        opts = {"selectors": list(step.selectors), "seed": step.seed}
        if {"em", "mv"} & set(step.selectors):
            # the EM/MV selectors' settings (box, sampling="auto", ...; issue 26) enter the task id: picks stored with
            # other settings are recomputed, not reused. Absent without em/mv: those tasks keep their ids.
            from odeval.labelfree.selection import EMMV_SELECTOR_SETTINGS

            opts["emmv"] = EMMV_SELECTOR_SETTINGS.kwargs()
        if {"ireos", "ireos-sqrt5"} & set(step.selectors):
            # likewise the IREOS selectors' settings (the classifier: "pinned" since 2026-11-27) and the guarded
            # rule's; absent without them, so the other selection tasks keep their ids
            from odeval.labelfree.selection import IREOS_SELECTOR_SETTINGS

            opts["ireos"] = IREOS_SELECTOR_SETTINGS.kwargs()
        if "ireos-guarded" in step.selectors:
            from odeval.labelfree.guarded import GuardedSettings

            opts["ireos_guarded"] = GuardedSettings().identity()
        for mode in step.selection_modes:
            tasks.append(("selection", mode, dict(opts)))
    return [VariantTask(variant_task_id(file_sha256, ref, study, kind, cand, opts), kind, cand, opts)
            for kind, cand, opts in tasks]


def failed_variant_tasks(plan: Any, metric: str, error: str) -> list[VariantTaskResult]:
    """The per-variant tasks of a runner plan, all failed with ``error`` (the variant could not be prepared, or
    the worker died)."""
    return [VariantTaskResult(task_id=t.task_id, kind=t.kind, dataset=plan.ref.name, file_sha256=plan.file_sha256,
                              metric=metric, candidates_mode=t.candidates, options=t.options, status="error",
                              error=error) for t in plan.variant_tasks]


@dataclass(frozen=True)
class _Shown:
    """What the runner's progress display reads of a finished unit, for a per-variant task."""

    unit_id: str
    dataset: dict[str, Any]
    method: str
    params: str
    status: str
    runtime_s: float
    error: str | None


def task_display(res: VariantTaskResult) -> _Shown:
    """A finished per-variant task as the progress display shows units (``[ireos] candidates all``)."""
    return _Shown(res.task_id, {"name": res.dataset}, f"[{res.kind}]", f"candidates {res.candidates_mode}",
                  res.status, res.runtime_s, res.error)


# --- the task (module level: pickled to worker processes) -----------------------------------------
def candidate_scorings(prepared: Any, methods: list[tuple[MethodSpec, str]], *, metric: str | None = None,
                       kept: Mapping[str, np.ndarray] | None = None
                       ) -> tuple[np.ndarray, list[VariantCandidate], list[tuple[str, str]]]:
    """Every computable scoring of ``methods`` (pairs of method and unit id) on the prepared variant.

    kNN-family methods are scored at their k from the prepared graph (:func:`odeval.detectors.scoring.score_ks`);
    an imported estimator's one scoring is ``kept[unit_id]`` (its unit's kept score vector) when given, else the
    estimator fitted again on the variant's data (:func:`odeval.detectors.imported.fit_score`, the unit's seed:
    the unit's scores). Returns the (R, N) matrix of public scores with ±inf mapped to finite values (ranks and
    ties kept), one :class:`~odeval.bench.store.VariantCandidate` per row (quality NaN) — its
    :class:`~odeval._key.ScoringKey` (method, parameters, ``metric`` — default: the graph's — for the kNN family,
    setting, seed), the unit id, and its name among all the study's methods (:func:`odeval._key.distinct_names`:
    ``METHOD-NNN``, parameters in the name when a method appears with several, as
    :func:`odeval.bench.ensembles.stored_runs`) — and the estimators left out, with the reason (their unit
    failed, e.g. NaN scores: the candidate set is the scorings the study has).
    """
    from odeval.bench.config import method_detector
    from odeval.detectors.scoring import score_ks
    from odeval.measures import finite_for_ranking

    graph = prepared.graph
    metric = (graph.metric if graph is not None else "") if metric is None else metric
    configs = [m.key(None, metric) for m, _ in methods]
    rows, keys, units, left_out = [], [], [], []
    for (m, uid), config in zip(methods, configs, strict=True):
        if not m.is_knn:
            try:
                s = _estimator_scores(prepared, m, None if kept is None else kept.get(uid))
            except ValueError as exc:
                left_out.append((config.name, str(exc)))
                continue
            rows.append(finite_for_ranking(s))
            keys.append(config)
            units.append(uid)
            continue
        scored = score_ks(method_detector(m), graph, m.ks)
        for k, s in zip(scored.ks, scored.scores, strict=True):
            rows.append(finite_for_ranking(s))
            keys.append(config.with_setting(k=int(k)))
            units.append(uid)
    # names among every method of the study (also those without a computable k here), as the study names them
    names = distinct_names([*keys, *configs])[:len(keys)]
    cands = [VariantCandidate(key, name, uid) for key, name, uid in zip(keys, names, units, strict=True)]
    n = int(prepared.facts["n_objects"]) if graph is None else int(graph.n_objects)
    return (np.vstack(rows) if rows else np.empty((0, n))), cands, left_out


def _estimator_scores(prepared: Any, method: MethodSpec, kept: np.ndarray | None) -> np.ndarray:
    """The scores of an estimator's unit: its kept vector, else the estimator fitted again (same seed)."""
    if kept is not None:
        s = np.asarray(kept, dtype=np.float64)
        if s.shape != (int(prepared.facts["n_objects"]),):
            raise ValueError(f"kept score vector of {s.shape[0]} values for {prepared.facts['n_objects']} objects")
        return s
    from odeval.detectors.imported import fit_score, resolve_class

    try:
        return fit_score(resolve_class(method.estimator), {**method.params, **method.setting}, prepared.data,
                         seed=method.seed, higher_is_outlier=method.higher_is_outlier, name=method.name)
    except ValueError as exc:
        raise ValueError(f"{method.entry or method.name}: {exc}") from None


def run_variant_job(prepared: Any, dataset: str, file_sha256: str, methods: list[tuple[MethodSpec, str]],
                    metric: str, tasks: list[VariantTask], kept: Mapping[str, np.ndarray] | None = None
                    ) -> list[VariantTaskResult]:
    """Run the ``tasks`` of one prepared variant (its data kept) on one rescoring of its candidates.

    ``kept``: unit id → the kept score vector of an imported estimator's unit (read from the store by the
    runner when the study keeps scores); estimators without one are fitted again (:func:`candidate_scorings`).
    Never raises: a failing task (or a failing rescoring: every task) is returned with status 'error' and the
    message with the place it was raised.
    """
    from odeval.measures import evaluate_many

    results = [VariantTaskResult(task_id=t.task_id, kind=t.kind, dataset=dataset, file_sha256=file_sha256,
                                 metric=metric, candidates_mode=t.candidates, options=t.options) for t in tasks]
    try:
        t0 = time.perf_counter()
        S, meta, left_out = candidate_scorings(prepared, methods, metric=metric, kept=kept)
        if S.shape[0] == 0:
            raise ValueError(f"no candidate scoring can be computed on {S.shape[1]} objects"
                             + (f" ({left_out[0][0]}: {left_out[0][1]})" if left_out else ""))
        quality = evaluate_many(prepared.labels, S)
        meta = [replace(c, **{q: float(quality[q][i]) for q in VARIANT_QUALITY}) for i, c in enumerate(meta)]
        t_scoring = time.perf_counter() - t0
    except Exception as exc:
        for r in results:
            _failed(r, exc)
        return results
    for task, res in zip(tasks, results, strict=True):
        t1 = time.perf_counter()
        try:
            keep = _candidate_rows(task.candidates, quality["roc_auc"])
            res.candidates = [meta[i] for i in keep]
            res.details["scoring_s"] = t_scoring
            if left_out:  # only then: the details of a kNN-family study stay what they were
                res.details["left_out"] = [{"candidate": name, "reason": why} for name, why in left_out]
            if task.kind == "ireos":
                _ireos_task(res, prepared.X, S[keep], task.options)
            elif task.kind == "selection":
                refs = _references(meta, keep, S)
                _selection_task(res, prepared, S[keep], task.options, refs)
            else:
                raise ValueError(f"unknown variant task kind {task.kind!r}")
        except Exception as exc:
            _failed(res, exc)
        res.runtime_s = time.perf_counter() - t1 + t_scoring
    return results


def _failed(res: VariantTaskResult, exc: BaseException) -> None:
    if is_interrupt(exc):  # Ctrl-C inside a compiled kernel (a SystemError from numba): not the task's error
        raise exc
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    place = f" (raised in {Path(where.filename).name}:{where.lineno}, {where.name})" if where else ""
    res.status, res.error = "error", f"{type(exc).__name__}: {exc}{place}"
    res.values, res.picks = [], []


def _candidate_rows(mode: str, roc_auc: np.ndarray) -> np.ndarray:
    """Rows of the candidate set: all, or the paper's n by ROC AUC (Marques et al. 2020, §4.2)."""
    from odeval.labelfree.selection import paper_candidates

    if mode == "all":
        return np.arange(roc_auc.size)
    return paper_candidates(roc_auc, int(mode))


def _references(meta: list[VariantCandidate], keep: np.ndarray, S: np.ndarray) -> dict[str, np.ndarray]:
    """The fixed-default scorings (kNN k = 10, LOF k = 20) outside the candidate set, by name."""
    from odeval.labelfree.selection import DEFAULT_CANDIDATES

    inside = set(int(i) for i in keep)
    out = {}
    for i, c in enumerate(meta):
        if i not in inside and any(c.method.lower() == m.lower() and c.k == k for m, k in DEFAULT_CANDIDATES):
            out[c.name] = S[i]
    return out


def ireos_settings(opts: dict[str, Any]) -> Any:
    """The :class:`odeval.labelfree.ireos.IREOSSettings` of a study's IREOS options (the keys of
    :data:`odeval.bench.config.IREOS_OPTIONS`: ``mcl`` is ``m_cl``; a key left out takes the settings' default,
    ``knn`` the exact index, ``null`` the permutation null and ``classifier`` the exact KLR optimum: odeval's only
    null and classifier when tasks held neither key)."""
    from odeval.labelfree.ireos import IREOSSettings

    default = IREOSSettings()
    return IREOSSettings(m_cl=opts.get("mcl", default.m_cl), C=float(opts.get("C", default.C)),
                         gamma_max=opts.get("gamma_max", default.gamma_max),
                         quadrature=opts.get("quadrature", default.quadrature),
                         n_gamma=int(opts.get("n_gamma", default.n_gamma)), tol=float(opts.get("tol", default.tol)),
                         knn=opts.get("knn"), null=opts.get("null", "permutation"),
                         classifier=opts.get("classifier", "optimum"))


def _ireos_task(res: VariantTaskResult, X: np.ndarray | None, S: np.ndarray, opts: dict[str, Any]) -> None:
    """IREOS of every candidate with one γ_max over all of them (Marques et al. 2020, §3.4, Eq. 9, 13)."""
    from odeval.labelfree import ireos

    if X is None:
        raise ValueError("IREOS needs the data: the prepared variant kept no data matrix")
    settings = ireos_settings(opts).for_objects(X.shape[0])  # N <= knn + 1: the exact index
    knn = settings.knn
    # with the adjustment the p-values cost no classifier: m_cl = 1 permutes the areas of all objects (computed
    # for E{I}, Eq. 25), m_cl > 1 reuses the Monte Carlo null of E{I}; without it they would need those classifiers
    pv = bool(opts.get("adjust", True))
    from odeval.labelfree.selection import weighable_candidates

    use, excluded = weighable_candidates(S)
    if not use:
        raise ValueError(f"no candidate has IREOS weights: {excluded[0][1]}" if excluded else "no candidates")
    r = ireos(X, [sol for _, sol in use], adjust=bool(opts.get("adjust", True)), p_values=pv,
              seed=int(opts.get("seed", 0)), workers=1, **settings.kwargs())
    row = {i: j for j, (i, _) in enumerate(use)}
    nan = float("nan")
    for i in range(S.shape[0]):  # excluded candidates: NaN (no index), like a failed measure
        j = row.get(i)
        res.values.append((i, "ireos", nan if j is None else float(r.index[j])))
        if opts.get("adjust", True):
            res.values.append((i, "ireos_adjusted", nan if j is None else float(r.adjusted[j])))
        if pv:
            res.values.append((i, "ireos_p_value", nan if j is None else float(r.p_value[j])))
    res.details.update({"gamma_max": r.gamma_max, "m_cl": r.m_cl, "knn": knn, "n_fits": r.n_fits, "fits": r.fits,
                        "unseparated": len(r.unseparated), "gamma_max_duplicates": len(r.gamma_max_duplicates),
                        "expected": float(r.expected[0]),
                        "null": settings.null,
                        "p_value_test": (("one-sided test, 1000 random scorings with i.i.d. uniform weights"
                                          if settings.null == "uniform" else
                                          "one-sided permutation test, 1000 permutations of the weights")
                                         if r.m_cl == 1.0 else f"Monte Carlo over random solutions ({settings.null})"),
                        "excluded": [{"candidate": i, "reason": why} for i, why in excluded]})


def _selection_task(res: VariantTaskResult, prepared: Any, S: np.ndarray, opts: dict[str, Any],
                    refs: dict[str, np.ndarray]) -> None:
    """The picks of the study's selectors among ``res.candidates``, each with its quality by the labels."""
    from odeval.labelfree.selection import get_selector, run_selectors
    from odeval.measures import evaluate_many, finite_for_ranking

    keep_quality = {q: np.array([c.quality(q) for c in res.candidates]) for q in VARIANT_QUALITY}
    names = [c.name for c in res.candidates]
    sels = run_selectors(S, names, opts["selectors"], X=prepared.X, seed=int(opts.get("seed", 0)), references=refs,
                         keys=[c.key for c in res.candidates])
    for name, sel in sels.items():
        kind = get_selector(name).kind
        row: dict[str, Any] = {"selector": name, "selector_kind": kind, "candidate": sel.index,
                               "members": list(sel.members), "note": sel.note}
        if sel.index is not None:
            row["choice"] = names[sel.index]
            row.update({q: float(keep_quality[q][sel.index]) for q in VARIANT_QUALITY})
        elif sel.scores is not None:
            own = evaluate_many(prepared.labels, finite_for_ranking(sel.scores)[None, :])
            row["choice"] = (sel.note.split(":")[0] if sel.note.startswith("reference")
                             else f"ensemble of {len(sel.members)}")
            row.update({q: float(own[q][0]) for q in VARIANT_QUALITY})
        else:
            row["choice"] = ""
            row.update({q: float("nan") for q in VARIANT_QUALITY})
        res.picks.append(row)
