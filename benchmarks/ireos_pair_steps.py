"""Pair steps (SMO) against odeval's Newton solver for the pinned IREOS classifier (docs/ireos.md, *Not done*).

The exact index above N = 1 013 costs N^3 per classifier with the Newton solver of
:mod:`odeval.labelfree._klr` (one Cholesky factorisation of an (N-1) x (N-1) matrix per refresh). The reference
code's own method, pair steps on the dual (Keerthi et al. 2005), costs O(N d) per step; this script asks whether
it is a way around the N^3. It solves the same pinned dual (positive multiplier fixed at A, negatives summing to S,
entropy terms; see ``_klr``'s section "the reference code's classifier") by pair steps with a second-order choice
of the pair (the steepest violator, then the partner with the largest predicted decrease; each pair step solved
exactly by a safeguarded 1-D Newton) from the reference code's start (every negative at S / (n - 1)) at the
largest gamma, then from the solution of the gamma above (as the Newton solver), and prints per classifier the
steps, the time of each solver and |p_pairs - p_newton|, stopping the pair steps at a spread max g - min g of
the dual gradient of ``--eps`` (the reference code stops at 0.019).

    PYTHONPATH=src .venv/bin/python benchmarks/ireos_pair_steps.py [--eps 0.019] [--objects 3]

Measured 2026-11-28 (Shuttle_withoutdupl_norm_v01 of ../shared/datasets/ireos_authors, N = 1 013, m_cl = 1,
gamma_max = 3 450, the 2-core machine): docs/ireos.md, *Not done*.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numba as nb
import numpy as np

from odeval.labelfree import _klr

SHUTTLE = (Path(__file__).resolve().parents[2] / "shared" / "datasets" / "ireos_authors"
           / "Shuttle_withoutdupl_norm_v01" / "data.txt.gz")


@nb.njit(cache=True, nogil=True)
def _logit(a: float, c: float) -> float:
    return math.log(a) - math.log(c - a)


@nb.njit(cache=True, nogil=True)
def pair_steps(D2: np.ndarray, c: np.ndarray, gamma: float, a: np.ndarray, eps: float, max_steps: int):
    """The pinned dual by pair steps from a feasible ``a`` (a[0] = A, sum a[1:] = S); a holds the result.
    Returns (f_j, steps). Kernel rows are computed from D2 when needed (O(N) each)."""
    n = c.shape[0]
    A = a[0]
    g = np.zeros(n)  # g_i = (K_nn a)_i - A K_i0 + logit(a_i / c_i), i >= 1; equal (= b) at the optimum
    for k in range(1, n):
        for i in range(1, n):
            g[i] += math.exp(-gamma * D2[k, i]) * a[k]
    for i in range(1, n):
        g[i] += -A * math.exp(-gamma * D2[i, 0]) + _logit(a[i], c[i])
    ku = np.empty(n)
    kl = np.empty(n)
    steps = 0
    while steps < max_steps:
        u, lo_i = 1, 1
        for i in range(2, n):
            if g[i] > g[u]:
                u = i
            if g[i] < g[lo_i]:
                lo_i = i
        if g[u] - g[lo_i] <= eps:
            break
        for i in range(n):
            ku[i] = math.exp(-gamma * D2[u, i])
        hu = c[u] / (a[u] * (c[u] - a[u]))
        best, l = 0.0, lo_i
        for i in range(1, n):
            dg = g[u] - g[i]
            if dg > 0.0:
                curv = max(hu + 1.0 + c[i] / (a[i] * (c[i] - a[i])) - 2.0 * ku[i], 1e-12)
                if dg * dg / curv > best:
                    best, l = dg * dg / curv, i
        for i in range(n):
            kl[i] = math.exp(-gamma * D2[l, i])
        # move t from u to l: phi'(t) = ql - qu + 2 t (1 - K_ul) + logit(a_l + t) - logit(a_u - t), increasing
        kul = ku[l]
        ql = g[l] - _logit(a[l], c[l])
        qu = g[u] - _logit(a[u], c[u])
        lo, hi, t = 0.0, min(a[u], c[l] - a[l]), 0.0
        for _ in range(100):
            d = ql - qu + 2.0 * t * (1.0 - kul) + _logit(a[l] + t, c[l]) - _logit(a[u] - t, c[u])
            if d > 0.0:
                hi = t
            else:
                lo = t
            dd = (2.0 * (1.0 - kul) + c[l] / ((a[l] + t) * (c[l] - a[l] - t))
                  + c[u] / ((a[u] - t) * (c[u] - a[u] + t)))
            tn = t - d / dd
            if not (lo < tn < hi):
                tn = 0.5 * (lo + hi)
            if abs(tn - t) <= 1e-15 * (abs(t) + 1e-300):
                t = tn
                break
            t = tn
        old_l, old_u = _logit(a[l], c[l]), _logit(a[u], c[u])
        a[l] += t
        a[u] -= t
        for i in range(1, n):
            g[i] += t * (kl[i] - ku[i])
        g[l] += _logit(a[l], c[l]) - old_l
        g[u] += _logit(a[u], c[u]) - old_u
        steps += 1
    gmin, gmax = np.inf, -np.inf
    for i in range(1, n):
        gmin = min(gmin, g[i])
        gmax = max(gmax, g[i])
    fj = A + 0.5 * (gmin + gmax)
    for k in range(1, n):
        fj -= math.exp(-gamma * D2[0, k]) * a[k]
    return fj, steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, default=0.019, help="stop the pair steps at this gradient spread")
    ap.add_argument("--objects", type=int, default=3, help="objects drawn (seed 0)")
    ap.add_argument("--gamma-max", type=float, default=3450.1144668236243, help="the pinned gamma_max of Shuttle")
    args = ap.parse_args()
    X = np.loadtxt(SHUTTLE, ndmin=2)
    N = X.shape[0]
    C = 100.0
    c = np.full(N, C)
    A, S = _klr.pinned_multiplier(c), _klr.pinned_negatives_sum(c)
    print(f"N = {N}, eps = {args.eps}; per classifier: gamma, p (Newton), factorisations, ms | steps, ms, |dp|")
    ratios = []
    for j in np.random.default_rng(0).choice(N, args.objects, replace=False):
        train = np.concatenate([[j], np.arange(j), np.arange(j + 1, N)]).astype(np.int64)
        D2 = _klr._train_sqdist(X, train)
        K, M, out = np.empty((N - 1, N - 1)), np.empty((N - 1, N - 1)), np.empty(N)
        newton_prev = pairs_prev = None
        b = math.nan
        for frac in (1.0, 0.75, 0.5, 0.25, 1 / 16, 1 / 256):  # from gamma_max down, warm starts, as a curve does
            gamma = args.gamma_max * frac
            t0 = time.perf_counter()
            b, p, fact = _klr._pinned_node(D2, K, M, c, gamma, out if newton_prev is None else newton_prev, b,
                                           np.empty(0), out, 1e-14, 100)
            t_newton = time.perf_counter() - t0
            newton_prev = out.copy()
            if pairs_prev is None:  # the reference code's start: every negative at S / (n - 1)
                a = np.full(N, S / (N - 1))
                a[0] = A
            else:
                a = pairs_prev.copy()
            t0 = time.perf_counter()
            fj, steps = pair_steps(D2, c, gamma, a, args.eps, 10_000_000)
            t_pairs = time.perf_counter() - t0
            pairs_prev = a.copy()
            ratios.append(t_pairs / t_newton)
            print(f"j={j} gamma={gamma:9.4g} p={p:.8f} {fact:2d} {1e3 * t_newton:6.1f} ms | {steps:8d} steps "
                  f"{1e3 * t_pairs:8.1f} ms |dp|={abs(1 / (1 + math.exp(-fj)) - p):.1e}", flush=True)
    print(f"pair steps / Newton time: median {np.median(ratios):.1f}, min {min(ratios):.2f}, max {max(ratios):.0f} "
          "(the first call of each solver includes numba's compilation)")


if __name__ == "__main__":
    main()
