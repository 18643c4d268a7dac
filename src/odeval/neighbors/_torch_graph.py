"""The exact kNN graph on a GPU with PyTorch (``knn_graph(..., device="cuda")``; private).

The same graph as the CPU search (:mod:`odeval.neighbors.graph`), bit for bit: rows sorted by (key, index), the
query point excluded by index, duplicates at distance 0, every object tied at the k_max-key included, Euclidean
keys ``Σ (x_j − y_j)²`` summed in attribute order and distances ``sqrt(key)``. Three steps per block of query
rows:

1. **Candidates** (float32, fast): the ``m`` objects with the smallest float32 key estimate ``A(x, y)``, tile by
   tile (query rows × reference objects), a running top-``m`` per row (``torch.topk``). Euclidean: one GEMM of
   the centred, power-of-two-scaled data augmented as ``[−2x, ‖x‖², 1] · [y, 1, ‖y‖²]ᵀ``; Manhattan and
   Chebyshev: ``torch.cdist`` (direct differences). The query point itself is masked out.
2. **Exact keys** (float64): for the ``m`` candidates, by direct differences, one attribute after the other,
   each operation a separate elementwise kernel (``t = x_j − y_j``; ``t * t``; ``acc + t²``): the same IEEE
   operations in the same order as the numba kernel, so the keys are the CPU keys bit for bit (no reduction
   whose order a GPU library chooses, no fused multiply-add). Sorted by (key, index) with a stable sort; the
   final ``sqrt`` is taken on the host by the graph assembly shared with the CPU search.
3. **Certificate**: a row is accepted only if no non-candidate can have a key ≤ its k_max-th key. With
   ``a_m`` = the largest float32 estimate among the candidates (``torch.topk``: every non-candidate has
   ``A ≥ a_m``) and ``E`` a rigorous bound of ``|A − true key|`` (see :func:`_error_bound`), every non-candidate
   has true key ≥ ``a_m − E``, hence float64 key ≥ ``(a_m − E)(1 − δ)`` (δ covers the float64 roundings);
   the row is exact and tie-complete when that is ``>`` the k_max-th key. Rows that fail (ties or duplicates
   beyond the candidates, or a float32 gap too small) are redone with 4× the candidates up to
   :data:`_MAX_CANDIDATES`, then from their full float64 key rows on the device — never silently
   approximated.

The objects are first put in a k-d order (:func:`_spatial_order`: halving ranges along their widest attribute
down to leaves of ≤ 256 objects); query blocks are consecutive positions of that order, and the threshold
strategy's full pass skips every leaf whose bounding box is provably farther from the block's box than τ
(:meth:`_Prepared.needed_leaves`), so that clustered data costs less than N² estimates. Skipping changes
nothing: a skipped object could not have been a candidate.

The same code runs on PyTorch's CPU build (``torch_device="cpu"``), which is how CI tests it without a GPU.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np

from odeval.neighbors._metrics import Metric

__all__ = ["GPU_METRICS", "DeviceError", "check_device", "device_graph_parts", "stats_line", "torch_graph_parts"]

#: Metrics of the device search: the three whose keys the CPU computes with elementwise IEEE operations only.
GPU_METRICS = ("euclidean", "cityblock", "chebyshev")
#: Largest candidate count before a row is computed from its full key row (float64, all objects).
_MAX_CANDIDATES = 4096
#: float32 entries of one (query rows × reference objects) tile; halved on every out-of-memory retry.
_CUDA_TILE_ENTRIES = 2**28  # 1 GiB of float32
_CPU_TILE_ENTRIES = 2**22
_MIN_TILE_ENTRIES = 2**14
#: Reference sample of the threshold strategy (:func:`_threshold_candidates`), and the objects per candidate its
#: threshold aims at below it (≈ 16·m per row).
_SAMPLE_MIN = 2**15
_HITS_PER_CANDIDATE = 16
#: Objects per leaf of the spatial order (:func:`_spatial_order`) at most; smaller data get ≈ N/64 per leaf.
_LEAF_ROWS = 256
#: Rows of a block whose τ exceeds this multiple of the block's median τ take a pass of their own.
_WIDE_TAU = 2.0
#: Default candidate strategy of :func:`torch_graph_parts` ("auto", "topk", "threshold"; benchmarks switch it).
STRATEGY = "auto"
_U32 = 2.0**-24  # unit roundoff of float32


class DeviceError(ValueError):
    """The device cannot compute the graph: no CUDA device, out of its memory, or an unsupported metric."""


def _import_torch(device: str):
    try:
        import torch
    except ImportError as exc:
        raise ImportError(f"device={device!r} needs PyTorch: pip install 'odeval[gpu]' (or use device='cpu')"
                          ) from exc
    return torch


def check_device(device: str, cpu: str = "numba search") -> str:
    """The torch device string of a device other than "cpu" (``knn_graph``, and the exact IREOS's block solver,
    whose CPU path ``cpu`` names in the error): "cuda" or "cuda:N" with a CUDA device present, else a one-line
    error (the CPU path is never substituted silently)."""
    if not isinstance(device, str) or not (device == "cuda" or device.startswith("cuda:")):
        raise ValueError(f"unknown device {device!r}; use 'cpu' ({cpu}) or 'cuda' / 'cuda:N' (PyTorch)")
    torch = _import_torch(device)
    if not torch.cuda.is_available():
        raise DeviceError(f"device={device!r}: PyTorch {torch.__version__} sees no CUDA device "
                          "(torch.cuda.is_available() is False); use device='cpu'")
    if ":" in device:
        n = torch.cuda.device_count()
        idx = device.split(":", 1)[1]
        if not idx.isdigit() or int(idx) >= n:
            raise DeviceError(f"device={device!r}: there are {n} CUDA device(s) (cuda:0..cuda:{n - 1})")
    return device


@contextlib.contextmanager
def _ieee_float32(torch):
    """float32 matrix products in IEEE single precision (no TF32 / bf16 shortcuts, whatever the caller set):
    the candidate error bound assumes the unit roundoff 2⁻²⁴."""
    backends = [b for b in (torch.backends.cuda.matmul, getattr(torch.backends.mkldnn, "matmul", None))
                if b is not None and hasattr(b, "fp32_precision")]
    saved = [b.fp32_precision for b in backends]
    saved_global = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    for b in backends:
        b.fp32_precision = "ieee"
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved_global)
        for b, v in zip(backends, saved, strict=True):
            b.fp32_precision = v


def _norms(C: np.ndarray, name: str) -> np.ndarray:
    """Row norms of the centred data in the metric's own norm (L2, L1, L∞), float64."""
    if name == "euclidean":
        return np.sqrt(np.einsum("ij,ij->i", C, C))
    if name == "cityblock":
        return np.abs(C).sum(axis=1)
    return np.abs(C).max(axis=1)


def _error_bound(name: str, d: int, P):
    """Bound of |A − true key| for the float32 estimate A, with ``P = ‖x‖ + ‖y‖`` in the metric's norm of the
    centred, scaled data (ndarray or float; the per-row bound uses ``P = ‖x‖ + max ‖y‖``).

    With u = 2⁻²⁴ and η ≤ u(1 + 2⁻²⁰) the relative error of the float64 → float32 conversion of the centred,
    scaled coordinates (its absolute error, also for float32 underflow, is below 2⁻¹²⁶, negligible next to the
    bounds here since ``max ‖y‖ ≥ 1/2`` after scaling):

    * Euclidean: moving x, y to float32 changes ‖x − y‖² by at most (2η + η²)P²; the GEMM evaluates a dot
      product of d + 2 terms whose absolute values sum to ≤ (1 + u)(‖x̃‖ + ‖ỹ‖)², so its error is ≤
      γ_{d+2}(1 + u)²P² (any summation order, with or without FMA), and the float32 norms add ≤ u·P². In all
      ≤ (d + 5)·u·P²·(1 + 10⁻⁵); we use (d + 6)·2u·P² (a factor ≥ 2 to spare).
    * Manhattan: conversion ≤ η·P, differences and the sum of d non-negative terms ≤ γ_d(1 + η)P; we use
      (d + 4)·2u·P.
    * Chebyshev: conversion ≤ η·P, the rounded differences ≤ u(1 + η)P (the maximum is exact); we use 4·2u·P.
    """
    if name == "euclidean":
        return (d + 6) * 2 * _U32 * P * P
    if name == "cityblock":
        return (d + 4) * 2 * _U32 * P
    return 4 * 2 * _U32 * P


def _key_shrink(d: int) -> float:
    """Factor δ' < 1 with float64 key ≥ δ' × true key, and the float64 roundings of the certificate covered:
    keys Σ fl(x_j − y_j)² carry a relative error ≤ γ_{d+2} (double precision); we use (d + 8)·2⁻⁵² + 2⁻⁴⁰."""
    return 1.0 - (d + 8) * 2.0**-52 - 2.0**-40


class _Prepared:
    """The data on the device: float64 coordinates by attribute (exact keys), and the float32 candidate space
    (centred, scaled by a power of two so that the largest norm lies in [1/2, 1))."""

    def __init__(self, torch, X: np.ndarray, spec: Metric, device):
        self.torch, self.device, self.name = torch, device, spec.name
        self.n, self.d = X.shape
        self.XT = torch.from_numpy(np.ascontiguousarray(X.T)).to(device)  # (d, N) float64: attribute j = XT[j]
        C = X - X.mean(axis=0)
        norms = _norms(C, spec.name)
        r_max = float(norms.max())
        # power-of-two scale: exact in float64, keeps float32 far from overflow and the bound tidy
        e = 0 if r_max == 0 else math.frexp(r_max)[1]
        self.scale = math.ldexp(1.0, -e)
        C *= self.scale
        norms *= self.scale
        # keys of the scaled data are s² (Euclidean) or s times the keys: undo it exactly, by a power of two
        self.inv_scale_key = math.ldexp(1.0, 2 * e if spec.name == "euclidean" else e)
        self.r_max = float(norms.max())
        self.row_bound = torch.from_numpy(_error_bound(spec.name, self.d, norms + self.r_max)).to(device)
        # the spatial order: positions p (rows of Q, R, Cp) hold objects order[p]; leaves are position ranges
        C64 = torch.from_numpy(C).to(device)
        self.order, self.leaf_bounds = _spatial_order(torch, C64, _leaf_rows(self.n))
        self.Cp = C64[self.order]
        del C64
        self.row_bound_pos = self.row_bound[self.order]
        self.leaf_of = leaf_of = torch.repeat_interleave(torch.arange(len(self.leaf_bounds) - 1, device=device),
                                          torch.from_numpy(np.diff(self.leaf_bounds)).to(device))
        shape = (len(self.leaf_bounds) - 1, self.d)
        at = leaf_of[:, None].expand(-1, self.d)
        self.leaf_lo = torch.full(shape, math.inf, dtype=torch.float64, device=device).scatter_reduce(
            0, at, self.Cp, "amin")
        self.leaf_hi = torch.full(shape, -math.inf, dtype=torch.float64, device=device).scatter_reduce(
            0, at, self.Cp, "amax")
        C32 = C.astype(np.float32)
        if spec.name == "euclidean":
            sq = np.einsum("ij,ij->i", C32.astype(np.float64), C32.astype(np.float64)).astype(np.float32)
            one = np.ones((self.n, 1), np.float32)
            self.Q = torch.from_numpy(np.hstack([-2 * C32, sq[:, None], one])).to(device)[self.order]
            self.R = torch.from_numpy(np.hstack([C32, one, sq[:, None]])).to(device)[self.order]
        else:
            self.Q = self.R = torch.from_numpy(C32).to(device)[self.order]
        self.shrink = _key_shrink(self.d)
        self._sample = None
        self.scanned = self.pairs = 0  # (query, reference) pairs of the threshold pass: estimated / in all

    def estimates(self, Qq: Any, R: Any):
        """float32 key estimates of the query rows ``Qq = self.Q[p]`` to the reference rows ``R`` (rows of
        ``self.R``; both by position)."""
        if self.name == "euclidean":
            return Qq @ R.T
        p = 1.0 if self.name == "cityblock" else float("inf")
        return self.torch.cdist(Qq, R, p=p)

    def sample(self, m: int):
        """(R rows, the sample position of every position or −1) of the threshold strategy's reference sample:
        2¹⁵ positions (at least 2m + 2, at most N), drawn without replacement with a fixed seed, in order."""
        if self._sample is None or self._sample[2] < m:
            torch = self.torch
            size = min(self.n, max(_SAMPLE_MIN, 2 * m + 2))
            rng = np.random.default_rng(0)
            chosen = np.sort(rng.choice(self.n, size=size, replace=False)).astype(np.int64)
            pos = np.full(self.n, -1, dtype=np.int64)
            pos[chosen] = np.arange(size)
            self._sample = (self.R[torch.from_numpy(chosen).to(self.device)], torch.from_numpy(pos).to(self.device), m)
        return self._sample[0], self._sample[1]

    def needed_leaves(self, qp: Any, tau: Any):
        """The leaves (bool, one per leaf) that may hold an object with estimate ≤ ``tau`` for some query position
        of ``qp``: a leaf is skipped only if the distance between the bounding box of the query rows and the
        leaf's bounding box (float64, in the metric's key: Σ gap², Σ gap or max gap), shrunk by
        :func:`_key_shrink`, minus the largest estimate error bound of the rows, exceeds the largest τ. Every
        estimate of a query row x to an object y of the leaf is ≥ key(x, y) − E(x) ≥ that bound, so no skipped
        object is ≤ τ(x): the candidates are those of the full scan."""
        torch = self.torch
        Cq = self.Cp[qp]
        q_lo, q_hi = Cq.amin(dim=0), Cq.amax(dim=0)
        gap = (self.leaf_lo - q_hi).clamp_(min=0) + (q_lo - self.leaf_hi).clamp_(min=0)  # (leaves, d), one ≠ 0
        if self.name == "euclidean":
            lower = (gap * gap).sum(dim=1)
        elif self.name == "cityblock":
            lower = gap.sum(dim=1)
        else:
            lower = gap.amax(dim=1)
        lower = lower * self.shrink - self.row_bound_pos[qp].max()
        return lower <= tau.max().to(torch.float64)

    def exact_keys(self, q: Any, idx: Any | None):
        """float64 keys of query objects ``q`` (B,) to objects ``idx`` (B, m), or to all objects (idx None):
        the numba kernel's operations in its order, one elementwise kernel each (t = x_j − y_j, then t·t,
        then acc + t·t)."""
        torch = self.torch
        shape = (q.shape[0], self.n) if idx is None else idx.shape
        acc = torch.zeros(shape, dtype=torch.float64, device=self.device)
        for j in range(self.d):
            col = self.XT[j]
            t = col[q][:, None] - (col[None, :] if idx is None else col[idx])
            if self.name == "euclidean":
                acc = acc + t * t
            elif self.name == "cityblock":
                acc = acc + torch.abs(t)
            else:
                acc = torch.maximum(acc, torch.abs(t))
        return acc


def _leaf_rows(n: int) -> int:
    """Objects per leaf: :data:`_LEAF_ROWS`, or ≈ N/64 (at least 32) for smaller data."""
    return max(32, min(_LEAF_ROWS, n // 64))


def _spatial_order(torch, C, leaf: int) -> tuple[Any, np.ndarray]:
    """A k-d order of the objects: (order (N,) on the device, leaf boundaries (T + 1,) on the host). Each range of
    more than ``leaf`` positions is sorted (stably) along its attribute of largest spread and halved; the leaves
    come out in position order. The graph does not depend on it — it only makes the leaves' bounding boxes small
    (:meth:`_Prepared.needed_leaves`)."""
    n = C.shape[0]
    order = torch.arange(n, device=C.device)
    bounds, todo = [0], [(0, n)]
    while todo:
        lo, hi = todo.pop()
        if hi - lo <= leaf:
            bounds.append(hi)
            continue
        seg = order[lo:hi]
        vals = C[seg]
        dim = torch.argmax(vals.amax(dim=0) - vals.amin(dim=0)).view(1)
        order[lo:hi] = seg[torch.argsort(vals.index_select(1, dim)[:, 0], stable=True)]
        mid = (lo + hi) // 2
        todo += [(mid, hi), (lo, mid)]  # the left half first: leaves in position order
    return order, np.asarray(bounds, dtype=np.int64)


def _mask_self(A, rows, q, r0: int, r1: int) -> None:
    """Set the estimates of the query objects ``q`` to themselves (columns r0..r1−1 of A) to +inf."""
    own = (q >= r0) & (q < r1)
    A[rows[own], q[own] - r0] = float("inf")


def _topk_candidates(P: _Prepared, q, m: int, tile: int):
    """The m smallest float32 estimates of the query positions ``q`` over all objects but themselves, reference
    tile by reference tile (a running ``torch.topk``): (bound, positions (B, m)), every non-candidate having an
    estimate ≥ bound (the largest selected one)."""
    torch = P.torch
    b = q.shape[0]
    width = max(m, min(P.n, tile // max(b, 1)))
    best_v = best_i = None
    rows = torch.arange(b, device=P.device)
    Qq = P.Q[q]
    for r0 in range(0, P.n, width):
        r1 = min(P.n, r0 + width)
        A = P.estimates(Qq, P.R[r0:r1])
        _mask_self(A, rows, q, r0, r1)
        v, i = torch.topk(A, min(m, r1 - r0), dim=1, largest=False, sorted=False)
        del A
        i = i + r0
        if best_v is None:
            best_v, best_i = v, i
        else:
            v = torch.cat([best_v, v], dim=1)
            i = torch.cat([best_i, i], dim=1)
            if v.shape[1] > m:
                v, pos = torch.topk(v, m, dim=1, largest=False, sorted=False)
                i = torch.gather(i, 1, pos)
            best_v, best_i = v, i
    return best_v.max(dim=1).values, best_i


def _threshold_candidates(P: _Prepared, q, m: int, tile: int, max_pairs: int):
    """As :func:`_topk_candidates`, without a top-k over every tile: a threshold τ per row — the j-th smallest
    estimate over a seeded sample of S = 2¹⁵ objects, j = min(m, ⌈16·m·S/N⌉), so that ≈ max(16·m, m·N/S)
    objects per row fall below it (the j/S quantile of the row's estimates) — then every object with estimate
    ≤ τ (one comparison and ``nonzero`` per tile, no top-k; only in the leaves :meth:`_Prepared.needed_leaves`
    keeps), then the m smallest of those. ``q`` and the candidates are positions of the spatial order.
    The bound is their m-th estimate, or τ for a row with fewer than m (every non-candidate is > τ; the padding
    entries point at the query itself and are dropped). None when the rows' objects below τ exceed ``max_pairs``
    (ties, duplicates: the caller takes the top-k strategy)."""
    torch = P.torch
    b = q.shape[0]
    width = max(m, min(P.n, tile // max(b, 1)))
    rows = torch.arange(b, device=P.device)
    Qq = P.Q[q]
    R_sample, pos = P.sample(m)
    size = R_sample.shape[0]
    j = max(1, min(m, math.ceil(_HITS_PER_CANDIDATE * m * size / P.n)))
    best = None
    own_pos = pos[q]
    for s0 in range(0, size, width):
        s1 = min(size, s0 + width)
        A = P.estimates(Qq, R_sample[s0:s1])
        _mask_self(A, rows, own_pos, s0, s1)  # own_pos = -1 (not in the sample) never falls in the tile
        v = torch.topk(A, min(j, s1 - s0), dim=1, largest=False, sorted=False).values
        best = v if best is None else torch.topk(torch.cat([best, v], dim=1), min(j, best.shape[1] + v.shape[1]),
                                                 dim=1, largest=False, sorted=False).values
    tau = best.max(dim=1).values
    P.pairs += b * P.n
    # rows whose τ is far above the block's typical one (outliers, sparse regions) reach far: they get their
    # own pass, so that they do not widen the leaves the other rows must estimate
    wide = tau > _WIDE_TAU * tau.median()
    hit_rows, hit_cols, hit_vals, total = [], [], [], 0
    for g in (torch.nonzero(~wide)[:, 0], torch.nonzero(wide)[:, 0]):
        if not g.numel():
            continue
        qg, tau_g, Qg = q[g], tau[g], Qq[g]
        cols = torch.nonzero(P.needed_leaves(qg, tau_g)[P.leaf_of])[:, 0]  # positions of the kept leaves
        P.scanned += int(g.numel()) * int(cols.numel())
        width_g = max(m, min(P.n, tile // int(g.numel())))
        rows_g = torch.arange(g.numel(), device=P.device)
        for c0 in range(0, int(cols.numel()), width_g):
            cc = cols[c0:c0 + width_g]
            A = P.estimates(Qg, P.R[cc])
            own = torch.searchsorted(cc, qg).clamp_(max=cc.numel() - 1)
            mine = cc[own] == qg  # the query object lies in this chunk: its own estimate is masked
            A[rows_g[mine], own[mine]] = float("inf")
            r, c = torch.nonzero(A <= tau_g[:, None], as_tuple=True)
            total += int(r.numel())
            if total > max_pairs:
                return None
            hit_rows.append(g[r])
            hit_cols.append(cc[c])
            hit_vals.append(A[r, c])
            del A
    if not hit_rows:  # cannot happen (the sampled objects at or below τ are found again); cat needs one piece
        hit_rows, hit_cols, hit_vals = [rows[:0]], [rows[:0]], [tau[:0]]
    r, c, v = torch.cat(hit_rows), torch.cat(hit_cols), torch.cat(hit_vals)
    order = torch.argsort(v, stable=True)
    r, c, v = r[order], c[order], v[order]
    order = torch.argsort(r, stable=True)  # by row, estimates ascending within a row
    r, c, v = r[order], c[order], v[order]
    counts = torch.bincount(r, minlength=b)
    starts = torch.cumsum(counts, 0) - counts
    at = torch.arange(r.numel(), device=P.device) - starts[r]
    keep = at < m
    est = torch.full((b, m), float("inf"), dtype=v.dtype, device=P.device)
    idx = q[:, None].repeat(1, m)
    est[r[keep], at[keep]] = v[keep]
    idx[r[keep], at[keep]] = c[keep]
    bound = torch.where(counts >= m, est[:, m - 1], tau)
    return bound, idx


def _sort_by_key_then_index(torch, keys, idx):
    """Rows sorted by (key, index): indices ascending first, then a stable sort on the keys."""
    idx, pos = torch.sort(idx, dim=1)
    keys = torch.gather(keys, 1, pos)
    keys, pos = torch.sort(keys, dim=1, stable=True)
    return keys, torch.gather(idx, 1, pos)


def _candidate_rows(P: _Prepared, qp, k_max: int, m: int, tile: int, threshold: bool = False):
    """Exact rows of the query positions ``qp`` from m candidates (:func:`_threshold_candidates` if
    ``threshold`` and it succeeds, else :func:`_topk_candidates`): (keys, object indices, counts, certified) on
    the device, keys/indices (B, m) sorted, entries beyond the count padded with inf / −1."""
    torch = P.torch
    got = _threshold_candidates(P, qp, m, tile, max_pairs=max(tile // 4, 64 * qp.shape[0])) if threshold else None
    bound, idx = got if got is not None else _topk_candidates(P, qp, m, tile)
    q, idx = P.order[qp], P.order[idx]  # positions → object indices
    keys = P.exact_keys(q, idx)
    keys[idx == q[:, None]] = float("inf")  # never a candidate (masked above); kept for safety
    keys, idx = _sort_by_key_then_index(torch, keys, idx)
    kth = keys[:, k_max - 1]
    counts = (keys <= kth[:, None]).sum(dim=1)
    if m >= P.n - 1:  # every other object is a candidate
        certified = torch.ones_like(kth, dtype=torch.bool)
    else:
        a_m = bound.to(torch.float64)
        lower = (a_m - P.row_bound[q]) * P.inv_scale_key * P.shrink
        certified = torch.isfinite(a_m) & (lower > kth)
    pad = torch.arange(keys.shape[1], device=P.device)[None, :] >= counts[:, None]
    keys = keys.masked_fill(pad, float("inf"))
    idx = idx.masked_fill(pad, -1)
    return keys, idx, counts, certified


def _full_rows(P: _Prepared, q, k_max: int, tile: int):
    """Exact rows of the query objects ``q`` from their full float64 key rows (all objects): for rows whose
    ties exceed :data:`_MAX_CANDIDATES` or whose float32 gap is too small for the certificate."""
    torch = P.torch
    per = max(1, tile // (4 * P.n))  # float64 rows and their temporaries: ≈ 4× a float32 tile's bytes
    out = []
    for s in range(0, q.shape[0], per):
        qq = q[s:s + per]
        keys = P.exact_keys(qq, None)
        keys[torch.arange(qq.shape[0], device=P.device), qq] = float("inf")
        kth = torch.kthvalue(keys, k_max, dim=1).values
        counts = (keys <= kth[:, None]).sum(dim=1)
        w = int(counts.max())
        _, pos = torch.topk(keys, w, dim=1, largest=False, sorted=False)
        k2, i2 = _sort_by_key_then_index(torch, torch.gather(keys, 1, pos), pos)
        pad = torch.arange(w, device=P.device)[None, :] >= counts[:, None]
        out.append((qq, k2.masked_fill(pad, float("inf")), i2.masked_fill(pad, -1), counts))
    return out


def _to_part(torch, q, keys, idx, counts):
    """A (rows, keys, idx, counts) part of :func:`odeval.neighbors.graph._assemble`, on the host, cut to the
    block's largest count."""
    w = int(counts.max())
    return (q.cpu().numpy().astype(np.int64), keys[:, :w].cpu().numpy(), idx[:, :w].cpu().numpy(),
            counts.cpu().numpy().astype(np.int64))


def _block_parts(P: _Prepared, qp, k_max: int, tile: int, first_m: int, threshold: bool = False
                 ) -> tuple[list, dict]:
    """Exact rows of the query positions ``qp``: candidates (the first pass by the threshold strategy if
    ``threshold``), certificate, 4× more candidates for the rows that fail, full rows last. Also the rows done
    per candidate count ("full": from full key rows)."""
    torch = P.torch
    parts, stats = [], {}
    m = first_m
    while qp.numel():
        if m > _MAX_CANDIDATES and m < P.n - 1:
            parts += [_to_part(torch, *r) for r in _full_rows(P, P.order[qp], k_max, tile)]
            stats["full"] = int(qp.numel())
            break
        keys, idx, counts, ok = _candidate_rows(P, qp, k_max, m, tile, threshold and m == first_m)
        n_ok = int(ok.sum())
        if n_ok:
            parts.append(_to_part(torch, P.order[qp[ok]], keys[ok], idx[ok], counts[ok]))
            stats[m] = n_ok
        qp = qp[~ok]
        m = min(P.n - 1, 4 * m)
    return parts, stats


def first_candidates(n: int, k_max: int) -> int:
    """Candidates per row of the first pass: k_max plus a margin for float32 rounding (and a few ties)."""
    return min(n - 1, k_max + max(16, k_max // 8))


def torch_graph_parts(X: np.ndarray, k_max: int, spec: Metric, torch_device: str = "cpu",
                      tile_entries: int | None = None, query_rows: int | None = None,
                      stats: dict | None = None, strategy: str | None = None, every_nth_block: int = 1) -> list:
    """The exact graph rows of all objects as (rows, keys, indices, counts) parts, computed with PyTorch on
    ``torch_device`` ("cpu" for the CPU build, "cuda[:N]").

    Parameters
    ----------
    tile_entries : int, optional
        float32 entries of one (query rows × reference objects) tile; default 2²⁸ on CUDA, 2²² on the CPU.
    query_rows : int, optional
        Query rows per block (default: as many as keep a tile at least 2¹⁶ objects wide). The graph does not
        depend on either.
    stats : dict, optional
        Filled with the number of rows certified per candidate count (int keys) and computed from full key
        rows ("full").
    strategy : {"auto", "topk", "threshold"}, optional
        How the first candidates are found (:func:`_topk_candidates`, :func:`_threshold_candidates`); "auto"
        (default: :data:`STRATEGY`): threshold for N ≥ 2¹⁷. The graph does not depend on it.
    every_nth_block : int, default 1
        Compute only every n-th block of query rows (benchmarks/gpu_graph.py ``--big``: the time of a graph too
        large to finish within a device lease, estimated from a systematic sample of its blocks). Not a graph.

    A block of query rows that runs out of device memory (``torch.cuda.OutOfMemoryError``) is redone with half
    the tile and half the rows; below 2¹⁴ entries per tile, or when the data itself does not fit, a one-line
    :class:`DeviceError`.
    """
    torch = _import_torch(torch_device)
    if spec.name not in GPU_METRICS:
        raise DeviceError(f"the device search supports the metrics {', '.join(GPU_METRICS)}, not {spec.label!r}; "
                          "use device='cpu'")
    device = torch.device(torch_device)
    tile = tile_entries or (_CUDA_TILE_ENTRIES if device.type == "cuda" else _CPU_TILE_ENTRIES)
    n = X.shape[0]
    rows = query_rows or max(1, min(n, tile // min(n, 2**16)))
    m = first_candidates(n, k_max)
    strategy = strategy or STRATEGY
    if strategy not in ("auto", "topk", "threshold"):
        raise ValueError(f"unknown strategy {strategy!r}; use 'auto', 'topk' or 'threshold'")
    threshold = strategy == "threshold" or (strategy == "auto" and n >= 2**17)
    stats = {} if stats is None else stats
    out_of_memory = torch.cuda.OutOfMemoryError
    with _ieee_float32(torch), torch.no_grad():
        try:
            P = _Prepared(torch, X, spec, device)
        except out_of_memory:
            raise DeviceError(f"device {torch_device!r}: the data ({n} × {X.shape[1]}) does not fit in its memory; "
                              "use device='cpu'") from None
        parts = []
        s = 0
        while s < n:
            qp = torch.arange(s, min(n, s + rows), device=device)  # positions of the spatial order
            try:
                got, got_stats = _block_parts(P, qp, k_max, tile, m, threshold)
            except out_of_memory:  # the block is redone with half the tile and half the rows
                got = None
            if got is None:  # outside the except clause: the failed block's tensors are released by now
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                tile //= 2
                rows = max(1, rows // 2)
                if tile < _MIN_TILE_ENTRIES:
                    raise DeviceError(f"device {torch_device!r} ran out of memory even with tiles of {2 * tile} "
                                      f"entries (N={n}, k_max={k_max}); use device='cpu'")
                continue
            parts += got
            for key, count in got_stats.items():
                stats[key] = stats.get(key, 0) + count
            s += rows * every_nth_block
        if P.pairs:
            stats["scanned"] = stats.get("scanned", 0) + P.scanned
            stats["pairs"] = stats.get("pairs", 0) + P.pairs
    return parts


def stats_line(stats: dict) -> str:
    """"rows from m candidates: count, ...; from full key rows: count" of :func:`torch_graph_parts`' stats."""
    items = [f"{n} from {m} candidates" for m, n in sorted((m, n) for m, n in stats.items() if isinstance(m, int))]
    if stats.get("full"):
        items.append(f"{stats['full']} from full key rows")
    line = "rows: " + ", ".join(items)
    if stats.get("pairs"):
        line += f"; threshold pass: {stats['scanned'] / stats['pairs']:.1%} of the pairs estimated (k-d leaves)"
    return line


def _device_name(torch, device: str) -> str:
    return torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "CPU"


def device_graph_parts(X: np.ndarray, k_max: int, spec: Metric, backend: str, device: str, *,
                       max_abs_value: float, torch_device: str | None = None) -> tuple[Any, str]:
    """The checked inputs of ``knn_graph(..., device=...)`` for a device other than "cpu", searched by PyTorch
    (:func:`torch_graph_parts`): ``(parts, search_reason)``, assembled on the host by
    :mod:`odeval.neighbors.graph` like the CPU graph (this module does not import it: no import cycle).
    ``torch_device`` overrides the checked device (tests: "cpu")."""
    target = torch_device or check_device(device)
    if backend not in ("exact", "auto", "brute"):
        raise ValueError(f"backend={backend!r} is a CPU search; device={device!r} computes the exact graph "
                         "(backend 'exact')")
    if spec.name not in GPU_METRICS:
        raise DeviceError(f"device={device!r} supports the metrics {', '.join(GPU_METRICS)}, not {spec.label!r}; "
                          "use device='cpu'")
    if spec.name == "euclidean" and float(np.abs(X).max()) > max_abs_value:
        raise ValueError(f"X holds values up to {float(np.abs(X).max()):.3g} in magnitude; squared Euclidean "
                         "distances would overflow float64 — rescale the data")
    torch = _import_torch(device)
    stats: dict = {}
    parts = torch_graph_parts(X, k_max, spec, target, stats=stats)
    return parts, (f"exact brute force on {target} ({_device_name(torch, target)}, PyTorch {torch.__version__}):"
                   f" float32 candidates, float64 keys; {stats_line(stats)}")
