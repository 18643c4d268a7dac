"""The tables of docs/model-selection.md ("Results on the Campos collection") from a store of ms_campos_run.py.

Reads the picks that examples/model-selection-campos.toml (and its supplements -laplacian, -emmv, run into the
same store) stored, audits them as ``odeval select-audit`` does, and prints Markdown:

* the summary + Wilcoxon table among all candidates and among the ten of Marques et al. 2020 §4.2, with the
  Friedman/Nemenyi lines (blocks = variants and = base datasets);
* IREOS split by the gamma_max its search found (``--gamma-split``, default 100), separately for the variants the
  split was read off (the first ``--first`` variants in ms_campos_run.py's order, the first audit, for the optimum's
  100; or the variants of ``--first-bases``: Shuttle for the pinned classifier's 10^4) and for the held-out rest,
  plus a label-free guarded rule: the IREOS pick where gamma_max <= split, else the
  ensemble;
* with ``--bands``: the mean percentile of a few selectors' picks per band of IREOS's γ_max (≤ 100, 100–10^4,
  above), to tell a poor IREOS pick from data where every selector does poorly;
* the supplement of the costly selectors (em, mv, mc-kendall) on the variants that stored them.

* with ``--figures DIR``: the critical-difference diagram of the selectors (all candidates) and box plots of the
  candidates' ROC AUC on the first variant of every base dataset with the picks of a few selectors marked
  (Marques et al. 2020, Fig. 9 style), as PNG files.

    python benchmarks/ms_campos_tables.py STORE [--first 51 | --first-bases Shuttle] [--gamma-split 100]
        [--figures docs/img]
"""

from __future__ import annotations

import argparse
import json
import sys
from itertools import pairwise
from pathlib import Path

import numpy as np

COSTLY = ("em", "mv", "mc-kendall")
BASELINES = ("random", "default-knn10", "default-lof20")


def fmt_p(v: float | None) -> str:
    if v is None or not np.isfinite(v):
        return "—"
    return f"{v:.1e}" if v < 1e-3 else f"{v:.3f}"


def table(audit) -> str:
    from odeval.analysis.selection import friedman_line

    s, t = audit.summary, audit.tests
    tests = {(r.selector, r.baseline): r.p_value for r in t.itertuples()} if len(t) else {}
    per = audit.picks[audit.picks["measure"] == audit.measure].drop_duplicates("dataset")
    lines = [f"{len(per)} variants; candidates' {audit.measure}, mean over variants: min {per['cand_min'].mean():.3f}, "
             f"mean {per['cand_mean'].mean():.3f}, max {per['cand_max'].mean():.3f}", "",
             "| selector | mean " + audit.measure + " | mean percentile | best pick | mean rank | "
             + " | ".join(f"p vs {b}" for b in BASELINES) + " |",
             "| --- " * (5 + len(BASELINES)) + "|"]
    for r in s.itertuples():
        cells = [r.selector, f"{r.mean:.3f}", f"{r.mean_percentile:.0f}", f"{r.best_choices}/{r.n_variants}",
                 f"{r.mean_rank:.2f}"]
        cells += ["—" if r.selector == b else fmt_p(tests.get((r.selector, b))) for b in BASELINES]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", friedman_line(audit.friedman)]
    return "\n".join(lines)


def gamma_max_of(store: str) -> dict[str, float]:
    from odeval.bench.store import ResultStore

    with ResultStore(store, read_only=True) as rs:
        t = rs.variant_tasks(kind="ireos", status="ok")
    return {r["dataset"]: float(json.loads(r["details"])["gamma_max"]) for _, r in t.iterrows()}


def wilcoxon_greater(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import wilcoxon

    d = a - b
    d = d[d != 0]
    return float(wilcoxon(d, alternative="greater").pvalue) if d.size else float("nan")


def ireos_split(audit, gmax: dict[str, float], first: set[str], split: float, first_label: str = "first audit") -> str:
    p = audit.picks[audit.picks["measure"] == audit.measure]
    by = {s: g.set_index("dataset") for s, g in p.groupby("selector")}
    if "ireos" not in by:
        return "(no ireos picks)"
    ds = sorted(by["ireos"].index)
    out = ["| variants | γ_max | n | IREOS pick: mean " + audit.measure + " | random | mean percentile | best pick | "
           "below the candidates' mean | base datasets |", "| --- " * 9 + "|"]
    guard_lines = []
    for label, group in ((first_label, [d for d in ds if d in first]),
                         ("held out", [d for d in ds if d not in first]), ("all", ds)):
        if not group:
            continue
        for glab, sel in ((f"≤ {split:g}", [d for d in group if gmax[d] <= split]),
                          (f"> {split:g}", [d for d in group if gmax[d] > split])):
            if not sel:
                continue
            ir = by["ireos"].loc[sel]
            out.append(f"| {label} | {glab} | {len(sel)} | {ir['value'].mean():.3f} | "
                       f"{by['random'].loc[sel, 'value'].mean():.3f} | {ir['percentile'].mean():.0f} | "
                       f"{int(ir['is_best'].sum())} | {int((ir['value'] < ir['cand_mean']).sum())} | "
                       f"{', '.join(sorted(set(ir['base_dataset'])))} |")
        if "ensemble" in by:
            g = np.array([by["ireos" if gmax[d] <= split else "ensemble"].loc[d, "value"] for d in group])
            pct = np.mean([by["ireos" if gmax[d] <= split else "ensemble"].loc[d, "percentile"] for d in group])
            cmp = "; ".join(f"{s} {by[s].loc[group, 'value'].mean():.3f} (p = "
                            f"{fmt_p(wilcoxon_greater(g, by[s].loc[group, 'value'].to_numpy(float)))})"
                            for s in ("ireos", "ensemble", "random", "default-knn10") if s in by)
            guard_lines.append(f"* {label} ({len(group)} variants): guarded IREOS (IREOS where γ_max ≤ {split:g}, else "
                               f"the ensemble) mean {audit.measure} {g.mean():.3f}, percentile {pct:.0f}; against "
                               f"{cmp} (one-sided Wilcoxon, guarded better)")
    return "\n".join([*out, "", *guard_lines])


def registered_lines(audit, first: set[str], first_label: str = "first audit") -> str:
    """The registered ``ireos-guarded`` selector's own picks (examples/model-selection-campos-guarded.toml: IREOS of
    ten candidates spread over the candidate space, the ensemble where its probe says γ_max > 100), on the variants
    its threshold was read off, the held-out rest and all — one line each, as :func:`ireos_split`'s guarded lines
    (benchmarks/select_record.py reads the held-out one into ``odeval select``'s record)."""
    p = audit.picks[audit.picks["measure"] == audit.measure]
    by = {s: g.set_index("dataset") for s, g in p.groupby("selector")}
    if "ireos-guarded" not in by:
        return ""
    ds = sorted(by["ireos-guarded"].index)
    lines = []
    for label, group in ((first_label, [d for d in ds if d in first]),
                         ("held out", [d for d in ds if d not in first]), ("all", ds)):
        if not group:
            continue
        g = by["ireos-guarded"].loc[group]
        mine = g["value"].to_numpy(float)
        cmp = "; ".join(f"{s} {by[s].loc[group, 'value'].mean():.3f} (p = "
                        f"{fmt_p(wilcoxon_greater(mine, by[s].loc[group, 'value'].to_numpy(float)))})"
                        for s in ("ireos", "ensemble", "random", "default-knn10") if s in by)
        lines.append(f"* registered, {label} ({len(group)} variants): ireos-guarded (IREOS of ten candidates spread "
                     f"over the candidate space where its probe says γ_max ≤ 100, else the ensemble) mean "
                     f"{audit.measure} {g['value'].mean():.3f}, percentile {g['percentile'].mean():.0f}; against "
                     f"{cmp} (one-sided Wilcoxon, ireos-guarded better)")
    return "\n".join(lines)


BAND_SELECTORS = ("ireos", "ensemble", "select-ensemble", "mc-spearman", "default-knn10")


def percentile_bands(audit, gmax: dict[str, float], edges: tuple[float, ...] = (100.0, 1e4)) -> str:
    """Mean percentile of a few selectors' picks per band of the variants' IREOS γ_max (is a high γ_max a poor IREOS
    pick, or data where every selector does poorly?)."""
    from collections import Counter

    p = audit.picks[audit.picks["measure"] == audit.measure]
    sels = [s for s in BAND_SELECTORS if s in set(p["selector"])]
    out = ["| γ_max band | variants | " + " | ".join(sels) + " | base datasets |", "| --- " * (len(sels) + 3) + "|"]
    bounds = (0.0, *edges, np.inf)
    for lo, hi in pairwise(bounds):
        ds = [d for d, v in gmax.items() if lo < v <= hi]
        q = p[p["dataset"].isin(ds)]
        if q.empty:
            continue
        bases = Counter(q.drop_duplicates("dataset")["base_dataset"])
        out.append(f"| {lo:g}–{hi:g} | {q['dataset'].nunique()} | "
                   + " | ".join(f"{q[q['selector'] == s]['percentile'].mean():.0f}" for s in sels)
                   + " | " + ", ".join(f"{b} {c}" for b, c in sorted(bases.items())) + " |")
    return "\n".join(out)


def figures(audit, first_round: list[str], out: Path) -> None:
    from odeval.report.plots import plot_critical_difference
    from odeval.report.selection import plot_selection_boxplots

    out.mkdir(parents=True, exist_ok=True)
    fr = audit.friedman
    fig = plot_critical_difference(fr["ranks"], fr["cd"], f"α = {fr['alpha']}, {fr['n_blocks']} variants")
    fig.savefig(out / "ms-campos-cd.png", dpi=110, bbox_inches="tight")
    shown = [s for s in ("ireos", "ensemble", "mc-spearman", "laplacian-sqrt", "default-knn10") if s in audit.selectors]
    ds = [d for d in first_round if d in set(audit.candidates["dataset"])]
    fig = plot_selection_boxplots(audit.candidates, audit.picks, audit.measure, shown, ds)
    fig.savefig(out / "ms-campos-boxplots.png", dpi=110, bbox_inches="tight")
    print(f"figures: {out / 'ms-campos-cd.png'}, {out / 'ms-campos-boxplots.png'}\n")


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ms_campos_run import EXAMPLE, ordered
    from odeval.analysis.selection import audit_store
    from odeval.bench import load_study

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store")
    ap.add_argument("--first", type=int, default=51, help="variants of the first audit (in ms_campos_run order)")
    ap.add_argument("--first-bases", default=None,
                    help="comma-separated base datasets whose variants form the group the split was read off, "
                         "instead of --first (the pinned classifier's 10^4 was read off Shuttle: --first-bases "
                         "Shuttle --gamma-split 1e4 holds out every other variant)")
    ap.add_argument("--gamma-split", type=float, default=100.0)
    ap.add_argument("--figures", type=Path, help="write the CD diagram and the box plots (PNG) to this folder")
    ap.add_argument("--bands", action="store_true",
                    help="also the mean percentile of a few selectors per IREOS γ_max band (≤ 100, 100–10^4, above)")
    args = ap.parse_args()
    names = [v.name for v in ordered(list(load_study(EXAMPLE).datasets))]
    if args.first_bases:
        bases = set(args.first_bases.split(","))
        first = {v.name for v in load_study(EXAMPLE).datasets if v.base_dataset in bases}
        first_label = f"read off ({', '.join(sorted(bases))})"
    else:
        first, first_label = set(names[:args.first]), "first audit"
    gmax = gamma_max_of(args.store)
    from odeval.bench.ensembles import NoStoredScoresError

    for mode in ("all", "10"):
        try:
            audit, _src, _msg = audit_store(args.store, candidates=mode)
        except NoStoredScoresError:  # e.g. a store of model-selection-campos-emmv-all.toml alone: picks among 10
            print(f"## candidates = {mode}: no picks stored for it and no score vectors to compute them\n")
            continue
        stored = [s for s in audit.selectors if s not in COSTLY]
        main_audit, _src, msgs = audit_store(args.store, stored, candidates=mode)
        print(f"## candidates = {mode}\n")
        print(table(main_audit))
        by_base, _s, _m = audit_store(args.store, stored, candidates=mode, blocks="base_dataset")
        from odeval.analysis.selection import friedman_line
        print(f"blocks = base datasets: {friedman_line(by_base.friedman)}\n")
        pv = main_audit.picks[(main_audit.picks["selector"] == "ireos") & (main_audit.picks["measure"] == "roc_auc")]
        if "pick_p_value" in pv and len(pv):
            print(f"IREOS pick p < 0.05 on {int((pv['pick_p_value'] < 0.05).sum())} of {len(pv)} variants (median "
                  f"p = {pv['pick_p_value'].median():.2g})\n")
        print(ireos_split(main_audit, gmax, first, args.gamma_split, first_label), "\n")
        registered = registered_lines(main_audit, first, first_label)
        if registered:
            print(registered, "\n")
        if args.bands:
            print(f"Mean percentile per γ_max band (candidates = {mode}):\n")
            print(percentile_bands(main_audit, gmax), "\n")
        if msgs:
            print("messages:", *msgs[:5], sep="\n  ")
        if args.figures is not None and mode == "all":
            figures(main_audit, names[:15], args.figures)
        costly = [s for s in audit.selectors if s in COSTLY]
        if costly:
            have = audit.picks[audit.picks["selector"].isin(costly)]["dataset"].unique()
            sub, _s, _m = audit_store(args.store, costly + [s for s in stored if not s.startswith("laplacian")],
                                      candidates=mode, datasets=list(have))
            print(f"### costly selectors ({', '.join(costly)}) on the {len(have)} variants that stored them\n")
            print(table(sub), "\n")
            for s in costly:
                print("*", sub.verdicts.get(s, ""))
            print()


if __name__ == "__main__":
    main()
