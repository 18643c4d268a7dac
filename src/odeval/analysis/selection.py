"""Meta-evaluation of label-free model selection: how good is the candidate a selector picks, by the labels?

For every dataset variant, a *candidate set* (every method × k a study kept the scores of, or the ten
candidates of Marques et al. 2020, §4.2) is given to each selector of :mod:`odeval.labelfree.selection`, which
sees no labels. The labels then judge the pick: its ROC AUC, average precision and adjusted AP next to the
minimum, mean and maximum over the candidates and its percentile among them (as in Marques et al. 2020,
Table 7 and Fig. 9). Across variants: mean quality and mean rank per selector, one-sided Wilcoxon signed-rank
tests against the random pick and the fixed defaults, Friedman + Nemenyi across all selectors
(:mod:`odeval.analysis.stats`), and one plain-words verdict per selector.

Pure functions over arrays and frames; the store is read only through :class:`odeval.bench.store.ResultStore`
readers: :func:`stored_variants`, :func:`candidates_from_store` (through :func:`odeval.bench.ensembles.stored_runs`
/ ``read_scorings``) and :func:`stored_picks` (:meth:`~odeval.bench.store.ResultStore.stored_selection`). The
text of the audit is :mod:`odeval.render.labelfree`.

References
----------
H. O. Marques, R. J. G. B. Campello, J. Sander, A. Zimek. Internal evaluation of unsupervised outlier
detection. ACM TKDD 14(4), 2020, §4.2 (ten candidates per dataset), Table 7, Fig. 9.
M. Q. Ma, Y. Zhao, X. Zhang, L. Akoglu. The need for unsupervised outlier model selection: a review and
evaluation of internal evaluation strategies. ACM SIGKDD Explorations 25(1), 2023.
J. Demšar. Statistical comparisons of classifiers over multiple data sets. JMLR 7:1–30, 2006.
F. Wilcoxon. Individual comparisons by ranking methods. Biometrics Bulletin 1(6), 1945.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from odeval._key import ScoringKey
from odeval.analysis.stats import average_ranks, friedman_test, nemenyi_critical_difference, nemenyi_test
from odeval.labelfree.selection import (
    DEFAULT_CANDIDATES,
    Selection,
    default_selectors,
    get_selector,
    paper_candidates,
    run_selectors,
)
from odeval.measures import evaluate_many, finite_for_ranking

__all__ = [
    "AUDIT_MEASURES",
    "BASELINES",
    "CandidateSet",
    "SelectionAudit",
    "audit_selection",
    "audit_store",
    "audit_variant",
    "candidates_from_store",
    "evaluate_selections",
    "friedman_line",
    "p_text",
    "paper_candidates",
    "pick_rows",
    "selection_friedman",
    "selection_summary",
    "selection_tests",
    "selection_verdicts",
    "stored_picks",
    "stored_variants",
]

#: Measures of the pick reported by the audit (keys of :func:`odeval.measures.evaluate`).
AUDIT_MEASURES: tuple[str, ...] = ("roc_auc", "average_precision", "adjusted_average_precision")
#: Selectors every other selector is tested against (one-sided Wilcoxon signed-rank).
BASELINES: tuple[str, ...] = ("random", "default-knn10", "default-lof20")


@dataclass(frozen=True)
class CandidateSet:
    """The candidates of one dataset variant, with the labels that judge them (never shown to a selector).

    Attributes
    ----------
    dataset, base_dataset : str
    scores : ndarray of shape (R, N)
        Public scores (higher = more outlying), ±inf mapped by :func:`odeval.measures.finite_for_ranking`.
    labels : ndarray of bool, shape (N,)
    names : tuple of str
        ``METHOD-kNNN`` (as :func:`odeval.bench.ensembles.stored_runs`).
    references : mapping of str to ndarray (N,)
        Scorings outside the candidate set that a selector may still name (the fixed defaults when the ten
        paper candidates do not include them), by candidate name.
    X : ndarray of shape (N, d), optional
        The data, for selectors that need it.
    keys : tuple of ScoringKey, optional
        The candidates' :class:`~odeval._key.ScoringKey` (method, parameters, metric, k), for selectors that
        rebuild a candidate (``em``, ``mv``); default: read from ``names``.
    """

    dataset: str
    scores: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    names: tuple[str, ...]
    base_dataset: str = ""
    references: Mapping[str, np.ndarray] = field(default_factory=dict, repr=False)
    X: np.ndarray | None = field(default=None, repr=False)
    keys: tuple[ScoringKey, ...] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        S = np.asarray(self.scores, dtype=np.float64)
        if S.ndim != 2 or S.shape[0] < 1:
            raise ValueError(f"{self.dataset}: candidate scores must be (R, N) with R >= 1, got shape {S.shape}")
        if len(self.names) != S.shape[0]:
            raise ValueError(f"{self.dataset}: {len(self.names)} names for {S.shape[0]} candidates")
        if np.asarray(self.labels).shape != (S.shape[1],):
            raise ValueError(f"{self.dataset}: {np.asarray(self.labels).shape} labels for {S.shape[1]} objects")
        if self.keys is not None and len(self.keys) != S.shape[0]:
            raise ValueError(f"{self.dataset}: {len(self.keys)} keys for {S.shape[0]} candidates")


# ------------------------------------------------------------------------------------------------ store glue
def stored_variants(store: str | Path) -> list[str]:
    """Dataset variants of the store with kept score vectors (table ``scores``), sorted."""
    from odeval.bench.ensembles import _KEEP_SCORES_HINT, NoStoredScoresError
    from odeval.bench.store import ResultStore

    with ResultStore(store, read_only=True) as rs:
        names = rs.datasets(with_scores=True)
    if not names:
        raise NoStoredScoresError(f"{store}: the table 'scores' is empty: {_KEEP_SCORES_HINT}")
    return names


def candidates_from_store(store: str | Path, dataset: str, *, candidates: str | int = "all",
                          measure: str = "roc_auc", with_data: bool = False) -> CandidateSet:
    """The candidate set of one variant from a results store that kept its score vectors.

    ``candidates = "all"``: every stored (method, params, metric, k). ``candidates = n`` (e.g. 10): the
    :func:`paper_candidates` by the stored ``measure``; the fixed defaults (kNN k = 10, LOF k = 20) are then
    read as ``references`` when they are not among them. This is the one function that touches the store
    (through :func:`odeval.bench.ensembles.stored_runs` and :func:`~odeval.bench.ensembles.read_scorings`).
    ``with_data``: also load X (for selectors that need the data) from the file recorded in the runs'
    provenance (``source``), checking its SHA-256 when recorded.
    """
    from odeval.bench.ensembles import read_scorings, stored_keys, stored_runs
    from odeval.bench.store import ResultStore

    runs = stored_runs(store, dataset, measure=measure)
    refs = pd.DataFrame(columns=runs.columns)
    if candidates != "all":
        try:
            n = int(candidates)
        except (TypeError, ValueError):
            raise ValueError(f"candidates must be 'all' or a positive integer, got {candidates!r}") from None
        if measure not in runs.columns:
            raise ValueError(f"{store}: the runs of {dataset!r} have no column {measure!r} to choose candidates by")
        keep = paper_candidates(runs[measure].to_numpy(dtype=np.float64), n)
        is_ref = np.zeros(len(runs), dtype=bool)
        for method, k in DEFAULT_CANDIDATES:
            # k is NA for a scoring without k (an imported estimator): never a default candidate
            is_ref |= ((runs["method"].str.lower() == method.lower()).to_numpy()
                       & (runs["k"] == k).to_numpy(dtype=bool, na_value=False))
        is_ref[keep] = False
        refs = runs[is_ref]
        runs = runs.iloc[keep]
    sc = read_scorings(store, dataset, runs=pd.concat([runs, refs]) if len(refs) else runs)
    S = np.vstack([finite_for_ranking(row) for row in sc.scores])
    R = len(runs)
    names = tuple(sc.names)
    with ResultStore(store, read_only=True) as rs:
        facts = rs.variant_facts(dataset)
    base = str(facts["base_dataset"]) if facts.get("base_dataset") is not None else dataset
    X = _load_data(dataset, facts.get("provenance"), sc.labels.size) if with_data else None
    return CandidateSet(dataset, S[:R], sc.labels, names[:R], base,
                        {names[i]: S[i] for i in range(R, S.shape[0])}, X, tuple(stored_keys(sc.runs))[:R])


def stored_picks(store: str | Path, *, candidates: str | int = "all", seed: int = 0,
                 study_hash: str | None = None, measures: Sequence[str] = AUDIT_MEASURES
                 ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, tuple[str, ...]]]:
    """The picks a study's per-variant step stored (``[selection]``, :mod:`odeval.bench.variant_step`), judged
    as :func:`evaluate_selections` judges picks computed now.

    Only finished 'selection' tasks with these ``candidates`` and ``seed`` (of ``study_hash`` when given) are
    read; when several tasks of a variant ran a selector, the most recent one is used
    (:meth:`odeval.bench.store.ResultStore.stored_selection`). When a variant also has
    IREOS values of the same candidates (``internal = ["ireos"]``) and its selection task did not run the
    ``ireos`` selector, the ``ireos`` pick is the candidate with the largest stored adjusted index (the raw index
    without adjustment), so IREOS joins the audit without being computed twice.

    Returns
    -------
    picks, candidates : DataFrame
        As :func:`evaluate_selections`, over all stored variants (empty frames when none is stored).
    selectors : dict
        Variant → the selectors stored for it.
    """
    from odeval.bench.store import ResultStore

    with ResultStore(store, read_only=True) as rs:
        stored = rs.stored_selection(candidates=str(candidates), seed=seed, study_hash=study_hash)
    itasks = stored.ireos_tasks
    all_picks, all_cands, chosen = [], [], {}
    for dataset in stored.datasets:
        sub = stored.picks[stored.picks["dataset"] == dataset]
        c = stored.candidates[stored.candidates["dataset"] == dataset]
        quality = {m: c[m].to_numpy(np.float64) for m in measures}
        judged = []
        for row in sub.itertuples(index=False):
            value = None if row.choice == "" else {m: float(getattr(row, m)) for m in measures}
            judged.append((row.selector, row.selector_kind,
                           "expected (random)" if row.selector_kind == "expected" else row.choice,
                           value, row.note or ""))
        ireos_p = math.nan
        if "ireos" not in set(sub["selector"]) and stored.ireos_values is not None:
            pick = _stored_ireos_pick(stored.ireos_values, itasks[itasks["dataset"] == dataset], c,
                                      stored.ireos_names)
            if pick is not None:
                judged.append(("ireos", "pick", pick[0], {m: float(pick[1][m]) for m in measures}, pick[2]))
                ireos_p = pick[3]
        base = stored.facts.get(dataset, {}).get("base_dataset") or dataset
        rows = pick_rows(str(dataset), str(base), quality, judged, measures)
        rows["pick_p_value"] = np.where(rows["selector"] == "ireos", ireos_p, math.nan)
        all_picks.append(rows)
        all_cands.append(pd.DataFrame({"dataset": dataset, "candidate": list(c["name"]),
                                       **{m: quality[m] for m in measures}}))
        chosen[str(dataset)] = tuple(j[0] for j in judged)
    if not all_picks:
        return pd.DataFrame(), pd.DataFrame(), {}
    return pd.concat(all_picks, ignore_index=True), pd.concat(all_cands, ignore_index=True), chosen


def _stored_ireos_pick(values: pd.DataFrame, tasks: pd.DataFrame, cands: pd.DataFrame,
                       names: Mapping[str, tuple[str, ...]]) -> tuple[str, pd.Series, str, float] | None:
    """(choice, candidate row, note, p-value) of the largest stored IREOS among ``cands``; None when there is none.

    Prefers the variant's latest IREOS task whose candidates are ``cands`` (the same names in the same order);
    otherwise the latest task whose candidates include all of ``cands`` (IREOS of every candidate, read for the
    ten of §4.2): its values were computed with one γ_max for *all* its candidates (§3.4), not for these alone,
    which the note says. The p-value of the pick (``ireos_p_value``, one-sided, against random solutions) is in
    the note when stored."""
    order = list(cands.sort_values("candidate")["name"])
    latest = list(reversed(list(tasks.sort_values("finished", kind="stable")["task_id"])))
    exact = [t for t in latest if tuple(names.get(t, ())) == tuple(order)]
    superset = [t for t in latest if t not in exact and set(order) <= set(names.get(t, ()))]
    for task_id in exact + superset:
        v = values[values["task_id"] == task_id]
        measure = "ireos_adjusted" if (v["measure"] == "ireos_adjusted").any() else "ireos"
        pos = {n: i for i, n in enumerate(names.get(task_id, ()))}
        wanted = [pos[n] for n in order]
        by_cand = v[v["measure"] == measure].set_index("candidate")["value"]
        if not set(wanted) <= set(by_cand.index):
            continue
        vals = by_cand.loc[wanted].to_numpy(float)
        if not np.isfinite(vals).any():
            continue
        best = int(np.nanargmax(vals))
        row = cands.sort_values("candidate").iloc[best]
        note = f"from the study's stored {measure} (internal = ['ireos'])"
        if task_id in superset:
            note += f"; γ_max of all {len(pos)} candidates"
        pv = v[(v["measure"] == "ireos_p_value") & (v["candidate"] == wanted[best])]["value"]
        p = float(pv.iloc[0]) if len(pv) else math.nan
        if np.isfinite(p):
            note += f"; p = {p:.3g}"
        return str(row["name"]), row, note, p
    return None


def _load_data(dataset: str, provenance: str | None, n: int) -> np.ndarray:
    """X of a stored variant, from the file named in its provenance (``source``, ``sha256``)."""
    import hashlib
    import json

    from odeval.data import load_dataset

    prov = json.loads(provenance) if provenance else {}
    src = prov.get("source")
    if not src or not Path(src).is_file():
        raise ValueError(f"{dataset}: the data file recorded in the store ({src or 'none'}) is not available; "
                         "selectors that need the data cannot run")
    digest = prov.get("sha256")
    if digest and hashlib.sha256(Path(src).read_bytes()).hexdigest() != digest:
        raise ValueError(f"{dataset}: {src} changed since the study ran (SHA-256 differs from the store's)")
    X = load_dataset(src).numeric_matrix()
    if X.shape[0] != n:
        raise ValueError(f"{dataset}: {src} has {X.shape[0]} objects, the stored scores {n}")
    return X


# --------------------------------------------------------------------------------------------- per variant
def _percentile(values: np.ndarray, v: float) -> float:
    """Mid-rank percentile of v among values: 100 · (#{q < v} + ½ #{q = v}) / R (the mean over all
    candidates is exactly 50, the random pick's expectation)."""
    return float(100.0 * (np.sum(values < v) + 0.5 * np.sum(values == v)) / values.size)


def evaluate_selections(cset: CandidateSet, selections: Mapping[str, Selection],
                        measures: Sequence[str] = AUDIT_MEASURES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judge the selections of one variant by its labels.

    Returns
    -------
    picks : DataFrame
        One row per (selector, measure): ``dataset``, ``base_dataset``, ``n_candidates``, ``selector``,
        ``choice`` (candidate name, ``ensemble of R`` or ``expected (random)``), ``measure``, ``value``,
        ``cand_min``, ``cand_mean``, ``cand_max``, ``percentile`` (mid-rank, 0–100), ``is_best`` (value ≥ the
        best candidate's); ``value`` is NaN with a ``note`` when the selector could not choose.
        A selector of kind ``expected`` (random) gets the mean over the candidates (percentile 50).
    candidates : DataFrame
        One row per candidate: ``dataset``, ``candidate``, and one column per measure.
    """
    S = cset.scores
    quality = evaluate_many(cset.labels, S)
    cand = pd.DataFrame({"dataset": cset.dataset, "candidate": list(cset.names),
                         **{m: quality[m] for m in measures}})
    judged = []
    for name, sel in selections.items():
        info = get_selector(name)
        value: dict[str, float] | None = None
        choice = ""
        if info.kind == "expected":
            choice = "expected (random)"
        elif sel.index is not None:
            choice = cset.names[sel.index]
            value = {m: float(quality[m][sel.index]) for m in measures}
        elif sel.scores is not None:
            own = evaluate_many(cset.labels, finite_for_ranking(sel.scores)[None, :])
            choice = sel.note.split(":")[0] if sel.note.startswith("reference") else f"ensemble of {len(sel.members)}"
            value = {m: float(own[m][0]) for m in measures}
        judged.append((name, info.kind, choice, value, sel.note))
    return pick_rows(cset.dataset, cset.base_dataset, quality, judged, measures), cand


def pick_rows(dataset: str, base_dataset: str, quality: Mapping[str, np.ndarray],
              judged: Sequence[tuple[str, str, str, Mapping[str, float] | None, str]],
              measures: Sequence[str] = AUDIT_MEASURES) -> pd.DataFrame:
    """The ``picks`` frame of :func:`evaluate_selections` from judged picks of one variant.

    ``quality``: measure → (R,) quality of the candidates; ``judged``: (selector, kind, choice, the pick's
    quality per measure or None when it could not choose, note). A selector of kind ``expected`` (random) gets
    the mean over the candidates and percentile 50 whatever it picked.
    """
    rows = []
    for name, kind, choice, value, note in judged:
        for m in measures:
            q = np.asarray(quality[m], dtype=np.float64)
            if kind == "expected":
                v, pct = float(q.mean()), 50.0  # the mean mid-rank percentile is exactly 50
            elif value is not None and np.isfinite(value[m]):
                v = float(value[m])
                pct = _percentile(q, v)
            else:
                v, pct = math.nan, math.nan
            rows.append({"dataset": dataset, "base_dataset": base_dataset or dataset,
                         "n_candidates": int(q.size), "selector": name, "choice": choice, "measure": m,
                         "value": v, "cand_min": float(q.min()), "cand_mean": float(q.mean()),
                         "cand_max": float(q.max()), "percentile": pct,
                         "is_best": bool(np.isfinite(v) and v >= q.max() - 1e-12), "note": note})
    return pd.DataFrame(rows)


def audit_variant(cset: CandidateSet, selectors: Sequence[str] | None = None, *, seed: int = 0,
                  measures: Sequence[str] = AUDIT_MEASURES, settings: Mapping[str, Any] | None = None
                  ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every selector on one candidate set (no labels) and judge the picks (:func:`evaluate_selections`).

    A selector that names a candidate outside the set (a fixed default among ``cset.references``) is judged
    on that reference scoring, with a note. ``settings``: selector name → its settings
    (:func:`odeval.labelfree.selection.run_selectors`; the others run with their defaults).
    """
    names = list(selectors) if selectors is not None else list(default_selectors())
    selections = run_selectors(cset.scores, cset.names, names, X=cset.X, seed=seed,
                               references=dict(cset.references), settings=settings, keys=cset.keys)
    return evaluate_selections(cset, selections, measures)


# --------------------------------------------------------------------------------------------- across variants
def _wide(picks: pd.DataFrame, measure: str, blocks: str = "dataset") -> pd.DataFrame:
    sub = picks[picks["measure"] == measure]
    if sub.empty:
        raise ValueError(f"no picks for measure {measure!r}; measures present: {sorted(picks['measure'].unique())}")
    return sub.pivot_table(index=blocks, columns="selector", values="value", aggfunc="mean", dropna=False)


def selection_summary(picks: pd.DataFrame, measure: str = "roc_auc") -> pd.DataFrame:
    """Per selector over the variants: ``n_variants`` (with a value), ``mean``, ``mean_percentile``,
    ``best_choices`` (variants where the pick is as good as the best candidate), ``mean_gap_to_best``
    (best candidate − pick), ``mean_rank`` (rank among the selectors on each variant with every selector
    valued, 1 = best, ties averaged). Sorted by mean rank, then mean."""
    sub = picks[picks["measure"] == measure]
    g = sub.groupby("selector", sort=False)
    out = pd.DataFrame({
        "n_variants": g["value"].count(),
        "mean": g["value"].mean(),
        "mean_percentile": g["percentile"].mean(),
        "best_choices": g["is_best"].sum().astype(np.int64),
        "mean_gap_to_best": (sub["cand_max"] - sub["value"]).groupby(sub["selector"]).mean(),
    })
    wide = _wide(picks, measure).dropna(axis=0)
    if len(wide) and wide.shape[1] > 1:
        ranks = sps.rankdata(-wide.to_numpy(), axis=1, method="average")
        out["mean_rank"] = pd.Series(ranks.mean(axis=0), index=wide.columns)
    else:
        out["mean_rank"] = np.nan
    out.index.name = "selector"
    return out.reset_index().sort_values(["mean_rank", "mean"], ascending=[True, False], kind="stable",
                                         na_position="last").reset_index(drop=True)


def selection_tests(picks: pd.DataFrame, measure: str = "roc_auc",
                    baselines: Sequence[str] = BASELINES) -> pd.DataFrame:
    """One-sided Wilcoxon signed-rank test of every selector against each baseline, paired by variant.

    H1: the selector's pick is better than the baseline's (``scipy.stats.wilcoxon``, alternative "greater",
    zero differences dropped — Wilcoxon's original treatment). Variants where either has no value are left
    out. With no non-zero difference the p-value is 1.

    Returns
    -------
    DataFrame
        ``selector``, ``baseline``, ``n`` (paired variants), ``n_better``, ``n_worse``, ``mean_diff``,
        ``statistic``, ``p_value``.
    """
    wide = _wide(picks, measure)
    rows = []
    for base in baselines:
        if base not in wide.columns:
            continue
        for sel in wide.columns:
            if sel == base:
                continue
            pair = wide[[sel, base]].dropna()
            d = (pair[sel] - pair[base]).to_numpy()
            nz = d[d != 0]
            if nz.size == 0:
                stat, p = math.nan, 1.0
            else:
                res = sps.wilcoxon(nz, alternative="greater")
                stat, p = float(res.statistic), float(res.pvalue)
            rows.append({"selector": sel, "baseline": base, "n": int(d.size), "n_better": int((d > 0).sum()),
                         "n_worse": int((d < 0).sum()), "mean_diff": float(d.mean()) if d.size else math.nan,
                         "statistic": stat, "p_value": p})
    return pd.DataFrame(rows, columns=["selector", "baseline", "n", "n_better", "n_worse", "mean_diff",
                                       "statistic", "p_value"])


def selection_friedman(picks: pd.DataFrame, measure: str = "roc_auc", *, blocks: str = "dataset",
                       alpha: float = 0.05) -> dict[str, Any]:
    """Friedman test and Nemenyi post-hoc test across the selectors (Demšar 2006), via
    :mod:`odeval.analysis.stats`.

    ``blocks = "dataset"`` treats every variant as a block; ``"base_dataset"`` averages the variants of a
    base dataset first (variants of one base are not independent). Blocks where a selector has no value are
    left out.

    Returns
    -------
    dict
        ``friedman`` (one-row frame), ``nemenyi`` (pairwise frame), ``ranks`` (average ranks, best first),
        ``cd`` (critical difference at ``alpha``), ``n_blocks``; or ``{"error": reason}`` when fewer than two
        blocks or selectors remain.
    """
    wide = _wide(picks, measure, blocks).dropna(axis=0)
    if wide.shape[0] < 2 or wide.shape[1] < 2:
        return {"error": f"Friedman/Nemenyi need >= 2 complete blocks and >= 2 selectors, have {wide.shape}"}
    return {"friedman": friedman_test(wide), "nemenyi": nemenyi_test(wide), "ranks": average_ranks(wide),
            "cd": nemenyi_critical_difference(wide.shape[1], wide.shape[0], alpha), "n_blocks": int(wide.shape[0]),
            "alpha": alpha}


def p_text(p: float) -> str:
    """A p-value as the audit's text shows it: 3 decimals, scientific below 0.001, "n/a" when not finite."""
    return "n/a" if not np.isfinite(p) else (f"{p:.1e}" if p < 1e-3 else f"{p:.3f}")


def selection_verdicts(summary: pd.DataFrame, tests: pd.DataFrame, measure: str = "roc_auc",
                       alpha: float = 0.05) -> dict[str, str]:
    """One plain-words line per selector: its mean quality against the candidates' mean and best, how often it
    picks the best, and whether it beats the random pick and each fixed default (one-sided Wilcoxon at
    ``alpha``)."""
    out = {}
    for row in summary.itertuples(index=False):
        sel = str(row.selector)
        parts = [f"mean {measure} {row.mean:.3f}, mean percentile {row.mean_percentile:.0f}, "
                 f"best candidate on {row.best_choices}/{row.n_variants} variants"]
        t = tests[tests["selector"] == sel]
        for b in t.itertuples(index=False):
            if b.p_value < alpha:
                word = "significantly better than"
            elif b.mean_diff < 0 and b.n_worse > b.n_better:
                word = "on average worse than"
            else:
                word = "not significantly better than"
            parts.append(f"{word} {b.baseline} ({b.n_better} better / {b.n_worse} worse of {b.n}, "
                         f"p = {p_text(b.p_value)})")
        out[sel] = f"{sel}: " + "; ".join(parts)
    return out


@dataclass
class SelectionAudit:
    """Result of :func:`audit_selection` (all frames; :meth:`to_dict` for JSON)."""

    picks: pd.DataFrame
    candidates: pd.DataFrame
    measure: str
    summary: pd.DataFrame
    tests: pd.DataFrame
    friedman: dict[str, Any]
    verdicts: dict[str, str]
    selectors: tuple[str, ...]
    candidates_mode: str = "all"
    seed: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: _clean(v) for k, v in r.items()} for r in frame.to_dict(orient="records")]

        fr = {k: (records(v) if isinstance(v, pd.DataFrame) else _clean(v)) for k, v in self.friedman.items()}
        return {"measure": self.measure, "candidates": self.candidates_mode, "seed": self.seed,
                "selectors": list(self.selectors), "summary": records(self.summary), "tests": records(self.tests),
                "friedman_nemenyi": fr, "verdicts": self.verdicts, "picks": records(self.picks),
                "failed": [{"dataset": d, "error": e} for d, e in self.failed]}


def _clean(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if not np.isfinite(v) else float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def audit_selection(candidate_sets: Iterable[CandidateSet | tuple[str, Callable[[], CandidateSet]]],
                    selectors: Sequence[str] | None = None, *, measure: str = "roc_auc", seed: int = 0,
                    blocks: str = "dataset", alpha: float = 0.05, candidates_mode: str = "all",
                    progress: Callable[[str], None] | None = None,
                    stored: tuple[pd.DataFrame, pd.DataFrame] | None = None,
                    settings: Mapping[str, Any] | None = None) -> SelectionAudit:
    """The whole meta-evaluation over many variants.

    Parameters
    ----------
    candidate_sets : iterable of CandidateSet or of (name, loader) pairs, the loader a zero-argument callable
        returning the set (loaded lazily, so a store with hundreds of variants is never held in memory at
        once). A loader that raises ``ValueError`` is recorded in ``failed`` with the name and skipped.
    selectors : names (default: :func:`odeval.labelfree.selection.default_selectors`, all but em / mv).
    measure : the measure of the summary, tests and verdicts (all of :data:`AUDIT_MEASURES` are in ``picks``).
    progress : called with the variant name after each variant.
    stored : (picks, candidates) frames already judged (e.g. :func:`stored_picks`), audited together with the
        candidate sets (which should then be the variants or selectors missing from them).
    settings : selector name → its settings (e.g. a coarser ``EMMVSettings`` for ``em`` / ``mv``).
    """
    names = tuple(get_selector(s).name for s in (selectors or default_selectors()))
    if measure not in AUDIT_MEASURES:
        raise ValueError(f"unknown audit measure {measure!r}; use one of {', '.join(AUDIT_MEASURES)}")
    all_picks, all_cands, failed = [], [], []
    if stored is not None and len(stored[0]):
        all_picks.append(stored[0][stored[0]["selector"].isin(names)])
        all_cands.append(stored[1])
    for item in candidate_sets:
        if isinstance(item, CandidateSet):
            cset = item
        else:
            label, loader = item
            try:
                cset = loader()
            except ValueError as exc:
                failed.append((str(label), str(exc)))
                if progress is not None:
                    progress(str(label))
                continue
        picks, cands = audit_variant(cset, names, seed=seed, settings=settings)
        all_picks.append(picks)
        all_cands.append(cands)
        if progress is not None:
            progress(cset.dataset)
    if not all_picks:
        raise ValueError("no candidate set to audit" + (f": {failed[0][0]}: {failed[0][1]}" if failed else ""))
    picks = pd.concat(all_picks, ignore_index=True)
    cands = pd.concat(all_cands, ignore_index=True).drop_duplicates(["dataset", "candidate"], ignore_index=True)
    summary = selection_summary(picks, measure)
    tests = selection_tests(picks, measure)
    friedman = selection_friedman(picks, measure, blocks=blocks, alpha=alpha)
    verdicts = selection_verdicts(summary, tests, measure, alpha)
    return SelectionAudit(picks, cands, measure, summary, tests, friedman, verdicts, names, str(candidates_mode),
                          seed, failed)


def audit_store(store: str | Path, selectors: Sequence[str] | None = None, *, candidates: str | int = "all",
                measure: str = "roc_auc", seed: int = 0, blocks: str = "dataset", alpha: float = 0.05,
                datasets: Sequence[str] | None = None, compute_missing: bool = False, study_hash: str | None = None,
                progress: Callable[[str], None] | None = None, settings: Mapping[str, Any] | None = None
                ) -> tuple[SelectionAudit, str, list[str]]:
    """The meta-evaluation of a results store: from the picks its studies stored (``[selection]``) when there
    are any, else computed now from the kept score vectors.

    With stored picks, ``selectors`` defaults to the stored ones; a requested selector stored for no variant is
    an error unless ``compute_missing``, which computes the missing (variant, selector) pairs from the kept
    score vectors (and the variants with kept scores but no stored picks). Variants missing some selector
    without ``compute_missing`` are reported in the messages. ``settings`` (selector name → settings) applies to
    the selectors computed now. Unknown selectors, and ``datasets`` of which nothing is stored or computable, are
    errors (``ValueError``).

    Returns
    -------
    audit : SelectionAudit
    source : "stored", "computed" or "stored+computed"
    messages : list of str
        What was not stored and not computed.
    """
    for name in selectors or ():
        get_selector(name)  # an unknown name fails before the store is read
    audit, source, messages = _audit_store(store, selectors, candidates=candidates, measure=measure, seed=seed,
                                           blocks=blocks, alpha=alpha, datasets=datasets,
                                           compute_missing=compute_missing, study_hash=study_hash,
                                           progress=progress, settings=settings)
    if datasets:
        missing = sorted(set(datasets) - set(audit.picks["dataset"]))
        if missing:
            raise ValueError(f"{store}: no stored picks or kept scores of variant(s) {', '.join(missing)}")
    return audit, source, messages


def _audit_store(store: str | Path, selectors: Sequence[str] | None, *, candidates: str | int, measure: str,
                 seed: int, blocks: str, alpha: float, datasets: Sequence[str] | None, compute_missing: bool,
                 study_hash: str | None, progress: Callable[[str], None] | None,
                 settings: Mapping[str, Any] | None) -> tuple[SelectionAudit, str, list[str]]:
    mode = str(candidates)
    picks, cands, have = stored_picks(store, candidates=mode, seed=seed, study_hash=study_hash)
    if datasets is not None and have:
        keep = set(datasets)
        picks, cands = picks[picks["dataset"].isin(keep)], cands[cands["dataset"].isin(keep)]
        have = {d: s for d, s in have.items() if d in keep}
    if not have:  # nothing stored: compute everything from the kept scores (needs keep_scores = true)
        every = stored_variants(store)
        unknown = sorted(set(datasets or ()) - set(every))
        if unknown:
            raise ValueError(f"{store}: no kept scores of variant(s) {', '.join(unknown)}")
        names = [n for n in every if datasets is None or n in set(datasets)]
        wanted = tuple(selectors) if selectors else default_selectors()
        with_data = any(get_selector(s).needs_data for s in wanted)
        loaders = [(n, lambda n=n: candidates_from_store(store, n, candidates=candidates, measure="roc_auc",
                                                         with_data=with_data)) for n in names]
        audit = audit_selection(loaders, wanted, measure=measure, seed=seed, blocks=blocks, alpha=alpha,
                                candidates_mode=mode, progress=progress, settings=settings)
        return audit, "computed", []
    stored_sel = tuple(dict.fromkeys(s for sels in have.values() for s in sels))
    wanted = tuple(get_selector(s).name for s in selectors) if selectors else stored_sel
    messages: list[str] = []
    missing = {d: tuple(s for s in wanted if s not in sels) for d, sels in have.items()}
    missing = {d: m for d, m in missing.items() if m}
    absent = [s for s in wanted if s not in stored_sel]
    source = "stored"
    if compute_missing:
        from odeval.bench.ensembles import NoStoredScoresError

        try:
            extra_variants = [n for n in stored_variants(store) if n not in have
                              and (datasets is None or n in set(datasets))]
        except NoStoredScoresError:
            extra_variants = []
        missing.update({n: wanted for n in extra_variants})
        more_p, more_c = [picks], [cands]
        for d, sels in missing.items():
            try:
                cset = candidates_from_store(store, d, candidates=candidates, measure="roc_auc",
                                             with_data=any(get_selector(s).needs_data for s in sels))
            except ValueError as exc:
                messages.append(f"{d}: {', '.join(sels)} not stored and not computable: {exc}")
                continue
            p, c = audit_variant(cset, sels, seed=seed, settings=settings)
            more_p.append(p)
            more_c.append(c)
            source = "stored+computed"
            if progress is not None:
                progress(d)
        picks, cands = pd.concat(more_p, ignore_index=True), pd.concat(more_c, ignore_index=True)
    elif absent:
        raise ValueError(f"{store}: selector(s) {', '.join(absent)} not stored for candidates {mode}, seed {seed} "
                         f"(stored: {', '.join(stored_sel)}): add them to the study's [selection] and run it again, "
                         "or use --compute-missing (needs kept score vectors)")
    else:
        messages += [f"{d}: {', '.join(m)} not stored (--compute-missing computes them)" for d, m in missing.items()]
    audit = audit_selection([], wanted, measure=measure, seed=seed, blocks=blocks, alpha=alpha,
                            candidates_mode=mode, stored=(picks, cands))
    return audit, source, messages


def friedman_line(fr: Mapping[str, Any]) -> str:
    """One line for the result of :func:`selection_friedman`."""
    if "error" in fr:
        return f"Friedman/Nemenyi: {fr['error']}"
    f = fr["friedman"].iloc[0]
    return (f"Friedman over {fr['n_blocks']} blocks × {int(f['n_methods'])} selectors: χ² = {f['chi2']:.2f}, "
            f"p = {p_text(float(f['p_chi2']))} (Iman–Davenport F = {f['f']:.2f}, p = {p_text(float(f['p_f']))}); "
            f"Nemenyi CD (α = {fr['alpha']}) = {fr['cd']:.2f} ranks")
