"""IREOS: Internal, Relative Evaluation of Outlier Solutions (Marques, Campello, Sander, Zimek, ACM TKDD 2020).

An outlier is an object that a kernel classifier separates easily from all the others. For every object x_j a
kernel logistic regression (KLR, :mod:`odeval.labelfree._klr`) is trained with x_j labelled +1 and every
other object -1, for kernel widths gamma in [0, gamma_max]; the separability p(x_j, gamma) is the fitted probability
at x_j. The index of a solution with outlier weights w (Eq. 9)

    I(w) = sum_j w_j A_j / sum_j w_j,      A_j = (1 / gamma_max) int_0^gamma_max p(x_j, gamma) dgamma,

is the weighted mean of the normalised areas under the separability curves. Clumps (Sect. 3.3, Eq. 12): object i
costs c_i = C (1/m_cl)^{w_i} in the classifier of another object, the positive object always the full C.

Speed (Sect. 3.5): objects with weight 0 are never classified; with m_cl = 1 separabilities do not depend on the
solution, so every curve is computed once and shared by all candidates and by the chance adjustment; curves are
integrated by adaptive Simpson quadrature (Eq. 14) or on a fixed grid; the kNN-subset approximation trains each
classifier on the object and its k nearest neighbours (reusing :func:`odeval.neighbors.knn_graph`); classifiers
run in threads (the numba solver releases the GIL); :func:`ireos_select` stops refining a candidate once its
bounds fix its place (Sect. 3.5.2, Table 1). See docs/ireos.md.

References
----------
H. O. Marques, R. J. G. B. Campello, J. Sander, A. Zimek. Internal Evaluation of Unsupervised Outlier Detection.
ACM TKDD 14(4), 47, 2020. Sect. 3.2-3.5, Eq. 1, 9-14, Algorithm 1, Appendix A (Eq. 25, 29-32).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy import stats
from threadpoolctl import threadpool_limits

from odeval._validation import check_data_matrix, check_scores
from odeval.executor import Executor, get_executor, workers_renamed_from
from odeval.labelfree import _klr, _klr_block
from odeval.neighbors._torch_graph import check_device

__all__ = ["CLASSIFIERS", "EXACT_MAX_OBJECTS", "GAMMA_MAX_WARNING", "NULL_MODELS", "PAPER_KNN", "IREOSResult",
           "IREOSSettings", "SelectResult", "gamma_max_exceeds", "ireos", "ireos_select", "resolve_knn", "resolve_mcl",
           "solution_weights"]

Progress = Callable[[str, int], None]
MIN_DEPTH = 1
# The exact index with the pinned classifier from this many objects on: the block solver (_klr_block), whose
# separabilities agree with the dense solver's to ~1e-9 and cost O(N^2) per classifier instead of O(N^3)
BLOCK_MIN_N = 2000
BLOCK_CHUNK = 128  # objects per chunk of the block solver
# the block solver's name -> its settings: the share of the objects in its preconditioner's exact block
# (_klr_block._Preconditioner; 0: the Nystrom preconditioner alone) and the relative residual of the Newton steps
# that may stop a classifier. The name is part of a chunk's payload, so a checkpoint of another solver (e.g.
# "pinned-block", the two conjugate-gradient systems per Newton step before 2026-11-29) is never taken for this
# one's; a cell begun with an earlier solver is resumed by setting BLOCK to its name (ireos_authors.py --solver)
BLOCK_SOLVERS = {"pinned-block-projected": {"core": 0.0, "cg_tol": 1e-10},
                 "pinned-block-projected-core": {"core": _klr_block.CORE_FRACTION, "cg_tol": _klr_block.CG_TOL}}
BLOCK = "pinned-block-projected-core"
#: The kNN-subset size of the paper's experiments (Sect. 3.5.3): the default of a study's IREOS and the selectors.
PAPER_KNN = 250
#: Largest N for which ``knn="auto"`` (the default) computes the exact index; above it, the kNN-subset
#: approximation with :data:`PAPER_KNN` neighbours. Each exact classifier solves an N x N system (O(N^3) per
#: object and kernel width) for up to N objects; measured (m_cl = 1, two candidates, one thread, docs/ireos.md
#: "Exact or kNN subsets by default"): 3.3 s CPU at N = 400, 40 s at 800, 99 s at 1000 (kNN subsets: 3 s), growing
#: as ~N^3.6 beyond, hours at N = 5000; so a default stays within minutes.
EXACT_MAX_OBJECTS = 1000
#: The value of ``knn`` that chooses between the exact index and the kNN-subset approximation by N.
AUTO_KNN = "auto"
#: Null models of scorings (:attr:`IREOSSettings.null`): the paper's (App. A.1.1) first.
NULL_MODELS = ("uniform", "permutation")
#: Separability classifiers (:attr:`IREOSSettings.classifier`): the authors' reference code's first.
CLASSIFIERS = ("pinned", "optimum")
#: γ_max above which ``odeval ireos`` says that the search (Sect. 3.4) ended so high that the pick is not to be
#: relied on, per classifier: 100 for both (docs/model-selection.md, "IREOS with the pinned classifier"). For the
#: ``"optimum"`` it is the guarded rule's threshold (:attr:`odeval.labelfree.guarded.GuardedSettings.threshold`),
#: read off the optimum's γ_max on 51 Campos variants and held out on 211. The Campos audit rerun with the
#: ``"pinned"`` classifier (2026-11-27) tested the same 100, chosen without its values: among the ten Sect. 4.2
#: candidates its pick sat at percentile 75 where its γ_max was ≤ 100 and at 41–45 above (Wilt, Annthyroid,
#: Shuttle), where the ensemble stayed at 65–77 (262 variants). The 10^4 used before, read off Shuttle's ten
#: variants alone (docs/ireos.md, "A high γ_max, per classifier"), flagged Shuttle only there and missed Wilt and
#: Annthyroid.
GAMMA_MAX_WARNING = {"pinned": 100.0, "optimum": 100.0}


def _positive_int(value: Any, minimum: int = 1) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= minimum


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool) and value > 0


@dataclass(frozen=True)
class IREOSSettings:
    """The settings of :func:`ireos` / :func:`ireos_select`, declared once: their defaults, the ``odeval ireos``
    options, a study's IREOS ``[internal_options]`` and the ``ireos`` selectors read them from here.

    Attributes
    ----------
    m_cl : 1, "sqrt5" or a number >= 1, default 1
        Maximum clump size (Eq. 12); "sqrt5" = sqrt(5 % N) (Sect. 4.2.2). The paper's third setting, m_cl = n, is
        the number of outliers of the ground truth (Sect. 4.2.2): pass that number.
    C : float, default 100
        Margin-violation cost of the classifiers (the paper's experiments).
    gamma_max : float or None, default None
        The upper kernel width; None: searched (Sect. 3.4).
    gamma_max_quantile : float in (0, 1], default 1
        Fraction of the candidates' outliers that must be separable at gamma_max (1: the paper's rule).
    quadrature : {"adaptive", "fixed"}, default "adaptive"
        Adaptive Simpson (Eq. 14, tolerance ``tol``, depth ``max_depth``) or ``n_gamma`` equally spaced gammas.
    n_gamma : int >= 2, default 100
    tol : float > 0, default 0.001
    max_depth : int >= 1, default 8
    knn : int, None or "auto", default "auto"
        Train each classifier on the object and its ``knn`` nearest neighbours (Sect. 3.5.3; the paper:
        :data:`PAPER_KNN`); None: the exact index; "auto": the exact index up to ``exact_max_objects`` objects,
        the approximation with :data:`PAPER_KNN` neighbours above (:func:`resolve_knn`).
    exact_max_objects : int >= 1, default :data:`EXACT_MAX_OBJECTS`
        The size above which ``knn="auto"`` approximates.
    n_permutations : int >= 1, default 1000
        Permutations of the weights behind the p-values of scorings with m_cl = 1.
    ci_width : float > 0, default 0.02
        Width of the 95 % confidence interval of E{I} that the Monte Carlo adjustment (m_cl > 1) aims at.
    max_draws : int >= 1, default 100
        At most this many random solutions per null distribution in that Monte Carlo (scorings under the
        uniform null share one; binary and permuted solutions one per multiset of weights).
    null : {"uniform", "permutation"}, default "uniform"
        The random *scoring* of the chance adjustment (m_cl > 1) and of the p-values. "uniform": i.i.d. weights
        uniform on [0, 1] (App. A.1.1, the paper's definition; for m_cl > 1 every object is classified in every
        draw); "permutation": random permutations of the candidate's own weights (odeval's only null before
        2026-11: it keeps the candidate's weight distribution, its zeros included, so a draw classifies only as
        many objects as the candidate has positive weights). At m_cl = 1 both give E{I} = the mean area (Eq. 25).
        Binary solutions always draw a random n-subset, and non-binary top-n solutions (``top_n``) a permutation.
    classifier : {"pinned", "optimum"}, default "pinned"
        The kernel logistic regression behind every separability p(x_j, gamma) (Sect. 3.2-3.3). "pinned": what
        the authors' reference code computes (``KLR.java`` of homarques/ireos-extension): its dual solver starts
        the positive object's multiplier at C, where the entropy term's derivative is infinite, and never moves
        it again, so p is the optimum of the dual with that multiplier fixed at A = C - mean(c_neg) / (n - 1)
        (:mod:`odeval.labelfree._klr`); p -> 1 at large gamma, and objects with near or exact duplicates become
        separable, so the gamma_max search (Sect. 3.4) ends where the paper's did (Shuttle 3 795, not 10^6;
        docs/ireos.md, *The classifier and gamma_max*). Exact duplicates then take part in the gamma_max search,
        and gamma_max is searched with m_cl = 1 whatever m_cl (the authors' pipeline: one gamma_max per variant).
        "optimum": the exact KLR optimum (odeval's only classifier before 2026-11): p levels off at ~0.9 for
        every object, an object with a near-duplicate at distance delta is separable only at gamma ~ 0.005 /
        delta^2, and objects with an exact duplicate never are (they are left out of the gamma_max search).

    Raises
    ------
    ValueError
        A bad value, one line naming the field (:meth:`problem` says why).
    """

    m_cl: Any = 1
    C: float = 100.0
    gamma_max: float | None = None
    gamma_max_quantile: float = 1.0
    quadrature: str = "adaptive"
    n_gamma: int = 100
    tol: float = 0.001
    max_depth: int = 8
    knn: int | str | None = AUTO_KNN
    exact_max_objects: int = EXACT_MAX_OBJECTS
    n_permutations: int = 1000
    ci_width: float = 0.02
    max_draws: int = 100
    null: str = "uniform"
    classifier: str = "pinned"

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            why = self.problem(name, value)
            if why:
                raise ValueError(f"IREOS setting {name} {why}, got {value!r}")

    @staticmethod
    def problem(name: str, value: Any) -> str | None:
        """Why ``value`` is not a valid setting ``name`` (None when it is; "is unknown" for another name)."""
        if name == "m_cl":
            if isinstance(value, str) and value.strip().lower() == "sqrt5":
                return None
            try:
                resolve_mcl(value, 1)
            except ValueError:
                return "must be 1, a larger integer or 'sqrt5'"
            return None
        if name in ("C", "tol", "ci_width"):
            return None if _positive_number(value) else "must be a positive number"
        if name == "gamma_max":
            return None if value is None or _positive_number(value) else "must be a positive number"
        if name == "gamma_max_quantile":
            return None if _positive_number(value) and value <= 1 else "must be in (0, 1]"
        if name == "quadrature":
            return None if value in ("adaptive", "fixed") else "must be 'adaptive' or 'fixed'"
        if name == "n_gamma":
            return None if _positive_int(value, 2) else "must be an integer ≥ 2"
        if name == "knn":
            return (None if value is None or value == AUTO_KNN or _positive_int(value)
                    else f"must be a positive integer, None or {AUTO_KNN!r}")
        if name == "null":
            return None if value in NULL_MODELS else "must be 'uniform' or 'permutation'"
        if name == "classifier":
            return None if value in CLASSIFIERS else "must be 'pinned' or 'optimum'"
        if name in ("max_depth", "n_permutations", "max_draws", "exact_max_objects"):
            return None if _positive_int(value) else "must be a positive integer"
        return "is unknown"

    def for_objects(self, n_objects: int) -> IREOSSettings:
        """These settings for a data set of ``n_objects``: ``knn="auto"`` resolved (:func:`resolve_knn`), and the
        exact index (``knn = None``) when the kNN subset would hold every object anyway (N <= knn + 1)."""
        knn = resolve_knn(self.knn, n_objects, self.exact_max_objects)
        if knn is not None and n_objects <= int(knn) + 1:
            knn = None
        return self if knn == self.knn else replace(self, knn=knn)

    def kwargs(self) -> dict[str, Any]:
        """The settings as keyword arguments of :func:`ireos`."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


# ------------------------------------------------------------------------------------------------ inputs
def resolve_knn(knn: Any, n_objects: int, exact_max_objects: int = EXACT_MAX_OBJECTS) -> Any:
    """The kNN-subset size IREOS uses on ``n_objects``: ``knn`` as given, except ``"auto"``: None (the exact
    index) for N <= ``exact_max_objects``, :data:`PAPER_KNN` above (Sect. 3.5.3)."""
    if isinstance(knn, str) and knn == AUTO_KNN:
        return None if n_objects <= exact_max_objects else PAPER_KNN
    return knn


def resolve_mcl(m_cl: Any, n_objects: int) -> float:
    """The maximum clump size: ``1`` (no clumps), ``"sqrt5"`` = sqrt(5 % * N) (Sect. 4.2.2), or a number >= 1."""
    if isinstance(m_cl, str):
        name = m_cl.strip().lower()
        if name == "sqrt5":
            return max(1.0, math.sqrt(0.05 * n_objects))
        try:
            m_cl = float(name)
        except ValueError:
            raise ValueError(f"unknown m_cl {m_cl!r}: use 1, 'sqrt5' (= sqrt(5% * N)) or a number >= 1") from None
    if isinstance(m_cl, bool) or not isinstance(m_cl, int | float | np.integer | np.floating):
        raise ValueError(f"unknown m_cl {m_cl!r}: use 1, 'sqrt5' (= sqrt(5% * N)) or a number >= 1")
    if not (math.isfinite(m_cl) and m_cl >= 1):
        raise ValueError(f"m_cl must be >= 1 (a maximum clump size), got {m_cl!r}")
    return float(m_cl)


def _scaler(weights: Any) -> Callable[[np.ndarray], np.ndarray]:
    from odeval import scaling

    if callable(weights) and not isinstance(weights, str):
        if isinstance(weights, scaling.ScoreScaling):
            return lambda s: np.asarray(weights.fit_transform(s), dtype=np.float64)
        return lambda s: np.asarray(weights(s), dtype=np.float64)
    table = {"gaussian": scaling.gaussian_scaling, "linear": scaling.linear_scaling, "gamma": scaling.gamma_scaling,
             "sigmoid": scaling.sigmoid_scaling, "mixture": scaling.mixture_model_scaling}
    if weights == "none":
        return lambda s: np.asarray(s, dtype=np.float64)
    if weights not in table:
        raise ValueError(f"unknown weights {weights!r}: use one of {', '.join([*table, 'none'])}, "
                         "a ScoreScaling or a callable")
    return table[weights]


def solution_weights(solutions: Sequence[Any], n_objects: int, *, weights: Any = "gaussian",
                     top_n: int | None = None) -> tuple[np.ndarray, list[str]]:
    """Outlier weights w (S, N) of the candidate solutions (Algorithm 1).

    * a boolean vector (or one holding only 0 and 1): a binary top-n solution, w = 1 on its outliers, 0 elsewhere;
    * any other score vector (higher = more outlying): a full scoring, w = ``weights`` scaling of the scores
      (Gaussian scaling of Kriegel et al. 2011 by default, as Sect. 4.2; ``"none"`` takes scores in [0, 1] as
      they are); with ``top_n`` a non-binary top-n solution: weights outside the top-n scores are set to 0.

    Raises
    ------
    ValueError
        Shape mismatch, NaN/inf, a binary solution with one class only, weights outside [0, 1], no positive weight.
    """
    if isinstance(solutions, np.ndarray) and solutions.ndim == 1:
        solutions = [solutions]
    if len(solutions) == 0:
        raise ValueError("no solutions given")
    scale = _scaler(weights)
    W = np.empty((len(solutions), n_objects))
    kinds: list[str] = []
    for s, sol in enumerate(solutions):
        arr = np.asarray(sol)
        if arr.ndim != 1 or arr.shape[0] != n_objects:
            raise ValueError(f"solution {s} has shape {arr.shape}, but X has {n_objects} objects")
        vec = check_scores(arr.astype(np.float64) if arr.dtype == bool else arr, name=f"solution {s}")
        if arr.dtype == bool or np.isin(vec, (0.0, 1.0)).all():
            n_out = int(vec.sum())
            if n_out == 0 or n_out == n_objects:
                raise ValueError(f"solution {s} is binary with one class only ({n_out} outliers of {n_objects})")
            W[s] = vec
            kinds.append("binary")
            continue
        w = scale(vec)
        if top_n is not None:
            if not 1 <= top_n < n_objects:
                raise ValueError(f"top_n must be in [1, {n_objects - 1}], got {top_n}")
            keep = np.zeros(n_objects, bool)
            keep[np.argsort(-vec, kind="stable")[:top_n]] = True
            w = np.where(keep, w, 0.0)
        if not np.isfinite(w).all() or (w < 0).any() or (w > 1).any():
            raise ValueError(f"solution {s}: weights must lie in [0, 1] (use a scaling, not weights='none')")
        W[s] = w
        kinds.append("topn" if top_n is not None else "scoring")
    for s in range(len(W)):
        if not (W[s] > 0).any():
            raise ValueError(f"solution {s} has no positive weight (after {weights!r} scaling): nothing to evaluate")
    return W, kinds


# ------------------------------------------------------------------------------------------------ engine
_BLAS_LIMITED = False


def _work(payload: tuple) -> tuple[np.ndarray, int, int]:
    """One unit of work (a chunk of objects): module-level and free of shared state, so that threads, local
    processes and Dask workers run it alike. In a worker process BLAS/LAPACK is limited to one thread once (the
    solver's only LAPACK call is the Cholesky factorisation; one thread gives the same bits everywhere and no
    spinning BLAS threads on a loaded machine)."""
    global _BLAS_LIMITED
    X, train, costs, mode, gammas, gamma_max, tol, max_depth, min_depth, pinned, device, limit_blas, caller = payload
    task = (X, train, costs, mode, gammas, gamma_max, tol, max_depth, min_depth, pinned, device)
    if limit_blas and not _BLAS_LIMITED:
        from threadpoolctl import threadpool_limits

        if os.getpid() == caller:  # a map callable running in the caller's process: limit for this call only
            with threadpool_limits(limits=1):
                return _solve_chunk(*task)
        threadpool_limits(limits=1)  # a worker process: once, for good
        _BLAS_LIMITED = True
    return _solve_chunk(*task)


def _solve_chunk(X, train, costs, mode, gammas, gamma_max, tol, max_depth, min_depth, pinned, torch_device=None):
    """``pinned`` is True / False (one classifier after the other, :func:`_klr.curves_batch`; ``train`` holds the
    training sets, ``costs`` aligned with them) or a name of :data:`BLOCK_SOLVERS` (the chunk's objects together on
    the exact training set, :func:`_klr_block.curves`; ``train`` holds the objects (B, 1), ``costs`` (B, N) in
    natural order; the third value returned is then products K x, not factorisations; ``torch_device``: the block
    solver's kernel on that PyTorch device, :class:`_klr_block.TorchKernel`)."""
    if isinstance(pinned, str):
        return _klr_block.curves(X, train[:, 0], costs, mode, gammas, gamma_max, tol, max_depth, min_depth,
                                 core=math.ceil(BLOCK_SOLVERS[pinned]["core"] * X.shape[0]),
                                 cg_tol=BLOCK_SOLVERS[pinned]["cg_tol"], torch_device=torch_device)
    return _klr.curves_batch(X, train, costs, mode, gammas, gamma_max, tol, max_depth, min_depth, pinned)


def _torch_device(device: str) -> str | None:
    """None for "cpu" (NumPy), else the checked PyTorch device of the block solver ("cuda" / "cuda:N"; one-line
    errors for no PyTorch, no CUDA device or an unknown name: the CPU is never substituted silently)."""
    return None if device == "cpu" else check_device(device, cpu="NumPy")


def _ireos_executor(executor: Any, workers: int) -> tuple[Executor, bool]:
    """The executor of the classifiers and whether this call built it (then it closes it): threads by default
    (the numba solver releases the GIL), else as :func:`odeval.executor.get_executor` names it."""
    ex = get_executor("threads" if executor is None else executor, workers)
    return ex, ex is not executor


class _Engine:
    """Separabilities p(x_j, gamma) and areas of tasks (object j, cost vector s), in chunks of objects."""

    def __init__(self, X: np.ndarray, cost_vectors: np.ndarray, *, C: float, knn: int | None, workers: int,
                 tol: float, progress: Progress | None, executor: Any = None, classifier: str = "optimum",
                 device: str = "cpu") -> None:
        if classifier not in CLASSIFIERS:
            raise ValueError(f"classifier must be one of {list(CLASSIFIERS)}, got {classifier!r}")
        self.pinned = classifier == "pinned"
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.N = X.shape[0]
        self.CV = cost_vectors
        self.C = C
        self.tol = tol
        self.progress = progress
        self.n_fits = 0
        self.n_factorisations = 0  # Cholesky factorisations, the solver's unit of cost
        self.n_products = 0  # products K x of the block solver (its unit of cost)
        self.p: dict[tuple[tuple[int, int], float], float] = {}
        if knn is None or knn >= self.N - 1:
            if self.N > 20_000:
                raise ValueError(f"the exact index needs an N x N kernel; N = {self.N} > 20000: use knn (e.g. 250)")
            self.subsets = None
        else:
            from odeval.neighbors import knn_graph

            graph = knn_graph(X, knn)
            self.subsets = np.ascontiguousarray(
                np.hstack([np.arange(self.N)[:, None], graph.indices[:, :knn]]).astype(np.int64))
        self.torch_device = _torch_device(device)
        if self.torch_device is not None and not (self.pinned and self.subsets is None):
            raise ValueError(f"device={device!r} runs the exact index's block solver, which needs knn=None and "
                             f"classifier='pinned' (got knn={knn!r}, classifier={classifier!r}); use device='cpu'")
        self.executor, self.owns_executor = _ireos_executor(executor, workers)
        # the exact index with the pinned classifier on large data (on a device: at any size): the chunk's
        # objects share each kernel and their conjugate-gradient products are one matrix product
        # (odeval.labelfree._klr_block)
        self.block = self.pinned and self.subsets is None and (self.N >= BLOCK_MIN_N or self.torch_device is not None)

    def close(self) -> None:
        if self.owns_executor:
            self.executor.close()

    def n_train(self) -> int:
        return self.N if self.subsets is None else self.subsets.shape[1]

    def _train(self, j: int) -> np.ndarray:
        if self.subsets is not None:
            return self.subsets[j]
        return np.concatenate([[j], np.arange(j), np.arange(j + 1, self.N)]).astype(np.int64)

    def run(self, tasks: Sequence[tuple[int, int]], mode: int, gammas: np.ndarray, gamma_max: float,
            max_depth: int = 0, min_depth: int = 0, stage: str = "") -> np.ndarray:
        """:func:`_klr.curves_batch` over ``tasks`` in chunks (mode 0: adaptive areas, 1: p at ``gammas``)."""
        if not tasks:
            return np.zeros((0, 1 if mode == 0 else len(gammas)))
        n = self.n_train()
        block = self.block
        if block:  # a fixed chunk: the same batches (and bits) for any number of workers
            per = BLOCK_CHUNK
        else:
            per = max(1, min(64, 2_000_000 // (n * n), math.ceil(len(tasks) / (4 * self.executor.workers))))
        payloads = []
        for lo in range(0, len(tasks), per):
            part = tasks[lo:lo + per]
            if block:
                objs = np.array([[j] for j, _ in part], dtype=np.int64)
                costs = np.vstack([self.CV[s] for _, s in part]).astype(np.float64)
                costs[np.arange(len(part)), objs[:, 0]] = self.C
                payloads.append((self.X, objs, costs, mode, np.asarray(gammas, dtype=np.float64),
                                 float(gamma_max), float(self.tol), int(max_depth), int(min_depth), BLOCK,
                                 self.torch_device))
                continue
            train = np.vstack([self._train(j) for j, _ in part])
            costs = np.empty(train.shape)
            for r, (_j, s) in enumerate(part):
                costs[r] = self.CV[s][train[r]]
                costs[r, 0] = self.C
            payloads.append((self.X, train, costs, mode, np.asarray(gammas, dtype=np.float64), float(gamma_max),
                             float(self.tol), int(max_depth), int(min_depth), self.pinned, None))

        # a worker in another process (or a map callable) limits its BLAS to one thread itself (_work); here the
        # limit holds for this call
        remote = not self.executor.local
        payloads = [(*p, remote, os.getpid()) for p in payloads]
        areas = []
        with nullcontext() if remote else threadpool_limits(limits=1):
            for res in self.executor.imap(_work, payloads):  # in order
                areas.append(res[0])
                self.n_fits += int(res[1])
                if block:
                    self.n_products += int(res[2])
                else:
                    self.n_factorisations += int(res[2])
                if self.progress is not None:
                    self.progress(stage, self.n_fits)
        return np.vstack(areas)

    def get(self, task: tuple[int, int], gamma: float) -> float:
        return self.p[(task, gamma)]

    def evaluate(self, pairs: Sequence[tuple[tuple[int, int], float]], stage: str = "") -> None:
        """p of every (task, gamma) pair not yet known (cached), one gamma at a time."""
        by_gamma: dict[float, list[tuple[int, int]]] = {}
        for t, g in pairs:
            if (t, g) not in self.p:
                by_gamma.setdefault(g, [])
                if t not in by_gamma[g]:
                    by_gamma[g].append(t)
        for g, tasks in sorted(by_gamma.items()):
            ps = self.run(tasks, 1, np.array([g]), g, stage=stage)[:, 0]
            for t, p in zip(tasks, ps, strict=True):
                self.p[(t, g)] = float(p)


def _sqdist_blocks(X: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances (N x N) from differences (exact 0 for duplicates), in row blocks of bounded
    memory; for the solver tests and benchmarks on small data (the engine works per training set)."""
    N, d = X.shape
    D2 = np.empty((N, N))
    step = max(1, 4_000_000 // max(1, N * d))
    for lo in range(0, N, step):
        diff = X[lo:lo + step, None, :] - X[None, :, :]
        D2[lo:lo + step] = np.einsum("ijk,ijk->ij", diff, diff)
    return D2


# ------------------------------------------------------------------------------------------- gamma_max
def find_gamma_max(engine: _Engine, tasks: list[tuple[int, int]], *, start: float, factor: float = 1.1,
                   max_steps: int = 400, quantile: float = 1.0) -> tuple[float, list[int]]:
    """gamma_max (Sect. 3.4, Algorithm 1): the smallest gamma = start * factor^k at which every task reaches
    p >= 0.5. The linear scan of the paper is replaced by an exponential search plus bisection over k, which
    finds the same k when p grows with gamma (separability curves are monotone in practice). Tasks that never
    reach 0.5 (e.g. exact duplicates, whose separability tends to 0.5 from below) are returned in the second
    element and gamma_max stops at the cap start * factor^max_steps.

    ``quantile`` < 1 (not the paper's rule; see docs/ireos.md, *Shuttle*): the smallest such gamma at which at
    least ``ceil(quantile * len(tasks))`` of the tasks reach p >= 0.5, i.e. up to ``floor((1 - quantile) *
    len(tasks))`` of them -- typically objects with a near-duplicate, which the exact classifier separates only at
    gamma ~ 0.005 / distance^2 -- may stay below 0.5.
    """
    tasks = list(dict.fromkeys(tasks))
    allowed = math.floor((1.0 - quantile) * len(tasks) + 1e-9)

    def failing(k: int, among: list[tuple[int, int]]) -> list[tuple[int, int]]:
        g = start * factor ** k
        engine.evaluate([(t, g) for t in among], stage="gamma_max")
        return [t for t in among if engine.get(t, g) < 0.5]

    # a task that passes at some k is taken to pass at every larger k (separability grows with gamma), so each
    # probe only classifies the tasks that have not passed yet: the exponential phase, then bisection between
    # the last failing probe (lo) and the first probe where enough passed (hi) over the tasks failing at lo
    lo = -1  # largest probe known to fail (-1: none yet)
    if len(tasks) > 64 and allowed == 0:
        # a pre-search on 32 spread tasks: gamma_max of the sample is a lower bound of the overall gamma_max,
        # which skips the small-gamma probes where (nearly) every object still fails (not a bound for a quantile)
        sample = [tasks[i] for i in np.linspace(0, len(tasks) - 1, 32).astype(int)]
        k_s, _ = find_gamma_max(engine, sample, start=start, factor=factor, max_steps=max_steps)
        lo = round(math.log(k_s / start) / math.log(factor)) - 1
    k0 = lo + 1
    fail = failing(k0, tasks)
    if len(fail) <= allowed:
        return start * factor ** k0, []
    lo, hi = k0, k0 + 1
    while True:
        now = failing(hi, fail)
        if len(now) <= allowed:
            break
        if hi >= max_steps:
            return start * factor ** max_steps, sorted({t[0] for t in now})
        lo, hi, fail = hi, min(hi + 2 * (hi - lo), max_steps), now
    while hi - lo > 1:
        mid = (lo + hi) // 2
        now = failing(mid, fail)
        if len(now) > allowed:
            lo, fail = mid, now
        else:
            hi = mid
    return start * factor ** hi, []


# ------------------------------------------------------------------------------------------- quadrature
def _fixed_areas(engine: _Engine, tasks: list[tuple[int, int]], gamma_max: float, n_gamma: int) -> np.ndarray:
    """n_gamma equally spaced gammas in [0, gamma_max], trapezoidal rule, normalised by gamma_max."""
    grid = np.linspace(0.0, gamma_max, n_gamma)
    P = engine.run(tasks, 1, grid, gamma_max, stage="curves")
    q = np.full(n_gamma, 1.0 / (n_gamma - 1))
    q[[0, -1]] *= 0.5
    return P @ q


def _adaptive_areas(engine: _Engine, tasks: list[tuple[int, int]], gamma_max: float, tol: float,
                    max_depth: int, min_depth: int = MIN_DEPTH) -> np.ndarray:
    """Normalised area of every task's separability curve by adaptive Simpson quadrature (Sect. 3.5.1).

    Each interval is accepted when the a-posteriori estimate |S_2 - S_1| / 15 (Eq. 14 with Simpson's ratio) is
    at most its share of ``tol`` (tol * width / gamma_max, so the estimates of a curve sum to at most tol) or at
    depth ``max_depth``; intervals above depth ``min_depth`` are always split (at least 4 * 2^min_depth + 1
    gammas per curve), since a curve that rises steeply near gamma = 0 can fool the estimate on a coarse grid.
    Since I is a convex combination of the areas, its estimated error is at most tol as well. Nodes sit on a
    dyadic grid and are solved once each, warm-started along gamma (:func:`_klr.curves_batch`); the area at
    gamma = 0 is closed-form (p = c_j / sum_i c_i).
    """
    return engine.run(tasks, 0, np.zeros(0), gamma_max, max_depth=max_depth, min_depth=min_depth,
                      stage="curves")[:, 0]


# --------------------------------------------------------------------------------------------- results
@dataclass
class IREOSResult:
    """IREOS of S candidate solutions.

    Attributes
    ----------
    index : (S,) the index I (Eq. 9).
    adjusted : (S,) I adjusted for chance (Eq. 13), NaN when not requested.
    p_value : (S,) one-sided p-value against random solutions, NaN when not requested.
    expected : (S,) E{I} (Eq. 25 for m_cl = 1, Monte Carlo otherwise), NaN when not requested.
    std_null : (S,) standard deviation of I under the null (exact Eq. 29-32 for binary solutions with m_cl = 1).
    gamma_max, m_cl, C, kinds, weights (S, N).
    areas : (N,) normalised areas A_j of the separability curves (m_cl = 1; NaN where not computed).
    n_fits : classifiers trained (all stages); fits : per stage {"gamma_max", "curves", "null"}.
    knn : the kNN-subset size the classifiers were trained with (None: the exact index).
    approximated : why the kNN-subset approximation was chosen by ``knn="auto"`` (None when it was not).
    classifier : the separability classifier ("pinned" or "optimum", :attr:`IREOSSettings.classifier`).
    null : the null model of scorings behind ``p_value`` / ``expected`` ("uniform" or "permutation",
        :attr:`IREOSSettings.null`).
    unseparated : objects that never reached p >= 0.5 in the gamma_max search (gamma_max then stopped at its cap).
    gamma_max_duplicates : candidate outliers left out of the gamma_max search because they have an exact
        duplicate in X (they can never reach p >= 0.5 with m_cl = 1; see :func:`_gmax_tasks`).
    """

    index: np.ndarray
    adjusted: np.ndarray
    p_value: np.ndarray
    expected: np.ndarray
    std_null: np.ndarray
    gamma_max: float
    m_cl: float
    C: float
    kinds: list[str]
    weights: np.ndarray
    areas: np.ndarray
    n_fits: int
    fits: dict[str, int] = field(default_factory=dict)
    n_draws: np.ndarray | None = None
    unseparated: list[int] = field(default_factory=list)
    gamma_max_duplicates: list[int] = field(default_factory=list)
    knn: int | None = None
    approximated: str | None = None
    classifier: str = "pinned"
    null: str = "uniform"

    def to_dict(self) -> dict[str, Any]:
        def clean(a):
            return [None if not np.isfinite(v) else float(v) for v in np.asarray(a, float)]

        return {"index": clean(self.index), "adjusted": clean(self.adjusted), "p_value": clean(self.p_value),
                "expected": clean(self.expected), "gamma_max": self.gamma_max, "m_cl": self.m_cl, "C": self.C,
                "kinds": self.kinds, "n_fits": self.n_fits, "fits": self.fits}


def _prepare(X: Any, solutions: Sequence[Any], *, m_cl: Any, C: float, weights: Any, top_n: int | None,
             gamma_max: float | None, knn: int | None):
    Xc = check_data_matrix(X, name="X", min_rows=3)
    if np.ptp(Xc, axis=0).max() == 0.0:
        raise ValueError("X is constant (every object equal): no object can be separated")
    if not (isinstance(C, int | float) and math.isfinite(C) and C > 0):
        raise ValueError(f"C must be a positive finite number, got {C!r}")
    if gamma_max is not None and not (isinstance(gamma_max, int | float) and math.isfinite(gamma_max)
                                      and gamma_max > 0):
        raise ValueError(f"gamma_max must be a positive finite number, got {gamma_max!r}")
    if knn is not None and (isinstance(knn, bool) or not isinstance(knn, int | np.integer) or knn < 1):
        raise ValueError(f"knn must be a positive integer (neighbours per classifier) or None, got {knn!r}")
    mcl = resolve_mcl(m_cl, Xc.shape[0])
    W, kinds = solution_weights(solutions, Xc.shape[0], weights=weights, top_n=top_n)
    return Xc, mcl, W, kinds


def _cost_vectors(W: np.ndarray, m_cl: float, C: float) -> np.ndarray:
    """c_i = C (1/m_cl)^{w_i} (Eq. 12); one vector per solution, or a single all-C vector for m_cl = 1."""
    if m_cl == 1.0:
        return np.full((1, W.shape[1]), float(C))
    return C * (1.0 / m_cl) ** W


def _areas(engine: _Engine, tasks, gamma_max, quadrature, n_gamma, tol, max_depth) -> np.ndarray:
    if not tasks:
        return np.zeros(0)
    if quadrature == "fixed":
        return _fixed_areas(engine, tasks, gamma_max, n_gamma)
    return _adaptive_areas(engine, tasks, gamma_max, tol, max_depth)


def _gmax_tasks(W: np.ndarray, shared: bool, X: np.ndarray,
                leave_out_duplicates: bool = True) -> tuple[list[tuple[int, int]], list[int]]:
    """The (object, cost vector) tasks whose separability decides gamma_max (Sect. 3.4): every object with
    weight >= 0.5 in a solution (or its most outlying ones), except objects with an exact duplicate in X. Such
    an object and its duplicate get the same decision value at every gamma, so with equal costs its p stays
    below 0.5 for ever (it tends to 0.5 from below) and the paper's rule could not be met: gamma_max would run
    to the cap of the search, where every object's separability has levelled off and the index no longer tells
    solutions apart (docs/ireos.md, *Ionosphere*). They are returned second (and kept if nothing else is left).
    That holds for the exact KLR optimum; with the reference code's pinned classifier a duplicated object does
    become separable at large gamma, and the authors' search keeps it (``leave_out_duplicates=False``).
    """
    tasks = []
    for s, w in enumerate(W):
        objs = np.flatnonzero(w >= 0.5)
        if objs.size == 0:  # no object with outlier probability >= 0.5: use the most outlying ones
            objs = np.flatnonzero(w == w.max())
        tasks += [(int(j), 0 if shared else s) for j in objs]
    if not leave_out_duplicates:
        return tasks, []
    _, inverse, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    dup = counts[np.ravel(inverse)] > 1
    kept = [t for t in tasks if not dup[t[0]]]
    if not kept:
        return tasks, []
    return kept, sorted({t[0] for t in tasks if dup[t[0]]})


def _gamma_max_tasks(engine: _Engine, W: np.ndarray, shared: bool, X: np.ndarray, classifier: str,
                     C: float) -> tuple[list[tuple[int, int]], list[int]]:
    """The tasks of the gamma_max search (:func:`_gmax_tasks`) for ``classifier``. The optimum: each solution's
    own costs (Eq. 12) for m_cl > 1, objects with an exact duplicate left out. The reference code's pinned
    classifier, as the authors' pipeline ran it (``FindGammaMax.java``: one gamma_max per variant, searched with
    m_cl = 1, i.e. every cost C, and used for every m_cl): the costs of m_cl = 1 (a cost vector of C appended to
    the engine's for m_cl > 1), duplicates kept."""
    if classifier == "optimum":
        return _gmax_tasks(W, shared, X)
    tasks, duplicated = _gmax_tasks(W, True, X, leave_out_duplicates=False)
    if not shared:
        sid = engine.CV.shape[0]
        engine.CV = np.vstack([engine.CV, np.full((1, W.shape[1]), C)])
        tasks = [(j, sid) for j, _ in tasks]
    return tasks, duplicated


_D = IREOSSettings  # the defaults of ireos() / ireos_select() are the settings' field defaults


def _auto_knn(X: Any, knn: Any, exact_max_objects: Any) -> tuple[Any, str | None]:
    """``knn`` resolved for the rows of ``X`` (:func:`resolve_knn`) and, when ``"auto"`` chose the approximation,
    the one line that says so."""
    if not (isinstance(knn, str) and knn == AUTO_KNN):
        return knn, None
    if not _positive_int(exact_max_objects):
        raise ValueError(f"exact_max_objects must be a positive integer, got {exact_max_objects!r}")
    try:
        n = len(X)
    except TypeError:  # not a matrix: _prepare says why
        return None, None
    chosen = resolve_knn(knn, n, exact_max_objects)
    if chosen is None or chosen >= n - 1:  # a subset of every other object is the exact index
        return None, None
    return chosen, (f"N = {n} > {exact_max_objects}: kNN-subset approximation with knn = {chosen} (Marques et al. "
                    "2020, Sect. 3.5.3; the exact index costs O(N^3) per object and kernel width); knn=None forces "
                    "the exact index")


def _check_options(quadrature: str, n_gamma: int, tol: float, gamma_max_quantile: float = 1.0) -> None:
    if not (isinstance(gamma_max_quantile, int | float) and 0 < gamma_max_quantile <= 1):
        raise ValueError(f"gamma_max_quantile must be in (0, 1], got {gamma_max_quantile!r}")
    if quadrature not in ("adaptive", "fixed"):
        raise ValueError(f"quadrature must be 'adaptive' or 'fixed', got {quadrature!r}")
    if quadrature == "fixed" and (not isinstance(n_gamma, int | np.integer) or n_gamma < 2):
        raise ValueError(f"n_gamma must be an integer >= 2, got {n_gamma!r}")
    if not (tol > 0):
        raise ValueError(f"tol must be positive, got {tol!r}")


@workers_renamed_from("n_jobs")
def ireos(X: Any, solutions: Sequence[Any], *, m_cl: Any = _D.m_cl, C: float = _D.C,
          gamma_max: float | None = _D.gamma_max, gamma_max_quantile: float = _D.gamma_max_quantile,
          quadrature: str = _D.quadrature, n_gamma: int = _D.n_gamma, tol: float = _D.tol,
          max_depth: int = _D.max_depth,
          knn: int | str | None = _D.knn, exact_max_objects: int = _D.exact_max_objects, weights: Any = "gaussian",
          top_n: int | None = None, adjust: bool = False,
          p_values: bool = False, n_permutations: int = _D.n_permutations, ci_width: float = _D.ci_width,
          max_draws: int = _D.max_draws, null: str = _D.null, classifier: str = _D.classifier,
          seed: int = 0, workers: int = 1, progress: Progress | None = None, executor: Any = None,
          device: str = "cpu") -> IREOSResult:
    """IREOS of candidate outlier solutions (Marques et al. 2020, Eq. 9, Algorithm 1).

    Parameters
    ----------
    X : (N, d) data.
    solutions : list of vectors (N,): boolean (binary top-n) or scores (higher = more outlying); see
        :func:`solution_weights`.
    m_cl : 1 (default), "sqrt5" (sqrt(5% N)) or a number >= 1: maximum clump size (Eq. 12).
    C : margin-violation cost (default 100, as the paper's experiments; :class:`IREOSSettings` documents every
        setting).
    gamma_max : the upper kernel width; default: searched (Sect. 3.4, :func:`find_gamma_max`) from 1/(1000 d)
        in steps of x1.1 until every object with weight >= 0.5 in any solution has p >= 0.5.
    gamma_max_quantile : 1 (default, the paper's rule) or less: the search stops once this fraction of those
        objects has p >= 0.5. Objects with a near-duplicate are separated by the exact classifier only at
        gamma ~ 0.005 / distance^2, which on data with few distinct values (Shuttle) sets gamma_max 10^3-10^4
        times beyond the scale of the outliers; see docs/ireos.md.
    quadrature : "adaptive" (Simpson, estimate Eq. 14, per-curve tolerance ``tol``, depth limit ``max_depth``)
        or "fixed" (``n_gamma`` equally spaced gammas in [0, gamma_max], trapezoidal rule).
    knn : None for the exact index; k to train each classifier on the object and its k nearest neighbours
        (Sect. 3.5.3; the paper uses 250); "auto" (default): the exact index for N <= ``exact_max_objects``
        (:data:`EXACT_MAX_OBJECTS`, 1000), else k = 250 — above that size the default approximates, and the
        result says so (``result.knn``, ``result.approximated``); pass ``knn=None`` for the exact index anyway.
    exact_max_objects : the size above which ``knn="auto"`` approximates.
    weights : scaling of score vectors ("gaussian" default, "linear", "gamma", "sigmoid", "mixture", "none",
        a :class:`odeval.scaling.ScoreScaling` or a callable).
    top_n : make score vectors non-binary top-n solutions.
    adjust : compute E{I} and the adjusted index (Eq. 13): exact Eq. 25 for m_cl = 1 (classifies every object),
        Monte Carlo over random solutions for m_cl > 1, with the number of draws chosen so that the 95%
        confidence interval of E{I} is at most ``ci_width`` wide (at most ``max_draws``, at least 10); solutions
        with the same null distribution share one set of draws (every scoring under ``null="uniform"``: one E{I},
        so the adjustment keeps the order of the index).
    p_values : one-sided p-values against random solutions: for binary solutions with m_cl = 1 the z-test with the
        exact variance and finite-population correction (Eq. 29-32), p = 1 - Phi(z); for scorings with m_cl = 1
        ``n_permutations`` random scorings of the ``null`` model (no extra classifiers: the areas of all objects
        are known); for m_cl > 1 the Monte Carlo draws of ``adjust``.
    null : "uniform" (default: i.i.d. weights uniform on [0, 1], App. A.1.1) or "permutation" (permutations of
        the candidate's own weights): the random scorings behind ``adjust`` (m_cl > 1) and ``p_values``; see
        :class:`IREOSSettings`.
    classifier : "pinned" (default: the authors' reference code's classifier, the positive object's multiplier
        pinned at its starting value) or "optimum" (the exact KLR optimum); see :class:`IREOSSettings`.
    seed : seed of every random draw.
    workers : workers for the classifiers (threads by default; processes with ``executor="processes"``; -1: every
        core). Formerly ``n_jobs`` (deprecated).
    progress : callback(stage, fits so far).
    executor : where the objects' classifiers run, in chunks of objects (:mod:`odeval.executor`): None /
        "threads" (``workers`` threads), "serial", "processes" (``workers`` local processes), a Dask scheduler
        address ("tcp://host:port", as ``odeval study run --scheduler``), a ``distributed.Client``, an
        :class:`odeval.executor.Executor`, a ``concurrent.futures.Executor`` or a map-like callable. The results
        are the same bit for bit for every choice and worker count.
    device : "cpu" (default) or a PyTorch CUDA device ("cuda", "cuda:N"; ``pip install 'odeval[gpu]'``) for the
        exact index with the pinned classifier (``knn=None``): the block solver's kernel, its products and the
        conjugate gradients on the device, the Newton steps on the host (:class:`_klr_block.TorchKernel`), at any
        N. The index agrees with the CPU's to the conjugate gradients' tolerance (areas within ~1e-9), not in
        bits; the same device and settings give the same bits. Another ``knn`` or classifier with a device is an
        error, as is a device PyTorch does not see (never a silent CPU run).

    Returns
    -------
    IREOSResult

    Raises
    ------
    ValueError
        Bad input, with a one-line message (see :func:`solution_weights`; N < 3; NaN/inf; constant X;
        gamma_max <= 0; an unknown m_cl).
    """
    _check_options(quadrature, n_gamma, tol, gamma_max_quantile)
    if classifier not in CLASSIFIERS:
        raise ValueError(f"classifier must be one of {list(CLASSIFIERS)}, got {classifier!r}")
    if null not in NULL_MODELS:
        raise ValueError(f"null must be one of {list(NULL_MODELS)}, got {null!r}")
    knn, approximated = _auto_knn(X, knn, exact_max_objects)
    Xc, mcl, W, kinds = _prepare(X, solutions, m_cl=m_cl, C=C, weights=weights, top_n=top_n, gamma_max=gamma_max,
                                 knn=knn)
    N, d = Xc.shape
    S = W.shape[0]
    shared = mcl == 1.0
    CV = _cost_vectors(W, mcl, C)
    engine = _Engine(Xc, CV, C=float(C), knn=knn, workers=workers, tol=tol, progress=progress, executor=executor,
                     classifier=classifier, device=device)
    try:
        fits: dict[str, int] = {}
        unseparated: list[int] = []
        duplicated: list[int] = []
        if gamma_max is None:
            gtasks, duplicated = _gamma_max_tasks(engine, W, shared, Xc, classifier, float(C))
            gamma_max, unseparated = find_gamma_max(engine, gtasks, start=1.0 / (1000.0 * d),
                                                    quantile=gamma_max_quantile)
        fits["gamma_max"] = engine.n_fits
        gamma_max = float(gamma_max)

        def areas_of(tasks):
            return _areas(engine, tasks, gamma_max, quadrature, n_gamma, tol, max_depth)

        index = np.empty(S)
        expected = np.full(S, np.nan)
        std_null = np.full(S, np.nan)
        p_value = np.full(S, np.nan)
        n_draws = np.zeros(S, dtype=np.int64)
        rng = np.random.default_rng(seed)
        A_all = np.full(N, np.nan)
        if shared:
            objs = np.arange(N) if (adjust or p_values) else np.flatnonzero((W > 0).any(axis=0))
            A_all[objs] = areas_of([(int(j), 0) for j in objs])
            for s in range(S):
                nz = W[s] > 0
                index[s] = float(W[s, nz] @ A_all[nz] / W[s, nz].sum())
            fits["curves"] = engine.n_fits - fits["gamma_max"]
            if adjust or p_values:
                e = float(A_all.mean())  # Eq. 25
                expected[:] = e
                for s in range(S):
                    if kinds[s] == "binary":
                        n = int(W[s].sum())
                        var = A_all.var() / n * (N - n) / (N - 1)  # Eq. 29-32 with the finite-population correction
                        std_null[s] = math.sqrt(var)
                        if p_values:
                            z = (index[s] - e) / std_null[s] if var > 0 else (math.inf if index[s] > e else -math.inf)
                            p_value[s] = float(stats.norm.sf(z))  # 1 - Phi(z), one-sided
                rows = [s for s in range(S) if kinds[s] != "binary"]
                if p_values and rows:
                    uniform = [s for s in rows if null == "uniform" and kinds[s] == "scoring"]
                    permuted = [s for s in rows if s not in uniform]
                    draws = np.empty((S, n_permutations))
                    if uniform:
                        draws[uniform] = _uniform_null(W[uniform], A_all, n_permutations, rng)
                    if permuted:
                        draws[permuted] = _permutation_null(W[permuted], A_all, n_permutations, rng)
                    for s in rows:
                        std_null[s] = float(draws[s].std(ddof=1))
                        p_value[s] = (1 + int((draws[s] >= index[s] - 1e-12).sum())) / (1 + n_permutations)
                        n_draws[s] = n_permutations
        else:
            for s in range(S):
                objs = np.flatnonzero(W[s] > 0)
                A = areas_of([(int(j), s) for j in objs])
                index[s] = float(W[s, objs] @ A / W[s, objs].sum())
            fits["curves"] = engine.n_fits - fits["gamma_max"]
            if adjust or p_values:
                nulls: dict[tuple, np.ndarray] = {}
                for s in range(S):
                    # solutions whose null is one distribution share its draws: one E{I} for all of them, so the
                    # chance adjustment cannot reorder them by Monte Carlo noise (and is drawn once)
                    key = _null_key(W[s], kinds[s], null)
                    if key not in nulls:
                        nulls[key] = _monte_carlo(engine, W[s], kinds[s], mcl, float(C), areas_of, rng, ci_width,
                                                  max_draws, null=null)
                    draws = nulls[key]
                    expected[s] = float(draws.mean())
                    std_null[s] = float(draws.std(ddof=1))
                    n_draws[s] = draws.size
                    p_value[s] = ((1 + int((draws >= index[s] - 1e-12).sum())) / (1 + draws.size) if p_values
                                  else np.nan)
            fits["null"] = engine.n_fits - fits["gamma_max"] - fits["curves"]
        adjusted = (index - expected) / (1.0 - expected) if (adjust or p_values) else np.full(S, np.nan)
        if not adjust:
            adjusted[:] = np.nan
            expected_out = expected if p_values else np.full(S, np.nan)
        else:
            expected_out = expected
        return IREOSResult(index=index, adjusted=adjusted, p_value=p_value, expected=expected_out, std_null=std_null,
                           gamma_max=gamma_max, m_cl=mcl, C=float(C), kinds=kinds, weights=W, areas=A_all,
                           n_fits=engine.n_fits, fits=fits, n_draws=n_draws, unseparated=unseparated,
                           gamma_max_duplicates=duplicated, knn=None if knn is None or knn >= N - 1 else int(knn),
                           approximated=approximated, classifier=classifier, null=null)
    finally:
        engine.close()




def _permutation_null(W: np.ndarray, A: np.ndarray, n_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """IREOS of ``n_permutations`` random permutations of each solution's weights (m_cl = 1, App. A.2), (S, P).

    sum_j w_pi(j) A_j = sum_j w_j A_pi^-1(j): permuting the areas instead of the weights gives the same null
    distribution, and one set of permuted area vectors serves every solution (one matrix product instead of
    S * P permutations), in chunks of bounded memory.
    """
    S, N = W.shape
    out = np.empty((S, n_permutations))
    sums = W.sum(axis=1)[:, None]
    step = max(1, min(n_permutations, 4_000_000 // max(1, N)))
    for lo in range(0, n_permutations, step):
        hi = min(n_permutations, lo + step)
        P = np.vstack([rng.permutation(A) for _ in range(hi - lo)])
        out[:, lo:hi] = (W @ P.T) / sums
    return out


def _uniform_null(W: np.ndarray, A: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """IREOS of ``n_draws`` random scorings with i.i.d. weights uniform on [0, 1] (m_cl = 1, App. A.1.1), (S, P).

    The null does not depend on the solution: every row holds the same draws (one set serves all solutions, as
    the paper's E{I} does), drawn in chunks of bounded memory.
    """
    S, N = W.shape
    out = np.empty((S, n_draws))
    step = max(1, min(n_draws, 4_000_000 // max(1, N)))
    for lo in range(0, n_draws, step):
        hi = min(n_draws, lo + step)
        R = rng.random((hi - lo, N))
        out[:, lo:hi] = (R @ A) / R.sum(axis=1)
    return out


def _null_key(w: np.ndarray, kind: str, null: str) -> tuple:
    """What the Monte Carlo null of one solution depends on (App. A.1-A.2): nothing for scorings under the paper's
    i.i.d. uniform weights, the multiset of weights for a permutation (a random n-subset for binary and top-n
    solutions: their number of ones)."""
    if null == "uniform" and kind == "scoring":
        return ("uniform", w.size)
    return ("permutation", np.sort(w).tobytes())


def _monte_carlo(engine: _Engine, w: np.ndarray, kind: str, m_cl: float, C: float, areas_of, rng, ci_width: float,
                 max_draws: int, null: str = "uniform") -> np.ndarray:
    """Appendix A.2: IREOS of random solutions, each with its own costs (Eq. 12): a random n-subset for binary
    solutions; for scorings i.i.d. weights uniform on [0, 1] (``null="uniform"``, App. A.1.1: every object is
    classified in every draw) or a random permutation of the weights (``null="permutation"``, and always for
    top-n solutions). Draws stop once the 95% confidence interval of the mean is at most ``ci_width`` wide (at
    least 10 draws, at most ``max_draws``)."""
    values: list[float] = []
    z = stats.norm.ppf(0.975)
    while len(values) < max_draws:
        wr = rng.random(w.size) if (null == "uniform" and kind == "scoring") else rng.permutation(w)
        sid = engine.CV.shape[0]
        engine.CV = np.vstack([engine.CV, C * (1.0 / m_cl) ** wr])
        objs = np.flatnonzero(wr > 0)
        A = areas_of([(int(j), sid) for j in objs])
        values.append(float(wr[objs] @ A / wr[objs].sum()))
        if len(values) >= 10:
            sd = float(np.std(values, ddof=1))
            if 2 * z * sd / math.sqrt(len(values)) <= ci_width:
                break
    return np.array(values)


def gamma_max_exceeds(X: np.ndarray, solutions: list[np.ndarray], threshold: float, *, C: float = _D.C,
                      knn: int | None = None, workers: int = 1,
                      progress: Callable[[str, int], None] | None = None, classifier: str = _D.classifier) -> bool:
    """Whether the γ_max search of :func:`odeval.labelfree.ireos` (§3.4, m_cl = 1) on these solutions would
    end above ``threshold``, from one probe instead of the search.

    The search returns the smallest grid value γ = start · 1.1^k (start = 1 / (1000 d)) at which every task (an
    object with weight ≥ 0.5 in a solution, exact duplicates left out) reaches p ≥ 0.5. Separability grows with γ,
    so γ_max ≤ threshold exactly when every task passes at g, the largest grid value ≤ threshold: one classifier
    per task at g.

    ``classifier`` as :func:`ireos` (the pinned classifier by default); the guarded selection rule
    (:mod:`odeval.labelfree.guarded`) passes its own (:attr:`~odeval.labelfree.guarded.GuardedSettings.classifier`),
    which enters its stored picks' task ids.
    """
    Xd = np.ascontiguousarray(X, dtype=np.float64)
    W, _ = solution_weights(solutions, Xd.shape[0])
    tasks, _ = _gmax_tasks(W, True, Xd, leave_out_duplicates=classifier == "optimum")
    start, factor = 1.0 / (1000.0 * Xd.shape[1]), 1.1
    if threshold < start:
        return True
    g = start * factor ** math.floor(math.log(threshold / start) / math.log(factor) + 1e-12)
    engine = _Engine(Xd, _cost_vectors(W, 1.0, C), C=float(C), knn=knn, workers=workers, tol=0.001, progress=progress,
                     classifier=classifier)
    try:
        tasks = list(dict.fromkeys(tasks))
        engine.evaluate([(t, g) for t in tasks], stage="gamma_max probe")
        return any(engine.get(t, g) < 0.5 for t in tasks)
    finally:
        engine.close()


# ------------------------------------------------------------------------------------------ model selection
@dataclass
class SelectResult:
    """Model selection by IREOS with stop-early pruning (Sect. 3.5.2, Table 1).

    ``order``: candidates best first; ``best`` = order[0]; ``lower``/``upper``: final bounds of each index
    (equal when a candidate was evaluated completely); ``n_fits``: classifiers trained; ``n_objects``: objects
    whose curves were computed; ``stopped_at``: objects processed per candidate when it was stopped;
    ``n_factorisations``: Cholesky factorisations of the classifiers (their cost; benchmarks/ireos.py)."""

    best: int
    order: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    n_fits: int
    n_objects: int
    stopped_at: np.ndarray
    gamma_max: float
    n_factorisations: int = 0


@workers_renamed_from("n_jobs")
def ireos_select(X: Any, solutions: Sequence[Any], *, m_cl: Any = _D.m_cl, C: float = _D.C,
                 gamma_max: float | None = _D.gamma_max, gamma_max_quantile: float = _D.gamma_max_quantile,
                 quadrature: str = _D.quadrature, n_gamma: int = _D.n_gamma,
                 tol: float = _D.tol, max_depth: int = _D.max_depth, knn: int | str | None = _D.knn,
                 exact_max_objects: int = _D.exact_max_objects, weights: Any = "gaussian",
                 top_n: int | None = None, batch: int = 16, workers: int = 1,
                 progress: Progress | None = None, executor: Any = None,
                 classifier: str = _D.classifier) -> SelectResult:
    """Rank candidate solutions by IREOS, computing separabilities in decreasing order of weight and stopping a
    candidate once its interval [I_partial, I_max] is disjoint from every other active candidate's interval, so
    its rank can no longer change (Sect. 3.5.2; I_max assumes separability 1 for the unprocessed objects).
    ``batch`` objects per candidate are processed per round. Parameters as :func:`ireos`.

    The ranking equals the ranking by the full index (ties aside), computed with the same quadrature.
    ``knn="auto"`` (default) as in :func:`ireos`: the kNN-subset approximation above ``exact_max_objects``.
    """
    _check_options(quadrature, n_gamma, tol, gamma_max_quantile)
    knn, _ = _auto_knn(X, knn, exact_max_objects)
    Xc, mcl, W, _kinds = _prepare(X, solutions, m_cl=m_cl, C=C, weights=weights, top_n=top_n, gamma_max=gamma_max,
                                 knn=knn)
    S, _N = W.shape
    shared = mcl == 1.0
    engine = _Engine(Xc, _cost_vectors(W, mcl, C), C=float(C), knn=knn, workers=workers, tol=tol, progress=progress,
                     executor=executor, classifier=classifier)
    try:
        if gamma_max is None:
            tasks = _gamma_max_tasks(engine, W, shared, Xc, classifier, float(C))[0]
            gamma_max, _ = find_gamma_max(engine, tasks, start=1.0 / (1000.0 * Xc.shape[1]),
                                          quantile=gamma_max_quantile)
        gamma_max = float(gamma_max)
        Wn = W / W.sum(axis=1, keepdims=True)
        orders = [np.argsort(-W[s], kind="stable")[: int((W[s] > 0).sum())] for s in range(S)]
        pos = np.zeros(S, dtype=np.int64)
        lower = np.zeros(S)
        upper = np.ones(S)
        active = np.ones(S, bool)
        stopped_at = np.full(S, -1, dtype=np.int64)
        A: dict[tuple[int, int], float] = {}
        while active.any():
            tasks = []
            for s in np.flatnonzero(active):
                for j in orders[s][pos[s]:pos[s] + batch]:
                    t = (int(j), 0 if shared else s)
                    if t not in A:
                        tasks.append(t)
            tasks = list(dict.fromkeys(tasks))
            for t, a in zip(tasks, _areas(engine, tasks, gamma_max, quadrature, n_gamma, tol, max_depth), strict=True):
                A[t] = float(a)
            for s in np.flatnonzero(active):
                pos[s] = min(pos[s] + batch, orders[s].size)
                done = orders[s][:pos[s]]
                part = sum(Wn[s, j] * A[(int(j), 0 if shared else s)] for j in done)
                lower[s] = part
                upper[s] = part + Wn[s, orders[s][pos[s]:]].sum()
            for s in np.flatnonzero(active):
                others = [o for o in range(S) if o != s]
                disjoint = all(lower[s] > upper[o] or upper[s] < lower[o] for o in others)
                if disjoint or pos[s] >= orders[s].size:
                    active[s] = False
                    stopped_at[s] = pos[s]
        mid = (lower + upper) / 2
        order = np.argsort(-mid, kind="stable")
        return SelectResult(best=int(order[0]), order=order, lower=lower, upper=upper, n_fits=engine.n_fits,
                            n_objects=len(A), stopped_at=stopped_at, gamma_max=gamma_max,
                            n_factorisations=engine.n_factorisations)
    finally:
        engine.close()
