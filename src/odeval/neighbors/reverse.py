"""Reverse k-nearest neighbours derived from a :class:`~odeval.neighbors.KNNGraph`.

q is a reverse k-nearest neighbour of p when p ∈ N_k(q), with N_k(q) the tie-extended neighbourhood
(ties at q's k-distance included, q itself excluded) — the relation ELKI 0.7.1's ODIN counts
(``../shared/docs/elki-0.7.1-semantics.md`` §1.7).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from odeval.neighbors.graph import KNNGraph

__all__ = ["reverse_neighbors", "in_degree", "in_degrees_all_k"]


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
    acc = np.zeros((graph.k_max, graph.n_objects), dtype=np.int64)
    _count_entries_by_k(graph.keys, graph.indices, acc)
    np.cumsum(acc, axis=0, out=acc)  # in place: one (k_max, N) array is all this needs (10⁶ objects: 0.8 GB)
    rows = ks_arr.astype(np.int64) - 1
    if np.array_equal(rows, np.arange(graph.k_max)):
        return acc
    return acc[rows]


@njit(cache=True)
def _count_entries_by_k(keys, indices, acc):  # pragma: no cover - numba
    """``acc[k − 1, q] += 1`` for every graph entry q of every row, k the smallest k whose neighbourhood holds it:
    1 + the first column of the entry's tie group (as ``_kernels.tie_group_starts``; row by row, no (N, W)
    temporaries);
    padding (non-finite keys) and entries beyond k_max = ``acc.shape[0]`` are not counted."""
    n, w = keys.shape
    k_max = acc.shape[0]
    for p in range(n):
        start = 0
        for j in range(w):
            if j == 0 or keys[p, j] != keys[p, j - 1]:
                start = j
            if start >= k_max:
                break  # later entries start later still
            if np.isfinite(keys[p, j]):
                acc[start, indices[p, j]] += 1
