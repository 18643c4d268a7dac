"""Exact KLR separability vs the fixed point the reference IREOS code stops at (docs/ireos.md).

The authors' Java code solves the KLR dual (Keerthi et al. 2005) starting with the positive object's multiplier
at its bound C, where the derivative of the entropy term is infinite, and never moves it. Its result is then the
optimum of the dual with alpha_j pinned at C: the negatives satisfy alpha_i = C sigmoid(f_i), sum alpha_i = C,
f = -K_{.,N} alpha_N + C K_{.,j} + b. This script solves that system (scipy root) and prints p(x_j) next to
the exact optimum of :mod:`odeval.labelfree._klr`, on the authors' WBC example.

    .venv/bin/python benchmarks/ireos_pinned.py
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from ireos import wbc_example  # benchmarks/ireos.py
from odeval.labelfree import _klr
from odeval.labelfree.ireos import _sqdist_blocks


def pinned_p(K: np.ndarray, j: int, C: float) -> tuple[float, float]:
    n = K.shape[0]
    neg = np.array([i for i in range(n) if i != j])
    Kn, kj = K[np.ix_(neg, neg)], K[neg, j]

    def fun(z):
        a, b = z[:-1], z[-1]
        f = -Kn @ a + C * kj + b
        s = 1 / (1 + np.exp(-np.clip(f, -700, 700)))
        r = np.append(a - C * s, a.sum() - C)
        ds = s * (1 - s)
        J = np.eye(n)
        J[:-1, :-1] += C * ds[:, None] * Kn
        J[:-1, -1] = -C * ds
        J[-1, :-1] = 1.0
        J[-1, -1] = 0.0
        return r, J

    z0 = np.append(np.full(n - 1, C / (n - 1)), -np.log(n))
    sol = optimize.root(fun, z0, jac=True, method="hybr", options={"xtol": 1e-13})
    a, b = sol.x[:-1], sol.x[-1]
    fj = -(K[j, neg] @ a) + C + b
    resid = float(np.abs(fun(sol.x)[0]).max())
    return float(1 / (1 + np.exp(-np.clip(fj, -700, 700)))), resid


def main() -> None:
    X, sols, _, _ = wbc_example()
    D2 = _sqdist_blocks(X)
    n = len(X)
    C = 100.0
    truth = sols[10]
    objects = [int(np.flatnonzero(truth)[0]), int(np.flatnonzero(truth)[1]), int(np.flatnonzero(~truth)[0]),
               int(np.flatnonzero(~truth)[5])]
    print("| gamma | object | exact p (optimum) | pinned alpha_j = C (reference) | residual of the pinned system |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for gamma in (0.5, 9.36, 50.0, 500.0):
        K = np.exp(-gamma * D2)
        for j in objects:
            c = np.full((1, n), C)
            _, _, p, _ = _klr.fit_shared(D2, np.array([gamma]), np.array([j]), c, np.zeros((1, n)),
                                         np.array([np.nan]), _klr.TOL, _klr.MAXIT)
            kind = "outlier" if truth[j] else "inlier"
            pp, resid = pinned_p(K, j, C)
            print(f"| {gamma:g} | {j} ({kind}) | {p[0]:.4f} | {pp:.4f} | {resid:.1e} |", flush=True)


if __name__ == "__main__":
    main()
