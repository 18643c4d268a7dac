"""Meta-features of an unlabelled table: what a meta-learned selector may know about data before choosing.

:func:`meta_features` describes a table by numbers that need **no labels** and cost little next to scoring the
candidate pool: one exact kNN graph (:func:`odeval.neighbors.knn_graph`, k_max = :data:`GRAPH_K`) and the
twelve methods of Campos et al. (2016) at a few k (:data:`FEATURE_KS`) scored from that one graph
(:func:`odeval.detectors.scoring.score_ks`). The groups follow the meta-feature families of MetaOD (Zhao, Rossi
and Akoglu, NeurIPS 2021, §3.3 and App. B: statistical, landmarker and model-based features) and the agreement
measures of Schubert, Wojdanowski, Zimek and Kriegel (SDM 2012):

* **size** — ``log_n``, ``log_d``, ``log_n_over_d``.
* **duplicates** — ``dup_rate``: fraction of objects that repeat an earlier object exactly.
* **attribute statistics** (MetaOD App. B, "statistical"; each a summary over the attributes):
  ``skew_mean`` / ``skew_max`` (|Fisher skewness|), ``kurt_mean`` (excess kurtosis, log1p of its absolute value),
  ``zero_frac`` (fraction of exact zeros), ``distinct_frac`` (distinct values / N), ``binary_frac`` (attributes
  with two distinct values), ``corr_abs_mean`` (mean |Pearson correlation| between attributes).
* **intrinsic dimensionality** — ``id_mle``: the maximum-likelihood estimator of Levina and Bickel (NIPS 2004,
  Eq. 8) with k = 10, averaged as MacKay and Ghahramani's correction (mean of inverse estimates); ``id_twonn``:
  TwoNN (Facco, d'Errico, Rodriguez and Laio, Sci. Rep. 2017, Eq. 4), d = 1 / mean log(r₂/r₁); both over objects
  with r₁ > 0 (duplicates left out), as fractions of d (``id_mle_frac``) too.
* **kNN distances** (landmarker-like, from the same graph): ``rel_contrast`` = log(mean k100-dist / mean
  1-dist) (the relative contrast of Beyer et al. 1999, per object); ``kdist_cv`` (coefficient of variation of the
  10-distance), ``kdist_skew`` (its skewness; a long right tail = isolated objects); ``zero_kdist1`` (objects whose
  nearest neighbour is a duplicate); ``hubness`` = skewness of the 10-occurrence (Radovanović, Nanopoulos and
  Ivanović, JMLR 2010, §3).
* **agreement of the candidates** (Schubert et al. 2012, §3–4): the weighted Pearson similarity of the
  Gaussian-scaled candidates (Kriegel et al. 2011) with the class-balanced weights of their estimated outlier set
  (:func:`odeval.compare.similarity_matrix`, no labels): ``agree_mean``, ``agree_min``, ``agree_std``; Spearman's ρ
  between kNN at the smallest and the largest feature k (``knn_k_stability``) and between kNN and LOF at k = 10
  (``knn_lof_rho``).
* **consensus** (Ma, Zhao, Zhang and Akoglu, SIGKDD Explorations 2023, §3): Spearman's ρ of each method (mean over
  the feature k) with the consensus ranking (mean rank over all feature candidates), ``cons_<method>``; the same
  for kNN k = 10 alone (``cons_knn10``), and the overlap of kNN k = 10's top 5 % with the consensus's top 5 %
  (``cons_top_knn10``).

Every feature is finite (a quantity that cannot be estimated, e.g. a constant attribute's skewness, counts as 0;
said per feature above) and deterministic: no random step.

References
----------
Y. Zhao, R. A. Rossi, L. Akoglu. Automatic unsupervised outlier model selection. NeurIPS 2021 (MetaOD), §3.3, App. B.
E. Schubert, R. Wojdanowski, A. Zimek, H.-P. Kriegel. On evaluation of outlier rankings and outlier scores. SDM 2012.
E. Levina, P. J. Bickel. Maximum likelihood estimation of intrinsic dimension. NIPS 2004.
E. Facco, M. d'Errico, A. Rodriguez, A. Laio. Estimating the intrinsic dimension of datasets by a minimal
neighborhood information. Scientific Reports 7, 2017.
M. Radovanović, A. Nanopoulos, M. Ivanović. Hubs in space. JMLR 11, 2010.
K. Beyer, J. Goldstein, R. Ramakrishnan, U. Shaft. When is "nearest neighbor" meaningful? ICDT 1999.
G. O. Campos et al. On the evaluation of unsupervised outlier detection. DMKD 30(4), 2016.
M. Q. Ma, Y. Zhao, X. Zhang, L. Akoglu. SIGKDD Explorations 25(1), 2023, §3.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

__all__ = ["FEATURE_KS", "FEATURE_NAMES", "GRAPH_K", "feature_candidates", "meta_features"]

#: Largest k of the one kNN graph the features are read from (capped at N − 1).
GRAPH_K = 100
#: The k at which the twelve methods are scored for the agreement and consensus features (capped at N − 1).
FEATURE_KS: tuple[int, ...] = (5, 10, 20, 50)
_METHODS = ("kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "KDEOS", "COF", "FastABOD", "LDF", "INFLO")

#: The names of :func:`meta_features`' vector, in order.
FEATURE_NAMES: tuple[str, ...] = (
    "log_n", "log_d", "log_n_over_d", "dup_rate",
    "skew_mean", "skew_max", "kurt_mean", "zero_frac", "distinct_frac", "binary_frac", "corr_abs_mean",
    "id_mle", "id_mle_frac", "id_twonn",
    "rel_contrast", "kdist_cv", "kdist_skew", "zero_kdist1", "hubness",
    "agree_mean", "agree_min", "agree_std", "knn_k_stability", "knn_lof_rho",
    *(f"cons_{m.lower()}" for m in _METHODS), "cons_knn10", "cons_top_knn10",
)


def _finite(v: float) -> float:
    v = float(v)
    return v if np.isfinite(v) else 0.0


def _attribute_features(X: np.ndarray) -> list[float]:
    n, d = X.shape
    std = X.std(axis=0)
    varying = std > 0
    Xv = X[:, varying]
    if Xv.shape[1]:
        skew = np.abs(stats.skew(Xv, axis=0))
        kurt = np.log1p(np.abs(stats.kurtosis(Xv, axis=0)))
    else:
        skew = kurt = np.zeros(1)
    distinct = np.array([np.unique(X[:, j]).size for j in range(d)])
    if Xv.shape[1] > 1:
        C = np.corrcoef(Xv, rowvar=False)
        corr = float(np.abs(C[np.triu_indices_from(C, 1)]).mean())
    else:
        corr = 0.0
    return [_finite(np.nanmean(skew)), _finite(np.nanmax(skew)), _finite(np.nanmean(kurt)),
            float((X == 0).mean()), float((distinct / n).mean()), float((distinct == 2).mean()), _finite(corr)]


def _spearman_rows(S: np.ndarray) -> np.ndarray:
    """(R, R) Spearman's ρ of the rows (Pearson correlation of average ranks); a constant row correlates 0."""
    Rk = stats.rankdata(S, axis=1, method="average")
    Z = Rk - Rk.mean(axis=1, keepdims=True)
    norm = np.sqrt((Z * Z).sum(axis=1))
    ok = norm > 0
    Z[ok] /= norm[ok, None]
    Z[~ok] = 0.0
    return Z @ Z.T


def feature_candidates(X: np.ndarray) -> tuple[list[tuple[str, int]], np.ndarray, Any]:
    """The twelve methods at :data:`FEATURE_KS` (capped at N − 1) scored from one kNN graph of ``X``.

    Returns
    -------
    keys : list of (method, k)
    scores : ndarray of shape (R, N)
        Public scores, ±inf mapped to finite values in order (:func:`odeval.measures.finite_for_ranking`).
    graph : KNNGraph
        The graph (k_max = min(:data:`GRAPH_K`, N − 1)), reused by the distance features.
    """
    from odeval.detectors import get_detector
    from odeval.detectors.campos import CAMPOS_METHODS
    from odeval.detectors.scoring import required_graph_k, score_ks
    from odeval.measures import finite_for_ranking
    from odeval.neighbors import knn_graph

    n = X.shape[0]
    ks = sorted({min(k, n - 1) for k in FEATURE_KS})
    dets = [get_detector(m["name"], **dict(m.get("params", {}))) for m in CAMPOS_METHODS]
    k_graph = max([min(GRAPH_K, n - 1)] + [required_graph_k(d, ks, n) for d in dets])
    graph = knn_graph(X, k_graph)
    keys: list[tuple[str, int]] = []
    rows: list[np.ndarray] = []
    for det in dets:
        res = score_ks(det, graph, ks)
        for k, s in zip(res.ks, res.scores, strict=True):
            keys.append((det.info.name, int(k)))
            rows.append(finite_for_ranking(s))
    return keys, np.vstack(rows), graph


def meta_features(X: Any) -> np.ndarray:
    """The label-free meta-features of a table, in the order of :data:`FEATURE_NAMES` (definitions: module doc).

    Parameters
    ----------
    X : array-like of shape (N, d)
        The prepared numeric data (as it is scored: normalised, without missing values), N ≥ 12.

    Returns
    -------
    ndarray of shape (len(FEATURE_NAMES),), float64, finite.
    """
    from odeval.compare.similarity import similarity_matrix
    from odeval.neighbors import in_degree
    from odeval.scaling import gaussian_scaling

    X = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
    if X.ndim != 2 or X.shape[0] < 12 or not np.isfinite(X).all():
        raise ValueError(f"meta_features needs a finite (N, d) matrix with N >= 12, got shape {X.shape}")
    n, d = X.shape
    f: list[float] = [np.log(n), np.log(d), np.log(n / d)]
    _, first = np.unique(X, axis=0, return_index=True)
    f.append(1.0 - first.size / n)
    f += _attribute_features(X)

    keys, S, graph = feature_candidates(X)
    k_id = min(10, graph.k_max)
    D = graph.distances[:, :k_id]
    r1 = D[:, 0]
    ok = r1 > 0
    # Levina-Bickel (Eq. 8) per object over its k nearest (positive) distances; averaged as the inverse mean
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(D[ok, -1:] / D[ok, :-1])
        inv = logs.sum(axis=1) / (k_id - 1)
        inv = inv[np.isfinite(inv) & (inv > 0)]
        id_mle = 1.0 / inv.mean() if inv.size else 0.0
        r2 = graph.distances[ok, 1]
        mu = np.log(r2 / r1[ok])
        mu = mu[np.isfinite(mu)]
        id_twonn = 1.0 / mu.mean() if mu.size and mu.mean() > 0 else 0.0
    f += [_finite(id_mle), _finite(id_mle / d), _finite(id_twonn)]
    kd10 = graph.kdist(k_id)
    kdmax = graph.kdist(graph.k_max)
    f += [_finite(np.log(kdmax.mean() / max(r1.mean(), 1e-12))),
          _finite(kd10.std() / kd10.mean()) if kd10.mean() > 0 else 0.0,
          _finite(stats.skew(kd10)), float((r1 == 0).mean()),
          _finite(stats.skew(in_degree(graph, k_id).astype(np.float64)))]

    varying = np.ptp(S, axis=1) > 0
    G = np.vstack([gaussian_scaling(s) if v else np.zeros(n) for s, v in zip(S, varying, strict=True)])
    sim = similarity_matrix(G[varying], measure="pearson")[1:, 1:] if varying.sum() >= 2 else np.ones((2, 2))
    off = sim[np.triu_indices_from(sim, 1)]
    f += [_finite(np.nanmean(off)), _finite(np.nanmin(off)), _finite(np.nanstd(off))]
    rho = _spearman_rows(S)
    idx = {key: i for i, key in enumerate(keys)}
    knn_ks = [k for m, k in keys if m == "kNN"]
    k10 = min(knn_ks, key=lambda k: abs(k - 10))
    f.append(_finite(rho[idx[("kNN", knn_ks[0])], idx[("kNN", knn_ks[-1])]]))
    f.append(_finite(rho[idx[("kNN", k10)], idx[("LOF", k10)]]) if ("LOF", k10) in idx else 0.0)
    consensus = stats.rankdata(S, axis=1).mean(axis=0)
    to_cons = _spearman_rows(np.vstack([S, consensus]))[-1, :-1]
    for m in _METHODS:
        rows = [i for i, (mm, _) in enumerate(keys) if mm == m]
        f.append(_finite(to_cons[rows].mean()) if rows else 0.0)
    i10 = idx[("kNN", k10)]
    f.append(_finite(to_cons[i10]))
    top = max(1, round(0.05 * n))
    a = set(np.argsort(-S[i10], kind="stable")[:top].tolist())
    b = set(np.argsort(-consensus, kind="stable")[:top].tolist())
    f.append(len(a & b) / top)
    out = np.asarray(f, dtype=np.float64)
    if out.shape != (len(FEATURE_NAMES),):
        raise RuntimeError(f"meta_features computed {out.size} values for {len(FEATURE_NAMES)} names")
    return out
