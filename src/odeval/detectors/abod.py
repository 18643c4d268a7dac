"""FastABOD: angle-based outlier detection on the k nearest neighbours (Kriegel, Schubert and Zimek 2008)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from odeval.detectors._neighborhood import _is_euclidean, _neighbourhood_sizes, _prepare_ks
from odeval.detectors.base import Detector, MethodInfo, Options, check_ks, register
from odeval.neighbors._elki_order import elki_knn_list

__all__ = ["FastABOD", "fastabod_scores"]

_KERNELS = ("linear", "poly2")

# Raw ABOF when fewer than two neighbours at positive distance remain (no angle is defined): every other
# neighbour coincides with the point, which is as "inside a cluster" as an object can be.
_NO_PAIR_VALUE = np.inf


@njit(cache=True, inline="always")
def _mv_put(state, val, weight):  # pragma: no cover - numba
    """Weighted incremental mean and variance (West 1979), in the exact form of ELKI 0.7.1's
    ``MeanVariance.put(val, weight)``. state = [Σw, mean, m2]; the naive variance is m2 / Σw."""
    n = state[0]
    nwsum = weight + n
    delta = val - state[1]
    rval = delta * weight / nwsum
    state[1] += rval
    state[2] += n * delta * rval
    state[0] = nwsum


@njit(cache=True, parallel=True)
def _abof_linear(X, idx, sizes, no_pair):  # pragma: no cover - numba
    """ABOF over the graph neighbourhoods, angles in input space; incremental over k.

    Neighbour j enters with the pairs (i, j), i < j; neighbours at distance 0 (duplicates of p) enter no
    pair. ``sizes``: (n_k, N), ascending along axis 0.
    """
    nk, n = sizes.shape
    d = X.shape[1]
    out = np.empty((nk, n))
    for p in prange(n):
        width = sizes[nk - 1, p]
        diff = np.empty((width, d))
        sq = np.empty(width)
        state = np.zeros(3)
        j = 0
        for t in range(nk):
            target = sizes[t, p]
            while j < target:
                o = idx[p, j]
                s = 0.0
                for u in range(d):
                    v = X[o, u] - X[p, u]
                    diff[j, u] = v
                    s += v * v
                sq[j] = s
                if s > 0.0:
                    for i in range(j):
                        if sq[i] > 0.0:
                            dot = 0.0
                            for u in range(d):
                                dot += diff[i, u] * diff[j, u]
                            div = 1.0 / (sq[i] * s)
                            _mv_put(state, dot * div, np.sqrt(div))
                j += 1
            if state[0] > 0.0:
                out[t, p] = state[2] / state[0]
            else:
                out[t, p] = no_pair
    return out


@njit(cache=True)
def _poly2(X, a, b):  # pragma: no cover - numba
    s = 0.0
    for u in range(X.shape[1]):
        s += X[a, u] * X[b, u]
    return s * s


@njit(cache=True, parallel=True)
def _abof_poly2(X, ks, no_pair):  # pragma: no cover - numba
    """ELKI 0.7.1's FastABOD with the kernel K(x, y) = (x·y)², reproduced to the last bit.

    Neighbours: ELKI's kNN heap over the kernel-space squared distances K(A,A) + K(B,B) − 2K(A,B) of the
    objects at positive kernel distance (index order, ties included); pairs (B, C) in that list's order;
    ELKI 0.7.1's weighted MeanVariance. ``ks`` ascending. O(N²d) for the search, O(|N|²) per k."""
    n = X.shape[0]
    nk = ks.shape[0]
    diag = np.empty(n)
    for i in range(n):
        diag[i] = _poly2(X, i, i)
    out = np.empty((nk, n))
    for a in prange(n):
        simaa = diag[a]
        keys = np.empty(n)
        cnt = 0
        for b in range(n):
            keys[b] = np.nan
            if b == a:
                continue
            sab = _poly2(X, a, b)
            v = simaa + diag[b] - sab - sab
            if v > 0.0:
                keys[b] = v
                cnt += 1
        if cnt < 2:
            for t in range(nk):
                out[t, a] = no_pair
            continue
        cand = np.empty(cnt, dtype=np.int64)
        c = 0
        for b in range(n):
            if keys[b] == keys[b]:
                cand[c] = b
                c += 1
        order = np.argsort(keys[cand], kind="mergesort")
        srt = cand[order]  # sorted by (key, index)
        sizes = np.empty(nk, dtype=np.int64)
        for t in range(nk):
            kk = min(ks[t], cnt)
            thr = keys[srt[kk - 1]]
            m = kk
            while m < cnt and keys[srt[m]] <= thr:
                m += 1
            sizes[t] = m
        width = sizes[nk - 1]
        nb = srt[:width]
        # kernel values among the widest neighbour list
        Kb = np.empty((width, width))
        for i in range(width):
            for j in range(i, width):
                v = _poly2(X, nb[i], nb[j])
                Kb[i, j] = v
                Kb[j, i] = v
        sab = np.empty(width)
        for i in range(width):
            sab[i] = _poly2(X, a, nb[i])
        pos = np.empty(width, dtype=np.int64)
        state = np.zeros(3)
        for t in range(nk):
            m = sizes[t]
            for i in range(m):
                pos[i] = i
            tied = False
            for i in range(m - 1):
                if keys[nb[i]] == keys[nb[i + 1]]:
                    tied = True
                    break
            if tied:  # ELKI's heap order among equal keys
                K = min(ks[t], cnt)
                hk = np.empty(K)
                hv = np.empty(K, dtype=np.int64)
                ties = np.empty(n, dtype=np.int64)
                lst = np.empty(n, dtype=np.int64)
                total = elki_knn_list(keys, K, hk, hv, ties, lst)
                if total == m:
                    for i in range(m):
                        o = lst[i]
                        for j in range(m):
                            if nb[j] == o:
                                pos[i] = j
                                break
            state[0] = 0.0
            state[1] = 0.0
            state[2] = 0.0
            for i in range(m):
                bi = pos[i]
                sqab = keys[nb[bi]]
                for j in range(i + 1, m):
                    ci = pos[j]
                    sqac = keys[nb[ci]]
                    num = Kb[bi, ci] - sab[bi] - sab[ci] + simaa
                    div = 1.0 / (sqab * sqac)
                    _mv_put(state, num * div, np.sqrt(div))
            out[t, a] = state[2] / state[0] if state[0] > 0.0 else no_pair
    return out


def fastabod_scores(graph: Any, ks: int | Sequence[int], kernel: str = "linear") -> np.ndarray:
    """Raw FastABOD scores (the angle-based outlier factor, **low = outlier**) for every k in ``ks``.

    Parameters
    ----------
    graph : KNNGraph
        Exact Euclidean kNN graph (:func:`odeval.neighbors.knn_graph`) with ``k_max >= max(ks)``.
        With ``kernel="poly2"`` only ``graph.X`` is used (the neighbours are searched in kernel space).
    ks : int or sequence of int
        Neighbourhood sizes, each ≥ 3.
    kernel : {"linear", "poly2"}
        ``"linear"`` (default): the textbook FastABOD — Euclidean k nearest neighbours, angles in input
        space. ``"poly2"``: ELKI 0.7.0/0.7.1's default, K(x, y) = (x·y)² for both the neighbour search and
        the angles (used by Campos et al. 2016).

    Returns
    -------
    ndarray of shape (len(ks), n_objects)
        ABOF(p) ≥ 0, low = outlier (``FastABOD.score_all_k`` negates it). ``+inf`` where fewer than two
        neighbours at positive distance remain, so that no angle is defined (see Notes).

    Notes
    -----
    Kriegel et al. (2008), Definition 3 (ABOF) restricted to N = N_k(A) (FastABOD, Section 3.3)::

        ABOF(A) = VAR_{B,C∈N, B≠C} ( ⟨B−A, C−A⟩ / (‖B−A‖² ‖C−A‖²) ),
                  weighted by 1 / (‖B−A‖ ‖C−A‖),

    over unordered pairs, weighted naive variance Σ w (v − v̄_w)² / Σ w (as in the paper and ELKI),
    accumulated with West's weighted update. N_k(A) contains the objects tied at the k-distance. Neighbours
    at distance 0 (exact duplicates of A) form no angle and are skipped — they still occupy neighbour slots
    (the project's k convention; ELKI 0.7.5's linear-kernel path does the same). With one pair left the
    variance is 0. With no pair (fewer than two neighbours at positive distance, i.e. at least k − 1
    duplicates of A) the paper's ABOF is undefined; we return +inf (maximally inlying), never NaN, where
    ELKI returns NaN. Degenerate case: when at some k *no* object has a pair (all objects coincide with their
    neighbours, e.g. all-duplicate data), all objects are equally outlying and every ABOF is 0.0 — one finite
    tie rather than +inf for all (both kernels).

    ELKI 0.7.1 (``kernel="poly2"``) uses K(x, y) = (x·y)²: the squared distance in feature space is
    K(A,A) + K(B,B) − 2K(A,B), objects at kernel distance 0 (duplicates, and also −A) are *excluded from the
    search*, so the k neighbours are the k nearest at positive kernel distance (ties included), and the
    angle term is (K(B,C) − K(A,B) − K(A,C) + K(A,A)) / (sqd(A,B)·sqd(A,C)). This variant is not translation
    invariant. It follows ELKI's arithmetic and order (its kNN heap order among equal kernel distances, pairs
    in list order, ELKI 0.7.1's ``MeanVariance``), so the values are ELKI's to the last bit.

    References
    ----------
    H.-P. Kriegel, M. Schubert, A. Zimek. Angle-based outlier detection in high-dimensional data.
    KDD 2008, pp. 444–452.
    """
    return FastABOD(kernel=kernel).raw_scores_all_k(graph, ks)


def _degenerate_rows_to_zero(raw: np.ndarray) -> np.ndarray:
    """The degenerate case: at a k where *no* object has an angle pair (e.g. all objects are duplicates), all
    objects are equally outlying; their ABOF is 0.0 (finite, one tie) instead of +inf for every object."""
    undefined = (raw == _NO_PAIR_VALUE).all(axis=1)
    if undefined.any():
        raw = raw.copy()
        raw[undefined] = 0.0
    return raw


@register
class FastABOD(Detector):
    """Fast angle-based outlier detection (Kriegel et al. 2008); see :func:`fastabod_scores`."""

    # scoring_version 2: the degenerate case (no angle pair anywhere, e.g. all-duplicate data) is one finite tie
    info = MethodInfo(name="FastABOD", min_k=3, inverted=True, inlier_value=None, score_range=(0.0, np.inf),
                      reference="H.-P. Kriegel, M. Schubert, A. Zimek. Angle-based outlier detection in "
                      "high-dimensional data. KDD 2008.", scaling="log_inversion", scoring_version=2)

    _parameter_constraints: ClassVar[dict[str, Any]] = {"kernel": Options(_KERNELS)}

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        return _degenerate_rows_to_zero(self._raw(graph, ks))

    def _raw(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        X = np.ascontiguousarray(graph.X, dtype=np.float64)
        if self.kernel == "poly2":
            arr = check_ks(ks, int(graph.n_objects), self.info)
            uniq, inverse = np.unique(arr, return_inverse=True)
            return _abof_poly2(X, uniq, _NO_PAIR_VALUE)[inverse.reshape(-1)]
        if not _is_euclidean(graph):
            raise ValueError(f"FastABOD: the linear kernel needs a Euclidean kNN graph (angles are Euclidean), "
                             f"got metric {getattr(graph.metric, 'name', graph.metric)!r}")
        _, uniq, inverse = _prepare_ks(graph, ks, self.info)
        sizes = _neighbourhood_sizes(graph, uniq)
        idx = np.ascontiguousarray(graph.indices, dtype=np.int64)
        return _abof_linear(X, idx, sizes, _NO_PAIR_VALUE)[inverse]
