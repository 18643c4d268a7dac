"""A meta-learned label-free selector: predict from a table's meta-features which candidate beats kNN k = 10.

The model is trained on labelled results (the candidates' ROC AUC on many datasets; ``benchmarks/meta_train.py``)
and applied to a new table through label-free meta-features only (:mod:`odeval.labelfree.metafeatures`). For a
table with meta-features f it predicts, for every candidate c of a fixed grid (:data:`GRID_METHODS` × :data:`GRID_KS`,
the pool of docs/model-selection.md thinned in k), the *gain* g_c(f) = ROC AUC(c) − ROC AUC(kNN, k = 10) the
candidate had on training tables like it; it picks argmax_c g_c(f) when that predicted gain exceeds a margin, else
kNN with k = 10 (the default no label-free selector beat on the Campos collection). This is MetaOD's question
(Zhao, Rossi and Akoglu, NeurIPS 2021, §3: which model, given meta-features, from performance on historical
datasets) with a simpler regressor, chosen by nested leave-one-base-dataset-out validation
(:mod:`odeval.analysis.meta`):

* ``forest``: a multi-output random forest regressor (Breiman 2001; scikit-learn, seeded, no bootstrap, so
  that each leaf's value is the weighted mean gain of the training tables in it). Shipped without pickle: the
  trees' split arrays and the leaf each training table falls in; a prediction averages, over the trees, the
  weighted mean gain vector of the training tables sharing the query's leaf (equal to scikit-learn's
  ``predict``, tested).
* ``neighbors``: the weighted mean gain vector of the m nearest training tables in standardised meta-feature
  space (the similarity-based baseline of MetaOD's §4, "ISAC/ARGOSMART"-like).
* ``fixed``: the candidate with the largest weighted mean gain over the training tables (a learned default).

Attempt 2 (pre-registered in ``benchmarks/meta_attempt2.md`` before it was run) adds:

* ``default``: kNN k = 10 always (abstention; lets a nested choice shrink all the way to the default).
* ``lowrank``: MetaOD's model (Zhao, Rossi and Akoglu 2021, §3.2–3.4) with a squared loss: the training gain
  matrix is factorised by a weighted truncated SVD of rank r, G ≈ 1 μᵀ + U Vᵀ (U = (G − 1 μᵀ) V, V the first r
  right singular vectors of diag(√w) (G − 1 μᵀ)); a random forest maps the meta-features to the latent factors
  U (as MetaOD's implementation does), and the predicted gain is μ + Û Vᵀ. Stored exactly like ``forest``: the
  trees are fitted on U, and ``train_gain`` holds the rank-r reconstruction μ + U Vᵀ, whose weighted leaf mean
  equals μ + (the forest's prediction of U) Vᵀ (linear in U; tested against scikit-learn).
* ``winprob``: a pairwise objective against the default (the pairwise view of learning to rank, Burges et al.,
  ICML 2005): the forest is fitted on the win indicators 1[gain > 0], so a leaf's weighted mean is the estimated
  probability P(candidate beats kNN k = 10 | meta-features); the pick is the candidate with the largest
  probability when it exceeds the margin τ (the margin is a probability here).

Training tables are weighted 1 / (number of variants of their base dataset), so a base dataset with 40 downsampled
variants counts as much as one with one file. Everything is deterministic (the forest's seed is stored).

The shipped model (:data:`MODEL_FILE`, an ``.npz`` read with ``allow_pickle=False``) records the store hash and
the script that built it; :func:`load_model` reads it, :class:`MetaModel` predicts, and the registered selector
``meta`` (:mod:`odeval.labelfree.selection`) picks among the candidates it is given.

References
----------
Y. Zhao, R. A. Rossi, L. Akoglu. Automatic unsupervised outlier model selection. NeurIPS 2021 (MetaOD).
L. Breiman. Random forests. Machine Learning 45, 2001.
C. Burges et al. Learning to rank using gradient descent. ICML 2005 (pairwise objectives).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["GRID_KS", "GRID_METHODS", "MODEL_FILE", "MetaConfig", "MetaModel", "fit_meta_model", "grid_candidates",
           "load_model", "low_rank", "meta_pick", "validated"]

MODEL_FILE = Path(__file__).resolve().parent / "data" / "meta_selector.npz"
GRID_METHODS: tuple[str, ...] = ("kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "KDEOS", "COF",
                                 "FastABOD", "LDF", "INFLO")
GRID_KS: tuple[int, ...] = (1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100)
#: The candidate the gain is measured against and the pick when no gain is predicted.
REFERENCE = ("kNN", 10)


def grid_candidates() -> list[tuple[str, int]]:
    """The (method, k) grid the model predicts the gain of."""
    return [(m, k) for m in GRID_METHODS for k in GRID_KS]


@dataclass(frozen=True)
class MetaConfig:
    """One model configuration (the nested validation chooses among several).

    Attributes
    ----------
    kind : {"forest", "neighbors", "fixed", "default", "lowrank", "winprob"}
    margin : float
        Pick the best predicted candidate only when its predicted gain over kNN k = 10 (``winprob``: its
        estimated probability of beating kNN k = 10) exceeds this.
    n_trees, min_leaf, max_features : forest settings (also of ``lowrank`` and ``winprob``)
    n_neighbors : neighbors setting
    seed : int
    rank : int
        Rank r of the ``lowrank`` factorisation.
    """

    kind: str = "forest"
    margin: float = 0.0
    n_trees: int = 100
    min_leaf: int = 5
    max_features: float = 0.33
    n_neighbors: int = 10
    seed: int = 0
    rank: int = 0

    def label(self) -> str:
        body = {"forest": f"forest(leaf={self.min_leaf})", "neighbors": f"neighbors(m={self.n_neighbors})",
                "fixed": "fixed", "default": "default", "lowrank": f"lowrank(r={self.rank},leaf={self.min_leaf})",
                "winprob": f"winprob(leaf={self.min_leaf})"}[self.kind]
        if self.kind == "default":
            return body
        return f"{body},{'tau' if self.kind == 'winprob' else 'margin'}={self.margin:g}"


@dataclass
class MetaModel:
    """A fitted meta-model: predicts the gain over kNN k = 10 of every grid candidate from meta-features.

    Attributes
    ----------
    config : MetaConfig
    candidates : list of (method, k)
    feature_names : tuple of str
    center, scale : ndarray (F,)
        Standardisation of the features (neighbors).
    train_features : ndarray (n, F)
    train_gain : ndarray (n, R)
        What a prediction averages over training tables: the gain (``forest``, ``neighbors``, ``fixed``), its
        rank-r reconstruction (``lowrank``) or the win indicators 1[gain > 0] (``winprob``).
    train_weight : ndarray (n,)
    trees : list of dict
        Per tree: ``feature``, ``threshold``, ``left``, ``right`` (scikit-learn's arrays; leaves have left = −1)
        and ``train_leaf`` (the leaf of each training table).
    meta : dict
        Provenance (store hash, script, validation summary).
    """

    config: MetaConfig
    candidates: list[tuple[str, int]]
    feature_names: tuple[str, ...]
    center: np.ndarray
    scale: np.ndarray
    train_features: np.ndarray
    train_gain: np.ndarray
    train_weight: np.ndarray
    trees: list[dict[str, np.ndarray]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def predict_gain(self, features: Any) -> np.ndarray:
        """(q, R) predicted gain over kNN k = 10 of every candidate for q feature vectors (or (R,) for one)."""
        F = np.asarray(features, dtype=np.float64)
        one = F.ndim == 1
        F = np.atleast_2d(F)
        G, w = self.train_gain, self.train_weight
        if self.config.kind == "default":
            out = np.zeros((F.shape[0], G.shape[1]))  # never above a margin ≥ 0: always kNN k = 10
        elif self.config.kind == "fixed":
            out = np.repeat((w @ G / w.sum())[None, :], F.shape[0], axis=0)
        elif self.config.kind == "neighbors":
            Z = (F - self.center) / self.scale
            T = (self.train_features - self.center) / self.scale
            out = np.empty((F.shape[0], G.shape[1]))
            for q, z in enumerate(Z):
                dist = np.sqrt(((T - z) ** 2).sum(axis=1))
                nn = np.argsort(dist, kind="stable")[: self.config.n_neighbors]
                out[q] = w[nn] @ G[nn] / w[nn].sum()
        else:
            out = np.zeros((F.shape[0], G.shape[1]))
            for tree in self.trees:
                leaves = _apply_tree(tree, F)
                for q, leaf in enumerate(leaves):
                    members = tree["train_leaf"] == leaf
                    out[q] += w[members] @ G[members] / w[members].sum()
            out /= len(self.trees)
        return out[0] if one else out

    def choose(self, features: Any, available: Sequence[tuple[str, int]] | None = None
               ) -> tuple[tuple[str, int], float]:
        """The pick and its predicted gain: the best predicted candidate among ``available`` (default: the grid)
        if its gain exceeds the margin, else kNN k = 10 (gain 0)."""
        gain = self.predict_gain(features)
        allowed = None if available is None else {(m.lower(), int(k)) for m, k in available}
        for i in np.argsort(-gain, kind="stable"):
            m, k = self.candidates[i]
            if allowed is None or (m.lower(), k) in allowed:  # the best predicted candidate on offer
                return ((m, k), float(gain[i])) if gain[i] > self.config.margin else (REFERENCE, 0.0)
        return REFERENCE, 0.0


def _apply_tree(tree: dict[str, np.ndarray], F: np.ndarray) -> np.ndarray:
    """The leaf of each row of F (scikit-learn's rule: go left when x[feature] <= threshold)."""
    out = np.empty(F.shape[0], dtype=np.int64)
    left, right, feat, thr = tree["left"], tree["right"], tree["feature"], tree["threshold"]
    for q in range(F.shape[0]):
        node = 0
        while left[node] != -1:
            node = left[node] if F[q, feat[node]] <= thr[node] else right[node]
        out[q] = node
    return out


def fit_meta_model(features: np.ndarray, gain: np.ndarray, weight: np.ndarray, config: MetaConfig,
                   candidates: Sequence[tuple[str, int]], feature_names: Sequence[str],
                   meta: dict[str, Any] | None = None) -> MetaModel:
    """Fit one configuration on training tables (features (n, F), gain (n, R), weight (n,)); deterministic."""
    X = np.asarray(features, dtype=np.float64)
    G = np.asarray(gain, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    center = X.mean(axis=0)
    scale = X.std(axis=0)
    scale[scale == 0] = 1.0
    trees: list[dict[str, np.ndarray]] = []
    if config.kind == "forest":
        trees = _fit_forest(X, G, w, config)
    elif config.kind == "lowrank":
        G, latent = low_rank(G, w, config.rank)
        trees = _fit_forest(X, latent, w, config)
    elif config.kind == "winprob":
        G = (G > 0).astype(np.float64)
        trees = _fit_forest(X, G, w, config)
    elif config.kind not in ("neighbors", "fixed", "default"):
        raise ValueError(f"unknown meta-model kind {config.kind!r}; use 'forest', 'neighbors', 'fixed', 'default', "
                         "'lowrank' or 'winprob'")
    return MetaModel(config, [(str(m), int(k)) for m, k in candidates], tuple(feature_names), center, scale, X, G, w,
                     trees, dict(meta or {}))


def _fit_forest(X: np.ndarray, Y: np.ndarray, w: np.ndarray, config: MetaConfig) -> list[dict[str, np.ndarray]]:
    """A seeded multi-output regression forest of Y on X, kept as split arrays plus each training row's leaf."""
    from sklearn.ensemble import RandomForestRegressor

    rf = RandomForestRegressor(n_estimators=config.n_trees, min_samples_leaf=config.min_leaf,
                               max_features=config.max_features, bootstrap=False, random_state=config.seed,
                               n_jobs=1)
    rf.fit(X, Y, sample_weight=w)
    leaves = rf.apply(X)
    trees = []
    for t, est in enumerate(rf.estimators_):
        tr = est.tree_
        trees.append({"feature": tr.feature.astype(np.int32), "threshold": tr.threshold.astype(np.float64),
                      "left": tr.children_left.astype(np.int32), "right": tr.children_right.astype(np.int32),
                      "train_leaf": leaves[:, t].astype(np.int32)})
    return trees


def low_rank(gain: np.ndarray, weight: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """Weighted truncated SVD of the gain matrix (MetaOD's factorisation, Zhao et al. 2021 §3.2, squared loss).

    Returns the rank-r reconstruction μ + U Vᵀ (n, R) and the latent factors U = (G − 1 μᵀ) V (n, r), where μ is
    the weighted column mean and V the first r right singular vectors of diag(√w) (G − 1 μᵀ), each signed so that
    its largest entry in absolute value is positive (deterministic output).
    """
    G = np.asarray(gain, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    if not 1 <= rank <= min(G.shape):
        raise ValueError(f"low_rank: rank {rank} outside 1..{min(G.shape)} for a {G.shape[0]} x {G.shape[1]} matrix")
    mu = w @ G / w.sum()
    C = G - mu
    _, _, vt = np.linalg.svd(np.sqrt(w)[:, None] * C, full_matrices=False)
    V = vt[:rank].T.copy()
    V *= np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(rank)])
    U = C @ V
    return mu + U @ V.T, U


def save_model(model: MetaModel, path: str | Path) -> Path:
    """Write the model as one ``.npz`` (no pickle): arrays plus a JSON header."""
    header = {"config": model.config.__dict__, "candidates": model.candidates,
              "feature_names": list(model.feature_names), "meta": model.meta, "n_trees": len(model.trees)}
    arrays: dict[str, np.ndarray] = {
        "header": np.frombuffer(json.dumps(header, sort_keys=True).encode("utf-8"), dtype=np.uint8),
        "center": model.center, "scale": model.scale, "train_features": model.train_features,
        "train_gain": model.train_gain, "train_weight": model.train_weight}
    for t, tree in enumerate(model.trees):
        for key, arr in tree.items():
            arrays[f"tree{t}_{key}"] = arr
    path = Path(path)
    with path.open("wb") as fh:
        np.savez_compressed(fh, **arrays)
    return path


def read_model(path: str | Path) -> MetaModel:
    """Read a model written by :func:`save_model` (``allow_pickle=False``)."""
    with np.load(path, allow_pickle=False) as z:
        header = json.loads(z["header"].tobytes().decode("utf-8"))
        trees = [{key: z[f"tree{t}_{key}"] for key in ("feature", "threshold", "left", "right", "train_leaf")}
                 for t in range(header["n_trees"])]
        return MetaModel(MetaConfig(**header["config"]), [(m, int(k)) for m, k in header["candidates"]],
                         tuple(header["feature_names"]), z["center"], z["scale"], z["train_features"],
                         z["train_gain"], z["train_weight"], trees, header["meta"])


@cache
def load_model() -> MetaModel:
    """The shipped model (:data:`MODEL_FILE`), read once; a one-line error when it is missing."""
    if not MODEL_FILE.exists():
        raise FileNotFoundError(f"the meta-selector's model {MODEL_FILE} is missing: build it with "
                                "benchmarks/meta_train.py")
    return read_model(MODEL_FILE)


def meta_pick(X: Any, available: Sequence[tuple[str, int]] | None = None, *, model: MetaModel | None = None
              ) -> tuple[tuple[str, int], float, np.ndarray]:
    """(pick, predicted gain, meta-features) of the table ``X`` with the shipped (or given) model."""
    from odeval.labelfree.metafeatures import FEATURE_NAMES, meta_features

    model = load_model() if model is None else model
    if tuple(model.feature_names) != FEATURE_NAMES:
        raise ValueError("the meta-selector's model was built with other meta-features than "
                         "odeval.labelfree.metafeatures computes: rebuild it with benchmarks/meta_train.py")
    f = meta_features(X)
    pick, gain = model.choose(f, available)
    return pick, gain, f



#: Significance level at which the held-out validation counts as "better than kNN k = 10".
ALPHA = 0.05


def validated(model: MetaModel | None = None) -> bool:
    """True when the (shipped) model's held-out validation beat kNN k = 10: one-sided Wilcoxon over the held-out
    base datasets, p < :data:`ALPHA`. False when there is no model or no validation recorded."""
    try:
        model = load_model() if model is None else model
    except FileNotFoundError:
        return False
    p = model.meta.get("validation", {}).get("p_vs_default_knn10")
    return p is not None and p < ALPHA
