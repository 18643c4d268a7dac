"""The benchmark protocol of Goix (2016), chapter "How to Evaluate the Quality of Anomaly Detection Algorithms?".

The chapter compares EM / MV (:func:`odeval.labelfree.emmv`) with ROC / PR AUC on labelled data sets split into
training and test halves: :func:`chapter_split` prepares the data of one setting (novelty or unsupervised),
:func:`evaluate_split` evaluates one detector on it (EM/MV on the evaluated objects, ROC / PR on the labelled
test half). ``odeval emmv`` and ``benchmarks/emmv_chapter.py`` run it. See docs/emmv.md.

References
----------
Goix, N. (2016). PhD thesis, Télécom ParisTech, chapter "How to Evaluate the Quality of Anomaly Detection
Algorithms?", § Benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from odeval._validation import check_data_matrix
from odeval.executor import workers_renamed_from
from odeval.labelfree.emmv_algorithm import EMMVResult, EMMVSettings, emmv, make_detector

__all__ = ["ChapterEvaluation", "ChapterSplit", "chapter_split", "continuous_features", "evaluate_dataset",
           "evaluate_split", "OCSVM_MAX_TRAIN"]

OCSVM_MAX_TRAIN = 10_000  # the authors' ``ocsvm_max_train`` (EMMV_benchmarks): OCSVM fitted on ≤ 10,000 objects

def continuous_features(X: np.ndarray, min_distinct: int = 10) -> np.ndarray:
    """Indices of the attributes with at least ``min_distinct`` distinct values (the chapter removes
    "non-continuous attributes as well as attributes taking less than 10 different values")."""
    X = np.asarray(X)
    return np.array([j for j in range(X.shape[1]) if np.unique(X[:, j]).size >= min_distinct], dtype=np.int64)


@dataclass(frozen=True)
class ChapterSplit:
    """Train / evaluation data of one setting of the chapter's benchmark.

    ``X_train``: what the detector is fitted on; ``X_eval``: the objects of the EM/MV criteria (novelty: the
    normal test objects; unsupervised: the whole test half); ``X_test`` / ``y_test``: the labelled test half
    for ROC / PR (``y_test`` None for unlabelled data); ``features``: the kept attribute indices of the input;
    ``bounds``: ``(lower, upper)`` of all the prepared objects, both halves and anomalies included — the box of
    the authors' ``em_bench.py`` (EMMV_benchmarks), which :func:`evaluate_split` passes to
    :func:`~odeval.labelfree.emmv` as ``data_bounds`` (used by ``box="author"`` with the standard criteria).
    """

    X_train: np.ndarray
    X_eval: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray | None
    features: np.ndarray
    n_outliers_dropped: int
    bounds: tuple[np.ndarray, np.ndarray] | None = None


def chapter_split(X: Any, y: Any, *, setting: str = "novelty", seed: int = 0, max_outlier_ratio: float | None = 0.1,
                  min_distinct: int = 10, standardize: bool = True, split: bool = True) -> ChapterSplit:
    """The chapter's preparation (§ Benchmarks): cap, feature removal, standardisation, 50/50 split.

    1. Outliers capped at ``max_outlier_ratio`` × #inliers (a seeded random subset is kept; None: no cap).
    2. Attributes with fewer than ``min_distinct`` distinct values removed (0: keep all).
    3. Standardisation (zero mean, unit variance over the kept objects; constant attributes are left as they
       are and then rejected by :func:`emmv`).
    4. Seeded shuffle, first half = training, second half = test (``split=False``: train = test = all).
    Novelty: fit on the normal training objects, EM/MV on the normal test objects. Unsupervised: fit on the
    polluted training half, EM/MV on the polluted test half (the chapter: "the same test data used for ROC and
    PR"); with ``split=False``, fit and evaluate on the same polluted data.

    ``y`` None (unlabelled data): only the unsupervised setting, which needs no labels; the outlier cap (step 1)
    is skipped and ``y_test`` is None.
    """
    if setting not in ("novelty", "unsupervised"):
        raise ValueError(f"setting must be 'novelty' or 'unsupervised', got {setting!r}")
    X = check_data_matrix(X, name="X")
    labelled = y is not None
    if not labelled and setting == "novelty":
        raise ValueError("the data set has no labels: the novelty setting fits on the normal objects and needs them "
                         "(the unsupervised setting does not)")
    y = np.asarray(y).astype(bool).reshape(-1) if labelled else np.zeros(X.shape[0], dtype=bool)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"labels ({y.shape[0]}) and objects ({X.shape[0]}) differ in number")
    rng = np.random.default_rng(seed)
    keep = np.ones(X.shape[0], dtype=bool)
    dropped = 0
    if max_outlier_ratio is not None and labelled:
        out = np.flatnonzero(y)
        cap = int(np.floor(max_outlier_ratio * int((~y).sum())))
        if out.size > cap:
            drop = rng.choice(out, size=out.size - cap, replace=False)
            keep[drop] = False
            dropped = int(drop.size)
    X, y = X[keep], y[keep]
    feats = continuous_features(X, min_distinct) if min_distinct > 0 else np.arange(X.shape[1])
    if feats.size == 0:
        raise ValueError(f"no attribute has at least {min_distinct} distinct values (min_distinct)")
    X = X[:, feats]
    if standardize:
        sd = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    bounds = (X.min(axis=0), X.max(axis=0))  # all the data, anomalies included (em_bench.py's box)
    if split:
        order = rng.permutation(X.shape[0])
        half = X.shape[0] // 2
        tr, te = order[:half], order[half:]
    else:
        tr = te = np.arange(X.shape[0])
    if te.size == 0:
        raise ValueError("empty test split: too few objects")
    X_train, y_train, X_test, y_test = X[tr], y[tr], X[te], y[te]
    if setting == "novelty":
        if not split:
            raise ValueError("the novelty setting needs a train/test split")
        X_train, X_eval = X_train[~y_train], X_test[~y_test]
    else:
        X_eval = X_test
    if X_eval.shape[0] == 0:
        raise ValueError("empty test split: no (normal) test objects to evaluate")
    return ChapterSplit(X_train=X_train, X_eval=X_eval, X_test=X_test, y_test=y_test if labelled else None,
                        features=feats, n_outliers_dropped=dropped, bounds=bounds)


@workers_renamed_from("n_jobs")
def evaluate_split(name: str, split: ChapterSplit, *, k: int = 20, seed: int = 0, draws: int = EMMVSettings.draws,
                   features: int = EMMVSettings.features, max_dim: int = EMMVSettings.max_dim,
                   n_generated: int = EMMVSettings.n_generated, box: str = EMMVSettings.box,
                   sampling: str = EMMVSettings.sampling, integration: str = "grid", max_train: int | None = None,
                   workers: int = 1, executor: Any = None,
                   progress: Callable[[int, int], None] | None = None) -> tuple[EMMVResult, dict[str, float]]:
    """EM/MV (:func:`emmv`) and ROC / PR AUC (labels of the test half) of one detector on a :class:`ChapterSplit`.

    ``workers`` (formerly ``n_jobs``, deprecated) and ``executor`` as for :func:`emmv`. ``max_train``: fit on a
    seeded random subset of at most this many training objects (default: 10,000 for "ocsvm", as the authors'
    code; None otherwise). ``box`` (:attr:`~odeval.labelfree.emmv_algorithm.EMMVSettings.box`): "author" boxes
    all the prepared data (``split.bounds``) for the standard criteria and each draw's evaluated objects when
    sub-sampling, as the authors' code. ROC AUC = :func:`odeval.measures.roc_auc`, PR =
    :func:`odeval.measures.average_precision` of the detector fitted on all kept features.
    """
    from odeval.measures import average_precision, roc_auc

    if max_train is None and name.lower() == "ocsvm":
        max_train = OCSVM_MAX_TRAIN
    X_train = split.X_train
    if max_train is not None and X_train.shape[0] > max_train:
        rows = np.sort(np.random.default_rng(seed).choice(X_train.shape[0], size=max_train, replace=False))
        X_train = X_train[rows]
    det = make_detector(name, k=k, seed=seed)
    same = split.X_eval is split.X_train or (split.X_eval.shape == X_train.shape and
                                             np.array_equal(split.X_eval, X_train))
    res = emmv(det, X_train, None if same else split.X_eval, draws=draws, features=features, max_dim=max_dim,
               n_generated=n_generated, box=box, sampling=sampling, seed=seed, integration=integration,
               data_bounds=split.bounds, workers=workers, progress=progress, executor=executor)
    labelled: dict[str, float] = {}
    y = split.y_test
    if y is not None and y.any() and not y.all():
        det.fit(X_train)
        s = det.score_fitted() if same and hasattr(det, "score_fitted") else det.score(split.X_test)
        labelled = {"roc_auc": float(roc_auc(y, s)), "average_precision": float(average_precision(y, s))}
    return res, labelled


@dataclass(frozen=True)
class ChapterEvaluation:
    """One detector evaluated on one data file by the chapter's protocol (:func:`evaluate_dataset`).

    ``dataset``: the file name; ``setting``: "novelty" or "unsupervised"; ``split``: the prepared data;
    ``result``: EM and MV; ``labelled``: ROC / PR AUC of the test half (empty without both classes there);
    ``integration``: the integration of the criteria; ``label_note``: why the file was read without labels.
    """

    dataset: str
    setting: str
    split: ChapterSplit = field(repr=False)
    result: EMMVResult = field(repr=False)
    labelled: dict[str, float]
    integration: str
    label_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary: :meth:`EMMVResult.to_dict`, the labelled measures and the setting."""
        return self.result.to_dict() | self.labelled | {"dataset": self.dataset, "setting": self.setting,
                                                        "attributes": self.split.features.size,
                                                        "integration": self.integration}


@workers_renamed_from("n_jobs")
def evaluate_dataset(path: str | Path, detector: str, *, k: int = 20, setting: str | None = None, split: bool = True,
                     settings: EMMVSettings | None = None, integration: str = "grid",
                     max_outlier_ratio: float | None = 0.1, min_distinct: int = 10, seed: int = 0, workers: int = 1,
                     executor: Any = None, progress: Callable[[int, int], None] | None = None) -> ChapterEvaluation:
    """Load a data file, prepare it (:func:`chapter_split`) and evaluate one detector on it
    (:func:`evaluate_split`) with the EM/MV ``settings`` (:class:`~odeval.labelfree.emmv_algorithm.EMMVSettings`;
    default: its defaults). ``progress(done, total)`` is called after each feature draw.

    EM/MV need no labels: a file without the default label attribute is read unlabelled (``label_note``), and
    ``setting`` None chooses "novelty" for labelled data (the chapter's first setting) and "unsupervised" for
    unlabelled data (novelty needs the labels to fit on the normal objects; asking for it is an error).
    """
    from odeval.data import label_note, load_dataset

    settings = EMMVSettings() if settings is None else settings
    ds = load_dataset(path, require_labels=False)
    if setting is None:
        setting = "novelty" if ds.y is not None else "unsupervised"
    try:
        sp = chapter_split(ds.numeric_matrix(), ds.y, setting=setting, seed=seed,
                           max_outlier_ratio=max_outlier_ratio, min_distinct=min_distinct, split=split)
    except ValueError as exc:  # the data cannot be prepared: say which file
        raise ValueError(f"{path}: {exc}") from None
    d = sp.features.size
    if d > settings.max_dim and settings.features > d:
        raise ValueError(f"features (d') = {settings.features} exceeds the {d} attributes kept")
    res, labelled = evaluate_split(detector, sp, k=k, seed=seed, integration=integration, workers=workers,
                                   executor=executor, progress=progress, **settings.kwargs())
    return ChapterEvaluation(Path(path).name, setting, sp, res, labelled, integration, label_note(ds))
