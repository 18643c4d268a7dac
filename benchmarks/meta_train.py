"""Validate (leave-one-base-dataset-out, nested) and build the meta-selector's model (issue 27).

    NUMBA_NUM_THREADS=1 nice -n 10 python benchmarks/meta_train.py /work/meta-store/meta.duckdb \\
        /work/meta-store/features.csv --validation benchmarks/meta_validation.json \\
        --model src/odeval/labelfree/data/meta_selector.npz

Inputs: the store of ``benchmarks/meta_store.toml`` (the twelve methods × k = 1..100 on the Campos variants and the
ODDS / ADBench files; its units' ROC AUC and AP are the labelled results), the meta-features of every file
(``benchmarks/meta_features.py``) and the base-dataset matching (``odeval/labelfree/data/meta_base_datasets.csv``).

1. :func:`odeval.analysis.meta.leave_one_base_out`: for each base dataset, the configuration is chosen by grouped
   5-fold cross-validation over the *other* base datasets, refitted on them and judged on the held-out one.
2. The audit's statistics of those held-out picks (by variant and by base dataset) → ``--validation`` (JSON; the
   picks themselves beside it, ``*_picks.csv``) and the Markdown tables printed for docs/model-selection.md.
3. The shipped model: the same nested choice over all base datasets, fitted on all variants → ``--model`` (npz, no
   pickle), with the store's study hash, a SHA-256 of the labelled results used, and the validation's verdict.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from odeval.analysis.meta import (
    CONFIG_SETS,
    inner_folds,
    leave_one_base_out,
    load_bases,
    meta_statistics,
    meta_table,
)
from odeval.analysis.selection import p_text
from odeval.bench.store import ResultStore
from odeval.labelfree.meta import fit_meta_model, grid_candidates, save_model
from odeval.labelfree.metafeatures import FEATURE_NAMES

STUDY_NAME = "meta-selector-pool"


def results_hash(runs: pd.DataFrame, measures: tuple[str, ...]) -> str:
    cols = ["dataset", "method", "params", "k", *measures]
    df = runs[cols].sort_values(["dataset", "method", "params", "k"], kind="stable")
    return hashlib.sha256(df.to_csv(index=False, float_format="%.12g").encode()).hexdigest()


def markdown(stats: dict, measure: str, unit: str) -> str:
    summ = stats[f"summary_{unit}"]
    tests = stats[f"tests_{unit}"]
    lines = [f"| selector | mean {measure} | mean percentile | best pick | mean rank | p vs random | p vs kNN k=10 |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in summ.itertuples(index=False):
        def p(base: str, sel: str = str(r.selector)) -> str:
            t = tests[(tests["selector"] == sel) & (tests["baseline"] == base)]
            return "—" if t.empty else f"{p_text(float(t['p_value'].iloc[0]))} ({int(t['n_better'].iloc[0])}/" \
                                       f"{int(t['n_worse'].iloc[0])})"
        lines.append(f"| {r.selector} | {r.mean:.3f} | {r.mean_percentile:.0f} | {r.best_choices}/{r.n_variants} | "
                     f"{r.mean_rank:.2f} | {p('random')} | {p('default-knn10')} |")
    fr = stats["friedman_bases"]
    if "error" not in fr and unit == "bases":
        f = fr["friedman"].iloc[0]
        rk = fr["ranks"]
        ranks = ", ".join(f"{c} {v:.2f}" for c, v in zip(rk["config"], rk["mean_rank"], strict=True))
        lines.append(f"\nFriedman over {fr['n_blocks']} base datasets: χ² = {f['chi2']:.2f}, "
                     f"p = {p_text(f['p_chi2'])}; Nemenyi CD (α = 0.05) = {fr['cd']:.2f} ranks; "
                     f"average ranks: {ranks}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path)
    ap.add_argument("features", type=Path)
    ap.add_argument("--validation", type=Path, required=True)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--configs", choices=sorted(CONFIG_SETS), default="attempt1",
                    help="the configuration set the nested choice is among (attempt2: pre-registered in "
                         "benchmarks/meta_attempt2.md)")
    ap.add_argument("--ship-if-significant", action="store_true",
                    help="write --model only when the held-out nested choice beats kNN k = 10 (p < 0.05 over "
                         "base datasets); otherwise leave the shipped model as it is")
    ap.add_argument("--measure", default="roc_auc")
    ap.add_argument("--methods", default=None,
                    help="comma-separated methods: choose only among their grid candidates (a restricted variant, "
                         "e.g. kNN: which k); the other candidates are masked, never picked")
    a = ap.parse_args()
    t0 = time.perf_counter()
    store = ResultStore(a.store, read_only=True)
    studies = store.studies()
    ours = studies[studies["name"] == STUDY_NAME].sort_values("created", kind="stable")
    study_hash = str(ours["study_hash"].iloc[-1])  # the latest registration of the study file
    runs = store.runs(study_hash=study_hash)
    store.close()
    judged = ("roc_auc", "average_precision")
    rhash = results_hash(runs[runs["status"] == "ok"], judged)
    table = meta_table(runs, pd.read_csv(a.features), load_bases(), a.measure, study_hash, judged)
    if a.methods:
        keep = {m.strip().lower() for m in a.methods.split(",")}
        masked = [i for i, (m, _) in enumerate(grid_candidates()) if m.lower() not in keep]
        table.grid_quality[:, masked] = np.nan
    print(f"{len(table.datasets)} variants, {len(set(table.bases))} base datasets, "
          f"{len(grid_candidates())} grid candidates, {len(FEATURE_NAMES)} meta-features", flush=True)
    configs = CONFIG_SETS[a.configs]()
    res = leave_one_base_out(table, configs)
    out: dict = {"store_study_hash": study_hash, "results_sha256": rhash, "measure": a.measure,
                 "n_variants": len(table.datasets), "n_bases": len(set(table.bases)),
                 "config_set": a.configs, "configs": [c.label() for c in configs], "chosen_per_fold": res.chosen,
                 "measures": {}}
    for m in judged:
        stats = meta_statistics(res.picks, m)
        md_v, md_b = markdown(stats, m, "variants"), markdown(stats, m, "bases")
        print(f"\n### {m}, by variant\n{md_v}\n\n### {m}, by base dataset\n{md_b}")
        tb = stats["tests_bases"]
        row = tb[(tb["selector"] == "meta") & (tb["baseline"] == "default-knn10")].iloc[0]
        out["measures"][m] = {"markdown_variants": md_v, "markdown_bases": md_b,
                              "p_meta_vs_knn10_bases": float(row["p_value"]),
                              "summary_bases": stats["summary_bases"].to_dict("records"),
                              "summary_variants": stats["summary_variants"].to_dict("records")}
    # every configuration's held-out result, for the record (not used to choose)
    per = res.per_config.merge(pd.DataFrame({"dataset": table.datasets}), on="dataset")
    byb = per.groupby(["config", "base_dataset"])["value"].mean().unstack(0)
    knn10 = res.picks[(res.picks["selector"] == "default-knn10") & (res.picks["measure"] == a.measure)]
    ref_b = knn10.groupby("base_dataset")["value"].mean()
    from scipy import stats as sps
    cfg_rows = []
    for cfg in byb.columns:
        d = (byb[cfg] - ref_b.reindex(byb.index)).to_numpy()
        nz = d[d != 0]
        p = float(sps.wilcoxon(nz, alternative="greater").pvalue) if nz.size else 1.0
        cfg_rows.append({"config": cfg, "mean_bases": float(byb[cfg].mean()), "n_better": int((d > 0).sum()),
                         "n_worse": int((d < 0).sum()), "p_vs_knn10_bases": p})
    out["per_config_not_nested"] = cfg_rows
    print("\nevery configuration held out (for the record; the nested choice above is the result):")
    for r in cfg_rows:
        print(f"  {r['config']}: mean {a.measure} over bases {r['mean_bases']:.3f}, vs kNN k=10 "
              f"{r['n_better']} better / {r['n_worse']} worse, p = {p_text(r['p_vs_knn10_bases'])}")
    # the 262 Campos variants alone, to set beside the audit's table of the other selectors (same variants)
    campos = set(pd.read_csv(a.features).query("file.str.contains('/dami/')", engine="python")["dataset"])
    sub = res.picks[res.picks["dataset"].isin(campos)]
    out["campos_only"] = {}
    for m in judged:
        s = sub[sub["measure"] == m].groupby("selector")[["value", "percentile"]].mean()
        out["campos_only"][m] = {"n_variants": int(sub["dataset"].nunique()), **{
            sel: {"mean": float(r.value), "mean_percentile": float(r.percentile)} for sel, r in s.iterrows()}}
        print(f"\nCampos variants only ({sub['dataset'].nunique()}), {m}: " + ", ".join(
            f"{sel} {r.value:.3f} (percentile {r.percentile:.0f})" for sel, r in s.iterrows()))
    picks_file = a.validation.with_name(a.validation.stem + "_picks.csv")
    res.picks[["dataset", "base_dataset", "selector", "choice", "measure", "value", "percentile", "is_best"]].to_csv(
        picks_file, index=False, float_format="%.6f")
    out["picks_file"] = picks_file.name
    # the shipped model: the same nested choice over all base datasets
    bases = np.asarray(table.bases)
    G, w = table.gain(), table.weights()
    from odeval.analysis.meta import _fits, _pick_value
    score = np.zeros(len(configs))
    for fold in inner_folds(table.bases, 5):
        te = np.flatnonzero(np.isin(bases, fold))
        tr = np.flatnonzero(~np.isin(bases, fold))
        fits = _fits(fit_meta_model, table, G, w, tr, configs)
        for c, cfg in enumerate(configs):
            vals, _ = _pick_value(fits[replace(cfg, margin=0.0)], table, te, cfg.margin)
            score[c] += float(w[te] @ vals)
    best = configs[int(np.argmax(score))]
    p_b = out["measures"][a.measure]["p_meta_vs_knn10_bases"]
    st = meta_statistics(res.picks, a.measure)
    sv = st["summary_variants"].set_index("selector")
    tb = st["tests_bases"].set_index(["selector", "baseline"])
    record = {"mean_roc_auc": float(sv.loc["meta", "mean"]),
              "mean_percentile": float(sv.loc["meta", "mean_percentile"]),
              "p_vs_random": float(tb.loc[("meta", "random"), "p_value"]),
              "p_vs_default_knn10": float(tb.loc[("meta", "default-knn10"), "p_value"]),
              "knn10_mean_roc_auc": float(sv.loc["default-knn10", "mean"]),
              "n_variants": len(table.datasets), "n_bases": len(set(table.bases)),
              "basis": "held-out picks, leave-one-base-dataset-out (nested model choice); p-values: one-sided "
                       "Wilcoxon over base datasets"}
    meta = {"store_study_hash": study_hash, "results_sha256": rhash, "script": "benchmarks/meta_train.py",
            "study": "benchmarks/meta_store.toml", "config": best.label(), "methods": a.methods or "all",
            "n_variants": len(table.datasets),
            "n_bases": len(set(table.bases)), "measure": a.measure,
            "validation": {"p_meta_vs_knn10_bases": p_b, "significant": bool(p_b < 0.05),
                           "file": "benchmarks/meta_validation.json", **record}}
    meta["validation"]["file"] = str(a.validation)
    meta["config_set"] = a.configs
    out["nested_choice_on_all"] = best.label()
    if a.ship_if_significant and not p_b < 0.05:
        out["shipped_config"] = None
        a.validation.write_text(json.dumps(out, indent=1, default=str) + "\n", encoding="utf-8")
        print(f"\nnot significant (p = {p_text(p_b)}): {a.model} left as it is; {time.perf_counter() - t0:.0f} s")
        return
    model = fit_meta_model(table.features, G, w, best, grid_candidates(), FEATURE_NAMES, meta)
    save_model(model, a.model)
    out["shipped_config"] = best.label()
    a.validation.write_text(json.dumps(out, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"\nshipped: {best.label()} → {a.model} ({a.model.stat().st_size / 1e3:.0f} kB); "
          f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
