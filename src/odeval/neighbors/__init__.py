"""odeval.neighbors — one exact kNN computation per dataset (k_max + ties), shared by every detector.

>>> from odeval.neighbors import knn_graph
>>> g = knn_graph(X, k_max=100)          # doctest: +SKIP
>>> g.kdist(10), g.neighborhood_size(10)  # doctest: +SKIP
"""

from odeval.neighbors._metrics import Metric, resolve_metric
from odeval.neighbors.graph import KNNGraph, knn_graph
from odeval.neighbors.query import QueryKNN, query_knn
from odeval.neighbors.reverse import in_degree, in_degrees_all_k, reverse_neighbors

__all__ = ["KNNGraph", "knn_graph", "QueryKNN", "query_knn", "Metric", "resolve_metric", "reverse_neighbors",
           "in_degree", "in_degrees_all_k"]
