"""Excess-Mass and Mass-Volume criteria: label-free evaluation of outlier scorings (Goix 2016).

The chapter ("How to Evaluate the Quality of Anomaly Detection Algorithms?", N. Goix, PhD thesis 2016,
``../shared/docs/papers/goix2016-thesis-chapter-em-mv-evaluation.tex.txt``) evaluates a scoring function
``s`` (high = *normal*) by how well its level sets ``{s ≥ u}`` match the density level sets of the data:

* Mass-Volume curve, Eq. (evaluation:MV-def-emp):
  ``MV_s(α) = inf_u { Leb(s ≥ u) : P_n(s ≥ u) ≥ α }`` — criterion ``∫ MV over I_MV = [0.9, 0.999]``,
  smaller is better (Eq. evaluation:eq:standard_emp_MV).
* Excess-Mass curve, Eq. (evaluation:EM-def-emp):
  ``EM_s(t) = sup_u { P_n(s ≥ u) − t · Leb(s ≥ u) }`` — criterion ``∫ EM over I_EM = [0, EM⁻¹(0.9)]`` with
  ``EM⁻¹(0.9) = inf{t ≥ 0 : EM_s(t) ≤ 0.9}``, larger is better (Eq. evaluation:eq:standard_emp_EM).
* ``Leb`` is estimated by Monte Carlo: uniform points in the bounding box of the data, scored by the same
  function; ``Leb(s ≥ u) ≈ volume · #{uniform points with s ≥ u} / n_uniform``.
* High dimension (Algorithm "EMMV", §"Scaling with dimension"): m draws of d' features, the detector refitted
  on each sub-space, both criteria computed in d' dimensions and averaged over the draws.

Orientation. odeval scores are *higher = more outlying*; EM/MV use level sets of *normality*. Every function
here takes odeval-oriented scores and negates them internally (``s = −score``), so callers never flip signs.

Exactness. Both curves are computed for *all* thresholds at once from sorted scores (cumulative counts via
``searchsorted``); the EM curve is the upper envelope of the lines ``t ↦ F_j − t·V_j`` (one per distinct data
score), evaluated through its convex hull — no loop over thresholds in Python. The values equal those of
a direct evaluation of the definitions (tests: ``tests/labelfree/test_emmv.py``, 1e-12) and of the authors'
loop over every unique score (``benchmarks/emmv.py``).

Grids and end points (the chapter's text states the intervals, the authors' code — ``EMMV_benchmarks``,
``em.py`` / ``em_bench.py`` — the grids; odeval's defaults follow the code so that numbers are comparable):

* EM: ``t = arange(0, 100/volume, 0.01/volume)`` (10,000 points). With ``integration="grid"`` (default) the
  criterion is the trapezoid rule over ``t[0..i*]`` where ``i*`` is the first grid index with
  ``EM(t) ≤ 0.9`` (the authors' ``amax``: the first grid point past EM⁻¹(0.9) is included). With
  ``integration="exact"`` it is the exact integral of the piecewise-linear EM curve over
  ``[0, EM⁻¹(0.9)]`` (no grid; ``EM⁻¹(0.9)`` solved exactly).
* MV: ``α = arange(0.9, 0.999, 0.0001)`` (990 points, 0.9 … 0.9989: NumPy's ``arange`` excludes the stop, as
  in the authors' code); trapezoid rule. ``integration="exact"`` integrates the step function
  ``MV(α) = V_(⌈αn⌉)`` exactly over ``[0.9, 0.999]``.
* Feature sub-sampling (the authors' ``em_bench_high.py``): ``t`` step 0.001/volume, ``α`` step 0.001
  (:data:`T_STEP_SUBSAMPLED`, :data:`ALPHA_STEP_SUBSAMPLED`; ``odeval.labelfree.emmv`` passes them).
* ``P_n(s ≥ u) ≥ α`` is decided as ``count/n ≥ α`` in floating point, the arithmetic of the authors' loop.

Deviation from the authors' code: their ``em`` uses strict ``s > u`` sets (then forces ``EM(0) = 1``); odeval
uses ``s ≥ u`` as the chapter's definition does, which includes the full-mass level set. The empty set
(``u`` above every score, EM value 0) is a candidate, so ``EM ≥ 0``; ``u`` ranges over all reals (the
chapter's ``u ≥ 0`` refers to non-negative scoring functions, an irrelevant restriction after negation).

When a criterion cannot be estimated, it is NaN with a ``reason`` and an :class:`EMMVWarning` — never a silent
number: EM never falls to 0.9 (a level set of mass > 0.9 holds no uniform point, or the t grid is too
short), or an MV level set on the α interval has estimated volume 0 (no uniform point in it).

References
----------
Goix, N. (2016). Machine Learning and Extreme Value Theory for Anomaly Detection, PhD thesis, Télécom
ParisTech, chapter "How to Evaluate the Quality of Anomaly Detection Algorithms?" (Eqs. evaluation:MV-def-emp,
evaluation:EM-def-emp, evaluation:eq:standard_emp_EM, evaluation:eq:standard_emp_MV; Algorithm
evaluation:algo:EMMV). Also Goix, N. (2016), How to evaluate the quality of unsupervised anomaly detection
algorithms?, ICML Anomaly Detection Workshop, arXiv:1607.01152.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numba
import numpy as np

from odeval._validation import check_scores

__all__ = ["EMMVWarning", "ExcessMassResult", "MassVolumeResult", "excess_mass", "mass_volume", "default_t_grid",
           "default_alpha_grid", "uniform_in_box", "bounding_box", "T_STEP", "ALPHA_STEP", "T_STEP_SUBSAMPLED",
           "ALPHA_STEP_SUBSAMPLED", "nested_uniform_in_box", "NESTED_LEVELS"]

T_MAX = 0.9
ALPHA_MIN = 0.9
ALPHA_MAX = 0.999
N_GENERATED = 100_000
#: Grid steps of the authors' code (EMMV_benchmarks): ``em_bench.py`` (standard criteria, d ≤ 8) integrates EM on
#: ``t = arange(0, 100/V, 0.01/V)`` and MV on ``α = arange(0.9, 0.999, 0.0001)``; ``em_bench.py``'s
#: sub-sampling sibling ``em_bench_high.py`` on ``arange(0, 100/V, 0.001/V)`` and ``arange(0.9, 0.999, 0.001)``.
T_STEP = 0.01
ALPHA_STEP = 0.0001
T_STEP_SUBSAMPLED = 0.001
ALPHA_STEP_SUBSAMPLED = 0.001
_INTEGRATIONS = ("grid", "exact")


class EMMVWarning(RuntimeWarning):
    """An EM or MV criterion could not be estimated (the value is NaN; the result's ``reason`` says why)."""


@dataclass(frozen=True)
class ExcessMassResult:
    """Empirical Excess-Mass curve and criterion (larger = better).

    Attributes
    ----------
    criterion : float
        ``∫ EM(t) dt`` over ``[0, EM⁻¹(t_max)]`` (see the module docstring for the grid / exact end point);
        NaN when it cannot be estimated (``reason`` says why).
    t, em : ndarray
        The t grid and the EM curve on it (``em[0] = 1``: the level set holding every data point, with a
        penalty ``0·Leb``).
    t_inverse : float
        ``EM⁻¹(t_max) = inf{t ≥ 0 : EM(t) ≤ t_max}``, exact (from the piecewise-linear curve); inf if EM never
        falls to ``t_max``.
    t_end : float
        Right end of the integration interval actually used: the first grid point with ``EM ≤ t_max``
        ("grid") or ``t_inverse`` ("exact"); NaN when the criterion is NaN.
    reason : str or None
        Why ``criterion`` is NaN; None when it is a number.
    """

    criterion: float
    t: np.ndarray
    em: np.ndarray
    t_inverse: float
    t_end: float
    t_max: float
    integration: str
    volume: float
    n_data: int
    n_uniform: int
    reason: str | None = None


@dataclass(frozen=True)
class MassVolumeResult:
    """Empirical Mass-Volume curve and criterion (smaller = better).

    Attributes
    ----------
    criterion : float
        ``∫ MV(α) dα`` over ``[alpha_min, alpha_max]``; NaN when some level set on that interval has an
        estimated volume of 0 (``reason``).
    alpha, mv : ndarray
        The α grid and the MV curve on it.
    """

    criterion: float
    alpha: np.ndarray
    mv: np.ndarray
    alpha_min: float
    alpha_max: float
    integration: str
    volume: float
    n_data: int
    n_uniform: int
    reason: str | None = None


# ---------------------------------------------------------------------------------------------- helpers


def default_t_grid(volume: float, step: float = T_STEP) -> np.ndarray:
    """The authors' t grid: ``arange(0, 100/volume, step/volume)``.

    ``step`` 0.01 (default, :data:`T_STEP`): ``em_bench.py`` of EMMV_benchmarks (standard criteria, 10,000
    points); 0.001 (:data:`T_STEP_SUBSAMPLED`): ``em_bench_high.py`` (feature sub-sampling, 100,000 points).
    """
    return np.arange(0, 100 / volume, step / volume)


def default_alpha_grid(alpha_min: float = ALPHA_MIN, alpha_max: float = ALPHA_MAX,
                       step: float = ALPHA_STEP) -> np.ndarray:
    """The authors' α grid: ``arange(alpha_min, alpha_max, step)`` (stop excluded).

    ``step`` 0.0001 (default, :data:`ALPHA_STEP`): ``em_bench.py`` (990 points 0.9 … 0.9989); 0.001
    (:data:`ALPHA_STEP_SUBSAMPLED`): ``em_bench_high.py`` (99 points 0.9 … 0.998).
    """
    return np.arange(alpha_min, alpha_max, step)


def bounding_box(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(lower, upper, volume)`` of the axis-aligned bounding box of the rows of ``X``."""
    lo = X.min(axis=0)
    hi = X.max(axis=0)
    return lo, hi, float(np.prod(hi - lo))


def uniform_in_box(lower: np.ndarray, upper: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` points uniform in the box ``[lower, upper]`` from ``np.random.default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    return rng.uniform(lower, upper, size=(int(n), np.asarray(lower).shape[0]))


#: Quantile levels p of the nested boxes of :func:`nested_uniform_in_box`: ``[Q(p), Q(1 − p)]`` per attribute.
NESTED_LEVELS = (0.01, 0.1, 0.25)


def nested_uniform_in_box(lower: np.ndarray, upper: np.ndarray, X: np.ndarray, n: int, seed: int,
                          levels: tuple[float, ...] = NESTED_LEVELS) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points for the Lebesgue volumes of level sets, spread over nested boxes, with their weights.

    Uniform sampling of the box ``[lower, upper]`` spends almost no point where the data's mass lies when a
    few extreme values stretch the box: on zero-inflated, right-skewed attributes (sparse counts, word
    frequencies) the level sets holding 90 % of the objects fill 10⁻⁵–10⁻⁶ of a 5-dimensional box, and 10⁵
    uniform points leave them empty (estimated volume 0, EM and MV not estimable). Here the points are split
    evenly between the box and sub-boxes ``B_p = Π_j [Q_j(p), Q_j(1 − p)] ∩ box`` of the per-attribute
    quantiles of ``X`` (the evaluated objects), ``p`` in ``levels``; where an attribute's interval has width 0
    (an atom, e.g. the zeros of a sparse attribute, holds more than ``1 − 2p`` of the objects) it is the
    interval between the atom's nearest distinct values instead. Weights (multiple importance sampling, balance
    heuristic): point ``z`` stands for ``w(z) = (n / V) / Σ_l n_l · 1{z ∈ B_l} / vol(B_l)`` uniform points, so that
    ``volume / n · Σ_k w_k · 1{z_k ∈ A}`` estimates ``Leb(A)`` without bias for every set ``A`` in the box (the
    whole box keeps a share of the points, so the weights are bounded by ``1 + len(levels)``). With the box
    alone every weight is 1: :func:`uniform_in_box`.

    Returns
    -------
    U : ndarray of shape (n, d)
    weights : ndarray of shape (n,)
        For the ``uniform_weights`` argument of :func:`excess_mass` / :func:`mass_volume`.
    """
    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    boxes = [(lower, upper)]
    for p in levels:
        lo = np.clip(np.quantile(X, p, axis=0), lower, upper)
        hi = np.clip(np.quantile(X, 1 - p, axis=0), lower, upper)
        for j in np.flatnonzero(hi <= lo):  # an atom holding more than 1 − 2p of the objects (a zero-inflated
            # attribute): the interval between its nearest distinct values, where a detector's cell of the atom lies
            values = np.unique(X[:, j])
            i = int(np.searchsorted(values, lo[j]))
            lo[j] = values[i - 1] if i > 0 else lower[j]
            hi[j] = values[i + 1] if i + 1 < values.size else upper[j]
            if hi[j] <= lo[j]:  # a constant attribute: the coarser interval
                lo[j], hi[j] = boxes[-1][0][j], boxes[-1][1][j]
        boxes.append((lo, hi))
    n = int(n)
    counts = np.full(len(boxes), n // len(boxes))
    counts[0] += n - counts.sum()
    rng = np.random.default_rng(seed)
    U = np.concatenate([rng.uniform(lo, hi, size=(c, lower.shape[0])) for (lo, hi), c in zip(boxes, counts,
                                                                                             strict=True)])
    volume = float(np.prod(upper - lower))
    density = np.zeros(n)  # points per unit volume at each point: Σ_l n_l 1{z ∈ B_l} / vol(B_l)
    for (lo, hi), c in zip(boxes, counts, strict=True):
        inside = np.all((U >= lo) & (U <= hi), axis=1)
        density += inside * (c / float(np.prod(hi - lo)))
    return U, (n / volume) / density


def _check_volume(volume: float) -> float:
    try:
        v = float(volume)
    except (TypeError, ValueError):
        raise ValueError(f"volume must be a positive finite number, got {volume!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise ValueError(f"volume must be a positive finite number (the bounding box's Lebesgue measure), got "
                         f"{volume!r}; a zero-width box means a constant attribute")
    return v


def _check_inputs(s_data, s_uniform, volume, integration, weights=None):
    if integration not in _INTEGRATIONS:
        raise ValueError(f"integration must be one of {', '.join(_INTEGRATIONS)}, got {integration!r}")
    a = check_scores(s_data, name="s_data (scores of the evaluated objects)")
    b = check_scores(s_uniform, name="s_uniform (scores of the uniform sample)")
    if a.size == 0:
        raise ValueError("s_data is empty: no evaluated objects (empty test split?)")
    if b.size == 0:
        raise ValueError("s_uniform is empty: need n_generated ≥ 1 uniform points")
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != b.shape or not np.all(np.isfinite(weights)) or np.any(weights <= 0):
            raise ValueError(f"uniform_weights must hold {b.size} positive finite numbers, one per uniform point")
    return a, b, _check_volume(volume), weights


def _level_set_counts(s_data: np.ndarray, s_uniform: np.ndarray, weights: np.ndarray | None = None):
    """Distinct normality levels ``v`` (ascending) of the data, with ``#data ≥ v`` and ``#uniform ≥ v``.

    Normality = −score. Counts by ``searchsorted`` on the sorted normality values. With ``weights`` (one per
    uniform point, :func:`nested_uniform_in_box`) the uniform "count" is the sum of the weights of the points
    with normality ≥ v (0 exactly when there is none).
    """
    a = np.sort(-s_data)
    first = np.flatnonzero(np.r_[True, a[1:] != a[:-1]])  # first index of each distinct value
    v = a[first]
    cnt_data = a.size - first  # #{a ≥ v}
    if weights is None:
        b = np.sort(-s_uniform)
        cnt_unif = b.size - np.searchsorted(b, v, side="left")  # #{b ≥ v}
        return v, cnt_data.astype(np.int64), cnt_unif.astype(np.int64)
    order = np.argsort(-s_uniform, kind="stable")
    b = -s_uniform[order]
    above = np.r_[np.cumsum(weights[order][::-1])[::-1], 0.0]  # above[i] = Σ weights of b[i:]
    return v, cnt_data.astype(np.int64), above[np.searchsorted(b, v, side="left")]


@numba.njit(cache=True)
def _upper_hull(F, U):  # pragma: no cover - numba
    """Indices of the lines ``F_j − t·U_j`` (F, U strictly decreasing) on their upper envelope over t ≥ 0.

    Classic convex-hull trick: lines arrive in decreasing ``U`` (increasing slope); the top line ``b`` of the
    stack is dropped when the new line ``c`` overtakes the line below ``b`` no later than ``b`` does.
    Cross-multiplied comparisons (no division); evaluation later checks neighbouring hull lines as well.
    """
    n = F.shape[0]
    out = np.empty(n, np.int64)
    m = 0
    for j in range(n):
        while m >= 2:
            a = out[m - 2]
            b = out[m - 1]
            # t(a,c) <= t(a,b)  <=>  (F_a − F_c)/(U_a − U_c) <= (F_a − F_b)/(U_a − U_b)
            if (F[a] - F[j]) * (U[a] - U[b]) <= (F[a] - F[b]) * (U[a] - U[j]):
                m -= 1
            else:
                break
        out[m] = j
        m += 1
    return out[:m]


class _EMLines:
    """The EM curve as the upper envelope of the lines ``mass_j − t·vol_j`` (one per distinct data level)."""

    def __init__(self, s_data: np.ndarray, s_uniform: np.ndarray, volume: float,
                 weights: np.ndarray | None = None) -> None:
        _, cnt_data, cnt_unif = _level_set_counts(s_data, s_uniform, weights)
        n, n_gen = s_data.size, s_uniform.size
        # the empty set (u above every score): mass 0, volume 0
        cnt_data = np.r_[cnt_data, 0]
        cnt_unif = np.r_[cnt_unif, 0]
        # equal uniform counts: only the largest mass matters (lowest level, first in the run)
        keep = np.r_[True, cnt_unif[1:] != cnt_unif[:-1]]
        cd, cu = cnt_data[keep], cnt_unif[keep]
        self.n, self.n_gen, self.volume = n, n_gen, volume
        self.mass = (1.0 / n) * cd  # P_n(s ≥ v_j)
        self.cnt_unif = cu.astype(np.float64)
        # geometry in integer counts (exact in float64 up to ~1e7 points each): the comparisons are homogeneous
        # in mass and in volume, so the scale factors 1/n and volume/n_gen drop out
        hull = _upper_hull(cd.astype(np.float64), cu.astype(np.float64))
        self.hull = hull
        hm, hu = self.mass[hull], self.cnt_unif[hull]
        # breakpoints: line h[i+1] overtakes h[i] at t_i = (m_i − m_{i+1}) / (vol_i − vol_{i+1})
        vol = hu / n_gen * volume
        self.hull_vol = vol
        with np.errstate(divide="ignore", invalid="ignore"):
            self.breaks = (hm[:-1] - hm[1:]) / (vol[:-1] - vol[1:])

    def value(self, t: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``mass − t·count/n_gen·volume`` of hull line ``idx`` (the arithmetic of the authors' loop)."""
        h = self.hull[idx]
        return self.mass[h] - t * self.cnt_unif[h] / self.n_gen * self.volume

    def __call__(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        pos = np.searchsorted(self.breaks, t, side="left")
        last = self.hull.size - 1
        best = self.value(t, pos)
        for shift in (-1, 1):  # guard against rounding at breakpoints
            best = np.maximum(best, self.value(t, np.clip(pos + shift, 0, last)))
        return best

    def inverse(self, level: float) -> float:
        """``inf{t ≥ 0 : EM(t) ≤ level}`` exactly (EM is continuous, convex and non-increasing)."""
        hm, vol = self.mass[self.hull], self.hull_vol
        # EM at the start of each hull segment's dominance interval
        starts = np.r_[0.0, self.breaks]
        vals = hm - starts * vol
        if vals[0] <= level:
            return 0.0
        # first hull line whose segment reaches `level`: its value at the segment end ≤ level
        ends = np.r_[self.breaks, np.inf]
        with np.errstate(invalid="ignore"):
            end_vals = np.where(np.isinf(ends), np.where(vol > 0, -np.inf, hm), hm - ends * vol)
        hit = np.flatnonzero(end_vals <= level)
        if hit.size == 0:
            return np.inf
        i = int(hit[0])
        return float((hm[i] - level) / vol[i])

    def integral(self, t_end: float) -> float:
        """Exact ``∫_0^{t_end} EM(t) dt`` (piecewise linear: trapezoids between breakpoints)."""
        knots = np.r_[0.0, self.breaks[(self.breaks > 0) & (self.breaks < t_end)], t_end]
        vals = self(knots)
        return float(np.sum((knots[1:] - knots[:-1]) * (vals[1:] + vals[:-1]) / 2))


def _warn(reason: str, stacklevel: int = 3) -> None:
    warnings.warn(reason, EMMVWarning, stacklevel=stacklevel)


def _trapezoid(y: np.ndarray, x: np.ndarray) -> float:
    return float(np.trapezoid(y, x))


# ------------------------------------------------------------------------------------------ estimators


def excess_mass(s_data, s_uniform, volume: float, *, t_max: float = T_MAX, t: np.ndarray | None = None,
                integration: str = "grid", uniform_weights: np.ndarray | None = None,
                warn: bool = True) -> ExcessMassResult:
    """Empirical Excess-Mass curve and criterion ``∫ EM over [0, EM⁻¹(t_max)]`` (Goix 2016).

    ``EM(t) = sup_u { P_n(s ≥ u) − t · Leb(s ≥ u) }`` with ``s = −score`` (odeval scores are higher = more
    outlying; EM works on level sets of *normality*, so the scores are negated here), ``P_n`` the empirical
    measure of ``s_data`` and ``Leb(s ≥ u) = volume · #{s_uniform ≥ u} / n_uniform``.

    Parameters
    ----------
    s_data : array-like, shape (n,)
        Outlier scores (higher = more outlying) of the evaluated objects.
    s_uniform : array-like, shape (n_uniform,)
        Outlier scores, by the same scoring function, of points drawn uniformly in a box of Lebesgue measure
        ``volume`` that contains the data (usually the data's bounding box, see :func:`uniform_in_box`).
    volume : float
        Lebesgue measure of that box (> 0).
    t_max : float, default 0.9
        Level defining the integration interval ``[0, EM⁻¹(t_max)]``.
    t : array-like, optional
        Ascending t grid starting at 0; default :func:`default_t_grid` (the authors' 10,000 points
        ``arange(0, 100/volume, 0.01/volume)``).
    integration : {"grid", "exact"}, default "grid"
        "grid": trapezoid rule on ``t`` up to and including the first grid point with ``EM ≤ t_max`` (the
        authors' ``amax``; comparable with the published values). "exact": exact integral of the
        piecewise-linear EM curve over ``[0, EM⁻¹(t_max)]``.
    uniform_weights : array-like of shape (n_uniform,), optional
        Importance weights of the points (:func:`nested_uniform_in_box`): ``Leb(s ≥ u) = volume ·
        Σ{weights of s_uniform ≥ u} / n_uniform``. None: every weight 1 (uniform points).
    warn : bool, default True
        Emit an :class:`EMMVWarning` when the criterion is NaN.

    Returns
    -------
    ExcessMassResult
        ``.criterion`` (larger = better; NaN with ``.reason`` when EM never falls to ``t_max`` — a level set
        of mass > t_max has estimated volume 0, or the grid ends first), ``.t``, ``.em``, ``.t_inverse``.

    References
    ----------
    Goix (2016), thesis chapter "How to Evaluate the Quality of Anomaly Detection Algorithms?", Eqs.
    (evaluation:EM-def-emp) and (evaluation:eq:standard_emp_EM).
    """
    a, b, volume, w = _check_inputs(s_data, s_uniform, volume, integration, uniform_weights)
    if not 0 < t_max < 1:
        raise ValueError(f"t_max must lie in (0, 1), got {t_max!r}")
    tg = default_t_grid(volume) if t is None else np.asarray(t, dtype=np.float64)
    if tg.ndim != 1 or tg.size < 2 or tg[0] != 0 or np.any(np.diff(tg) <= 0) or not np.all(np.isfinite(tg)):
        raise ValueError("t grid must be a finite, strictly increasing 1-d array starting at 0 with ≥ 2 points")
    lines = _EMLines(a, b, volume, w)
    em = lines(tg)
    t_inv = lines.inverse(t_max)
    reason = None
    crit = t_end = np.nan
    if not np.isfinite(t_inv):
        reason = (f"EM never falls to {t_max}: a level set holding more than {t_max:.0%} of the {a.size} "
                  f"objects contains none of the {b.size} uniform points (estimated volume 0); use more uniform "
                  "points or feature sub-sampling (fewer dimensions)")
    elif integration == "exact":
        t_end = t_inv
        crit = lines.integral(t_inv)
    else:
        below = np.flatnonzero(em <= t_max)
        if below.size == 0:
            reason = (f"EM stays above {t_max} on the whole t grid [0, {tg[-1]:.3g}] (EM⁻¹({t_max}) = "
                      f"{t_inv:.3g}); extend the grid or use integration='exact'")
        else:
            i = int(below[0])
            t_end = float(tg[i])
            crit = _trapezoid(em[: i + 1], tg[: i + 1])
    if reason is not None and warn:
        _warn(f"Excess-Mass criterion is NaN: {reason}")
    return ExcessMassResult(criterion=float(crit), t=tg, em=em, t_inverse=float(t_inv), t_end=float(t_end),
                            t_max=float(t_max), integration=integration, volume=volume, n_data=a.size,
                            n_uniform=b.size, reason=reason)


def mass_volume(s_data, s_uniform, volume: float, *, alpha_min: float = ALPHA_MIN, alpha_max: float = ALPHA_MAX,
                alpha: np.ndarray | None = None, integration: str = "grid", uniform_weights: np.ndarray | None = None,
                warn: bool = True) -> MassVolumeResult:
    """Empirical Mass-Volume curve and criterion ``∫ MV over [alpha_min, alpha_max]`` (Goix 2016).

    ``MV(α) = inf_u { Leb(s ≥ u) : P_n(s ≥ u) ≥ α }`` with ``s = −score`` (odeval scores are higher = more
    outlying; MV works on level sets of *normality*, so the scores are negated here). The infimum is attained
    at ``u`` = the k-th largest normality of the data, k the smallest integer with ``k/n ≥ α``; its volume is
    ``volume · #{s_uniform ≥ u} / n_uniform``.

    Parameters
    ----------
    s_data, s_uniform, volume
        As in :func:`excess_mass`.
    alpha_min, alpha_max : float, default 0.9, 0.999
        The interval ``I_MV``.
    alpha : array-like, optional
        α grid (ascending, inside (0, 1]); default :func:`default_alpha_grid` (``arange(alpha_min,
        alpha_max, 0.0001)``, the authors' 990 points). Used for the curve and, with "grid", the integral.
    integration : {"grid", "exact"}, default "grid"
        "grid": trapezoid rule on the α grid (the authors' code). "exact": exact integral of the step function
        over ``[alpha_min, alpha_max]``.
    uniform_weights : array-like of shape (n_uniform,), optional
        As in :func:`excess_mass`.
    warn : bool, default True
        Emit an :class:`EMMVWarning` when the criterion is NaN.

    Returns
    -------
    MassVolumeResult
        ``.criterion`` (smaller = better; NaN with ``.reason`` when a level set on the interval has estimated
        volume 0), ``.alpha``, ``.mv``.

    References
    ----------
    Goix (2016), thesis chapter "How to Evaluate the Quality of Anomaly Detection Algorithms?", Eqs.
    (evaluation:MV-def-emp) and (evaluation:eq:standard_emp_MV).
    """
    a, b, volume, w = _check_inputs(s_data, s_uniform, volume, integration, uniform_weights)
    if not 0 < alpha_min < alpha_max <= 1:
        raise ValueError(f"need 0 < alpha_min < alpha_max ≤ 1, got alpha_min={alpha_min!r}, alpha_max={alpha_max!r}")
    ag = default_alpha_grid(alpha_min, alpha_max) if alpha is None else np.asarray(alpha, dtype=np.float64)
    if ag.ndim != 1 or ag.size < 2 or np.any(np.diff(ag) <= 0) or ag[0] <= 0 or ag[-1] > 1:
        raise ValueError("alpha grid must be a strictly increasing 1-d array inside (0, 1] with ≥ 2 points")
    n, n_gen = a.size, b.size
    normal_desc = np.sort(-a)[::-1]  # normality, descending: normal_desc[k-1] = k-th largest
    if w is None:
        b_sorted = np.sort(-b)
        above = None
    else:  # importance weights: the level set's weight sum replaces its count in the volume
        order = np.argsort(-b, kind="stable")
        b_sorted = -b[order]
        above = np.r_[np.cumsum(w[order][::-1])[::-1], 0.0]
    mass = np.arange(1, n + 1) * (1.0 / n)  # the authors' mass = 1/n · cpt

    def vol_at_k(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # level set of the k largest normalities
        pos = np.searchsorted(b_sorted, normal_desc[k - 1], side="left")
        cnt = n_gen - pos
        return (cnt if above is None else above[pos]) / n_gen * volume, cnt

    k_grid = np.minimum(np.searchsorted(mass, ag, side="left") + 1, n)  # smallest k with k/n ≥ α
    mv, cnt = vol_at_k(k_grid)
    reason = None
    if integration == "exact":
        # MV is constant on ((k−1)/n, k/n]; integrate the steps that meet [alpha_min, alpha_max]
        k_lo = int(np.searchsorted(mass, alpha_min, side="left")) + 1
        k_hi = int(np.searchsorted(mass, alpha_max, side="left")) + 1
        ks = np.arange(k_lo, k_hi + 1)
        left = np.maximum((ks - 1) / n, alpha_min)
        right = np.minimum(ks / n, alpha_max)
        vk, ck = vol_at_k(np.minimum(ks, n))
        zero = ck == 0
        crit = float(np.sum(vk * np.clip(right - left, 0, None)))
    else:
        zero = cnt == 0
        crit = _trapezoid(mv, ag)
    if zero.any():
        reason = (f"a level set of mass in [{alpha_min}, {alpha_max}] contains none of the {n_gen} uniform points "
                  "(estimated volume 0); use more uniform points or feature sub-sampling (fewer dimensions)")
        crit = np.nan
        if warn:
            _warn(f"Mass-Volume criterion is NaN: {reason}")
    return MassVolumeResult(criterion=float(crit), alpha=ag, mv=mv, alpha_min=float(alpha_min),
                            alpha_max=float(alpha_max), integration=integration, volume=volume, n_data=n,
                            n_uniform=n_gen, reason=reason)
