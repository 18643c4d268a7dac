"""Label-free model selection: pick one of R candidate scorings (method × k) of the same data, without labels.

Every selector takes the candidates' score matrix ``scores`` (R, N) (public orientation: higher = more
outlying; rows = candidates, e.g. every method × k of a study), their ``names`` and, where the selector needs
it, the data ``X`` and a ``seed``, and returns a :class:`Selection`: the index of the chosen candidate, or, for
the ensemble "selectors", an ensemble scoring of all candidates. Selectors are registered by name
(:data:`SELECTORS`, :func:`get_selector`, :func:`register_selector`) so that the meta-evaluation
(:mod:`odeval.analysis.selection`, ``odeval select-audit``) can run any subset of them.

The consensus selectors follow the review of Ma, Zhao and Akoglu (2023), §3 ("consensus-based" internal
strategies): a candidate that agrees with the other candidates is likely good, because the candidates'
errors are partly independent while their hits agree.

* ``mc-spearman``, ``mc-kendall``, ``mc-ndcg`` — *model centrality*: the mean agreement of a candidate's ranking
  with every other candidate's (Spearman's ρ, Kendall's τ-b, or the NDCG of the candidate's ranking graded by
  the other's rank percentiles). Pick the most central candidate.
* ``hits`` — HITS (Kleinberg 1999) on the bipartite candidate × object graph with rank-based edge weights
  (rank percentile of the object in the candidate): hub score of a candidate = Σ of the authority of the
  objects it ranks high, authority of an object = Σ of the hubs that rank it high. Pick the best hub.
* ``select`` — SELECT-style greedy consensus (Rayana & Akoglu 2016, "vertical selection"): target = mean
  inverse rank of all candidates; candidates sorted by Kendall τ to the target; starting from the first, a
  candidate joins the ensemble when the Kendall τ of the ensemble (mean inverse rank of its members) to the
  target does not fall. Pick the member that agrees best with the final ensemble; ``select-ensemble``
  returns the selected ensemble itself.
* ``ensemble`` / ``ensemble-rank`` — the ensemble of all candidates as a "selector": the mean of the
  Gaussian-scaled scores (Kriegel et al. 2011; :func:`odeval.scaling.gaussian_scaling`) or the mean rank
  (:func:`odeval.compare.combine`, rule ``rank``). They return a scoring, not a candidate.
* ``em``, ``mv`` — the Excess-Mass / Mass-Volume criteria of Goix (2016) (:func:`emmv_criteria`; need ``X``):
  every candidate is rebuilt from its :class:`~odeval._key.ScoringKey` (method, parameters, k), fitted on ``X``
  and evaluated on ``X`` (the unsupervised same-data setting; feature sub-sampling when d > 8, settings
  :class:`~odeval.labelfree.emmv_algorithm.EMMVSettings`). ``em`` picks the largest EM, ``mv`` the
  smallest MV; ``Selection.criterion`` is EM for ``em`` and **−MV** for ``mv`` (higher = preferred, like every
  selector). Only methods with a novelty form (kNN, kNNW, LOF, SimplifiedLOF, LoOP, LDOF) can score the uniform
  points EM/MV need; the other candidates are excluded, listed in ``Selection.excluded`` / ``note`` and warned
  about (a ``ValueError`` when none is left). Costly (one kNN graph and one query of 100,000 uniform points per
  method and feature draw), so not in :func:`default_selectors`: name them.
* ``ireos``, ``ireos-sqrt5`` — the IREOS index adjusted for chance (Marques et al. 2020, Eq. 13; need ``X``) of
  each candidate's Gaussian-scaled scores, m_cl = 1 or √(5 %·N), with the kNN-subset approximation
  (settings :class:`~odeval.labelfree.ireos.IREOSSettings`, by default knn = 250 when N > 251). The largest
  adjusted index wins. Costly; not default.
* ``laplacian-1``, ``laplacian-sqrt``, ``laplacian-100`` — the Laplacian Score baseline of the IREOS paper (§4.2):
  the candidates' Gaussian-scaled scores as features on a kNN graph (k = 1, √N, 100) of the candidate-scorings
  space; the smallest score wins (``criterion`` = −score). Not default (name them).
* ``random`` — a uniformly random candidate (seeded). Its *expected* quality is the mean over the candidates,
  which is what the meta-evaluation uses.
* ``default-knn10``, ``default-lof20`` — the fixed defaults kNN with k = 10 and LOF with k = 20, found by
  the candidates' :class:`~odeval._key.ScoringKey` (method case-insensitive, k).

Candidates are named by their :class:`~odeval._key.ScoringKey`: ``names`` may be the keys themselves (their
names are then :func:`~odeval._key.distinct_names`) or names that :meth:`ScoringKey.parse` reads. Selectors
with settings (``em``, ``mv``: :class:`EMMVSettings`; ``ireos-*``: :class:`IREOSSettings`) take them as a
parameter (``settings=`` of :func:`run_selector`, per selector name in :func:`run_selectors`); their defaults are
:attr:`SelectorInfo.settings`.

All selectors are deterministic (the random one given its seed) and vectorised over candidates and objects;
the memory is O(R·N + R²), never N × N.

References
----------
M. Q. Ma, Y. Zhao, X. Zhang, L. Akoglu. The need for unsupervised outlier model selection: a review and
evaluation of internal evaluation strategies. ACM SIGKDD Explorations 25(1), 2023.
S. Rayana, L. Akoglu. Less is more: building selective anomaly ensembles. ACM TKDD 10(4), 2016 (SELECT).
J. M. Kleinberg. Authoritative sources in a hyperlinked environment. J. ACM 46(5), 1999 (HITS).
H. O. Marques, R. J. G. B. Campello, J. Sander, A. Zimek. Internal evaluation of unsupervised outlier
detection. ACM TKDD 14(4), 2020, §4.2 (candidates and model-selection experiment).
H.-P. Kriegel, P. Kröger, E. Schubert, A. Zimek. Interpreting and unifying outlier scores. SDM 2011.
N. Goix. Machine Learning and Extreme Value Theory for Anomaly Detection. PhD thesis, Télécom ParisTech, 2016,
chapter "How to Evaluate the Quality of Anomaly Detection Algorithms?" (EM, MV, Algorithm EMMV).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
from numba import njit
from scipy import stats

from odeval._key import ScoringKey, distinct_names
from odeval.compare.ensemble import _names, combine
from odeval.compare.similarity import check_score_matrix
from odeval.labelfree.emmv_algorithm import EMMVSettings
from odeval.labelfree.ireos import PAPER_KNN, IREOSSettings

__all__ = [
    "DEFAULT_CANDIDATES",
    "EMMV_SELECTOR_SETTINGS",
    "IREOS_SELECTOR_SETTINGS",
    "weighable_candidates",
    "SELECTORS",
    "Selection",
    "SelectorInfo",
    "available_selectors",
    "default_selectors",
    "emmv_criteria",
    "get_selector",
    "hits_scores",
    "inverse_ranks",
    "kendall_matrix",
    "kendall_to",
    "model_centrality",
    "ndcg_matrix",
    "paper_candidates",
    "rank_percentiles",
    "register_selector",
    "run_selector",
    "run_selectors",
    "select_greedy",
    "spearman_matrix",
]

Kind = Literal["pick", "scoring", "expected"]


@dataclass(frozen=True)
class Selection:
    """The outcome of one selector on one candidate set.

    Attributes
    ----------
    selector : str
        Registry name of the selector.
    index : int or None
        The chosen candidate (row of the score matrix); None for selectors that return a scoring.
    scores : ndarray of shape (N,) or None
        The scoring the selector returns instead of a candidate (the ensembles), higher = more outlying.
    criterion : ndarray of shape (R,) or None
        The label-free value the selector ranked the candidates by (higher = preferred), e.g. the mean
        Spearman ρ to the other candidates.
    members : tuple of int
        Candidates that make up a returned ensemble (SELECT), in the order they were added.
    note : str
        Why a selector could not choose (e.g. the default candidate is not among the candidates), or which
        candidates it could not evaluate.
    excluded : tuple of (int, str)
        Candidates the selector could not evaluate and did not choose among, with the reason (e.g. ``em`` /
        ``mv``: a method without a novelty form); their ``criterion`` is NaN.
    """

    selector: str
    index: int | None = None
    scores: np.ndarray | None = field(default=None, repr=False)
    criterion: np.ndarray | None = field(default=None, repr=False)
    members: tuple[int, ...] = ()
    note: str = ""
    excluded: tuple[tuple[int, str], ...] = ()


#: A selector: ``fn(scores (R, N), names, *, X=None, seed=0) -> Selection``; one with settings
#: (:attr:`SelectorInfo.settings`) also takes ``settings``, ``keys`` (the candidates' :class:`ScoringKey`, None
#: when a name could not be read) and ``shared`` (a dict shared by the selectors of one :func:`run_selectors`
#: call, e.g. ``em`` and ``mv`` share their fits; None: nothing shared).
SelectorFn = Callable[..., Selection]


@dataclass(frozen=True)
class SelectorInfo:
    """A registered selector.

    Attributes
    ----------
    name : str
    fn : callable
        ``fn(scores, names, *, X=None, seed=0) -> Selection``.
    kind : {"pick", "scoring", "expected"}
        ``pick``: returns a candidate index; ``scoring``: returns a scoring (ensembles); ``expected``: a random
        pick whose expected quality (the mean over candidates) is what the meta-evaluation reports.
    needs_data : bool
        True when ``X`` must be given.
    description, reference : str
    default : bool
        Run when no selectors are named (:func:`default_selectors`); False for the costly ones (``em``,
        ``mv``), which must be asked for by name.
    settings : frozen dataclass or None
        The selector's default settings (:class:`EMMVSettings`, :class:`IREOSSettings`); None for a selector
        without settings. A selector with settings is called with ``settings``, ``keys`` and ``shared``.
    """

    name: str
    fn: SelectorFn = field(repr=False)
    kind: Kind = "pick"
    needs_data: bool = False
    description: str = ""
    reference: str = ""
    default: bool = True
    settings: Any = None


SELECTORS: dict[str, SelectorInfo] = {}


def register_selector(info: SelectorInfo, *, replace: bool = False) -> SelectorInfo:
    """Add a selector to :data:`SELECTORS` (raise if the name is taken, unless ``replace``)."""
    key = info.name.lower()
    if key in SELECTORS and not replace:
        raise ValueError(f"a selector named {info.name!r} is already registered")
    SELECTORS[key] = info
    return info


def available_selectors() -> tuple[str, ...]:
    """Names of the registered selectors, in registration order."""
    return tuple(SELECTORS)


def default_selectors() -> tuple[str, ...]:
    """Names of the selectors run when none are named (registered with ``default=True``): all but the costly
    data-based ones (``em``, ``mv``)."""
    return tuple(name for name, info in SELECTORS.items() if info.default)


def get_selector(name: str) -> SelectorInfo:
    """The registered selector ``name`` (case-insensitive); a one-line error lists the known ones."""
    info = SELECTORS.get(str(name).lower())
    if info is None:
        raise ValueError(f"unknown selector {name!r}; available: {', '.join(SELECTORS)}")
    return info


def _candidate_keys(names: Any, R: int, keys: Sequence[ScoringKey] | None = None
                    ) -> tuple[tuple[str, ...], tuple[ScoringKey | None, ...]]:
    """Names and keys of the candidates: keys given as ``names`` (names = :func:`distinct_names`), or names and
    ``keys`` both given, or names alone (keys read by :meth:`ScoringKey.parse`, None where a name does not follow
    its grammar)."""
    items = list(names) if names is not None else None
    if items is not None and items and all(isinstance(x, ScoringKey) for x in items):
        keys, items = items, distinct_names(items)
    nm = _names(items, R)
    if keys is not None:
        if len(keys) != R:
            raise ValueError(f"keys has {len(keys)} entries for {R} candidates")
        return nm, tuple(keys)
    parsed = []
    for n in nm:
        try:
            parsed.append(ScoringKey.parse(n))
        except ValueError:
            parsed.append(None)
    return nm, tuple(parsed)


def run_selector(name: str, scores: Any, names: Sequence[str | ScoringKey] | None = None, *, X: Any = None,
                 seed: int = 0, settings: Any = None, shared: dict[Any, Any] | None = None,
                 keys: Sequence[ScoringKey] | None = None) -> Selection:
    """Validate the inputs and run the registered selector ``name``.

    Parameters
    ----------
    scores : array-like of shape (R, N)
        Candidate scorings, finite, higher = more outlying (map ±inf with
        :func:`odeval.measures.finite_for_ranking` first).
    names : sequence of str or of ScoringKey, optional
        The candidates' keys (:class:`~odeval._key.ScoringKey`; their names are :func:`distinct_names`), or their
        names (``METHOD-kNNN`` for the default selectors).
    X : array-like of shape (N, d), optional
        The data, for selectors with ``needs_data``.
    seed : int
        Seed of randomised selectors.
    settings : frozen dataclass, optional
        The settings of a selector with settings (default: :attr:`SelectorInfo.settings`); an error for the others.
    shared : dict, optional
        Results the selectors of one candidate set may share (:func:`run_selectors` passes one dict to all).
    keys : sequence of ScoringKey, optional
        The candidates' keys when ``names`` are names (e.g. names chosen among a larger pool, as a study names
        them); default: the keys given as ``names``, or read from the names.
    """
    info = get_selector(name)
    S = check_score_matrix(scores, name="candidate scores")
    if S.shape[0] < 1 or S.shape[1] < 2:
        raise ValueError(f"model selection needs at least 1 candidate and 2 objects, got scores of shape {S.shape}")
    nm, keys = _candidate_keys(names, S.shape[0], keys)
    if info.needs_data:
        if X is None:
            raise ValueError(f"selector {info.name!r} needs the data X")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != S.shape[1]:
            raise ValueError(f"selector {info.name!r}: X has shape {X.shape}, expected ({S.shape[1]}, d)")
    if info.settings is None:
        if settings is not None:
            raise ValueError(f"selector {info.name!r} takes no settings, got {settings!r}")
        sel = info.fn(S, nm, X=X, seed=int(seed))
    else:
        if settings is not None and type(settings) is not type(info.settings):
            raise ValueError(f"selector {info.name!r} takes {type(info.settings).__name__}, got {settings!r}")
        sel = info.fn(S, nm, X=X, seed=int(seed), settings=info.settings if settings is None else settings,
                      keys=keys, shared=shared)
    if sel.index is not None and not 0 <= sel.index < S.shape[0]:
        raise RuntimeError(f"selector {info.name!r} returned index {sel.index} for {S.shape[0]} candidates")
    return sel


#: Candidates of the fixed-default selectors (method, k), looked up outside a candidate set that lacks them.
DEFAULT_CANDIDATES: tuple[tuple[str, int], ...] = (("kNN", 10), ("LOF", 20))


def paper_candidates(quality: Any, n: int = 10) -> np.ndarray:
    """The ``n`` candidates of Marques et al. (2020, §4.2): the best and the worst by ``quality`` (ROC AUC),
    the others as evenly spaced in quality as possible.

    Targets t_0 = min, t_1 = max, then the n − 2 interior points of ``linspace(min, max, n)``; each target
    takes the not yet chosen candidate closest in quality (ties: the lower index). NaN qualities are never
    chosen.

    Returns
    -------
    ndarray of int64
        Chosen row indices, sorted ascending (all finite rows when there are at most ``n``).
    """
    q = np.asarray(quality, dtype=np.float64)
    if n < 1:
        raise ValueError(f"the number of candidates must be >= 1, got {n}")
    finite = np.flatnonzero(np.isfinite(q))
    if finite.size <= n:
        return finite.astype(np.int64)
    lo, hi = q[finite].min(), q[finite].max()
    grid = np.linspace(lo, hi, n)
    targets = [grid[0], grid[-1], *grid[1:-1]] if n > 1 else [hi]
    free = np.zeros(q.size, dtype=bool)
    free[finite] = True
    chosen = []
    for t in targets:
        idx = np.flatnonzero(free)
        j = int(idx[np.argmin(np.abs(q[idx] - t))])
        chosen.append(j)
        free[j] = False
    return np.sort(np.array(chosen, dtype=np.int64))


def run_selectors(scores: Any, names: Sequence[str | ScoringKey], selectors: Sequence[str], *, X: Any = None,
                  seed: int = 0, references: dict[str, np.ndarray] | None = None,
                  settings: Mapping[str, Any] | None = None, keys: Sequence[ScoringKey] | None = None
                  ) -> dict[str, Selection]:
    """Run several selectors on one candidate set, as the meta-evaluation and the study runner do.

    A selector that raises ``ValueError`` (e.g. ``em`` with no novelty-capable candidate) gets a
    :class:`Selection` without a choice whose ``note`` says why; the others go on. A selector that names no
    candidate (a fixed default not among them) is given each of ``references`` (name → scoring outside the
    candidate set, e.g. kNN k = 10 when the ten paper candidates do not include it) and, when it picks one,
    returns that scoring with the note ``reference NAME: ...``. ``X`` is passed to the selectors that need it;
    ``settings`` (selector name → settings) to the selectors with settings (the others: their defaults);
    ``keys`` as in :func:`run_selector`. The selectors share one ``shared`` dict (``em`` and ``mv`` fit the
    candidates once).
    """
    out: dict[str, Selection] = {}
    shared: dict[Any, Any] = {}
    given = {get_selector(k).name: v for k, v in (settings or {}).items()}
    for name in selectors:
        info = get_selector(name)
        try:
            sel = run_selector(info.name, scores, names, X=X if info.needs_data else None, seed=seed,
                               settings=given.get(info.name), shared=shared if info.settings is not None else None,
                               keys=keys)
        except ValueError as exc:
            out[info.name] = Selection(info.name, None, note=f"could not choose: {exc}")
            continue
        if sel.index is None and sel.scores is None:
            for ref_name, vec in (references or {}).items():
                alt = run_selector(info.name, vec[None, :], [ref_name], seed=seed)
                if alt.index == 0:
                    sel = Selection(sel.selector, None, scores=vec, members=(),
                                    note=f"reference {ref_name}: not among the candidates, judged on its stored scores")
                    break
        out[info.name] = sel
    return out


# ----------------------------------------------------------------------------------------------- rank helpers
def rank_percentiles(scores: Any) -> np.ndarray:
    """Per row, each object's average rank divided by N: in (0, 1], 1 = the most outlying object.

    Ties share the average of the ranks they span (so the scale is the same for every row).
    """
    S = check_score_matrix(scores)
    return stats.rankdata(S, axis=1, method="average") / S.shape[1]


def inverse_ranks(scores: Any) -> np.ndarray:
    """Per row, 1 / rank with rank 1 = the most outlying object (ties: average rank), as in SELECT's
    rank-based combination (Rayana & Akoglu 2016, §4.1): the top of each ranking dominates."""
    S = check_score_matrix(scores)
    return 1.0 / stats.rankdata(-S, axis=1, method="average")


def spearman_matrix(scores: Any) -> np.ndarray:
    """(R, R) Spearman's ρ of every pair of rows (Pearson correlation of average ranks), by one matrix product.

    A constant row has no ranking: its correlations are 0 (diagonal 1).
    """
    Rk = stats.rankdata(check_score_matrix(scores), axis=1, method="average")
    Z = Rk - Rk.mean(axis=1, keepdims=True)
    norm = np.sqrt((Z * Z).sum(axis=1))
    ok = norm > 0
    Z[ok] /= norm[ok, None]
    Z[~ok] = 0.0
    M = Z @ Z.T
    np.clip(M, -1.0, 1.0, out=M)
    np.fill_diagonal(M, 1.0)
    return M


@njit(cache=True)
def _count_swaps_sort(y, buf):  # pragma: no cover - numba
    """Bottom-up merge sort of y in place; returns the number of inversions (pairs i < j with y[i] > y[j])."""
    n = y.size
    swaps = 0
    width = 1
    src, dst = y, buf
    in_buf = False
    while width < n:
        start = 0
        while start < n:
            mid = min(start + width, n)
            end = min(start + 2 * width, n)
            i, j, k = start, mid, start
            while i < mid and j < end:
                if src[j] < src[i]:
                    dst[k] = src[j]
                    swaps += mid - i
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
                k += 1
            while i < mid:
                dst[k] = src[i]
                i += 1
                k += 1
            while j < end:
                dst[k] = src[j]
                j += 1
                k += 1
            start += 2 * width
        src, dst = dst, src
        in_buf = not in_buf
        width *= 2
    if in_buf:
        y[:] = src
    return swaps


@njit(cache=True)
def _tie_pairs_sorted(v):  # pragma: no cover - numba
    """Σ t(t − 1)/2 over runs of equal values of a sorted array."""
    total = 0
    run = 1
    for i in range(1, v.size):
        if v[i] == v[i - 1]:
            run += 1
        else:
            total += run * (run - 1) // 2
            run = 1
    return total + run * (run - 1) // 2


@njit(cache=True)
def _tau_b_presorted(xs, ys, n1, buf):  # pragma: no cover - numba
    """τ-b from x sorted ascending (n1 = its tied pairs) and y in that order; y is sorted in place."""
    n = xs.size
    n0 = n * (n - 1) // 2
    start = 0
    for i in range(1, n + 1):  # sort y within the tie groups of x: tied pairs of x are not discordant
        if i == n or xs[i] != xs[start]:
            if i - start > 1:
                ys[start:i] = np.sort(ys[start:i])
            start = i
    n3 = 0
    run = 1
    for i in range(1, n):
        if xs[i] == xs[i - 1] and ys[i] == ys[i - 1]:
            run += 1
        else:
            n3 += run * (run - 1) // 2
            run = 1
    n3 += run * (run - 1) // 2
    swaps = _count_swaps_sort(ys, buf)
    n2 = _tie_pairs_sorted(ys)
    denom = (n0 - n1) * 1.0 * (n0 - n2)
    if denom <= 0:
        return 0.0
    return (n0 - n1 - n2 + n3 - 2 * swaps) / np.sqrt(denom)


@njit(cache=True)
def _kendall_to(ranks, target):  # pragma: no cover - numba
    """τ-b of every row of a (R, N) int64 dense-rank matrix to one dense-rank vector."""
    R, n = ranks.shape
    out = np.empty(R)
    order = np.argsort(target, kind="mergesort")
    xs = target[order]
    n1 = _tie_pairs_sorted(xs)
    buf = np.empty(n, dtype=np.int64)
    ys = np.empty(n, dtype=np.int64)
    for a in range(R):
        for i in range(n):
            ys[i] = ranks[a, order[i]]
        out[a] = _tau_b_presorted(xs, ys, n1, buf)
    return out


@njit(cache=True)
def _kendall_all(ranks):  # pragma: no cover - numba
    """τ-b of every pair of rows of a (R, N) int64 dense-rank matrix (Knight's O(N log N) algorithm).

    Each row is sorted once; for a pair (a, b) row b is taken in row a's order, sorted within the tie groups
    of row a, and its inversions counted by merge sort.
    """
    R, n = ranks.shape
    out = np.eye(R)
    orders = np.empty((R, n), dtype=np.int64)
    for a in range(R):
        orders[a] = np.argsort(ranks[a], kind="mergesort")
    for a in range(R):
        buf = np.empty(n, dtype=np.int64)
        ys = np.empty(n, dtype=np.int64)
        order = orders[a]
        xs = ranks[a][order]
        n1 = _tie_pairs_sorted(xs)
        for b in range(a + 1, R):
            for i in range(n):
                ys[i] = ranks[b, order[i]]
            tau = _tau_b_presorted(xs, ys, n1, buf)
            out[a, b] = tau
            out[b, a] = tau
    return out


def _dense(S: np.ndarray) -> np.ndarray:
    """0-based dense ranks (ties share a rank) of each row, int64."""
    return np.ascontiguousarray(stats.rankdata(S, axis=-1, method="dense").astype(np.int64) - 1)


def kendall_to(scores: Any, target: Any) -> np.ndarray:
    """Kendall's τ-b of every row of ``scores`` (R, N) to the vector ``target`` (N,) (numba; a constant row or
    target gives 0)."""
    S = check_score_matrix(scores)
    t = check_score_matrix(target, name="target")
    if t.shape != (1, S.shape[1]):
        raise ValueError(f"target must have {S.shape[1]} values, got shape {t.shape[1:]}")
    return _kendall_to(_dense(S), _dense(t)[0])


def kendall_matrix(scores: Any) -> np.ndarray:
    """(R, R) Kendall's τ-b of every pair of rows (Knight's algorithm, numba; equals
    ``scipy.stats.kendalltau(variant="b")``). A constant row has no ranking: its τ are 0 (diagonal 1)."""
    return _kendall_all(_dense(check_score_matrix(scores)))


def ndcg_matrix(scores: Any) -> np.ndarray:
    """(R, R) NDCG of the ranking of row i graded by the rank percentiles of row j (entry [i, j]).

    DCG_ij = Σ_o g_j(o) · δ_i(o) with gains g_j = :func:`rank_percentiles` of row j and the discount
    δ_i(o) = 1 / log2(1 + position of o in row i's ranking) (position 1 = most outlying; tied objects share
    the mean discount of the positions they span); NDCG_ij = DCG_ij / DCG_jj, the ideal being row j's own
    ranking. In [0, 1]; 1 when row i orders the objects as row j does. One matrix product.
    """
    S = check_score_matrix(scores)
    n = S.shape[1]
    G = rank_percentiles(S)
    # discount per object: mean of 1/log2(1 + p) over the positions p its tie group spans
    d = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
    cd = np.concatenate([[0.0], np.cumsum(d)])
    lo = stats.rankdata(-S, axis=1, method="min").astype(np.int64)  # first position of the tie group (1-based)
    hi = stats.rankdata(-S, axis=1, method="max").astype(np.int64)
    D = (cd[hi] - cd[lo - 1]) / (hi - lo + 1)
    dcg = D @ G.T
    ideal = np.diag(dcg).copy()
    return dcg / ideal[None, :]


def model_centrality(scores: Any, measure: Literal["spearman", "kendall", "ndcg"] = "spearman") -> np.ndarray:
    """Model centrality of each candidate: the mean agreement of its ranking with every other candidate's.

    MC_i = 1/(R − 1) Σ_{j ≠ i} agree(i, j), with agree = Spearman's ρ, Kendall's τ-b or NDCG
    (:func:`ndcg_matrix`, row i graded by row j). One candidate: MC = 0.

    References
    ----------
    M. Q. Ma, Y. Zhao, X. Zhang, L. Akoglu. SIGKDD Explorations 25(1), 2023, §3 (model centrality).
    """
    S = check_score_matrix(scores)
    if measure == "spearman":
        M = spearman_matrix(S)
    elif measure == "kendall":
        M = kendall_matrix(S)
    elif measure == "ndcg":
        M = ndcg_matrix(S)
    else:
        raise ValueError(f"unknown centrality measure {measure!r}; use spearman, kendall or ndcg")
    R = M.shape[0]
    if R == 1:
        return np.zeros(1)
    return (M.sum(axis=1) - np.diag(M)) / (R - 1)


def hits_scores(scores: Any, *, tol: float = 1e-12, max_iter: int = 10_000) -> tuple[np.ndarray, np.ndarray]:
    """HITS hub scores of the candidates and authority scores of the objects (Kleinberg 1999).

    The bipartite graph has an edge of weight W[i, o] = rank percentile of object o in candidate i
    (:func:`rank_percentiles`; rank-based, so the score scales do not matter). Iterate a ← Wᵀh, h ← W a, each
    normalised to unit length, from h = 1 until the change is below ``tol``. The fixed point is the leading
    singular vector pair of W (unique and positive since W > 0).

    Returns
    -------
    hubs : ndarray of shape (R,)
    authorities : ndarray of shape (N,)
    """
    W = rank_percentiles(scores)
    h = np.full(W.shape[0], 1.0 / np.sqrt(W.shape[0]))
    a = W.T @ h
    for _ in range(max_iter):
        a = W.T @ h
        a /= np.linalg.norm(a)
        h_new = W @ a
        h_new /= np.linalg.norm(h_new)
        done = np.abs(h_new - h).max() < tol
        h = h_new
        if done:
            break
    return h, a


def select_greedy(scores: Any) -> tuple[tuple[int, ...], np.ndarray, np.ndarray]:
    """SELECT-style greedy consensus ("vertical selection", Rayana & Akoglu 2016, §4.2).

    1. Every candidate's inverse ranks (:func:`inverse_ranks`); target t = their mean over all candidates.
    2. Sort the candidates by Kendall τ-b to t (descending; ties by index).
    3. The ensemble E starts with the first; each next candidate c is added when τ(mean inverse rank of
       E ∪ {c}, t) ≥ τ(E, t) — the agreement with the target does not fall — and is discarded otherwise.

    Returns
    -------
    members : tuple of int
        Selected candidates in the order they were added.
    ensemble : ndarray of shape (N,)
        Mean inverse rank of the members (higher = more outlying).
    tau_to_target : ndarray of shape (R,)
        Kendall τ-b of each candidate to the target.
    """
    Q = inverse_ranks(scores)
    target = Q.mean(axis=0)
    t_dense = _dense(target)
    tau = _kendall_to(_dense(Q), t_dense)
    order = np.lexsort((np.arange(tau.size), -tau))
    members = [int(order[0])]
    total = Q[order[0]].copy()
    best = tau[order[0]]
    for c in order[1:]:
        trial = total + Q[c]
        t = _kendall_to(_dense(trial / (len(members) + 1))[None, :], t_dense)[0]
        if t >= best:
            members.append(int(c))
            total, best = trial, t
    return tuple(members), total / len(members), tau


# ------------------------------------------------------------------------------------------------- selectors
def _argmax(values: np.ndarray) -> int:
    v = np.where(np.isfinite(values), values, -np.inf)
    return int(np.argmax(v))  # first maximum: ties go to the lower index


def _mc(measure: Literal["spearman", "kendall", "ndcg"]) -> SelectorFn:
    def fn(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
        c = model_centrality(S, measure)
        return Selection(f"mc-{measure}", _argmax(c), criterion=c)
    return fn


def _hits(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
    h, _ = hits_scores(S)
    return Selection("hits", _argmax(h), criterion=h)


def _select(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
    members, ens, tau = select_greedy(S)
    # the member that agrees best with the selected ensemble
    agree = np.full(S.shape[0], -np.inf)
    agree[list(members)] = kendall_to(S[list(members)], ens)
    return Selection("select", _argmax(agree), scores=None, criterion=tau, members=members)


def _select_ensemble(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
    members, ens, tau = select_greedy(S)
    return Selection("select-ensemble", None, scores=ens, criterion=tau, members=members)


def _ensemble(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
    from odeval.scaling import gaussian_scaling

    G = np.vstack([gaussian_scaling(row) for row in S])
    return Selection("ensemble", None, scores=combine(G, "mean"), members=tuple(range(S.shape[0])))


def _ensemble_rank(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
    return Selection("ensemble-rank", None, scores=combine(S, "rank"), members=tuple(range(S.shape[0])))


def _random(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
    rng = np.random.default_rng(seed)
    return Selection("random", int(rng.integers(S.shape[0])), note="expected quality = mean over candidates")


def _default(method: str, k: int) -> SelectorFn:
    label = f"default-{method.lower()}{k}"

    def fn(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
        for i, n in enumerate(names):
            try:
                key = ScoringKey.parse(n)
            except ValueError:
                continue
            if key.method.lower() == method.lower() and key.k == k:
                return Selection(label, i)
        return Selection(label, None, note=f"{method} with k = {k} is not among the candidates")
    return fn


# --------------------------------------------------------------------------------- EM / MV (need the data)
def emmv_criteria(names: Sequence[str | ScoringKey | None], X: Any, *, seed: int = 0,
                  draws: int = EMMVSettings.draws, features: int = EMMVSettings.features,
                  max_dim: int = EMMVSettings.max_dim, n_generated: int = EMMVSettings.n_generated,
                  box: str = EMMVSettings.box, sampling: str = EMMVSettings.sampling
                  ) -> tuple[np.ndarray, np.ndarray, tuple[tuple[int, str], ...]]:
    """EM and MV criteria (Goix 2016) of every candidate, refitted on ``X`` and evaluated on it.

    Each candidate is a :class:`~odeval._key.ScoringKey` or a name :meth:`ScoringKey.parse` reads
    (``LOF-010``, ``LDF(h=2.0)-007``): the detector is rebuilt from the key's method and parameters at its k.
    The unsupervised same-data setting of :func:`odeval.labelfree.emmv` (fit on ``X``, ``P_n`` over ``X``, the
    fitted objects scored with self excluded), with its feature sub-sampling when d > ``max_dim`` (``draws``
    draws of ``features`` attributes), ``n_generated`` uniform points per evaluation, the box / grids of
    ``box`` and the volume points of ``sampling`` (:class:`~odeval.labelfree.emmv_algorithm.EMMVSettings`). One
    call of :func:`odeval.labelfree.emmv_many`
    for all candidates: one kNN graph and one uniform-sample query per feature draw, shared by every method,
    parameter set and k. The candidates' stored scores are not used: EM/MV need the scores of new (uniform)
    points, so the detector is rebuilt from its key.

    Candidates that cannot be evaluated are *excluded* with a reason, never silently: a name that is not a key
    or has no k, a metric other than the Euclidean distance (the EM/MV graphs are Euclidean), an unknown method
    or parameter, a method without a novelty form (only kNN, kNNW, LOF, SimplifiedLOF, LoOP, LDOF can score new
    points), k outside ``[min_k, N − 1]``, or a criterion that could not be estimated in any draw (zero
    estimated volume).

    Returns
    -------
    em : ndarray of shape (R,)
        EM criterion, larger = better; NaN for excluded candidates (and where only EM is not estimable).
    mv : ndarray of shape (R,)
        MV criterion, smaller = better; NaN likewise.
    excluded : tuple of (int, str)
        Candidates without an EM or MV value, with the reason.

    References
    ----------
    N. Goix. PhD thesis, Télécom ParisTech, 2016, chapter "How to Evaluate the Quality of Anomaly Detection
    Algorithms?", Eqs. (evaluation:eq:standard_emp_EM), (evaluation:eq:standard_emp_MV), Algorithm EMMV.
    """
    import warnings as _warnings

    from odeval.detectors import available_methods, get_detector
    from odeval.labelfree.emmv_algorithm import emmv_many
    from odeval.labelfree.excess_mass_volume import EMMVWarning

    settings = EMMVSettings(draws=draws, features=features, max_dim=max_dim, n_generated=n_generated, box=box,
                            sampling=sampling)
    Xd = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    n = Xd.shape[0]
    R = len(names)
    em, mv = np.full(R, np.nan), np.full(R, np.nan)
    reasons: dict[int, str] = {}
    known = {m.lower(): m for m in available_methods()}
    groups: dict[ScoringKey, list[tuple[int, int]]] = {}
    for i, item in enumerate(names):
        key = item
        if not isinstance(item, ScoringKey):
            try:
                key = ScoringKey.parse(str(item)) if item is not None else None
            except ValueError:
                key = None
        if key is None or key.k is None or len(key.setting) != 1:
            reasons[i] = "name does not follow METHOD[(params)]-kNNN (no key with k alone)"
            continue
        if key.metric not in ("", "euclidean"):
            reasons[i] = (f"metric {key.metric!r}: EM/MV build Euclidean kNN graphs of the feature draws only")
            continue
        canon = known.get(key.method.lower())
        if canon is None:
            reasons[i] = f"unknown method {key.method!r}"
            continue
        try:
            det = get_detector(canon, **key.params_dict)
        except (ValueError, TypeError) as exc:
            reasons[i] = f"{canon}: {exc}"
            continue
        if not getattr(det, "novelty", False):
            reasons[i] = f"{canon} has no novelty form (cannot score the uniform points EM/MV need)"
            continue
        k = key.k
        if not det.info.min_k <= k < n:
            reasons[i] = f"k = {k} outside [{det.info.min_k}, {n - 1}] for {n} objects"
            continue
        groups.setdefault(ScoringKey(canon, key.params), []).append((i, k))
    with _warnings.catch_warnings():
        _warnings.simplefilter("ignore", EMMVWarning)  # failures are reported as exclusions below
        kss = {config: sorted({k for _, k in members}) for config, members in groups.items()}
        res = emmv_many(kss, Xd, seed=int(seed), **settings.kwargs()) if kss else {}
    for config, members in groups.items():
        by_k = dict(zip(kss[config], res[config], strict=True))
        for i, k in members:
            r = by_k[k]
            em[i], mv[i] = r.em, r.mv
            if not (np.isfinite(r.em) and np.isfinite(r.mv)):
                reasons[i] = "EM/MV not estimable in any feature draw: " + "; ".join(r.reasons)
    return em, mv, tuple(sorted(reasons.items()))


#: Default settings of the ``em`` / ``mv`` selectors: the defaults of :func:`odeval.labelfree.emmv` (Goix 2016).
EMMV_SELECTOR_SETTINGS = EMMVSettings()


def _emmv_selector(which: Literal["em", "mv"]) -> SelectorFn:
    def fn(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0,
           settings: EMMVSettings = EMMV_SELECTOR_SETTINGS, keys: Sequence[ScoringKey | None] | None = None,
           shared: dict[Any, Any] | None = None) -> Selection:
        candidates = tuple(keys) if keys is not None else names
        memo_key = ("emmv", candidates, settings, int(seed))  # em and mv of one candidate set share the fits
        if shared is not None and memo_key in shared:
            em, mv, excluded = shared[memo_key]
        else:
            em, mv, excluded = emmv_criteria(candidates, X, seed=seed, **settings.kwargs())
            if shared is not None:
                shared[memo_key] = (em, mv, excluded)
        crit = em if which == "em" else -mv  # criterion: higher = preferred (mv: −MV)
        usable = np.isfinite(crit)
        if not usable.any():
            why = "; ".join(f"{names[i]}: {r}" for i, r in excluded[:3])
            raise ValueError(f"selector {which!r}: none of the {len(names)} candidates can be evaluated by "
                             f"{which.upper()} ({why}{' ...' if len(excluded) > 3 else ''})")
        note = ""
        skipped = [(i, r) for i, r in excluded if not usable[i]]
        if skipped:
            note = (f"{which.upper()} chose among {int(usable.sum())} of {len(names)} candidates; excluded: "
                    + "; ".join(f"{names[i]} ({r})" for i, r in skipped[:5])
                    + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""))
            import warnings as _warnings

            _warnings.warn(note, RuntimeWarning, stacklevel=3)
        return Selection(which, _argmax(crit), criterion=crit, note=note, excluded=tuple(skipped))
    return fn


# ------------------------------------------------------------------------------------ IREOS, Laplacian Score
#: Default settings of the ``ireos-*`` selectors: the kNN-subset approximation of the paper's experiments
#: (Marques et al. 2020, §3.5.3; the exact index when N <= knn + 1), adaptive quadrature and the authors' pinned
#: classifier (:func:`~odeval.labelfree.ireos`'s default; the Campos audit's ``ireos`` row, docs/model-selection.md,
#: "IREOS with the pinned classifier"). The null of the adjustment stays the permutation null: with m_cl > 1 the
#: uniform null classifies every object in every Monte Carlo draw, too costly for a selector run per variant; at
#: m_cl = 1 the null does not enter (E{I} = Eq. 25). These settings enter the id of a study's selection task that
#: runs an ``ireos-*`` selector (:func:`odeval.bench.variant_step.plan_variant_tasks`), so picks stored with other
#: settings (before 2026-11-27: the exact KLR optimum) are recomputed, not reused.
IREOS_SELECTOR_SETTINGS = IREOSSettings(knn=PAPER_KNN, null="permutation")


def weighable_candidates(S: np.ndarray) -> tuple[list[tuple[int, np.ndarray]], list[tuple[int, str]]]:
    """The candidates IREOS and the Laplacian Score can weigh, as (row, score vector), and the others as (row,
    reason).

    Every candidate is a *scoring*: one that happens to take only the values 0 and 1 (e.g. a method at large k)
    would be read by :func:`odeval.labelfree.solution_weights` as a binary top-n solution, so it is
    shifted by +1 (Gaussian scaling is shift-invariant). A candidate without weights — constant scores (e.g. INFLO
    or LOF at k = N − 1 score every object 1), or no positive weight after scaling — is excluded with the reason
    (its criterion is NaN), instead of failing the variant.
    """
    from odeval.labelfree.ireos import solution_weights

    use, excluded = [], []
    for i, s in enumerate(np.asarray(S, dtype=np.float64)):
        if not np.isfinite(s).all():
            excluded.append((i, "non-finite scores"))
            continue
        if np.ptp(s) == 0.0:
            excluded.append((i, "constant scores: no outlier weights"))
            continue
        sol = s + 1.0 if np.isin(s, (0.0, 1.0)).all() else s
        try:
            solution_weights([sol], S.shape[1])
        except ValueError as exc:
            excluded.append((i, str(exc)))
            continue
        use.append((i, sol))
    return use, excluded


def _on_weighable(label: str, S: np.ndarray, criterion_of: Callable[[list[np.ndarray]], np.ndarray]) -> Selection:
    """Run ``criterion_of`` on the weighable candidates only (:func:`weighable_candidates`); the others get NaN
    and are listed in ``excluded`` (and summarised in ``note``)."""
    use, excluded = weighable_candidates(S)
    if not use:
        raise ValueError("no candidate has outlier weights: " + "; ".join(sorted({r for _, r in excluded})))
    crit = np.full(S.shape[0], np.nan)
    crit[[i for i, _ in use]] = criterion_of([sol for _, sol in use])
    note = (f"{len(excluded)} candidate(s) excluded: " + "; ".join(sorted({r for _, r in excluded}))
            if excluded else "")
    return Selection(label, _argmax(crit), criterion=crit, note=note, excluded=tuple(excluded))


def _ireos_selector(label: str, m_cl: Any) -> SelectorFn:
    def fn(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0,
           settings: IREOSSettings = IREOS_SELECTOR_SETTINGS, keys: Any = None,
           shared: dict[Any, Any] | None = None) -> Selection:
        from odeval.labelfree.ireos import ireos

        # the selector's m_cl is its own; fewer objects than the kNN subset size: the exact index
        opts = replace(settings, m_cl=m_cl).for_objects(X.shape[0])

        def adjusted(sols: list[np.ndarray]) -> np.ndarray:
            return ireos(X, sols, adjust=True, seed=seed, workers=1, **opts.kwargs()).adjusted
        return _on_weighable(label, S, adjusted)
    return fn


_LAPLACIAN_GRAPH: dict[tuple[Any, ...], Any] = {}


def _laplacian_graph(W: np.ndarray, k_max: int) -> Any:
    """The kNN graph of the candidate-scorings space (objects = rows of W.T) for k ≤ k_max, one cached entry:
    the three ``laplacian-*`` selectors of one candidate set share it (computed once for the largest of the
    paper's k, 1, √N and 100)."""
    import hashlib

    from odeval.neighbors import knn_graph

    key = (W.shape, hashlib.sha256(np.ascontiguousarray(W).tobytes()).hexdigest())
    graph = _LAPLACIAN_GRAPH.get(key)
    if graph is None or graph.k_max < k_max:
        graph = knn_graph(W.T, k_max)
        _LAPLACIAN_GRAPH.clear()
        _LAPLACIAN_GRAPH[key] = graph
    return graph


def _laplacian_selector(label: str, k: int | None) -> SelectorFn:
    def fn(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
        from odeval.labelfree.ireos import solution_weights
        from odeval.labelfree.laplacian import laplacian_score

        n = S.shape[1]
        kk = round(float(np.sqrt(n))) if k is None else k
        kk = int(min(max(1, kk), n - 1))

        def criterion(sols: list[np.ndarray]) -> np.ndarray:
            W, _ = solution_weights(sols, n)  # Gaussian-scaled, as IREOS sees the candidates
            graph = _laplacian_graph(W, int(min(n - 1, max(kk, 100, round(float(np.sqrt(n)))))))
            return -laplacian_score(W, kk, graph=graph)  # lower Laplacian Score = better: criterion = −LS
        return _on_weighable(label, S, criterion)
    return fn


_MC_REF = "Ma, Zhao, Zhang, Akoglu, SIGKDD Explorations 2023, §3 (model centrality)"
for _m, _d in (("spearman", "mean Spearman ρ of the candidate's ranking to every other candidate's"),
               ("kendall", "mean Kendall τ-b of the candidate's ranking to every other candidate's"),
               ("ndcg", "mean NDCG of the candidate's ranking graded by every other candidate's rank percentiles")):
    register_selector(SelectorInfo(f"mc-{_m}", _mc(_m), "pick", False, f"model centrality: {_d}", _MC_REF))  # type: ignore[arg-type]
register_selector(SelectorInfo(
    "hits", _hits, "pick", False, "HITS hub score on the candidate × object graph (rank-percentile weights)",
    "Kleinberg, J. ACM 1999; Ma et al. 2023, §3"))
register_selector(SelectorInfo(
    "select", _select, "pick", False,
    "SELECT-style greedy consensus (target: mean inverse rank; add while Kendall τ to it does not fall); "
    "picks the member closest to the selected ensemble", "Rayana & Akoglu, ACM TKDD 2016"))
register_selector(SelectorInfo(
    "select-ensemble", _select_ensemble, "scoring", False, "the SELECT ensemble itself (mean inverse rank of its "
    "members)", "Rayana & Akoglu, ACM TKDD 2016"))
register_selector(SelectorInfo(
    "ensemble", _ensemble, "scoring", False, "mean of the Gaussian-scaled scores of all candidates",
    "Kriegel et al., SDM 2011 (Gaussian scaling)"))
register_selector(SelectorInfo(
    "ensemble-rank", _ensemble_rank, "scoring", False, "mean rank of every object over all candidates", ""))
register_selector(SelectorInfo(
    "random", _random, "expected", False, "a uniformly random candidate (expected quality: the mean over candidates)",
    ""))
register_selector(SelectorInfo("default-knn10", _default("kNN", 10), "pick", False, "fixed default: kNN with k = 10",
                               ""))
register_selector(SelectorInfo("default-lof20", _default("LOF", 20), "pick", False, "fixed default: LOF with k = 20",
                               ""))
_EMMV_REF = "Goix, PhD thesis 2016, ch. 'How to Evaluate the Quality of Anomaly Detection Algorithms?' (EMMV)"
register_selector(SelectorInfo(
    "em", _emmv_selector("em"), "pick", True,
    "largest Excess-Mass criterion of the refitted method (fit and evaluate on X; feature sub-sampling for d > 8); "
    "novelty-capable methods only (kNN, kNNW, LOF, SimplifiedLOF, LoOP, LDOF)", _EMMV_REF, default=False,
    settings=EMMV_SELECTOR_SETTINGS))
register_selector(SelectorInfo(
    "mv", _emmv_selector("mv"), "pick", True,
    "smallest Mass-Volume criterion (criterion reported: −MV) of the refitted method, as em", _EMMV_REF,
    default=False, settings=EMMV_SELECTOR_SETTINGS))
_IREOS_REF = "Marques, Campello, Sander, Zimek, ACM TKDD 14(4) 2020, Eq. 9, 12, 13 (adjusted index)"
register_selector(SelectorInfo(
    "ireos", _ireos_selector("ireos", 1), "pick", True,
    "largest adjusted IREOS index (m_cl = 1; Gaussian-scaled scores as weights; kNN-subset approximation, knn = 250)",
    _IREOS_REF, default=False, settings=IREOS_SELECTOR_SETTINGS))
register_selector(SelectorInfo(
    "ireos-sqrt5", _ireos_selector("ireos-sqrt5", "sqrt5"), "pick", True,
    "largest adjusted IREOS index with clumps, m_cl = √(5 %·N) (chance adjustment by Monte Carlo: costly)",
    _IREOS_REF, default=False, settings=IREOS_SELECTOR_SETTINGS))
_LS_REF = "He, Cai, Niyogi, NIPS 2005; the baseline of Marques et al. 2020, §4.2"
for _lab, _k, _txt in (("laplacian-1", 1, "k = 1"), ("laplacian-sqrt", None, "k = √N"),
                       ("laplacian-100", 100, "k = 100")):
    register_selector(SelectorInfo(
        _lab, _laplacian_selector(_lab, _k), "pick", False,
        f"smallest Laplacian Score of the candidate's Gaussian-scaled scores on the kNN graph ({_txt}) of the "
        "candidate scorings space (criterion: −score)", _LS_REF, default=False))


# ------------------------------------------------------------------------------------------- meta-learned
def _meta(S: np.ndarray, names: tuple[str, ...], *, X: Any = None, seed: int = 0) -> Selection:
    """The meta-learned selector (:mod:`odeval.labelfree.meta`): the model's best predicted candidate among those
    given (matched by method and k), or kNN k = 10 where no gain over it is predicted. ``criterion``: the predicted
    gain over kNN k = 10 (NaN for candidates outside the model's grid)."""
    from odeval.labelfree.meta import load_model
    from odeval.labelfree.metafeatures import meta_features

    model = load_model()
    parsed: list[tuple[str, int] | None] = []
    for n in names:
        try:
            key = ScoringKey.parse(n)
        except ValueError:
            key = None
        parsed.append((key.method.lower(), int(key.k)) if key is not None and key.k is not None else None)
    available = [p for p in parsed if p is not None]
    features = meta_features(X)
    gain = model.predict_gain(features)
    (method, k), g = model.choose(features, available)
    where = {p: i for i, p in reversed(list(enumerate(parsed))) if p is not None}
    index = where.get((method.lower(), k))
    if index is None:
        raise ValueError(f"selector 'meta': its pick {method}-{k:03d} is not among the {len(names)} candidates")
    grid = {(m.lower(), kk): i for i, (m, kk) in enumerate(model.candidates)}
    crit = np.array([gain[grid[p]] if p is not None and p in grid else np.nan for p in parsed])
    note = (f"predicted gain over kNN k = 10: {g:+.3f} ({model.config.label()})" if g > 0 else
            f"no candidate predicted to beat kNN k = 10 by more than {model.config.margin:g}: kNN k = 10 "
            f"({model.config.label()})")
    return Selection("meta", index, criterion=crit, note=note)


register_selector(SelectorInfo(
    "meta", _meta, "pick", True,
    "meta-learned: the candidate whose gain over kNN k = 10 a model trained on labelled datasets predicts from "
    "label-free meta-features (kNN k = 10 where none is predicted); data file labelfree/data/meta_selector.npz",
    "Zhao, Rossi, Akoglu, NeurIPS 2021 (MetaOD); docs/model-selection.md, 'A meta-learned selector'",
    default=False))
