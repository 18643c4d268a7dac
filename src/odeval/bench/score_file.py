"""Score a dataset file with kNN detectors for every k and write the score table: the library side of
``odeval score``.

One exact (or, on request, approximate) kNN graph for the largest k any method needs — on this machine, or by
blocks of objects on a Dask cluster (:mod:`odeval.bench.distributed`, the reason this lives in the studies
stage) — then :func:`odeval.detectors.scoring.score_columns` and :func:`odeval.data.score_files.write_score_table`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from odeval._krange import parse_k_range
from odeval.data import label_note, load_dataset
from odeval.data.score_files import score_column_name, write_score_table
from odeval.detectors import expand_methods, get_detector
from odeval.detectors.scoring import ScoreColumns, required_graph_k, score_columns
from odeval.neighbors import knn_graph

__all__ = ["ScoredFile", "score_file"]


@dataclass
class ScoredFile:
    """What :func:`score_file` wrote: ``path`` holds ``n_objects`` rows and the ``columns`` of ``scored``;
    ``label_note`` says that the dataset was read without labels because it has no label attribute."""

    path: Path
    n_objects: int
    columns: list[str]
    methods: list[str]
    k_spec: str
    metric: str
    scored: ScoreColumns
    label_note: str | None = None


def _graph(X: np.ndarray, k_graph: int, detectors: dict[str, Any], *, metric: str, p: float | None, backend: str,
           seed: int, scheduler: str | None, n_blocks: int | None, device: str = "cpu",
           no_workers_timeout: float | None = None) -> tuple[Any, dict[str, Any]]:
    """The kNN graph (local, or partitioned on ``scheduler``) and the detectors that score on it."""
    if not scheduler:
        return knn_graph(X, k_graph, metric=metric, p=p, backend=backend, seed=seed, device=device), detectors
    from odeval.bench.distributed import PartitionedGraph, check_partitionable, partitioned

    check_partitionable(detectors.values())
    graph = PartitionedGraph.connect(X, k_graph, scheduler, metric=metric, p=p, n_blocks=n_blocks,
                                     no_workers_timeout=no_workers_timeout)
    return graph, {m: partitioned(d, graph) for m, d in detectors.items()}


def score_file(dataset: str | os.PathLike[str], methods: Sequence[str], output: str | os.PathLike[str], *,
               k: str = "1:100", params: Mapping[str, Mapping[str, Any]] | None = None, metric: str = "euclidean",
               p: float | None = None, backend: str = "auto", seed: int = 0, raw: bool = False,
               load_options: Mapping[str, Any] | None = None, scheduler: str | None = None,
               n_blocks: int | None = None, on_graph: Callable[[Any], None] | None = None,
               on_skipped: Callable[[str, dict[str, str]], None] | None = None, device: str = "cpu",
               no_workers_timeout: float | None = None) -> ScoredFile:
    """Score ``dataset`` with ``methods`` at every computable k of ``k`` and write the table to ``output``.

    Parameters
    ----------
    dataset : path
        Any file :func:`odeval.data.load_dataset` reads (with ``load_options``, e.g. ``{"label": None}``); scoring
        needs no labels, so a file without the default label attribute is read unlabelled (``label_note``).
    methods : sequence of str
        Detector names (repeats are dropped; ``"all"``: every registered method, :func:`odeval.detectors.
        expand_methods`); ``params[method]`` are their parameters.
    output : path
        ``.parquet``, ``.csv`` or ``.npz`` (:func:`odeval.data.score_files.write_score_table`).
    k : str
        The k specification (:mod:`odeval._krange`).
    metric, p, backend, seed
        The kNN graph's (:func:`odeval.neighbors.knn_graph`).
    raw : bool
        Write the methods' raw scores (columns ``METHOD-kNNN-raw``) instead of public ones.
    scheduler, n_blocks
        Compute the exact graph and the scores by ``n_blocks`` blocks on a Dask cluster (``tcp://HOST:PORT`` or
        ``local:N``); the same numbers.
    no_workers_timeout : float, optional
        With ``scheduler``: raise :class:`odeval.executor.NoWorkersError` (a :class:`~odeval.executor.
        ClusterLostError`) when the cluster has had no worker for this many seconds (default
        :data:`odeval.executor.NO_WORKERS_TIMEOUT`, 120 s), e.g. longer for workers restarted by a batch system.
    device : str
        Where the kNN graph is computed: "cpu" or "cuda[:N]" (:func:`odeval.neighbors.knn_graph`; the same graph).
    on_graph, on_skipped
        Called with the graph once it is built, and with each method's skipped k (see
        :func:`~odeval.detectors.scoring.score_columns`).

    Raises
    ------
    ValueError
        An unknown method or parameter, a bad k specification, an unreadable dataset, nothing computable, a
        device that cannot compute the graph (no CUDA device, out of its memory).
    ImportError
        An optional backend (faiss, dask, torch) is missing.
    """
    if no_workers_timeout is not None and not scheduler:
        raise ValueError("no_workers_timeout is for a Dask cluster: it needs scheduler")
    method_list = expand_methods(methods)
    k_range = parse_k_range(k)
    detectors = {m: get_detector(m, **dict((params or {}).get(m, {}))) for m in method_list}
    ds = load_dataset(dataset, require_labels=False, **dict(load_options or {}))
    X = ds.numeric_matrix()
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"{dataset}: {n} object(s); scoring needs at least 2")
    k_graph = max(required_graph_k(det, k_range, n) for det in detectors.values())
    graph = None
    try:
        graph, detectors = _graph(X, k_graph, detectors, metric=metric, p=p, backend=backend, seed=seed,
                                  scheduler=scheduler, n_blocks=n_blocks, device=device,
                                  no_workers_timeout=no_workers_timeout)
        if on_graph is not None:
            on_graph(graph)
        scored = score_columns(detectors.values(), graph, k_range, raw=raw, on_skipped=on_skipped)
    finally:
        if scheduler and graph is not None:
            graph.close()
    if not scored.keys:
        raise ValueError(f"nothing to compute: no requested k ({k}) can be scored by {', '.join(method_list)} on "
                         f"{dataset} (N = {n}); see the notes above")
    columns = [score_column_name(key, raw=raw) for key in scored.keys]
    labels = None if ds.y is None else np.asarray(ds.y, dtype=bool)
    path = write_score_table(output, columns, scored.scores, ks=scored.ks, labels=labels,
                             ids=getattr(ds, "ids", None))
    return ScoredFile(path, n, columns, method_list, str(k), graph.metric, scored, label_note(ds))
