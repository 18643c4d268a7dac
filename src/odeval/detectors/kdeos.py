"""KDEOS: kernel density estimation outlier score (Schubert, Zimek, Kriegel 2014).

Implements ELKI's ``lof/KDEOS.java`` with ``kmin = kmax = k`` and the Gaussian kernel, as used by Campos et
al. (``shared/docs/elki-0.7.1-semantics.md`` §1.9, §0.6). All requested k are computed from one
:class:`~odeval.neighbors.KNNGraph`; the k values are processed in parallel (numba), each with its own density
array.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from odeval.detectors._erf import elki_normal_cdf
from odeval.detectors._numeric import GAUSS_NORM, powi
from odeval.detectors.base import VARIANT, Detector, MethodInfo, MethodVariant, Number, check_ks, register
from odeval.detectors.blockwise import IN_EDGES, REFUSE_BATCH_TOOL, BlockState, Step, halo, with_halo
from odeval.neighbors._elki_order import cks_lists
from odeval.neighbors.blocks import in_edges

__all__ = ["KDEOS"]

#: Canonical bandwidth of the Gaussian kernel, (1/(4π))^(1/10) (ELKI ``GaussianKernelDensityFunction``).
GAUSSIAN_CANONICAL_BANDWIDTH = (1.0 / (4.0 * math.pi)) ** 0.1
_CUTOFF = 1e-20
_SQRT2 = math.sqrt(2.0)


@njit(cache=True, inline="always")
def _kdeos_bandwidth(D, p, k, scale, iminbw, dim):  # pragma: no cover - numba
    """(1/h, h^(−idim), point mass?) of row p at k: the first k list entries are p itself (0) and its k−1 nearest
    neighbours."""
    s = 0.0
    for j in range(k - 1):
        s += D[p, j]
    ibw = min(k / (s * scale), iminbw)
    sca = powi(ibw, dim)
    point = not (sca < np.inf) or np.isinf(ibw)
    return ibw, sca, point


@njit(cache=True, inline="always")
def _kdeos_kernel(d, ibw, sca, point, gscale):  # pragma: no cover - numba
    """The kernel's value at distance d from a centre with bandwidth 1/ibw."""
    if point:
        return 1.0 if d == 0.0 else 0.0
    u = d * ibw
    return sca * (gscale * math.exp(-0.5 * u * u))


@njit(cache=True, inline="always")
def _kdeos_compare_count(D, S, p, k, elki):  # pragma: no cover - numba
    """Neighbours of p in its comparison set at k (p itself not counted)."""
    m = S[p, k - 1]
    if elki:  # ELKI 0.7.1: sublist of the materialised list, ties on the stored (sqrt) distances
        lim = D[p, k - 2]
        c = 0
        while c < m and D[p, c] <= lim:
            c += 1
        m = c
    return m


@njit(cache=True, inline="always")
def _welford(x, cnt, mean, m2):  # pragma: no cover - numba
    """One Welford update (ELKI's MeanVariance.put)."""
    cnt += 1.0
    delta = x - mean
    mean += delta / cnt
    m2 += delta * (x - mean)
    return cnt, mean, m2


@njit(cache=True, inline="always")
def _kdeos_finish(cnt, mean, m2, own, elki):  # pragma: no cover - numba
    """KDEOS from the comparison set's (count, mean, M2) and p's own density."""
    z = 0.0
    if cnt > 1.0:
        sd = math.sqrt(m2 / (cnt - 1.0))
        if sd > 0.0:
            z = (mean - own) / sd
    if elki:  # ELKI's NormalDistribution.standardNormalCDF (Cody's erfc), for ELKI's rounding and ties
        return elki_normal_cdf(z)
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@njit(cache=True)
def _kdeos_score_row(D, I, S, p, k, dens, elki):  # pragma: no cover - numba
    """KDEOS of row p at k from the densities (``dens[p]`` p's own, ``dens[I[p, j]]`` its neighbours')."""
    m = _kdeos_compare_count(D, S, p, k, elki)
    cnt = 0.0
    mean = 0.0
    m2 = 0.0
    for j in range(-1, m):  # Welford updates in list order (ELKI's MeanVariance)
        x = dens[p] if j < 0 else dens[I[p, j]]
        cnt, mean, m2 = _welford(x, cnt, mean, m2)
    return _kdeos_finish(cnt, mean, m2, dens[p], elki)


@njit(cache=True)
def _kdeos_score_rows4(D, I, S, p, k, dens, elki, out):  # pragma: no cover - numba
    """:func:`_kdeos_score_row` for rows p..p+3, their Welford chains side by side (each a chain of divisions:
    interleaved, they overlap instead of waiting one for another); each row's updates are its own, in its
    order, so the values are the same bit for bit."""
    m0 = _kdeos_compare_count(D, S, p, k, elki)
    m1 = _kdeos_compare_count(D, S, p + 1, k, elki)
    m2_ = _kdeos_compare_count(D, S, p + 2, k, elki)
    m3 = _kdeos_compare_count(D, S, p + 3, k, elki)
    c0, a0, s0 = _welford(dens[p], 0.0, 0.0, 0.0)
    c1, a1, s1 = _welford(dens[p + 1], 0.0, 0.0, 0.0)
    c2, a2, s2 = _welford(dens[p + 2], 0.0, 0.0, 0.0)
    c3, a3, s3 = _welford(dens[p + 3], 0.0, 0.0, 0.0)
    mlo = min(min(m0, m1), min(m2_, m3))
    for j in range(mlo):
        c0, a0, s0 = _welford(dens[I[p, j]], c0, a0, s0)
        c1, a1, s1 = _welford(dens[I[p + 1, j]], c1, a1, s1)
        c2, a2, s2 = _welford(dens[I[p + 2, j]], c2, a2, s2)
        c3, a3, s3 = _welford(dens[I[p + 3, j]], c3, a3, s3)
    for j in range(mlo, m0):
        c0, a0, s0 = _welford(dens[I[p, j]], c0, a0, s0)
    for j in range(mlo, m1):
        c1, a1, s1 = _welford(dens[I[p + 1, j]], c1, a1, s1)
    for j in range(mlo, m2_):
        c2, a2, s2 = _welford(dens[I[p + 2, j]], c2, a2, s2)
    for j in range(mlo, m3):
        c3, a3, s3 = _welford(dens[I[p + 3, j]], c3, a3, s3)
    out[p] = _kdeos_finish(c0, a0, s0, dens[p], elki)
    out[p + 1] = _kdeos_finish(c1, a1, s1, dens[p + 1], elki)
    out[p + 2] = _kdeos_finish(c2, a2, s2, dens[p + 2], elki)
    out[p + 3] = _kdeos_finish(c3, a3, s3, dens[p + 3], elki)


@njit(cache=True, parallel=True)
def _kdeos_prefix_sums(D, kmax):  # pragma: no cover - numba
    """cs[p, j] = D[p, 0] + … + D[p, j − 1], added in that order from 0.0 — the bandwidth's sum at k = j + 1
    (:func:`_kdeos_bandwidth`), bit for bit, for every k in O(1)."""
    N = D.shape[0]
    cs = np.empty((N, kmax))
    for p in prange(N):
        s = 0.0
        cs[p, 0] = 0.0
        for j in range(kmax - 1):
            s += D[p, j]
            cs[p, j + 1] = s
    return cs


@njit(cache=True, parallel=True)
def _kdeos_all_k(D, I, S, ks, scale, iminbw, dim, gscale, cutoff, elki):  # pragma: no cover - numba
    N = D.shape[0]
    T = ks.shape[0]
    out = np.empty((T, N))
    kmax = 1
    for t in range(T):
        kmax = max(kmax, ks[t])
    cs = _kdeos_prefix_sums(D, kmax)
    for i in prange(T):
        # the work of a k grows with k: ks taken from both ends alternately, so that the contiguous ranges of
        # iterations the threads get carry about the same work (each k is computed on its own either way)
        t = i // 2 if i % 2 == 0 else T - 1 - i // 2
        k = ks[t]
        dens = np.zeros(N)
        # density step: every p spreads a kernel with its own bandwidth onto its list L = {p} ∪ N_k(p)
        for p in range(N):
            ibw = min(k / (cs[p, k - 1] * scale), iminbw)  # = _kdeos_bandwidth(D, p, k, scale, iminbw, dim)
            sca = powi(ibw, dim)
            point = not (sca < np.inf) or np.isinf(ibw)
            n = S[p, k - 1]
            for j in range(-1, n):
                d = 0.0 if j < 0 else D[p, j]
                q = p if j < 0 else I[p, j]
                v = _kdeos_kernel(d, ibw, sca, point, gscale)
                dens[q] += v
                if v < cutoff:
                    break
        # score step: z-score of dens(p) against its comparison set C ∋ p, four rows side by side
        o = out[t]
        p = 0
        while p + 4 <= N:
            _kdeos_score_rows4(D, I, S, p, k, dens, elki, o)
            p += 4
        while p < N:
            o[p] = _kdeos_score_row(D, I, S, p, k, dens, elki)
            p += 1
    return out


@njit(cache=True, parallel=True)
def _kdeos_sources(D, S, ks, scale, iminbw, dim, gscale, cutoff):  # pragma: no cover - numba
    """Per row p and k: (1/h, h^(−idim), point mass?, entries of {p} ∪ N_k(p) that receive p's kernel) — the
    density step of :func:`_kdeos_all_k` up to its cut-off, without the sums.
    Returns a (4·T, rows) array: ibw, sca, point (0/1), count (self included)."""
    N = D.shape[0]
    T = ks.shape[0]
    out = np.empty((4 * T, N))
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            ibw, sca, point = _kdeos_bandwidth(D, p, k, scale, iminbw, dim)
            n = S[p, k - 1]
            c = 0
            for j in range(-1, n):
                d = 0.0 if j < 0 else D[p, j]
                v = _kdeos_kernel(d, ibw, sca, point, gscale)
                c += 1
                if v < cutoff:
                    break
            out[t, p] = ibw
            out[T + t, p] = sca
            out[2 * T + t, p] = 1.0 if point else 0.0
            out[3 * T + t, p] = c
    return out


@njit(cache=True, parallel=True)
def _kdeos_in_densities(ids, src_info, e_ptr, e_src_global, e_src, e_pos, e_dist, e_kmin, ks,  # pragma: no cover
                        gscale):
    """KDEOS densities (T, B) of a block's objects: the kernels of every p with q ∈ {p} ∪ N_k(p) (within p's
    cut-off) added in ascending order of p — the order of the one-process density step.

    ``ids``: the global numbers of the block's objects. ``src_info`` (4·T, B + E): :func:`_kdeos_sources` of the
    block's objects and of the other sources (local numbers); in-edges of object q: ``e_ptr[q]:e_ptr[q + 1]``,
    sorted by the source's global number, with the position of q in the source's row, the distance and the
    smallest k at which q belongs to it.
    """
    B = e_ptr.shape[0] - 1
    T = ks.shape[0]
    dens = np.empty((T, B))
    for t in prange(T):
        k = ks[t]
        for q in range(B):
            acc = 0.0
            own = False
            for e in range(e_ptr[q], e_ptr[q + 1] + 1):
                if not own and (e == e_ptr[q + 1] or e_src_global[e] > ids[q]):
                    acc += _kdeos_kernel(0.0, src_info[t, q], src_info[T + t, q], src_info[2 * T + t, q] > 0.0,
                                         gscale)
                    own = True
                if e == e_ptr[q + 1]:
                    break
                o = e_src[e]
                if e_kmin[e] > k or e_pos[e] + 1 >= src_info[3 * T + t, o]:
                    continue  # q not in N_k(o), or after o's cut-off
                acc += _kdeos_kernel(e_dist[e], src_info[t, o], src_info[T + t, o], src_info[2 * T + t, o] > 0.0,
                                     gscale)
            dens[t, q] = acc
    return dens


@njit(cache=True, parallel=True)
def _kdeos_block_scores(D, I, S, ks, dens, elki):  # pragma: no cover - numba
    """KDEOS (T, B) of a block's rows from the densities (T, B + E) in the local index space."""
    B = D.shape[0]
    T = ks.shape[0]
    out = np.empty((T, B))
    for t in prange(T):
        for p in range(B):
            out[t, p] = _kdeos_score_row(D, I, S, p, ks[t], dens[t], elki)
    return out


def _block_bandwidth_params(state: BlockState) -> tuple[float, float, int]:
    """(scale, 1 / minimum bandwidth, dimension) as :meth:`KDEOS.raw_scores_all_k` derives them."""
    det = state.det
    s = det.scale * GAUSSIAN_CANONICAL_BANDWIDTH
    iminbw = 1.0 / (det.min_bandwidth * s) if det.min_bandwidth > 0 else np.inf
    dim = det.idim if det.idim >= 0 else int(state.block.X.shape[1])
    return s, iminbw, dim


def _sources_block(state: BlockState) -> dict[str, Any]:
    """Per object of the block, the bandwidth terms and cut-off of its kernel (:func:`_kdeos_sources`), and
    its edges with positions and distances for the blocks owning their targets (:mod:`odeval.detectors.blockwise`)."""
    b = state.block
    s, iminbw, dim = _block_bandwidth_params(state)
    src = _kdeos_sources(b.distances, b.neighborhood_sizes(), state.ks, s, iminbw, dim, GAUSS_NORM, _CUTOFF)
    return {"src": src, "src_t": np.ascontiguousarray(src.T),
            "edges": in_edges(b, state.partition, positions=True)}


def _sources_wanted(state: BlockState) -> dict[str, Any]:
    """The sources in other blocks whose kernels reach the block's objects."""
    b = state.block
    src = state.data["in"][1]
    return {"wanted": np.unique(src[~b.holds(src)])}


def _density_block(state: BlockState) -> dict[str, Any]:
    """Densities of the block's objects: the received kernels added in ascending source order
    (:func:`_kdeos_in_densities`)."""
    b, d = state.block, state.data
    B = b.n_objects
    dst, src, km, pos, dist = d["in"]
    order = np.lexsort((src, dst))
    dst, src, km, pos, dist = dst[order], src[order], km[order], pos[order], dist[order]
    inside = b.holds(src)
    src_local = np.where(inside, b.local(src), B + np.searchsorted(d["wanted"], src))
    ptr = np.zeros(B + 1, dtype=np.int64)
    np.cumsum(np.bincount(b.local(dst), minlength=B), out=ptr[1:])
    info = with_halo(d["src"], d["src_halo"])
    dens = _kdeos_in_densities(b.object_ids, info, ptr, src, src_local, pos, dist, km, state.ks, GAUSS_NORM)
    return {"dens": dens, "dens_t": np.ascontiguousarray(dens.T)}


def _kdeos_block(state: BlockState) -> dict[str, Any]:
    """KDEOS of the block's objects from the densities of the block and of its halo."""
    b, d = state.block, state.data
    dens = with_halo(d["dens"], d["dens_halo"])
    elki = state.det.variant != MethodVariant.PAPER
    return {"raw": _kdeos_block_scores(b.distances, state.halo.local, b.neighborhood_sizes(), state.ks, dens, elki)}


@register
class KDEOS(Detector):
    """KDEOS with ``kmin = kmax = k`` and a Gaussian kernel.

    Density step (kernels centred at each p, with p's own bandwidth, spread onto p's list
    L(p) = {p} ∪ N_k(p), ties included):

    * ``h_p = s · (Σ of the first k entries of L(p)) / k`` — the first entry is p itself at distance 0, so
      the mean runs over p's k−1 nearest neighbours divided by k (ELKI); ``s = scale · (1/(4π))^(1/10)``;
      with ``min_bandwidth > 0`` the bandwidth is at least ``min_bandwidth · s``;
    * ``dens(q) += h_p^(−idim) · φ(d(p, q) / h_p)`` for q ∈ L(p) in order, stopping after the first
      contribution below 1e-20; a zero bandwidth gives a point mass (1 at distance 0, 0 elsewhere).

    Score step: ``z(p) = (mean_{q∈C} dens(q) − dens(p)) / sd_{q∈C}(dens)`` (sample standard deviation;
    z = 0 if it is 0), ``KDEOS(p) = Φ(z(p))`` ∈ [0, 1], with the comparison set C = {p} ∪ N_k(p).

    Parameters
    ----------
    scale : float, default 0.5
        Bandwidth multiplier, relative to the Gaussian kernel's canonical bandwidth (ELKI
        ``-kdeos.kernel.scale``; 0.5 in ELKI 0.7.1's CLI and ``ComputeKNNOutlierScores``).
    idim : int, default 2
        Dimensionality of the kernel normalisation ``h^(−idim)``; −1 = the data dimensionality. 2 is the
        value of ``ComputeKNNOutlierScores`` 0.7.1 (the Campos et al. study); the 0.7.1 CLI default is −1.
    min_bandwidth : float, default 0.0
        Lower bound of the bandwidth in units of ``s`` (ELKI ``-kdeos.kernel.minbw``); 0 = none.
    variant : {"paper", "elki-0.7.1", "elki-0.7.1-cks"}, default "paper"
        The comparison set C. ``"paper"``: {p} ∪ N_k(p), the list the densities were spread over (as the
        publication and ELKI ≥ 0.7.5). ``"elki-0.7.1"``: ELKI 0.7.1's {p} ∪ N_{k−1}(p) (its k-list including
        p), so at k = 2 the score takes only two values. ELKI serves that list as a sublist of its
        materialised (k+1)-list, where ties are decided on the stored distances, not the squared ones (a
        difference only when two squared distances differ in the last bit but their square roots do not);
        this variant does the same. ``"elki-0.7.1-cks"`` (ELKI's batch tool ``ComputeKNNOutlierScores``):
        the same on the tool's sublists (ELKI's heap order; docs/detectors.md). Both ELKI variants use ELKI's
        Φ (Cody's erfc, :mod:`odeval.detectors._erf`).

    Notes
    -----
    ``min_k = 2``: at k = 1 the bandwidth is 0 for every object. Never NaN: objects whose comparison set
    has zero spread get z = 0, i.e. 0.5.

    References
    ----------
    Schubert, E., Zimek, A., Kriegel, H.-P. (2014). Generalized outlier detection with flexible kernel
    density estimates. SDM, 542–550.
    """

    info = MethodInfo(name="KDEOS", min_k=2, inverted=False, inlier_value=0.5, score_range=(0.0, 1.0),
                      reference="Schubert, Zimek, Kriegel (2014), SDM", scaling="probability")

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        "scale": Number(0.5, low=0, low_open=True),
        "idim": Number(2, low=-1, integer=True),
        "min_bandwidth": Number(0.0, low=0),
        "variant": VARIANT,
    }
    block_refusals = REFUSE_BATCH_TOOL

    def _block_steps(self) -> list[Step]:
        # the density of q adds the kernels of every p with q ∈ {p} ∪ N_k(p): edges, then the sources' terms
        return [Step(_sources_block, (IN_EDGES,)), Step(_sources_wanted, (halo("src_t", "wanted"),)),
                Step(_density_block, (halo("dens_t"),)), Step(_kdeos_block)]

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        ks_arr = check_ks(ks, graph.n_objects, self.info, graph.k_max)
        s = self.scale * GAUSSIAN_CANONICAL_BANDWIDTH
        iminbw = 1.0 / (self.min_bandwidth * s) if self.min_bandwidth > 0 else np.inf
        dim = self.idim if self.idim >= 0 else int(graph.X.shape[1])
        g = cks_lists(graph, int(ks_arr.max())).graph if self.variant == MethodVariant.ELKI_071_CKS else graph
        return _kdeos_all_k(g.distances, g.indices, g.neighborhood_sizes(), ks_arr, s, iminbw, dim,
                            GAUSS_NORM, _CUTOFF, self.variant != MethodVariant.PAPER)
