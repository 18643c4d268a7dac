"""The kNN graph and the scoring partitioned by blocks of objects over a Dask cluster (the edge of
:mod:`odeval.neighbors.blocks` and :mod:`odeval.detectors.blockwise`, which hold the pure per-block steps).

The data matrix goes to the cluster once, inside a task (so that Dask can make it again when a worker dies with
the last copy), and from there to every worker that computes a block; the objects are assigned to blocks by
a k-d split of the data (``assign="spatial"``, the default: a block's halo is then the objects near its boundary)
or by ranges of object numbers (``assign="index"``); block b's exact neighbour lists are computed on the worker it
is placed on and stay there; each method's steps run where the blocks are, and only the per-object summaries of
:mod:`odeval.detectors.blockwise` (and, at the end, each block's scores) cross the network. The scores are the
one-process exact scores, bit for bit, in object order, for either assignment (``tests/bench/test_distributed.py``).

Faults: blocks are *placed* on workers, not bound to them (``allow_other_workers``), so a worker that dies is
replaced and its tasks, and the blocks it held, are recomputed elsewhere from the data (Dask's lineage) — the
same numbers. A task that was running on :data:`ALLOWED_FAILURES` + 1 dying workers is reported by Dask as
``KilledWorker`` and retried by :class:`odeval.executor.DaskExecutor`'s rule (:func:`odeval.executor.gather_retrying`);
a scheduler that goes away, or a cluster left without workers for ``no_workers_timeout`` seconds (default
:data:`odeval.executor.NO_WORKERS_TIMEOUT`; ``odeval score --no-workers-timeout``), ends the run with
:class:`odeval.executor.ClusterLostError` (one line). ``local:N`` clusters are :func:`odeval.executor.local_cluster`
(the executor owns how a cluster is started; re-exported here).

>>> with PartitionedGraph.connect(X, k_max=100, scheduler="local:2") as g:       # doctest: +SKIP
...     scored = score_ks(partitioned(get_detector("LOF"), g), g, "1..100")
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from odeval._validation import check_data_matrix, check_k
from odeval.detectors.base import Detector, orient
from odeval.detectors.blockwise import block_plan, block_raw_scores, in_object_order, start_state
from odeval.executor import (
    ALLOWED_FAILURES,
    cluster_lost,
    gather_retrying,
    local_cluster,
    parse_local,
    quiet_distributed,
)
from odeval.neighbors._metrics import resolve_metric
from odeval.neighbors.blocks import (
    Partition,
    assemble_blocks,
    block_bounds,
    block_exchange,
    exchange_volume,
    knn_rows,
    spatial_partition,
)

__all__ = ["ALLOWED_FAILURES", "ASSIGNMENTS", "PartitionedGraph", "partitioned", "check_partitionable",
           "parse_scheduler", "local_cluster"]

#: How objects are assigned to blocks: a k-d split of the data, or ranges of object numbers.
ASSIGNMENTS = ("spatial", "index")

def parse_scheduler(scheduler: str) -> tuple[str, int | str]:
    """``"local:N"`` → ("local", N) (a LocalCluster of N worker processes: :func:`odeval.executor.parse_local`);
    anything else → ("address", it)."""
    n = parse_local(scheduler)
    return ("local", n) if n is not None else ("address", scheduler)


def check_partitionable(detectors: Any) -> None:
    """Raise ValueError (one line) if one of ``detectors`` has no block plan (KDEOS, ELKI variants, ...)."""
    for det in detectors:
        try:
            block_plan(det)
        except NotImplementedError as exc:
            raise ValueError(f"--scheduler: {exc}") from None


class PartitionedGraph:
    """The exact kNN graph of X held in ``n_blocks`` blocks of objects on a Dask cluster.

    Stands in for a :class:`~odeval.neighbors.KNNGraph` where :func:`odeval.detectors.scoring.score_ks` needs one
    (``n_objects``, ``k_max``, ``metric``, ``search``…), with detectors wrapped by :func:`partitioned`.
    """

    def __init__(self, client: Any, X: Any, k_max: int, metric: str = "euclidean", *, p: float | None = None,
                 n_blocks: int | None = None, cluster: Any = None, assign: str = "spatial",
                 no_workers_timeout: float | None = None):
        X = check_data_matrix(X, min_rows=2)
        self.n_objects = int(X.shape[0])
        self.k_max = check_k(k_max, self.n_objects, name="k_max")
        self.metric = resolve_metric(metric, p=p).label
        if assign not in ASSIGNMENTS:
            raise ValueError(f"assign must be one of {', '.join(ASSIGNMENTS)}, got {assign!r}")
        self.client, self._cluster, self._owns_client = client, cluster, False
        if no_workers_timeout is not None and not no_workers_timeout > 0:
            raise ValueError(f"no_workers_timeout must be a positive number of seconds, got {no_workers_timeout!r}")
        self.no_workers_timeout = no_workers_timeout  # None: odeval.executor.NO_WORKERS_TIMEOUT
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise ValueError("the Dask cluster has no workers")
        n_blocks = 2 * len(workers) if n_blocks is None else n_blocks
        self.partition = (spatial_partition(X, n_blocks) if assign == "spatial"
                          else Partition.of(block_bounds(self.n_objects, n_blocks)))
        self.assign = assign
        self.n_workers = len(workers)
        self.backend, self.approx_recall, self.search = "exact", None, "brute"
        how = "a k-d split" if assign == "spatial" else "ranges of object numbers"
        self.search_reason = (f"exact brute force in {self.partition.n_blocks} blocks on {len(workers)} Dask "
                              f"worker(s), objects assigned by {how}")
        # the data and the partition are the roots of every block's lineage: made by tasks (kept by the scheduler),
        # not scattered, so that a worker dying with the last copy never loses them (they are made again)
        Xf, part = _root(client, X), _root(client, self.partition)
        # placed round-robin, not bound: a block whose worker died is recomputed on another one
        self.blocks = [client.submit(knn_rows, Xf, members, self.k_max, metric, p=p, pure=False,
                                     workers=[workers[i % len(workers)]], allow_other_workers=True)
                       for i, members in enumerate(self.partition.members)]
        self.bases = [self._submit(start_state, blk, part) for blk in self.blocks]

    @property
    def bounds(self) -> list[tuple[int, int]]:
        """The (start, stop) of every block (``assign="index"`` only)."""
        return self.partition.bounds()

    @classmethod
    def connect(cls, X: Any, k_max: int, scheduler: str, **kwargs: Any) -> PartitionedGraph:
        """Connect to ``scheduler`` (``tcp://HOST:PORT``, or ``local:N``: start a LocalCluster of N processes with
        one thread each, numba included) and build the graph there."""
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - depends on the extra
            raise ImportError("a Dask scheduler needs the optional extra: pip install 'odeval[dask]'") from None
        kind, value = parse_scheduler(scheduler)
        cluster = None
        if kind == "local":
            cluster = local_cluster(int(value))
            client = Client(cluster)
        else:
            try:
                client = Client(value)
            except OSError as exc:
                raise cluster_lost(value, exc) from None
        try:
            graph = cls(client, X, k_max, cluster=cluster, **kwargs)
            graph._owns_client = True
            return graph
        except BaseException:
            client.close()
            if cluster is not None:
                cluster.close()
            raise

    def _submit(self, fn: Any, *args: Any) -> Any:
        return self.client.submit(fn, *args, pure=False)

    def raw_scores(self, det: Detector, ks: Any) -> np.ndarray:
        """Raw scores (len(ks), N) of ``det`` in object order: its block plan run on the cluster, the blocks'
        results gathered (tasks lost with a worker are recomputed; see the module's "Faults")."""
        futures = block_raw_scores(det, [], np.asarray(ks, dtype=np.int64), self._submit, self.bases,
                                   partition=self.partition)
        results = gather_retrying(self.client, futures, no_workers_timeout=self.no_workers_timeout)
        return in_object_order(results, self.partition)

    def exchange_volume(self) -> dict[str, Any]:
        """:func:`odeval.neighbors.blocks.exchange_volume` of the blocks, counted where they are."""
        counts = gather_retrying(self.client, [self._submit(_state_exchange, base) for base in self.bases],
                                 no_workers_timeout=self.no_workers_timeout)
        return exchange_volume([tuple(c) for c in counts], self.partition)

    def gather_graph(self) -> Any:
        """The whole :class:`~odeval.neighbors.KNNGraph` (gathers every block: for tests and small data)."""
        return assemble_blocks(gather_retrying(self.client, self.blocks,
                                               no_workers_timeout=self.no_workers_timeout))

    def close(self) -> None:
        """Release the blocks on the cluster (and close the client and cluster :meth:`connect` started)."""
        self.blocks, self.bases = [], []
        if self._owns_client:
            lost = self.client.status != "running"
            with quiet_distributed() if lost else _nothing():  # a lost scheduler: no reconnection tracebacks
                self.client.close(timeout=10)
                if self._cluster is not None:
                    self._cluster.close()

    def __enter__(self) -> PartitionedGraph:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def _state_exchange(state: Any) -> tuple[int, int, int]:
    return block_exchange(state.block, state.partition, state.halo)


def _identity(value: Any) -> Any:
    return value


def _root(client: Any, value: Any) -> Any:
    """A future of ``value`` that Dask can recompute (the value travels inside its task, once)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ll]arge.*")  # "Sending large graph": here on purpose
        return client.submit(_identity, value, pure=False)


class _Partitioned:
    """A detector whose scores are computed on a :class:`PartitionedGraph` (everything else: the detector's)."""

    def __init__(self, det: Detector, graph: PartitionedGraph):
        block_plan(det)  # refuses here, before any work, if the method cannot be partitioned
        self._det, self._graph = det, graph

    def __getattr__(self, name: str) -> Any:
        return getattr(self._det, name)

    def raw_scores_all_k(self, graph: Any, ks: Any) -> np.ndarray:
        uniq, inverse = np.unique(np.asarray(ks, dtype=np.int64), return_inverse=True)
        return self._graph.raw_scores(self._det, uniq)[inverse.reshape(-1)]

    def score_all_k(self, graph: Any, ks: Any) -> np.ndarray:
        return orient(self.raw_scores_all_k(graph, ks), self._det.info)


def partitioned(det: Detector, graph: PartitionedGraph) -> Any:
    """``det`` scored on the cluster holding ``graph``: pass it with ``graph`` to
    :func:`odeval.detectors.scoring.score_ks` (same k plan, orientation and NaN rules as one process)."""
    return _Partitioned(det, graph)
