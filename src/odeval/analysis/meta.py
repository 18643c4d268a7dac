"""Leave-one-base-dataset-out validation of the meta-learned selector (:mod:`odeval.labelfree.meta`).

The question of issue 27: does a selector trained on labelled results pick, *out of sample*, better than kNN with
k = 10? Out of sample means that no preparation of the held-out data was seen in training: the folds are **base
datasets** (every Campos variant of a base dataset and every ODDS / ADBench file holding the same data are one
base dataset; the matching is ``odeval/labelfree/data/meta_base_datasets.csv``, made by content in
``benchmarks/meta_base_datasets.py``). Model choice is nested: for each held-out base dataset, the configuration
(:class:`~odeval.labelfree.meta.MetaConfig`) is chosen by a grouped cross-validation *over the training base
datasets only*, then refitted on all of them; the held-out base is touched once, to be judged.

The picks are judged as the audit judges selectors (:func:`odeval.analysis.selection.pick_rows`: value, percentile
among all stored candidates of the variant, best pick), and the statistics are the audit's: mean quality, mean
percentile, one-sided Wilcoxon against ``random`` and ``default-knn10`` — by variant and, the honest unit, by base
dataset (the mean over its variants) — and Friedman + Nemenyi over base datasets (Demšar 2006).

References
----------
Y. Zhao, R. A. Rossi, L. Akoglu. Automatic unsupervised outlier model selection. NeurIPS 2021, §4 (their
evaluation holds out datasets; here whole base datasets).
J. Demšar. Statistical comparisons of classifiers over multiple data sets. JMLR 7, 2006.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from odeval.analysis.selection import pick_rows, selection_friedman, selection_summary, selection_tests
from odeval.labelfree.meta import REFERENCE, MetaConfig, MetaModel, fit_meta_model, grid_candidates
from odeval.labelfree.metafeatures import FEATURE_NAMES

__all__ = ["BASES_FILE", "CONFIG_SETS", "LOBOResult", "MetaTable", "attempt2_configs", "base_level",
           "default_configs", "inner_folds",
           "leave_one_base_out", "load_bases", "meta_table", "meta_statistics"]

BASES_FILE = Path(__file__).resolve().parents[1] / "labelfree" / "data" / "meta_base_datasets.csv"


def load_bases(path: str | Path = BASES_FILE) -> dict[str, str]:
    """dataset name → base dataset, from the matching table."""
    df = pd.read_csv(path)
    return dict(zip(df["dataset"], df["base_dataset"], strict=True))


@dataclass
class MetaTable:
    """Everything the validation needs, one row per variant.

    Attributes
    ----------
    datasets, bases : list of str
    features : ndarray (n, F)
    grid_quality : ndarray (n, R)
        The trained measure of every grid candidate (NaN where a candidate does not exist, e.g. k ≥ N).
    all_quality : dict of measure → list of ndarray
        Every judged measure of every stored candidate of each variant (for values and percentiles).
    names : list of list of (method, k)
        The stored candidates of each variant, aligned with ``all_quality``.
    measure : str
    store_hash : str
    """

    datasets: list[str]
    bases: list[str]
    features: np.ndarray
    grid_quality: np.ndarray
    all_quality: dict[str, list[np.ndarray]]
    names: list[list[tuple[str, int]]]
    measure: str
    store_hash: str = ""

    def gain(self) -> np.ndarray:
        """(n, R) quality minus kNN k = 10's; a missing candidate gets the variant's worst gain."""
        ref = self.grid_quality[:, grid_candidates().index(REFERENCE)]
        G = self.grid_quality - ref[:, None]
        worst = np.nanmin(G, axis=1)
        return np.where(np.isnan(G), worst[:, None], G)

    def weights(self) -> np.ndarray:
        """1 / (number of variants of the row's base dataset): every base dataset weighs the same."""
        counts = pd.Series(self.bases).value_counts()
        return np.array([1.0 / counts[b] for b in self.bases])


def meta_table(runs: pd.DataFrame, features: pd.DataFrame, bases: dict[str, str], measure: str = "roc_auc",
               store_hash: str = "", judged: Sequence[str] = ("roc_auc", "average_precision")) -> MetaTable:
    """Join the store's units (``ResultStore.runs()``: dataset, method, k, the measure, status) with the
    meta-features (one row per dataset, the columns of :data:`FEATURE_NAMES`) and the base-dataset matching.
    Variants without features or without kNN k = 10 are left out (a ``ValueError`` names a dataset missing from
    the matching table: it must be matched before it can be used). ``measure`` is trained on; the picks are
    judged by every measure of ``judged``."""
    ok = runs[(runs["status"] == "ok") & runs[measure].notna()]
    feats = features.set_index("dataset")
    grid = grid_candidates()
    gidx = {(m.lower(), k): i for i, (m, k) in enumerate(grid)}
    out: dict[str, list[Any]] = {"datasets": [], "bases": [], "features": [], "grid": [], "all": [], "names": []}
    for ds, sub in ok.groupby("dataset", sort=True):
        if ds not in feats.index:
            continue
        if ds not in bases:
            raise ValueError(f"dataset {ds!r} is not in the base-dataset matching table ({BASES_FILE.name})")
        names = [(str(m), int(k)) for m, k in zip(sub["method"], sub["k"], strict=True)]
        q = sub[measure].to_numpy(dtype=np.float64)
        if sub[list(judged)].isna().any().any():
            continue
        row = np.full(len(grid), np.nan)
        for (m, k), v in zip(names, q, strict=True):
            i = gidx.get((m.lower(), k))
            if i is not None:
                row[i] = v
        if np.isnan(row[grid.index(REFERENCE)]):
            continue
        out["datasets"].append(ds)
        out["bases"].append(bases[ds])
        out["features"].append(feats.loc[ds, list(FEATURE_NAMES)].to_numpy(dtype=np.float64))
        out["grid"].append(row)
        out["all"].append({m: sub[m].to_numpy(dtype=np.float64) for m in judged})
        out["names"].append(names)
    return MetaTable(out["datasets"], out["bases"], np.vstack(out["features"]), np.vstack(out["grid"]),
                     {m: [a[m] for a in out["all"]] for m in judged}, out["names"], measure, store_hash)


def default_configs(seed: int = 0) -> list[MetaConfig]:
    """The configurations the nested validation chooses among (fixed before any result was seen)."""
    cfgs = [MetaConfig("fixed", margin=0.0, seed=seed)]
    for margin in (0.0, 0.01, 0.03):
        cfgs += [MetaConfig("forest", margin=margin, min_leaf=8, n_trees=30, seed=seed),
                 MetaConfig("forest", margin=margin, min_leaf=20, n_trees=30, seed=seed),
                 MetaConfig("neighbors", margin=margin, n_neighbors=10, seed=seed)]
    return cfgs


def attempt2_configs(seed: int = 0) -> list[MetaConfig]:
    """Attempt 2's ten configurations, exactly as pre-registered in ``benchmarks/meta_attempt2.md`` (committed
    before any of them was fitted): the default (kNN k = 10 always), MetaOD-style low-rank models (rank 3 or 10,
    margins 0 / 0.01 / 0.03) and the pairwise win-probability forest (τ = 0.5 / 0.6 / 0.7); forests of 100 trees,
    min leaf 10."""
    cfgs = [MetaConfig("default", margin=0.0, seed=seed)]
    for rank in (3, 10):
        cfgs += [MetaConfig("lowrank", margin=m, rank=rank, n_trees=100, min_leaf=10, seed=seed)
                 for m in (0.0, 0.01, 0.03)]
    cfgs += [MetaConfig("winprob", margin=tau, n_trees=100, min_leaf=10, seed=seed) for tau in (0.5, 0.6, 0.7)]
    return cfgs


#: The configuration sets of ``benchmarks/meta_train.py --configs``.
CONFIG_SETS = {"attempt1": default_configs, "attempt2": attempt2_configs}


def inner_folds(bases: Sequence[str], n_folds: int = 5) -> list[list[str]]:
    """Deterministic grouping of base datasets into ``n_folds`` folds (sorted names dealt round-robin)."""
    uniq = sorted(set(bases))
    return [uniq[i::n_folds] for i in range(min(n_folds, len(uniq)))]


def _pick_value(model: MetaModel, table: MetaTable, rows: np.ndarray, margin: float | None = None
                ) -> tuple[np.ndarray, list[tuple[str, int]]]:
    """The measure of the model's pick on each of ``rows`` (among the variant's existing grid candidates), with
    ``margin`` (default: the model's)."""
    margin = model.config.margin if margin is None else margin
    grid = model.candidates
    values, picks = np.empty(rows.size), []
    preds = model.predict_gain(table.features[rows])
    for j, r in enumerate(rows):
        q = table.grid_quality[r]
        gain = np.where(np.isnan(q), -np.inf, preds[j])
        i = int(np.argmax(gain))
        pick = grid[i] if gain[i] > margin else REFERENCE
        picks.append(pick)
        values[j] = q[grid.index(pick)]
    return values, picks


#: ``fit(features, gain, weight, config, candidates, feature_names) -> MetaModel``; a test may wrap it.
FitFn = Callable[..., MetaModel]


def _fits(fit: FitFn, table: MetaTable, G: np.ndarray, w: np.ndarray, rows: np.ndarray,
          configs: Sequence[MetaConfig]) -> dict[MetaConfig, MetaModel]:
    """One fit per configuration up to the margin (the margin only changes the pick, not the model)."""
    out: dict[MetaConfig, MetaModel] = {}
    for cfg in configs:
        key = replace(cfg, margin=0.0)
        if key not in out:
            out[key] = fit(table.features[rows], G[rows], w[rows], key, grid_candidates(), FEATURE_NAMES)
    return out


@dataclass
class LOBOResult:
    """Per held-out base dataset: the chosen configuration, the training datasets, the picks."""

    picks: pd.DataFrame
    chosen: dict[str, str]
    training: dict[str, list[str]] = field(repr=False)
    per_config: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)


def leave_one_base_out(table: MetaTable, configs: Sequence[MetaConfig] | None = None, *, n_inner: int = 5,
                       fit: FitFn = fit_meta_model) -> LOBOResult:
    """Leave-one-base-dataset-out with nested model choice.

    For each base dataset b: the training rows are the variants of every *other* base dataset (checked: a row
    of b in training raises); the configuration is the one with the best weighted mean measure of its picks over
    ``n_inner`` grouped folds of the training base datasets (:func:`inner_folds`); it is refitted on all training
    rows and judged on b's variants. Also returned, for the record only (never used to choose): every
    configuration's held-out picks (``per_config``).
    """
    configs = list(configs) if configs is not None else default_configs()
    bases = np.asarray(table.bases)
    G, w = table.gain(), table.weights()
    rows_out, chosen, training, per_cfg = [], {}, {}, []
    for b in sorted(set(table.bases)):
        test = np.flatnonzero(bases == b)
        train = np.flatnonzero(bases != b)
        if np.isin(bases[train], [b]).any():  # pragma: no cover - guarded by construction
            raise RuntimeError(f"base dataset {b!r} leaked into its own training set")
        training[b] = [table.datasets[i] for i in train]
        # nested choice over the training base datasets only
        folds = inner_folds(bases[train].tolist(), n_inner)
        score = np.zeros(len(configs))
        for fold in folds:
            itest = train[np.isin(bases[train], fold)]
            itrain = train[~np.isin(bases[train], fold)]
            fits = _fits(fit, table, G, w, itrain, configs)
            for c, cfg in enumerate(configs):
                vals, _ = _pick_value(fits[replace(cfg, margin=0.0)], table, itest, cfg.margin)
                score[c] += float(w[itest] @ vals)
        best = int(np.argmax(score))
        chosen[b] = configs[best].label()
        fits = _fits(fit, table, G, w, train, configs)
        for c, cfg in enumerate(configs):
            vals, picks = _pick_value(fits[replace(cfg, margin=0.0)], table, test, cfg.margin)
            for r, v, p in zip(test, vals, picks, strict=True):
                per_cfg.append({"dataset": table.datasets[r], "base_dataset": b, "config": cfg.label(),
                                "value": v, "choice": f"{p[0]}-{p[1]:03d}", "pick": p, "chosen": c == best})
    per = pd.DataFrame(per_cfg)
    for r, ds in enumerate(table.datasets):
        measures = tuple(table.all_quality)
        q = {m: table.all_quality[m][r] for m in measures}
        lk = [(m.lower(), k) for m, k in table.names[r]]
        sel = per[(per["dataset"] == ds) & per["chosen"]].iloc[0]
        pick = sel["pick"]

        def values_of(key: tuple[str, int], lk: list[tuple[str, int]] = lk, r: int = r,
                      measures: tuple[str, ...] = measures) -> dict[str, float]:
            i = lk.index((key[0].lower(), key[1])) if (key[0].lower(), key[1]) in lk else None
            return {m: float(table.all_quality[m][r][i]) if i is not None else float("nan") for m in measures}
        judged = [("meta", "pick", f"{sel['choice']} [{sel['config']}]", values_of(pick), ""),
                  ("default-knn10", "pick", "kNN-010", values_of(("kNN", 10)), ""),
                  ("default-lof20", "pick", "LOF-020", values_of(("LOF", 20)), ""),
                  ("random", "expected", "expected (random)", None, "")]
        rows_out.append(pick_rows(ds, table.bases[r], q, judged, measures))
    return LOBOResult(pd.concat(rows_out, ignore_index=True), chosen, training, per)


def base_level(picks: pd.DataFrame) -> pd.DataFrame:
    """The picks averaged per (base dataset, selector, measure), as a picks frame whose blocks are base datasets."""
    g = picks.groupby(["base_dataset", "selector", "measure"], sort=True)
    out = g.agg(value=("value", "mean"), percentile=("percentile", "mean"), cand_min=("cand_min", "mean"),
                cand_mean=("cand_mean", "mean"), cand_max=("cand_max", "mean"), is_best=("is_best", "mean"),
                n_candidates=("n_candidates", "mean")).reset_index()
    out["dataset"] = out["base_dataset"]
    out["is_best"] = out["is_best"] >= 1.0
    return out


def meta_statistics(picks: pd.DataFrame, measure: str) -> dict[str, Any]:
    """The audit's statistics of a picks frame, by variant and by base dataset."""
    bl = base_level(picks)
    return {"summary_variants": selection_summary(picks, measure),
            "tests_variants": selection_tests(picks, measure, ("random", "default-knn10")),
            "summary_bases": selection_summary(bl, measure),
            "tests_bases": selection_tests(bl, measure, ("random", "default-knn10")),
            "friedman_bases": selection_friedman(picks, measure, blocks="base_dataset")}
