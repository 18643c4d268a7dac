"""kNN of *query* objects against a reference set: :class:`QueryKNN` and :func:`query_knn`.

The out-of-sample ("novelty") counterpart of :func:`odeval.neighbors.knn_graph`. A detector fitted on a
training set (its :class:`~odeval.neighbors.KNNGraph`) scores new objects from their neighbours *in the
training set*. Semantics are those of the graph (``shared/docs/elki-0.7.1-semantics.md`` §0.1, §0.2):

* k counts reference objects; a query object is not in the reference set, so nothing is excluded — a query
  object that happens to equal a reference object has that object as a neighbour at distance 0 (as any
  exact duplicate in the graph);
* rows are sorted by (distance, reference index); every reference object tied at the k_max-distance is kept;
* the same metric and the same arithmetic as the reference graph (Euclidean: ties decided on squared
  distances summed in attribute order, final values ``sqrt`` of them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from odeval._validation import check_data_matrix, check_k
from odeval.neighbors import _kernels
from odeval.neighbors.graph import _DEFAULT_BLOCK_ENTRIES, KNNGraph, _select_rows, _stack

__all__ = ["QueryKNN", "query_knn"]


@dataclass(eq=False)
class QueryKNN:
    """Neighbours of M query objects among the N objects of a reference graph, for all k ≤ ``k_max``.

    Attributes
    ----------
    distances : ndarray of shape (M, W), float64
        Row q: distances to q's reference neighbours sorted by (distance, index), padded with ``+inf``.
    indices : ndarray of shape (M, W), int64
        Reference-object indices (rows of ``reference.X``), padded with -1.
    keys : ndarray of shape (M, W), float64
        What ties are decided on (squared distances for Euclidean).
    k_max : int
    Q : ndarray of shape (M, d), float64
        The query objects.
    reference : KNNGraph
        The reference (training) graph.
    """

    distances: np.ndarray
    indices: np.ndarray
    keys: np.ndarray = field(repr=False)
    k_max: int
    Q: np.ndarray = field(repr=False)
    reference: KNNGraph = field(repr=False)
    _sizes: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_queries(self) -> int:
        return int(self.distances.shape[0])

    def neighborhood_sizes(self) -> np.ndarray:
        """``|N_k(q)|`` for all queries and k = 1..k_max, shape (M, k_max), int64 (ties included)."""
        if self._sizes is None:
            self._sizes = _kernels.tie_group_ends(self.keys, self.k_max)
        return self._sizes

    def kdist(self, k: int) -> np.ndarray:
        """Distance of every query object to its k-th nearest reference object, shape (M,)."""
        k = check_k(k, self.k_max + 1, name="k")
        return self.distances[:, k - 1].copy()


def query_knn(reference: KNNGraph, Q: Any, k_max: int | None = None, *, chunk_size: int | None = None) -> QueryKNN:
    """k nearest reference objects (ties at the k_max-distance included) of every query object.

    Parameters
    ----------
    reference : KNNGraph
        The graph of the reference (training) set; its metric is used.
    Q : array-like of shape (M, d)
        Query objects (not part of the reference set), same attributes as ``reference.X``.
    k_max : int, optional
        Largest k needed, ``1 <= k_max <= N`` (N reference objects: unlike the in-sample graph, all N can be
        neighbours). Default: ``reference.k_max``.
    chunk_size : int, optional
        Query rows per block (default: blocks of at most 2**23 keys). The result does not depend on it.

    Returns
    -------
    QueryKNN
    """
    if not isinstance(reference, KNNGraph):
        raise ValueError(f"reference must be a KNNGraph (odeval.neighbors.knn_graph), got {type(reference).__name__}")
    Q = check_data_matrix(Q, name="Q (query objects)", min_rows=1)
    X = reference.X
    if Q.shape[1] != X.shape[1]:
        raise ValueError(f"Q has {Q.shape[1]} attributes, the reference set has {X.shape[1]}")
    n = X.shape[0]
    k_max = reference.k_max if k_max is None else check_k(k_max, n + 1, name="k_max")
    m = Q.shape[0]
    if chunk_size is None:
        block = max(1, min(m, _DEFAULT_BLOCK_ENTRIES // n))
    elif isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer (query rows per block), got {chunk_size!r}")
    else:
        block = int(chunk_size)
    spec = reference.metric_spec
    all_keys, all_idx = _stack(_select_rows(X, spec, np.arange(m, dtype=np.int64), k_max, block, Q=Q), m)
    return QueryKNN(distances=spec.key_to_distance(all_keys), indices=all_idx, keys=all_keys, k_max=k_max, Q=Q,
                    reference=reference)
