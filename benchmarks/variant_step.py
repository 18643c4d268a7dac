"""Cost of the study's per-variant step (odeval.bench.variant_step) on Campos variants, extrapolated to the collection.

Per variant, in one process, CPU seconds (``time.process_time``) and wall seconds of each phase of
:func:`odeval.bench.variant_step.run_variant_job`, on the twelve Campos methods × k = 1..KMAX:

* prepare: load + kNN graph for the largest k (shared with the units in a real study);
* rescore: every method × k from the graph (the units' scoring path) + each candidate's quality by the labels;
* consensus: the default selectors without mc-kendall, and mc-kendall alone (O(R² N log N));
* IREOS approx: ``ireos(X, candidates, knn=250, adaptive quadrature, m_cl=1, adjust=True, p_values=True)``, as
  the study's IREOS task — all candidates when N ≤ ``--ireos-max-n``, and the ten candidates of §4.2.

Then the extrapolation to every ``*withoutdupl_norm*`` variant of ``../shared/datasets/dami`` (262 variants):
rescore + consensus and IREOS scaled by N from the measured variants (CPU per object, from the variants with
N > 251 where IREOS uses kNN subsets of 250), and the target line against issue 15's 2 h.

    python benchmarks/variant_step.py                       # default variants
    python benchmarks/variant_step.py Glass_withoutdupl_norm Shuttle_withoutdupl_norm_v01 --ireos-max-n 1100
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

DAMI = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "dami"
METHODS = ["kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "FastABOD", "KDEOS", "LDF", "INFLO", "COF"]
DEFAULT = ["Glass_withoutdupl_norm", "WBC_withoutdupl_norm_v01", "Pima_withoutdupl_norm_05_v01",
           "Shuttle_withoutdupl_norm_v01", "Waveform_withoutdupl_norm_v01", "Annthyroid_withoutdupl_norm_05_v01"]


def timed(fn, label: str = ""):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    c, w = time.process_time() - c0, time.perf_counter() - w0
    if label:  # printed as soon as measured (the long IREOS runs may be stopped)
        fits = f", {out.n_fits} classifiers" if hasattr(out, "n_fits") else ""
        print(f"    {label}: {c:.1f} s CPU, {w:.1f} s wall{fits}", flush=True)
    return out, c, w


def n_objects(path: Path) -> int:
    with path.open(errors="replace") as fh:
        return sum(1 for line in fh if line.strip() and not line.startswith(("%", "@")))


def measure(path: Path, kmax: int, ireos_max_n: int, ireos10_max_n: int, kendall_max_n: int) -> dict:
    from odeval._krange import parse_k_range
    from odeval.bench.config import MethodSpec
    from odeval.bench.runner import prepare_variant
    from odeval.bench.variant_step import candidate_scorings
    from odeval.data import catalogue
    from odeval.labelfree import ireos
    from odeval.labelfree.selection import default_selectors, paper_candidates, run_selectors
    from odeval.measures import evaluate_many

    ref = catalogue.variant_from_path(path)
    ks = parse_k_range(f"1..{kmax}")
    methods = [MethodSpec(m, {}, ks) for m in METHODS]
    prep, c_prep, w_prep = timed(lambda: prepare_variant(ref, methods, "euclidean", keep_data=True),
                                 f"{path.stem}: prepare")
    (S, meta, _), c_sc, w_sc = timed(lambda: candidate_scorings(prep, [(m, "") for m in methods]), "rescore")
    q, c_q, w_q = timed(lambda: evaluate_many(prep.labels, S))
    names = [c.name for c in meta]
    fast = [s for s in default_selectors() if s != "mc-kendall"]
    _, c_cons, w_cons = timed(lambda: run_selectors(S, names, fast, seed=0),
                              f"consensus (R={S.shape[0]}, N={S.shape[1]})")
    row = {"variant": path.stem, "N": S.shape[1], "d": prep.X.shape[1], "R": S.shape[0],
           "prepare": (c_prep, w_prep), "rescore": (c_sc + c_q, w_sc + w_q), "consensus": (c_cons, w_cons)}
    if S.shape[1] <= kendall_max_n:
        _, c_k, w_k = timed(lambda: run_selectors(S, names, ["mc-kendall"], seed=0), "mc-kendall")
        row["mc-kendall"] = (c_k, w_k)
    knn = 250 if S.shape[1] > 251 else None
    ten = paper_candidates(q["roc_auc"], 10)
    if S.shape[1] <= ireos10_max_n:
        r10, c10, w10 = timed(lambda: ireos(prep.X, list(S[ten]), knn=knn, adjust=True, p_values=True, workers=1),
                              "IREOS 10 candidates")
        row["ireos10"] = (c10, w10, r10.n_fits)
    if S.shape[1] <= ireos_max_n:
        ra, ca, wa = timed(lambda: ireos(prep.X, list(S), knn=knn, adjust=True, p_values=True, workers=1),
                          "IREOS all candidates")
        row["ireos_all"] = (ca, wa, ra.n_fits)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="*", default=DEFAULT)
    ap.add_argument("--kmax", type=int, default=100)
    ap.add_argument("--ireos-max-n", type=int, default=1100, help="IREOS over all candidates only up to this N")
    ap.add_argument("--ireos10-max-n", type=int, default=4000, help="IREOS over the 10 candidates up to this N")
    ap.add_argument("--kendall-max-n", type=int, default=600, help="mc-kendall only up to this N")
    args = ap.parse_args()
    files = {p.stem: p for p in DAMI.glob("*/*withoutdupl_norm*.arff")}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; CPU s / wall s per phase")
    rows = []
    for name in args.variants:
        row = measure(files[name], args.kmax, args.ireos_max_n, args.ireos10_max_n, args.kendall_max_n)
        rows.append(row)

        def f(key, row=row):
            v = row.get(key)
            return "—" if v is None else f"{v[0]:.1f}/{v[1]:.1f}" + (f" ({v[2]} fits)" if len(v) > 2 else "")
        print(f"{row['variant']}: N={row['N']} d={row['d']} R={row['R']}  prepare {f('prepare')}  rescore "
              f"{f('rescore')}  consensus {f('consensus')}  mc-kendall {f('mc-kendall')}  IREOS 10 cand. "
              f"{f('ireos10')}  IREOS all {f('ireos_all')}", flush=True)

    sizes = np.array([n_objects(p) for p in files.values()], dtype=float)
    big = [r for r in rows if r["N"] > 251] or rows
    per_obj = {k: np.median([r[k][0] / r["N"] for r in (big if k in ("prepare", "rescore", "consensus") else rows)
                             if k in r]) for k in ("prepare", "rescore", "consensus", "ireos10", "ireos_all")
               if any(k in r for r in rows)}
    total_n = sizes.sum()
    est = {k: v * total_n for k, v in per_obj.items()}
    print(f"\ncollection: {sizes.size} variants, sum N = {total_n:.0f}, max N = {sizes.max():.0f}")
    for k, v in est.items():
        print(f"  {k:10s} {per_obj[k] * 1e3:7.2f} ms CPU per object -> {v / 3600:6.2f} CPU-h")
    cons = est["prepare"] + est["rescore"] + est["consensus"]
    print(f"TARGET (issue 15: full collection < 2 h on 2 cores): consensus selectors {cons / 3600:.2f} CPU-h "
          f"≈ {cons / 7200:.2f} h wall on 2 idle cores; + approximate IREOS (all candidates) "
          f"{(cons + est.get('ireos_all', np.nan)) / 7200:.2f} h; + IREOS (10 candidates) "
          f"{(cons + est.get('ireos10', np.nan)) / 7200:.2f} h")
    if "mc-kendall" in rows[0]:  # O(R^2 N log N): scaled from the measured variants by N log N
        per = np.median([r["mc-kendall"][0] / (r["N"] * np.log(r["N"])) for r in rows if "mc-kendall" in r])
        print(f"  mc-kendall (scaled by N log N, same R): {per * (sizes * np.log(sizes)).sum() / 3600:.1f} CPU-h")


if __name__ == "__main__":
    main()
