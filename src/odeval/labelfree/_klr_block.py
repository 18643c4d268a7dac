"""The reference code's pinned classifier (:mod:`odeval.labelfree._klr`) for many objects of one exact training set
at once: block preconditioned conjugate gradients instead of one Cholesky factorisation per classifier.

For the exact index every object j is trained on all N objects, so at one gamma every classifier shares the kernel
K; they differ only in which object is the positive and in the Newton weights. :func:`_klr._pinned_newton`
factorises K_nn + W^-1 per Newton step (N^3 / 3 flops per classifier, O(N^3) per object and gamma). Here each
Newton step's system, (K_nn + D) da + 1 db = -D (alpha + g) with 1' (alpha + da) = -S, is solved for B objects
together by conjugate gradients projected onto the constraint (:func:`_projected_pcg`), so the N^2 products K x of
all of them are one matrix product K [x_1 .. x_B] (BLAS 3, not B memory-bound matrix-vector products),
preconditioned by D + L L' + (K - L L') on the block of the objects of largest Newton weight (L L' a Nystrom
approximation of K from ``rank`` landmark columns; :class:`_Preconditioner`, by the Woodbury identity with one
r x r and one small s x s matrix per object). Each object lives
in the full N-space with its own coordinate masked (alpha_j = 0), so K itself serves every object and f_j, the
positive's decision value, is the masked coordinate of the same product.

Everything else is :mod:`._klr`'s: the same objective and stop rule, the same cold start
(:func:`_klr._pinned_diagonal_start`), the same warm starts along gamma (the best point of the span of two solved
gammas' solutions, :func:`_klr._span_start`), the same adaptive Simpson nodes and acceptance rule
(:func:`_klr._curve_adaptive`; here breadth-first, every object's intervals of one depth at a time, which solves
the same nodes from the same warm starts). The separabilities agree with the dense solver's to the conjugate
gradients' tolerance (tests/labelfree/test_klr_block.py; docs/ireos.md, *The exact index above N = 1 013*).

The arrays of N rows (multipliers, decision values, costs, the kernel) live where the kernel does: in NumPy on the
host (:class:`HostKernel`) or in PyTorch on a device (:class:`TorchKernel`, ``ireos(device="cuda")``); the same
code runs on both through :class:`_Arrays`, the few operations the two libraries spell differently. The
per-object quantities (b, the objective, the step lengths, the stop rule) and the starts (numba, per object) stay
on the host.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from odeval.labelfree import _klr

CG_TOL = 1e-6  # relative residual of a Newton step that may stop a classifier (1e-10 until 2026-11-29: a quarter
# more products, areas within 1e-9 of these; docs/ireos.md, *The exact index on large data*)
CG_MAXIT = 2000
RANK = 100  # Nystrom landmarks of the preconditioner
CORE_FRACTION = 0.02  # of the objects, those of largest Newton weight whose block of K the preconditioner holds
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


@dataclass(frozen=True)
class _Arrays:
    """The array operations of the block solver in one library's spelling (NumPy's or PyTorch's). ``dev`` puts a
    host array where the kernel's arrays live, ``host`` brings one back, ``index`` makes an index array for them
    (all three the identity on the host)."""

    cat: Callable
    colnorm: Callable
    coldot: Callable
    colsum: Callable
    arange: Callable
    zeros_like: Callable
    zeros: Callable
    inv: Callable
    top_rows: Callable
    take_rows: Callable
    put_rows: Callable
    mT: Callable
    stack_cols: Callable
    sigmoid: Callable
    log1pexp: Callable
    maximum: Callable
    inverse_where: Callable
    dev: Callable
    host: Callable
    index: Callable


def _same(a: Any) -> Any:
    return a


_NUMPY = _Arrays(cat=lambda parts, axis: np.concatenate(parts, axis=axis),
                 colnorm=lambda A: np.linalg.norm(A, axis=0), coldot=lambda A, B: np.einsum("ik,ik->k", A, B),
                 colsum=lambda A: A.sum(axis=0), arange=np.arange, zeros_like=np.zeros_like,
                 zeros=np.zeros, inv=np.linalg.inv,
                 top_rows=lambda A, s: np.argpartition(A, A.shape[0] - s, axis=0)[A.shape[0] - s:],
                 take_rows=lambda A, I: np.take_along_axis(A, I, axis=0),
                 put_rows=lambda A, I, V: np.put_along_axis(A, I, V, axis=0),
                 mT=lambda A: np.swapaxes(A, -1, -2), stack_cols=np.column_stack, sigmoid=_sigmoid, log1pexp=_log1pexp,
                 maximum=np.maximum,
                 inverse_where=lambda w, keep: np.divide(1.0, w, out=np.zeros_like(w), where=keep),
                 dev=_same, host=_same, index=_same)


def _torch_arrays(torch: Any, device: Any) -> _Arrays:
    zero = torch.zeros((), dtype=torch.float64, device=device)

    def dev(a):
        if isinstance(a, torch.Tensor):
            return a
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64)).to(device)

    return _Arrays(cat=lambda parts, axis: torch.cat(parts, dim=axis),
                   colnorm=lambda A: torch.linalg.vector_norm(A, dim=0), coldot=lambda A, B: (A * B).sum(dim=0),
                   colsum=lambda A: A.sum(dim=0), arange=lambda n: torch.arange(n, device=device),
                   zeros_like=torch.zeros_like,
                   zeros=lambda shape: torch.zeros(shape, dtype=torch.float64, device=device), inv=torch.linalg.inv,
                   top_rows=lambda A, s: torch.topk(A, s, dim=0).indices,
                   take_rows=lambda A, I: torch.gather(A, 0, I), put_rows=lambda A, I, V: A.scatter_(0, I, V),
                   mT=lambda A: A.transpose(-1, -2),
                   stack_cols=lambda cols: torch.stack(cols, dim=1),
                   sigmoid=lambda z: 0.5 * (1.0 + torch.tanh(0.5 * z)), log1pexp=lambda z: torch.logaddexp(z, zero),
                   maximum=torch.maximum, inverse_where=lambda w, keep: torch.where(keep, 1.0 / w, zero),
                   dev=dev, host=lambda t: t.cpu().numpy(),
                   index=lambda i: torch.from_numpy(np.asarray(i, dtype=np.int64)).to(device))


class _Kernel:
    """What :class:`HostKernel` and :class:`TorchKernel` share: the Newton step's solve with their kernel, its
    landmark factor ``L`` (N x r) and ``Q`` (:func:`_pair_products` of L), all set by ``set_gamma``."""

    ops: _Arrays
    L: Any
    Q: Any

    def matmul(self, P):
        raise NotImplementedError

    core: int = 0

    def block(self, I):
        """The m blocks K[I_k, I_k] (m, s, s) of the index rows I_k (I: m x s)."""
        return self.K[I[:, :, None], I[:, None, :]]

    def pcg(self, r, beta: np.ndarray, W, M, D, rtol: np.ndarray, start=None):
        """:func:`_projected_pcg` with this kernel and :class:`_Preconditioner`: (x, y on the host, K x)."""
        return _projected_pcg(r, beta, M, D, rtol, _Preconditioner(self, W, D), self.matmul, self.ops, start)


class HostKernel(_Kernel):
    """K = exp(-gamma D2) of one exact training set in NumPy: its products K P, columns and the block conjugate
    gradients (:meth:`pcg`). :class:`TorchKernel` is the same on a PyTorch device."""

    ops = _NUMPY

    def __init__(self, D2: np.ndarray, landmarks: np.ndarray) -> None:
        self.D2 = D2
        self.N = D2.shape[0]
        self.landmarks = landmarks
        self.products = 0  # columns multiplied by K (the unit of cost: 2 N^2 flops each)
        self.gamma = math.nan
        self.K = np.empty((self.N, self.N))
        self._pairs = np.empty((self.N, landmarks.size * (landmarks.size + 1) // 2))

    def on_stream(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def set_gamma(self, gamma: float) -> None:
        if gamma != self.gamma:
            np.multiply(self.D2, -gamma, out=self.K)
            np.exp(self.K, out=self.K)
            self.L = _nystrom(self.K[:, self.landmarks], self.landmarks)
            self.Q = _pair_products(self.L, self._pairs)
            self.gamma = gamma

    def columns(self, idx: np.ndarray) -> np.ndarray:
        """K[:, idx] (N, len(idx))."""
        return self.K[:, idx]

    def matmul(self, P: np.ndarray) -> np.ndarray:
        self.products += P.shape[1]
        # K symmetric: K P = (P' K)', which OpenBLAS computes 1.2 - 2 times faster for the narrow P of the conjugate
        # gradients (docs/ireos.md, *The exact index on large data*)
        return np.ascontiguousarray((P.T @ self.K).T)


def _pair_products(L, out):
    """The products L_a * L_b of L's column pairs a <= b (N x r (r + 1) / 2), so that the m matrices L' W_k L are one
    matrix product (:func:`_woodbury_inverses`); written into the first columns of ``out`` (N x at least that: one
    buffer per kernel, not hundreds of MB of fresh pages per gamma)."""
    r = L.shape[1]
    Q = out[:, :r * (r + 1) // 2]
    at = 0
    for a in range(r):  # in np.triu_indices(r)'s order
        Q[:, at:at + r - a] = L[:, a:a + 1] * L[:, a:]
        at += r - a
    return Q


def _woodbury_inverses(Q, W, r: int, ops: _Arrays, extra=None):
    """The m inverses of I + L' W_k L (+ ``extra`` (m, r, r)), the columns W_k of W; ``Q``: :func:`_pair_products`
    of L. One product Q' W (BLAS 3, half the flops of m products L' (W_k L)) gives their upper triangles."""
    m = W.shape[1]
    i, j = (ops.index(x) for x in np.triu_indices(r))
    upper = (Q.T @ W).T
    F = ops.zeros((m, r, r)) if extra is None else extra
    F[:, i, j] += upper
    F[:, j, i] = F[:, i, j]
    d = ops.arange(r)
    F[:, d, d] += 1.0
    return ops.inv(F)


class _Preconditioner:
    """M^-1 of one Newton step's m systems (K_nn + D_k) x = g (W_k = 1/D_k, 0 where masked):

        M_k = D_k + L L' + E_k (K - L L')_{S_k S_k} E_k',

    the Nystrom approximation L L' (:func:`_nystrom`) made exact on the block of the s = ``kernel.core`` objects
    S_k of largest Newton weight W_k (E_k: their columns of the identity; :class:`PinnedBlock` takes 2 % of N,
    ``CORE_FRACTION``). Few rows weigh in the system: an object the classifier is sure of has D = 1 / (c p (1 - p))
    >> 1 and a diagonal-dominant row (at Wilt's gamma_max 1 % of the objects have D < 100). Where the kernel is
    local (large gamma) the 100 landmarks capture little of K (at Wilt's gamma_max 37 % of its trace), and the
    block holds what matters: products K x per classifier halved on Wilt, Annthyroid and PenDigits (docs/ireos.md,
    *The exact index on large data*).

    With T_k = D_k + E_k R_SS E_k' (R = K - L L': diagonal off S_k, the s x s block B_k = R_SS + D_S on it),
    M_k^-1 = T_k^-1 - T_k^-1 L (I + L' T_k^-1 L)^-1 L' T_k^-1 (Woodbury), T_k^-1 g = W'_k g + E_k B_k^-1 g_S with
    W'_k = W_k zeroed on S_k; L' T_k^-1 L = L' W'_k L + L_S' B_k^-1 L_S. Per object and Newton step that costs the
    inverse of B_k (~2 s^3 flops) and of one r x r matrix, B_k^-1 L_S (2 s^2 r) and L_S' B_k^-1 L_S (2 s r^2), on
    top of L' W'_k L (N r^2, as without the block): s grows with N because the products it saves cost 2 N^2
    each. It must be rebuilt every step (the weights move by orders of magnitude: the previous step's
    preconditioner took 6x the products on Wilt). ``take(keep)`` keeps the columns ``keep``."""

    def __init__(self, kernel: _Kernel, W, D) -> None:
        ops = self.ops = kernel.ops
        self.L = L = kernel.L
        N, m = W.shape
        s = min(kernel.core, N - 1)
        r = L.shape[1]
        if s <= 0:
            self.I = None
            self.W = W
            self.Finv = _woodbury_inverses(kernel.Q, W, r, ops)
            return
        I = ops.top_rows(W, s)  # (s, m): the masked coordinate (W = 0) is never among them
        self.W = W * 1.0
        ops.put_rows(self.W, I, ops.zeros((s, m)))
        It = I.T
        LS = L[It]  # (m, s, r)
        B = kernel.block(It) - LS @ ops.mT(LS)
        d = ops.arange(s)
        B[:, d, d] += ops.take_rows(D, I).T
        Binv = ops.inv(B)
        self.BL = Binv @ LS  # B^-1 L_S (m, s, r)
        self.I, self.Binv = I, Binv
        self.Finv = _woodbury_inverses(kernel.Q, self.W, r, ops, ops.mT(LS) @ self.BL)

    def _t_inverse(self, G):
        """T^-1 G (N x m)."""
        Z = self.W * G
        if self.I is not None:
            GS = self.ops.take_rows(G, self.I).T[:, :, None]  # (m, s, 1)
            self.ops.put_rows(Z, self.I, (self.Binv @ GS)[:, :, 0].T)
        return Z

    def __call__(self, G):
        Z = self._t_inverse(G)
        V = (self.Finv @ (self.L.T @ Z).T[:, :, None])[:, :, 0]  # (m, r)
        Z -= self.W * (self.L @ V.T)
        if self.I is not None:
            SV = (self.BL @ V[:, :, None])[:, :, 0].T  # (s, m): E_S B^-1 L_S v
            self.ops.put_rows(Z, self.I, self.ops.take_rows(Z, self.I) - SV)
        return Z

    def take(self, keep) -> _Preconditioner:
        out = object.__new__(_Preconditioner)
        out.ops, out.L, out.W, out.Finv = self.ops, self.L, self.W[:, keep], self.Finv[keep]
        out.I = None if self.I is None else self.I[:, keep]
        if out.I is not None:
            out.Binv, out.BL = self.Binv[keep], self.BL[keep]
        return out


def _projected_pcg(r, beta, M, D, rtol, prec: _Preconditioner, matmul, ops: _Arrays, start=None):
    """Solve the Newton step's saddle-point system, one per column k (masked: x = 0 where M = 0),

        (K_nn + D_k) x_k + 1 y_k = r_k,    1' x_k = beta_k,

    by preconditioned conjugate gradients projected onto 1' x = beta, with the residual update (Gould, Hribar &
    Nocedal 2001): one Krylov sequence per classifier instead of the two systems (K_nn + D) v = 1, (K_nn + D) u = r
    that eliminating y needs, so half the products. ``prec`` applies the preconditioner P^-1
    (:class:`_Preconditioner`), projected in its own inner product: z = P^-1 (g - 1 lambda), lambda = 1' P^-1 g /
    1' P^-1 1, which also shifts the residual g by 1 lambda and so accumulates y. The start is ``start`` = (x0,
    K x0) if given (1' x0 = beta; its arrays are updated in place), else x0 = beta P^-1 1 / 1' P^-1 1 (one product
    more). ``rtol`` (m,) on the host bounds the projected residual relative to the start's. Returns (x, y on the
    host, K x): the products K p of the iterations add up to K x, so the Newton step needs no further product. The
    columns still iterating are kept together (compacted when one converges), so an iteration gathers nothing.

    References: Gould, N. I. M., Hribar, M. E. & Nocedal, J. (2001). On the solution of equality constrained
    quadratic programming problems arising in optimization. SIAM J. Sci. Comput. 23(4), 1376-1395."""
    m = r.shape[1]
    h = prec(M)  # P^-1 1 (0 where masked)
    sh = ops.colsum(h)
    if start is None:
        X = h * (ops.dev(beta) / sh)
        KX = matmul(X)
    else:
        X, KX = start
    G = KX * M + D * X - r
    U = prec(G)
    lam = ops.colsum(U) / sh
    U -= lam * h
    G -= lam * M
    Y = -lam
    gz = ops.coldot(G, U)
    tol = ops.dev(rtol) * ops.colnorm(G)
    P = -U
    act = ops.arange(m)  # the columns of the working arrays below
    Xw, KXw, Yw, Gw, Pw, Mw, Dw, hw, shw, pw = X, KX, Y, G, P, M, D, h, sh, prec
    for it in range(CG_MAXIT + 1):
        keep = ops.colnorm(Gw) > tol
        if not bool(keep.all()):
            done = ~keep
            X[:, act[done]], KX[:, act[done]], Y[act[done]] = Xw[:, done], KXw[:, done], Yw[done]
            if not bool(keep.any()):
                break
            act, tol, gz, Yw, shw, pw = act[keep], tol[keep], gz[keep], Yw[keep], shw[keep], pw.take(keep)
            Xw, KXw, Gw, Pw, Mw, Dw, hw = (A[:, keep] for A in (Xw, KXw, Gw, Pw, Mw, Dw, hw))
        if it == CG_MAXIT:  # (not converged: what it has)
            X[:, act], KX[:, act], Y[act] = Xw, KXw, Yw
            break
        KP = matmul(Pw)
        AP = KP * Mw + Dw * Pw
        step = gz / ops.coldot(Pw, AP)
        Xw += step * Pw
        KXw += step * KP
        Gw += step * AP
        U = pw(Gw)
        lam = ops.colsum(U) / shw
        U -= lam * hw
        Gw -= lam * Mw
        Yw -= lam
        gz_new = ops.coldot(Gw, U)
        Pw *= gz_new / gz
        Pw -= U
        gz = gz_new
    return X, ops.host(Y), KX


def _nystrom(Cm: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
    """L with L L' the Nystrom approximation of K from its landmark columns Cm = K[:, landmarks]."""
    ew, ev = np.linalg.eigh(Cm[landmarks])
    keep = ew > 1e-10 * ew.max()
    return Cm @ (ev[:, keep] / np.sqrt(ew[keep]))


class TorchKernel(_Kernel):
    """:class:`HostKernel` on a PyTorch device (``device="cuda"``; PyTorch's CPU build runs the same code, which
    is how it is tested without a GPU): the kernel, its products, the conjugate gradients and the Newton steps'
    arrays of N rows live on the device, one CUDA stream per instance (:meth:`on_stream`; the chunks of a thread
    pool overlap). The same method, the same stop rules; the numbers agree with the host's to the conjugate
    gradients' tolerance, not in bits."""

    def __init__(self, X: np.ndarray, landmarks: np.ndarray, device: str) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None
        self.N = X.shape[0]
        self.landmarks = landmarks
        self.products = 0
        self.gamma = math.nan
        with self.on_stream():  # every array of this kernel made and used on its stream (no cross-stream reads)
            self.ops = _torch_arrays(torch, self.device)
            Xd = self.ops.dev(X)
            self.D2 = torch.empty((self.N, self.N), dtype=torch.float64, device=self.device)
            step = max(1, 4_000_000 // max(1, self.N * X.shape[1]))
            for lo in range(0, self.N, step):  # from differences: exact 0 for duplicates, as sqdist
                diff = Xd[lo:lo + step, None, :] - Xd[None, :, :]
                self.D2[lo:lo + step] = (diff * diff).sum(dim=2)
            self.K = torch.empty_like(self.D2)
            self._pairs = torch.empty((self.N, landmarks.size * (landmarks.size + 1) // 2), dtype=torch.float64,
                                      device=self.device)
            self._lm = self.ops.index(landmarks)

    def on_stream(self) -> contextlib.AbstractContextManager:
        return self.torch.cuda.stream(self.stream) if self.stream is not None else contextlib.nullcontext()

    def set_gamma(self, gamma: float) -> None:
        if gamma != self.gamma:
            with self.on_stream():
                self.torch.mul(self.D2, -gamma, out=self.K)
                self.torch.exp(self.K, out=self.K)
                self.L = self.ops.dev(_nystrom(self.ops.host(self.K[:, self._lm]), self.landmarks))
                self.Q = _pair_products(self.L, self._pairs)
            self.gamma = gamma

    def columns(self, idx: np.ndarray):
        """K[:, idx] (N, len(idx)) on the device."""
        return self.K[:, self.ops.index(idx)]

    def matmul(self, P):
        self.products += P.shape[1]
        return self.K @ P



class PinnedBlock:
    """B pinned classifiers on the exact training set (every object), one per object in ``objects``, with costs
    ``costs`` (B, N) in the objects' natural order (the positive's own entry is its cost C). The arrays of N rows
    live where the kernel does (``torch_device``: :class:`TorchKernel`; None: :class:`HostKernel`)."""

    def __init__(self, D2: np.ndarray | None, objects: np.ndarray, costs: np.ndarray, *, rank: int = RANK,
                 core: int | None = None, cg_tol: float = CG_TOL, seed: int = 0, X: np.ndarray | None = None,
                 torch_device: str | None = None) -> None:
        self.N = costs.shape[1]
        self.j = np.asarray(objects, dtype=np.int64)
        B = self.j.size
        cols = np.arange(B)
        mask = np.ones((self.N, B))
        mask[self.j, cols] = 0.0
        self.c_host = np.ascontiguousarray(costs.T, dtype=np.float64) * mask  # negatives' costs, 0 at the positive
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
        self.kernel.core = math.ceil(CORE_FRACTION * self.N) if core is None else core
        self.ops = ops = self.kernel.ops
        with self.kernel.on_stream():
            self.mask, self.c = ops.dev(mask), ops.dev(self.c_host)

    @property
    def products(self) -> int:
        """Columns multiplied by K (the unit of cost: 2 N^2 flops each)."""
        return self.kernel.products

    # ------------------------------------------------------------------------------------------- one gamma
    def _kernel(self, gamma: float) -> None:
        self.kernel.set_gamma(gamma)

    def _matmul(self, P):
        return self.kernel.matmul(P)

    def closed_form(self, cols: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
        """gamma = 0 (all decision values equal): p = S / sum of the negatives' costs, alpha = -c q,
        b = logit(q) - (A - S) (:func:`_klr._pinned_node`)."""
        q = self.S[cols] / self.c_host[:, cols].sum(axis=0)
        ops = self.ops
        return (-self.c[:, ops.index(cols)] * ops.dev(q), np.log(q / (1.0 - q)) - (self.A[cols] - self.S[cols]),
                q)

    def cold(self, gamma: float, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The diagonal start of :func:`_klr._pinned_diagonal_start` for the objects ``cols``: (alpha, b), on the
        host."""
        self._kernel(gamma)
        alpha = np.zeros((self.N, cols.size))
        b = np.empty(cols.size)
        Kj = self.ops.host(self.kernel.columns(self.j[cols]))  # K symmetric: column j is row j
        for k, col in enumerate(cols):
            j = self.j[col]
            a = np.empty(self.N)  # in _klr's order: the positive first (its cost is not read)
            b[k] = _klr._pinned_diagonal_start(np.delete(Kj[:, k], j), np.r_[0.0, np.delete(self.c_host[:, col], j)],
                                                self.A[col], self.S[col], a)
            alpha[:, k] = np.insert(-a[1:], j, 0.0)
        return alpha, b

    def solve(self, gamma: float, cols: np.ndarray, alpha, b: np.ndarray, alpha2=None, tol: float = _klr.TOL,
              maxit: int = _klr.MAXIT) -> tuple[Any, np.ndarray, np.ndarray]:
        """The pinned classifiers of objects ``cols`` at ``gamma`` from (alpha, b) (N x m, m), moved first to the
        best point of the span with ``alpha2`` (:func:`_klr._span_start`); returns (alpha, b, p): alpha where
        the kernel lives, b and p on the host."""
        self._kernel(gamma)
        ops = self.ops
        m = cols.size
        self.fits += m
        ic = ops.index(cols)
        mask, c = self.mask[:, ic], self.c[:, ic]
        A, S = self.A[cols], self.S[cols]
        o = self.kernel.columns(self.j[cols]) * ops.dev(A)  # the positive's pull A K_ij (o_j = A: K_jj = 1)
        alpha = ops.dev(alpha) * mask
        b = b.copy()
        # the starts in the span of the warm starts: per object, on the host (numba)
        y = -np.ones(self.N)
        c_h, o_h = ops.host(c), ops.host(o)
        if alpha2 is not None:
            alpha2 = ops.dev(alpha2) * mask
            KU = self._matmul(ops.cat([alpha, alpha2], 1))
            U = ops.host(KU)
            a_h, a2_h = ops.host(alpha), ops.host(alpha2)
            theta = np.empty((m, 2))
            for k in range(m):
                theta[k], b[k] = _klr._span_start(np.vstack([U[:, k], U[:, m + k]]), a_h[:, k], a2_h[:, k], b[k], y,
                                                  c_h[:, k], o_h[:, k], -S[k])
            t0, t1 = ops.dev(theta[:, 0]), ops.dev(theta[:, 1])
            alpha = t0 * alpha + t1 * alpha2
            Kalpha = t0 * KU[:, :m] + t1 * KU[:, m:]
        else:
            KU = self._matmul(alpha)
            U = ops.host(KU)
            a_h = ops.host(alpha)
            theta = np.empty((m, 2))
            for k in range(m):
                theta[k], b[k] = _klr._span_start(U[:, k][None], a_h[:, k], a_h[:, k][:0], b[k], y, c_h[:, k],
                                                  o_h[:, k], -S[k])
            alpha = alpha * ops.dev(theta[:, 0])
            Kalpha = KU * ops.dev(theta[:, 0])
        f = o + Kalpha + ops.dev(b)  # K alpha from the span's products, by linearity

        def objective(al, ff, bb, idx):
            ii = ops.index(idx)
            return (0.5 * ops.host(ops.coldot(al, ff - ops.dev(bb) - o[:, ii]))
                    + ops.host(ops.colsum(c[:, ii] * ops.log1pexp(ff))) - S[idx] * bb)

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
            ia = ops.index(active)
            al, ff, bb = alpha[:, ia], f[:, ia], b[active]
            ca, ma = c[:, ia], mask[:, ia]
            s = ops.sigmoid(ff)
            g = ca * s
            w = ops.maximum(ca * s * (1.0 - s), 1e-12 * ca)  # 1/D, 0 at the positive
            D = ops.inverse_where(w, ma > 0)
            ag = al + g
            # the Newton step (da, db): (K_nn + D) da + 1 db = -D (alpha + g), 1' (alpha + da) = -S
            sa = ops.host(ops.colsum(al))
            beta = -(sa + S[active])
            start = None
            if (sa != 0).all():  # x0 = alpha beta / 1' alpha, whose K x0 is known: K alpha = f - o - b
                scale = ops.dev(beta / sa)
                start = (al * scale, (ff - o[:, ia] - ops.dev(bb)) * scale)
            da, db, Kd = self.kernel.pcg(-D * ag, beta, w, ma, D, eta[active], start)
            dec = np.maximum(0.0, -ops.host(ops.coldot(Kd * ma, ag)) - db * (ops.host(ops.colsum(g)) - S[active]))
            t = np.ones(active.size)
            accepted = np.zeros(active.size, bool)
            new = obj[active].copy()
            trying = np.arange(active.size)
            for _ls in range(60):
                tt = t[trying]
                it = ops.index(trying)
                an = al[:, it] + ops.dev(tt) * da[:, it]
                fn = ff[:, it] + ops.dev(tt) * (Kd[:, it] + ops.dev(db[trying]))
                bn = bb[trying] + tt * db[trying]
                val = objective(an, fn, bn, active[trying])
                ok = val <= obj[active[trying]] - 0.25 * tt * dec[trying]
                idx = trying[ok]
                accepted[idx] = True
                new[idx] = val[ok]
                gl, iok = ops.index(active[idx]), ops.index(np.flatnonzero(ok))
                alpha[:, gl], f[:, gl] = an[:, iok], fn[:, iok]
                b[active[idx]] = bn[ok]
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
        p = ops.host(ops.sigmoid(f[ops.index(self.j[cols]), ops.index(idx_all)]))
        return alpha, b, p


def curves(X: np.ndarray, objects: np.ndarray, costs: np.ndarray, mode: int, gammas: np.ndarray, gamma_max: float,
           tol: float, max_depth: int, min_depth: int, *, D2: np.ndarray | None = None, rank: int = RANK,
           core: int | None = None, cg_tol: float = CG_TOL,
           torch_device: str | None = None) -> tuple[np.ndarray, int, int]:
    """:func:`_klr.curves_batch` (pinned, exact training set) for the objects ``objects`` with costs (B, N) in
    natural order: mode 0 the adaptive Simpson area on [0, gamma_max], 1 p at the increasing ``gammas``. Returns
    (out, fits, products). ``torch_device``: the arrays of N rows, the kernel's products and the conjugate gradients
    in PyTorch on that device (:class:`TorchKernel`; None: NumPy on the host)."""
    blk = PinnedBlock(D2, objects, costs, rank=rank, core=core, cg_tol=cg_tol, X=X, torch_device=torch_device)
    with blk.kernel.on_stream():
        return _curves(blk, mode, gammas, gamma_max, tol, max_depth, min_depth)


def _curves(blk: PinnedBlock, mode: int, gammas: np.ndarray, gamma_max: float, tol: float, max_depth: int,
            min_depth: int) -> tuple[np.ndarray, int, int]:
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
                span = blk.ops.stack_cols([sol(k, s)[0] for k, _, s in rows])
                al, bs, p = blk.solve(gamma_max * (node / top), ks, blk.ops.stack_cols([w[0] for w in warm]),
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
