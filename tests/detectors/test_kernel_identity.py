"""Issue 28: the faster all-k kernels give the previous kernels' scores bit for bit (COF: tests/detectors/
test_cof.py against ``_acdist_chunk_trail_redo``, and below the scores of the per-object distance blocks of the
third round against the block arrays).

Data with exact ties at the k-distance and duplicates (zero k-distances), every k and sparse k, every variant the
kernel serves. The previous KDEOS kernel is kept here (it was replaced in place); LDF, FastABOD and INFLO are
compared with the previous kernels that still serve the block steps or the ELKI variants.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit, prange

from odeval.detectors import abod, cof, inflo, kdeos, ldf
from odeval.detectors._erf import elki_normal_cdf
from odeval.detectors._neighborhood import _iter_blocks, _neighbourhood_sizes, _variant_lists
from odeval.detectors._numeric import GAUSS_NORM
from odeval.neighbors import knn_graph

KMAX = 30
KS = (np.arange(2, KMAX + 1), np.array([2, 3, 7, 8, 20, KMAX]))
KS_ANY_ORDER = (*KS, np.array([7, 2, KMAX, 3, 7]))  # the KDEOS and LDF kernels take ks as requested


@pytest.fixture(scope="module", params=[0, 1])
def graph(request):
    rng = np.random.default_rng(request.param)
    X = np.vstack([np.round(rng.normal(size=(200, 3)) * 2) / 2, rng.normal(size=(120, 3)) * 4])
    X[5:15] = X[0]  # duplicates: zero k-distances
    return knn_graph(X, KMAX)


@njit
def _old_kdeos_score_row(D, I, S, p, k, dens, elki):
    """KDEOS of row p at k from the densities (``dens[p]`` p's own, ``dens[I[p, j]]`` its neighbours')."""
    m = S[p, k - 1]
    if elki:  # ELKI 0.7.1: sublist of the materialised list, ties on the stored (sqrt) distances
        lim = D[p, k - 2]
        c = 0
        while c < m and D[p, c] <= lim:
            c += 1
        m = c
    cnt = 0.0
    mean = 0.0
    m2 = 0.0
    for j in range(-1, m):  # Welford updates in list order (ELKI's MeanVariance)
        x = dens[p] if j < 0 else dens[I[p, j]]
        cnt += 1.0
        delta = x - mean
        mean += delta / cnt
        m2 += delta * (x - mean)
    z = 0.0
    if cnt > 1.0:
        sd = math.sqrt(m2 / (cnt - 1.0))
        if sd > 0.0:
            z = (mean - dens[p]) / sd
    if elki:  # ELKI's NormalDistribution.standardNormalCDF (Cody's erfc), for ELKI's rounding and ties
        return elki_normal_cdf(z)
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@njit(parallel=True)
def _old_kdeos_all_k(D, I, S, ks, scale, iminbw, dim, gscale, cutoff, elki):
    N = D.shape[0]
    T = ks.shape[0]
    out = np.empty((T, N))
    for t in prange(T):
        k = ks[t]
        dens = np.zeros(N)
        # density step: every p spreads a kernel with its own bandwidth onto its list L = {p} ∪ N_k(p)
        for p in range(N):
            ibw, sca, point = kdeos._kdeos_bandwidth(D, p, k, scale, iminbw, dim)
            n = S[p, k - 1]
            for j in range(-1, n):
                d = 0.0 if j < 0 else D[p, j]
                q = p if j < 0 else I[p, j]
                v = kdeos._kdeos_kernel(d, ibw, sca, point, gscale)
                dens[q] += v
                if v < cutoff:
                    break
        # score step: z-score of dens(p) against its comparison set C ∋ p
        for p in range(N):
            out[t, p] = _old_kdeos_score_row(D, I, S, p, k, dens, elki)
    return out


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a).view(np.int64), np.asarray(b).view(np.int64))


@pytest.mark.parametrize("elki", [False, True])
def test_kdeos_kernel_equals_previous(graph, elki):
    g = graph
    for ks in KS_ANY_ORDER:
        args = (g.distances, g.indices, g.neighborhood_sizes(), ks, 0.5 * kdeos.GAUSSIAN_CANONICAL_BANDWIDTH,
                np.inf, 2, GAUSS_NORM, kdeos._CUTOFF, elki)
        _same(kdeos._kdeos_all_k(*args), _old_kdeos_all_k(*args))


def test_ldf_rows_equal_block_kernel(graph):
    """``_ldf_lde_rows`` (tables, neighbour-major sums) against ``_ldf_lde`` (the previous arithmetic, which the
    block steps run), also in the log-space path (high dimension: normalisations out of range), with and without
    the table of normalisations."""
    g = graph
    for ks in KS_ANY_ORDER:
        for dim in (3, 2000):
            args = (g.distances, g.indices, g.neighborhood_sizes(), ks, 1.0, dim, ldf._LOG_SQRT_2PI, GAUSS_NORM,
                    g.distances)
            _, lde_old, loglde_old = ldf._ldf_lde(*args)
            for keep_norms in (False, True):  # issue 28, third round: the stored normalisations
                lde, loglde = ldf._ldf_lde_rows(*args, keep_norms)
                _same(lde, lde_old.T)
                _same(loglde, loglde_old.T)


def test_fastabod_kernel_equals_previous(graph):
    g = graph
    X = np.ascontiguousarray(g.X, dtype=np.float64)
    idx = np.ascontiguousarray(g.indices, dtype=np.int64)
    for ks in KS:
        sizes = _neighbourhood_sizes(g, ks)
        _same(abod._abof_linear4(X, idx, sizes, np.inf), abod._abof_linear(X, idx, sizes, np.inf))


@pytest.mark.parametrize("m", [1.0, 0.5])
def test_inflo_paper_kernel_equals_previous(graph, m):
    g = graph
    X = np.ascontiguousarray(g.X, dtype=np.float64)
    dist = np.ascontiguousarray(g.distances, dtype=np.float64)
    idx = np.ascontiguousarray(g.indices, dtype=np.int64)
    for ks in (np.arange(1, KMAX + 1), *KS):
        sizes = _neighbourhood_sizes(g, ks)
        kds = np.stack([np.asarray(g.kdist(int(k)), dtype=np.float64) for k in ks])
        rev = inflo._reverse_positions(idx, np.ascontiguousarray(sizes[-1]), inflo._position_dtype(idx))
        old = inflo._inflo_all_k(X, dist, idx, rev, sizes, kds, ks, m, False, True)
        S = np.ascontiguousarray(g.neighborhood_sizes(), dtype=np.int64)
        ptr, src, pos = inflo._in_edges(idx, np.ascontiguousarray(sizes[-1]), inflo._position_dtype(idx))
        den = inflo._inflo_densities(dist, ks)
        _same(inflo._inflo_paper_all_k(idx, dist, S, rev, ks, m, ptr, src, pos, den), old)


@pytest.mark.parametrize("variant", ["paper", "elki-0.7.1-cks"])
def test_cof_fused_blocks_equal_block_arrays(graph, variant):
    """Issue 28, third round: COF's scores from the per-object distance blocks (``_acdist_trail_euclidean``)
    against the second round's path (``_iter_blocks`` arrays, ``_acdist_chunk_trail``), both list variants."""
    for ks in KS:
        v = _variant_lists(graph, ks, cof.COF.info, variant)
        ac = np.empty((int(v.graph.n_objects), v.ks.size))
        for rows, block in _iter_blocks(v.graph, v.sizes[-1]):
            ac[rows] = cof._acdist_chunk_trail(block, np.ascontiguousarray(v.sizes[:, rows]), v.ks, v.cks).T
        old = cof._cof_from_acdist_rows(ac, v.idx, v.sizes, v.ks, v.elki)
        _same(cof.COF(variant=variant).raw_scores_all_k(graph, ks), old)
