"""The eight measures and the outliers' ranks of one scoring in one compiled pass (the study runner's evaluation).

:func:`odeval.measures.evaluate_scoring` followed by :func:`odeval.measures.outlier_ranks` costs about 70 µs per
scoring in numpy calls (≈ 10 µs here for N ≤ 500), a large part of a small dataset's study time (a variant has
~1,100 (method, k) scorings). :class:`ScoringEvaluator` validates the labels once and computes, per scoring,
exactly the same numbers in one numba call after numpy's sort: the same tie groups, the same integer arithmetic,
the same floating-point operations in the same order — including numpy's pairwise summation for average
precision (:func:`_numpy_sum`) — so every value is bit-identical to the numpy path (tested on random, tied and
±inf scorings: tests/measures/test_compiled.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from odeval._validation import check_labels
from odeval.measures._ranking import MEASURES, evaluate_scoring, finite_for_ranking, outlier_ranks

__all__ = ["ScoringEvaluator"]


@njit(cache=True)
def _block_sum(a: np.ndarray, lo: int, n: int) -> float:  # pragma: no cover - numba
    """numpy's ``pairwise_sum`` of at most 128 float64 values (numpy/_core/src/umath/loops_utils.h.src)."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    m = n - (n % 8)
    while i < m:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def _pairwise(a: np.ndarray, lo: int, n: int) -> float:  # pragma: no cover - numba
    """numpy's ``pairwise_sum`` for float64: blocks of at most 128 values, halved (to a multiple of 8) above.
    The recursion runs on an explicit stack (numba's cache cannot reload a recursive function)."""
    if n <= 128:
        return _block_sum(a, lo, n)
    task_lo = np.empty(256, dtype=np.int64)  # depth ≤ log2(n) < 64; 3 entries per level at most
    task_n = np.empty(256, dtype=np.int64)  # n < 0: "add the two values on top of the value stack"
    values = np.empty(128)
    t = 0
    v = 0
    task_lo[0], task_n[0] = lo, n
    t = 1
    while t > 0:
        t -= 1
        tl, tn = task_lo[t], task_n[t]
        if tn < 0:
            v -= 1
            values[v - 1] = values[v - 1] + values[v]
        elif tn <= 128:
            values[v] = _block_sum(a, tl, tn)
            v += 1
        else:
            n2 = tn // 2
            n2 -= n2 % 8
            task_lo[t], task_n[t] = 0, -1  # combine, after both halves
            task_lo[t + 1], task_n[t + 1] = tl + n2, tn - n2  # right half, second
            task_lo[t + 2], task_n[t + 2] = tl, n2  # left half, first
            t += 3
    return values[0]


@njit(cache=True)
def _numpy_sum(a: np.ndarray) -> float:  # pragma: no cover - numba
    """``np.sum`` of a contiguous float64 vector, bit for bit: the identity 0.0 plus the pairwise sum."""
    return 0.0 + _pairwise(a, 0, a.shape[0])


@njit(cache=True)
def _evaluate_one(s, ss, objects):  # pragma: no cover - numba
    """MEASURES (in that order) and the outliers' mid-ranks of the finite scoring ``s``; ``ss``: ``np.sort(s)``
    (numpy's SIMD sort is faster than numba's); ``objects``: the outliers' indices (ascending). Mirrors
    ``_ranking._tie_groups`` / ``_evaluate_groups`` / ``outlier_ranks`` operation by operation."""
    n = s.shape[0]
    n_pos = objects.shape[0]
    sp = np.empty(n_pos)
    for j in range(n_pos):
        sp[j] = s[objects[j]]
    sp.sort()
    n_groups = 1
    for i in range(1, n):
        if ss[i] != ss[i - 1]:
            n_groups += 1
    size_asc = np.empty(n_groups, dtype=np.int64)
    pos_asc = np.zeros(n_groups, dtype=np.int64)
    g = 0
    start = 0
    for i in range(1, n):
        if ss[i] != ss[i - 1]:
            size_asc[g] = i - start
            start = i
            g += 1
    size_asc[n_groups - 1] = n - start
    # outliers per group: every outlier score is one of the group values (searchsorted "left" in numpy)
    j = 0
    end = 0
    for g in range(n_groups):
        end += size_asc[g]
        v = ss[end - 1]
        while j < n_pos and sp[j] == v:
            pos_asc[g] += 1
            j += 1
    # descending order: group d is ascending group n_groups - 1 - d
    terms = np.empty(n_groups)
    two_u = 0
    cum_pos = 0
    cum_size = 0
    f1 = -np.inf
    rp_hits = -1.0
    for d in range(n_groups):
        size = size_asc[n_groups - 1 - d]
        pos = pos_asc[n_groups - 1 - d]
        cum_pos += pos
        cum_size += size
        two_u += (size - pos) * (2 * (cum_pos - pos) + pos)
        terms[d] = np.float64(pos) * (np.float64(cum_pos) / np.float64(cum_size))
        f = (2.0 * np.float64(cum_pos)) / np.float64(cum_size + n_pos)
        if f > f1:
            f1 = f
        if rp_hits < 0.0 and cum_size >= n_pos:  # _expected_hits_at(g, |O|)
            if cum_size == n_pos:
                rp_hits = np.float64(cum_pos)
            else:
                prev_size = cum_size - size
                prev_pos = cum_pos - pos
                rp_hits = np.float64(prev_pos) + np.float64(pos * (n_pos - prev_size)) / np.float64(size)
    auc = np.float64(two_u) / ((2.0 * n_pos) * np.float64(n - n_pos))
    ap = _numpy_sum(terms) / n_pos
    rp = rp_hits / n_pos
    expected = np.float64(n_pos) / np.float64(n)
    out = np.empty(8)
    out[0] = auc
    out[1] = ap
    out[2] = rp
    out[3] = f1
    out[4] = 2.0 * auc - 1.0
    out[5] = (ap - expected) / (1.0 - expected)
    out[6] = (rp - expected) / (1.0 - expected)
    out[7] = (f1 - expected) / (1.0 - expected)
    ranks = np.empty(n_pos)
    for j in range(n_pos):
        so = s[objects[j]]
        higher = n - np.searchsorted(ss, so, side="right")
        at_least = n - np.searchsorted(ss, so, side="left")
        ranks[j] = (higher + 1 + at_least) / 2.0
    return out, ranks


class ScoringEvaluator:
    """Evaluate many scorings of the same labelled objects: the labels are validated once.

    ``evaluator(scores)`` returns what ``evaluate_scoring(labels, scores)`` and
    ``outlier_ranks(labels, ranked)`` return — the :data:`MEASURES` as a dict and the outliers' mid-ranks
    (average ties) — bit for bit, from one compiled pass. ±inf scores are ranked through
    :func:`~odeval.measures.finite_for_ranking` first; a scoring with NaN goes through the numpy path, which
    raises its error.

    Parameters
    ----------
    labels : array-like of shape (N,)
        Ground truth, bool or 0/1 (True / 1 = outlier). Both classes must be present.

    References
    ----------
    Campos et al. (2016), Eq. (12)-(16), with ELKI 0.7.1's tie rules; see :func:`odeval.measures.evaluate`.
    """

    def __init__(self, labels: Any):
        self.labels = check_labels(labels)
        self.objects = np.flatnonzero(self.labels).astype(np.int64)

    def __call__(self, scores: Any) -> tuple[dict[str, float], np.ndarray]:
        s = np.asarray(scores)
        if s.ndim != 1 or s.shape[0] != self.labels.shape[0] or s.dtype != np.float64 or np.isnan(s).any():
            full, ranked = evaluate_scoring(self.labels, scores)  # validation and its errors, as before
            return full, np.asarray(outlier_ranks(self.labels, ranked), dtype=np.float64)
        if np.isinf(s).any():
            s = finite_for_ranking(s)
        s = np.ascontiguousarray(s)
        values, ranks = _evaluate_one(s, np.sort(s), self.objects)
        return dict(zip(MEASURES, values.tolist(), strict=True)), ranks
