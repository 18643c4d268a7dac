"""Similarity of outlier scorings (Schubert, Wojdanowski, Zimek, Kriegel, SDM 2012, Section 3).

Outlier data sets are heavily imbalanced: an unweighted correlation of two scorings is dominated by the
inliers, whose scores are mostly noise. Schubert et al. therefore weight every object so that the outliers O
and the inliers I carry the same total weight,

    w(o) = 1 / (2|O|) for o ∈ O,    w(o) = 1 / (2|I|) for o ∈ I,                       (class-balanced)

and compare scorings with the weighted Pearson correlation (Eq. 3.1)

    r_w(x, y) = Σ w (x − x̄_w)(y − ȳ_w) / sqrt(Σ w (x − x̄_w)² · Σ w (y − ȳ_w)²),   x̄_w = Σ w x / Σ w,

or with weighted Manhattan (Σ w |x − y|) and squared Euclidean (Σ w (x − y)²) distances. Without labels, O is
*estimated* as the union of the top-ranked objects of the compared scorings (:func:`estimated_outliers`).

Scores should be normalised first (:mod:`odeval.scaling`, e.g. :func:`odeval.scaling.unify`); the distances
are only meaningful on a common [0, 1] scale, and the ground truth enters as the 0/1 label vector.

Spearman's ρ and Kendall's τ-b (tie-aware, via scipy) are given for reference; they are unweighted.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from scipy import stats

from odeval._validation import check_labels, check_numeric_matrix, check_scores

__all__ = [
    "MEASURES",
    "check_score_matrix",
    "class_balanced_weights",
    "estimated_outliers",
    "kendall_tau_b",
    "similarity",
    "similarity_matrix",
    "spearman_rho",
    "weighted_manhattan",
    "weighted_pearson",
    "weighted_squared_euclidean",
]

Measure = Literal["pearson", "manhattan", "sqeuclidean", "spearman", "kendall"]
#: Similarity / distance measures of :func:`similarity` and :func:`similarity_matrix`. ``pearson``, ``spearman``
#: and ``kendall`` are correlations (1 = identical ranking); ``manhattan`` and ``sqeuclidean`` are distances
#: (0 = identical scores).
MEASURES: tuple[str, ...] = ("pearson", "manhattan", "sqeuclidean", "spearman", "kendall")


def check_score_matrix(scores: Any, *, name: str = "scores") -> np.ndarray:
    """Return a (R, N) float64 matrix of finite scores (rows = scorings); raise naming row and column."""
    arr = np.asarray(scores)
    arr = check_numeric_matrix(arr[None, :] if arr.ndim == 1 else arr, name=name, rows="scoring",
                               columns="object", shape_hint="(n_scorings, n_objects)",
                               hint="; normalise them first (odeval.scaling maps +inf to 1)")
    if arr.shape[0] < 1 or arr.shape[1] < 2:
        raise ValueError(f"{name} needs at least one scoring of at least two objects, got shape {arr.shape}")
    return arr


def class_balanced_weights(labels: Any) -> np.ndarray:
    """Weights ``1/(2|O|)`` for outliers and ``1/(2|I|)`` for inliers (Schubert et al. 2012, Sect. 3.1).

    Both classes then carry total weight ½; the weights sum to 1.

    Parameters
    ----------
    labels : array-like of shape (n_objects,)
        Bool or 0/1, True = outlier (true labels or an estimated outlier set). Both classes must occur.
    """
    y = check_labels(labels)
    n_out = int(y.sum())
    return np.where(y, 0.5 / n_out, 0.5 / (y.size - n_out))


def _descending_order(row: np.ndarray) -> np.ndarray:
    # stable: among tied scores, the lower object index ranks first
    return np.argsort(-row, kind="stable")


def estimated_outliers(
    scores: Any, *, rate: float | None = 0.01, n_outliers: int | None = None, minvote: int = 1
) -> np.ndarray:
    """Estimated outlier set: the union of the top-ranked objects of the given scorings (Schubert et al. 2012).

    The top ranks of all scorings are merged round-robin — in round k every scoring contributes its k-th
    ranked object — until at least ``n_outliers`` distinct objects have been contributed ``minvote`` times.
    The last round is completed, so the set can be slightly larger. This is the procedure of ELKI's
    ``GreedyEnsembleExperiment`` (``-greedy.rate``, minvote 1).

    Parameters
    ----------
    scores : array-like of shape (n_scorings, n_objects) or (n_objects,)
        Scores, higher = more outlying. Ties are broken by object index (lower first).
    rate : float, default 0.01
        Expected outlier rate; ``n_outliers = max(1, int(rate · n_objects))`` (ELKI truncates; odeval needs at
        least one outlier). Ignored if ``n_outliers`` is given.
    n_outliers : int, optional
        The desired size of the set.
    minvote : int, default 1
        How many scorings must rank an object in their top before it counts; capped at n_scorings − 1 (for
        two or more scorings), as in ELKI.

    Returns
    -------
    ndarray of bool, shape (n_objects,)
        True for the estimated outliers.
    """
    S = check_score_matrix(scores)
    n_sc, n = S.shape
    if n_outliers is None:
        if rate is None or not 0.0 < float(rate) < 1.0:
            raise ValueError(f"rate must be in (0, 1), got {rate!r}")
        desired = max(1, int(float(rate) * n))
    else:
        desired = int(n_outliers)
        if not 1 <= desired < n:
            raise ValueError(f"n_outliers must be in [1, {n - 1}], got {n_outliers!r}")
    minvote = int(minvote)
    if minvote < 1:
        raise ValueError(f"minvote must be >= 1, got {minvote}")
    minvote = min(minvote, max(1, n_sc - 1)) if n_sc > 1 else 1
    orders = np.stack([_descending_order(r) for r in S])  # (n_sc, n)
    votes = np.zeros(n, dtype=np.int64)
    union = 0
    k = 0
    while union < desired and k < n:
        for obj in orders[:, k]:
            votes[obj] += 1
            if votes[obj] == minvote:
                union += 1
        k += 1
    out = votes >= minvote
    if out.all():
        raise ValueError("the estimated outlier set contains every object; lower rate / n_outliers")
    return out


def _score_pair(x: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Two score vectors of one length (finite, 1-d), or a one-line ``ValueError``."""
    xs = check_scores(x, name="x")
    ys = check_scores(y, name="y")
    if xs.size != ys.size:
        raise ValueError(f"x and y differ in length: {xs.size} and {ys.size}")
    return xs, ys


def _weights(weights: Any, n: int) -> np.ndarray:
    w = np.asarray(weights)
    if w.dtype == bool:
        raise ValueError("weights must be numbers; for labels use class_balanced_weights(labels)")
    w = check_scores(w, name="weights")
    if w.size != n:
        raise ValueError(f"weights and scores differ in length: {w.size} weights, {n} scores")
    if (w < 0).any() or not w.sum() > 0:
        raise ValueError("weights must be non-negative with a positive sum")
    return w


def weighted_pearson(x: Any, y: Any, weights: Any) -> float:
    """Weighted Pearson correlation r_w (Schubert et al. 2012, Eq. 3.1).

    Parameters
    ----------
    x, y : array-like of shape (n_objects,)
        Two scorings (finite).
    weights : array-like of shape (n_objects,)
        Non-negative weights, normally :func:`class_balanced_weights` of the (true or estimated) labels.

    Returns
    -------
    float
        In [−1, 1]. Convention of ELKI 0.7.1 (``MathUtil.weightedPearsonCorrelationCoefficient``) for constant
        input: 1 if both scorings are constant, 0 if exactly one is.

    References
    ----------
    E. Schubert, R. Wojdanowski, A. Zimek, H.-P. Kriegel. On Evaluation of Outlier Rankings and Outlier
    Scores. SDM 2012.
    """
    xs, ys = _score_pair(x, y)
    w = _weights(weights, xs.size)
    return float(_pearson_matrix(np.stack([xs, ys]), w)[0, 1])


def _pearson_matrix(S: np.ndarray, w: np.ndarray) -> np.ndarray:
    wsum = w.sum()
    mean = (S @ w) / wsum
    C = S - mean[:, None]
    # r is scale-invariant: bring each row to max |C| in [0.5, 1) by an exact power of two, so tiny or huge
    # scorings (e.g. subnormal values) cannot underflow or overflow their variance; bit-identical otherwise.
    _, exponent = np.frexp(np.abs(C).max(axis=1))
    C = np.ldexp(C, -exponent[:, None])
    cov = (C * w) @ C.T
    var = np.diag(cov).copy()
    const = np.ptp(S, axis=1) == 0  # exactly constant scorings
    var[const] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        r = cov / np.sqrt(np.outer(var, var))
    r = np.clip(r, -1.0, 1.0)
    both = np.logical_and.outer(const, const)
    one = np.logical_xor.outer(const, const)
    r[both] = 1.0
    r[one] = 0.0
    np.fill_diagonal(r, 1.0)
    return r


def weighted_manhattan(x: Any, y: Any, weights: Any) -> float:
    """Weighted Manhattan distance ``Σ w |x − y|`` (Schubert et al. 2012; ELKI
    ``WeightedManhattanDistanceFunction``). ``weights`` as in :func:`weighted_pearson`."""
    xs, ys = _score_pair(x, y)
    return float(np.abs(xs - ys) @ _weights(weights, xs.size))


def weighted_squared_euclidean(x: Any, y: Any, weights: Any) -> float:
    """Weighted squared Euclidean distance ``Σ w (x − y)²`` (Schubert et al. 2012; ELKI
    ``WeightedSquaredEuclideanDistanceFunction``). ``weights`` as in :func:`weighted_pearson`."""
    xs, ys = _score_pair(x, y)
    d = xs - ys
    return float((d * d) @ _weights(weights, xs.size))


def spearman_rho(x: Any, y: Any) -> float:
    """Spearman's rank correlation ρ (average ranks for ties; ``scipy.stats.spearmanr``). Unweighted.
    NaN if a scoring is constant."""
    xs, ys = check_scores(x, name="x"), check_scores(y, name="y")
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(stats.spearmanr(xs, ys).statistic)


def kendall_tau_b(x: Any, y: Any) -> float:
    """Kendall's τ-b (tie-corrected; ``scipy.stats.kendalltau(variant="b")``). Unweighted. NaN if a scoring is
    constant."""
    xs, ys = check_scores(x, name="x"), check_scores(y, name="y")
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(stats.kendalltau(xs, ys, variant="b").statistic)


def similarity(
    x: Any,
    y: Any,
    labels: Any = None,
    *,
    measure: Measure = "pearson",
    rate: float | None = 0.01,
    n_outliers: int | None = None,
) -> float:
    """Similarity (correlation) or distance of two scorings with class-balanced weights.

    Parameters
    ----------
    x, y : array-like of shape (n_objects,)
        Normalised scorings.
    labels : array-like of shape (n_objects,), optional
        True labels. Without them, the outlier set is estimated from ``x`` and ``y``
        (:func:`estimated_outliers` with ``rate`` / ``n_outliers``).
    measure : {"pearson", "manhattan", "sqeuclidean", "spearman", "kendall"}
        ``pearson`` = r_w (Eq. 3.1); ``manhattan`` / ``sqeuclidean`` = weighted distances; ``spearman`` and
        ``kendall`` ignore the weights.
    """
    xs, ys = _score_pair(x, y)
    if measure == "spearman":
        return spearman_rho(xs, ys)
    if measure == "kendall":
        return kendall_tau_b(xs, ys)
    if labels is None:
        labels = estimated_outliers(np.stack([xs, ys]), rate=rate, n_outliers=n_outliers)
    w = class_balanced_weights(labels)
    if w.size != xs.size:
        raise ValueError(f"labels and scores differ in length: {w.size} labels, {xs.size} scores")
    if measure == "pearson":
        return float(_pearson_matrix(np.stack([xs, ys]), w)[0, 1])
    if measure == "manhattan":
        return float(np.abs(xs - ys) @ w)
    if measure == "sqeuclidean":
        return float(((xs - ys) ** 2) @ w)
    raise ValueError(f"unknown measure {measure!r}; use one of {', '.join(MEASURES)}")


def similarity_matrix(
    scores: Any,
    labels: Any = None,
    *,
    measure: Measure = "pearson",
    rate: float | None = 0.01,
    n_outliers: int | None = None,
) -> np.ndarray:
    """Pairwise similarity of many scorings plus the ground truth (Schubert et al. 2012, Figs. 3–5 style).

    Parameters
    ----------
    scores : array-like of shape (R, n_objects)
        One normalised scoring per row (e.g. method × k).
    labels : array-like of shape (n_objects,), optional
        True labels: they give the class-balanced weights and the ground-truth row. Without labels the
        estimated outlier set of all R scorings (:func:`estimated_outliers`) plays both roles.
    measure : {"pearson", "manhattan", "sqeuclidean", "spearman", "kendall"}

    Returns
    -------
    ndarray of shape (R + 1, R + 1)
        Row/column 0 is the ground truth (the 0/1 label vector, or the estimated one), rows 1..R the
        scorings in input order. Symmetric; diagonal 1 for correlations, 0 for distances. Rank correlations
        with a constant row are NaN.
    """
    S = check_score_matrix(scores)
    if labels is None:
        truth = estimated_outliers(S, rate=rate, n_outliers=n_outliers)
    else:
        truth = check_labels(labels)
        if truth.size != S.shape[1]:
            raise ValueError(f"labels and scores differ in length: {truth.size} labels, {S.shape[1]} objects")
    full = np.vstack([truth.astype(np.float64), S])
    if measure in ("spearman", "kendall"):
        f = spearman_rho if measure == "spearman" else kendall_tau_b
        R = full.shape[0]
        M = np.eye(R)
        for i in range(R):
            for j in range(i + 1, R):
                M[i, j] = M[j, i] = f(full[i], full[j])
        return M
    w = class_balanced_weights(truth)
    if measure == "pearson":
        return _pearson_matrix(full, w)
    if measure in ("manhattan", "sqeuclidean"):
        R = full.shape[0]
        M = np.zeros((R, R))
        for i in range(R - 1):
            d = full[i + 1:] - full[i]  # differences, not the |x|² + |y|² − 2xy expansion
            M[i, i + 1:] = (np.abs(d) if measure == "manhattan" else d * d) @ w
        return M + M.T
    raise ValueError(f"unknown measure {measure!r}; use one of {', '.join(MEASURES)}")
