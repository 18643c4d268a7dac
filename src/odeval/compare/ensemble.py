"""Outlier ensembles over a (R, N) matrix of normalised scorings: combination rules, the greedy
diversity-aware ensemble of Schubert, Wojdanowski, Zimek, Kriegel (SDM 2012, Sect. 4.3), the gain
(Sect. 5.5) and the random-ensemble control group (Table 4 style).

All functions are pure: they take the score matrix (rows = scorings, e.g. method × k, already normalised to a
common scale, e.g. with :func:`odeval.scaling.unify`) and optional row names and labels, and return arrays or
small frozen result objects. Randomness takes a ``seed``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
from scipy import stats

from odeval._validation import check_labels
from odeval.compare.similarity import (
    check_score_matrix,
    class_balanced_weights,
    estimated_outliers,
)

__all__ = [
    "COMBINATION_RULES",
    "EnsembleEvaluation",
    "GreedyEnsemble",
    "combine",
    "evaluate_ensembles",
    "gain",
    "greedy_ensemble",
    "random_ensemble_aucs",
]

Rule = Literal["mean", "max", "min", "median", "product", "inverse_product", "rank"]
#: Combination rules of :func:`combine` (ELKI's ``EnsembleVoting*`` plus rank averaging).
COMBINATION_RULES: tuple[str, ...] = ("mean", "max", "min", "median", "product", "inverse_product", "rank")
Distance = Literal["pearson", "manhattan", "sqeuclidean"]


def combine(scores: Any, rule: Rule = "mean") -> np.ndarray:
    """Combine several normalised scorings of the same objects into one.

    Parameters
    ----------
    scores : array-like of shape (R, n_objects)
        Scorings in [0, 1] (probabilities) for ``product`` and ``inverse_product``; any common scale otherwise.
    rule : {"mean", "max", "min", "median", "product", "inverse_product", "rank"}
        * ``mean``, ``max``, ``min``, ``median``: per object over the R scorings.
        * ``product``: Π s_i — all members must agree (ELKI ``EnsembleVotingMultiplicative``).
        * ``inverse_product``: 1 − Π (1 − s_i) — "noisy or": one confident member suffices
          (ELKI ``EnsembleVotingInverseMultiplicative``).
        * ``rank``: mean over the scorings of each object's rank / n_objects (rank 1 = least outlying,
          average ranks for ties), i.e. a combination that ignores the score scales.

    Returns
    -------
    ndarray of shape (n_objects,)
        Higher = more outlying.
    """
    return _combine(check_score_matrix(scores), rule)


def _combine(S: np.ndarray, rule: str) -> np.ndarray:
    if rule == "mean":
        return S.mean(axis=0)
    if rule == "max":
        return S.max(axis=0)
    if rule == "min":
        return S.min(axis=0)
    if rule == "median":
        return np.median(S, axis=0)
    if rule == "product":
        return np.prod(S, axis=0)
    if rule == "inverse_product":
        return 1.0 - np.prod(1.0 - S, axis=0)
    if rule == "rank":
        return stats.rankdata(S, axis=1, method="average").mean(axis=0) / S.shape[1]
    raise ValueError(f"unknown combination rule {rule!r}; use one of {', '.join(COMBINATION_RULES)}")


def _singles(S: np.ndarray, rule: str) -> np.ndarray:
    """Each scoring on its own as an ensemble of one under ``rule``: S itself, but for "rank" its ranks."""
    return np.vstack([_combine(S[i:i + 1], rule) for i in range(S.shape[0])]) if rule == "rank" else S


class _Running:
    """Incremental combination for the greedy search: O(N) per tested candidate for the rules that allow it
    (mean, max, min, product, inverse_product); median and rank are recomputed from the members."""

    def __init__(self, S: np.ndarray, rule: str, first: int) -> None:
        self.S, self.rule = S, rule
        self.members = [first]
        row = S[first]
        self.state = {"mean": row.copy(), "max": row.copy(), "min": row.copy(), "product": row.copy(),
                      "inverse_product": 1.0 - row}.get(rule)

    def _next_state(self, c: int) -> np.ndarray | None:
        row, st = self.S[c], self.state
        if self.rule == "mean":
            return st + row  # running sum
        if self.rule == "max":
            return np.maximum(st, row)
        if self.rule == "min":
            return np.minimum(st, row)
        if self.rule == "product":
            return st * row
        if self.rule == "inverse_product":
            return st * (1.0 - row)
        return None

    def _value(self, st: np.ndarray | None, members: list[int]) -> np.ndarray:
        if self.rule == "mean":
            return st / len(members)  # type: ignore[operator]
        if self.rule == "inverse_product":
            return 1.0 - st  # type: ignore[operator]
        if st is not None:
            return st
        return _combine(self.S[members], self.rule)

    def test(self, c: int) -> tuple[np.ndarray, np.ndarray | None]:
        st = self._next_state(c)
        return self._value(st, [*self.members, c]), st

    def accept(self, c: int, st: np.ndarray | None) -> None:
        self.members.append(c)
        self.state = st


def gain(score: float, reference: float, optimum: float = 1.0) -> float:
    """Gain of ``score`` over ``reference``: ``1 − (optimum − score) / (optimum − reference)``
    (Schubert et al. 2012, Sect. 5.5).

    The share of the remaining gap to the optimum that is closed: 0 = no better than the reference, 1 = optimal,
    negative = worse. For ROC AUC the optimum is 1; for a cost (a distance to the truth) it is 0.
    """
    gap = optimum - reference
    if gap == 0:
        return float("nan")
    return 1.0 - (optimum - score) / gap


def _distances_to(S: np.ndarray, target: np.ndarray, w: np.ndarray, measure: Distance) -> np.ndarray:
    """Weighted distance of every row of S to ``target``."""
    if measure == "pearson":
        return 1.0 - _pearson_to(S, target, w)
    d = S - target
    if measure == "manhattan":
        return np.abs(d) @ w
    if measure == "sqeuclidean":
        return (d * d) @ w
    raise ValueError(f"unknown measure {measure!r}; use 'pearson', 'manhattan' or 'sqeuclidean'")


def _pearson_to(S: np.ndarray, t: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted Pearson correlation of every row of S with t: O(R·N), same conventions as the matrix version."""
    wsum = w.sum()
    Sc = S - ((S @ w) / wsum)[:, None]
    tc = t - (t @ w) / wsum
    cov = (Sc * w) @ tc
    vs = (Sc * Sc) @ w
    vt = float((tc * tc) @ w)
    s_const = np.ptp(S, axis=1) == 0
    t_const = np.ptp(t) == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.clip(cov / np.sqrt(vs * vt), -1.0, 1.0)
    if t_const:
        return np.where(s_const, 1.0, 0.0)
    r[s_const] = 0.0
    return r


class _DiversityIndex:
    """Distances of all candidate rows to a changing vector (the current ensemble), for ordering candidates.

    For Pearson the row means and variances are computed once (two-pass) and each query is one
    matrix-vector product: cov_w(s, t) = Σ w·s·(t − t̄_w), since Σ w (t − t̄_w) = 0."""

    def __init__(self, S: np.ndarray, w: np.ndarray, measure: str) -> None:
        self.S, self.w, self.measure = S, w, measure
        if measure == "pearson":
            wsum = w.sum()
            Sc = S - ((S @ w) / wsum)[:, None]
            self.var = (Sc * Sc) @ w
            self.const = np.ptp(S, axis=1) == 0

    def distances(self, t: np.ndarray, rows: np.ndarray) -> np.ndarray:
        if self.measure != "pearson":
            return _distances_to(self.S[rows], t, self.w, self.measure)
        w = self.w
        tc = t - (t @ w) / w.sum()
        vt = float((tc * tc) @ w)
        if np.ptp(t) == 0:
            return 1.0 - np.where(self.const[rows], 1.0, 0.0)
        cov = self.S[rows] @ (w * tc) if rows.size < self.S.shape[0] // 4 else (self.S @ (w * tc))[rows]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.clip(cov / np.sqrt(self.var[rows] * vt), -1.0, 1.0)
        r[self.const[rows]] = 0.0
        return 1.0 - r


@dataclass(frozen=True)
class GreedyEnsemble:
    """Result of :func:`greedy_ensemble`.

    Attributes
    ----------
    members : tuple of int
        Row indices of the members, in the order they were added (the first is the initial member).
    names : tuple of str
        Their names.
    scores : ndarray of shape (n_objects,)
        The combined scoring of the members.
    target : ndarray of shape (n_objects,)
        The estimated target vector (1 = estimated outlier, 0 otherwise).
    weights : ndarray of shape (n_objects,)
        Class-balanced weights of the estimated outlier set.
    distance : float
        Weighted distance of ``scores`` to ``target``.
    trace : tuple of (int, float, float, bool)
        Every candidate tried: (row, distance before, distance with it, accepted).
    """

    members: tuple[int, ...]
    names: tuple[str, ...]
    scores: np.ndarray
    target: np.ndarray
    weights: np.ndarray
    distance: float
    trace: tuple[tuple[int, float, float, bool], ...] = field(repr=False)


def _names(names: Any, R: int) -> tuple[str, ...]:
    if names is None:
        return tuple(f"scoring-{i}" for i in range(R))
    out = tuple(str(n) for n in names)
    if len(out) != R:
        raise ValueError(f"names has {len(out)} entries for {R} scorings")
    return out


def greedy_ensemble(
    scores: Any,
    names: Any = None,
    *,
    rate: float | None = 0.01,
    n_outliers: int | None = None,
    measure: Distance = "pearson",
    rule: Rule = "mean",
    minvote: int = 1,
) -> GreedyEnsemble:
    """Greedy diversity-aware ensemble selection (Schubert et al. 2012, Sect. 4.3).

    1. Estimate the outliers as the union of the top-ranked objects of all scorings
       (:func:`~odeval.compare.estimated_outliers`); the target vector is 1 on them and 0 elsewhere, the
       weights are class-balanced.
    2. Start with the scoring closest to the target (weighted ``measure``; Pearson: 1 − r_w).
    3. Order the remaining candidates by decreasing distance to the current ensemble — for Pearson: lowest
       weighted correlation first, i.e. most diverse first; ties by row index. Try them in this order: the
       first whose addition (combined with ``rule``) moves the ensemble closer to the target is added and the
       order is recomputed; candidates that do not help are discarded for good.
    4. Stop when no candidate is left.

    Parameters
    ----------
    scores : array-like of shape (R, n_objects)
        Normalised scorings (e.g. :func:`odeval.scaling.unify` per row), higher = more outlying.
    names : sequence of str, optional
        Row names (e.g. ``"LOF-010"``).
    rate, n_outliers, minvote
        Size of the estimated outlier set; see :func:`~odeval.compare.estimated_outliers`.
    measure : {"pearson", "manhattan", "sqeuclidean"}
    rule : str
        Combination rule; see :func:`combine`.

    Notes
    -----
    ELKI 0.7.1's ``GreedyEnsembleExperiment`` (and 0.7.5) computes the "diversity" of each candidate as the
    distance of the current ensemble to *itself* (always 0), so its candidates are tried in hash-set order.
    odeval orders them by their distance to the ensemble, as the paper describes; the rest of the procedure
    (start, acceptance rule, discarding) is ELKI's.

    References
    ----------
    E. Schubert, R. Wojdanowski, A. Zimek, H.-P. Kriegel. On Evaluation of Outlier Rankings and Outlier
    Scores. SDM 2012.
    """
    S = check_score_matrix(scores)
    R = S.shape[0]
    labels = _names(names, R)
    est = estimated_outliers(S, rate=rate, n_outliers=n_outliers, minvote=minvote)
    target = est.astype(np.float64)
    w = class_balanced_weights(est)
    if rule not in COMBINATION_RULES:
        raise ValueError(f"unknown combination rule {rule!r}; use one of {', '.join(COMBINATION_RULES)}")
    singles = _singles(S, rule)
    d0 = _distances_to(singles, target, w, measure)
    best = int(np.argmin(d0))
    members = [best]
    running = _Running(S, rule, best)
    current = singles[best].copy()
    current_d = float(d0[best])
    candidates = [i for i in range(R) if i != best]
    trace: list[tuple[int, float, float, bool]] = []
    diversity = _DiversityIndex(singles, w, measure)
    while candidates:
        cand = np.asarray(candidates)
        div = diversity.distances(current, cand)
        order = cand[np.lexsort((cand, -div))]  # most distant first, ties by index
        accepted = False
        for c in order.tolist():
            candidates.remove(c)
            test, state = running.test(c)
            new_d = float(_distances_to(test[None, :], target, w, measure)[0])
            ok = new_d < current_d
            trace.append((c, current_d, new_d, ok))
            if ok:
                running.accept(c, state)
                members.append(c)
                current, current_d = test, new_d
                accepted = True
                break
        if not accepted:
            break
    return GreedyEnsemble(
        members=tuple(members),
        names=tuple(labels[i] for i in members),
        scores=current,
        target=target,
        weights=w,
        distance=current_d,
        trace=tuple(trace),
    )


def random_ensemble_aucs(
    scores: Any, labels: Any, size: int, *, n: int = 1000, seed: int = 0, rule: Rule = "mean"
) -> np.ndarray:
    """ROC AUC of ``n`` random ensembles of ``size`` distinct scorings (the control group of Schubert et al.
    2012, Table 4). Each ensemble is drawn with ``np.random.default_rng(seed)`` without replacement from all
    rows and combined with ``rule``."""
    from odeval.measures import roc_auc

    S = check_score_matrix(scores)
    y = check_labels(labels)
    R = S.shape[0]
    if not 1 <= int(size) <= R:
        raise ValueError(f"size must be in [1, {R}], got {size!r}")
    if int(n) < 2:
        raise ValueError(f"n must be >= 2 random ensembles, got {n!r}")
    rng = np.random.default_rng(seed)
    out = np.empty(int(n))
    for i in range(int(n)):
        idx = rng.choice(R, size=int(size), replace=False)
        out[i] = roc_auc(y, _combine(S[np.sort(idx)], rule))
    return out


@dataclass(frozen=True)
class EnsembleEvaluation:
    """Evaluation of the greedy ensemble against labels (Schubert et al. 2012, Tables 3–4 style).

    ``*_cost`` are weighted distances (``measure``) to the true 0/1 labels with class-balanced weights of the
    *true* labels (ELKI 0.7.1 logs the cost with the *estimated* weights). ``improvement_sd`` is
    ``(greedy_auc − random_auc_mean) / random_auc_std`` (sample standard deviation).
    """

    best_single_auc: float
    best_single_name: str
    best_single_cost: float
    naive_auc: float
    naive_cost: float
    greedy_auc: float
    greedy_cost: float
    greedy_size: int
    greedy_members: tuple[str, ...]
    random_auc_mean: float
    random_auc_std: float
    improvement_sd: float
    gain_greedy_to_best: float
    gain_greedy_to_naive: float
    gain_naive_to_best: float
    gain_greedy_to_random: float
    n_estimated_outliers: int
    n_random: int
    seed: int

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["greedy_members"] = list(self.greedy_members)
        return d


def evaluate_ensembles(
    scores: Any,
    labels: Any,
    names: Any = None,
    *,
    rate: float | None = 0.01,
    n_outliers: int | None = None,
    measure: Distance = "pearson",
    rule: Rule = "mean",
    n_random: int = 1000,
    seed: int = 0,
) -> tuple[GreedyEnsemble, EnsembleEvaluation]:
    """Build the greedy ensemble (without labels) and evaluate it with labels against the best single scoring,
    the naive ensemble of all scorings and ``n_random`` random ensembles of the same size.

    This is what ELKI's ``GreedyEnsembleExperiment`` logs (and the intended core of
    ``odeval ensemble STORE --dataset X``). Labels are used only for the evaluation, never for the selection.

    Returns
    -------
    (GreedyEnsemble, EnsembleEvaluation)
    """
    from odeval.measures import roc_auc

    S = check_score_matrix(scores)
    y = check_labels(labels)
    if y.size != S.shape[1]:
        raise ValueError(f"labels and scores differ in length: {y.size} labels, {S.shape[1]} objects")
    row_names = _names(names, S.shape[0])
    greedy = greedy_ensemble(S, row_names, rate=rate, n_outliers=n_outliers, measure=measure, rule=rule)
    truth = y.astype(np.float64)
    w_true = class_balanced_weights(y)
    singles = _singles(S, rule)
    aucs = np.array([roc_auc(y, s) for s in singles])
    costs = _distances_to(singles, truth, w_true, measure)
    best = int(np.argmax(aucs))  # first on ties
    naive = _combine(S, rule)
    naive_auc = roc_auc(y, naive)
    naive_cost = float(_distances_to(naive[None, :], truth, w_true, measure)[0])
    greedy_auc = roc_auc(y, greedy.scores)
    greedy_cost = float(_distances_to(greedy.scores[None, :], truth, w_true, measure)[0])
    rand = random_ensemble_aucs(S, y, len(greedy.members), n=n_random, seed=seed, rule=rule)
    r_mean, r_std = float(rand.mean()), float(rand.std(ddof=1))
    evaluation = EnsembleEvaluation(
        best_single_auc=float(aucs[best]),
        best_single_name=row_names[best],
        best_single_cost=float(costs.min()),
        naive_auc=float(naive_auc),
        naive_cost=naive_cost,
        greedy_auc=float(greedy_auc),
        greedy_cost=greedy_cost,
        greedy_size=len(greedy.members),
        greedy_members=greedy.names,
        random_auc_mean=r_mean,
        random_auc_std=r_std,
        improvement_sd=(greedy_auc - r_mean) / r_std if r_std > 0 else float("nan"),
        gain_greedy_to_best=gain(greedy_auc, float(aucs[best])),
        gain_greedy_to_naive=gain(greedy_auc, naive_auc),
        gain_naive_to_best=gain(naive_auc, float(aucs[best])),
        gain_greedy_to_random=gain(greedy_auc, r_mean),
        n_estimated_outliers=int(greedy.target.sum()),
        n_random=int(n_random),
        seed=int(seed),
    )
    return greedy, evaluation
