"""Reverse k-nearest neighbours derived from a :class:`~odeval.neighbors.KNNGraph`.

q is a reverse k-nearest neighbour of p when p ∈ N_k(q), with N_k(q) the tie-extended neighbourhood
(ties at q's k-distance included, q itself excluded) — the relation ELKI 0.7.1's ODIN counts
(``../shared/docs/elki-0.7.1-semantics.md`` §1.7).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from odeval.neighbors import _kernels
from odeval.neighbors.graph import KNNGraph

__all__ = ["reverse_neighbors", "in_degree", "in_degrees_all_k"]


def _membership_k(graph: KNNGraph) -> np.ndarray:
    """Smallest k at which each graph entry belongs to the row's neighbourhood (k_max + 1 for padding)."""
    starts = _kernels.tie_group_starts(graph.keys)
    kmin = starts + 1
    kmin[starts < 0] = graph.k_max + 1
    return kmin


def reverse_neighbors(graph: KNNGraph, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Reverse kNN lists of all objects, in CSR form.

    Parameters
    ----------
    graph : KNNGraph
    k : int
        1 ≤ k ≤ graph.k_max.

    Returns
    -------
    indptr : ndarray of shape (N + 1,), int64
    indices : ndarray, int64
        ``indices[indptr[p]:indptr[p+1]]`` are the objects q ≠ p with p ∈ N_k(q), ascending.
    """
    k = graph._check_k(k)
    sizes = graph.neighborhood_sizes()[:, k - 1]
    n = graph.n_objects
    cols = np.arange(graph.indices.shape[1])
    mask = cols[None, :] < sizes[:, None]
    src = np.repeat(np.arange(n, dtype=np.int64), sizes)
    dst = graph.indices[mask]
    order = np.lexsort((src, dst))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, src[order]


def in_degree(graph: KNNGraph, k: int) -> np.ndarray:
    """|{q ≠ p : p ∈ N_k(q)}| for every object p, shape (N,), int64."""
    return in_degrees_all_k(graph, [k])[0]


def in_degrees_all_k(graph: KNNGraph, ks: Sequence[int]) -> np.ndarray:
    """Reverse-kNN counts for several k at once, shape (len(ks), N), int64.

    Each graph entry is counted from the smallest k whose neighbourhood contains it, then counts are
    accumulated over k, so all k cost one pass over the graph.
    """
    ks_arr = np.atleast_1d(np.asarray(ks))
    for k in ks_arr:
        graph._check_k(int(k))
    n = graph.n_objects
    kmin = _membership_k(graph)
    valid = kmin <= graph.k_max
    acc = np.zeros((graph.k_max + 1) * n, dtype=np.int64)
    np.add.at(acc, (kmin[valid] - 1) * n + graph.indices[valid], 1)
    deg = np.cumsum(acc.reshape(graph.k_max + 1, n)[: graph.k_max], axis=0)
    return deg[ks_arr.astype(np.int64) - 1]
