"""IREOS m_cl = n on WBC and Ionosphere: odeval against the authors' stored per-object separability curves.

The authors' repository (homarques/ireos-extension) kept, for m_cl = n, the index and the separability curve of
every object of each of the ten candidates: ``Datasets/Real/results/cln/<variant>/<i>`` (WBC_withoutdupl_norm_v10 at
commit 790b1620f630b4704703f3d56faa87473330c6f3, Ionosphere_withoutdupl_norm at commit
f2ecdc0d83747cc3d3a394491b789af29f91aefb). A file starts with ``# IREOS <index>``, then per object ``# <j>`` and
100 lines ``weight gamma p``. The numbers below were transcribed from those files (reference data; docs/ireos.md,
*On the authors' own candidates*). This script

* ``--spearman``: Spearman of the authors' stored indexes against the candidates' ROC AUC, beside odeval's indexes
  (the pinned, exact rows of benchmarks/ireos_authors.jsonl) and Table 6 (also Parkinson at 790b162 and Glass at
  f2ecdc0, whose ``results/cln`` headers were read too);
* ``--curves``: odeval's pinned separability of a few objects at the stored gammas, two ways: with the negatives'
  multipliers summing to the positive's, A = C - mean(c_neg) / (n - 1) (``equality``: the dual's constraint, odeval
  before 2026-11-27) and with the sum the reference solver actually keeps when the costs differ (``reference``:
  mean(c_neg) (n - 2) / (n - 1); odeval's pinned classifier since 2026-11-27, ``_klr.pinned_negatives_sum``);
* ``--index``: one candidate's index recomputed on the authors' gamma grid (trapezoid of the weighted mean curve,
  divided by gamma_max, as their ``IREOSSolution.computeAUC``), both ways.

Why two sums: the reference solver starts the positive multiplier at its cost C and every negative at
mean(c_neg) / (n - 1), so sum_i y_i alpha_i = C - mean(c_neg), which is 0 only when all costs are equal (m_cl = 1);
its pair steps keep that sum. After its first step the positive is pinned at A = C - mean(c_neg) / (n - 1) and the
negatives sum to mean(c_neg) (n - 2) / (n - 1) < A. odeval's pinned classifier took the negatives' sum equal to A
(the dual's equality constraint), the same thing for m_cl = 1 only; it keeps the reference sum since 2026-11-27.

    PYTHONPATH=src nice -n 19 .venv/bin/python benchmarks/ireos_authors_curves.py [--spearman] [--curves]
        [--index WBC:10]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from scipy.stats import rankdata, spearmanr

from odeval.labelfree import _klr

ROOT = Path(__file__).resolve().parents[1]
AUTHORS = ROOT.parent / "shared" / "datasets" / "ireos_authors"
C = 100.0

VARIANTS = {
    "WBC": {"folder": "WBC_withoutdupl_norm_v10", "alt10": "alt_790b162_w_10_KNN-100.txt.gz", "n": 10,
            "commit": "790b1620f630b4704703f3d56faa87473330c6f3", "gamma_max": 7.739319135126038,
            "paper": 0.042, "jsonl": ("n", "alt10"),
            # '# IREOS' line of results/cln/WBC_withoutdupl_norm_v10/1..10 (candidate 10 = KNN-100 of 790b162)
            "stored": [0.965149578667052, 0.9494014623292938, 0.945661603282372, 0.8902444050980213,
                       0.9629722272887864, 0.9715370566384299, 0.8951190882378484, 0.9506125997851751,
                       0.9064239462126757, 0.9914529202042606]},
    "Ionosphere": {"folder": "Ionosphere_withoutdupl_norm", "alt10": None, "n": 126,
                   "commit": "f2ecdc0d83747cc3d3a394491b789af29f91aefb", "gamma_max": 3.1868825985340905,
                   "paper": 0.709, "jsonl": ("n", "stored"),
                   "stored": [0.917817955739654, 0.9335863502659292, 0.9545624550816703, 0.9660916651778456,
                              0.9699021095599326, 0.9921852454229059, 0.9813126068785162, 0.9937231542711237,
                              0.9884486964285985, 0.9908137909740115]},
    # only --spearman for these two (no transcribed curves)
    "Parkinson": {"folder": "Parkinson_withoutdupl_norm_05_v02", "alt10": None, "n": 2,
                  "commit": "790b1620f630b4704703f3d56faa87473330c6f3", "gamma_max": 0.6890321253607266,
                  "paper": -0.370, "jsonl": ("n", "stored"),
                  "stored": [0.9364092673339917, 0.8855062936851017, 0.8053600189519075, 0.8291066225661846,
                             0.8702655991378779, 0.8912881716071809, 0.9440724762827695, 0.9251305122068529,
                             0.8901576300219113, 0.9465091625194791]},
    # f2ecdc0's candidate 2 is not GLOSH-80 (objects 1 and 3 weigh 0.732 and 0.295; GLOSH-80's stored file has
    # 1, 1 and its complement 0, 0): the correlation uses solutions_info's ROC AUC of GLOSH-80 for it
    "Glass": {"folder": "Glass_withoutdupl_norm", "alt10": None, "n": 9,
              "commit": "f2ecdc0d83747cc3d3a394491b789af29f91aefb", "gamma_max": 45.722538888762955,
              "paper": 0.382, "jsonl": ("n", "glosh"),
              "stored": [0.873680686768, 0.9682937284330517, 0.9295200669939384, 0.9335495816977037,
                         0.8795108096916275, 0.9779413724524281, 0.9770059469518659, 0.9760227119071062,
                         0.9787246644258207, 0.9800507559983084]},
}

#: (variant, candidate, object) -> stored p at the authors' grid points 1, 2, 3 (gamma > 0).
STORED_CURVES = {
    ("WBC", 1, 0): (0.11813254030017975, 0.2897171166162302, 0.5039159232941253),
    ("WBC", 1, 1): (0.726471155554031, 0.9885158273905741, 0.9993135192342493),
    ("WBC", 1, 2): (0.22482151746288037, 0.39306297160358783, 0.5450983291037644),
    ("WBC", 1, 3): (0.052718905721847266, 0.13266849403720601, 0.22996329964647094),
    ("WBC", 10, 0): (0.584887055729819, 0.8919870462954523, 0.9668407398692279),
    ("WBC", 10, 1): (0.9508576417959503, 0.9992037645892973, 0.999977136050162),
    ("WBC", 10, 3): (0.1717329501806608, 0.4988770150079752, 0.73993970522033),
    ("Ionosphere", 1, 0): (0.020415069166786946, 0.05326024927431449, 0.10787075835221231),
    ("Ionosphere", 1, 2): (0.011679686857737966, 0.023653382225163583, 0.04253830145347173),
    ("Ionosphere", 2, 0): (0.018596286900634338, 0.04429532578817835, 0.0851872104209409),
    ("Ionosphere", 2, 2): (0.01080400054937749, 0.02114990297928558, 0.036815332588142284),
    ("Ionosphere", 2, 4): (0.03516865575763605, 0.13465114046226617, 0.3259951071897364),
    ("Ionosphere", 6, 0): (0.011770364885102726, 0.027162915854019545, 0.05197050993514985),
    ("Ionosphere", 6, 2): (0.0062764961552687565, 0.011722315525681737, 0.020394203496202707),
    ("Ionosphere", 6, 4): (0.032934650603189806, 0.121620175176392, 0.291021675050068),
}


def authors_grid(gamma_max: float, n_gamma: int = 100) -> np.ndarray:
    """The stored curves' gammas: (gamma_max + 1)^(i / (n_gamma - 1)) - 1, i = 0 .. n_gamma - 1 (checked against the
    files to the last digit for both variants)."""
    return np.exp(np.arange(n_gamma) * math.log(gamma_max + 1.0) / (n_gamma - 1)) - 1.0


def load(base: str) -> tuple[np.ndarray, list[np.ndarray], list[float]]:
    v = VARIANTS[base]
    folder = AUTHORS / v["folder"]
    X = np.loadtxt(folder / "data.txt.gz", ndmin=2)
    W = [np.loadtxt(folder / f"w_{i}.txt.gz") for i in range(1, 11)]
    if v["alt10"]:
        W[9] = np.loadtxt(folder / v["alt10"])
    auc = [float(r.split()[3]) for r in (folder / "solutions_info.txt").read_text().splitlines()[1:]]
    return X, W, auc


def pinned_curve(X: np.ndarray, j: int, w: np.ndarray, m_cl: float, gammas: np.ndarray, negatives: str) -> np.ndarray:
    """p(x_j, gamma) of the pinned classifier with costs C (1/m_cl)^w (Eq. 12), the positive at C, each gamma solved
    to optimality by odeval's ``_klr._pinned_newton`` from its cold start; ``negatives``: "equality" (their
    multipliers sum to A, the dual's constraint) or "reference" (they sum to mean(c_neg) (n - 2) / (n - 1), as
    the reference solver keeps them and odeval's pinned classifier does)."""
    n = X.shape[0]
    train = np.concatenate([[j], np.arange(j), np.arange(j + 1, n)]).astype(np.int64)
    c = C * (1.0 / m_cl) ** w.astype(np.float32).astype(np.float64)  # the reference code reads weights as float
    c = c[train]
    c[0] = C
    A = _klr.pinned_multiplier(c)
    total = A if negatives == "equality" else _klr.pinned_negatives_sum(c)
    D2 = _klr._train_sqdist(X, train)
    Kn, k0 = np.empty((n - 1, n - 1)), np.empty(n - 1)
    M = np.empty((n - 1, n - 1))
    a = np.empty(n)
    out = np.empty(len(gammas))
    for r, g in enumerate(gammas):
        if g == 0.0:
            out[r] = total / c[1:].sum()
            continue
        _klr.pinned_kernel(D2, float(g), Kn, k0)
        b0 = _klr._pinned_diagonal_start(k0, c, A, total, a)
        _, fj, _ = _klr._pinned_newton(Kn, k0, c, a, total, b0, 1e-14, 100, M, np.empty(0))
        out[r] = 1.0 / (1.0 + math.exp(-fj))
    return out


def odeval_indexes(base: str) -> list[float]:
    mcl, cand = VARIANTS[base]["jsonl"]
    for line in (ROOT / "benchmarks" / "ireos_authors.jsonl").read_text().splitlines():
        r = json.loads(line)
        if (r.get("classifier") == "pinned" and r["base"] == base and r["mode"] == "exact" and r["m_cl"] == mcl
                and r["candidates"] == cand):
            return r["index"]
    raise SystemExit(f"no pinned exact m_cl = n row for {base} in ireos_authors.jsonl")


def show_spearman() -> None:
    for base, v in VARIANTS.items():
        _, _, auc = load(base)
        ours = odeval_indexes(base)
        theirs = v["stored"]
        print(f"{base} m_cl = n: Spearman vs ROC AUC: authors' stored {spearmanr(theirs, auc).statistic:.3f}, "
              f"odeval {spearmanr(ours, auc).statistic:.3f}, Table 6 {v['paper']:.3f}")
        rt, ro = rankdata(theirs), rankdata(ours)
        print("| candidate | ROC AUC | stored index | rank | odeval index | rank |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for i in range(10):
            print(f"| {i + 1} | {auc[i]:.3f} | {theirs[i]:.4f} | {rt[i]:.0f} | {ours[i]:.4f} | {ro[i]:.0f} |")


def show_curves() -> None:
    print("| variant | candidate | object | weight | stored p (gamma_1..3) | sum A | reference sum (odeval) |")
    print("| --- | ---: | ---: | ---: | --- | --- | --- |")
    worst = {"equality": 0.0, "reference": 0.0}
    for (base, cand, j), stored in STORED_CURVES.items():
        X, W, _ = load(base)
        g = authors_grid(VARIANTS[base]["gamma_max"])[1:4]
        cols = {}
        for neg in ("equality", "reference"):
            p = pinned_curve(X, j, W[cand - 1], VARIANTS[base]["n"], g, neg)
            worst[neg] = max(worst[neg], float(np.abs(p - stored).max()))
            cols[neg] = " ".join(f"{x:.4f}" for x in p)
        print(f"| {base} | {cand} | {j} | {W[cand - 1][j]:.3f} | {' '.join(f'{x:.4f}' for x in stored)} | "
              f"{cols['equality']} | {cols['reference']} |")
    print(f"largest |difference| from the stored p: sum A {worst['equality']:.4f}, reference sum "
          f"{worst['reference']:.4f}")


def show_index(spec: str) -> None:
    base, cand = spec.split(":")
    cand = int(cand)
    X, W, _ = load(base)
    v = VARIANTS[base]
    w = W[cand - 1]
    grid = authors_grid(v["gamma_max"])
    objs = np.flatnonzero(w > 0)
    for neg in ("equality", "reference"):
        P = np.vstack([pinned_curve(X, int(j), w, v["n"], grid, neg) for j in objs])
        mean_curve = (w[objs] @ P) / w[objs].sum()
        trapezoid = float(np.sum(np.diff(grid) * (mean_curve[1:] + mean_curve[:-1])) / 2.0 / grid[-1])
        print(f"{base} candidate {cand} ({len(objs)} objects with weight > 0), negatives' sum = {neg}: "
              f"trapezoid on the authors' grid {trapezoid:.6f}, plain mean over the grid {mean_curve.mean():.6f}; "
              f"stored {v['stored'][cand - 1]:.6f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--spearman", action="store_true")
    ap.add_argument("--curves", action="store_true")
    ap.add_argument("--index", default=None, help="VARIANT:CANDIDATE, e.g. WBC:10")
    args = ap.parse_args()
    if not AUTHORS.is_dir():
        raise SystemExit(f"{AUTHORS} not found (../shared/datasets/ireos_authors)")
    if args.spearman or not (args.curves or args.index):
        show_spearman()
    if args.curves:
        show_curves()
    if args.index:
        show_index(args.index)


if __name__ == "__main__":
    main()
