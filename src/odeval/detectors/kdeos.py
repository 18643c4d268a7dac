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
from odeval.detectors.base import Detector, MethodInfo, Number, Options, check_ks, register
from odeval.neighbors._elki_order import cks_lists

__all__ = ["KDEOS"]

_VARIANTS = ("paper", "elki-0.7.1", "elki-0.7.1-cks")
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


@njit(cache=True)
def _kdeos_score_row(D, I, S, p, k, dens, elki):  # pragma: no cover - numba
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


@njit(cache=True, parallel=True)
def _kdeos_all_k(D, I, S, ks, scale, iminbw, dim, gscale, cutoff, elki):  # pragma: no cover - numba
    N = D.shape[0]
    T = ks.shape[0]
    out = np.empty((T, N))
    for t in prange(T):
        k = ks[t]
        dens = np.zeros(N)
        # density step: every p spreads a kernel with its own bandwidth onto its list L = {p} ∪ N_k(p)
        for p in range(N):
            ibw, sca, point = _kdeos_bandwidth(D, p, k, scale, iminbw, dim)
            n = S[p, k - 1]
            for j in range(-1, n):
                d = 0.0 if j < 0 else D[p, j]
                q = p if j < 0 else I[p, j]
                v = _kdeos_kernel(d, ibw, sca, point, gscale)
                dens[q] += v
                if v < cutoff:
                    break
        # score step: z-score of dens(p) against its comparison set C ∋ p
        for p in range(N):
            out[t, p] = _kdeos_score_row(D, I, S, p, k, dens, elki)
    return out


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
        "variant": Options(_VARIANTS),
    }

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        ks_arr = check_ks(ks, graph.n_objects, self.info, graph.k_max)
        s = self.scale * GAUSSIAN_CANONICAL_BANDWIDTH
        iminbw = 1.0 / (self.min_bandwidth * s) if self.min_bandwidth > 0 else np.inf
        dim = self.idim if self.idim >= 0 else int(graph.X.shape[1])
        g = cks_lists(graph, int(ks_arr.max())).graph if self.variant == "elki-0.7.1-cks" else graph
        return _kdeos_all_k(g.distances, g.indices, g.neighborhood_sizes(), ks_arr, s, iminbw, dim,
                            GAUSS_NORM, _CUTOFF, self.variant != "paper")
