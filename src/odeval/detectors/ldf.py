"""LDF: the Local Density Factor (Latecki, Lazarevic, Pokrajac 2007).

Semantics as ELKI 0.7.1 (``lof/LDF.java``; ``shared/docs/elki-0.7.1-semantics.md`` §1.10, §0.4), computed
in log space so that the kernel normalisation ``(h · k-dist)^d`` cannot overflow or underflow in high
dimensions. All requested k come from one :class:`~odeval.neighbors.KNNGraph` (numba, parallel over objects).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit, prange

from odeval.detectors.base import Detector, MethodInfo, check_ks, register

__all__ = ["LDF"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@njit(cache=True, parallel=True)
def _ldf_all_k(D, I, S, ks, h, c, dim, log_sqrt_2pi):  # pragma: no cover - numba
    """(len(ks), N) LDF scores; two parallel passes over the objects (log LDE, then LDF), all k inside."""
    N = D.shape[0]
    T = ks.shape[0]
    out = np.empty((T, N))
    lde = np.empty((T, N))  # log LDE; +inf when some neighbour has k-distance 0
    for p in prange(N):
        terms = np.empty(D.shape[1])
        for t in range(T):
            k = ks[t]
            n = S[p, k - 1]
            top = -np.inf
            inf = False
            for j in range(n):
                kd = D[I[p, j], k - 1]
                if not kd > 0.0 or np.isinf(kd):
                    inf = True
                    break
                d = D[p, j]
                v = max(kd, d) / (h * kd)
                # log of φ(v) / (h·kd)^dim, φ the 1-d standard normal density
                lt = -0.5 * v * v - log_sqrt_2pi - dim * math.log(h * kd)
                terms[j] = lt
                if lt > top:
                    top = lt
            if inf:
                lde[t, p] = np.inf
                continue
            s = 0.0
            for j in range(n):
                s += math.exp(terms[j] - top)
            lde[t, p] = top + math.log(s / n)
    for p in prange(N):
        for t in range(T):
            k = ks[t]
            n = S[p, k - 1]
            top = -np.inf
            for j in range(n):
                v = lde[t, I[p, j]]
                if v > top:
                    top = v
            lp = lde[t, p]
            if np.isinf(top) or np.isinf(lp):  # LDE(p) + c·m = +inf
                out[t, p] = 1.0 if np.isinf(top) else 0.0
                continue
            s = 0.0
            for j in range(n):
                s += math.exp(lde[t, I[p, j]] - top)
            logm = top + math.log(s / n)  # log of the mean LDE of the neighbours
            out[t, p] = 1.0 / (math.exp(lp - logm) + c)
    return out


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

    Notes
    -----
    Zero distances, as ELKI 0.7.1 (§0.4): ``LDE(p) = +inf`` as soon as some neighbour o has k-dist(o) = 0;
    then ``LDF(p) = 0`` if the neighbours' mean LDE is finite, else 1. Everything else is evaluated in log
    space (log-sum-exp), so where ELKI's direct evaluation of ``(h·k-dist)^d`` overflows or underflows
    (large d, e.g. d > 300 with k-distances of 0.1) and yields 0, +inf or NaN, this gives the exact value.
    Elsewhere both agree to rounding (~1e-14 relative). Never NaN.

    References
    ----------
    Latecki, L. J., Lazarevic, A., Pokrajac, D. (2007). Outlier detection with kernel density functions.
    MLDM, 61–75.
    """

    info = MethodInfo(name="LDF", min_k=1, inverted=False, inlier_value=1.0 / 1.1, score_range=(0.0, 10.0),
                      reference="Latecki, Lazarevic, Pokrajac (2007), MLDM")

    def __init__(self, h: float = 1.0, c: float = 0.1) -> None:
        if not (isinstance(h, int | float) and np.isfinite(h) and h > 0):
            raise ValueError(f"LDF: h must be a finite number > 0, got {h!r}")
        if not (isinstance(c, int | float) and np.isfinite(c) and c > 0):
            raise ValueError(f"LDF: c must be a finite number > 0, got {c!r}")
        self.h = float(h)
        self.c = float(c)
        # per-instance metadata: the range [0, 1/c] and the inlier value 1/(1+c) depend on c
        self.info = MethodInfo(name="LDF", min_k=1, inverted=False, inlier_value=1.0 / (1.0 + self.c),
                               score_range=(0.0, 1.0 / self.c), reference=type(self).info.reference)

    def params(self) -> dict[str, Any]:
        return {"h": self.h, "c": self.c}

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        ks_arr = check_ks(ks, graph.n_objects, self.info, graph.k_max)
        dim = int(graph.X.shape[1])
        return _ldf_all_k(graph.distances, graph.indices, graph.neighborhood_sizes(), ks_arr, self.h, self.c,
                          dim, _LOG_SQRT_2PI)
