"""EM / MV evaluation of a *detector* (an algorithm that can be refitted), with feature sub-sampling.

:func:`emmv` implements Algorithm "EMMV" of Goix (2016), §"Scaling with dimension": for ``d > max_dim``
(default 8, the chapter's "standard criteria when d ≤ 8"), m draws (default 50) of d' features (default 5;
without replacement inside a draw, with replacement between draws), the detector refitted on each sub-space,
the box volume and the uniform sample in d' dimensions (the box and grids of :attr:`EMMVSettings.box`: by default
the authors' code per setting), EM and MV criteria computed per draw
(:func:`~odeval.labelfree.excess_mass_volume.excess_mass`, ``mass_volume``) and averaged. With the default
``sampling="auto"`` a draw whose criterion the uniform points cannot estimate is redone for that criterion
(exact EM integration where the t grid is the cause, then nested importance-weighted points; :func:`_criteria`),
each draw's method recorded (``em_methods``, ``mv_methods``). Draws whose criterion still cannot be estimated
(a level set with estimated volume 0, see those functions) are NaN, counted in the result (``em_failed``,
``mv_failed``) with their reasons and left out of the average — never silently.

Detectors. Anything with ``fit(X)`` and ``score(X)`` returning higher = more outlying scores for *new* points
(the uniform sample is always new): odeval's scikit-learn / PyOD adapters
(:func:`odeval.detectors.adapters.wrap_estimator`: IsolationForest, OneClassSVM, LocalOutlierFactor with
``novelty=True``, ...), a bare scikit-learn / PyOD estimator (wrapped here), or an odeval method with a
novelty form (:func:`odeval.detectors.novelty_methods`: kNN, kNNW, LOF, SimplifiedLOF, LoOP, LDOF) through
:class:`KNNQueryDetector`, which is :class:`odeval.detectors.novelty.NoveltyDetector` (new points scored
against the fitted data) plus in-sample scores of the fitted objects (kNN graph, self excluded). The other
odeval methods (ODIN, FastABOD, ...) define scores only for members of the data set and raise here.

Settings. Novelty: ``emmv(det, X_train_normal, X_test_normal)`` (the chapter evaluates EM/MV on normal test
data only). Unsupervised: ``emmv(det, X_polluted_train, X_polluted_test)`` (the chapter's split), or
``emmv(det, X)`` to fit and evaluate on the same data. The chapter's train/test protocol (outlier cap, feature
removal, split, EM/MV next to ROC / PR) is :mod:`odeval.protocols.emmv_chapter`.

References
----------
Goix, N. (2016). PhD thesis, chapter "How to Evaluate the Quality of Anomaly Detection Algorithms?",
Algorithm evaluation:algo:EMMV and Remark "default parameters" (m = 50, d' = 5).
"""

from __future__ import annotations

import copy
import functools
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from odeval._validation import check_data_matrix
from odeval.detectors.novelty import NoveltyDetector
from odeval.executor import check_workers, open_executor, workers_renamed_from
from odeval.labelfree.excess_mass_volume import (
    ALPHA_MAX,
    ALPHA_MIN,
    ALPHA_STEP,
    ALPHA_STEP_SUBSAMPLED,
    N_GENERATED,
    T_MAX,
    T_STEP,
    T_STEP_SUBSAMPLED,
    EMMVWarning,
    ExcessMassResult,
    MassVolumeResult,
    bounding_box,
    default_alpha_grid,
    default_t_grid,
    excess_mass,
    mass_volume,
    nested_uniform_in_box,
    uniform_in_box,
)
from odeval.measures._ranking import finite_for_ranking

__all__ = ["EMMVResult", "EMMVSettings", "KNNQueryDetector", "emmv", "emmv_all_k", "emmv_many", "make_detector",
           "SKLEARN_DETECTORS"]

SKLEARN_DETECTORS = ("iforest", "ocsvm", "lof")
MAX_DIM = 8
#: The bounding boxes of :attr:`EMMVSettings.box`: "author" (the authors' code, per setting) and "train_test"
#: (odeval's box before issue 26: the fitted ∪ evaluated objects, the t / α grids of the standard criteria).
BOXES = ("author", "train_test")
#: How :attr:`EMMVSettings.sampling` places the points that estimate the level sets' volumes ("auto": uniform,
#: redone per draw and criterion where that draw's criterion is not estimable, see :func:`_criteria`).
SAMPLINGS = ("auto", "uniform", "nested")
UNIFORM_CHUNK = 20_000  # emmv_all_k: uniform points queried and scored per block (bounds the query's memory)
#: emmv_many queries the uniform points through leaf boxes of the fitted objects (:mod:`odeval.neighbors._leaf_query`,
#: exact, see _query_uniform) from this many fitted objects on; below it (and for metrics without a numba kernel)
#: :func:`odeval.neighbors.query_knn`'s brute force, which gives the same rows.
LEAF_QUERY_MIN_N = 1


def _query_uniform(graph: Any, U: np.ndarray, k_max: int) -> Any:
    """:func:`odeval.neighbors.query_knn` of ``U`` against ``graph``, values bit-identical, at a fraction of the
    cost: :func:`odeval.neighbors._leaf_query.query_knn_leaves` (leaf boxes of the fitted objects, the queries in
    k-d order, each query bounded by its predecessor's k_max nearest objects; exact by construction, see that
    module). Brute force costs O(M · N) keys plus a heap selection per row; the leaf query visits the leaves near
    each uniform point only, which is what makes 10^5 uniform points per feature draw affordable for every N
    (issue 26: 3–9× less CPU per query than brute force or the former k-d tree proposal).
    """
    from odeval.neighbors import query_knn
    from odeval.neighbors._leaf_query import query_knn_leaves
    from odeval.neighbors.graph import _NUMBA_METRICS
    from odeval.neighbors.query import QueryKNN

    X = graph.X
    code = _NUMBA_METRICS.get(graph.metric_spec.name)
    if code is None or X.shape[0] < max(LEAF_QUERY_MIN_N, 1):
        return query_knn(graph, U, k_max)
    U = np.ascontiguousarray(U, dtype=np.float64)
    keys, idx = query_knn_leaves(np.ascontiguousarray(X, dtype=np.float64), U, k_max, code)
    return QueryKNN(distances=graph.metric_spec.key_to_distance(keys), indices=idx, keys=keys, k_max=k_max, Q=U,
                    reference=graph)


def _query_uniform_bands(graph: Any, U: np.ndarray, k_max: int) -> list[tuple[np.ndarray, Any]]:
    """:func:`_query_uniform` in bands of rows: ``[(rows, QueryKNN of U[rows]), ...]``, every row of ``U`` in one
    band, each band as wide as its own rows need (:func:`odeval.neighbors._leaf_query.query_knn_leaves_bands`).
    Novelty scores are per query row, so scoring band by band gives the scores of the whole query bit for bit;
    in a draw of a few distinct points (5 mostly binary attributes) a few rows hold thousands of tied neighbours
    and would otherwise pad every row of the block to their width."""
    from odeval.neighbors import query_knn
    from odeval.neighbors._leaf_query import query_knn_leaves_bands
    from odeval.neighbors.graph import _NUMBA_METRICS
    from odeval.neighbors.query import QueryKNN

    X = graph.X
    code = _NUMBA_METRICS.get(graph.metric_spec.name)
    if code is None or X.shape[0] < max(LEAF_QUERY_MIN_N, 1):
        return [(np.arange(U.shape[0]), query_knn(graph, U, k_max))]
    U = np.ascontiguousarray(U, dtype=np.float64)
    out = []
    for rows, keys, idx in query_knn_leaves_bands(np.ascontiguousarray(X, dtype=np.float64), U, k_max, code):
        out.append((rows, QueryKNN(distances=graph.metric_spec.key_to_distance(keys), indices=idx, keys=keys,
                                   k_max=k_max, Q=U[rows], reference=graph)))
    return out


def _draw_graph(X: np.ndarray, k_max: int) -> Any:
    """``knn_graph(X, k_max)`` (Euclidean, exact) of one feature draw, bit for bit, through the leaf search of
    :func:`odeval.neighbors._leaf_query.knn_graph_leaves` (2–3× less CPU than the brute force ``knn_graph``
    picks for N < 10^5 in 5 dimensions; issue 26). Small N, and coordinates large enough for ``knn_graph`` to
    refuse (squares overflow), go through ``knn_graph`` itself."""
    from odeval.neighbors import knn_graph
    from odeval.neighbors._leaf_query import knn_graph_leaves
    from odeval.neighbors._metrics import resolve_metric
    from odeval.neighbors.graph import _MAX_ABS_VALUE, _NUMBA_METRICS, _assemble

    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.shape[0] < max(LEAF_QUERY_MIN_N, 2) or float(np.abs(X).max()) > _MAX_ABS_VALUE:
        return knn_graph(X, k_max)
    spec = resolve_metric("euclidean").fit_to(X)
    keys, idx = knn_graph_leaves(X, k_max, _NUMBA_METRICS["euclidean"])
    g = _assemble(X, k_max, spec, [(np.arange(X.shape[0]), keys, idx, (idx >= 0).sum(axis=1))], "exact")
    g.search, g.search_reason = "tree", "exact leaf-box search of an EM/MV feature draw"
    return g


@dataclass(frozen=True)
class EMMVSettings:
    """The settings of Algorithm EMMV (Goix 2016), declared once: :func:`emmv`, :func:`emmv_all_k`,
    :func:`emmv_many`, the ``odeval emmv`` / ``select-audit`` options, a study's ``[internal_options]`` and the
    ``em`` / ``mv`` selectors take their defaults from here.

    Attributes
    ----------
    draws : int, default 50
        m, the number of feature draws when ``d > max_dim`` (the chapter's Remark "default parameters").
    features : int, default 5
        d', the attributes of each draw.
    max_dim : int, default 8
        The largest dimension evaluated with the standard criteria (all features, one evaluation).
    n_generated : int, default 100,000
        Uniform points per evaluation (:data:`~odeval.labelfree.excess_mass_volume.N_GENERATED`).
    box : {"author", "train_test"}, default "author"
        The bounding box of the uniform sample, and the grids, as the authors' code (EMMV_benchmarks) has them
        in each setting. Standard criteria (``d ≤ max_dim``; ``em_bench.py``): the box of *all* the data,
        anomalies included (``data_bounds`` of :func:`emmv`, which :mod:`odeval.protocols.emmv_chapter` passes;
        without it the fitted ∪ evaluated objects), ``t = arange(0, 100/V, 0.01/V)``,
        ``α = arange(0.9, 0.999, 0.0001)``. Feature sub-sampling (``em_bench_high.py``): the box of each
        draw's *evaluated* objects ``X_test[:, features]``, ``t = arange(0, 100/V, 0.001/V)``,
        ``α = arange(0.9, 0.999, 0.001)``, and draws only among the attributes that vary on the evaluated
        objects (the authors redraw a draw of box volume 0, which gives the same distribution).
        "train_test": odeval's box before issue 26 — the fitted ∪ evaluated objects in every setting, the
        standard grids everywhere, a constant attribute an error.
    sampling : {"auto", "uniform", "nested"}, default "auto"
        "uniform": ``n_generated`` points uniform in the box (the chapter and the authors' code). "nested":
        the same number of points split between the box and nested quantile boxes of the evaluated objects,
        importance-weighted (:func:`~odeval.labelfree.excess_mass_volume.nested_uniform_in_box`): unbiased
        volumes that stay estimable when a few extreme values stretch the box far beyond where the mass lies
        (zero-inflated, skewed attributes; docs/emmv.md "Estimates that do not exist"). "auto": every draw as
        the authors' code does it (uniform points, the given ``integration``); only a criterion that this
        draw cannot estimate is redone — EM with exact integration where the t grid ends before
        ``EM⁻¹(0.9)`` (the grid is the cause), then EM or MV with the nested points of "nested" where a level
        set holds no uniform point — and each draw's method is recorded (:attr:`EMMVResult.em_methods`,
        ``mv_methods``). Draws estimable with uniform points are bit for bit those of "uniform".

    Raises
    ------
    ValueError
        A value that is not an integer ≥ 1 (``max_dim``: ≥ 0) or an unknown ``box``, one line naming it.
    """

    draws: int = 50
    features: int = 5
    max_dim: int = MAX_DIM
    n_generated: int = N_GENERATED
    box: str = "author"
    sampling: str = "auto"

    def __post_init__(self) -> None:
        _check_count(self.draws, "draws (m)")
        _check_count(self.features, "features (d')")
        _check_count(self.max_dim, "max_dim", 0)
        _check_count(self.n_generated, "n_generated")
        _check_box(self.box)
        _check_sampling(self.sampling)

    def kwargs(self) -> dict[str, Any]:
        """The settings as keyword arguments of :func:`emmv` / :func:`emmv_all_k` / :func:`emmv_many`."""
        return {"draws": self.draws, "features": self.features, "max_dim": self.max_dim,
                "n_generated": self.n_generated, "box": self.box, "sampling": self.sampling}


class KNNQueryDetector(NoveltyDetector):
    """An odeval method with a novelty form, plus in-sample scores of the fitted objects.

    :class:`odeval.detectors.novelty.NoveltyDetector` scores new points against the fitted data (the query's
    k nearest fitted objects; ``odeval.neighbors.query_knn``). :meth:`score_fitted` adds the usual scores of the
    fitted objects themselves from the training graph (k excludes the object itself), which the same-data
    setting of :func:`emmv` uses. Supported: :func:`odeval.detectors.novelty_methods` (kNN, kNNW, LOF,
    SimplifiedLOF, LoOP, LDOF).
    """

    def __init__(self, method: str, k: int, **params: Any) -> None:
        try:
            super().__init__(method, k, **params)
        except ValueError as exc:
            raise ValueError(f"odeval method {method!r} cannot score points outside the fitted data (needed for "
                             f"the uniform sample of EM/MV): {exc}") from None
        self.name = f"{self.info.name}(k={self.k})"

    def score_fitted(self) -> np.ndarray:
        """Scores of the fitted objects themselves (training graph, self excluded)."""
        if not hasattr(self, "graph_"):
            raise RuntimeError(f"{self.name}: call fit(X_train) before score_fitted()")
        return self.detector.score_all_k(self.graph_, [self.k])[0]


def make_detector(name: str, *, k: int = 20, seed: int = 0) -> Any:
    """A detector for :func:`emmv` by name, with the chapter's settings.

    * ``"iforest"``: ``IsolationForest()`` (100 trees, 256 samples; unchanged since 2016), ``random_state=seed``.
    * ``"ocsvm"``: ``OneClassSVM(gamma="auto")`` (RBF, nu = 0.5): ``gamma = 1/d``, scikit-learn's default in
      2016; today's default ``"scale"`` is ``1/(d·Var(X))``.
    * ``"lof"`` (lower case) or ``"lof-novelty"``: scikit-learn's ``LocalOutlierFactor(n_neighbors=k,
      novelty=True)`` (the chapter: k = 20). ``"LOF"`` is odeval's LOF (novelty form).
    * an odeval method with a novelty form (kNN, kNNW, LOF, SimplifiedLOF, LoOP, LDOF):
      :class:`KNNQueryDetector`.
    """
    from odeval.detectors.adapters import wrap_estimator

    key = name.lower()
    if key == "iforest":
        from sklearn.ensemble import IsolationForest

        return wrap_estimator(IsolationForest(), seed=seed, name="iForest")
    if key == "ocsvm":
        from sklearn.svm import OneClassSVM

        return wrap_estimator(OneClassSVM(gamma="auto"), name="OCSVM")
    if name == "lof" or key == "lof-novelty":  # lower-case "lof": scikit-learn's; "LOF": odeval's (below)
        from sklearn.neighbors import LocalOutlierFactor

        return wrap_estimator(LocalOutlierFactor(n_neighbors=k, novelty=True), name=f"LOF(k={k})")
    from odeval.detectors import available_methods, novelty_methods

    if key in {m.lower() for m in available_methods()}:
        return KNNQueryDetector(name, k)
    raise ValueError(f"unknown detector {name!r}; choose one of {', '.join(SKLEARN_DETECTORS)} or an odeval "
                     f"method with a novelty form ({', '.join(novelty_methods())})")


def _as_detector(detector: Any, seed: int) -> Any:
    if isinstance(detector, str):
        return make_detector(detector, seed=seed)
    if hasattr(detector, "fit") and hasattr(detector, "score") and not hasattr(detector, "get_params"):
        return detector  # odeval adapter / KNNQueryDetector / duck-typed
    if hasattr(detector, "fit") and (hasattr(detector, "score_samples") or hasattr(detector, "decision_function")):
        from odeval.detectors.adapters import wrap_estimator

        has_rs = hasattr(detector, "get_params") and "random_state" in detector.get_params(deep=False)
        return wrap_estimator(detector, seed=seed if has_rs else None)
    from odeval.detectors.base import Detector

    if isinstance(detector, Detector):
        from odeval.detectors import novelty_methods

        raise ValueError(f"{detector!r} alone cannot be refitted and score new points as EM/MV needs; pass its name "
                         f"(odeval methods with a novelty form: {', '.join(novelty_methods())}) or a "
                         "KNNQueryDetector / NoveltyDetector")
    if type(detector).__name__ == "LocalOutlierFactor" and hasattr(detector, "fit"):
        raise ValueError("LocalOutlierFactor(novelty=False) cannot score new points (the uniform sample of EM/MV); "
                         "use LocalOutlierFactor(novelty=True) or the name 'lof'")
    raise ValueError(f"detector {detector!r} cannot be refitted: it needs fit(X) and score(X) (or score_samples / "
                     "decision_function)")


@dataclass(frozen=True)
class EMMVResult:
    """EM and MV criteria of a detector on a data set (averaged over feature draws when sub-sampling).

    Attributes
    ----------
    em, mv : float
        Mean of the per-draw criteria over the draws where they could be estimated (NaN if none).
        EM: larger = better; MV: smaller = better.
    em_draws, mv_draws : ndarray of shape (m,)
        Per-draw criteria (NaN where not estimable).
    features : list of ndarray
        The feature indices of each draw (all features when not sub-sampling).
    em_failed, mv_failed : int
        Draws where EM / MV could not be estimated (zero estimated volume, EM never falling to 0.9).
    reasons : list of str
        The distinct reasons of those failures.
    subsampled : bool
        True when feature sub-sampling was used (``d > max_dim``).
    em_curve, mv_curve : ExcessMassResult, MassVolumeResult or None
        The curves when there is a single draw (no sub-sampling).
    cpu_seconds : dict of str to float
        CPU time (``time.process_time`` of the process that ran the draw) summed over the draws, per part:
        ``"fit"`` (refitting the detector), ``"score_data"`` (scoring the evaluated objects), ``"uniform"``
        (drawing the uniform sample), ``"score_uniform"`` (scoring it), ``"criteria"`` (EM and MV). Exact with
        ``workers=1`` and with process workers; it leaves out worker start-up and the parent's bookkeeping.
    box : str
        :attr:`EMMVSettings.box` of the evaluation.
    sampling : str
        :attr:`EMMVSettings.sampling` of the evaluation.
    em_methods, mv_methods : tuple of str
        How each draw's EM / MV was estimated, ``"<points>/<integration>"``: ``"uniform/grid"`` (the authors'
        code), ``"uniform/exact"``, ``"nested/grid"``, ``"nested/exact"``; for a draw without an estimate the
        last method tried; ``""`` for a draw whose box has volume 0. With ``sampling="auto"`` a method other
        than the first one (``"uniform/<integration>"``) marks a draw redone because that criterion was not
        estimable (:func:`_criteria`).
    """

    em: float
    mv: float
    em_draws: np.ndarray
    mv_draws: np.ndarray
    features: list[np.ndarray]
    em_failed: int
    mv_failed: int
    reasons: list[str]
    subsampled: bool
    n_train: int
    n_test: int
    n_generated: int
    seed: int
    detector: str
    em_curve: ExcessMassResult | None = field(default=None, repr=False)
    mv_curve: MassVolumeResult | None = field(default=None, repr=False)
    cpu_seconds: dict[str, float] = field(default_factory=dict, repr=False)
    box: str = "author"
    sampling: str = "uniform"
    em_methods: tuple[str, ...] = ()
    mv_methods: tuple[str, ...] = ()

    @property
    def draws(self) -> int:
        return len(self.features)

    def method_counts(self) -> dict[str, dict[str, int]]:
        """``{"em": {method: draws}, "mv": {...}}``: how many draws each estimation method gave (see
        :attr:`em_methods`), methods in the order of their first draw; draws without an estimate not counted."""
        out: dict[str, dict[str, int]] = {}
        for crit, methods, values in (("em", self.em_methods, self.em_draws), ("mv", self.mv_methods, self.mv_draws)):
            counts: dict[str, int] = {}
            for how, v in zip(methods, values, strict=False):
                if how and np.isfinite(v):
                    counts[how] = counts.get(how, 0) + 1
            out[crit] = counts
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (NaN as None)."""
        def f(x: float) -> float | None:
            return None if not np.isfinite(x) else float(x)

        return {"detector": self.detector, "em": f(self.em), "mv": f(self.mv), "draws": self.draws,
                "subsampled": self.subsampled, "features_per_draw": int(self.features[0].size),
                "em_failed": self.em_failed, "mv_failed": self.mv_failed, "reasons": self.reasons,
                "n_train": self.n_train, "n_test": self.n_test, "n_generated": self.n_generated, "seed": self.seed,
                "box": self.box, "sampling": self.sampling, "method_counts": self.method_counts(),
                "em_draws": [f(x) for x in self.em_draws], "mv_draws": [f(x) for x in self.mv_draws],
                "em_methods": list(self.em_methods), "mv_methods": list(self.mv_methods),
                "features": [x.tolist() for x in self.features]}


def _check_box(box: Any) -> str:
    if box not in BOXES:
        raise ValueError(f"box must be one of {', '.join(map(repr, BOXES))}, got {box!r}")
    return str(box)


def _check_sampling(sampling: Any) -> str:
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {', '.join(map(repr, SAMPLINGS))}, got {sampling!r}")
    return str(sampling)


def _check_count(value: Any, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def _check_settings(seed: Any, draws: Any, features: Any, max_dim: Any, n_generated: Any
                    ) -> tuple[int, int, int, int, int]:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    return (int(seed), _check_count(draws, "draws (m)"), _check_count(features, "features (d')"),
            _check_count(max_dim, "max_dim", 0), _check_count(n_generated, "n_generated"))


@dataclass(frozen=True)
class _BoxPlan:
    """Where the uniform points of each draw lie and which grids integrate the criteria (:attr:`EMMVSettings.box`).

    ``lo`` / ``hi``: one box for every draw (restricted to the draw's features), or None when each draw takes
    the box of its evaluated objects (``X_eval[:, features]``). ``eligible``: the attributes draws pick from.
    """

    lo: np.ndarray | None
    hi: np.ndarray | None
    subsampled: bool
    eligible: np.ndarray
    t_step: float
    alpha_step: float
    sampling: str = "uniform"

    def points(self, lo: np.ndarray, hi: np.ndarray, X_eval_f: np.ndarray, n: int, seed: int
               ) -> tuple[np.ndarray, np.ndarray | None]:
        """The draw's volume points and their importance weights (None: uniform, every weight 1)."""
        if self.sampling == "nested":
            return nested_uniform_in_box(lo, hi, X_eval_f, n, seed)
        return uniform_in_box(lo, hi, n, seed), None

    @property
    def points_name(self) -> str:
        """The points of a draw's first estimate: "nested" or "uniform" (also for "auto")."""
        return "nested" if self.sampling == "nested" else "uniform"

    def draw_box(self, X_eval: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """``(lower, upper, volume)`` of draw ``f``'s box."""
        if self.lo is None:
            lo, hi, _ = bounding_box(X_eval[:, f])
        else:
            lo, hi = self.lo[f], self.hi[f]
        return lo, hi, float(np.prod(hi - lo))


def _box(X_box: np.ndarray, X_eval: np.ndarray, features: int, max_dim: int, box: str,
         data_bounds: Any = None, sampling: str = "uniform") -> _BoxPlan:
    """The box plan of :attr:`EMMVSettings.box` and whether to sub-sample features (d > max_dim).

    ``X_box``: the fitted ∪ evaluated objects; ``data_bounds``: ``(lower, upper)`` of all the data ("author",
    standard criteria). A constant attribute of a box that every draw uses is an error; with per-draw boxes
    ("author", sub-sampling) the attributes constant on the evaluated objects are left out of the draws.
    """
    d = X_eval.shape[1]
    subsampled = d > max_dim
    if subsampled and features > d:
        raise ValueError(f"features (d'={features}) exceeds the number of attributes (d={d})")
    if box == "author" and subsampled:
        width = X_eval.max(axis=0) - X_eval.min(axis=0)
        eligible = np.flatnonzero(width > 0)
        if eligible.size < features:
            raise ValueError(f"only {eligible.size} of {d} attributes vary on the evaluated objects, fewer than "
                             f"features (d'={features}): no feature draw has a box of positive volume")
        return _BoxPlan(None, None, True, eligible, T_STEP_SUBSAMPLED, ALPHA_STEP_SUBSAMPLED, sampling)
    if box == "author" and data_bounds is not None:
        lo, hi = (np.asarray(b, dtype=np.float64).reshape(-1) for b in data_bounds)
        if lo.shape != (d,) or hi.shape != (d,) or not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError(f"data_bounds must be two finite arrays of {d} values (lower, upper)")
        lo_x, hi_x, _ = bounding_box(X_box)
        if np.any(lo > lo_x) or np.any(hi < hi_x):
            raise ValueError("data_bounds must contain the fitted and evaluated objects (the box of all the data)")
    else:
        lo, hi, _ = bounding_box(X_box)
    const = np.flatnonzero(hi - lo <= 0)
    if const.size:
        raise ValueError(f"attribute(s) {const[:5].tolist()} are constant (zero-width bounding box, volume 0); "
                         "remove them before EM/MV")
    return _BoxPlan(lo, hi, subsampled, np.arange(d), T_STEP, ALPHA_STEP, sampling)


@workers_renamed_from("n_jobs")
def emmv(detector: Any, X_train: Any, X_test: Any = None, *, draws: int = EMMVSettings.draws,
         features: int = EMMVSettings.features, max_dim: int = EMMVSettings.max_dim,
         n_generated: int = EMMVSettings.n_generated, box: str = EMMVSettings.box,
         sampling: str = EMMVSettings.sampling, seed: int = 0, t_max: float = T_MAX, alpha_min: float = ALPHA_MIN,
         alpha_max: float = ALPHA_MAX, integration: str = "grid", data_bounds: Any = None, workers: int = 1,
         progress: Callable[[int, int], None] | None = None, executor: Any = None) -> EMMVResult:
    """EM and MV criteria of a detector, with the chapter's feature sub-sampling (Goix 2016, Algorithm EMMV).

    Parameters
    ----------
    detector : object or str
        ``fit(X)`` + ``score(X)`` (higher = more outlying for new points), a scikit-learn / PyOD estimator, or a
        name for :func:`make_detector` (``"iforest"``, ``"ocsvm"``, ``"lof"``, ``"kNN"``, ``"kNNW"``). It is
        refitted on every feature draw.
    X_train : array-like, shape (n_train, d)
        Data the detector is fitted on (novelty: normal data only; unsupervised: the polluted data).
    X_test : array-like, shape (n_test, d), optional
        Objects whose scores define ``P_n``. None: evaluate on ``X_train`` itself (fit and evaluate on the
        same data; odeval kNN methods then score the fitted objects with self excluded).
    draws, features : int, default 50, 5
        m and d' of the chapter's Algorithm EMMV; used only when ``d > max_dim``.
    max_dim : int, default 8
        Largest dimension evaluated with the standard criteria (all features, one evaluation).
    n_generated : int, default 100,000
        Uniform points per evaluation, in the bounding box that ``box`` names.
    box : {"author", "train_test"}, default "author"
        :attr:`EMMVSettings.box`: "author" — the authors' code in each setting: standard criteria, the box of
        ``data_bounds`` (all the data, anomalies included) or else of ``X_train ∪ X_test``; sub-sampling, the
        box of each draw's ``X_test[:, features]`` with the finer grids of ``em_bench_high.py``, attributes
        constant on ``X_test`` never drawn. "train_test": ``X_train ∪ X_test`` restricted to the drawn features,
        the standard grids (odeval before issue 26).
    sampling : {"auto", "uniform", "nested"}, default "auto"
        :attr:`EMMVSettings.sampling`: the points estimating the level sets' volumes, uniform in the box,
        importance-weighted over nested quantile boxes of ``X_test``, or ("auto") uniform with a per-draw
        fallback (exact EM integration, then nested points) only where a draw's criterion is not estimable;
        each draw's method is in :attr:`EMMVResult.em_methods` / ``mv_methods``.
    seed : int, default 0
        Seeds the feature draws, the uniform samples and (where it has a ``random_state``) the detector.
    t_max, alpha_min, alpha_max, integration
        See :func:`~odeval.labelfree.excess_mass_volume.excess_mass` and ``mass_volume``.
    data_bounds : (array-like, array-like), optional
        Lower and upper bounds of all the data, for ``box="author"`` with the standard criteria (the authors'
        ``em_bench.py`` boxes every object, anomalies included, which ``X_train`` / ``X_test`` need not hold).
        Ignored otherwise.
    workers : int, default 1
        Draws evaluated in parallel, by local worker processes unless ``executor`` says otherwise (-1: one per
        core; formerly ``n_jobs``, deprecated). The result is bit-identical whatever ``workers`` and
        ``executor`` (every draw has its own seeds and runs the same sequential code; tested). The detector
        itself scores sequentially: scikit-learn's threaded ``IsolationForest.score_samples`` (a joblib
        threading context) adds the trees' depths in thread order, so its scores vary in the last bit.
    progress : callable(done, total), optional
        Called after each draw, in draw order (the CLI's progress bar).
    executor : optional
        Where the draws run (:func:`odeval.executor.get_executor`): default local processes when ``workers`` > 1
        and there is more than one draw, else this thread; "threads", a Dask address or ``Client``, or an
        :class:`odeval.executor.Executor` kept open for several calls.

    Returns
    -------
    EMMVResult
    """
    seed, draws, features, max_dim, n_generated = _check_settings(seed, draws, features, max_dim, n_generated)
    box, sampling = _check_box(box), _check_sampling(sampling)
    workers = check_workers(workers)
    Xtr = check_data_matrix(X_train, name="X_train")
    if X_test is None:
        Xte, same = Xtr, True
    else:
        arr = np.asarray(X_test)
        if arr.ndim == 2 and arr.shape[0] == 0:
            raise ValueError("X_test is empty (an empty test split): nothing to evaluate")
        Xte, same = check_data_matrix(X_test, name="X_test", min_rows=1), False
        if Xte.shape[1] != Xtr.shape[1]:
            raise ValueError(f"X_test has {Xte.shape[1]} attributes, X_train {Xtr.shape[1]}")
    d = Xtr.shape[1]
    both = Xtr if same else np.vstack([Xtr, Xte])
    plan = _box(both, Xte, features, max_dim, box, data_bounds, sampling)
    subsampled = plan.subsampled
    det = _as_detector(detector, seed)
    name = getattr(det, "name", type(det).__name__)
    m = draws if subsampled else 1
    feats, draw_seeds = _draw_plan(d, m, features, subsampled, seed, plan.eligible)
    job = dict(det=det, Xtr=Xtr, Xte=Xte, same=same, plan=plan, n_generated=n_generated, t_max=t_max,
               alpha_min=alpha_min, alpha_max=alpha_max, integration=integration, name=name, subsampled=subsampled)
    if executor is None:
        executor = "processes" if workers > 1 and m > 1 else "serial"
    outcomes = []
    with open_executor(executor, workers) as ex:
        for out in ex.imap(functools.partial(_draw_task, job=job), [(i, feats[i], draw_seeds[i]) for i in range(m)]):
            outcomes.append(out)  # in draw order
            if progress is not None:
                progress(len(outcomes), m)
    # stacklevel 4: the warning names emmv's caller (frames: _aggregate, emmv, the workers_renamed_from wrapper)
    return _aggregate(outcomes, feats, subsampled=subsampled, name=name, n_train=Xtr.shape[0], n_test=Xte.shape[0],
                      n_generated=n_generated, seed=seed, stacklevel=4, box=box, sampling=sampling)


def _draw_plan(d: int, m: int, features: int, subsampled: bool, seed: int, eligible: np.ndarray | None = None
               ) -> tuple[list[np.ndarray], list[int]]:
    """Feature indices and uniform-sample seed of each of the ``m`` draws (one SeedSequence per call).

    ``eligible``: the attributes draws pick from (default all ``d``; with all of them the draws are those of
    ``choice(d)``, bit for bit). A uniform draw of d' among the eligible attributes is what the authors'
    ``em_bench_high.py`` gets by redrawing every draw whose box has volume 0.
    """
    ss = np.random.SeedSequence(seed)
    feat_rng = np.random.default_rng(ss.spawn(1)[0])
    draw_seeds = [int(s.generate_state(1)[0]) for s in ss.spawn(m)]
    pool = np.arange(d) if eligible is None else np.asarray(eligible, dtype=np.int64)
    feats = [np.sort(pool[feat_rng.choice(pool.size, size=features, replace=False)]) if subsampled
             else np.arange(d) for _ in range(m)]
    return feats, draw_seeds


def _aggregate(outcomes, feats, *, subsampled, name, n_train, n_test, n_generated, seed, stacklevel=2,
               warn=True, box="author", sampling="uniform") -> EMMVResult:
    """Average the per-draw (em, mv, reason, cpu, (em_method, mv_method)) outcomes into an :class:`EMMVResult`
    (NaN draws counted, warned)."""
    m = len(outcomes)
    em_draws = np.full(m, np.nan)
    mv_draws = np.full(m, np.nan)
    reasons: list[str] = []
    em_curve = mv_curve = None
    cpu: dict[str, float] = {}
    em_methods = tuple(out[4][0] for out in outcomes)
    mv_methods = tuple(out[4][1] for out in outcomes)
    for i, (em, mv, reason, parts, _how) in enumerate(outcomes):
        for key, sec in parts.items():
            cpu[key] = cpu.get(key, 0.0) + sec
        for r in (reason, None if em is None else em.reason, None if mv is None else mv.reason):
            if r is not None and r not in reasons:
                reasons.append(r)
        if em is None:
            continue
        em_draws[i], mv_draws[i] = em.criterion, mv.criterion
        if not subsampled:
            em_curve, mv_curve = em, mv
    em_failed = int(np.isnan(em_draws).sum())
    mv_failed = int(np.isnan(mv_draws).sum())
    em_mean = float(np.mean(em_draws[~np.isnan(em_draws)])) if em_failed < m else np.nan
    mv_mean = float(np.mean(mv_draws[~np.isnan(mv_draws)])) if mv_failed < m else np.nan
    if warn and (em_failed or mv_failed):
        warnings.warn(f"EM/MV of {name}: {em_failed} of {m} draw(s) without an EM estimate, {mv_failed} without an "
                      f"MV estimate (left out of the mean): {'; '.join(reasons)}", EMMVWarning, stacklevel=stacklevel)
    return EMMVResult(em=em_mean, mv=mv_mean, em_draws=em_draws, mv_draws=mv_draws, features=feats,
                      em_failed=em_failed, mv_failed=mv_failed, reasons=reasons, subsampled=subsampled,
                      n_train=n_train, n_test=n_test, n_generated=n_generated, seed=seed, detector=name,
                      em_curve=em_curve, mv_curve=mv_curve, cpu_seconds=cpu, box=box, sampling=sampling,
                      em_methods=em_methods, mv_methods=mv_methods)


def _draw_task(task: tuple[int, np.ndarray, int], job: dict[str, Any]) -> tuple:
    """One draw ``(i, features, uniform seed)`` as a task of :mod:`odeval.executor` (module level: pickled to
    worker processes)."""
    i, f, useed = task
    return _one_draw(i, f, useed, **job)


def _one_draw(i, f, useed, *, det, Xtr, Xte, same, plan, n_generated, t_max, alpha_min, alpha_max, integration,
              name, subsampled):
    """Refit on features ``f``, score the evaluated objects and a seeded uniform sample, EM and MV criteria.

    Returns ``(em, mv, reason, cpu)`` with ``cpu`` the process CPU seconds of each part of the draw.
    """
    from joblib import parallel_config

    lo, hi, vol = plan.draw_box(Xte, f)
    if not vol > 0 or not np.isfinite(vol):  # underflow/overflow of the product
        return None, None, f"box volume {vol!r} in the drawn sub-space is not a positive finite number", {}, ("", "")
    cpu: dict[str, float] = {}
    clock = time.process_time()

    def lap(part: str) -> None:
        nonlocal clock
        now = time.process_time()
        cpu[part] = now - clock
        clock = now

    det = copy.deepcopy(det)  # every draw refits its own copy (thread-safe; the caller's object is untouched)
    where = f" on features {f.tolist()} (draw {i + 1})" if subsampled else ""
    # n_jobs=1: scikit-learn's IsolationForest.score_samples follows the caller's joblib context, and threaded it
    # adds the trees' depths in thread order (last-bit differences). Inside a draw everything runs sequentially.
    with parallel_config(n_jobs=1):
        try:
            det.fit(Xtr[:, f])
            lap("fit")
            s_data = det.score_fitted() if same and hasattr(det, "score_fitted") else det.score(Xte[:, f])
            lap("score_data")
            U, weights = plan.points(lo, hi, Xte[:, f], n_generated, useed)
            lap("uniform")
            s_unif = det.score(U)
            lap("score_uniform")
        except (ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"detector {name} could not be refitted/scored{where}: {exc}") from exc
    del U
    _check_draw_scores(s_data, Xte.shape[0], f"detector {name}: scores of the evaluated objects{where}")
    _check_draw_scores(s_unif, n_generated, f"detector {name}: scores of the uniform sample{where}")
    s_raw = s_data

    def nested() -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # sampling="auto": a draw not estimable
        V, w = nested_uniform_in_box(lo, hi, Xte[:, f], n_generated, useed)  # the points of sampling="nested"
        with parallel_config(n_jobs=1):
            try:
                s_nested = det.score(V)
            except (ValueError, TypeError, AttributeError) as exc:
                raise ValueError(f"detector {name} could not score the nested points{where}: {exc}") from exc
        _check_draw_scores(s_nested, n_generated, f"detector {name}: scores of the nested points{where}")
        return (*_finite_jointly(s_raw, s_nested), w)

    s_data, s_unif = _finite_jointly(s_data, s_unif)
    em, mv, how = _criteria(s_data, s_unif, vol, plan, t_max, alpha_min, alpha_max, integration, weights, nested)
    lap("criteria")
    return em, mv, None, cpu, how


def _em(s_data, s_unif, vol, plan, t_max, integration, weights):
    return excess_mass(s_data, s_unif, vol, t_max=t_max, t=default_t_grid(vol, plan.t_step), integration=integration,
                       uniform_weights=weights, warn=False)


def _mv(s_data, s_unif, vol, plan, alpha_min, alpha_max, integration, weights):
    return mass_volume(s_data, s_unif, vol, alpha_min=alpha_min, alpha_max=alpha_max,
                       alpha=default_alpha_grid(alpha_min, alpha_max, plan.alpha_step), integration=integration,
                       uniform_weights=weights, warn=False)


def _grid_is_the_cause(em: ExcessMassResult) -> bool:
    """EM is NaN only because the t grid ends before ``EM⁻¹(t_max)`` (which exists: a finite ``t_inverse``)."""
    return em.integration == "grid" and np.isnan(em.criterion) and bool(np.isfinite(em.t_inverse))


def _criteria(s_data, s_unif, vol, plan, t_max, alpha_min, alpha_max, integration, weights=None, nested=None):
    """EM and MV of one draw on the grids of its box plan (the authors' steps for its setting), and how each
    was estimated: ``(em, mv, (em_method, mv_method))``.

    ``plan.sampling == "auto"`` (:attr:`EMMVSettings.sampling`): ``s_unif`` are the scores of uniform points and
    a criterion is redone only where this draw cannot estimate it, in this order —

    1. EM with ``integration="exact"`` on the same points where the grid is the cause (the t grid ends before
       ``EM⁻¹(0.9)``, which exists; :func:`_grid_is_the_cause`);
    2. EM and/or MV, whichever is still NaN, on the nested, importance-weighted points of
       ``sampling="nested"`` (``nested()`` → ``(s_data, s_nested, weights)``, computed only here; the same
       points and scores as ``sampling="nested"`` gives this draw), with ``integration`` and, for EM, step 1's
       exact integration where the grid is again the cause. MV is not redone with exact integration: its
       exact integral covers every level set the grid does (and up to α = 0.999), so it never rescues a draw.

    A criterion estimable with the uniform points is never recomputed: such draws are bit for bit those of
    ``sampling="uniform"``.
    """
    first = f"{plan.points_name}/{integration}"
    em = _em(s_data, s_unif, vol, plan, t_max, integration, weights)
    mv = _mv(s_data, s_unif, vol, plan, alpha_min, alpha_max, integration, weights)
    em_how = mv_how = first
    if plan.sampling != "auto":
        return em, mv, (em_how, mv_how)
    if _grid_is_the_cause(em):
        em, em_how = _em(s_data, s_unif, vol, plan, t_max, "exact", weights), "uniform/exact"
    em_nan, mv_nan = bool(np.isnan(em.criterion)), bool(np.isnan(mv.criterion))
    if (em_nan or mv_nan) and nested is not None:
        sd, sn, w = nested()
        if em_nan:
            em, em_how = _em(sd, sn, vol, plan, t_max, integration, w), f"nested/{integration}"
            if _grid_is_the_cause(em):
                em, em_how = _em(sd, sn, vol, plan, t_max, "exact", w), "nested/exact"
        if mv_nan:
            mv, mv_how = _mv(sd, sn, vol, plan, alpha_min, alpha_max, integration, w), f"nested/{integration}"
    return em, mv, (em_how, mv_how)


def _check_draw_scores(s: Any, n: int, where: str) -> None:
    """One score per object, none NaN (a one-line error naming the detector and the draw otherwise); ±inf is
    a score like any other here (see :func:`_finite_jointly`)."""
    a = np.asarray(s)
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"{where}: expected {n} scores, got an array of shape {a.shape}")
    if not np.issubdtype(a.dtype, np.number):
        raise ValueError(f"{where}: scores are not numbers (dtype {a.dtype})")
    bad = np.flatnonzero(np.isnan(a))
    if bad.size:
        raise ValueError(f"{where}: {bad.size} of {n} scores are NaN (first at position {bad[0]})")


def _finite_jointly(s_data: Any, s_unif: Any) -> tuple[np.ndarray, np.ndarray]:
    """``s_data`` and ``s_unif`` with ±inf replaced by finite values beyond the finite range of *both*.

    LOF-like methods score +inf where a (query) point's neighbours coincide — frequent on integer-valued data
    under feature sub-sampling (WBC with 5 of 9 attributes). EM and MV depend on the scores only through the
    joint order of the data's and the uniform sample's scores (level sets ``{s ≤ u}`` at the data's levels,
    counted by sorting), so one order-preserving map of both gives the exact criteria: +inf is the most
    outlying level, outside every level set of finite score. NaN stays NaN (and is refused).
    """
    a = np.asarray(s_data, dtype=np.float64)
    b = np.asarray(s_unif, dtype=np.float64)
    if not (np.isinf(a).any() or np.isinf(b).any()):
        return a, b
    joint = finite_for_ranking(np.concatenate([a, b]))
    return joint[:a.size], joint[a.size:]


def emmv_all_k(method: str, X: Any, ks: Any, *, draws: int = EMMVSettings.draws,
               features: int = EMMVSettings.features, max_dim: int = EMMVSettings.max_dim,
               n_generated: int = EMMVSettings.n_generated, box: str = EMMVSettings.box,
               sampling: str = EMMVSettings.sampling, seed: int = 0, t_max: float = T_MAX,
               alpha_min: float = ALPHA_MIN, alpha_max: float = ALPHA_MAX, integration: str = "grid",
               warn: bool = True) -> list[EMMVResult]:
    """:func:`emmv` of an odeval method with a novelty form at many k at once, fitted and evaluated on ``X``.

    Equals ``[emmv(KNNQueryDetector(method, k), X, ...) for k in ks]`` (same seeds: same feature draws and
    uniform samples; tests check equality) but builds, per feature draw, one kNN graph of ``X`` and one query
    of the uniform sample for ``max(ks)`` and scores every k from them (the graph and query semantics make
    scores at k ≤ k_max independent of k_max; a draw of few distinct points is scored on its distinct locations,
    bit for bit, ``compress`` of :func:`emmv_many`). Cost per draw: one graph of N objects and one query of
    ``n_generated`` points against them (O(n_generated · N · d') distance work), then every k; times m draws
    when ``d > max_dim``. Memory: the uniform points are queried and scored in blocks of ``UNIFORM_CHUNK``
    (20,000) rows, O(20,000 · max(ks)) for the query plus O(n_generated · len(ks)) for the scores; the
    result does not depend on the block size (each query row is scored on its own; tested).

    Parameters
    ----------
    method : str
        An odeval method with a novelty form (:func:`odeval.detectors.novelty_methods`).
    X : array-like of shape (N, d)
        The data, fitted and evaluated (the unsupervised same-data setting of :func:`emmv`).
    ks : sequence of int
        Neighbourhood sizes, each ≥ the method's ``min_k`` and < N.
    draws, features, max_dim, n_generated, box, sampling, seed, t_max, alpha_min, alpha_max, integration
        As in :func:`emmv` (fitted and evaluated on ``X``, so both boxes are the box of ``X``; "author" differs
        from "train_test" in the grids and the eligible attributes when sub-sampling).
    warn : bool, default True
        Emit an :class:`EMMVWarning` per k with draws whose criterion could not be estimated.

    Returns
    -------
    list of EMMVResult
        One per k, in the order of ``ks``.

    References
    ----------
    Goix (2016), Algorithm evaluation:algo:EMMV (feature sub-sampling, m = 50, d' = 5).
    """
    return emmv_many({method: ks}, X, draws=draws, features=features, max_dim=max_dim, n_generated=n_generated,
                     box=box, sampling=sampling, seed=seed, t_max=t_max, alpha_min=alpha_min,
                     alpha_max=alpha_max, integration=integration, warn=warn)[method]


def _score_points(graph: Any, comp: Any, plan: list, P: np.ndarray, k_max: int, out: dict, a: int) -> None:
    """Novelty scores of the points ``P`` (rows ``a:a+len(P)`` of ``out[method]``) for every method of ``plan``:
    through the draw's graph and the banded leaf query, or its distinct locations (``comp``, a
    :class:`odeval.labelfree._emmv_locations.DrawLocations`) where the draw is compressed."""
    if comp is not None:
        for method, scores in comp.score_query(P).items():
            out[method][:, a:a + P.shape[0]] = scores
        return
    for rows, query in _query_uniform_bands(graph, P, k_max):
        for method, det, ks_list in plan:
            out[method][:, a + rows] = det.novelty_scores_all_k(graph, query, ks_list)
        del query


def emmv_many(methods_ks: Mapping[Any, Any], X: Any, *, draws: int = EMMVSettings.draws,
              features: int = EMMVSettings.features, max_dim: int = EMMVSettings.max_dim,
              n_generated: int = EMMVSettings.n_generated, box: str = EMMVSettings.box,
              sampling: str = EMMVSettings.sampling, seed: int = 0, t_max: float = T_MAX,
              alpha_min: float = ALPHA_MIN, alpha_max: float = ALPHA_MAX, integration: str = "grid",
              warn: bool = True, compress: bool = True) -> dict[str, list[EMMVResult]]:
    """:func:`emmv_all_k` of several odeval methods at once, sharing the feature draws' work.

    The feature draws and uniform samples depend on ``seed`` and the data only, not on the method, so every
    method sees the same ones; per draw this builds one kNN graph of ``X`` and one query of the uniform sample
    for the largest k of *all* methods, and every method scores its k from them. The results equal
    ``{m: emmv_all_k(m, X, ks, ...) for m, ks in methods_ks.items()}`` exactly (scores at k ≤ k_max do not
    depend on k_max; tested), at the cost of one graph and one query per draw instead of one per method.

    Parameters
    ----------
    methods_ks : mapping of str (or :class:`odeval._key.ScoringKey`) to sequence of int
        Method name → its neighbourhood sizes (as ``ks`` of :func:`emmv_all_k`); a key instead of a name rebuilds
        the method with the key's parameters (the same method may then appear with several parameter sets).
    X, draws, features, max_dim, n_generated, box, sampling, seed, t_max, alpha_min, alpha_max, integration, warn
        As in :func:`emmv_all_k`.
    compress : bool, default True
        Score a draw of few distinct points (N ≥ 4 D for D distinct points, exact duplicates) on its distinct
        locations (:mod:`odeval.labelfree._emmv_locations`): the same scores bit for bit (tested), without the
        graph and query rows thousands wide that such a draw has; every other draw is untouched. False: every
        draw through the graph and query of all N objects (the reference the tests compare with).

    Returns
    -------
    dict of str (or ScoringKey) to list of EMMVResult
        Method name or key (as given) → one result per k, in the order of its ``ks``.

    References
    ----------
    Goix (2016), Algorithm evaluation:algo:EMMV (feature sub-sampling, m = 50, d' = 5).
    """
    from odeval.detectors import get_detector, novelty_methods
    from odeval.labelfree._emmv_locations import compress_draw

    seed, draws, features, max_dim, n_generated = _check_settings(seed, draws, features, max_dim, n_generated)
    box, sampling = _check_box(box), _check_sampling(sampling)
    Xd = check_data_matrix(X, name="X")
    n, d = Xd.shape
    if not methods_ks:
        raise ValueError("methods_ks is empty: no method to evaluate")
    plan: list[tuple[Any, Any, list[int]]] = []
    for method, ks in methods_ks.items():
        # a ScoringKey names the method with its parameters (its configuration; metric and setting ignored)
        det = get_detector(method) if isinstance(method, str) else get_detector(method.method, **method.params_dict)
        if not getattr(det, "novelty", False):
            raise ValueError(f"odeval method {det.info.name!r} cannot score points outside the fitted data (needed "
                             f"for the uniform sample of EM/MV); methods that can: {', '.join(novelty_methods())}")
        ks_list = [int(k) for k in np.atleast_1d(np.asarray(ks))]
        if not ks_list:
            raise ValueError(f"{det.info.name}: ks is empty: no k to evaluate")
        bad = [k for k in ks_list if k < det.info.min_k or k >= n]
        if bad:
            raise ValueError(f"{det.info.name}: k must lie in [{det.info.min_k}, {n - 1}] for {n} objects, "
                             f"got {bad[:5]}")
        plan.append((method, det, ks_list))
    box_plan = _box(Xd, Xd, features, max_dim, box, sampling=sampling)
    subsampled = box_plan.subsampled
    m = draws if subsampled else 1
    feats, draw_seeds = _draw_plan(d, m, features, subsampled, seed, box_plan.eligible)
    k_max = max(max(ks_list) for _, _, ks_list in plan)
    per_k = {method: [[] for _ in ks_list] for method, _, ks_list in plan}
    for f, useed in zip(feats, draw_seeds, strict=True):
        lo, hi, vol = box_plan.draw_box(Xd, f)
        if not vol > 0 or not np.isfinite(vol):
            for outs in per_k.values():
                for out in outs:
                    out.append((None, None, f"box volume {vol!r} in the drawn sub-space is not a positive finite "
                                "number", {}, ("", "")))
            continue
        # a draw of few distinct points (exact duplicates): scored on its distinct locations (_emmv_locations)
        comp = compress_draw(Xd[:, f], k_max, plan) if compress else None
        graph = _draw_graph(Xd[:, f], k_max) if comp is None else None
        U, weights = box_plan.points(lo, hi, Xd[:, f], n_generated, useed)
        s_data = (comp.score_data() if comp is not None else
                  {method: det.score_all_k(graph, ks_list) for method, det, ks_list in plan})
        s_unif = {method: np.empty((len(ks_list), n_generated)) for method, _, ks_list in plan}
        for a in range(0, n_generated, UNIFORM_CHUNK):  # novelty scores are per query row: blocks change nothing
            b = min(a + UNIFORM_CHUNK, n_generated)
            _score_points(graph, comp, plan, U[a:b], k_max, s_unif, a)
        s_nested: dict[Any, np.ndarray] = {}
        nested_points: list[tuple[np.ndarray, np.ndarray]] = []

        def nested(method, j, *, det, ks_list, f=f, lo=lo, hi=hi, useed=useed, graph=graph, comp=comp,
                   s_data=s_data, s_nested=s_nested, nested_points=nested_points):
            # sampling="auto", a (method, k) not estimable in this draw: the points of sampling="nested",
            # queried once per draw and scored then for every method (every k: the scores cost little beside
            # the query, which dominates draws of few distinct points), only when some criterion needs them
            if not nested_points:
                nested_points.append(nested_uniform_in_box(lo, hi, Xd[:, f], n_generated, useed))
            V, w = nested_points[0]
            if method not in s_nested:
                sn = {mm: np.empty((len(kl), n_generated)) for mm, _, kl in plan}
                for a in range(0, n_generated, UNIFORM_CHUNK):
                    b = min(a + UNIFORM_CHUNK, n_generated)
                    _score_points(graph, comp, plan, V[a:b], k_max, sn, a)
                s_nested.update(sn)
            return (*_finite_jointly(s_data[method][j], s_nested[method][j]), w)

        for method, det, ks_list in plan:
            for j, out in enumerate(per_k[method]):
                sd, su = _finite_jointly(s_data[method][j], s_unif[method][j])
                em, mv, how = _criteria(sd, su, vol, box_plan, t_max, alpha_min, alpha_max, integration, weights,
                                        functools.partial(nested, method, j, det=det, ks_list=ks_list))
                out.append((em, mv, None, {}, how))
        del graph, comp, U, s_unif, s_data, s_nested, nested_points
    return {method: [_aggregate(out, feats, subsampled=subsampled, name=f"{det.info.name}(k={k})", n_train=n,
                                n_test=n, n_generated=n_generated, seed=seed, stacklevel=3, warn=warn, box=box,
                                sampling=sampling)
                     for k, out in zip(ks_list, per_k[method], strict=True)]
            for method, det, ks_list in plan}
