"""LoOP: Local Outlier Probabilities (Kriegel, Kröger, Schubert, Zimek 2009).

Reference and comparison sets are the first k neighbours (kref = kcomp = k), *without* tie extension, as
ELKI 0.7.1's ``lof/LoOP.java`` (``shared/docs/elki-0.7.1-semantics.md`` §1.5, §0.8). Running sums over the
sorted neighbour lists serve all k; the per-k work is one pass over N · k entries (numba, parallel).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numba import njit, prange

from odeval.detectors.base import Detector, MethodInfo, check_ks, register

__all__ = ["LoOP"]

_VARIANTS = ("paper", "elki-0.7.1")


@njit(cache=True, parallel=True)
def _loop_all_k(D, I, ks, lam, elki):  # pragma: no cover - numba
    N = D.shape[0]
    T = ks.shape[0]
    out = np.empty((T, N))
    kmax = 0
    for t in range(T):
        kmax = max(kmax, ks[t])
    # running sums of squared distances along each row (left to right, as ELKI sums them)
    sq = np.empty((N, kmax))
    for p in prange(N):
        s = 0.0
        for j in range(kmax):
            d = D[p, j]
            s += d * d
            sq[p, j] = s
    pdist = np.empty(N)
    plof = np.empty(N)
    for t in range(T):
        k = ks[t]
        for p in prange(N):
            pdist[p] = math.sqrt(sq[p, k - 1] / k)
        for p in prange(N):
            s = 0.0
            for j in range(k):
                s += pdist[I[p, j]]
            r = pdist[p] * k / s
            if not np.isfinite(r):  # 0/0 or x/0: no evidence either way
                r = 1.0
            plof[p] = max(r, 1.0) if elki else r - 1.0
        acc = 0.0
        for p in range(N):
            v = plof[p] - 1.0 if elki else plof[p]
            acc += v * v
        nplof = lam * math.sqrt(acc / N)
        if not nplof > 0:
            nplof = 1.0
        norm = 1.0 / (nplof * math.sqrt(2.0))
        for p in prange(N):
            if elki:
                out[t, p] = math.erf((plof[p] - 1.0) * norm)
            else:
                out[t, p] = max(0.0, math.erf(plof[p] * norm))
    return out


@register
class LoOP(Detector):
    """Local Outlier Probability.

    With S(p) the first k neighbours of p (no tie extension; ``kref = kcomp = k``):

    * ``pdist(p) = sqrt(Σ_{o ∈ S(p)} d(p, o)² / k)`` (the paper's λ·σ; λ cancels in the ratio below);
    * ``PLOF(p) = pdist(p) · k / Σ_{o ∈ S(p)} pdist(o) − 1`` (Eq. 6);
    * ``nPLOF = λ · sqrt(mean_p PLOF(p)²)`` (Eq. 7);
    * ``LoOP(p) = max(0, erf(PLOF(p) / (nPLOF · √2)))`` (Eq. 8).

    Parameters
    ----------
    lam : float, default 1.0
        λ, the significance multiplier of the normaliser. It only rescales the scores monotonically (ranks
        are unchanged). 1.0 is the value ELKI 0.7.1's ``ComputeKNNOutlierScores`` uses (the Campos et al.
        study); the ELKI CLI default is 2.0, the paper suggests 3.
    variant : {"paper", "elki-0.7.1"}, default "paper"
        ``"elki-0.7.1"`` reproduces ELKI 0.7.1's ``LoOP``: the density ratio is clipped to ≥ 1 *before* the
        normaliser is computed, ``nPLOF = λ · sqrt(mean_p (max(ratio, 1) − 1)²)``,
        ``LoOP = erf((max(ratio, 1) − 1) / (nPLOF √2))``. This gives the same ranking, but different values
        (the normaliser only sees positive deviations), and many exact zeros.

    Notes
    -----
    Zero distances (§0.4): a ratio that is 0/0 or x/0 (all comparison neighbours have pdist 0) is taken
    as 1 (PLOF 0, score 0) in both variants, as ELKI does; a normaliser of 0 is replaced by 1. Never NaN.

    References
    ----------
    Kriegel, H.-P., Kröger, P., Schubert, E., Zimek, A. (2009). LoOP: local outlier probabilities. CIKM,
    1649–1652.
    """

    info = MethodInfo(name="LoOP", min_k=1, inverted=False, inlier_value=0.0, score_range=(0.0, 1.0),
                      reference="Kriegel, Kröger, Schubert, Zimek (2009), CIKM")

    def __init__(self, lam: float = 1.0, variant: str = "paper") -> None:
        if not (isinstance(lam, int | float) and np.isfinite(lam) and lam > 0):
            raise ValueError(f"LoOP: lam (λ) must be a finite number > 0, got {lam!r}")
        if variant not in _VARIANTS:
            raise ValueError(f"LoOP: unknown variant {variant!r}; choose one of {', '.join(_VARIANTS)}")
        self.lam = float(lam)
        self.variant = variant

    def params(self) -> dict[str, Any]:
        return {"lam": self.lam, "variant": self.variant}

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        ks_arr = check_ks(ks, graph.n_objects, self.info, graph.k_max)
        return _loop_all_k(graph.distances, graph.indices, ks_arr, self.lam, self.variant == "elki-0.7.1")
