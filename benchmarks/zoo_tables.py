"""The tables of docs/model-selection.md ("The mixed model zoo") from a store of examples/model-selection-zoo.toml.

Audits the stored picks as ``odeval select-audit`` does (all candidates and the ten of Marques et al. 2020 §4.2;
Friedman + Nemenyi by variant and by base dataset) and adds what the comparison with the meta-study of Ma, Zhao,
Zhang and Akoglu (2023) needs, read from the stored candidates' quality (labels, never shown to a selector):

* reference detectors beside kNN k = 10 and LOF k = 20: PyOD's IForest with its default configuration
  (n_estimators = 100, max_features = 1.0; the mean over the study's seeds) and the expected quality of an IForest
  configuration drawn at random from the grid ("a state-of-the-art detector with a random configuration"), each
  selector tested against them (one-sided Wilcoxon signed-rank, by variant and by base dataset);
* which family the best candidate belongs to, and from which family each selector picks.

Base datasets: the Campos variants by name, the ADBench copies through the matching table of the meta-selector
(``odeval/labelfree/data/meta_base_datasets.csv``), so a copy of a Campos base dataset joins its block.

    python benchmarks/zoo_tables.py STORE            # a copy of a store another process is writing also works
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

KNN_FAMILY = ("kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "KDEOS", "COF", "FastABOD", "LDF",
              "INFLO")
IFOREST_DEFAULT = {"max_features": 1.0, "n_estimators": 100}


def base_of(dataset: str, bases: dict[str, str]) -> str:
    return bases.get(dataset, dataset.split("_withoutdupl")[0])


def family(method: str) -> str:
    return "kNN family (12 methods × k)" if method in KNN_FAMILY else method


def references(cands: pd.DataFrame) -> pd.DataFrame:
    """Per variant: IForest default (mean over seeds) and the mean over all IForest configurations and seeds."""
    forest = cands[cands["method"] == "IForest"]
    is_default = forest["setting"].map(lambda s: json.loads(s) == IFOREST_DEFAULT if isinstance(s, str) else False)
    out = pd.DataFrame({
        "iforest-default": forest[is_default].groupby("dataset")["roc_auc"].mean(),
        "iforest-random-config": forest.groupby("dataset")["roc_auc"].mean(),
    })
    return out


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ms_campos_tables import fmt_p, table, wilcoxon_greater
    from odeval.analysis.meta import load_bases
    from odeval.analysis.selection import audit_store, friedman_line
    from odeval.bench.store import ResultStore

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    args = ap.parse_args()
    bases = load_bases()
    with ResultStore(args.store, read_only=True) as rs:
        all_cands = rs.stored_selection(candidates="all", seed=0).candidates
    refs_all = references(all_cands)  # the references are judged on the whole pool, also for the ten
    for mode in ("all", "10"):
        audit, _src, msgs = audit_store(args.store, candidates=mode)
        by_base, _s, _m = audit_store(args.store, candidates=mode, blocks="base_dataset")
        print(f"## candidates = {mode}\n")
        print(table(audit))
        print(f"blocks = base datasets (as stored): {friedman_line(by_base.friedman)}\n")
        if msgs:
            print("messages:", *msgs[:5], sep="\n  ")
        with ResultStore(args.store, read_only=True) as rs:
            sel = rs.stored_selection(candidates=mode, seed=0)
        cands = sel.candidates
        picks = audit.picks[audit.picks["measure"] == "roc_auc"].pivot_table(
            index="dataset", columns="selector", values="value")
        refs = refs_all.reindex(picks.index)
        n_forest = int(refs["iforest-default"].notna().sum())
        print(f"### against IForest ({n_forest} variants with IForest candidates)\n")
        print("| selector | mean roc_auc | p vs iforest-default (variants) | p vs iforest-random-config (variants) | "
              "p vs iforest-default (base datasets) |")
        print("| --- | --- | --- | --- | --- |")
        blocks = picks.index.map(lambda d: base_of(d, bases))
        both = picks.join(refs)
        by_base_mean = both.groupby(blocks).mean()
        order = list(audit.summary["selector"])
        refs_cols = ["iforest-default", "iforest-random-config"]
        for s in order + refs_cols:
            cols = [s] + [c for c in refs_cols if c != s]
            ok, okb = both[cols].dropna(), by_base_mean[list(dict.fromkeys([s, "iforest-default"]))].dropna()
            cells = [f"{ok[s].mean():.3f}"]
            for ref, frame in (("iforest-default", ok), ("iforest-random-config", ok), ("iforest-default", okb)):
                cells.append("—" if s == ref else fmt_p(wilcoxon_greater(frame[s].to_numpy(), frame[ref].to_numpy())))
            print(f"| {s} | " + " | ".join(cells) + " |")
        print(f"\n{len(set(blocks))} base datasets: {', '.join(sorted(set(blocks)))}\n")
        fam = cands.assign(family=cands["method"].map(family))
        fam_all = all_cands.assign(family=all_cands["method"].map(family))
        best = fam_all.loc[fam_all.groupby("dataset")["roc_auc"].idxmax()]
        print("### the best candidate's family (variants)\n")
        print(", ".join(f"{f} {n}" for f, n in best["family"].value_counts().items()), "\n")
        sizes = fam.groupby("dataset")["family"].value_counts().groupby("family").mean()
        print("candidates per variant by family (mean):",
              ", ".join(f"{f} {n:.0f}" for f, n in sizes.sort_values(ascending=False).items()), "\n")
        picked = audit.picks[audit.picks["measure"] == "roc_auc"]
        key = fam.set_index(["dataset", "name"])["family"]
        rows = []
        for s, g in picked.groupby("selector", sort=False):
            fams = pd.Series([key.get((d, c)) for d, c in zip(g["dataset"], g["choice"], strict=True)]).dropna()
            if len(fams):  # a single candidate was picked (not an ensemble scoring)
                rows.append(f"* {s}: " + ", ".join(f"{f} {n}" for f, n in fams.value_counts().items()))
        print("### families of the picks (selectors that pick one candidate)\n")
        print("\n".join(rows), "\n")

if __name__ == "__main__":
    main()
