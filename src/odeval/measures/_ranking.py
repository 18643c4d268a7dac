"""External (label-based) evaluation measures for outlier scorings, correct to the last tie.

Every measure here is a function of the *tie groups* of the descending ranking: maximal sets of objects with
exactly equal scores. One sort of the scores gives, for each group g (in descending score order), its size t_g
and its number of outliers a_g; every measure is then vectorised arithmetic over the cumulative counts

* P_g = a_1 + ... + a_g   (outliers with a score >= the score of group g),
* T_g = t_1 + ... + t_g   (objects with a score >= the score of group g),
* N_g = T_g - P_g         (inliers with a score >= the score of group g).

The tie rules are those of ELKI 0.7.1, the reference implementation of Campos et al. (2016); see
``docs/measures.md`` for the equations and the differences to scikit-learn.

The sort: instead of an argsort of all scores, the scores are sorted (``np.sort``, SIMD-accelerated), and the
outliers' scores are sorted separately and located in the sorted unique values (``np.searchsorted`` with sorted
needles). This yields a_g and t_g exactly, about 3-4x faster than an argsort.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import numpy as np

from odeval._validation import check_labels, check_labels_scores, check_scores

__all__ = [
    "MEASURES",
    "MEASURES_AT_N",
    "PrecisionRecallF1",
    "adjust_for_chance",
    "adjusted_average_precision",
    "adjusted_max_f1",
    "adjusted_precision_at_n",
    "adjusted_r_precision",
    "adjusted_roc_auc",
    "average_precision",
    "avpr",
    "evaluate",
    "evaluate_many",
    "evaluate_scoring",
    "max_f1",
    "max_f1_threshold",
    "outlier_ranks",
    "precision_at_n",
    "precision_recall_curve",
    "precision_recall_f1_at_count",
    "precision_recall_f1_at_threshold",
    "r_precision",
    "roc_auc",
    "roc_curve",
    "finite_for_ranking",
]

#: Names (and order) of the measures that :func:`evaluate` always returns; these are the column names of the
#: results store. They are ELKI 0.7.1's eight numbers (``EvaluatePrecomputedOutlierScores``), in ELKI's order.
MEASURES: tuple[str, ...] = (
    "roc_auc",
    "average_precision",
    "r_precision",
    "max_f1",
    "adjusted_roc_auc",
    "adjusted_average_precision",
    "adjusted_r_precision",
    "adjusted_max_f1",
)

#: Names of the measures that :func:`evaluate` adds when it is given ``n``.
MEASURES_AT_N: tuple[str, ...] = ("precision_at_n", "adjusted_precision_at_n")

_APTies = Literal["elki", "expected"]
_RankTies = Literal["average", "min", "max"]


# ---------------------------------------------------------------------------------------------------------------------
# The one sort
# ---------------------------------------------------------------------------------------------------------------------


class _Groups(NamedTuple):
    """Tie groups of the descending ranking (all arrays in descending score order, one entry per group)."""

    values: np.ndarray  # float64 (G,), the group's score, strictly decreasing
    size: np.ndarray  # int64 (G,), t_g
    pos: np.ndarray  # int64 (G,), a_g
    cum_pos: np.ndarray  # int64 (G,), P_g
    cum_size: np.ndarray  # int64 (G,), T_g
    n_pos: int  # |O|
    n_obj: int  # N


def _tie_groups(y: np.ndarray, s: np.ndarray) -> _Groups:
    """Group the (validated) scores ``s`` into tie groups and count the outliers ``y`` in each.

    ``-0.0`` and ``0.0`` are equal, hence tied (ELKI's ``Double.compare`` would separate them).
    """
    n = s.shape[0]
    ss = np.sort(s)  # ascending
    if n > 1:
        new = ss[1:] != ss[:-1]
        ends = np.flatnonzero(new)  # index of the last element of every group but the last one
        ends = np.append(ends, n - 1)
    else:
        ends = np.zeros(1, dtype=np.intp)
    values_asc = ss[ends]
    size_asc = np.diff(ends, prepend=-1)
    sp = np.sort(s[y])
    # every outlier score is one of values_asc: searchsorted(left) gives the index of its group
    pos_asc = np.bincount(np.searchsorted(values_asc, sp), minlength=values_asc.shape[0])
    size = size_asc[::-1].astype(np.int64, copy=False)
    pos = pos_asc[::-1].astype(np.int64, copy=False)
    return _Groups(
        values=values_asc[::-1],
        size=size,
        pos=pos,
        cum_pos=np.cumsum(pos),
        cum_size=np.cumsum(size),
        n_pos=int(sp.shape[0]),
        n_obj=int(n),
    )


def _groups(labels: Any, scores: Any) -> _Groups:
    y, s = check_labels_scores(labels, scores)
    return _tie_groups(y, s)


def _check_n(n: Any, n_obj: int, *, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise ValueError(f"{name} must be an integer, got {n!r}")
    n = int(n)
    if not 1 <= n <= n_obj:
        raise ValueError(f"{name}={n} is out of range: it must lie in 1..{n_obj} (the number of objects)")
    return n


# ---------------------------------------------------------------------------------------------------------------------
# Group-level kernels (no validation; used by the public functions and by evaluate)
# ---------------------------------------------------------------------------------------------------------------------


def _roc_auc(g: _Groups) -> float:
    # 2U = sum_g b_g (2 P_{g-1} + a_g), computed exactly in int64 (2U <= 2|O|(N-|O|) <= N^2/2)
    neg = g.size - g.pos
    prev_pos = g.cum_pos - g.pos
    two_u = int(np.dot(neg, 2 * prev_pos + g.pos))
    return two_u / (2.0 * g.n_pos * (g.n_obj - g.n_pos))


def _ap_elki(g: _Groups) -> float:
    return float(np.sum(g.pos * (g.cum_pos / g.cum_size)) / g.n_pos)


def _ap_expected(g: _Groups) -> float:
    # singletons (or groups without a tie) contribute exactly as in ELKI's rule
    simple = (g.pos > 0) & (g.size == 1)
    total = float(np.sum(g.cum_pos[simple] / g.cum_size[simple]))
    tied = np.flatnonzero((g.pos > 0) & (g.size > 1))
    if tied.size:
        t = g.size[tied]
        a = g.pos[tied]
        p0 = (g.cum_pos[tied] - a).astype(np.float64)
        t0 = g.cum_size[tied] - t
        # one term per position j = 1..t of every tied group containing outliers:
        # E[precision contribution at j] = (a/t) (P0 + 1 + (j-1)(a-1)/(t-1)) / (T0 + j)
        grp = np.repeat(np.arange(tied.size), t)
        starts = np.cumsum(t) - t
        j = np.arange(grp.size) - starts[grp] + 1
        tf = t.astype(np.float64)
        af = a.astype(np.float64)
        num = (af / tf)[grp] * (p0[grp] + 1.0 + (j - 1) * ((af - 1.0) / (tf - 1.0))[grp])
        total += float(np.sum(num / (t0[grp] + j)))
    return total / g.n_pos


def _expected_hits_at(g: _Groups, n: int) -> float:
    """Expected number of outliers among the top ``n`` under random order within the group straddling ``n``."""
    # first group whose cumulative size reaches n
    k = int(np.searchsorted(g.cum_size, n, side="left"))
    prev_size = int(g.cum_size[k] - g.size[k])
    prev_pos = int(g.cum_pos[k] - g.pos[k])
    if n == g.cum_size[k]:
        return float(g.cum_pos[k])
    return float(prev_pos + g.pos[k] * (n - prev_size) / g.size[k])


def _max_f1(g: _Groups) -> float:
    # F1 at the end of group g: 2 P_g / (T_g + |O|)  (= 2 prec rec / (prec + rec), and 0 when P_g = 0)
    return float(np.max(2.0 * g.cum_pos / (g.cum_size + g.n_pos)))


def _adjust(value: float, g: _Groups, maximum: float = 1.0) -> float:
    return adjust_for_chance(value, g.n_pos / g.n_obj, maximum)


# ---------------------------------------------------------------------------------------------------------------------
# Public measures
# ---------------------------------------------------------------------------------------------------------------------


def adjust_for_chance(value: float, expected: float, maximum: float = 1.0) -> float:
    """Adjust a measure for chance: ``(value - expected) / (maximum - expected)``.

    Parameters
    ----------
    value : float
        The measure's value.
    expected : float
        Its expected value under a random ranking (|O|/N for P@n, AP, R-Precision and Max-F1).
    maximum : float, default 1.0
        Its maximum attainable value (min(1, |O|/n) for P@n).

    Returns
    -------
    float
        1 for a perfect result, 0 for the expected value of a random ranking, negative below.

    Raises
    ------
    ValueError
        If ``maximum == expected`` (the adjustment is undefined).

    References
    ----------
    Campos et al. (2016), Eq. (12)-(13); Hubert & Arabie (1985).
    """
    if maximum == expected:
        raise ValueError(
            f"adjustment for chance is undefined: the maximum ({maximum}) equals the expected value ({expected})"
        )
    return (value - expected) / (maximum - expected)


def roc_auc(labels: Any, scores: Any) -> float:
    """Area under the ROC curve, ties counted one half (Campos et al. 2016, Eq. 16).

    ROC AUC = (1 / (|O| |I|)) Σ_{o ∈ O} Σ_{i ∈ I} [s(o) > s(i)] + ½ [s(o) = s(i)], the Mann–Whitney U statistic
    normalised to [0, 1]; equivalently the trapezoidal area under the ROC curve with one point per tie-group end.
    Computed exactly (integer U) and rounded once. Constant scores give 0.5.

    Parameters
    ----------
    labels : array-like of shape (N,)
        Ground truth, bool or 0/1 (True / 1 = outlier). Both classes must be present.
    scores : array-like of shape (N,)
        Outlier scores, higher = more outlying. Finite.

    Returns
    -------
    float
        ROC AUC in [0, 1]. Equals ``sklearn.metrics.roc_auc_score`` and ELKI 0.7.1 ``ROCEvaluation``.

    References
    ----------
    Campos, Zimek, Sander, Campello, Micenková, Schubert, Assent, Houle (2016). On the evaluation of
    unsupervised outlier detection: measures, datasets, and an empirical study. DAMI 30(4), Eq. (16).

    Examples
    --------
    >>> roc_auc([0, 0, 1, 1], [0.1, 0.5, 0.5, 0.9])
    0.875
    """
    return _roc_auc(_groups(labels, scores))


def adjusted_roc_auc(labels: Any, scores: Any) -> float:
    """ROC AUC adjusted for chance: 2·AUC − 1 (ELKI 0.7.1 ``Adjusted ROC AUC``; expected 0.5, maximum 1).

    See :func:`roc_auc` for parameters. Returns a value in [-1, 1].
    """
    return 2.0 * roc_auc(labels, scores) - 1.0


def roc_curve(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ROC curve with one point per tie-group end.

    Point g is (N_g/|I|, P_g/|O|): the false and true positive rates when every object with a score >= the
    score of tie group g is predicted an outlier. The curve starts at (0, 0) with threshold +inf.

    Returns
    -------
    fpr, tpr : ndarray of shape (G + 1,)
        False/true positive rates, non-decreasing, from (0, 0) to (1, 1).
    thresholds : ndarray of shape (G + 1,)
        ``[inf, v_1, ..., v_G]``, the distinct scores in decreasing order. Identical to
        ``sklearn.metrics.roc_curve(..., drop_intermediate=False)``.

    References
    ----------
    Campos et al. (2016), Eq. (16) (the area under this curve).
    """
    g = _groups(labels, scores)
    n_neg = g.n_obj - g.n_pos
    tpr = np.concatenate(([0.0], g.cum_pos / g.n_pos))
    fpr = np.concatenate(([0.0], (g.cum_size - g.cum_pos) / n_neg))
    thresholds = np.concatenate(([np.inf], g.values))
    return fpr, tpr, thresholds


def average_precision(labels: Any, scores: Any, *, ties: _APTies = "elki") -> float:
    """Average precision (Campos et al. 2016, Eq. 14) with an explicit tie rule.

    AP = (1/|O|) Σ_{o ∈ O} P@rank(o): the mean, over the true outliers, of the precision at the outlier's rank.
    Within a tie group the rank is not defined; two rules are offered:

    * ``ties="elki"`` (default, ELKI 0.7.1 ``AveragePrecisionEvaluation``): every outlier of tie group g gets the
      precision at the *end* of the group, P_g / T_g, so AP = (1/|O|) Σ_g a_g P_g / T_g. This is also exactly
      what ``sklearn.metrics.average_precision_score`` computes (see :func:`avpr`).
    * ``ties="expected"``: the expected AP when the order within every tie group is uniformly random. For a
      group of t objects, a of them outliers, after P0 outliers among T0 objects, position j = 1..t contributes
      (a/t) · (P0 + 1 + (j−1)(a−1)/(t−1)) / (T0 + j) (exact: linearity of expectation with the hypergeometric
      pair probabilities). Without ties both rules agree.

    Parameters
    ----------
    labels, scores : array-like of shape (N,)
        As in :func:`roc_auc`.
    ties : {"elki", "expected"}, default "elki"

    Returns
    -------
    float
        AP in (0, 1].

    References
    ----------
    Campos et al. (2016), Eq. (14). Zhang & Zhang (2009), "Average precision", Encyclopedia of Database Systems.

    Examples
    --------
    >>> average_precision([1, 0, 1, 0], [4, 3, 3, 1])
    0.8333333333333333
    >>> average_precision([1, 0, 1, 0], [4, 3, 3, 1], ties="expected")  # 1/2 * (1 + (1 + 2/3)/2)
    0.9166666666666666
    >>> average_precision([0, 1, 0, 1], [4, 3, 3, 1])  # 1/2 * (1/3 + 2/4)
    0.41666666666666663
    """
    g = _groups(labels, scores)
    return _ap(g, ties)


def _ap(g: _Groups, ties: str) -> float:
    if ties == "elki":
        return _ap_elki(g)
    if ties == "expected":
        return _ap_expected(g)
    raise ValueError(f"ties must be 'elki' or 'expected', got {ties!r}")


def adjusted_average_precision(labels: Any, scores: Any, *, ties: _APTies = "elki") -> float:
    """Average precision adjusted for chance, (AP − |O|/N) / (1 − |O|/N) (Campos et al. 2016, Eq. 15).

    Parameters as in :func:`average_precision`. This is ELKI 0.7.1's ``Adjusted Average Precision``.
    """
    g = _groups(labels, scores)
    return _adjust(_ap(g, ties), g)


def precision_at_n(labels: Any, scores: Any, n: int | None = None) -> float:
    """Precision at n (P@n): the fraction of true outliers among the n top-ranked objects (Campos et al. 2016).

    If a tie group straddles rank n (it begins at rank <= n and ends after n), its contribution is the *expected*
    number of outliers among the positions that fall into the top n under a random order within the group:
    a_g (n − T_{g−1}) / t_g. This is ELKI 0.7.1 ``PrecisionAtKEvaluation``. The result can therefore be a
    non-multiple of 1/n.

    Parameters
    ----------
    labels, scores : array-like of shape (N,)
        As in :func:`roc_auc`.
    n : int, optional
        1 <= n <= N. Default: |O| (R-Precision).

    Returns
    -------
    float
        P@n in [0, 1].

    References
    ----------
    Campos et al. (2016), precision at n (the measure adjusted in Eq. 12-13); Craswell (2009).

    Examples
    --------
    >>> precision_at_n([1, 0, 1, 0], [4, 3, 3, 1], n=2)  # 1 + 1/2 expected outliers in the top 2
    0.75
    """
    g = _groups(labels, scores)
    n = g.n_pos if n is None else _check_n(n, g.n_obj)
    return _expected_hits_at(g, n) / n


def r_precision(labels: Any, scores: Any) -> float:
    """R-Precision: P@n with n = |O| (ELKI 0.7.1 ``R-Precision``; tie rule of :func:`precision_at_n`)."""
    return precision_at_n(labels, scores)


def adjusted_precision_at_n(labels: Any, scores: Any, n: int | None = None) -> float:
    """P@n adjusted for chance (Campos et al. 2016, Eq. 12-13).

    Adjusted P@n = (P@n − |O|/N) / (max − |O|/N), with max = 1 if n <= |O| and max = |O|/n if n > |O|.

    Raises
    ------
    ValueError
        If n = N (P@N is always |O|/N, the adjustment is 0/0).
    """
    g = _groups(labels, scores)
    n = g.n_pos if n is None else _check_n(n, g.n_obj)
    return _adjusted_p_at_n(g, n)


def _adjusted_p_at_n(g: _Groups, n: int) -> float:
    if n == g.n_obj:
        raise ValueError(f"adjusted P@n is undefined for n = N = {n}: P@N equals |O|/N for every scoring")
    maximum = 1.0 if n <= g.n_pos else g.n_pos / n
    return _adjust(_expected_hits_at(g, n) / n, g, maximum)


def adjusted_r_precision(labels: Any, scores: Any) -> float:
    """R-Precision adjusted for chance, (RP − |O|/N) / (1 − |O|/N) (Campos et al. 2016, Eq. 12-13, n = |O|)."""
    return adjusted_precision_at_n(labels, scores)


def max_f1(labels: Any, scores: Any) -> float:
    """Maximum F1 over all thresholds at tie-group ends (ELKI 0.7.1 ``MaximumF1Evaluation``).

    Max-F1 = max_g 2 P_g / (T_g + |O|), the F1 score when every object with a score >= the score of group g is
    predicted an outlier. Thresholds inside a tie group are not considered.

    References
    ----------
    Campos et al. (2016) supplementary material ("Maximum F1-Measure"); van Rijsbergen (1979) for F1.
    """
    return _max_f1(_groups(labels, scores))


def adjusted_max_f1(labels: Any, scores: Any) -> float:
    """Maximum F1 adjusted for chance as ELKI 0.7.1 reports it: (F1 − |O|/N) / (1 − |O|/N)."""
    g = _groups(labels, scores)
    return _adjust(_max_f1(g), g)


class PrecisionRecallF1(NamedTuple):
    """Precision, recall and F1 of a binary prediction (a tuple: unpack as ``p, r, f = ...``)."""

    precision: float
    recall: float
    f1: float


def precision_recall_f1_at_threshold(labels: Any, scores: Any, threshold: float) -> PrecisionRecallF1:
    """Precision, recall and F1 when every object with ``score >= threshold`` is predicted an outlier.

    With m predicted outliers of which TP are true outliers: precision = TP/m, recall = TP/|O|,
    F1 = 2 TP / (m + |O|). If nothing is predicted (threshold above every score), precision is 0
    (scikit-learn's ``zero_division=0``) and recall and F1 are 0.

    Returns
    -------
    PrecisionRecallF1
    """
    y, s = check_labels_scores(labels, scores)
    threshold = float(threshold)
    if np.isnan(threshold):
        raise ValueError("threshold is NaN")
    pred = s >= threshold
    m = int(np.count_nonzero(pred))
    tp = int(np.count_nonzero(pred & y))
    n_pos = int(np.count_nonzero(y))
    return PrecisionRecallF1(tp / m if m else 0.0, tp / n_pos, 2.0 * tp / (m + n_pos))


def max_f1_threshold(labels: Any, scores: Any) -> tuple[float, PrecisionRecallF1]:
    """The F1-optimal threshold and its precision, recall and F1 (prediction: ``score >= threshold``).

    The threshold is chosen among the distinct scores, so a tie group is never split (all tied objects are
    predicted alike); among equally good thresholds the highest is returned. Its F1 equals :func:`max_f1`.
    This is the "optimal threshold" of Fourure et al. (2021), Table 1, without their one-object-at-a-time
    sweep that can split a tie group.

    Returns
    -------
    threshold : float
    PrecisionRecallF1
    """
    g = _groups(labels, scores)
    f1 = 2.0 * g.cum_pos / (g.cum_size + g.n_pos)
    i = int(np.argmax(f1))
    tp = float(g.cum_pos[i])
    return float(g.values[i]), PrecisionRecallF1(tp / float(g.cum_size[i]), tp / g.n_pos, float(f1[i]))


def precision_recall_f1_at_count(labels: Any, scores: Any, m: int) -> PrecisionRecallF1:
    """Expected precision, recall and F1 when the m top-ranked objects are predicted outliers.

    If a tie group straddles rank m, the number of true positives is its expected value under a random order
    within that group, TP = P_{g−1} + a_g (m − T_{g−1}) / t_g, as for :func:`precision_at_n`. Since m is fixed,
    precision = TP/m, recall = TP/|O| and F1 = 2 TP/(m + |O|) are linear in TP, so these are the exact
    expectations of the three measures. Precision here equals P@m.

    Parameters
    ----------
    m : int
        Number of predicted outliers, 1 <= m <= N.
    """
    g = _groups(labels, scores)
    m = _check_n(m, g.n_obj, name="m")
    tp = _expected_hits_at(g, m)
    return PrecisionRecallF1(tp / m, tp / g.n_pos, 2.0 * tp / (m + g.n_pos))


def precision_recall_curve(labels: Any, scores: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision–recall curve with one point per tie-group end, in scikit-learn's convention.

    Returns
    -------
    precision, recall : ndarray of shape (G + 1,)
        In order of *increasing* threshold; point i < G is (P_g/T_g, P_g/|O|) for the group with the i-th
        smallest score; the last point is (1, 0) with no threshold.
    thresholds : ndarray of shape (G,)
        The distinct scores, increasing. Identical to ``sklearn.metrics.precision_recall_curve(...,
        drop_intermediate=False)``.
    """
    g = _groups(labels, scores)
    precision = np.concatenate(((g.cum_pos / g.cum_size)[::-1], [1.0]))
    recall = np.concatenate(((g.cum_pos / g.n_pos)[::-1], [0.0]))
    return precision, recall, g.values[::-1].copy()


def avpr(labels: Any, scores: Any) -> float:
    """Area under the step-wise precision–recall curve, as ``sklearn.metrics.average_precision_score``.

    AVPR = Σ_g (R_g − R_{g−1}) Prec_g over the points of :func:`precision_recall_curve` (ties grouped, no
    interpolation). This is the "AVPR" of Fourure et al. (2021). With R_g − R_{g−1} = a_g/|O| and
    Prec_g = P_g/T_g it is algebraically identical to ELKI's :func:`average_precision` (``ties="elki"``),
    tie groups included; it generally differs from ``average_precision(..., ties="expected")`` when an outlier
    is tied with another object (even with another outlier: ELKI's rule then is optimistic). It is *not* the
    trapezoidal area under the PR curve (``sklearn.metrics.auc(recall, precision)``), which is optimistic and not
    offered here.

    References
    ----------
    Fourure, Javaid, Posocco, Tihon (2021). Anomaly detection: how to artificially increase your F1-score with
    a biased evaluation protocol. ECML PKDD. scikit-learn ``average_precision_score``.
    """
    g = _groups(labels, scores)
    rec_step = g.pos / g.n_pos
    return float(np.sum(rec_step * (g.cum_pos / g.cum_size)))


def outlier_ranks(labels: Any, scores: Any, *, ties: _RankTies = "average") -> np.ndarray:
    """1-based ranks of the true outliers in the descending ranking, in input order of the outliers.

    Rank 1 is the highest score. Objects in a tie group of size t occupying ranks T0+1..T0+t all get

    * ``"average"`` (default): the mid-rank T0 + (t+1)/2 (float; the expected rank under random tie order);
    * ``"min"``: T0 + 1 (optimistic; the "competition" rank);
    * ``"max"``: T0 + t (pessimistic; consistent with ELKI's AP, which scores a group at its end).

    Parameters
    ----------
    labels, scores : array-like of shape (N,)
        As in :func:`roc_auc`.
    ties : {"average", "min", "max"}

    Returns
    -------
    ndarray of shape (|O|,)
        Rank of each outlier, in the order of ``np.flatnonzero(labels)``; float64 for ``"average"``, int64
        otherwise.

    References
    ----------
    Campos et al. (2016), Sect. 5.3 (difficulty and diversity of datasets use the outliers' ranks).

    Examples
    --------
    >>> outlier_ranks([1, 0, 1, 0], [4, 3, 3, 1])
    array([1. , 2.5])
    """
    y, s = check_labels_scores(labels, scores)
    if ties not in ("average", "min", "max"):
        raise ValueError(f"ties must be 'average', 'min' or 'max', got {ties!r}")
    n = s.shape[0]
    ss = np.sort(s)
    so = s[y]
    higher = n - np.searchsorted(ss, so, side="right")  # objects with a strictly higher score
    if ties == "min":
        return (higher + 1).astype(np.int64)
    at_least = n - np.searchsorted(ss, so, side="left")  # objects with a score >= it
    if ties == "max":
        return at_least.astype(np.int64)
    return (higher + 1 + at_least) / 2.0


def evaluate(labels: Any, scores: Any, n: int | None = None) -> dict[str, float]:
    """All external measures of one scoring from a single sort, with ELKI 0.7.1's tie rules.

    Parameters
    ----------
    labels, scores : array-like of shape (N,)
        As in :func:`roc_auc`.
    n : int, optional
        If given (1 <= n < N), also P@n and adjusted P@n.

    Returns
    -------
    dict[str, float]
        Keys :data:`MEASURES` (in that order): ``roc_auc`` (Eq. 16), ``average_precision`` (Eq. 14, ELKI tie
        rule), ``r_precision``, ``max_f1``, ``adjusted_roc_auc`` (2·AUC − 1), ``adjusted_average_precision``
        (Eq. 15), ``adjusted_r_precision`` and ``adjusted_max_f1`` ((X − |O|/N)/(1 − |O|/N)); plus
        :data:`MEASURES_AT_N` (``precision_at_n``, ``adjusted_precision_at_n``, Eq. 12-13) when ``n`` is given.
        These are exactly the eight numbers of ELKI 0.7.1 ``EvaluatePrecomputedOutlierScores``.

    Examples
    --------
    >>> r = evaluate([1, 0, 1, 0, 0], [0.9, 0.8, 0.8, 0.1, 0.0], n=2)
    >>> r["roc_auc"], r["r_precision"], r["precision_at_n"]
    (0.9166666666666666, 0.75, 0.75)
    """
    return _evaluate_groups(_groups(labels, scores), n)


def _evaluate_groups(g: _Groups, n: int | None) -> dict[str, float]:
    if n is not None:
        n = _check_n(n, g.n_obj)
    auc = _roc_auc(g)
    ap = _ap_elki(g)
    rp = _expected_hits_at(g, g.n_pos) / g.n_pos
    f1 = _max_f1(g)
    out = {
        "roc_auc": auc,
        "average_precision": ap,
        "r_precision": rp,
        "max_f1": f1,
        "adjusted_roc_auc": 2.0 * auc - 1.0,
        "adjusted_average_precision": _adjust(ap, g),
        "adjusted_r_precision": _adjust(rp, g),
        "adjusted_max_f1": _adjust(f1, g),
    }
    if n is not None:
        out["precision_at_n"] = _expected_hits_at(g, n) / n
        out["adjusted_precision_at_n"] = _adjusted_p_at_n(g, n)
    return out


def evaluate_many(labels: Any, scores: Any, n: int | None = None) -> dict[str, np.ndarray]:
    """:func:`evaluate` for several scorings of the same objects (e.g. one detector over all k).

    Parameters
    ----------
    labels : array-like of shape (N,)
        Ground truth, bool or 0/1 (True / 1 = outlier), validated once.
    scores : array-like of shape (R, N)
        One scoring per row, higher = more outlying. A row with NaN or ±inf raises, naming the row.
    n : int, optional
        As in :func:`evaluate`.

    Returns
    -------
    dict[str, ndarray]
        The keys of :func:`evaluate`, each an array of shape (R,): row r holds ``evaluate(labels, scores[r], n)``.
    """
    y = check_labels(labels)
    S = np.asarray(scores)
    if S.ndim != 2:
        raise ValueError(f"scores must be 2-dimensional (n_scorings, n_objects), got shape {S.shape}")
    if S.shape[1] != y.shape[0]:
        raise ValueError(f"labels and scores differ in length: {y.shape[0]} labels, {S.shape[1]} scores per row")
    names = MEASURES + (MEASURES_AT_N if n is not None else ())
    out = {name: np.empty(S.shape[0]) for name in names}
    for r in range(S.shape[0]):
        res = _evaluate_groups(_tie_groups(y, check_scores(S[r], name=f"scores (row {r})")), n)
        for name in names:
            out[name][r] = res[name]
    return out


def finite_for_ranking(scores: Any) -> np.ndarray:
    """Replace ±inf by finite values just beyond the finite range, keeping every order and every tie.

    LOF-like methods legitimately score +inf on data with duplicates (ELKI 0.7.1 semantics §0.4), and ELKI
    ranks infinities like any other value. Every measure here depends on the ranking only, so evaluating
    ``finite_for_ranking(scores)`` gives ELKI's numbers for such scorings; the measures themselves refuse ±inf
    so that an infinity is never taken silently. NaN stays NaN (and is refused by the measures).

    Parameters
    ----------
    scores : array-like of shape (n_objects,)

    Returns
    -------
    ndarray of float64
        A copy where +inf → (max finite) + 1 + |max finite| and −inf → (min finite) − 1 − |min finite|. When
        that would overflow (finite scores near the float maximum), every value is replaced by its dense rank
        (0, 1, 2, ... in ascending order; equal values share a rank), which keeps every order and every tie.
    """
    s = np.asarray(scores, dtype=np.float64)
    inf = np.isinf(s)
    if not inf.any():
        return s.copy()
    finite = s[np.isfinite(s)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    with np.errstate(over="ignore"):
        above, below = hi + 1.0 + abs(hi), lo - 1.0 - abs(lo)
    if not (np.isfinite(above) and np.isfinite(below)):
        nan = np.isnan(s)
        ranks = np.full(s.shape, np.nan)
        ranks[~nan] = np.unique(s[~nan], return_inverse=True)[1].reshape(-1)
        return ranks
    out = s.copy()
    out[s == np.inf] = above
    out[s == -np.inf] = below
    return out


def evaluate_scoring(labels: Any, scores: Any, n: int | None = None) -> tuple[dict[str, float], np.ndarray]:
    """Evaluate one scoring as every odeval path does (study runner, ``odeval evaluate``).

    ±inf scores (LOF-like methods on duplicates; FastABOD where no angle is defined) are ranked like any other
    value, as ELKI 0.7.1 does, through :func:`finite_for_ranking`; NaN is refused (naming the positions).

    Returns
    -------
    (dict, ndarray)
        :func:`evaluate` of the scoring, and the finite scores that were ranked (for :func:`outlier_ranks`).
    """
    ranked = finite_for_ranking(scores)
    return evaluate(labels, ranked, n=n), ranked
