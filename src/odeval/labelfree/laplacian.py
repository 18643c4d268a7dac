"""Laplacian Score (He, Cai, Niyogi, NIPS 2005) as the baseline internal index of Marques et al. 2020, Sect. 4.2.

Candidate solutions are treated as features of the objects: the kNN graph is built on the N x S matrix of the
candidates' weights (the "outlier scorings space"), with 0/1 edge weights (S_il = 1 when i is among l's k nearest
neighbours or l among i's), and each candidate r gets

    L_r = f~' L f~ / f~' D f~,   f~ = f_r - (f_r' D 1 / 1' D 1) 1,   L = D - S,   D = diag(S 1).

A smaller Laplacian Score means a feature that better preserves the graph's locality, i.e. a "better" candidate;
:func:`laplacian_score` returns the scores themselves (rank candidates by ascending score).

References
----------
X. He, D. Cai, P. Niyogi. Laplacian Score for Feature Selection. NIPS 2005.
H. O. Marques et al. Internal Evaluation of Unsupervised Outlier Detection. ACM TKDD 14(4), 2020, Sect. 4.2.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import sparse

__all__ = ["laplacian_score"]


def laplacian_score(features: Any, k: int, *, graph: Any = None) -> np.ndarray:
    """Laplacian Score of every column-candidate of ``features`` (S, N) on a symmetric 0/1 kNN graph with k
    neighbours (the paper uses k = 1, sqrt(N), 100). Lower = better. Constant candidates get +inf.

    ``graph``: optionally the :func:`odeval.neighbors.knn_graph` of ``features.T`` for any k_max ≥ k, so that
    several k share one graph (its rows are sorted by (distance, index), so the first k columns are the graph
    at k; the scores are identical, tested).
    """
    from odeval.neighbors import knn_graph

    F = np.asarray(features, dtype=np.float64)
    if F.ndim != 2:
        raise ValueError(f"features must be (S, N), got shape {F.shape}")
    S, N = F.shape
    k = int(min(max(1, k), N - 1))
    if graph is None:
        graph = knn_graph(F.T, k)
    elif graph.indices.shape[0] != N or graph.k_max < k:
        raise ValueError(f"graph: needs {N} rows and k_max >= {k}, got {graph.indices.shape[0]} rows, "
                         f"k_max {graph.k_max}")
    rows = np.repeat(np.arange(N), k)
    cols = graph.indices[:, :k].ravel()
    A = sparse.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(N, N)).tocsr()
    A = ((A + A.T) > 0).astype(np.float64)
    deg = np.asarray(A.sum(axis=1)).ravel()
    out = np.empty(S)
    for r in range(S):
        f = F[r]
        ft = f - (f @ deg) / deg.sum()
        den = float(ft @ (deg * ft))
        num = den - float(ft @ (A @ ft))
        out[r] = num / den if den > 0 else np.inf
    return out
