"""The benchmark of Goix (2016), §"Benchmarks", on the data sets we have: ROC, PR, EM, MV for iForest, OCSVM, LOF.

For each data set and setting (novelty, unsupervised) and detector: the chapter's preparation
(``odeval.protocols.emmv_chapter.chapter_split``: outliers capped at 10 % of the inliers, attributes
with < 10 distinct values removed, standardised, seeded 50/50 split), the detector fitted on the training half
(novelty: its inliers only; OCSVM on at most 10,000 objects as in the authors' code), ROC AUC and average
precision on the labelled test half, EM and MV (``emmv``: the standard criteria when d ≤ 8, otherwise m draws of
d' = 5 features) on the test half (novelty: its inliers only). Results are cached one JSON line per cell in
``--cache`` so that an interrupted run resumes; ``--write-docs`` rewrites the tables section of docs/emmv.md
(between the BEGIN/END markers) from the cache, next to the published values, with the pair-agreement
statistic of the chapter (how often EM / MV order a pair of detectors on a data set as ROC / PR do).

    .venv/bin/python benchmarks/emmv_chapter.py [--draws 50] [--n-generated 100000] [--only pima wilt]
        [--cache benchmarks/emmv_chapter.jsonl] [--write-docs]

``--estimability`` (issue 26): the share of feature draws with an EM / MV estimate under the default
``sampling="auto"`` per data set and cell, with the method each draw needed (see :func:`estimability`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from itertools import combinations
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATASETS = {  # name: (file under the shared datasets folder, note)
    "pima": ("odds/pima.mat", "768 × 8, 268 outliers (as the chapter)"),
    "smtp": ("odds/smtp.mat", "95,156 × 3, 30 outliers (KDD Cup '99 smtp as in the chapter)"),
    "wilt": ("adbench/44_Wilt.npz", "ADBench Wilt"),
    "annthyroid": ("odds/annthyroid.mat", "7,200 × 6 (as the chapter)"),
    "arrhythmia": ("odds/arrhythmia.mat", "ODDS 452 × 274 (the chapter: 164 attributes after its removals)"),
    "ionosphere": ("odds/ionosphere.mat", "351 × 33"),
    "pendigits": ("odds/pendigits.mat", "ODDS 6,870 × 16 with 156 outliers (the chapter: 10,992 objects, "
                  "class 4 = 10.4 %)"),
    "shuttle": ("odds/shuttle.mat", "ODDS 49,097 × 9 (the chapter: 85,849, train + test)"),
}
#: Data sets the chapter evaluates with Algorithm EMMV (feature sub-sampling) although d ≤ 8: its text keeps the
#: standard criteria for http, smtp, pima, wilt and adult only, and the authors' em_bench_high.py lists annthyroid
#: (6 attributes: 50 draws of 5). max_dim for them: d - 1.
CHAPTER_MAX_DIM = {"annthyroid": 5}
DETECTORS = ("iforest", "ocsvm", "lof")
LABEL = {"iforest": "iForest", "ocsvm": "OCSVM", "lof": "LOF"}
SETTINGS = ("novelty", "unsupervised")

# Published values (the chapter's Tables "results-semisupervised" and "results-unsupervised"): ROC, PR, EM, MV.
PUBLISHED = {
    "novelty": {
        "pima": {"iforest": (0.727, 0.182, 5.0e-07, 1.2e04), "ocsvm": (0.760, 0.229, 5.2e-07, 1.3e04),
                 "lof": (0.705, 0.155, 3.2e-07, 2.1e04)},
        "smtp": {"iforest": (0.907, 0.005, 1.8e-04, 9.4e01), "ocsvm": (0.852, 0.522, 1.2e-03, 8.2),
                 "lof": (0.922, 0.189, 1.1e-03, 5.8)},
        "wilt": {"iforest": (0.491, 0.045, 4.7e-05, 2.1e03), "ocsvm": (0.325, 0.037, 5.9e-05, 4.5e02),
                 "lof": (0.698, 0.088, 2.1e-05, 1.6e03)},
        "annthyroid": {"iforest": (0.913, 0.456, 2.0e-04, 2.6e02), "ocsvm": (0.699, 0.237, 6.3e-05, 2.2e02),
                       "lof": (0.823, 0.432, 6.3e-05, 1.5e03)},
        "arrhythmia": {"iforest": (0.763, 0.487, 1.6e-04, 9.4e01), "ocsvm": (0.736, 0.449, 1.1e-04, 1.0e02),
                       "lof": (0.730, 0.413, 8.3e-05, 1.6e02)},
        "ionosphere": {"iforest": (0.902, 0.529, 9.6e-05, 7.5e01), "ocsvm": (0.977, 0.898, 1.3e-04, 5.4e01),
                       "lof": (0.971, 0.895, 1.0e-04, 7.0e01)},
        "pendigits": {"iforest": (0.811, 0.197, 2.8e-04, 2.6e01), "ocsvm": (0.606, 0.112, 2.7e-04, 2.7e01),
                      "lof": (0.983, 0.829, 4.6e-04, 1.7e01)},
        "shuttle": {"iforest": (0.996, 0.973, 1.8e-05, 5.7e03), "ocsvm": (0.992, 0.924, 3.2e-05, 2.0e01),
                    "lof": (0.999, 0.994, 7.9e-06, 2.0e06)},
    },
    "unsupervised": {
        "pima": {"iforest": (0.747, 0.205, 1.2e-06, 1.2e04), "ocsvm": (0.742, 0.211, 6.0e-07, 1.9e04),
                 "lof": (0.686, 0.143, 6.0e-07, 3.2e04)},
        "smtp": {"iforest": (0.902, 0.004, 2.7e-04, 8.6e01), "ocsvm": (0.852, 0.365, 1.4e-03, 7.7),
                 "lof": (0.912, 0.057, 1.1e-03, 7.0)},
        "wilt": {"iforest": (0.443, 0.044, 3.7e-05, 2.2e03), "ocsvm": (0.318, 0.036, 3.9e-05, 4.3e02),
                 "lof": (0.620, 0.066, 2.0e-05, 8.9e02)},
        "annthyroid": {"iforest": (0.820, 0.309, 6.9e-05, 7.7e02), "ocsvm": (0.682, 0.187, 4.1e-05, 3.1e02),
                       "lof": (0.724, 0.175, 1.6e-05, 4.1e03)},
        "arrhythmia": {"iforest": (0.740, 0.416, 8.4e-05, 1.1e02), "ocsvm": (0.729, 0.447, 6.8e-05, 1.2e02),
                       "lof": (0.729, 0.409, 5.6e-05, 1.5e02)},
        "ionosphere": {"iforest": (0.895, 0.543, 7.4e-05, 9.3e01), "ocsvm": (0.977, 0.903, 8.7e-05, 7.7e01),
                       "lof": (0.969, 0.884, 6.9e-05, 1.0e02)},
        "pendigits": {"iforest": (0.463, 0.077, 2.7e-04, 2.5e01), "ocsvm": (0.366, 0.067, 2.6e-04, 2.8e01),
                      "lof": (0.504, 0.089, 4.5e-04, 1.6e01)},
        "shuttle": {"iforest": (0.997, 0.979, 7.1e-07, 1.2e05), "ocsvm": (0.992, 0.904, 5.8e-06, 1.7e02),
                    "lof": (0.526, 0.116, 7.1e-07, 1.7e07)},
    },
}
# The chapter's other four data sets (not available here), for checking the pair-agreement statistic against the
# chapter's own numbers (novelty: EM 28/36 as ROC, 29/36 as PR; see docs/emmv.md).
PUBLISHED_OTHER = {
    "novelty": {
        "adult": {"iforest": (0.661, 0.277, 1.0e-04, 7.5e01), "ocsvm": (0.642, 0.206, 2.9e-05, 4.3e02),
                  "lof": (0.618, 0.187, 1.7e-05, 9.0e02)},
        "http": {"iforest": (0.994, 0.192, 1.3e-03, 9.0), "ocsvm": (0.999, 0.970, 6.0e-03, 2.6),
                 "lof": (0.946, 0.035, 8.0e-05, 3.9e02)},
        "forestcover": {"iforest": (0.863, 0.046, 3.9e-05, 2.0e02), "ocsvm": (0.958, 0.110, 5.2e-05, 1.2e02),
                        "lof": (0.990, 0.792, 3.5e-04, 3.9e01)},
        "spambase": {"iforest": (0.824, 0.371, 9.5e-04, 4.5e01), "ocsvm": (0.729, 0.230, 4.9e-04, 1.1e03),
                     "lof": (0.754, 0.173, 2.2e-04, 4.1e04)},
    },
    "unsupervised": {
        "adult": {"iforest": (0.644, 0.234, 6.6e-05, 2.7e02), "ocsvm": (0.627, 0.184, 1.8e-05, 5.6e02),
                  "lof": (0.545, 0.098, 7.4e-06, 1.9e03)},
        "http": {"iforest": (0.999, 0.686, 1.4e-03, 2.2e01), "ocsvm": (0.994, 0.207, 5.7e-03, 3.3),
                 "lof": (0.354, 0.019, 9.8e-05, 3.9e02)},
        "forestcover": {"iforest": (0.882, 0.062, 3.2e-05, 2.3e02), "ocsvm": (0.951, 0.095, 4.4e-05, 1.4e02),
                        "lof": (0.542, 0.016, 2.4e-04, 4.6e01)},
        "spambase": {"iforest": (0.799, 0.303, 2.2e-04, 3.5e01), "ocsvm": (0.714, 0.214, 1.5e-04, 2.9e02),
                     "lof": (0.670, 0.129, 3.7e-05, 2.7e04)},
    },
}
BEGIN, END = "<!-- BEGIN emmv_chapter.py tables -->", "<!-- END emmv_chapter.py tables -->"


def run_cell(path: Path, dataset: str, setting: str, name: str, *, draws: int, n_generated: int, seed: int,
             jobs: int = 1, box: str = "author", sampling: str = "uniform") -> dict:
    from odeval.data import load_dataset
    from odeval.protocols.emmv_chapter import chapter_split, evaluate_split

    ds = load_dataset(path)
    sp = chapter_split(ds.numeric_matrix(), ds.y, setting=setting, seed=seed)
    t0 = time.perf_counter()
    max_dim = CHAPTER_MAX_DIM.get(dataset, 8)
    res, lab = evaluate_split(name, sp, k=20, seed=seed, draws=draws, n_generated=n_generated, workers=jobs,
                              max_dim=max_dim, box=box, sampling=sampling)
    return {"dataset": dataset, "setting": setting, "detector": name, "roc": lab.get("roc_auc"),
            "pr": lab.get("average_precision"), "em": res.to_dict()["em"], "mv": res.to_dict()["mv"],
            "draws": res.draws, "subsampled": res.subsampled, "d": int(sp.features.size),
            "em_failed": res.em_failed, "mv_failed": res.mv_failed, "reasons": res.reasons,
            "em_draws": res.to_dict()["em_draws"], "mv_draws": res.to_dict()["mv_draws"],
            "n_train": res.n_train, "n_eval": res.n_test, "n_test": int(sp.y_test.size),
            "outliers_test": int(sp.y_test.sum()), "dropped_outliers": sp.n_outliers_dropped,
            "n_generated": n_generated, "seed": seed, "box": box, "max_dim": max_dim, "sampling": sampling,
            "em_methods": list(res.em_methods), "mv_methods": list(res.mv_methods),
            "method_counts": res.method_counts(),
            "seconds": round(time.perf_counter() - t0, 1)}


def load_cache(path: Path) -> dict[tuple[str, str, str], dict]:
    """One record per (data set, setting, detector): the one with the most feature draws (then the latest)."""
    out: dict[tuple[str, str, str], dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                key = (r["dataset"], r["setting"], r["detector"])
                if key not in out or r["draws"] >= out[key]["draws"]:
                    out[key] = r
    return out


def _done(r: dict | None, draws: int) -> bool:
    """A cached cell is reused unless it was sub-sampled with fewer draws than asked for."""
    return r is not None and (not r["subsampled"] or r["draws"] >= draws)


def detector_orders(cache: dict, other: dict | None = None) -> dict[tuple[str, str, str], str]:
    """EM / MV order of the three detectors per (data set, setting, "em" | "mv"), best first ("a>b>c"; a NaN
    criterion gives "n/a"). With ``other`` (a second cache), sub-sampled cells of ``cache`` with more draws than
    ``other``'s are compared on their first m draws (the draw plan is a prefix)."""
    out: dict[tuple[str, str, str], str] = {}
    for dataset in DATASETS:
        for setting in SETTINGS:
            recs = [cache.get((dataset, setting, d)) for d in DETECTORS]
            if any(r is None for r in recs):
                continue
            for key, best_high in (("em", True), ("mv", False)):
                vals = {}
                for d, r in zip(DETECTORS, recs, strict=True):
                    o = None if other is None else other.get((dataset, setting, d))
                    m = o["draws"] if o is not None and r["subsampled"] and o["draws"] < r["draws"] else None
                    v = _prefix_mean(r, m, f"{key}_draws") if m else r[key]
                    vals[d] = np.nan if v is None else v
                if any(not np.isfinite(v) for v in vals.values()):
                    out[(dataset, setting, key)] = "n/a"
                else:
                    out[(dataset, setting, key)] = ">".join(sorted(DETECTORS, key=lambda d: vals[d],
                                                                   reverse=best_high))
    return out


def _sign(x: float) -> int:
    return int(np.sign(x))


def _prefix_mean(r: dict, m: int, key: str) -> float:
    """Mean of the first ``m`` per-draw values of a cached cell (NaN draws left out, as emmv does)."""
    v = np.array([np.nan if x is None else x for x in r[key][:m]], dtype=float)
    return float(np.nanmean(v)) if not np.all(np.isnan(v)) else np.nan


def same_draw_pairs(records: dict[str, dict[str, dict]]) -> dict[str, dict[tuple[str, str], tuple[tuple, tuple]]]:
    """Per data set and pair of detectors, the (ROC, PR, EM, MV) of both on the same feature draws: when one
    cell has fewer draws (m), the other's EM / MV are the means of its first m draws (the draw plan is a
    prefix, so these equal an m-draw run; checked by :func:`prefix_check`)."""
    out: dict[str, dict[tuple[str, str], tuple[tuple, tuple]]] = {}
    for dataset, recs in records.items():
        for a, b in combinations(DETECTORS, 2):
            if a not in recs or b not in recs:
                continue
            ra, rb = recs[a], recs[b]
            m = min(ra["draws"], rb["draws"])

            def vals(r, m=m):
                if r["subsampled"] and r["draws"] > m and "em_draws" in r:
                    return (r["roc"], r["pr"], _prefix_mean(r, m, "em_draws"), _prefix_mean(r, m, "mv_draws"))
                return (r["roc"], r["pr"], np.nan if r["em"] is None else r["em"],
                        np.nan if r["mv"] is None else r["mv"])

            out.setdefault(dataset, {})[(a, b)] = (vals(ra), vals(rb))
    return out


def _table_pairs(table: dict[str, dict[str, tuple]]) -> dict[str, dict[tuple[str, str], tuple[tuple, tuple]]]:
    return {d: {(a, b): (v[a], v[b]) for a, b in combinations(DETECTORS, 2) if a in v and b in v}
            for d, v in table.items()}


def agreement(table: dict, min_gap: float = 0.0) -> dict[str, tuple[int, int]]:
    """Pairs of detectors on a data set ordered the same way by EM (MV) as by ROC (PR); ties count as
    disagreement, as any pair ROC or PR orders. Also the pairs where ROC and PR agree (the chapter's 82 %).
    ``min_gap``: count only pairs whose ROC (PR) values differ by at least this much (both, for the last two)."""
    counts = {k: [0, 0] for k in ("em_roc", "em_pr", "mv_roc", "mv_pr", "em_both", "mv_both")}
    pairs = table if all(isinstance(k, tuple) for v in table.values() for k in v) else _table_pairs(table)
    for per_pair in pairs.values():
        for va, vb in per_pair.values():
            if any(v is None or not np.isfinite(v) for v in (*va, *vb)):
                continue
            roc, pr = _sign(va[0] - vb[0]), _sign(va[1] - vb[1])
            roc = roc if abs(va[0] - vb[0]) >= min_gap else 0
            pr = pr if abs(va[1] - vb[1]) >= min_gap else 0
            em, mv = _sign(va[2] - vb[2]), _sign(vb[3] - va[3])  # MV: smaller is better
            for key, crit, ref in (("em_roc", em, roc), ("em_pr", em, pr), ("mv_roc", mv, roc), ("mv_pr", mv, pr)):
                if ref == 0 and min_gap > 0:
                    continue
                counts[key][1] += 1
                counts[key][0] += int(crit == ref != 0)
            if roc == pr != 0:
                for key, crit in (("em_both", em), ("mv_both", mv)):
                    counts[key][1] += 1
                    counts[key][0] += int(crit == roc)
    return {k: (v[0], v[1]) for k, v in counts.items()}


def _rel_se(r: dict) -> str:
    """Relative standard error of the mean over the feature draws, EM / MV (Monte Carlo spread of the draws)."""
    if not r["subsampled"] or "em_draws" not in r:
        return "–"
    out = []
    for key in ("em_draws", "mv_draws"):
        v = np.array([x for x in r[key] if x is not None], dtype=float)
        out.append(f"{np.std(v, ddof=1) / np.sqrt(v.size) / abs(v.mean()) * 100:.0f} %" if v.size > 1 else "–")
    return " / ".join(out)


def _fmt(x, kind):
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "NaN"
    return f"{x:.3f}" if kind in ("roc", "pr") else f"{x:.1e}"


def prefix_check(path: Path) -> tuple[int, int]:
    """Cells run with both m and m' > m draws: in how many does the mean of the first m of the m' draws equal
    the m-draw run bit for bit (the draw plan is a prefix: same features, same uniform samples)."""
    runs: dict[tuple[str, str, str], list[dict]] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                if r["subsampled"]:
                    runs.setdefault((r["dataset"], r["setting"], r["detector"]), []).append(r)
    same = total = 0
    for rs in runs.values():
        for a in rs:
            for b in rs:
                if a["draws"] < b["draws"] and "em_draws" in b:
                    prefix = [np.nan if x is None else x for x in b["em_draws"][:a["draws"]]]
                    prefix_mv = [np.nan if x is None else x for x in b["mv_draws"][:a["draws"]]]
                    em = float(np.nanmean(prefix)) if not np.all(np.isnan(prefix)) else None
                    mv = float(np.nanmean(prefix_mv)) if not np.all(np.isnan(prefix_mv)) else None
                    total += 1
                    same += int(em == a["em"] and mv == a["mv"])
    return same, total


def render(cache: dict, draws: int, n_generated: int, prefix: tuple[int, int] = (0, 0)) -> str:
    ms = sorted({r["draws"] for r in cache.values() if r["subsampled"]}) or [draws]
    ns = sorted({r["n_generated"] for r in cache.values()}) or [n_generated]
    fewer = sorted({r["draws"] for r in cache.values() if r["subsampled"] and r["draws"] < draws})
    lines = [BEGIN, "", f"Generated by `benchmarks/emmv_chapter.py --write-docs` from its cache (seed 0, "
             f"n_generated = {'/'.join(f'{n:,}' for n in ns)}, m = {'/'.join(map(str, ms))} draws of d' = 5 "
             "features when d > 8). Each cell: **odeval** / *published*. PR = average precision (the chapter: area "
             "under the PR curve). EM: larger = better; MV: smaller = better."]
    if fewer:
        lines[-1] += (f" **†** marks cells with fewer than the chapter's m = {draws} draws (m = "
                      f"{'/'.join(map(str, fewer))}): not rerun with m = {draws} in the time available.")
    if prefix[1]:
        lines[-1] += (f" Check: in {prefix[0]} of {prefix[1]} cells run with both m = 10 and m = 50, the first 10 "
                      "of the 50 draws reproduce the m = 10 run bit for bit.")
    lines.append("")
    for setting in SETTINGS:
        lines += [f"#### {setting.capitalize()} setting", "",
                  "| data set (d used) | detector | ROC | PR | EM | MV | EM/MV failed draws | EM/MV rel. s.e. | time |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | ---: |"]
        ours: dict[str, dict[str, tuple]] = {}
        records: dict[str, dict[str, dict]] = {}
        pub: dict[str, dict[str, tuple]] = {}
        for dataset in DATASETS:
            for name in DETECTORS:
                r = cache.get((dataset, setting, name))
                p = PUBLISHED[setting][dataset][name]
                pub.setdefault(dataset, {})[name] = p
                if r is None:
                    lines.append(f"| {dataset} | {LABEL[name]} | not run | | | | | | |")
                    continue
                vals = (r["roc"], r["pr"], r["em"] if r["em"] is not None else np.nan,
                        r["mv"] if r["mv"] is not None else np.nan)
                ours.setdefault(dataset, {})[name] = vals
                records.setdefault(dataset, {})[name] = r
                cells = [f"**{_fmt(v, k)}** / *{_fmt(q, k)}*" for v, q, k in zip(vals, p, ("roc", "pr", "em", "mv"),
                                                                                strict=True)]
                sub = f"{r['draws']}×5" if r["subsampled"] else "all"
                if r["subsampled"] and r["draws"] < draws:
                    sub += " †"
                lines.append(f"| {dataset} ({r['d']}, {sub}) | {LABEL[name]} | {' | '.join(cells)} | "
                             f"{r['em_failed']}/{r['mv_failed']} | {_rel_se(r)} | {r['seconds']:.0f} s |")
        same = same_draw_pairs(records)
        a_ours, a_pub = agreement(same), agreement({d: pub[d] for d in ours})
        a_all = agreement(PUBLISHED[setting] | PUBLISHED_OTHER[setting])
        lines += ["", f"Pair agreement ({setting}; pairs of detectors on a data set ordered alike; published = the "
                  "chapter's values restricted to the same data sets; a pair with a † cell compares both detectors "
                  "on the same first m draws):", "",
                  "| | EM vs ROC | EM vs PR | MV vs ROC | MV vs PR | EM, pairs where ROC = PR "
                  "| MV, pairs where ROC = PR |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        gap = 0.02
        for label, a in (("odeval", a_ours), (f"odeval, only pairs whose ROC (PR) differ by ≥ {gap}",
                                              agreement(same, gap)), ("published, same data sets", a_pub),
                         ("published, all 12 data sets of the chapter", a_all)):
            cells = [f"{a[k][0]}/{a[k][1]} ({100 * a[k][0] / a[k][1]:.0f} %)" if a[k][1] else "–"
                     for k in ("em_roc", "em_pr", "mv_roc", "mv_pr", "em_both", "mv_both")]
            lines.append(f"| {label} | {' | '.join(cells)} |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def estimability(auto: dict, uniform: dict, draws: int) -> tuple[list[str], list[str]]:
    """Per cell, the draws with an EM / MV estimate under the default ``sampling="auto"``, and per data set the
    share over its cells: ``(cell lines, data-set lines)`` (Markdown table rows).

    A cell of ``auto`` (the cache of ``--estimability`` runs) is used as is. A cell that is only in ``uniform``
    (the authors' uniform points, same box) and has an estimate in every draw is what "auto" gives too, bit for
    bit — "auto" redoes only the draws a criterion is missing in
    (``tests/labelfree/test_emmv_algorithm.py::test_auto_redoes_only_the_draws_it_must``) — and is marked so.
    Cells with fewer than ``draws`` draws are used with the draws they have (the m is shown)."""
    cells, per_set = [], []
    for dataset in DATASETS:
        tot = {"em": [0, 0], "mv": [0, 0]}
        for setting in SETTINGS:
            for name in DETECTORS:
                r, src = auto.get((dataset, setting, name)), "auto run"
                u = uniform.get((dataset, setting, name))
                if r is None and u is not None and u["em_failed"] == u["mv_failed"] == 0:
                    r, src = u, "uniform run, every draw estimable (auto: identical)"
                if r is None:
                    cells.append(f"| {dataset} | {setting} | {LABEL[name]} | not run | | | | |")
                    continue
                m = r["draws"]
                em_ok, mv_ok = m - r["em_failed"], m - r["mv_failed"]
                tot["em"][0] += em_ok
                tot["mv"][0] += mv_ok
                tot["em"][1] += m
                tot["mv"][1] += m
                how = r.get("method_counts")
                how_txt = "; ".join(f"{c.upper()} " + ", ".join(f"{k} {v}" for k, v in how[c].items())
                                    for c in ("em", "mv")) if how and src == "auto run" else "uniform/grid"
                u_txt = "–" if u is None or u["draws"] != m else f"{m - u['em_failed']}/{m - u['mv_failed']}"
                cells.append(f"| {dataset} | {setting} | {LABEL[name]} | {em_ok}/{m} | {mv_ok}/{m} | {u_txt} | "
                             f"{how_txt} | {src} |")
        if tot["em"][1]:
            per_set.append(f"| {dataset} | {tot['em'][0]}/{tot['em'][1]} ({100 * tot['em'][0] / tot['em'][1]:.0f} %) "
                           f"| {tot['mv'][0]}/{tot['mv'][1]} ({100 * tot['mv'][0] / tot['mv'][1]:.0f} %) |")
    return cells, per_set


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=50)
    ap.add_argument("--n-generated", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--box", choices=("author", "train_test"), default="author",
                    help="EMMVSettings.box (the cache benchmarks/emmv_chapter_train_test.jsonl holds the earlier box)")
    ap.add_argument("--jobs", type=int, default=1, help="feature draws in parallel (same numbers)")
    ap.add_argument("--only", nargs="*", default=None, help="data sets to run (default: all)")
    ap.add_argument("--detectors", nargs="*", default=list(DETECTORS))
    ap.add_argument("--settings", nargs="*", default=list(SETTINGS))
    ap.add_argument("--cache", type=Path, default=None,
                    help="default: benchmarks/emmv_chapter_author.jsonl (--box author; m = 10 cells, issue 26), "
                         "benchmarks/emmv_chapter.jsonl (--box train_test: the m = 50 run of 2026-11-24), or with "
                         "--write-docs benchmarks/emmv_chapter_default.jsonl (today's defaults at m = 50, which "
                         "docs/emmv.md renders)")
    ap.add_argument("--write-docs", action="store_true", help="only rewrite docs/emmv.md's tables from the cache")
    ap.add_argument("--sampling", choices=("auto", "uniform", "nested"), default="uniform",
                    help="EMMVSettings.sampling of the cells run (the tables: the authors' uniform points)")
    ap.add_argument("--estimability", action="store_true",
                    help="the share of draws with an EM / MV estimate under the default sampling=\"auto\", per "
                         "data set: runs (cache benchmarks/emmv_chapter_auto.jsonl) the cells whose uniform run "
                         "(--uniform-cache) misses a draw or is absent, prints the tables")
    ap.add_argument("--uniform-cache", type=Path, default=ROOT / "benchmarks" / "emmv_chapter_author.jsonl",
                    help="--estimability: the authors' box, uniform points (cells estimable in every draw there "
                         "are not rerun)")
    args = ap.parse_args()
    if args.estimability:
        args.sampling = "auto"
        if args.cache is None:
            args.cache = ROOT / "benchmarks" / "emmv_chapter_auto.jsonl"
    if args.cache is None:
        name = ("emmv_chapter_default.jsonl" if args.write_docs
                else "emmv_chapter.jsonl" if args.box == "train_test" else "emmv_chapter_author.jsonl")
        args.cache = ROOT / "benchmarks" / name
    if args.write_docs:
        doc = ROOT / "docs" / "emmv.md"
        text = doc.read_text()
        i, j = text.index(BEGIN), text.index(END) + len(END)
        doc.write_text(text[:i] + render(load_cache(args.cache), args.draws, args.n_generated,
                                      prefix_check(args.cache)) + text[j:])
        print(f"wrote {doc}")
        return
    datasets = Path(os.environ.get("ODEVAL_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
    cache = load_cache(args.cache)
    import warnings

    warnings.simplefilter("ignore")
    uniform = load_cache(args.uniform_cache) if args.estimability else {}
    for dataset in args.only or list(DATASETS):
        for setting in args.settings:
            for name in args.detectors:
                if _done(cache.get((dataset, setting, name)), args.draws):
                    continue
                u = uniform.get((dataset, setting, name))
                if args.estimability and u is not None and u["em_failed"] == u["mv_failed"] == 0:
                    continue  # auto gives this cell bit for bit
                r = run_cell(datasets / DATASETS[dataset][0], dataset, setting, name, draws=args.draws,
                             n_generated=args.n_generated, seed=args.seed, jobs=args.jobs, box=args.box,
                             sampling=args.sampling)
                with args.cache.open("a") as fh:
                    fh.write(json.dumps(r) + "\n")
                print(f"{dataset:11s} {setting:12s} {name:8s} ROC {r['roc']:.3f} PR {r['pr']:.3f} EM {r['em']} "
                      f"MV {r['mv']} failed {r['em_failed']}/{r['mv_failed']} of {r['draws']} "
                      f"{r['method_counts']} ({r['seconds']} s)", flush=True)
                cache[(dataset, setting, name)] = r
    if args.estimability:
        cells, per_set = estimability(cache, uniform, args.draws)
        print("| data set | setting | detector | EM estimable | MV estimable | uniform points alone (EM/MV) "
              "| method (draws) | source |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        print("\n".join(cells))
        print("\n| data set | EM estimable (all cells) | MV estimable (all cells) |\n| --- | --- | --- |")
        print("\n".join(per_set))


if __name__ == "__main__":
    main()
