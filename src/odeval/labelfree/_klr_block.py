"""The reference code's pinned classifier (:mod:`odeval.labelfree._klr`) for many objects of one exact training set
at once: block preconditioned conjugate gradients instead of one Cholesky factorisation per classifier.

For the exact index every object j is trained on all N objects, so at one gamma every classifier shares the kernel
K; they differ only in which object is the positive and in the Newton weights. :func:`_klr._pinned_newton`
factorises K_nn + W^-1 per Newton step (N^3 / 3 flops per classifier, O(N^3) per object and gamma). Here the two
systems of each Newton step, (K_nn + D) v = 1 and (K_nn + D) u = -D (alpha + g), are solved for B objects together
by conjugate gradients, so the N^2 products K x of all of them are one matrix product K [x_1 .. x_2B] (BLAS 3,
not B memory-bound matrix-vector products), preconditioned by D + L L' (L L' a Nystrom approximation of K from
``rank`` landmark columns, inverted by the Woodbury identity with one r x r matrix per object). Each object lives
in the full N-space with its own coordinate masked (alpha_j = 0), so K itself serves every object and f_j, the
positive's decision value, is the masked coordinate of the same product.

Everything else is :mod:`._klr`'s: the same objective and stop rule, the same cold start
(:func:`_klr._pinned_diagonal_start`), the same warm starts along gamma (the best point of the span of two solved
gammas' solutions, :func:`_klr._span_start`), the same adaptive Simpson nodes and acceptance rule
(:func:`_klr._curve_adaptive`; here breadth-first, every object's intervals of one depth at a time, which solves
the same nodes from the same warm starts). The separabilities agree with the dense solver's to the conjugate
gradients' tolerance (tests/labelfree/test_klr_block.py; docs/ireos.md, *The exact index above N = 1 013*).
"""

from __future__ import annotations

import math

import numpy as np

from odeval.labelfree import _klr

CG_TOL = 1e-10  # relative residual of each conjugate-gradient solve
CG_MAXIT = 2000
RANK = 100  # Nystrom landmarks of the preconditioner
ETA_MAX = 1e-4  # the loosest relative residual of an inexact Newton step


def _log1pexp(z: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, z)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def sqdist(X: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances (N x N) from differences, in blocks (exact 0 for duplicates, as
    :func:`_klr._train_sqdist`)."""
    N, d = X.shape
    D2 = np.empty((N, N))
    step = max(1, 4_000_000 // max(1, N * d))
    for lo in range(0, N, step):
        diff = X[lo:lo + step, None, :] - X[None, :, :]
        D2[lo:lo + step] = np.einsum("ijk,ijk->ij", diff, diff)
    return D2


class HostKernel:
    """K = exp(-gamma D2) of one exact training set in NumPy: its products K P, columns and the block conjugate
    gradients (:meth:`pcg`). :class:`TorchKernel` is the same on a PyTorch device."""

    def __init__(self, D2: np.ndarray, landmarks: np.ndarray) -> None:
        self.D2 = D2
        self.N = D2.shape[0]
        self.landmarks = landmarks
        self.products = 0  # columns multiplied by K (the unit of cost: 2 N^2 flops each)
        self.gamma = math.nan
        self.K = np.empty((self.N, self.N))

    def set_gamma(self, gamma: float) -> None:
        if gamma != self.gamma:
            np.multiply(self.D2, -gamma, out=self.K)
            np.exp(self.K, out=self.K)
            self.L = _nystrom(self.K[:, self.landmarks], self.landmarks)
            self.gamma = gamma

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """K[:, idx] (N, len(idx)) on the host."""
        return self.K[:, idx]

    def matmul(self, P: np.ndarray) -> np.ndarray:
        self.products += P.shape[1]
        return self.K @ P

    def pcg(self, R: np.ndarray, W: np.ndarray, M: np.ndarray, D: np.ndarray, rtol: np.ndarray) -> np.ndarray:
        """:func:`_woodbury_pcg` with this kernel."""
        L = self.L
        r = L.shape[1]
        F = np.empty((W.shape[1], r, r))
        for k in range(W.shape[1]):
            F[k] = (L * W[:, k, None]).T @ L
            F[k].flat[::r + 1] += 1.0
        return _woodbury_pcg(R, W, M, D, rtol, L, np.linalg.inv(F), self.matmul, _NUMPY)


class _Ops:
    """The array operations of :func:`_woodbury_pcg` in one library's spelling (NumPy's or PyTorch's)."""

    def __init__(self, cat, colnorm, coldot, arange, copy, zeros_like, einsum) -> None:
        self.cat, self.colnorm, self.coldot, self.arange = cat, colnorm, coldot, arange
        self.copy, self.zeros_like, self.einsum = copy, zeros_like, einsum


_NUMPY = _Ops(cat=lambda parts, axis: np.concatenate(parts, axis=axis),
              colnorm=lambda A: np.linalg.norm(A, axis=0), coldot=lambda A, B: np.einsum("ik,ik->k", A, B),
              arange=np.arange, copy=np.copy, zeros_like=np.zeros_like, einsum=np.einsum)


def _woodbury_pcg(R, W, M, D, rtol, L, Finv, matmul, ops: _Ops):
    """Solve (K_nn + D_k) x_k = r_k for the columns k of R, two right-hand sides per classifier (column k of W, M,
    D serves R's columns k and m + k; masked: x = 0 where M = 0; W = 1/D, 0 there) by conjugate gradients
    preconditioned by (D + L L')^-1 = W - W L (I + L' W L)^-1 L' W (Woodbury; ``Finv`` holds the m inverses of
    I + L' W_k L). ``matmul``: P -> K P. NumPy or PyTorch arrays alike, as ``ops`` spells them."""
    Finv = ops.cat([Finv, Finv], 0)
    W, M, D = (ops.cat([A, A], 1) for A in (W, M, D))
    rtol = ops.cat([rtol, rtol], 0)
    every = ops.arange(R.shape[1])

    def prec(Rk, idx):
        WR = W[:, idx] * Rk
        T = ops.einsum("kab,bk->ak", Finv[idx], L.T @ WR)
        return WR - W[:, idx] * (L @ T)

    X = ops.zeros_like(R)
    Rr = ops.copy(R)
    Z = prec(Rr, every)
    P = ops.copy(Z)
    rz = ops.coldot(Rr, Z)
    norm0 = ops.colnorm(R)
    active = every[norm0 > 0]
    for _ in range(CG_MAXIT):
        if len(active) == 0:
            break
        res = ops.colnorm(Rr[:, active])
        active = active[res > rtol[active] * norm0[active]]
        if len(active) == 0:
            break
        Pa = P[:, active]
        AP = matmul(Pa) * M[:, active] + D[:, active] * Pa
        step = rz[active] / ops.coldot(Pa, AP)
        X[:, active] += step * Pa
        Rr[:, active] -= step * AP
        Za = prec(Rr[:, active], active)
        rz_new = ops.coldot(Rr[:, active], Za)
        P[:, active] = Za + (rz_new / rz[active]) * Pa
        rz[active] = rz_new
    return X


def _nystrom(Cm: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
    """L with L L' the Nystrom approximation of K from its landmark columns Cm = K[:, landmarks]."""
    ew, ev = np.linalg.eigh(Cm[landmarks])
    keep = ew > 1e-10 * ew.max()
    return Cm @ (ev[:, keep] / np.sqrt(ew[keep]))


class TorchKernel:
    """:class:`HostKernel` on a PyTorch device (``device="cuda"``; PyTorch's CPU build runs the same code, which
    is how it is tested without a GPU): the kernel, its products and the conjugate gradients live on the device,
    one CUDA stream per instance (the chunks of a thread pool overlap); the Newton steps around them stay on the
    host. The same method, the same stop rules; the numbers agree with the host's to the conjugate gradients'
    tolerance, not in bits."""

    def __init__(self, X: np.ndarray, landmarks: np.ndarray, device: str) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        self.N = X.shape[0]
        self.landmarks = landmarks
        self.products = 0
        self.gamma = math.nan
        with self._on_stream():
            Xd = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float64)).to(self.device)
            self.D2 = torch.empty((self.N, self.N), dtype=torch.float64, device=self.device)
            step = max(1, 4_000_000 // max(1, self.N * X.shape[1]))
            for lo in range(0, self.N, step):  # from differences: exact 0 for duplicates, as sqdist
                diff = Xd[lo:lo + step, None, :] - Xd[None, :, :]
                self.D2[lo:lo + step] = (diff * diff).sum(dim=2)
            self.K = torch.empty_like(self.D2)
            self._lm = torch.from_numpy(landmarks).to(self.device)
        device_ = self.device
        self.ops = _Ops(cat=lambda parts, axis: torch.cat(parts, dim=axis),
                        colnorm=lambda A: torch.linalg.vector_norm(A, dim=0), coldot=lambda A, B: (A * B).sum(dim=0),
                        arange=lambda n: torch.arange(n, device=device_), copy=torch.clone,
                        zeros_like=torch.zeros_like, einsum=torch.einsum)

    def _on_stream(self):
        import contextlib

        return self.torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext()

    def _to(self, a: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64)).to(self.device)

    def set_gamma(self, gamma: float) -> None:
        if gamma != self.gamma:
            with self._on_stream():
                self.torch.mul(self.D2, -gamma, out=self.K)
                self.torch.exp(self.K, out=self.K)
                Cm = self.K[:, self._lm].cpu().numpy()
                self.L = self._to(_nystrom(Cm, self.landmarks))
            self.gamma = gamma

    def columns(self, idx: np.ndarray) -> np.ndarray:
        with self._on_stream():
            return self.K[:, self.torch.from_numpy(np.asarray(idx, dtype=np.int64)).to(self.device)].cpu().numpy()

    def matmul(self, P: np.ndarray) -> np.ndarray:
        self.products += P.shape[1]
        with self._on_stream():
            return (self.K @ self._to(P)).cpu().numpy()

    def _device_matmul(self, P):
        self.products += P.shape[1]
        return self.K @ P

    def pcg(self, R: np.ndarray, W: np.ndarray, M: np.ndarray, D: np.ndarray, rtol: np.ndarray) -> np.ndarray:
        """:func:`_woodbury_pcg` with this kernel, on the device."""
        torch = self.torch
        with self._on_stream():
            L = self.L
            r = L.shape[1]
            Wd = self._to(W)
            m = Wd.shape[1]
            F = torch.empty((m, r, r), dtype=torch.float64, device=self.device)
            group = max(1, 2_000_000 // max(1, r * self.N))  # (group, r, N) temporaries of about 16 MB
            for lo in range(0, m, group):
                F[lo:lo + group] = (L.T.unsqueeze(0) * Wd[:, lo:lo + group].T.unsqueeze(1)) @ L
            F.diagonal(dim1=1, dim2=2).add_(1.0)
            X = _woodbury_pcg(self._to(R), Wd, self._to(M), self._to(D), self._to(rtol), L, torch.linalg.inv(F),
                              self._device_matmul, self.ops)
            return X.cpu().numpy()


class PinnedBlock:
    """B pinned classifiers on the exact training set (every object), one per object in ``objects``, with costs
    ``costs`` (B, N) in the objects' natural order (the positive's own entry is its cost C)."""

    def __init__(self, D2: np.ndarray | None, objects: np.ndarray, costs: np.ndarray, *, rank: int = RANK,
                 cg_tol: float = CG_TOL, seed: int = 0, X: np.ndarray | None = None,
                 torch_device: str | None = None) -> None:
        self.N = costs.shape[1]
        self.j = np.asarray(objects, dtype=np.int64)
        B = self.j.size
        cols = np.arange(B)
        self.mask = np.ones((self.N, B))
        self.mask[self.j, cols] = 0.0
        self.c = np.ascontiguousarray(costs.T, dtype=np.float64) * self.mask  # negatives' costs, 0 at the positive
        self.A = np.empty(B)
        self.S = np.empty(B)
        for b in range(B):
            ct = np.r_[costs[b, self.j[b]], np.delete(costs[b], self.j[b])]  # the positive first, as _klr's
            self.A[b] = _klr.pinned_multiplier(ct)
            self.S[b] = _klr.pinned_negatives_sum(ct)
        self.rank = min(rank, self.N)
        self.cg_tol = cg_tol
        self.landmarks = np.sort(np.random.default_rng(seed).choice(self.N, self.rank, replace=False))
        self.fits = 0
        # the kernel (N x N), its products and the conjugate gradients: NumPy, or PyTorch on torch_device
        self.kernel = (HostKernel(sqdist(np.ascontiguousarray(X, dtype=np.float64)) if D2 is None else D2,
                                  self.landmarks) if torch_device is None
                       else TorchKernel(X, self.landmarks, torch_device))

    @property
    def products(self) -> int:
        """Columns multiplied by K (the unit of cost: 2 N^2 flops each)."""
        return self.kernel.products

    # ------------------------------------------------------------------------------------------- one gamma
    def _kernel(self, gamma: float) -> None:
        self.kernel.set_gamma(gamma)

    def _matmul(self, P: np.ndarray) -> np.ndarray:
        return self.kernel.matmul(P)

    def closed_form(self, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """gamma = 0 (all decision values equal): p = S / sum of the negatives' costs, alpha = -c q,
        b = logit(q) - (A - S) (:func:`_klr._pinned_node`)."""
        q = self.S[cols] / self.c[:, cols].sum(axis=0)
        return -self.c[:, cols] * q, np.log(q / (1.0 - q)) - (self.A[cols] - self.S[cols]), q

    def cold(self, gamma: float, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The diagonal start of :func:`_klr._pinned_diagonal_start` for the objects ``cols``: (alpha, b)."""
        self._kernel(gamma)
        alpha = np.zeros((self.N, cols.size))
        b = np.empty(cols.size)
        Kj = self.kernel.columns(self.j[cols])  # K symmetric: column j is row j
        for k, col in enumerate(cols):
            j = self.j[col]
            a = np.empty(self.N)  # in _klr's order: the positive first (its cost is not read)
            b[k] = _klr._pinned_diagonal_start(np.delete(Kj[:, k], j), np.r_[0.0, np.delete(self.c[:, col], j)],
                                                self.A[col], self.S[col], a)
            alpha[:, k] = np.insert(-a[1:], j, 0.0)
        return alpha, b

    def solve(self, gamma: float, cols: np.ndarray, alpha: np.ndarray, b: np.ndarray,
              alpha2: np.ndarray | None = None, tol: float = _klr.TOL,
              maxit: int = _klr.MAXIT) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pinned classifiers of objects ``cols`` at ``gamma`` from (alpha, b) (N x m, m), moved first to the
        best point of the span with ``alpha2`` (:func:`_klr._span_start`); returns (alpha, b, p)."""
        self._kernel(gamma)
        m = cols.size
        self.fits += m
        mask, c = self.mask[:, cols], self.c[:, cols]
        A, S = self.A[cols], self.S[cols]
        o = self.kernel.columns(self.j[cols]) * A  # the positive's pull A K_ij (o_j = A: K_jj = 1)
        alpha = alpha * mask
        b = b.copy()
        y = -np.ones(self.N)
        if alpha2 is not None:
            alpha2 = alpha2 * mask
            U = self._matmul(np.hstack([alpha, alpha2]))
            for k in range(m):
                th, b[k] = _klr._span_start(np.vstack([U[:, k], U[:, m + k]]), alpha[:, k], alpha2[:, k], b[k], y,
                                            c[:, k], o[:, k], -S[k])
                alpha[:, k] = th[0] * alpha[:, k] + th[1] * alpha2[:, k]
        else:
            U = self._matmul(alpha)
            for k in range(m):
                th, b[k] = _klr._span_start(U[:, k][None], alpha[:, k], alpha[:, k][:0], b[k], y, c[:, k], o[:, k],
                                            -S[k])
                alpha[:, k] *= th[0]
        f = o + self._matmul(alpha) + b

        def objective(al, ff, bb, idx):
            return (0.5 * np.einsum("ik,ik->k", al, ff - bb - o[:, idx]) + (c[:, idx] * _log1pexp(ff)).sum(axis=0)
                    - S[idx] * bb)

        idx_all = np.arange(m)
        obj = objective(alpha, f, b, idx_all)
        active = idx_all.copy()
        # inexact Newton: the systems are solved to a relative residual that follows the last step's decrement
        # (at most ETA_MAX), and to cg_tol once the decrement is small; the stop rule and a failed line search
        # are only believed for a step solved to cg_tol
        eta = np.full(m, ETA_MAX)
        for _ in range(maxit):
            if active.size == 0:
                break
            al, ff, bb = alpha[:, active], f[:, active], b[active]
            ca, ma = c[:, active], mask[:, active]
            s = _sigmoid(ff)
            g = ca * s
            w = np.maximum(ca * s * (1.0 - s), 1e-12 * ca)  # 1/D, 0 at the positive
            D = np.divide(1.0, w, out=np.zeros_like(w), where=ma > 0)
            ag = al + g
            sol = self.kernel.pcg(np.hstack([ma, -D * ag]), w, ma, D, eta[active])
            v, u = sol[:, :active.size], sol[:, active.size:]
            db = (u.sum(axis=0) + al.sum(axis=0) + S[active]) / v.sum(axis=0)
            da = u - db * v
            Kd = self._matmul(da)
            dec = np.maximum(0.0, -np.einsum("ik,ik->k", Kd * ma, ag) - db * (g.sum(axis=0) - S[active]))
            t = np.ones(active.size)
            accepted = np.zeros(active.size, bool)
            new = obj[active].copy()
            trying = np.arange(active.size)
            for _ls in range(60):
                tt = t[trying]
                an = al[:, trying] + tt * da[:, trying]
                fn = ff[:, trying] + tt * (Kd[:, trying] + db[trying])
                bn = bb[trying] + tt * db[trying]
                val = objective(an, fn, bn, active[trying])
                ok = val <= obj[active[trying]] - 0.25 * tt * dec[trying]
                idx = trying[ok]
                accepted[idx] = True
                new[idx] = val[ok]
                gl = active[idx]
                alpha[:, gl], f[:, gl], b[gl] = an[:, ok], fn[:, ok], bn[ok]
                trying = trying[~ok]
                if trying.size == 0:
                    break
                t[trying] *= 0.5
            obj[active[accepted]] = new[accepted]
            small = 0.5 * dec <= tol * (1.0 + np.abs(obj[active]))
            tight = eta[active] <= self.cg_tol
            done = (small | ~accepted) & tight
            eta[active] = np.where(small | ~accepted, self.cg_tol,
                                   np.clip(dec / (1.0 + np.abs(obj[active])), self.cg_tol, ETA_MAX))
            active = active[~done]
        p = _sigmoid(f[self.j[cols], idx_all])
        return alpha, b, p


def curves(X: np.ndarray, objects: np.ndarray, costs: np.ndarray, mode: int, gammas: np.ndarray, gamma_max: float,
           tol: float, max_depth: int, min_depth: int, *, D2: np.ndarray | None = None, rank: int = RANK,
           cg_tol: float = CG_TOL, torch_device: str | None = None) -> tuple[np.ndarray, int, int]:
    """:func:`_klr.curves_batch` (pinned, exact training set) for the objects ``objects`` with costs (B, N) in
    natural order: mode 0 the adaptive Simpson area on [0, gamma_max], 1 p at the increasing ``gammas``. Returns
    (out, fits, products). ``torch_device``: the kernel's products and the conjugate gradients in PyTorch on that
    device (:class:`TorchKernel`; None: NumPy on the host)."""
    blk = PinnedBlock(D2, objects, costs, rank=rank, cg_tol=cg_tol, X=X, torch_device=torch_device)
    B = blk.j.size
    every = np.arange(B)
    if mode == 1:
        out = np.empty((B, gammas.size))
        sols: list[tuple[np.ndarray, np.ndarray]] = []
        for r in range(gammas.size - 1, -1, -1):
            g = float(gammas[r])
            if g == 0.0:
                a, bb, out[:, r] = blk.closed_form(every)
            elif not sols:
                a, bb = blk.cold(g, every)
                a, bb, out[:, r] = blk.solve(g, every, a, bb)
            else:
                a, bb, out[:, r] = blk.solve(g, every, *sols[-1], sols[-2][0] if len(sols) > 1 else None)
            sols = [*sols[-1:], (a, bb)]
        return out, blk.fits, blk.products
    top = 1 << (max_depth + 2)
    q = top // 4
    P = np.empty((top + 1, B))
    F: dict[int, np.ndarray] = {}  # node -> alpha (N, B): every object solves the nodes of depth 0
    Bs: dict[int, np.ndarray] = {}
    a, bb = blk.cold(gamma_max, every)
    F[top], Bs[top], P[top] = blk.solve(gamma_max, every, a, bb)
    for r in (3, 2, 1):
        i = r * q
        F[i], Bs[i], P[i] = blk.solve(gamma_max * (i / top), every, F[i + q], Bs[i + q],
                                      F[i + 2 * q] if r < 3 else None)
    F[0], Bs[0], P[0] = blk.closed_form(every)
    # deeper nodes are solved for some objects only: (node -> {object: column of that node's arrays})
    Fd: dict[int, tuple[np.ndarray, np.ndarray, dict[int, int]]] = {i: (F[i], Bs[i], {k: k for k in range(B)})
                                                                      for i in F}
    Pd: dict[tuple[int, int], float] = {}
    area = np.zeros(B)
    level = [(k, 0, top) for k in range(B)]
    depth = 0

    def p_of(k: int, i: int) -> float:
        return float(P[i, k]) if i in F else Pd[(k, i)]

    def sol(k: int, i: int) -> tuple[np.ndarray, float]:
        al, bs, where = Fd[i]
        return al[:, where[k]], float(bs[where[k]])

    while level:
        if depth > 0:
            need: dict[int, list[tuple[int, int, int]]] = {}  # node -> [(object, warm node, span node)]
            for k, a0, b0 in level:
                h = b0 - a0
                mid = a0 + h // 2
                need.setdefault(a0 + h // 4, []).append((k, mid, a0))
                need.setdefault(a0 + 3 * (h // 4), []).append((k, b0, mid))
            for node, rows in sorted(need.items(), reverse=True):
                ks = np.array([k for k, _, _ in rows])
                warm = [sol(k, w) for k, w, _ in rows]
                span = np.column_stack([sol(k, s)[0] for k, _, s in rows])
                al, bs, p = blk.solve(gamma_max * (node / top), ks, np.column_stack([w[0] for w in warm]),
                                      np.array([w[1] for w in warm]), span)
                Fd[node] = (al, bs, {int(k): c for c, k in enumerate(ks)})
                for c, k in enumerate(ks):
                    Pd[(int(k), node)] = float(p[c])
        nxt = []
        for k, a0, b0 in level:
            h = b0 - a0
            mid, q1, q3 = a0 + h // 2, a0 + h // 4, a0 + 3 * (h // 4)
            hn = h / top
            pa, pm, pb, p1, p3 = (p_of(k, i) for i in (a0, mid, b0, q1, q3))
            s1 = hn / 6.0 * (pa + 4.0 * pm + pb)
            s2 = hn / 12.0 * (pa + 4.0 * p1 + 2.0 * pm + 4.0 * p3 + pb)
            if (depth >= min_depth and abs(s2 - s1) / 15.0 <= tol * hn) or depth >= max_depth:
                area[k] += s2
            else:
                nxt += [(k, a0, mid), (k, mid, b0)]
        level = nxt
        depth += 1
    return area[:, None], blk.fits, blk.products
