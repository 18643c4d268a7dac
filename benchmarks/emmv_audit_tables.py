"""EM / MV against a random pick among the candidates they can choose from (issue 26, the 262-variant audit).

``odeval select-audit STORE --candidates 10`` compares every selector with a random pick among all ten candidates.
EM and MV only choose among the candidates with a novelty form (kNN, kNNW, LOF, SimplifiedLOF, LoOP, LDOF;
:func:`odeval.detectors.base.novelty_methods`), and those are on average better than ODIN, KDEOS, COF, INFLO,
FastABOD and LDF on this collection, so "better than random" alone would credit EM/MV with the restriction. This
script adds the fair baseline, ``random-novelty`` (the expected quality of a uniform pick among the same
novelty-capable candidates), and tests every selector against it with the audit's statistics: one-sided Wilcoxon
signed-rank over variants, and over base datasets (each base dataset's variants averaged first, Campos et al.
2016's blocking).

    python benchmarks/emmv_audit_tables.py STORE [--measure roc_auc]
"""
from __future__ import annotations

import argparse
import re
import sys

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from odeval.analysis.selection import stored_picks
from odeval.detectors.base import novelty_methods


def _method(candidate: str) -> str:
    return re.sub(r"(\(.*\))?-k?\d+$", "", candidate)  # "kNN-010", "LDF(c=0.1,h=1.0)-010"


def table(store: str, measure: str = "roc_auc") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per variant: every selector's pick quality and ``random-novelty``; the tests against it."""
    picks, cands, _ = stored_picks(store, candidates=10)
    picks = picks[picks["measure"] == measure]
    novelty = {m.lower() for m in novelty_methods()}
    cands = cands.assign(novel=[_method(c).lower() in novelty for c in cands["candidate"]])
    fair = cands[cands["novel"]].groupby("dataset")[measure].mean().rename("random-novelty")
    wide = picks.pivot_table(index=["dataset", "base_dataset"], columns="selector", values="value").reset_index()
    wide = wide.merge(fair, left_on="dataset", right_index=True, how="left")
    rows = []
    for blocks in ("variant", "base dataset"):
        w = wide if blocks == "variant" else wide.drop(columns="dataset").groupby("base_dataset").mean()
        for sel in [c for c in w.columns if c not in ("dataset", "base_dataset", "random-novelty")]:
            a, b = w[sel].to_numpy(float), w["random-novelty"].to_numpy(float)
            ok = np.isfinite(a) & np.isfinite(b)
            d = a[ok] - b[ok]
            p = wilcoxon(d, alternative="greater").pvalue if np.any(d != 0) else float("nan")
            rows.append({"blocks": blocks, "selector": sel, "n": int(ok.sum()), "mean": a[ok].mean(),
                         "fair": b[ok].mean(), "better": int((d > 0).sum()),
                         "worse": int((d < 0).sum()), "p": p})
    return wide, pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--measure", default="roc_auc")
    args = ap.parse_args(argv)
    wide, tests = table(args.store, args.measure)
    print(f"{len(wide)} variants of {wide['base_dataset'].nunique()} base datasets; measure {args.measure}")
    print("| blocks | selector | n | mean | random-novelty | better / worse | p (one-sided Wilcoxon) |")
    print("| --- | --- | ---: | ---: | ---: | --- | ---: |")
    for r in tests.itertuples(index=False):
        print(f"| {r.blocks} | {r.selector} | {r.n} | {r.mean:.3f} | {r.fair:.3f} | {r.better} / {r.worse} "
              f"| {r.p:.2g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
