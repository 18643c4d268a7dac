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
(the optimality condition alpha = -dL/df at the previous gamma) and b_0 = b_prev, moved to the best point of the
span of two solved gammas' solutions (:func:`_subspace_start`).

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
from numba.np import linalg as _numba_linalg

TOL = 1e-14
MAXIT = 100
REFRESH = 0.1


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


# LAPACK's Cholesky (dpotrf), called in place through numba's own LAPACK binding (the one behind
# np.linalg.cholesky in numba, which links SciPy's LAPACK), without its copy and allocation per call.
# numba's private API: pyproject.toml bounds numba to the versions that have it, and says so here if it is gone.
try:
    _xxpotrf = _numba_linalg._LAPACK().numba_xxpotrf(nb.types.float64)
    _KIND = ord(_numba_linalg.get_blas_kind(nb.types.float64, "cholesky"))
except AttributeError as exc:
    raise ImportError(f"numba {nb.__version__} lacks the private LAPACK binding IREOS uses ({exc}); install the "
                      "numba versions odeval's pyproject.toml allows") from None


@nb.njit(cache=True, nogil=True)
def _cholesky_inplace(M: np.ndarray) -> bool:
    """M (row-major, symmetric positive definite) := L in its lower triangle and L' in its upper triangle,
    M = L L'. LAPACK sees the row-major buffer as its transpose (= M), so uplo 'U' writes L' in column-major order,
    i.e. L in the row-major lower triangle (as numba's np.linalg.cholesky does); the upper triangle is then
    filled with L' so that both triangular solves run along contiguous rows."""
    n = M.shape[0]
    if _xxpotrf(_KIND, 85, n, M.ctypes, n) != 0:  # 85 = ord('U')
        return False
    for i in range(n):
        for k in range(i):
            M[k, i] = M[i, k]
    return True


@nb.njit(cache=True, nogil=True)
def _chol_solve(L: np.ndarray, rhs: np.ndarray, z: np.ndarray) -> None:
    """z = (L L')^-1 rhs for L from :func:`_cholesky_inplace` (L' in the upper triangle): both substitutions as
    row updates (axpy along contiguous rows, vectorisable, the same bits at any vector width)."""
    n = L.shape[0]
    for i in range(n):
        z[i] = rhs[i]
    for k in range(n):  # L w = rhs, column k of L = row k of L' (upper triangle)
        z[k] /= L[k, k]
        zk = z[k]
        for i in range(k + 1, n):
            z[i] -= L[k, i] * zk
    for i in range(n - 1, -1, -1):  # L' z = w, column i of L' = row i of L (lower triangle)
        z[i] /= L[i, i]
        zi = z[i]
        for k in range(i):
            z[k] -= L[i, k] * zi


@nb.njit(cache=True, nogil=True)
def _matvec(K: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """out = K x for symmetric K, as a sum of rows (axpy; no BLAS call: no BLAS threads, the same bits in every
    worker and at any vector width)."""
    n = x.shape[0]
    for i in range(n):
        out[i] = 0.0
    for k in range(n):
        xk = x[k]
        for i in range(n):
            out[i] += K[k, i] * xk


@nb.njit(cache=True, nogil=True)
def _loss(f: np.ndarray, y: np.ndarray, c: np.ndarray) -> float:
    val = 0.0
    for i in range(f.shape[0]):
        val += c[i] * _log1pexp(-y[i] * f[i])
    return val


@nb.njit(cache=True, nogil=True)
def newton_klr(K: np.ndarray, y: np.ndarray, c: np.ndarray, alpha: np.ndarray, b: float, tol: float, maxit: int):
    """:func:`_newton` with its own work matrix (no offset, sum of alpha 0: the KLR problem above)."""
    return _newton(K, y, c, alpha, b, tol, maxit, np.empty(K.shape), np.zeros(y.shape[0]), 0.0)


@nb.njit(cache=True, nogil=True)
def _newton(K: np.ndarray, y: np.ndarray, c: np.ndarray, alpha: np.ndarray, b: float, tol: float, maxit: int,
            M: np.ndarray, o: np.ndarray, beta: float):
    """Damped Newton from (alpha, b); returns (f, alpha, b, factorisations) at the optimum of

        J(alpha, b) = 1/2 alpha' K alpha + sum_i c_i log(1 + exp(-y_i f_i)) + beta b,   f = o + K alpha + b 1,

    whose optimum has sum_i alpha_i = beta: the KLR problem above for o = 0, beta = 0, and the reference code's
    pinned classifier over the negatives for o = A K_.j, beta = -S (see :func:`_pinned_newton`). With them the
    Newton iterate solves (K + W^-1) alpha+ + 1 b+ = f - o - W^-1 g, 1' alpha+ = beta.

    The Cholesky factor of K + W^-1 is reused (chord steps: the exact gradient with the Hessian of an earlier
    iterate, still a descent direction) while the Newton decrement falls by at least 10x per step, and
    refreshed otherwise; the line search keeps every step a descent step, the stop rule is the exact decrement.
    One product K d per Newton step: the line search moves f along K d + d_b (f is linear in (alpha, b)), and
    alpha' K alpha = alpha' (f - b - o). (o = 0, beta = 0 add exact zeros: the same bits as without them.)
    """
    n = y.shape[0]
    f = np.empty(n)
    _matvec(K, alpha, f)
    for i in range(n):
        f[i] += b
        f[i] += o[i]
    aKa = 0.0
    for i in range(n):
        aKa += alpha[i] * ((f[i] - b) - o[i])
    obj = 0.5 * aKa + _loss(f, y, c) + beta * b
    fn = np.empty(n)
    an = np.empty(n)
    g = np.empty(n)
    D = np.empty(n)
    v = np.empty(n)
    u = np.empty(n)
    rhs = np.empty(n)
    Kd = np.empty(n)
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
            for i in range(n):  # the lower triangle is what LAPACK reads (see _cholesky_inplace)
                for k in range(i):
                    M[i, k] = K[i, k]
                M[i, i] = K[i, i] + D[i]
            if not _cholesky_inplace(M):  # not positive definite: cannot happen for D > 0
                break
            _chol_solve(M, ones, v)
            vs = v.sum()
            nfact += 1
        ag = alpha + g
        for i in range(n):
            rhs[i] = -D[i] * ag[i]
        _chol_solve(M, rhs, u)
        db = (u.sum() + alpha.sum() - beta) / vs
        da = u - db * v
        _matvec(K, da, Kd)
        dec = 0.0
        for i in range(n):
            dec -= Kd[i] * ag[i]
        dec -= db * (gsum + beta)
        if dec < 0.0:
            dec = 0.0
        t = 1.0
        accepted = False
        new = obj
        bb = b
        for _ls in range(60):
            bb = b + t * db
            aKa = 0.0
            for i in range(n):
                an[i] = alpha[i] + t * da[i]
                fn[i] = f[i] + t * (Kd[i] + db)
                aKa += an[i] * ((fn[i] - bb) - o[i])
            new = 0.5 * aKa + _loss(fn, y, c) + beta * bb
            if new <= obj - 0.25 * t * dec:
                accepted = True
                break
            t *= 0.5
        if accepted:
            alpha[:] = an
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
        refresh = (dec > REFRESH * dec_prev) or t < 1.0
        dec_prev = dec
    return f, alpha, b, nfact


@nb.njit(cache=True, nogil=True)
def _start_objective(theta: np.ndarray, b: float, Q: np.ndarray, U: np.ndarray, k: int, y: np.ndarray,
                     c: np.ndarray, o: np.ndarray, beta: float) -> float:
    """J(theta_1 alpha_1 + ... + theta_k alpha_k, b) of :func:`_newton` from U = K alpha_i and Q = alpha_i' U."""
    val = beta * b
    for r in range(k):
        for q in range(k):
            val += 0.5 * theta[r] * Q[r, q] * theta[q]
    for i in range(y.shape[0]):
        f = o[i] + b
        for r in range(k):
            f += theta[r] * U[r, i]
        val += c[i] * _log1pexp(-y[i] * f)
    return val


@nb.njit(cache=True, nogil=True)
def _subspace_start(K: np.ndarray, y: np.ndarray, c: np.ndarray, alpha: np.ndarray, alpha2: np.ndarray, b: float,
                    o: np.ndarray, beta: float) -> float:
    """alpha := theta_1 alpha + theta_2 alpha2 and returns b, (theta, b) minimising the objective of
    :func:`_newton` over the span of the warm starts: J(theta_1 alpha + theta_2 alpha2, b) with
    f = o + K (theta_1 alpha + theta_2 alpha2) + b 1, convex in three variables (two in theta_1, b when alpha2
    is empty), by damped Newton steps from theta = (1, 0): one product K alpha_i per direction, then O(n) a step.

    alpha is the solution of a neighbouring gamma (K = I's for a cold start), alpha2 that of the solved gamma on
    the other side (an interpolation) or the one before it (an extrapolation), or empty. A start from another
    kernel pulls too hard where the new kernel has more mass: decision values saturate, their curvatures vanish
    and the first full Newton steps are cut to nothing. The best point of the span starts each classifier near
    its optimum and saves most of the factorisations beyond the first (docs/ireos.md, *Speed*)."""
    n = y.shape[0]
    k = 2 if alpha2.shape[0] == n else 1
    U = np.empty((k, n))
    _matvec(K, alpha, U[0])
    if k == 2:
        _matvec(K, alpha2, U[1])
    theta, b = _span_start(U, alpha, alpha2, b, y, c, o, beta)
    for i in range(n):
        alpha[i] = theta[0] * alpha[i] + (theta[1] * alpha2[i] if k == 2 else 0.0)
    return b


@nb.njit(cache=True, nogil=True)
def _span_start(U: np.ndarray, alpha: np.ndarray, alpha2: np.ndarray, b: float, y: np.ndarray, c: np.ndarray,
                o: np.ndarray, beta: float):
    """The minimisation of :func:`_subspace_start` from the products U = [K alpha; K alpha2] (k x n, k = 1 when
    alpha2 is empty): returns (theta, b); theta = (1, 0) when alpha = 0 or no step descends."""
    n = y.shape[0]
    k = U.shape[0]
    Q = np.empty((k, k))
    for r in range(k):
        for q in range(k):
            val = 0.0
            for i in range(n):
                val += (alpha[i] if r == 0 else alpha2[i]) * U[q, i]
            Q[r, q] = val
    Q[0, k - 1] = Q[k - 1, 0] = 0.5 * (Q[0, k - 1] + Q[k - 1, 0])  # symmetric to the last bit
    theta = np.zeros(2)
    theta[0] = 1.0
    if not Q[0, 0] > 0.0:  # alpha = 0: nothing to move
        return theta, b
    nv = k + 1
    trial = np.empty(k)
    G = np.empty(nv)
    H = np.empty((nv, nv))
    d = np.empty(nv)
    step = np.empty(nv)
    obj = _start_objective(theta, b, Q, U, k, y, c, o, beta)
    for _ in range(50):
        for r in range(nv):
            G[r] = 0.0
            for q in range(nv):
                H[r, q] = Q[r, q] if (r < k and q < k) else 0.0
        for r in range(k):
            for q in range(k):
                G[r] += Q[r, q] * theta[q]
        G[k] = beta
        for i in range(n):
            f = o[i] + b
            for r in range(k):
                f += theta[r] * U[r, i]
            s = _sigmoid(-y[i] * f)
            gi = -c[i] * y[i] * s
            wi = c[i] * s * (1.0 - s)
            for r in range(nv):
                ur = U[r, i] if r < k else 1.0
                G[r] += gi * ur
                for q in range(r + 1):
                    H[r, q] += wi * ur * (U[q, i] if q < k else 1.0)
        # Newton step from the (at most 3 x 3) Hessian by Cholesky, Jacobi-scaled; a tiny ridge keeps two
        # parallel warm starts (one direction in effect) solvable
        ok = True
        for r in range(nv):
            if not H[r, r] > 0.0:
                ok = False
        if not ok:
            break
        for r in range(nv):
            d[r] = math.sqrt(H[r, r])
        for r in range(nv):
            for q in range(r + 1):
                H[r, q] = 1.0 + 1e-10 if r == q else H[r, q] / (d[r] * d[q])
        for r in range(nv):  # L in the lower triangle
            for q in range(r + 1):
                val = H[r, q]
                for t in range(q):
                    val -= H[r, t] * H[q, t]
                if q < r:
                    H[r, q] = val / H[q, q]
                elif val > 0.0:
                    H[r, r] = math.sqrt(val)
                else:
                    ok = False
        if not ok:
            break
        for r in range(nv):
            val = -G[r] / d[r]
            for t in range(r):
                val -= H[r, t] * step[t]
            step[r] = val / H[r, r]
        for r in range(nv - 1, -1, -1):
            val = step[r]
            for t in range(r + 1, nv):
                val -= H[t, r] * step[t]
            step[r] = val / H[r, r]
        dec = 0.0
        for r in range(nv):
            step[r] /= d[r]
            dec -= G[r] * step[r]
        if not dec > 1e-12 * (1.0 + abs(obj)):
            break
        t = 1.0
        new = obj
        accepted = False
        for _ls in range(60):
            for r in range(k):
                trial[r] = theta[r] + t * step[r]
            new = _start_objective(trial, b + t * step[k], Q, U, k, y, c, o, beta)
            if new <= obj - 0.25 * t * dec:
                accepted = True
                break
            t *= 0.5
        if not accepted:
            break
        theta[:k] = trial
        b += t * step[k]
        obj = new
    return theta, b


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
def _t_of_b(ci: float, yb: float, t: float) -> float:
    """Root t in (0, c) of t = c sigmoid(-(t + y b)) (one object of the K = I problem), safeguarded Newton."""
    lo = 0.0
    hi = ci
    for _ in range(60):
        s = _sigmoid(-(t + yb))
        phi = t - ci * s
        if phi > 0.0:
            hi = t
        else:
            lo = t
        step = phi / (1.0 + ci * s * (1.0 - s))
        tn = t - step
        if not (lo < tn < hi):
            tn = 0.5 * (lo + hi)
        if abs(tn - t) <= 1e-12 * (1.0 + t):
            return tn
        t = tn
    return t


@nb.njit(cache=True, nogil=True)
def _identity_start(c: np.ndarray, y: np.ndarray):
    """The optimum for K = I (the limit gamma -> infinity): the problem decouples into f_i = alpha_i + b with
    alpha_i = c_i y_i sigmoid(-y_i f_i) and sum_i alpha_i = 0, solved by safeguarded Newton on b (inner roots per
    object). A much better start than alpha = 0 when no solved gamma is at hand and gamma is not small."""
    n = y.shape[0]
    t = np.empty(n)
    for i in range(n):
        t[i] = 0.5 * c[i]
    blo = -60.0
    bhi = 60.0
    b = 0.0
    for _ in range(100):
        g = 0.0
        dg = 0.0
        for i in range(n):
            t[i] = _t_of_b(c[i], y[i] * b, t[i])
            s = _sigmoid(-(t[i] + y[i] * b))
            w = c[i] * s * (1.0 - s)
            g += y[i] * t[i]
            dg -= w / (1.0 + w)
        if g > 0.0:  # sum y t decreases in b
            blo = b
        else:
            bhi = b
        bn = b - g / dg if dg < 0.0 else 0.5 * (blo + bhi)
        if not (blo < bn < bhi):
            bn = 0.5 * (blo + bhi)
        if abs(bn - b) <= 1e-10 * (1.0 + abs(b)):
            b = bn
            break
        b = bn
    alpha = np.empty(n)
    for i in range(n):
        alpha[i] = y[i] * _t_of_b(c[i], y[i] * b, t[i])
    return alpha, b


@nb.njit(cache=True, nogil=True)
def _kernel_from_sqdist(D2: np.ndarray, gamma: float, K: np.ndarray) -> None:
    n = D2.shape[0]
    for i in range(n):
        K[i, i] = 1.0
        for k in range(i):
            v = math.exp(-gamma * D2[i, k])
            K[i, k] = v
            K[k, i] = v


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
        _kernel_from_sqdist(D2, gammas[t], K)
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


# ------------------------------------------------------------------ the reference code's classifier (pinned)
# The authors' IREOS code (KLR.java of homarques/ireos-extension, RapidMiner's KLR after Keerthi et al. 2005) solves
# the KLR dual by pair steps. It starts every positive multiplier at (mean cost of the positives) / (number of
# positives), i.e. at C_j for the single positive object, where the derivative of the entropy term of the dual,
# log(alpha / (C - alpha)), is +infinity. The first pair step (positive, lowest negative) moves that negative to its
# lower bound and the positive multiplier down by the negative's starting value mean(c_neg) / (n - 1); the positive's
# cached gradient becomes inf - inf = NaN, so it is never chosen again and its multiplier stays at
#     A = C_j - mean(c_neg) / (n - 1).
# What the code computes is then the optimum of the dual over the negatives with alpha_j = A fixed:
#     min_a  1/2 a' K_nn a - A K_nj' a + sum_i [a_i log a_i + (c_i - a_i) log(c_i - a_i)],  sum_i a_i = A,
# whose stationarity reads a_i = c_i sigmoid(f_i) with f = A K_.j - K_.n a + b (b the multiplier of the sum),
# and p(x_j) = sigmoid(A - K_jn a + b). Solved here to optimality (the Java code stops at a spread of 0.019 in b),
# as the primal problem whose stationarity this is (:func:`_pinned_newton`; pair steps to the same optimum take
# thousands to millions of steps per classifier: benchmarks/ireos_pair_steps.py).
# The negatives' sum is the reference code's too: they start at mean(c_neg) / (n - 1) each and the first step sets
# one of them to 0, so they sum to S = mean(c_neg) (n - 2) / (n - 1), and the later pair steps (two negatives) keep
# that sum. S = A when all costs are equal (m_cl = 1: the dual's equality sum_i y_i alpha_i = 0); for m_cl > 1 the
# costs differ and S < A (the equality does not hold in that code). Established on the authors' stored m_cl = n
# curves (docs/ireos.md, "The stored curves": within 1.3e-3 with S, up to 0.17 off with A).
# Consequences (docs/ireos.md): p -> 1 as gamma -> infinity for every object (A ~ C enters f_j with K_jj = 1), and an
# object with an exact duplicate reaches p = a_dup / c_dup, well above 0.5 at large gamma; the exact optimum
# instead levels off at ~0.9 and keeps a duplicated object below 0.5 for ever.
@nb.njit(cache=True, nogil=True)
def pinned_multiplier(c: np.ndarray) -> float:
    """A = c_0 - mean(c_1..c_{n-1}) / (n - 1): the positive (index 0) multiplier the reference code stops at."""
    n = c.shape[0]
    s = 0.0
    for i in range(1, n):
        s += c[i]
    return c[0] - s / (n - 1) / (n - 1)


@nb.njit(cache=True, nogil=True)
def pinned_negatives_sum(c: np.ndarray) -> float:
    """S = mean(c_1..c_{n-1}) (n - 2) / (n - 1): the sum of the negatives' multipliers in the reference code (see
    above); exactly :func:`pinned_multiplier` when every cost equals c_0 (m_cl = 1, where S = A)."""
    n = c.shape[0]
    s = 0.0
    equal = True
    for i in range(1, n):
        s += c[i]
        if c[i] != c[0]:
            equal = False
    if equal:
        return pinned_multiplier(c)
    mean = s / (n - 1)
    return mean - mean / (n - 1)


@nb.njit(cache=True, nogil=True)
def _pinned_diagonal_start(k0: np.ndarray, c: np.ndarray, A: float, S: float, a: np.ndarray) -> float:
    """a[0] := A, a[1:] := the pinned optimum with K_nn replaced by I and the positive's column k0 = K_nj kept
    (exact as gamma -> infinity, where K -> I): a_i + logit(a_i / c_i) = b + A K_ij for every negative,
    sum_i a_i = S, by a safeguarded Newton search for b (inner roots per object by :func:`_t_of_b`); returns b.
    Keeping the positive's pull A K_ij puts its near neighbours' multipliers near their costs from the start
    (with K = I throughout they started near S / (n - 1) and a cold classifier took 9 factorisations instead of
    6). Such a multiplier may come within rounding of its cost: no logit of it is taken later (the primal Newton
    needs none)."""
    n = c.shape[0]
    a[0] = A
    omax = 0.0
    for i in range(1, n):
        a[i] = min(0.5 * c[i], S / (n - 1))
        omax = max(omax, A * k0[i - 1])
    blo = -60.0 - omax
    bhi = 60.0
    b = -math.log(n)
    for _ in range(100):
        g = -S
        dg = 0.0
        for i in range(1, n):
            o = A * k0[i - 1]
            a[i] = _t_of_b(c[i], -(b + o), a[i])
            s = _sigmoid(b + o - a[i])
            w = c[i] * s * (1.0 - s)
            g += a[i]
            dg += w / (1.0 + w)
        if g > 0.0:  # sum a increases in b
            bhi = b
        else:
            blo = b
        bn = b - g / dg if dg > 0.0 else 0.5 * (blo + bhi)
        if not (blo < bn < bhi):
            bn = 0.5 * (blo + bhi)
        if abs(bn - b) <= 1e-12 * (1.0 + abs(b)):
            b = bn
            break
        b = bn
    for i in range(1, n):
        a[i] = _t_of_b(c[i], -(b + A * k0[i - 1]), a[i])
    return b


@nb.njit(cache=True, nogil=True)
def _pinned_newton(Kn: np.ndarray, k0: np.ndarray, c: np.ndarray, a: np.ndarray, S: float, b: float, tol: float,
                   maxit: int, M: np.ndarray, a2: np.ndarray):
    """The pinned classifier at the negatives' kernel Kn = K_nn and the positive's column k0 = K_nj (both from
    :func:`pinned_kernel`) with a[0] = A and the negatives' multipliers summing to S, from the negatives'
    multipliers a[1:] and bias b (from :func:`_pinned_diagonal_start` or a solved gamma). M: (n-1) x (n-1) work
    matrix. Returns (b, f_j, factorisations); a holds the optimum (a[1:] = c sigmoid(f) of the negatives).

    The pinned dual (see above) is the stationarity system of an unconstrained convex problem in the negatives'
    primal variables alpha = -a[1:] and b,

        J(alpha, b) = 1/2 alpha' K_nn alpha + sum_i c_i log(1 + exp(f_i)) - S b,   f = A K_nj + K_nn alpha + b 1

    (d/d alpha: K_nn (alpha + c sigmoid(f)) = 0; d/db: sum_i c_i sigmoid(f_i) = S), so it is solved by the KLR
    primal Newton (:func:`_newton` with offset A K_nj and beta = -S), which needs no bounds on a, from the best
    point of the span of a[1:] and a2[1:] (a2: another solved gamma's multipliers, or empty; :func:`_subspace_start`):
    1.65 Cholesky factorisations per classifier on Annthyroid's target line (1.3 at m_cl > 1) instead of 3.8 and
    7.2 with the Newton method on the dual it replaced, whose fraction-to-the-boundary steps kept forcing
    refreshes (docs/ireos.md, *Speed*; the optimum needs 1.22)."""
    n = c.shape[0]
    m = n - 1
    A = a[0]
    o = np.empty(m)
    alpha = np.empty(m)
    y = -np.ones(m)
    cn = np.empty(m)
    for i in range(m):
        o[i] = A * k0[i]
        alpha[i] = -a[i + 1]
        cn[i] = c[i + 1]
    alpha2 = np.empty(m if a2.shape[0] == n else 0)
    for i in range(alpha2.shape[0]):
        alpha2[i] = -a2[i + 1]
    b = _subspace_start(Kn, y, cn, alpha, alpha2, b, o, -S)
    _, alpha, b, nfact = _newton(Kn, y, cn, alpha, b, tol, maxit, M, o, -S)
    fj = A + b  # K_jj = 1
    for k in range(m):
        fj += k0[k] * alpha[k]
        a[k + 1] = -alpha[k]
    return b, fj, nfact


@nb.njit(cache=True, nogil=True)
def pinned_kernel(D2: np.ndarray, gamma: float, Kn: np.ndarray, k0: np.ndarray) -> None:
    """Kn := the kernel among the negatives (rows and columns 1.. of D2), k0 := the positive's column (row 0)."""
    m = D2.shape[0] - 1
    for i in range(m):
        Kn[i, i] = 1.0
        k0[i] = math.exp(-gamma * D2[0, i + 1])
        for k in range(i):
            v = math.exp(-gamma * D2[i + 1, k + 1])
            Kn[i, k] = v
            Kn[k, i] = v


@nb.njit(cache=True, nogil=True)
def _pinned_node(D2, K, M, c, gamma, Aw, bw, A2, Aout, tol, maxit):
    """The reference code's separability at ``gamma`` (see above; K, M: (n-1) x (n-1) work matrices),
    warm-started from the multipliers Aw and the bias bw of a solved gamma (bw = NaN: cold, from
    :func:`_pinned_diagonal_start`) and the span with another solved gamma's multipliers A2 (empty: none);
    writes the multipliers into Aout, returns (b, p, factorisations). gamma = 0
    is closed-form: all decision values are equal (A - S + b), p = S / sum of the negatives' costs."""
    n = c.shape[0]
    A = pinned_multiplier(c)
    S = pinned_negatives_sum(c)
    if gamma == 0.0:
        cn = 0.0
        for i in range(1, n):
            cn += c[i]
        q = S / cn
        Aout[0] = A
        for i in range(1, n):
            Aout[i] = c[i] * q
        return math.log(q / (1.0 - q)) - (A - S), q, 0
    k0 = np.empty(n - 1)
    pinned_kernel(D2, gamma, K, k0)
    if math.isnan(bw):
        bw = _pinned_diagonal_start(k0, c, A, S, Aout)
    else:
        Aout[:] = Aw
    b, fj, it = _pinned_newton(K, k0, c, Aout, S, bw, tol, maxit, M, A2)
    return b, _sigmoid(fj), it


@nb.njit(cache=True, nogil=True)
def _node(pinned, D2, K, M, y, c, gamma, Fw, bw, F2, Fout, tol, maxit):
    """One separability: the reference code's pinned classifier (``pinned``; K, M of size n - 1) or the exact KLR
    optimum (n); F2 = a second solved gamma's values for the warm start's span (empty: none)."""
    if pinned:
        return _pinned_node(D2, K, M, c, gamma, Fw, bw, F2, Fout, tol, maxit)
    return _solve_node(D2, K, M, y, c, gamma, Fw, bw, F2, Fout, tol, maxit)


# ------------------------------------------------------------------------------- whole curves, one object
@nb.njit(cache=True, nogil=True)
def _train_sqdist(X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Squared distances among X[rows], from differences (exact 0 for duplicates)."""
    n = rows.shape[0]
    d = X.shape[1]
    D2 = np.empty((n, n))
    for i in range(n):
        D2[i, i] = 0.0
        xi = rows[i]
        for k in range(i):
            xk = rows[k]
            s = 0.0
            for a in range(d):
                z = X[xi, a] - X[xk, a]
                s += z * z
            D2[i, k] = s
            D2[k, i] = s
    return D2


@nb.njit(cache=True, nogil=True)
def _solve_node(D2, K, M, y, c, gamma, Fw, bw, F2, Fout, tol, maxit):
    """Solve the problem at ``gamma`` warm-started from decision values Fw and bias bw (bw = NaN: cold, from the
    K = I optimum) and the span with another solved gamma's decision values F2 (empty: none); writes the decision
    values into Fout, returns (b, p, factorisations). gamma = 0 is closed-form."""
    n = y.shape[0]
    if gamma == 0.0:
        # K = 1 1': every f_i is the same number, so the optimum is the constant f = log(c_+ / c_-) (alpha = 0)
        cp = c[0]
        cn = 0.0
        for i in range(1, n):
            cn += c[i]
        b = math.log(cp / cn)
        for i in range(n):
            Fout[i] = b
        return b, _sigmoid(b), 0
    _kernel_from_sqdist(D2, gamma, K)
    if math.isnan(bw):  # no solved gamma at hand: start from the K = I optimum
        a0, bs = _identity_start(c, y)
    else:
        a0, bs = _start(c, y, Fw, bw)
    zero = np.zeros(n)
    a2 = np.empty(n if F2.shape[0] == n else 0)
    for i in range(a2.shape[0]):  # the optimality condition alpha = -dL/df at the other solved gamma
        a2[i] = c[i] * y[i] * _sigmoid(-y[i] * F2[i])
    bs = _subspace_start(K, y, c, a0, a2, bs, zero, 0.0)
    f, _, b, it = _newton(K, y, c, a0, bs, tol, maxit, M, zero, 0.0)
    Fout[:] = f
    return b, _sigmoid(f[0]), it


@nb.njit(cache=True, nogil=True)
def _curve_points(D2, c, gammas, tol, maxit, pinned):
    """p at increasing ``gammas``, solved from the largest down, each problem warm-started from the span of the
    two next larger gammas' solutions (an extrapolation, :func:`_subspace_start`; the largest cold: at large gamma
    the kernel is near the identity and the problem easy)."""
    n = D2.shape[0]
    y = -np.ones(n)
    y[0] = 1.0
    nk = n - 1 if pinned else n  # the pinned classifier's variables are the negatives'
    K = np.empty((nk, nk))
    M = np.empty((nk, nk))
    Fw = np.zeros(n)
    F2 = np.zeros(n)
    Fn = np.empty(n)
    none = np.empty(0)
    bw = math.nan
    m = gammas.shape[0]
    p = np.empty(m)
    fits = 0
    facts = 0
    for r in range(m - 1, -1, -1):
        b, p[r], it = _node(pinned, D2, K, M, y, c, gammas[r], Fw, bw, F2 if r < m - 2 else none, Fn, tol,
                            maxit)
        if gammas[r] > 0.0:
            fits += 1
        facts += it
        F2[:] = Fw
        Fw[:] = Fn
        bw = b
    return p, fits, facts


@nb.njit(cache=True, nogil=True)
def _curve_adaptive(D2, c, gamma_max, tol, max_depth, min_depth, pinned):
    """Normalised area (1/gamma_max) int_0^gamma_max p dgamma by adaptive Simpson quadrature (Sect. 3.5.1, Eq. 14).

    Nodes live on the dyadic grid gamma_max * i / 2^(max_depth + 2), so every node is solved once and reused by
    every level. Depth 0 is solved from gamma_max down (gamma_max cold, each next node warm-started from the
    one above it, extrapolated with the one above that); then intervals are refined depth-first, left to right,
    each new quarter point warm-started from the solved node just above it (the interval's midpoint or right
    end), interpolated with the one just below it (:func:`_subspace_start`). (Warm starts from below alone are
    poor near gamma = 0, where the optimum is a constant and carries no shape.) An interval of width h
    (in units of gamma_max) is accepted when depth >= min_depth and |S_2 - S_1| / 15 <= tol * h, or at depth
    max_depth. Returns (area, fits, factorisations).
    """
    n = D2.shape[0]
    y = -np.ones(n)
    y[0] = 1.0
    nk = n - 1 if pinned else n  # the pinned classifier's variables are the negatives'
    K = np.empty((nk, nk))
    M = np.empty((nk, nk))
    top = 1 << (max_depth + 2)
    P = np.empty(top + 1)
    Fs = np.empty((top + 1, n))
    bs = np.empty(top + 1)
    fits = 0
    facts = 0
    q = top // 4
    zero = np.zeros(n)
    none = np.empty(0)
    for r in range(4, -1, -1):  # depth 0: gamma_max * (1, 3/4, 1/2, 1/4, 0)
        i = r * q
        if r == 4:
            bs[i], P[i], it = _node(pinned, D2, K, M, y, c, gamma_max, zero, math.nan, none, Fs[i], TOL,
                                    MAXIT)
        else:
            bs[i], P[i], it = _node(pinned, D2, K, M, y, c, gamma_max * (i / top), Fs[i + q], bs[i + q],
                                    Fs[i + 2 * q] if r < 3 else none, Fs[i], TOL, MAXIT)
        if i > 0:
            fits += 1
        facts += it
    area = 0.0
    stack_a = np.empty(2 * max_depth + 4, dtype=np.int64)
    stack_b = np.empty(2 * max_depth + 4, dtype=np.int64)
    stack_d = np.empty(2 * max_depth + 4, dtype=np.int64)
    stack_a[0] = 0
    stack_b[0] = top
    stack_d[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        a = stack_a[sp]
        b = stack_b[sp]
        depth = stack_d[sp]
        h = b - a
        m = a + h // 2
        q1 = a + h // 4
        q3 = a + 3 * (h // 4)
        if depth > 0:  # the quarter points are new; warm start from the solved node above each
            bs[q1], P[q1], it = _node(pinned, D2, K, M, y, c, gamma_max * (q1 / top), Fs[m], bs[m], Fs[a],
                                      Fs[q1], TOL, MAXIT)
            facts += it
            fits += 1
            bs[q3], P[q3], it = _node(pinned, D2, K, M, y, c, gamma_max * (q3 / top), Fs[b], bs[b], Fs[m],
                                      Fs[q3], TOL, MAXIT)
            facts += it
            fits += 1
        hn = h / top
        s1 = hn / 6.0 * (P[a] + 4.0 * P[m] + P[b])
        s2 = hn / 12.0 * (P[a] + 4.0 * P[q1] + 2.0 * P[m] + 4.0 * P[q3] + P[b])
        if (depth >= min_depth and abs(s2 - s1) / 15.0 <= tol * hn) or depth >= max_depth:
            area += s2
        else:  # right half below the left half on the stack: left is refined first
            stack_a[sp] = m
            stack_b[sp] = b
            stack_d[sp] = depth + 1
            stack_a[sp + 1] = a
            stack_b[sp + 1] = m
            stack_d[sp + 1] = depth + 1
            sp += 2
    return area, fits, facts


@nb.njit(cache=True, nogil=True)
def curves_batch(X: np.ndarray, train: np.ndarray, costs: np.ndarray, mode: int, gammas: np.ndarray,
                 gamma_max: float, tol: float, max_depth: int, min_depth: int, pinned: bool = False):
    """Separability curves of B objects, one after the other (the unit of work of a worker).

    Problem t trains on X[train[t]] with train[t, 0] the positive object (the object itself; its k nearest
    neighbours with kNN subsets, Sect. 3.5.3, or every other object for the exact index) and costs[t] aligned
    with train[t] (costs[t, 0] = C). Modes: 0 = adaptive Simpson area on [0, gamma_max] (out[t, 0]);
    1 = p at the increasing ``gammas`` (out[t, :]). Returns (out, fits, factorisations), fits counting
    classifiers trained (gamma = 0 is closed-form and not counted). ``pinned``: the reference code's classifier
    (the positive multiplier pinned, :func:`_pinned_node`) instead of the exact KLR optimum.
    """
    B = train.shape[0]
    m = 1 if mode == 0 else gammas.shape[0]
    out = np.empty((B, m))
    fits = 0
    facts = 0
    for t in range(B):
        D2 = _train_sqdist(X, train[t])
        if mode == 0:
            out[t, 0], f1, f2 = _curve_adaptive(D2, costs[t], gamma_max, tol, max_depth, min_depth, pinned)
        else:
            out[t], f1, f2 = _curve_points(D2, costs[t], gammas, TOL, MAXIT, pinned)
        fits += f1
        facts += f2
    return out, fits, facts


def klr_objective(K: np.ndarray, y: np.ndarray, c: np.ndarray, alpha: np.ndarray, b: float) -> float:
    """The full primal objective J(alpha, b) (for tests and the scipy reference)."""
    f = K @ alpha + b
    return float(0.5 * alpha @ K @ alpha + np.sum(c * np.logaddexp(0.0, -y * f)))
