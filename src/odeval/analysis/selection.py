"""Meta-evaluation of label-free model selection: how good is the candidate a selector picks, by the labels?

For every dataset variant, a *candidate set* (every method × k a study kept the scores of, or the ten
candidates of Marques et al. 2020, §4.2) is given to each selector of :mod:`odeval.compare.selection`, which
sees no labels. The labels then judge the pick: its ROC AUC, average precision and adjusted AP next to the
minimum, mean and maximum over the candidates and its percentile among them (as in Marques et al. 2020,
Table 7 and Fig. 9). Across variants: mean quality and mean rank per selector, one-sided Wilcoxon signed-rank
tests against the random pick and the fixed defaults, Friedman + Nemenyi across all selectors
(:mod:`odeval.analysis.stats`), and one plain-words verdict per selector.

Pure functions over arrays and frames; the only store access is :func:`stored_variants` and
:func:`candidates_from_store` (which reuse :func:`odeval.bench.ensembles.stored_runs` / ``read_scorings``).

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

from odeval.analysis.stats import average_ranks, friedman_test, nemenyi_critical_difference, nemenyi_test
from odeval.compare.selection import Selection, default_selectors, get_selector, run_selector
from odeval.measures import evaluate_many, finite_for_ranking

__all__ = [
    "AUDIT_MEASURES",
    "BASELINES",
    "CandidateSet",
    "SelectionAudit",
    "audit_selection",
    "audit_variant",
    "candidates_from_store",
    "evaluate_selections",
    "format_audit",
    "friedman_line",
    "paper_candidates",
    "selection_friedman",
    "selection_summary",
    "selection_tests",
    "selection_verdicts",
    "stored_variants",
]

#: Measures of the pick reported by the audit (keys of :func:`odeval.measures.evaluate`).
AUDIT_MEASURES: tuple[str, ...] = ("roc_auc", "average_precision", "adjusted_average_precision")
#: Selectors every other selector is tested against (one-sided Wilcoxon signed-rank).
BASELINES: tuple[str, ...] = ("random", "default-knn10", "default-lof20")
#: Candidates of the fixed-default selectors, read from the store even when not among the candidates.
DEFAULT_CANDIDATES: tuple[tuple[str, int], ...] = (("kNN", 10), ("LOF", 20))


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
    """

    dataset: str
    scores: np.ndarray = field(repr=False)
    labels: np.ndarray = field(repr=False)
    names: tuple[str, ...]
    base_dataset: str = ""
    references: Mapping[str, np.ndarray] = field(default_factory=dict, repr=False)
    X: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        S = np.asarray(self.scores, dtype=np.float64)
        if S.ndim != 2 or S.shape[0] < 1:
            raise ValueError(f"{self.dataset}: candidate scores must be (R, N) with R >= 1, got shape {S.shape}")
        if len(self.names) != S.shape[0]:
            raise ValueError(f"{self.dataset}: {len(self.names)} names for {S.shape[0]} candidates")
        if np.asarray(self.labels).shape != (S.shape[1],):
            raise ValueError(f"{self.dataset}: {np.asarray(self.labels).shape} labels for {S.shape[1]} objects")


def paper_candidates(quality: Any, n: int = 10) -> np.ndarray:
    """The ``n`` candidates of Marques et al. (2020, §4.2): the best and the worst by ``quality`` (ROC AUC),
    the others as evenly spaced in quality as possible.

    Targets t_0 = min, t_1 = max, then the n − 2 interior points of ``linspace(min, max, n)``; each target
    takes the not yet chosen candidate closest in quality (ties: the lower index). NaN qualities are never
    chosen.

    Returns
    -------
    ndarray of int64
        Chosen row indices, sorted ascending (all finite rows when there are at most ``n``).
    """
    q = np.asarray(quality, dtype=np.float64)
    if n < 1:
        raise ValueError(f"the number of candidates must be >= 1, got {n}")
    finite = np.flatnonzero(np.isfinite(q))
    if finite.size <= n:
        return finite.astype(np.int64)
    lo, hi = q[finite].min(), q[finite].max()
    grid = np.linspace(lo, hi, n)
    targets = [grid[0], grid[-1], *grid[1:-1]] if n > 1 else [hi]
    free = np.zeros(q.size, dtype=bool)
    free[finite] = True
    chosen = []
    for t in targets:
        idx = np.flatnonzero(free)
        j = int(idx[np.argmin(np.abs(q[idx] - t))])
        chosen.append(j)
        free[j] = False
    return np.sort(np.array(chosen, dtype=np.int64))


# ------------------------------------------------------------------------------------------------ store glue
def stored_variants(store: str | Path) -> list[str]:
    """Dataset variants of the store with kept score vectors (table ``scores``), sorted."""
    from odeval.bench.ensembles import _KEEP_SCORES_HINT, NoStoredScoresError
    from odeval.bench.store import open_read_only, table_names

    con = open_read_only(store)
    try:
        if "scores" not in table_names(con):
            raise NoStoredScoresError(f"{store}: no table 'scores': {_KEEP_SCORES_HINT}")
        names = [r[0] for r in con.execute("SELECT DISTINCT dataset FROM scores ORDER BY 1").fetchall()]
    finally:
        con.close()
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
    from odeval.bench.ensembles import read_scorings, stored_runs
    from odeval.bench.store import open_read_only

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
            is_ref |= (runs["method"].str.lower() == method.lower()).to_numpy() & (runs["k"] == k).to_numpy()
        is_ref[keep] = False
        refs = runs[is_ref]
        runs = runs.iloc[keep]
    sc = read_scorings(store, dataset, runs=pd.concat([runs, refs]) if len(refs) else runs)
    S = np.vstack([finite_for_ranking(row) for row in sc.scores])
    R = len(runs)
    names = tuple(sc.names)
    con = open_read_only(store)
    try:
        row = con.execute("SELECT any_value(base_dataset), any_value(provenance) FROM runs WHERE dataset = ?",
                          [dataset]).fetchone()
    finally:
        con.close()
    base = str(row[0]) if row and row[0] is not None else dataset
    X = _load_data(dataset, row[1] if row else None, sc.labels.size) if with_data else None
    return CandidateSet(dataset, S[:R], sc.labels, names[:R], base,
                        {names[i]: S[i] for i in range(R, S.shape[0])}, X)


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
    rows = []
    for name, sel in selections.items():
        info = get_selector(name)
        vec = None
        choice, note = "", sel.note
        if info.kind == "expected":
            choice = "expected (random)"
        elif sel.index is not None:
            choice = cset.names[sel.index]
        elif sel.scores is not None:
            vec = finite_for_ranking(sel.scores)
            choice = sel.note.split(":")[0] if sel.note.startswith("reference") else f"ensemble of {len(sel.members)}"
        own = evaluate_many(cset.labels, vec[None, :]) if vec is not None else None
        for m in measures:
            q = quality[m]
            if info.kind == "expected":
                v, pct = float(q.mean()), 50.0  # the mean mid-rank percentile is exactly 50
            elif sel.index is not None:
                v = float(q[sel.index])
                pct = _percentile(q, v)
            elif own is not None:
                v = float(own[m][0])
                pct = _percentile(q, v)
            else:
                v, pct = math.nan, math.nan
            rows.append({"dataset": cset.dataset, "base_dataset": cset.base_dataset or cset.dataset,
                         "n_candidates": int(S.shape[0]), "selector": name, "choice": choice, "measure": m,
                         "value": v, "cand_min": float(q.min()), "cand_mean": float(q.mean()),
                         "cand_max": float(q.max()), "percentile": pct,
                         "is_best": bool(np.isfinite(v) and v >= q.max() - 1e-12), "note": note})
    return pd.DataFrame(rows), cand


def audit_variant(cset: CandidateSet, selectors: Sequence[str] | None = None, *, seed: int = 0,
                  measures: Sequence[str] = AUDIT_MEASURES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run every selector on one candidate set (no labels) and judge the picks (:func:`evaluate_selections`).

    A selector that names a candidate outside the set (a fixed default among ``cset.references``) is judged
    on that reference scoring, with a note.
    """
    names = list(selectors) if selectors is not None else list(default_selectors())
    selections: dict[str, Selection] = {}
    for name in names:
        info = get_selector(name)
        try:
            sel = run_selector(info.name, cset.scores, cset.names, X=cset.X if info.needs_data else None, seed=seed)
        except ValueError as exc:  # e.g. em/mv with no novelty-capable candidate: NaN with the reason, not an abort
            selections[info.name] = Selection(info.name, None, note=f"could not choose: {exc}")
            continue
        if sel.index is None and sel.scores is None:
            for ref_name, vec in cset.references.items():
                alt = run_selector(info.name, vec[None, :], [ref_name], seed=seed)
                if alt.index == 0:
                    sel = Selection(sel.selector, None, scores=vec, members=(),
                                    note=f"reference {ref_name}: not among the candidates, judged on its stored scores")
                    break
        selections[info.name] = sel
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


def _p(p: float) -> str:
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
            parts.append(f"{word} {b.baseline} ({b.n_better} better / {b.n_worse} worse of {b.n}, p = {_p(b.p_value)})")
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
                    progress: Callable[[str], None] | None = None) -> SelectionAudit:
    """The whole meta-evaluation over many variants.

    Parameters
    ----------
    candidate_sets : iterable of CandidateSet or of (name, loader) pairs, the loader a zero-argument callable
        returning the set (loaded lazily, so a store with hundreds of variants is never held in memory at
        once). A loader that raises ``ValueError`` is recorded in ``failed`` with the name and skipped.
    selectors : names (default: :func:`odeval.compare.selection.default_selectors`, all but em / mv).
    measure : the measure of the summary, tests and verdicts (all of :data:`AUDIT_MEASURES` are in ``picks``).
    progress : called with the variant name after each variant.
    """
    names = tuple(get_selector(s).name for s in (selectors or default_selectors()))
    if measure not in AUDIT_MEASURES:
        raise ValueError(f"unknown audit measure {measure!r}; use one of {', '.join(AUDIT_MEASURES)}")
    all_picks, all_cands, failed = [], [], []
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
        picks, cands = audit_variant(cset, names, seed=seed)
        all_picks.append(picks)
        all_cands.append(cands)
        if progress is not None:
            progress(cset.dataset)
    if not all_picks:
        raise ValueError("no candidate set to audit" + (f": {failed[0][0]}: {failed[0][1]}" if failed else ""))
    picks = pd.concat(all_picks, ignore_index=True)
    cands = pd.concat(all_cands, ignore_index=True)
    summary = selection_summary(picks, measure)
    tests = selection_tests(picks, measure)
    friedman = selection_friedman(picks, measure, blocks=blocks, alpha=alpha)
    verdicts = selection_verdicts(summary, tests, measure, alpha)
    return SelectionAudit(picks, cands, measure, summary, tests, friedman, verdicts, names, str(candidates_mode),
                          seed, failed)


def friedman_line(fr: Mapping[str, Any]) -> str:
    """One line for the result of :func:`selection_friedman`."""
    if "error" in fr:
        return f"Friedman/Nemenyi: {fr['error']}"
    f = fr["friedman"].iloc[0]
    return (f"Friedman over {fr['n_blocks']} blocks × {int(f['n_methods'])} selectors: χ² = {f['chi2']:.2f}, "
            f"p = {_p(float(f['p_chi2']))} (Iman–Davenport F = {f['f']:.2f}, p = {_p(float(f['p_f']))}); "
            f"Nemenyi CD (α = {fr['alpha']}) = {fr['cd']:.2f} ranks")


def format_audit(audit: SelectionAudit, *, per_variant: bool = False) -> str:
    """Plain-text tables of :func:`audit_selection` (used by ``odeval select-audit``)."""
    m = audit.measure
    sub = audit.picks[audit.picks["measure"] == m]
    per = sub.drop_duplicates("dataset")
    n_var = len(per)
    sizes = per["n_candidates"]
    lines = [f"model-selection audit: {n_var} variants, candidates {audit.candidates_mode} "
             f"({sizes.min()}–{sizes.max()} per variant), measure {m}, seed {audit.seed}",
             f"candidates (mean over variants): min {per['cand_min'].mean():.3f}, mean {per['cand_mean'].mean():.3f}, "
             f"max {per['cand_max'].mean():.3f}", ""]
    bases = [b for b in BASELINES if b in audit.selectors]
    width = max(8, *(len(s) for s in audit.summary["selector"]))
    head = f"{'selector':{width}}  {'mean':>6}  {'pct':>4}  {'best':>5}  {'rank':>5}"
    for b in bases:
        head += f"  {'p vs ' + b:>20}"
    lines.append(head)
    for row in audit.summary.itertuples(index=False):
        rank = f"{row.mean_rank:.2f}" if np.isfinite(row.mean_rank) else "n/a"
        mean = f"{row.mean:.3f}" if np.isfinite(row.mean) else "n/a"
        pct = f"{row.mean_percentile:.0f}" if np.isfinite(row.mean_percentile) else "n/a"
        line = f"{row.selector:{width}}  {mean:>6}  {pct:>4}  {row.best_choices:>2}/{row.n_variants:<2}  {rank:>5}"
        for b in bases:
            t = audit.tests[(audit.tests["selector"] == row.selector) & (audit.tests["baseline"] == b)]
            line += f"  {(_p(float(t['p_value'].iloc[0])) if len(t) else '—'):>20}"
        lines.append(line)
    lines.append("")
    lines.append("mean = mean quality of the pick; pct = mean percentile among the candidates (random: 50); best = "
                 "variants where the pick is the best candidate; rank = mean rank among the selectors (1 = best); "
                 "p = one-sided Wilcoxon signed-rank, selector better than the baseline.")
    lines.append(friedman_line(audit.friedman))
    lines.append("")
    lines += list(audit.verdicts.values())
    if per_variant:
        wide = sub.pivot_table(index="dataset", columns="selector", values="value", aggfunc="first")
        wide = wide[[s for s in audit.selectors if s in wide.columns]]
        stats_ = per.set_index("dataset")[["n_candidates", "cand_min", "cand_mean", "cand_max"]]
        table = stats_.join(wide)
        lines += ["", f"per variant ({m}):", table.to_string(float_format=lambda x: f"{x:.3f}")]
    if audit.failed:
        lines.append("")
        lines += [f"skipped {d}: {e}" for d, e in audit.failed]
    return "\n".join(lines)
