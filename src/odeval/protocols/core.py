"""Train/test evaluation protocols for one-class anomaly detectors (Fourure et al. 2021, §3.3).

* **Algorithm 1** (theoretically unbiased): split D into train and test (test share β); train on the normal
  training objects only; normalise on them; the threshold comes from the contamination *of the training set*
  (the training anomalies are scored and then thrown away).
* **Algorithm 2** (recycling): the same split, but the training anomalies are moved into the test set and the
  threshold comes from the contamination *of the test set* — so as many objects are predicted anomalous as
  there are anomalies, and precision = recall = F1 (§3.2).

Thresholds (prediction: ``score >= t``):

* ``"estimated"``: ``t = quantile(reference scores, 1 − α)`` (linear interpolation, ``np.percentile`` as the
  authors' code), α the contamination of the reference set — the scored training set (Algorithm 1) or the test
  set (Algorithm 2). With distinct scores exactly ``round(α · n_ref)`` reference objects lie at or above t.
* ``"optimal"``: the F1-optimal threshold on the test set (Table 1, last column), chosen among the distinct
  test scores so a tie group is never split (:func:`odeval.measures.max_f1_threshold`; the authors' sweep
  moves one object at a time and can split ties).

Every run is seeded: :func:`run_seeds` derives the run seeds from one seed with
``np.random.SeedSequence(seed).spawn(runs)``; a run's split and the detector's ``random_state`` come from its run
seed only, so results are bit-identical whatever the number of parallel workers.

References
----------
Fourure, D., Javaid, M. U., Posocco, N., Tihon, S. (2021). Anomaly detection: how to artificially increase
your F1-score with a biased evaluation protocol. ECML PKDD (Applied Data Science track). Algorithms 1 and 2,
§3.2 (P = R = F1), §3.5 and Table 1.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from odeval._validation import check_data_matrix, check_labels, check_returned_scores
from odeval.executor import check_workers, open_executor, workers_renamed_from
from odeval.measures import (
    adjusted_average_precision,
    avpr,
    max_f1_threshold,
    precision_recall_f1_at_threshold,
    roc_auc,
)

__all__ = [
    "SETTINGS",
    "METRICS",
    "Setting",
    "RunResult",
    "check_scorer",
    "check_test_size",
    "estimated_threshold",
    "fit_normalizer",
    "run_protocol",
    "run_seeds",
    "repeat_protocol",
    "protocol_table",
    "split_train_test",
    "summarize",
]

#: Metrics summarised per setting (Table 1 of the paper; ``adjusted_ap`` in addition).
METRICS: tuple[str, ...] = ("f1", "avpr", "auc", "adjusted_ap", "precision", "recall")
_NORMALIZATIONS = ("minmax", "zscore", None)


@dataclass(frozen=True)
class Setting:
    """One column of Table 1: the algorithm (1 or 2), the test share β and the threshold kind."""

    name: str
    algorithm: int
    test_size: float
    threshold: str


#: The four settings of Fourure et al. (2021), Table 1.
SETTINGS: tuple[Setting, ...] = (
    Setting("alg1-20-estimated", 1, 0.20, "estimated"),
    Setting("alg2-20-estimated", 2, 0.20, "estimated"),
    Setting("alg2-5-estimated", 2, 0.05, "estimated"),
    Setting("alg2-5-optimal", 2, 0.05, "optimal"),
)


@dataclass(frozen=True)
class RunResult:
    """The outcome of one protocol run.

    ``contamination`` is α used for the threshold (training set for Algorithm 1, test set for Algorithm 2, the
    test set for ``"optimal"``); ``test_contamination`` the share of anomalies in the evaluated test set.
    """

    setting: str
    run: int
    seed: int
    algorithm: int
    test_size: float
    threshold_kind: str
    threshold: float
    contamination: float
    test_contamination: float
    n_test: int
    n_test_anomalies: int
    f1: float
    precision: float
    recall: float
    avpr: float
    auc: float
    adjusted_ap: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------------------------------
# validation and small pieces
# ---------------------------------------------------------------------------------------------------------------------


def check_test_size(test_size: Any) -> float:
    """β must be a number strictly between 0 and 1."""
    if isinstance(test_size, bool) or not isinstance(test_size, int | float | np.integer | np.floating):
        raise ValueError(f"test_size β must be a number in (0, 1), got {test_size!r}")
    beta = float(test_size)
    if not 0.0 < beta < 1.0:
        raise ValueError(f"test_size β must lie in (0, 1) (exclusive), got {beta}")
    return beta


def check_scorer(scorer: Any) -> Any:
    """A scorer has ``fit(X_train)`` and ``score(X_test)``; a factory is a callable ``seed -> scorer``."""
    if callable(getattr(scorer, "fit", None)) and callable(getattr(scorer, "score", None)):
        return scorer
    if callable(scorer) and not hasattr(scorer, "fit"):
        return scorer
    raise ValueError(f"detector {type(scorer).__name__} has no fit/score methods: a protocol needs an object with "
                     "fit(X_train) and score(X_test) (odeval.detectors.NoveltyDetector, "
                     "odeval.detectors.wrap_estimator) or a factory seed -> such an object")


def _instantiate(scorer: Any, seed: int) -> Any:
    """The run's scorer: a factory is called with the run seed; an object is copied (never shared state)."""
    if callable(getattr(scorer, "fit", None)) and callable(getattr(scorer, "score", None)):
        return copy.deepcopy(scorer)
    made = scorer(seed)
    if not (callable(getattr(made, "fit", None)) and callable(getattr(made, "score", None))):
        raise ValueError(f"the detector factory returned {type(made).__name__}, which has no fit/score methods")
    return made


def run_seeds(seed: int, runs: int) -> list[int]:
    """Independent 32-bit run seeds from one seed (``np.random.SeedSequence(seed).spawn(runs)``)."""
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if isinstance(runs, bool) or not isinstance(runs, int | np.integer) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    return [int(c.generate_state(1)[0]) for c in np.random.SeedSequence(int(seed)).spawn(int(runs))]


def split_train_test(y: Any, test_size: float, seed: int, *, stratify: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Random train/test split of object indices (``split_train_test(D, β)`` of Algorithms 1–2).

    Without stratification ``ceil(β · N)`` objects go to the test set (scikit-learn's ``train_test_split``
    convention); with stratification ``ceil(β · N_c)`` objects of each class c. Both index arrays are sorted.
    """
    y = check_labels(y, require_both=False)
    beta = check_test_size(test_size)
    rng = np.random.default_rng(seed)
    n = y.shape[0]
    if stratify:
        test = []
        for cls in (False, True):
            idx = np.flatnonzero(y == cls)
            take = math.ceil(beta * idx.size) if idx.size else 0
            test.append(rng.permutation(idx)[:take])
        test_idx = np.sort(np.concatenate(test))
    else:
        test_idx = np.sort(rng.permutation(n)[:math.ceil(beta * n)])
    mask = np.zeros(n, dtype=bool)
    mask[test_idx] = True
    return np.flatnonzero(~mask), test_idx


def fit_normalizer(X_clean: np.ndarray, method: str | None) -> Callable[[np.ndarray], np.ndarray]:
    """A normaliser fitted on the clean training data only ("Normalise the data based on X_clean").

    ``"minmax"`` (the authors' choice): ``(x − min) / (max − min)``; ``"zscore"``: ``(x − mean) / std``
    (population std); constant attributes are only shifted. ``None``: identity.
    """
    if method not in _NORMALIZATIONS:
        raise ValueError(f"normalize must be one of 'minmax', 'zscore' or None, got {method!r}")
    if method is None:
        return lambda X: X
    if method == "minmax":
        offset = X_clean.min(axis=0)
        scale = X_clean.max(axis=0) - offset
    else:
        offset = X_clean.mean(axis=0)
        scale = X_clean.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    return lambda X: (X - offset) / scale


def estimated_threshold(reference_scores: np.ndarray, contamination: float) -> float:
    """``t = quantile(reference_scores, 1 − α)`` (linear interpolation, as ``np.percentile``).

    Objects with ``score >= t`` are predicted anomalous; on the reference set itself (distinct scores) these are
    exactly ``round(α · n)`` objects, which is the "fp = fn" threshold when α is the reference set's true
    contamination (Fourure et al. 2021, §3.2).
    """
    if not 0.0 <= contamination <= 1.0:
        raise ValueError(f"contamination must lie in [0, 1], got {contamination}")
    return float(np.quantile(reference_scores, 1.0 - contamination))


def _scores(scorer: Any, X: np.ndarray, where: str) -> np.ndarray:
    return check_returned_scores(scorer.score(X), X.shape[0], where=f"{where}: the detector")


def _measures(setting: Setting, run: int, seed: int, y_test: np.ndarray, s_test: np.ndarray,
              threshold: float, contamination: float) -> RunResult:
    if setting.threshold == "optimal":
        threshold, prf = max_f1_threshold(y_test, s_test)
        contamination = float(y_test.mean())
    else:
        prf = precision_recall_f1_at_threshold(y_test, s_test, threshold)
    return RunResult(
        setting=setting.name, run=run, seed=seed, algorithm=setting.algorithm, test_size=setting.test_size,
        threshold_kind=setting.threshold, threshold=float(threshold), contamination=float(contamination),
        test_contamination=float(y_test.mean()), n_test=int(y_test.size), n_test_anomalies=int(y_test.sum()),
        f1=float(prf.f1), precision=float(prf.precision), recall=float(prf.recall),
        avpr=avpr(y_test, s_test), auc=roc_auc(y_test, s_test), adjusted_ap=adjusted_average_precision(y_test, s_test),
    )


def _one_split(X: np.ndarray, y: np.ndarray, scorer: Any, settings: Sequence[Setting], test_size: float, run: int,
               seed: int, stratify: bool, normalize: str | None) -> list[RunResult]:
    """Fit once on the clean training part of one split, evaluate every setting with that test share."""
    train, test = split_train_test(y, test_size, seed, stratify=stratify)
    where = f"run {run} (seed {seed}, test_size {test_size})"
    y_tr, y_te = y[train], y[test]
    clean = train[~y_tr]
    if clean.size < 2:
        raise ValueError(f"{where}: the training set holds {clean.size} normal object(s); a detector needs more")
    norm = fit_normalizer(X[clean], normalize)
    model = _instantiate(scorer, seed)
    model.fit(norm(X[clean]))
    s_all = _scores(model, norm(X), where)  # one call: every object is scored independently
    s_tr, s_te = s_all[train], s_all[test]
    out = []
    for st in settings:
        if st.algorithm == 1:
            y_eval, s_eval = y_te, s_te
            if not y_eval.any():
                raise ValueError(f"{where}: the split leaves no anomaly in the test set (Algorithm 1); use a larger "
                                 "test_size or a stratified split")
            alpha = float(y_tr.mean())
            ref = s_tr
        else:  # Algorithm 2: recycle the training anomalies into the test set
            y_eval = np.concatenate((y_te, y_tr[y_tr]))
            s_eval = np.concatenate((s_te, s_tr[y_tr]))
            alpha = float(y_eval.mean())
            ref = s_eval
        if y_eval.all():
            raise ValueError(f"{where}: the split leaves no normal object in the test set; use a larger test_size")
        out.append(_measures(st, run, seed, y_eval, s_eval, estimated_threshold(ref, alpha), alpha))
    return out


def _check_inputs(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X = check_data_matrix(X, name="X")
    y = check_labels(y, name="labels")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} objects but labels has {y.shape[0]}")
    return X, y


def _check_settings(settings: Sequence[Setting]) -> list[Setting]:
    out = []
    for st in settings:
        if st.algorithm not in (1, 2):
            raise ValueError(f"setting {st.name!r}: algorithm must be 1 or 2, got {st.algorithm!r}")
        if st.threshold not in ("estimated", "optimal"):
            raise ValueError(f"setting {st.name!r}: threshold must be 'estimated' or 'optimal', got {st.threshold!r}")
        check_test_size(st.test_size)
        out.append(st)
    if not out:
        raise ValueError("no protocol setting given")
    if len({st.name for st in out}) != len(out):
        raise ValueError("protocol setting names must be unique")
    return out


def _table_run(X, y, scorer, settings, run, seed, stratify, normalize) -> list[RunResult]:
    by_size: dict[float, list[Setting]] = {}
    for st in settings:
        by_size.setdefault(st.test_size, []).append(st)
    res: dict[str, RunResult] = {}
    for beta, group in by_size.items():
        for r in _one_split(X, y, scorer, group, beta, run, seed, stratify, normalize):
            res[r.setting] = r
    return [res[st.name] for st in settings]


# ---------------------------------------------------------------------------------------------------------------------
# public entry points
# ---------------------------------------------------------------------------------------------------------------------


def run_protocol(X: Any, y: Any, scorer: Any, *, algorithm: int = 1, test_size: float = 0.2,
                 threshold: str = "estimated", stratify: bool = False, normalize: str | None = "minmax",
                 seed: int = 0) -> RunResult:
    """One run of Algorithm 1 or 2 (Fourure et al. 2021, §3.3).

    Parameters
    ----------
    X : array-like (N, d)
    y : array-like (N,)
        Binary labels (True / 1 = anomaly).
    scorer : object or callable
        ``fit(X_train)`` / ``score(X_test)`` (higher = more anomalous), e.g.
        :class:`odeval.detectors.NoveltyDetector` or :func:`odeval.detectors.wrap_estimator`; or a factory
        ``seed -> scorer`` (called with the run seed). An object is deep-copied before fitting.
    algorithm : {1, 2}
    test_size : float
        β in (0, 1).
    threshold : {"estimated", "optimal"}
    stratify : bool
        Split each class separately.
    normalize : {"minmax", "zscore", None}
        Fitted on the clean training objects only.
    seed : int
        Seeds the split and is passed to a factory.
    """
    X, y = _check_inputs(X, y)
    check_scorer(scorer)
    st = _check_settings([Setting(f"alg{algorithm}-{threshold}", algorithm, check_test_size(test_size), threshold)])
    return _one_split(X, y, scorer, st, st[0].test_size, 0, int(seed), stratify, normalize)[0]


@workers_renamed_from("n_jobs")
def protocol_table(X: Any, y: Any, scorer: Any, *, settings: Sequence[Setting] = SETTINGS, runs: int = 100,
                   seed: int = 0, stratify: bool = False, normalize: str | None = "minmax", workers: int = 1,
                   progress: Callable[[int], None] | None = None, executor: Any = None) -> list[RunResult]:
    """Repeated runs of several protocol settings (by default Table 1 of Fourure et al. 2021).

    Run r uses the seed ``run_seeds(seed, runs)[r]`` for every setting: settings with the same β share the split
    and the fitted model (Algorithms 1 and 2 train on the same clean data), so their differences are paired.

    Parameters
    ----------
    workers : int
        Worker processes (-1 = all cores; formerly ``n_jobs``, deprecated). Results do not depend on it.
    progress : callable, optional
        Called with 1 after every finished run (in run order).
    executor : optional
        Where the runs go (:func:`odeval.executor.get_executor`): default local processes when ``workers`` > 1
        and there is more than one run, else this thread; "threads", a Dask address or ``Client``, or an
        :class:`odeval.executor.Executor` kept open for several calls (:func:`odeval.protocols.audit` does).

    Returns
    -------
    list of RunResult
        ``runs × len(settings)`` results, ordered by run then setting; summarise with :func:`summarize`.
    """
    X, y = _check_inputs(X, y)
    check_scorer(scorer)
    settings = _check_settings(settings)
    seeds = run_seeds(seed, runs)
    out: list[RunResult] = []
    run = functools.partial(_table_task, X=X, y=y, scorer=scorer, settings=settings, stratify=stratify,
                            normalize=normalize)
    with open_executor(_run_executor(executor, workers, runs), workers) as ex:
        for res in ex.imap(run, list(enumerate(seeds))):  # in run order
            out.extend(res)
            if progress is not None:
                progress(1)
    return out


def _run_executor(executor: Any, workers: int, runs: int) -> Any:
    """The executor of ``runs`` independent runs: the one given, else local processes when there are several
    workers and runs (the former joblib default), else this thread."""
    if executor is not None:
        return executor
    return "processes" if check_workers(workers) > 1 and runs > 1 else "serial"


def _table_task(task: tuple[int, int], *, X, y, scorer, settings, stratify, normalize) -> list[RunResult]:
    r, s = task
    return _table_run(X, y, scorer, settings, r, s, stratify, normalize)


@workers_renamed_from("n_jobs")
def repeat_protocol(X: Any, y: Any, scorer: Any, *, algorithm: int = 1, test_size: float = 0.2,
                    threshold: str = "estimated", runs: int = 100, seed: int = 0, stratify: bool = False,
                    normalize: str | None = "minmax", workers: int = 1,
                    progress: Callable[[int], None] | None = None, executor: Any = None) -> list[RunResult]:
    """``runs`` repetitions of one protocol setting; see :func:`protocol_table` and :func:`summarize`."""
    st = Setting(f"alg{algorithm}-{round(check_test_size(test_size) * 100, 6):g}-{threshold}", algorithm,
                 test_size, threshold)
    return protocol_table(X, y, scorer, settings=[st], runs=runs, seed=seed, stratify=stratify, normalize=normalize,
                          workers=workers, progress=progress, executor=executor)


def summarize(results: Sequence[RunResult], metrics: Sequence[str] = ("f1", "avpr", "auc")) -> list[dict[str, Any]]:
    """Mean ± standard deviation (ddof = 1) per setting and metric, in setting order of appearance.

    Returns rows ``{"setting", "metric", "mean", "std", "runs"}`` (std is NaN for a single run).
    """
    order: list[str] = []
    per: dict[str, list[RunResult]] = {}
    for r in results:
        if r.setting not in per:
            order.append(r.setting)
            per[r.setting] = []
        per[r.setting].append(r)
    rows = []
    for name in order:
        for m in metrics:
            if m not in METRICS:
                raise ValueError(f"unknown metric {m!r}; choose from {', '.join(METRICS)}")
            v = np.array([getattr(r, m) for r in per[name]], dtype=np.float64)
            rows.append({"setting": name, "metric": m, "mean": float(v.mean()),
                         "std": float(v.std(ddof=1)) if v.size > 1 else float("nan"), "runs": int(v.size)})
    return rows
