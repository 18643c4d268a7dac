"""Exact kernel logistic regression for IREOS separabilities (Marques et al. 2020, Sect. 3.2-3.3, Eq. 1, 10-12).

One classifier per (object j, gamma): object j labelled +1, every other object of the training set -1, RBF kernel
K(x, y) = exp(-gamma ||x - y||^2) (Eq. 1), per-object margin-violation costs c_i (Eq. 11-12). The problem solved is
the kernel logistic regression primal of Keerthi et al. (2005), the solver the paper cites, with an unregularised
bias b (the representer form of the soft-margin objective of Eq. 10-11 with the logistic penalty):

    J(alpha, b) = 1/2 alpha' K alpha + sum_i c_i log(1 + exp(-y_i f_i)),   f = K alpha + b 1,

and the separability is p(x_j, gamma) = sigmoid(f_j). J is convex and strictly convex in f, so f (and p) is unique.

Method: damped Newton on (alpha, b). With W = diag(c_i s_i (1 - s_i)), s = sigmoid(f), g_i = -c_i y_i sigmoid(-y_i f_i),
the Newton iterate (alpha+, b+) solves the symmetric saddle-point system

    (K + W^-1) alpha+ + 1 b+ = f - W^-1 g,     1' alpha+ = 0,

(one Cholesky factorisation of K + W^-1 and four triangular solves), followed by a backtracking line search on J;
it stops when half the Newton decrement is below ``tol``. Warm start along gamma: alpha_0 = c y sigmoid(-y f_prev)
(the optimality condition alpha = -dL/df at the previous gamma) and b_0 = b_prev.

References
----------
H. O. Marques, R. J. G. B. Campello, J. Sander, A. Zimek. Internal Evaluation of Unsupervised Outlier Detection.
ACM TKDD 14(4), 47, 2020. Sect. 3.2-3.3, Eq. 1, 10-12.
S. S. Keerthi, K. B. Duan, S. K. Shevade, A. N. Poo. A fast dual algorithm for kernel logistic regression.
Machine Learning 61, 2005.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

TOL = 1e-14
MAXIT = 100


@nb.njit(cache=True, nogil=True)
def _log1pexp(z: float) -> float:
    if z > 0.0:
        return z + math.log1p(math.exp(-z))
    return math.log1p(math.exp(z))


@nb.njit(cache=True, nogil=True)
def _sigmoid(z: float) -> float:
    if z >= 0.0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


@nb.njit(cache=True, nogil=True)
def rbf_kernel(X: np.ndarray, gamma: float) -> np.ndarray:
    """K_il = exp(-gamma ||x_i - x_l||^2), squared distances from differences (exact 0 for duplicates)."""
    n, d = X.shape
    K = np.empty((n, n))
    for i in range(n):
        K[i, i] = 1.0
        for ll in range(i):
            s = 0.0
            for a in range(d):
                z = X[i, a] - X[ll, a]
                s += z * z
            v = math.exp(-gamma * s)
            K[i, ll] = v
            K[ll, i] = v
    return K


@nb.njit(cache=True, nogil=True)
def _chol_solve(L: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    n = L.shape[0]
    z = rhs.copy()
    for i in range(n):
        s = z[i]
        for k in range(i):
            s -= L[i, k] * z[k]
        z[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = z[i]
        for k in range(i + 1, n):
            s -= L[k, i] * z[k]
        z[i] = s / L[i, i]
    return z


@nb.njit(cache=True, nogil=True)
def _obj(K: np.ndarray, alpha: np.ndarray, b: float, y: np.ndarray, c: np.ndarray, f: np.ndarray) -> float:
    n = alpha.shape[0]
    Ka = K @ alpha
    val = 0.5 * (alpha @ Ka)
    for i in range(n):
        f[i] = Ka[i] + b
        val += c[i] * _log1pexp(-y[i] * f[i])
    return val


@nb.njit(cache=True, nogil=True)
def newton_klr(K: np.ndarray, y: np.ndarray, c: np.ndarray, alpha: np.ndarray, b: float, tol: float, maxit: int):
    """Damped Newton from (alpha, b); returns (f, alpha, b, factorisations) at the optimum.

    The Cholesky factor of K + W^-1 is reused (chord steps: the exact gradient with the Hessian of an earlier
    iterate, still a descent direction) while the Newton decrement falls by at least 10x per step, and
    refreshed otherwise; the line search keeps every step a descent step, the stop rule is the exact decrement.
    """
    n = y.shape[0]
    f = np.empty(n)
    fn = np.empty(n)
    obj = _obj(K, alpha, b, y, c, f)
    g = np.empty(n)
    D = np.empty(n)
    M = np.empty((n, n))
    L = np.empty((n, n))
    v = np.empty(n)
    vs = 1.0
    ones = np.ones(n)
    refresh = True
    dec_prev = np.inf
    nfact = 0
    for _ in range(maxit):
        gsum = 0.0
        for i in range(n):
            s = _sigmoid(-y[i] * f[i])
            g[i] = -c[i] * y[i] * s
            gsum += g[i]
        if refresh:
            for i in range(n):
                s = _sigmoid(-y[i] * f[i])
                w = c[i] * s * (1.0 - s)
                wmin = 1e-12 * c[i]
                D[i] = 1.0 / (w if w > wmin else wmin)
            for i in range(n):
                for k in range(n):
                    M[i, k] = K[i, k]
                M[i, i] += D[i]
            L = np.linalg.cholesky(M)
            v = _chol_solve(L, ones)
            vs = v.sum()
            nfact += 1
        ag = alpha + g
        u = _chol_solve(L, -D * ag)
        db = (u.sum() + alpha.sum()) / vs
        da = u - db * v
        dec = -(da @ (K @ ag)) - db * gsum
        if dec < 0.0:
            dec = 0.0
        t = 1.0
        accepted = False
        for _ls in range(60):
            an = alpha + t * da
            bb = b + t * db
            new = _obj(K, an, bb, y, c, fn)
            if new <= obj - 0.25 * t * dec:
                accepted = True
                break
            t *= 0.5
        if accepted:
            alpha = an
            b = bb
            obj = new
            f[:] = fn
        if 0.5 * dec <= tol * (1.0 + abs(obj)):
            break
        if not accepted:
            if refresh:
                break
            refresh = True
            continue
        refresh = (dec > 0.1 * dec_prev) or t < 1.0
        dec_prev = dec
    return f, alpha, b, nfact


@nb.njit(cache=True, nogil=True)
def _start(c: np.ndarray, y: np.ndarray, f0: np.ndarray, b0: float):
    n = y.shape[0]
    alpha = np.empty(n)
    if math.isnan(b0):  # cold start: alpha = 0, b = log(cost of the positive / cost of the negatives)
        cp = 0.0
        cn = 0.0
        for i in range(n):
            alpha[i] = 0.0
            if y[i] > 0:
                cp += c[i]
            else:
                cn += c[i]
        return alpha, math.log(cp / cn)
    for i in range(n):
        alpha[i] = c[i] * y[i] * _sigmoid(-y[i] * f0[i])
    return alpha, b0


@nb.njit(cache=True, nogil=True)
def fit_shared(D2: np.ndarray, gammas: np.ndarray, pos: np.ndarray, costs: np.ndarray, F0: np.ndarray,
               b0: np.ndarray, tol: float, maxit: int):
    """Problems on the full training set (the exact index); D2 = squared distances (n x n).

    Problem t: positive object pos[t], kernel width gammas[t], cost vector costs[t] (n,) (costs[t, pos[t]] = C),
    warm start F0[t], b0[t] (decision values and bias at a nearby gamma; b0 = NaN for a cold start).
    Returns F (B, n) decision values, b (B,), p (B,) = sigmoid(F[t, pos[t]]), Newton iterations (B,).
    """
    B = pos.shape[0]
    n = D2.shape[0]
    F = np.empty((B, n))
    bo = np.empty(B)
    p = np.empty(B)
    its = np.empty(B, dtype=np.int64)
    K = np.empty((n, n))
    for t in range(B):
        g = gammas[t]
        for i in range(n):
            for k in range(n):
                K[i, k] = math.exp(-g * D2[i, k])
        y = -np.ones(n)
        y[pos[t]] = 1.0
        a0, bs = _start(costs[t], y, F0[t], b0[t])
        f, _, b, it = newton_klr(K, y, costs[t], a0, bs, tol, maxit)
        F[t] = f
        bo[t] = b
        p[t] = _sigmoid(f[pos[t]])
        its[t] = it
    return F, bo, p, its


@nb.njit(cache=True, nogil=True)
def fit_subsets(X: np.ndarray, gammas: np.ndarray, subsets: np.ndarray, costs: np.ndarray, F0: np.ndarray,
                b0: np.ndarray, tol: float, maxit: int):
    """One problem per row of ``subsets`` (B, n): training set X[subsets[t]], positive = subsets[t, 0]
    (the object itself, then its k nearest neighbours; Sect. 3.5.3), kernel width gammas[t]; costs[t] aligned
    with subsets[t]. Returns as :func:`fit_shared` (p = sigmoid(F[t, 0]))."""
    B, n = subsets.shape
    d = X.shape[1]
    F = np.empty((B, n))
    bo = np.empty(B)
    p = np.empty(B)
    its = np.empty(B, dtype=np.int64)
    Xs = np.empty((n, d))
    y = -np.ones(n)
    y[0] = 1.0
    for t in range(B):
        for i in range(n):
            for a in range(d):
                Xs[i, a] = X[subsets[t, i], a]
        K = rbf_kernel(Xs, gammas[t])
        a0, bs = _start(costs[t], y, F0[t], b0[t])
        f, _, b, it = newton_klr(K, y, costs[t], a0, bs, tol, maxit)
        F[t] = f
        bo[t] = b
        p[t] = _sigmoid(f[0])
        its[t] = it
    return F, bo, p, its


def klr_objective(K: np.ndarray, y: np.ndarray, c: np.ndarray, alpha: np.ndarray, b: float) -> float:
    """The full primal objective J(alpha, b) (for tests and the scipy reference)."""
    f = K @ alpha + b
    return float(0.5 * alpha @ K @ alpha + np.sum(c * np.logaddexp(0.0, -y * f)))
