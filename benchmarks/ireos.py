"""IREOS speed-ups side by side (Marques et al. 2020, Sect. 3.5, Tables 2-5), and the real-data effectiveness
tables (Tables 6-7).

Mode ``speed`` (default): per dataset, one run of each configuration on the same candidates, printing the number
of classifiers, wall time and the largest index difference to the exact fixed-grid index (n_gamma = 100):

    fixed      exact classifiers, fixed grid n_gamma = 100 (the reference)
    adaptive   exact classifiers, adaptive Simpson quadrature (default tol 0.001, Eq. 14)
    +prune     adaptive + stop-early pruning (ireos_select; ranking compared instead of values)
    +knn       fixed grid and adaptive with kNN subsets (k = 250, the default of Table 5; for N <= 251 this
               is the exact index)
    combined   adaptive + kNN subsets + pruning

Datasets: ``wbc-example`` (the authors' example: 223 objects, 11 binary solutions) and the Campos et al. (DAMI)
variants by name, e.g. ``Annthyroid_withoutdupl_norm_07``; for those, 10 candidates are chosen as in Sect. 4.2
(best, worst and evenly spaced ROC AUC among 13 methods x k). Configurations whose reference is too expensive are
skipped with ``--max-exact`` (default: exact classifiers only for N <= 1000).

Mode ``target``: the issue's speed target in one line -- all approximations combined (adaptive quadrature,
kNN subsets k = 250, stop-early pruning; m_cl = 1, the 10 candidates of Sect. 4.2) on Annthyroid (7129 x 21) with
two workers: wall time, CPU time (this process and its children), classifiers, peak RSS, and the largest index
difference to the exact fixed-grid index where that is computable (``--max-exact``, not for Annthyroid).
``--classifier`` (``target``, ``table``, ``gammamax``): the separability classifier, ``pinned`` (ireos()'s
default) or ``optimum``; the other modes run ireos()'s default.

Mode ``table``: Spearman(IREOS, ROC AUC) over the 10 candidates for m_cl in {1, sqrt5}, the Laplacian Score
baseline (k = 1, sqrt N, 100) and the ROC AUC of the candidate each index picks (min / mean / max), printed as
Markdown rows for docs/ireos.md.

Mode ``explain`` (docs/ireos.md, *Shuttle*): per candidate its weights and where they sit (labelled outliers or
inliers), the separability areas of the labelled outliers against everybody's, the ground truth as a binary
solution, and Spearman with gamma_max set by the labelled outliers alone (a diagnosis: uses the labels).

Mode ``gammamax`` (docs/ireos.md, *A high gamma_max, per classifier*): where the gamma_max search ends with a
classifier (``--classifier pinned`` or ``optimum``) and how good the IREOS pick is there (Spearman, the pick's
rank among the ten); ``--out`` appends JSON lines (benchmarks/ireos_gamma_max.jsonl holds the recorded run).

Mode ``chance``: Monte Carlo E{I} per candidate for m_cl > 1 (Appendix A.2) and whether the adjusted index ranks
the candidates like the raw one.

    .venv/bin/python benchmarks/ireos.py target                       # Annthyroid, all combined
    .venv/bin/python benchmarks/ireos.py speed wbc-example Ionosphere_withoutdupl_norm WDBC_withoutdupl_norm_v01
    .venv/bin/python benchmarks/ireos.py table WBC_withoutdupl_norm_v01 Glass_withoutdupl_norm
    .venv/bin/python benchmarks/ireos.py explain Shuttle_withoutdupl_norm_v01 --jobs 1
    .venv/bin/python benchmarks/ireos.py gammamax Shuttle_withoutdupl_norm_v01 --jobs 1 --classifier pinned
    .venv/bin/python benchmarks/ireos.py chance Parkinson_withoutdupl_norm_05_v01 --ci-width 0.004 --max-draws 1000
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from odeval.analysis.selection import paper_candidates
from odeval.data import load_dataset
from odeval.detectors import available_methods, get_detector
from odeval.labelfree import ireos, ireos_select, laplacian_score
from odeval.measures import roc_auc
from odeval.neighbors import knn_graph

SHARED = Path(os.environ.get("ODEVAL_SHARED_DATASETS", Path(__file__).resolve().parents[1].parent / "shared" /
                             "datasets"))
KS = (1, 2, 3, 5, 7, 10, 15, 20, 30, 40, 50, 70, 100)


def wbc_example():
    d = SHARED / "ireos_wbc_example"
    X = np.loadtxt(d / "WBC_withoutdupl_norm.txt")
    sols = [np.array([ln.strip().strip('"') == "outlier" for ln in open(d / "solutions" / f"{i}.txt")
                      if ln.strip()]) for i in range(11)]
    return X, sols, np.arange(11, dtype=float), [f"sol{i}" for i in range(11)]


def dami(name: str, n_candidates: int = 10):
    base = name.split("_")[0]
    ds = load_dataset(SHARED / "dami" / base / f"{name}.arff")
    X, y = ds.numeric_matrix(), ds.y
    kmax = min(max(KS), X.shape[0] - 2)
    graph = knn_graph(X, kmax)
    ks = [k for k in KS if k <= kmax]
    scores, names = [], []
    for method in available_methods():
        try:
            det = get_detector(method)
            mks = [k for k in ks if k >= det.info.min_k]
            S = det.score_all_k(graph, mks)
        except Exception as exc:  # a method that cannot run on this dataset is skipped, and said so
            print(f"  {method}: skipped ({exc})", file=sys.stderr)
            continue
        for k, row in zip(mks, S, strict=True):
            if np.isfinite(row).all() and np.ptp(row) > 0:
                scores.append(row)
                names.append(f"{method}-{k:03d}")
    aucs = np.array([roc_auc(y, s) for s in scores])
    pick = paper_candidates(aucs, n_candidates)
    return X, [scores[i] for i in pick], aucs[pick], [names[i] for i in pick]


CACHE = Path(os.environ.get("ODEVAL_BENCH_CACHE", Path.home() / ".cache" / "odeval-bench" / "ireos"))


def load(name: str):
    """The candidates of a dataset; the 10 DAMI candidates are cached in ``$ODEVAL_BENCH_CACHE`` (scoring 13
    methods x 13 k takes minutes on the larger datasets)."""
    if name == "wbc-example":
        return wbc_example()
    cache = CACHE / f"{name}.npz"
    if cache.is_file():
        z = np.load(cache, allow_pickle=False)
        return z["X"], list(z["scores"]), z["aucs"], [str(c) for c in z["names"]]
    X, scores, aucs, names = dami(name)
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, X=X, scores=np.vstack(scores), aucs=aucs, names=np.array(names))
    return X, scores, aucs, names


def timed(fn):
    """Result, wall time and CPU time of this process (threads included): on a shared, loaded machine the CPU
    time is what the run needs, the wall time what it got."""
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, (time.perf_counter() - t, time.process_time() - c)


def speed(names: list[str], max_exact: int, jobs: int, only_combined: bool = False) -> None:
    load_avg = os.getloadavg()[0]
    print(f"load average {load_avg:.1f}; threads {jobs}")
    print("| dataset | N | configuration | classifiers | wall (s) | CPU (s) | max abs index diff to reference | "
          "ranking |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |")
    for name in names:
        _speed_one(name, max_exact, jobs, only_combined)


def _report_progress(stage: str, n: int, _last=[0]) -> None:  # noqa: B006 (a counter shared across calls)
    if n - _last[0] >= 2000 or n < _last[0]:
        _last[0] = n
        print(f"  {stage}: {n} classifiers, CPU {time.process_time():.0f} s", file=sys.stderr, flush=True)


def _swaps(ref_index: np.ndarray, order: np.ndarray, index: np.ndarray | None) -> list[str]:
    """The candidate pairs a configuration ranks the other way round than the reference, each with the
    reference's index gap (and the configuration's gap where it computed full indices)."""
    rank = np.empty(len(order), dtype=np.int64)
    rank[np.asarray(order)] = np.arange(len(order))
    ref_order = np.argsort(-ref_index, kind="stable")
    out = []
    for x in range(len(ref_order)):
        for y in range(x + 1, len(ref_order)):
            a, b = int(ref_order[x]), int(ref_order[y])
            if rank[a] > rank[b]:
                here = "" if index is None else f", here {index[a] - index[b]:+.1e}"
                out.append(f"{a}>{b} (ref gap {ref_index[a] - ref_index[b]:.1e}{here})")
    return out


def _speed_one(name: str, max_exact: int, jobs: int, only_combined: bool) -> None:
    (X, sols, aucs, cand), tl = timed(lambda: load(name))
    print(f"{name}: candidates in {tl[0]:.0f} s", file=sys.stderr)
    N = X.shape[0]
    kw = {"workers": jobs, "progress": _report_progress}
    exact = N <= max_exact
    knn = 250  # the default of the paper's Table 5; for N <= 251 it is the exact index
    rows = []
    ref = None
    if exact:
        r, t = timed(lambda: ireos(X, sols, quadrature="fixed", n_gamma=100, knn=None, **kw))
        ref = r
        rows.append(("fixed n_gamma=100 (exact)", r.n_fits, t, 0.0, np.argsort(-r.index, kind="stable"), r.index))
        r, t = timed(lambda: ireos(X, sols, knn=None, **kw))
        rows.append(("adaptive", r.n_fits, t, np.abs(r.index - ref.index).max(),
                     np.argsort(-r.index, kind="stable"), r.index))
        s, t = timed(lambda: ireos_select(X, sols, knn=None, **kw))
        rows.append(("adaptive + pruning", s.n_fits, t, math.nan, s.order, None))
    if exact and not only_combined:
        r, t = timed(lambda: ireos(X, sols, knn=knn, quadrature="fixed", n_gamma=100, **kw))
        rows.append((f"fixed n_gamma=100 + kNN k={knn}", r.n_fits, t, np.abs(r.index - ref.index).max(),
                     np.argsort(-r.index, kind="stable"), r.index))
    if not only_combined:
        r, t = timed(lambda: ireos(X, sols, knn=knn, **kw))
        rows.append((f"adaptive + kNN k={knn}", r.n_fits, t,
                     np.abs(r.index - ref.index).max() if ref is not None else math.nan,
                     np.argsort(-r.index, kind="stable"), r.index))
    s, t = timed(lambda: ireos_select(X, sols, knn=knn, **kw))
    rows.append(("all combined (adaptive + kNN + pruning)", s.n_fits, t, math.nan, s.order, None))
    ref_order = rows[0][4]
    for label, fits, t, diff, order, _ in rows:
        same = "same as reference" if list(order) == list(ref_order) else "differs"
        if rows[0][0] == label:
            same = "reference"
        d = "—" if math.isnan(diff) else f"{diff:.4f}"
        print(f"| {name} | {N} | {label} | {fits} | {t[0]:.1f} | {t[1]:.1f} | {d} | {same} |", flush=True)
    if ref is None:
        return
    # what "differs" means: the swapped pairs, and what the approximation does to Spearman(index, ROC AUC)
    listing = ", ".join(f"{i} {cand[i]} (AUC {aucs[i]:.3f}) {ref.index[i]:.6f}"
                        for i in np.argsort(-ref.index, kind="stable"))
    print(f"  {name} reference (gamma_max {ref.gamma_max:.4g}) indices: {listing}", flush=True)
    rank_auc = stats.rankdata(aucs)
    for label, _, _, _, order, index in rows[1:]:
        pos = np.empty(len(order))
        pos[np.asarray(order)] = np.arange(len(order), 0, -1)
        rho_ref = stats.spearmanr(ref.index, rank_auc).statistic
        rho = stats.spearmanr(pos, rank_auc).statistic
        sw = _swaps(ref.index, order, index)
        print(f"  {name} {label}: {len(sw)} swapped pair(s){': ' + '; '.join(sw) if sw else ''}; "
              f"Spearman(index, ROC AUC) {rho_ref:.3f} -> {rho:.3f}", flush=True)


def target(name: str, jobs: int, max_exact: int, executor: str | None, classifier: str = "pinned") -> None:
    """The issue's target line: all approximations combined on one dataset (Annthyroid by default)."""
    X, sols, _, _ = load(name)
    N, d = X.shape
    load_before = os.getloadavg()[0]
    t, c = time.perf_counter(), _cpu()
    sel = ireos_select(X, sols, knn=250, workers=jobs, executor=executor, classifier=classifier)
    wall, cpu = time.perf_counter() - t, _cpu() - c
    rss = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    diff = "n/a (exact index not computed: N > --max-exact)"
    if N <= max_exact:
        ref = ireos(X, sols, quadrature="fixed", n_gamma=100, knn=None, workers=jobs, classifier=classifier)
        full = ireos(X, sols, knn=250, workers=jobs, classifier=classifier)
        same = list(sel.order) == list(np.argsort(-ref.index, kind="stable"))
        diff = f"{np.abs(full.index - ref.index).max():.4f} (ranking {'same' if same else 'differs'})"
    print(f"TARGET {name} N={N} d={d} candidates={len(sols)} all combined (adaptive tol 0.001 + kNN k=250 + "
          f"pruning, m_cl=1, {classifier} classifier), {jobs} workers: wall {wall:.1f} s, CPU {cpu:.1f} s, "
          f"classifiers {sel.n_fits} ({sel.n_factorisations / sel.n_fits:.2f} factorisations each), "
          f"objects {sel.n_objects}, gamma_max {sel.gamma_max:.4g}, peak RSS {rss / 1024:.0f} MB, "
          f"max |dI| vs exact {diff}; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)


def _cpu() -> float:
    """CPU seconds of this process (all threads) and of its finished children (worker processes)."""
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ch.ru_utime + ch.ru_stime


def table(names: list[str], jobs: int, max_sqrt5: int, gamma_max_quantile: float = 1.0,
          classifier: str = "pinned") -> None:
    print(f"load average {os.getloadavg()[0]:.1f}, {classifier} classifier")
    print("| dataset | N | IREOS m_cl=1 | IREOS m_cl=sqrt5 | LS k=1 | LS k=sqrt N | LS k=100 | "
          "ROC AUC min / mean / max | picked by IREOS 1 / sqrt5 | picked by LS sqrtN | CPU (s) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- | ---: |")
    for name in names:
        X, sols, aucs, cand = load(name)
        N = X.shape[0]
        knn = 250 if N > 251 else None
        t0 = _cpu()
        q = {"gamma_max_quantile": gamma_max_quantile, "classifier": classifier}
        r1 = ireos(X, sols, knn=knn, workers=jobs, progress=_report_progress, **q)
        t1 = _cpu() - t0
        print(f"  {name}: m_cl=1 {r1.n_fits} classifiers, {t1:.0f} s CPU, {int((r1.weights > 0).any(axis=0).sum())} "
              f"objects with weight; m_cl=sqrt5 needs curves for {int((r1.weights > 0).sum())} (object, candidate) "
              f"pairs", file=sys.stderr, flush=True)
        r5 = (ireos(X, sols, knn=knn, m_cl="sqrt5", workers=jobs, progress=_report_progress, **q)
              if N <= max_sqrt5 else None)
        t = _cpu() - t0
        if r5 is not None:
            print(f"  {name}: m_cl=sqrt5 {r5.n_fits} classifiers, {t - t1:.0f} s CPU", file=sys.stderr, flush=True)
        if r5 is None:  # m_cl > 1 has no shared curves (S times the classifiers): not run above --max-sqrt5
            r5 = r1.__class__(**{**r1.__dict__, "index": np.full(len(sols), np.nan)})
        rho = [stats.spearmanr(r.index, aucs).statistic if np.isfinite(r.index).all() else math.nan
               for r in (r1, r5)]
        ls = [laplacian_score(r1.weights, k) for k in (1, round(math.sqrt(N)), 100)]
        rho_ls = [stats.spearmanr(-v, aucs).statistic for v in ls]
        picks = [aucs[int(np.argmax(r.index))] if np.isfinite(r.index).all() else math.nan for r in (r1, r5)]
        pick_ls = aucs[int(np.argmin(ls[1]))]
        print(f"| {name} | {N} | {rho[0]:.3f} | {rho[1]:.3f} | {rho_ls[0]:.3f} | {rho_ls[1]:.3f} | "
              f"{rho_ls[2]:.3f} | {aucs.min():.3f} / {aucs.mean():.3f} / {aucs.max():.3f} | "
              f"{picks[0]:.3f} ({cand[int(np.argmax(r1.index))]}) / "
              f"{f'{picks[1]:.3f} ({cand[int(np.argmax(r5.index))]})' if np.isfinite(picks[1]) else 'not run'} | "
              f"{pick_ls:.3f} | {t:.0f} |", flush=True)


def labels(name: str) -> np.ndarray:
    base = name.split("_")[0]
    return np.asarray(load_dataset(SHARED / "dami" / base / f"{name}.arff").y, dtype=bool)


def explain(names: list[str], jobs: int) -> None:
    """Why IREOS ranks the candidates of a dataset as it does (m_cl = 1, the table's settings): per candidate its
    weights and where they sit (labelled outliers or inliers), the separability areas of the labelled outliers
    against everybody's, the ground truth as a binary solution, and Spearman with gamma_max set by the labelled
    outliers alone instead of by the union of the candidates' outliers."""
    for name in names:
        X, sols, aucs, cand = load(name)
        y = labels(name)
        N = X.shape[0]
        knn = 250 if N > 251 else None
        t0 = _cpu()
        r = ireos(X, sols, knn=knn, adjust=True, workers=jobs)  # adjust: the areas of all N objects
        A, W = r.areas, r.weights
        rho = stats.spearmanr(r.index, aucs).statistic
        pct = stats.rankdata(A) / N  # percentile of each object's area
        print(f"## {name}: N={N}, {int(y.sum())} labelled outliers, gamma_max {r.gamma_max:.4g}, E{{I}} "
              f"{A.mean():.4f}, Spearman(IREOS, ROC AUC) {rho:.3f}, {r.n_fits} classifiers, "
              f"{_cpu() - t0:.0f} s CPU")
        print("| candidate | ROC AUC | IREOS | rank AUC / IREOS | w>0 | w>=0.5 | distinct scores | weight on labelled "
              "outliers | mean area, weighted inliers | top-10 weights: labelled outliers |")
        print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        ra = stats.rankdata(-aucs, method="min").astype(int)
        ri = stats.rankdata(-r.index, method="min").astype(int)
        for s in np.argsort(-aucs, kind="stable"):
            w = W[s]
            inl = w * ~y
            top = np.argsort(-w, kind="stable")[:10]
            print(f"| {cand[s]} | {aucs[s]:.3f} | {r.index[s]:.4f} | {ra[s]} / {ri[s]} | {(w > 0).sum()} | "
                  f"{(w >= 0.5).sum()} | {np.unique(sols[s]).size} | {w[y].sum() / w.sum():.3f} | "
                  f"{(inl @ A) / inl.sum() if inl.sum() > 0 else math.nan:.4f} | {int(y[top].sum())} |")
        o = np.flatnonzero(y)
        print(f"labelled outliers' areas: {', '.join(f'{A[j]:.3f}' for j in o)} (percentiles "
              f"{', '.join(f'{100 * pct[j]:.0f}' for j in o)}); all objects: median {np.median(A):.3f}, "
              f"90th {np.quantile(A, 0.9):.3f}, max {A.max():.3f}")
        top = np.argsort(-A, kind="stable")[:20]
        print(f"the 20 most separable objects hold {int(y[top].sum())} labelled outliers")
        # the ground truth as a binary solution (same gamma_max, so the same areas: Eq. 25, 29-32, no new fits)
        n = int(y.sum())
        e, gi = A.mean(), A[y].mean()
        sd = math.sqrt(A.var() / n * (N - n) / (N - 1))
        print(f"ground truth as a binary solution at this gamma_max: I {gi:.4f}, adjusted {(gi - e) / (1 - e):.4f}, "
              f"z {(gi - e) / sd:.2f}, p {stats.norm.sf((gi - e) / sd):.3g}")
        g = ireos(X, [y], knn=knn, workers=jobs)
        r2 = ireos(X, sols, knn=knn, gamma_max=g.gamma_max, workers=jobs)
        print(f"gamma_max set by the labelled outliers alone: {g.gamma_max:.4g} (ground truth I {g.index[0]:.4f}); "
              f"the candidates' indices there: Spearman(IREOS, ROC AUC) "
              f"{stats.spearmanr(r2.index, aucs).statistic:.3f}", flush=True)


def chance(names: list[str], jobs: int, m_cl: str, ci_width: float, max_draws: int) -> None:
    """Is E{I} the same for every candidate when m_cl > 1 (so that the raw index ranks like the adjusted one)?
    Monte Carlo E{I} per candidate (Appendix A.2; exact classifiers up to N = 251, kNN subsets k = 250 above),
    the adjusted index, and Spearman(., ROC AUC) of both."""
    for name in names:
        X, sols, aucs, cand = load(name)
        N = X.shape[0]
        knn = 250 if N > 251 else None
        t0 = _cpu()
        r = ireos(X, sols, knn=knn, m_cl=m_cl, adjust=True, ci_width=ci_width, max_draws=max_draws, workers=jobs)
        half = 1.96 * r.std_null / np.sqrt(r.n_draws)
        rho = [stats.spearmanr(v, aucs).statistic for v in (r.index, r.adjusted)]
        same = list(np.argsort(-r.index, kind="stable")) == list(np.argsort(-r.adjusted, kind="stable"))
        print(f"## {name}: N={N}, m_cl={r.m_cl:.3f}, gamma_max {r.gamma_max:.4g}, {r.n_fits} classifiers, "
              f"{_cpu() - t0:.0f} s CPU; E{{I}} from {r.expected.min():.4f} to {r.expected.max():.4f}; "
              f"Spearman(index, ROC AUC) {rho[0]:.3f}, Spearman(adjusted, ROC AUC) {rho[1]:.3f}; ranking by the "
              f"adjusted index {'equals' if same else 'differs from'} the raw one")
        print("| candidate | ROC AUC | I | E{I} (95% CI half-width, draws) | I_adj | w>0 | sum w |")
        print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
        for s in np.argsort(-aucs, kind="stable"):
            w = r.weights[s]
            print(f"| {cand[s]} | {aucs[s]:.3f} | {r.index[s]:.4f} | {r.expected[s]:.4f} (±{half[s]:.4f}, "
                  f"{r.n_draws[s]}) | {r.adjusted[s]:.4f} | {(w > 0).sum()} | {w.sum():.1f} |", flush=True)


def gamma_max_check(names: list[str], jobs: int, classifier: str, out: Path | None) -> None:
    """Where the gamma_max search ends, and whether the pick is any good there (docs/ireos.md, "A high gamma_max,
    per classifier"): IREOS (m_cl = 1, gamma_max searched, kNN subsets k = 250 above 251 objects) of the 10
    candidates with ``classifier``; gamma_max, Spearman(index, ROC AUC), the pick with its rank among the ten,
    CPU time and load. One JSON line per dataset to ``out`` (appended) when given."""
    import json

    for name in names:
        X, sols, aucs, cand = load(name)
        aucs = np.asarray(aucs, dtype=float)
        knn = 250 if X.shape[0] > 251 else None
        t0 = _cpu()
        r = ireos(X, sols, m_cl=1, knn=knn, classifier=classifier, workers=jobs)
        p = int(np.argmax(r.index))
        row = {"variant": name, "N": int(X.shape[0]), "classifier": classifier, "gamma_max": float(r.gamma_max),
               "spearman": float(stats.spearmanr(r.index, aucs).statistic), "pick": cand[p],
               "pick_auc": float(aucs[p]), "pick_rank": int(1 + (aucs > aucs[p]).sum()),
               "auc_min_mean_max": [float(aucs.min()), float(aucs.mean()), float(aucs.max())],
               "names": list(cand), "aucs": [float(a) for a in aucs], "index": [float(v) for v in r.index],
               "n_fits": int(r.n_fits), "cpu_seconds": round(_cpu() - t0, 1), "load": os.getloadavg()[0]}
        print(f"{name}: {classifier} gamma_max {row['gamma_max']:.4g}, Spearman {row['spearman']:+.3f}, pick "
              f"{row['pick']} {row['pick_auc']:.3f} (rank {row['pick_rank']} of {len(aucs)}; mean "
              f"{aucs.mean():.3f}), {row['cpu_seconds']} s CPU, load {row['load']:.1f}", flush=True)
        if out is not None:
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["speed", "table", "target", "explain", "chance", "gammamax"])
    ap.add_argument("datasets", nargs="*", default=None)
    ap.add_argument("--max-exact", type=int, default=1000, help="Exact classifiers only up to this N.")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only-combined", action="store_true", help="speed: run only the all-combined row.")
    ap.add_argument("--max-sqrt5", type=int, default=10**9, help="table: m_cl = sqrt5 only up to this N.")
    ap.add_argument("--executor", default=None, help="None (threads), 'processes' or a Dask scheduler address.")
    ap.add_argument("--gamma-max-quantile", type=float, default=1.0,
                    help="table: stop the gamma_max search when this fraction of the candidate outliers is separable.")
    ap.add_argument("--mcl", default="sqrt5", help="chance: m_cl (default sqrt5).")
    ap.add_argument("--ci-width", type=float, default=0.02, help="chance: 95%% CI width of E{I}.")
    ap.add_argument("--max-draws", type=int, default=100, help="chance: Monte Carlo draws at most.")
    ap.add_argument("--classifier", default="pinned", choices=["pinned", "optimum"],
                    help="gammamax, table, target: the separability classifier (default: ireos()'s, pinned).")
    ap.add_argument("--out", type=Path, default=None, help="gammamax: append one JSON line per dataset here.")
    args = ap.parse_args()
    if args.mode == "target":
        for name in args.datasets or ["Annthyroid_withoutdupl_norm_07"]:
            target(name, args.jobs, args.max_exact, args.executor, args.classifier)
        return
    args.datasets = args.datasets or ["wbc-example"]
    if args.mode == "chance":
        chance(args.datasets, args.jobs, args.mcl, args.ci_width, args.max_draws)
    elif args.mode == "explain":
        explain(args.datasets, args.jobs)
    elif args.mode == "gammamax":
        gamma_max_check(args.datasets, args.jobs, args.classifier, args.out)
    elif args.mode == "speed":
        speed(args.datasets, 0 if args.only_combined else args.max_exact, args.jobs, args.only_combined)
    else:
        table(args.datasets, args.jobs, args.max_sqrt5, args.gamma_max_quantile, args.classifier)


if __name__ == "__main__":
    main()
