"""Probe: the exact IREOS classifier (pinned, m_cl = 1) with conjugate gradients instead of the Cholesky
factorisation, side by side with odeval's solver (docs/ireos.md, *Not done*: the exact cells above N = 1 013).

Per Newton step the dense solver factorises K_nn + W^-1 (N^3 / 3 flops); this probe solves the same two systems
by preconditioned conjugate gradients (products K_nn x, N^2 each), preconditioned by D + L L' (D = W^-1, L L' a
Nystrom approximation of K_nn from ``--rank`` random columns, inverted by the Woodbury identity), with the same
Newton iteration, line search, stop rule (1e-14 relative) and start (odeval's cold start, then
``_subspace_start``). Along a curve's first four gammas (gamma_max, 3/4, 1/2, 1/4; warm starts) it prints per
classifier the dense factorisations and seconds, the PCG Newton steps, products and seconds, and |dp|.
``--curves``: instead, the cost of the exact index as odeval computes it -- whole adaptive curves (tol 0.001) of
the given objects on all N objects (``_klr.curves_batch``, one thread): classifiers, factorisations and CPU
seconds per classifier, the numbers behind the exact-cell estimates of docs/ireos.md.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python benchmarks/ireos_exact_pcg.py \\
        Waveform_withoutdupl_norm_v05 --gamma-max 0.8734 --objects 5,100 --rank 300

Data: ``../shared/datasets/ireos_authors/<variant>/data.txt.gz``; gamma_max from benchmarks/ireos_authors.jsonl
(the pinned m_cl = 1 row of the variant).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from odeval.labelfree import _klr
from odeval.labelfree.ireos import _sqdist_blocks

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "ireos_authors"


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _pcg(matvec, rhs: np.ndarray, prec, tol: float, maxit: int = 5000) -> tuple[np.ndarray, int]:
    x = np.zeros_like(rhs)
    r = rhs.copy()
    z = prec(r)
    p = z.copy()
    rz = r @ z
    n0 = np.linalg.norm(rhs)
    for it in range(maxit):
        if np.linalg.norm(r) <= tol * n0:
            return x, it
        Ap = matvec(p)
        step = rz / (p @ Ap)
        x += step * p
        r -= step * Ap
        z = prec(r)
        rz_new = r @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x, maxit


def newton_pcg(Kn, L, c, alpha, b, o, beta, tol=1e-14, cg_tol=1e-10):
    """_klr._newton for y = -1 (the pinned negatives) with both systems solved by PCG; returns
    (alpha, b, products, steps)."""
    m = Kn.shape[0]
    f = o + Kn @ alpha + b
    obj = 0.5 * alpha @ (f - b - o) + np.sum(c * np.logaddexp(0, f)) + beta * b
    products = steps = 0
    for _ in range(100):
        s = _sigmoid(f)
        g = c * s
        D = 1.0 / np.maximum(c * s * (1 - s), 1e-12 * c)
        LD = L / D[:, None]
        factor = cho_factor(np.eye(L.shape[1]) + L.T @ LD)

        def prec(r, D=D, LD=LD, factor=factor):
            return r / D - LD @ cho_solve(factor, LD.T @ r)

        def matvec(x, D=D):
            return Kn @ x + D * x

        v, i1 = _pcg(matvec, np.ones(m), prec, cg_tol)
        ag = alpha + g
        u, i2 = _pcg(matvec, -D * ag, prec, cg_tol)
        db = (u.sum() + alpha.sum() - beta) / v.sum()
        da = u - db * v
        Kd = Kn @ da
        products += i1 + i2 + 1
        dec = max(0.0, -(Kd @ ag) - db * (g.sum() + beta))
        t = 1.0
        for _ls in range(60):
            bb, an, fn = b + t * db, alpha + t * da, f + t * (Kd + db)
            new = 0.5 * an @ (fn - bb - o) + np.sum(c * np.logaddexp(0, fn)) + beta * bb
            if new <= obj - 0.25 * t * dec:
                break
            t *= 0.5
        steps += 1
        alpha, b, obj, f = an, bb, new, fn
        if 0.5 * dec <= tol * (1 + abs(obj)):
            break
    return alpha, b, products, steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("variant")
    ap.add_argument("--gamma-max", type=float, required=True)
    ap.add_argument("--objects", default="5,100")
    ap.add_argument("--rank", type=int, default=300)
    ap.add_argument("--curves", action="store_true", help="whole exact curves with odeval's solver only")
    args = ap.parse_args()
    X = np.loadtxt(SHARED / args.variant / "data.txt.gz", ndmin=2)
    N = X.shape[0]
    if args.curves:
        objects = [int(x) for x in args.objects.split(",")]
        train = np.array([np.r_[j, np.delete(np.arange(N), j)] for j in objects], dtype=np.int64)
        costs = np.full(train.shape, 100.0)
        t = time.process_time()
        _, fits, facts = _klr.curves_batch(X, train, costs, 0, np.zeros(1), args.gamma_max, 1e-3, 8, 1, True)
        cpu = time.process_time() - t
        print(f"{args.variant} N={N} exact pinned m_cl=1, {len(objects)} curves: {fits} classifiers, "
              f"{facts / fits:.2f} factorisations and {cpu / fits:.3f} s CPU per classifier")
        return
    m = N - 1
    D2 = _sqdist_blocks(X)
    c = np.full(N, 100.0)
    A, S = _klr.pinned_multiplier(c), _klr.pinned_negatives_sum(c)
    total = np.zeros(4)
    for j in (int(x) for x in args.objects.split(",")):
        order = np.r_[j, np.delete(np.arange(N), j)]
        D2j = D2[np.ix_(order, order)]
        Kn, k0, M = np.empty((m, m)), np.empty(m), np.empty((m, m))
        a_dense = None
        for frac in (1.0, 0.75, 0.5, 0.25):
            _klr.pinned_kernel(D2j, args.gamma_max * frac, Kn, k0)
            t = time.perf_counter()
            if a_dense is None:
                a_dense = np.empty(N)
                b_dense = b_pcg = _klr._pinned_diagonal_start(k0, c, A, S, a_dense)
                alpha_pcg = -a_dense[1:].copy()
            b_dense, fj, facts = _klr._pinned_newton(Kn, k0, c, a_dense, S, b_dense, _klr.TOL, _klr.MAXIT, M,
                                                     np.empty(0))
            t_dense = time.perf_counter() - t
            t = time.perf_counter()
            land = np.random.default_rng(0).choice(m, min(args.rank, m), replace=False)
            Cm = Kn[:, land]
            ew, ev = np.linalg.eigh(Cm[land])
            keep = ew > 1e-10 * ew.max()
            L = Cm @ (ev[:, keep] / np.sqrt(ew[keep]))
            b_pcg = _klr._subspace_start(Kn, -np.ones(m), c[1:], alpha_pcg, np.empty(0), b_pcg, A * k0, -S)
            alpha_pcg, b_pcg, products, steps = newton_pcg(Kn, L, c[1:], alpha_pcg, b_pcg, A * k0, -S)
            t_pcg = time.perf_counter() - t
            p_dense = 1 / (1 + math.exp(-fj))
            p_pcg = 1 / (1 + math.exp(-(A + b_pcg + k0 @ alpha_pcg)))
            total += [t_dense, t_pcg, facts, products]
            print(f"object {j} gamma_max*{frac}: dense {facts} factorisations {t_dense:.2f} s | PCG {steps} steps "
                  f"{products} products (rank {L.shape[1]}) {t_pcg:.2f} s | p {p_dense:.8f}, |dp| "
                  f"{abs(p_dense - p_pcg):.1e}", flush=True)
    print(f"total: dense {total[0]:.1f} s ({total[2]:.0f} factorisations), PCG {total[1]:.1f} s "
          f"({total[3]:.0f} products): {total[0] / total[1]:.1f}x")


if __name__ == "__main__":
    main()
