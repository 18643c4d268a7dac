"""LDF: the Local Density Factor (Latecki, Lazarevic, Pokrajac 2007).

Semantics as ELKI 0.7.1 (``lof/LDF.java``; ``shared/docs/elki-0.7.1-semantics.md`` §1.10, §0.4), computed
in log space so that the kernel normalisation ``(h · k-dist)^d`` cannot overflow or underflow in high
dimensions. All requested k come from one :class:`~odeval.neighbors.KNNGraph` (numba, parallel over objects).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from odeval.detectors._numeric import GAUSS_NORM, powi
from odeval.detectors.base import VARIANT, Detector, MethodInfo, MethodVariant, Number, check_ks, register
from odeval.detectors.blockwise import REFUSE_BATCH_TOOL, BlockState, Step, halo, kdist_step, with_halo
from odeval.neighbors._elki_order import cks_lists

__all__ = ["LDF"]


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: Issue 28, third round: up to this many (object, k) pairs, :func:`_ldf_lde_rows` keeps the normalisations
#: (h·kd)^dim of :func:`_ldf_inner_terms` in a fourth (N, len(ks)) matrix instead of recomputing one per term
#: beyond kd(o) (the same values; 256 MB at the limit; above it the LDE pass keeps its three matrices).
_NORMS_TABLE_MAX = 1 << 25


def _ldf_all_k(D, I, S, ks, h, c, dim, log_sqrt_2pi, gscale, KD):
    """(len(ks), N) LDF scores: :func:`_ldf_lde_rows`, then :func:`_ldf_factor_rows` — the arithmetic of
    :func:`_ldf_lde` and :func:`_ldf_factor` (which the block steps of :mod:`odeval.detectors.blockwise` run) on
    object-major intermediates."""
    keep_norms = D.shape[0] * ks.shape[0] <= _NORMS_TABLE_MAX
    lde, loglde = _ldf_lde_rows(D, I, S, ks, h, dim, log_sqrt_2pi, gscale, KD, keep_norms)
    return _ldf_factor_rows(I, S, ks, lde, loglde, c)


@njit(cache=True, parallel=True)
def _ldf_lde(D, I, S, ks, h, dim, log_sqrt_2pi, gscale, KD):  # pragma: no cover - numba
    """(sizes, lde, loglde), each (len(ks), N): the first pass (LDE) over the rows, all k inside.

    Each LDE is computed twice: directly, in ELKI's order of operations (``lde``; NaN where the direct
    evaluation is unreliable: a normalisation (h·kd)^d that is 0, subnormal or infinite, or an LDE that
    underflows to 0), and in log space (``loglde``, always exact to rounding). LDF(p) uses the direct values
    when p's and all its neighbours' are reliable — reproducing ELKI's rounding, and hence its ties — and the
    log-space values otherwise.
    """
    N = D.shape[0]
    T = ks.shape[0]
    sizes = np.empty((T, N), np.int64)
    lde = np.empty((T, N))
    loglde = np.empty((T, N))  # +inf when some neighbour has k-distance 0
    tiny = 2.2250738585072014e-308  # smallest normal float64
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            n = S[p, k - 1]
            sizes[t, p] = n
            inf = False
            direct = 0.0
            ok = True
            for j in range(n):
                kd = KD[I[p, j], k - 1]
                if not kd > 0.0 or np.isinf(kd):
                    inf = True
                    break
                v = max(kd, D[p, j]) / (h * kd)
                norm = powi(h * kd, dim)
                if not (norm >= tiny and norm < np.inf):
                    ok = False
                    break
                direct += gscale * math.exp(-0.5 * v * v) / norm
            if inf:
                loglde[t, p] = np.inf
                lde[t, p] = np.inf
                continue
            if ok:
                direct /= n
                ok = direct >= tiny and direct < np.inf
            if ok:
                lde[t, p] = direct
                loglde[t, p] = math.log(direct)
                continue
            # log space: log of φ(v) / (h·kd)^dim, φ the 1-d standard normal density; log-sum-exp
            lde[t, p] = np.nan
            top = -np.inf
            for j in range(n):
                kd = KD[I[p, j], k - 1]
                v = max(kd, D[p, j]) / (h * kd)
                lt = -0.5 * v * v - log_sqrt_2pi - dim * math.log(h * kd)
                if lt > top:
                    top = lt
            s = 0.0
            for j in range(n):
                kd = KD[I[p, j], k - 1]
                v = max(kd, D[p, j]) / (h * kd)
                s += math.exp(-0.5 * v * v - log_sqrt_2pi - dim * math.log(h * kd) - top)
            loglde[t, p] = top + math.log(s / n)
    return sizes, lde, loglde


@njit(cache=True, parallel=True)
def _ldf_factor(I, sizes, lde, loglde, c):  # pragma: no cover - numba
    """LDF of the rows of I from their LDEs (columns < rows: the rows' own; I indexes lde, loglde)."""
    T, N = sizes.shape
    out = np.empty((T, N))
    for p in prange(N):
        for t in range(T):
            n = sizes[t, p]
            # direct path, ELKI's arithmetic
            lp = lde[t, p]
            ok = not np.isnan(lp)
            m = 0.0
            for j in range(n):
                v = lde[t, I[p, j]]
                if np.isnan(v):
                    ok = False
                    break
                m += v
            if ok:
                m /= n
                div = lp + c * m
                if div == np.inf:
                    out[t, p] = 0.0 if m < np.inf else 1.0
                else:
                    out[t, p] = m / div if div > 0 else 0.0
                continue
            # log-space path
            top = -np.inf
            for j in range(n):
                v = loglde[t, I[p, j]]
                if v > top:
                    top = v
            lq = loglde[t, p]
            if np.isinf(top) or np.isinf(lq):  # LDE(p) + c·m = +inf
                out[t, p] = 1.0 if np.isinf(top) else 0.0
                continue
            s = 0.0
            for j in range(n):
                s += math.exp(loglde[t, I[p, j]] - top)
            logm = top + math.log(s / n)  # log of the mean LDE of the neighbours
            out[t, p] = 1.0 / (math.exp(lq - logm) + c)
    return out


@njit(cache=True, parallel=True)
def _ldf_inner_terms(KD, ks, h, dim, gscale, keep_norms):  # pragma: no cover - numba
    """(N, len(ks)): the kernel term of a neighbour o at k = ks[t] when p lies within o's k-distance (the
    reachability distance is then kd(o) itself): φ(kd / (h·kd)) / (h·kd)^dim in :func:`_ldf_lde`'s expressions —
    it depends on (o, k) only. NaN where kd(o) is 0 or +inf or the normalisation is 0, subnormal or infinite
    (those cases are decided from kd and the normalisation, as in :func:`_ldf_lde`). Also returns the
    normalisations (N, len(ks)) with ``keep_norms`` (set where the term is not NaN), else a (0, 0) array."""
    N = KD.shape[0]
    T = ks.shape[0]
    tiny = 2.2250738585072014e-308  # smallest normal float64
    inner = np.empty((N, T))
    norms = np.empty((N, T) if keep_norms else (0, 0))
    for o in prange(N):
        for t in range(T):
            kd = KD[o, ks[t] - 1]
            inner[o, t] = np.nan
            if not kd > 0.0 or np.isinf(kd):
                continue
            hk = h * kd
            nm = powi(hk, dim)
            if keep_norms:
                norms[o, t] = nm
            if not (nm >= tiny and nm < np.inf):
                continue
            v = max(kd, kd) / hk
            inner[o, t] = gscale * math.exp(-0.5 * v * v) / nm
    return inner, norms


@njit(cache=True, parallel=True)
def _ldf_lde_rows(D, I, S, ks, h, dim, log_sqrt_2pi, gscale, KD, keep_norms=False):  # pragma: no cover - numba
    """:func:`_ldf_lde` in object-major layout: (lde, loglde), each (N, len(ks)), without the neighbourhood
    sizes (read from ``S``): the same expressions in the same order, so the same values; a neighbour's LDEs for
    all k are contiguous for :func:`_ldf_factor_rows`.

    Issue 28: the sums run neighbour-major (for each neighbour o in list order, the terms of every k whose
    N_k(p) holds it: o's k-distances and terms are read along contiguous rows; each k still adds its terms in
    list order from 0.0 and stops at its first unusable neighbour), and the whole term of a neighbour within whose
    k-distance p lies depends on (o, k) only (:func:`_ldf_inner_terms`, one (N, len(ks)) matrix while this pass
    runs): only a p beyond kd(o) costs an exponential here. With ``keep_norms`` (issue 28, third round) that
    pass also keeps the normalisations (h·kd)^dim (a fourth (N, len(ks)) matrix) and a term beyond kd(o) divides
    by the stored value instead of recomputing it (the same value: the same ``powi``)."""
    N = D.shape[0]
    T = ks.shape[0]
    lde = np.empty((N, T))
    loglde = np.empty((N, T))  # +inf when some neighbour has k-distance 0
    tiny = 2.2250738585072014e-308  # smallest normal float64
    inner, norms = _ldf_inner_terms(KD, ks, h, dim, gscale, keep_norms)
    for p in prange(N):
        # neighbour-major: for each neighbour o (list order) the terms of every k whose N_k(p) holds it, read
        # along o's contiguous table rows; each k's sum still adds its terms in list order from 0.0, and stops
        # at its first neighbour with an unusable kd (status 1) or normalisation (status 2), as before
        sums = np.zeros(T)
        status = np.zeros(T, np.int8)
        nt = np.empty(T, np.int64)
        jmax = 0
        for t in range(T):
            nt[t] = S[p, ks[t] - 1]
            jmax = max(jmax, nt[t])
        for j in range(jmax):
            o = I[p, j]
            dj = D[p, j]
            for t in range(T):
                if j >= nt[t] or status[t] != 0:
                    continue
                kd = KD[o, ks[t] - 1]
                if not kd > 0.0 or np.isinf(kd):
                    status[t] = 1
                    continue
                w = inner[o, t]
                if np.isnan(w):  # the normalisation (h·kd)^dim is out of range
                    status[t] = 2
                    continue
                if dj <= kd:
                    sums[t] += w
                else:
                    hk = h * kd
                    v = max(kd, dj) / hk
                    sums[t] += gscale * math.exp(-0.5 * v * v) / (norms[o, t] if keep_norms else powi(hk, dim))
        for t in range(T):
            k = ks[t]
            n = nt[t]
            inf = status[t] == 1
            ok = status[t] == 0
            direct = sums[t]
            if inf:
                loglde[p, t] = np.inf
                lde[p, t] = np.inf
                continue
            if ok:
                direct /= n
                ok = direct >= tiny and direct < np.inf
            if ok:
                lde[p, t] = direct
                loglde[p, t] = math.log(direct)
                continue
            # log space: log of φ(v) / (h·kd)^dim, φ the 1-d standard normal density; log-sum-exp
            lde[p, t] = np.nan
            top = -np.inf
            for j in range(n):
                kd = KD[I[p, j], k - 1]
                v = max(kd, D[p, j]) / (h * kd)
                lt = -0.5 * v * v - log_sqrt_2pi - dim * math.log(h * kd)
                if lt > top:
                    top = lt
            s = 0.0
            for j in range(n):
                kd = KD[I[p, j], k - 1]
                v = max(kd, D[p, j]) / (h * kd)
                s += math.exp(-0.5 * v * v - log_sqrt_2pi - dim * math.log(h * kd) - top)
            loglde[p, t] = top + math.log(s / n)
    return lde, loglde


@njit(cache=True, parallel=True)
def _ldf_factor_rows(I, S, ks, lde, loglde, c):  # pragma: no cover - numba
    """:func:`_ldf_factor` on the object-major LDEs of :func:`_ldf_lde_rows` (same sums, same order)."""
    N, T = lde.shape
    out = np.empty((T, N))
    for p in prange(N):
        for t in range(T):
            n = S[p, ks[t] - 1]
            # direct path, ELKI's arithmetic
            lp = lde[p, t]
            ok = not np.isnan(lp)
            m = 0.0
            for j in range(n):
                v = lde[I[p, j], t]
                if np.isnan(v):
                    ok = False
                    break
                m += v
            if ok:
                m /= n
                div = lp + c * m
                if div == np.inf:
                    out[t, p] = 0.0 if m < np.inf else 1.0
                else:
                    out[t, p] = m / div if div > 0 else 0.0
                continue
            # log-space path
            top = -np.inf
            for j in range(n):
                v = loglde[I[p, j], t]
                if v > top:
                    top = v
            lq = loglde[p, t]
            if np.isinf(top) or np.isinf(lq):  # LDE(p) + c·m = +inf
                out[t, p] = 1.0 if np.isinf(top) else 0.0
                continue
            s = 0.0
            for j in range(n):
                s += math.exp(loglde[I[p, j], t] - top)
            logm = top + math.log(s / n)  # log of the mean LDE of the neighbours
            out[t, p] = 1.0 / (math.exp(lq - logm) + c)
    return out


def _lde_block(state: BlockState) -> dict[str, Any]:
    """LDE and log LDE of a block's objects (:mod:`odeval.detectors.blockwise`): :func:`_ldf_lde` on its rows
    with the k-distances of the block and of its halo."""
    b, d = state.block, state.data
    KD = np.ascontiguousarray(np.vstack([d["kd"], d["kd_halo"]]))
    sizes, lde, loglde = _ldf_lde(b.distances, state.halo.local, b.neighborhood_sizes(), state.ks,
                                  float(state.det.h), int(b.X.shape[1]), _LOG_SQRT_2PI, GAUSS_NORM, KD)
    return {"sizes": sizes, "lde": lde, "loglde": loglde, "lde2_t": np.ascontiguousarray(np.vstack([lde, loglde]).T)}


def _ldf_block(state: BlockState) -> dict[str, Any]:
    """LDF of a block's objects: :func:`_ldf_factor` with the LDEs of the block and of its halo."""
    d = state.data
    T = state.ks.size
    lde = with_halo(d["lde"], d["lde2_halo"][:, :T])
    loglde = with_halo(d["loglde"], d["lde2_halo"][:, T:])
    return {"raw": _ldf_factor(state.halo.local, d["sizes"], lde, loglde, float(state.det.c))}


@register
class LDF(Detector):
    """Local Density Factor with a Gaussian kernel.

    * ``LDE_k(p) = (1/|N_k(p)|) Σ_{o ∈ N_k(p)} φ(reach-dist_k(p, o) / (h · k-dist(o))) / (h · k-dist(o))^d``,
      with ``reach-dist_k(p, o) = max(d(p, o), k-dist(o))`` (Latecki et al. 2007, Eq. 3–4);
    * ``LDF_k(p) = m(p) / (LDE_k(p) + c · m(p))``, ``m(p) = mean_{o ∈ N_k(p)} LDE_k(o)`` (Eq. 5); range
      [0, 1/c].

    φ is the 1-d standard normal density, as in ELKI; the paper's d-variate Gaussian differs by the factor
    (2π)^((d−1)/2), which cancels in LDF. N_k(p) includes ties at the k-distance.

    Parameters
    ----------
    h : float, default 1.0
        Kernel bandwidth multiplier (Campos et al.: 1).
    c : float, default 0.1
        Score scaling constant (Campos et al.: 0.1); the score is bounded by 1/c.
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}, default "paper"
        ``"paper"`` = ``"elki-0.7.1"`` (ELKI's stand-alone ``LDF``). ``"elki-0.7.1-cks"`` reproduces ELKI
        0.7.1's batch tool ``ComputeKNNOutlierScores`` (Campos et al. 2016), which uses the neighbours'
        (k+1)-distance for the bandwidth and the reachability distance (semantics doc §0.3), on the tool's
        sublists (ties on the stored distances, ELKI's heap order; docs/detectors.md).

    Notes
    -----
    Zero distances, as ELKI 0.7.1 (§0.4): ``LDE(p) = +inf`` as soon as some neighbour o has k-dist(o) = 0;
    then ``LDF(p) = 0`` if the neighbours' mean LDE is finite, else 1. The LDEs are evaluated in ELKI's
    order of operations (so that rounding, and with it the ties between nearly identical objects, matches
    ELKI); wherever that direct evaluation of ``(h·k-dist)^d`` or of the LDE overflows or underflows (large d,
    e.g. d > 300 with k-distances of 0.1, where ELKI yields 0, +inf or NaN), the score is computed in log
    space (log-sum-exp) instead, which gives the exact value. Never NaN.

    References
    ----------
    Latecki, L. J., Lazarevic, A., Pokrajac, D. (2007). Outlier detection with kernel density functions.
    MLDM, 61–75.
    """

    info = MethodInfo(name="LDF", min_k=1, inverted=False, inlier_value=1.0 / 1.1, score_range=(0.0, 10.0),
                      reference="Latecki, Lazarevic, Pokrajac (2007), MLDM")

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        "h": Number(1.0, low=0, low_open=True),
        "c": Number(0.1, low=0, low_open=True),
        "variant": VARIANT,
    }
    block_refusals = REFUSE_BATCH_TOOL

    def _block_steps(self) -> list[Step]:
        # the two passes of _ldf_all_k (k-distances exchanged before the first, the LDEs between them)
        return [Step(kdist_step, (halo("kd"),)), Step(_lde_block, (halo("lde2_t"),)), Step(_ldf_block)]

    def __init__(self, h: float = 1.0, c: float = 0.1, variant: str = MethodVariant.PAPER) -> None:
        super().__init__(h=h, c=c, variant=variant)
        # per-instance metadata: the range [0, 1/c] and the inlier value 1/(1+c) depend on c
        self.info = MethodInfo(name="LDF", min_k=1, inverted=False, inlier_value=1.0 / (1.0 + self.c),
                               score_range=(0.0, 1.0 / self.c), reference=type(self).info.reference)


    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        ks_arr = check_ks(ks, graph.n_objects, self.info, graph.k_max)
        dim = int(graph.X.shape[1])
        if self.variant == MethodVariant.ELKI_071_CKS:  # ELKI's batch tool: its sublists, its (k+1)-distance as kd
            cl = cks_lists(graph, int(ks_arr.max()))
            g, kd = cl.graph, cl.kdist
        else:
            g, kd = graph, graph.distances
        return _ldf_all_k(g.distances, g.indices, g.neighborhood_sizes(), ks_arr, self.h, self.c,
                          dim, _LOG_SQRT_2PI, GAUSS_NORM, kd)
