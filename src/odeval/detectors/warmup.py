"""Compile the numba kernels ahead of the first real run and leave them in numba's on-disk cache.

Every kernel of :mod:`odeval.neighbors` and :mod:`odeval.detectors` is ``@njit(cache=True)`` and compiled
lazily, on its first call, for the argument types of that call; the machine code is then written to numba's
cache (``__pycache__`` next to the module, or ``$NUMBA_CACHE_DIR``) and later processes load it in well under a
second. A fresh install has no cache, so its first ``odeval score`` pays the compilation (≈ 12 s CPU for the
exact kNN graph kernel alone, 15–70 s for a few methods, see benchmarks/README.md "First run").
:func:`warmup` pays it once, at install time (``make install`` runs ``odeval warmup``), on a tiny dataset that
goes through the same public calls — hence the same type signatures — as real data.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["warmup"]


def warmup(methods: Sequence[str] | None = None, *, novelty: bool = True,
           log: Callable[[str], None] | None = None) -> dict[str, float]:
    """Compile (or load from the cache) the kernels of the kNN graph and of ``methods``.

    Parameters
    ----------
    methods : sequence of str, optional
        Detector names (registry names, case-insensitive); default all registered methods.
    novelty : bool, default True
        Also compile the novelty-mode (query) kernels of the methods that have one.
    log : callable, optional
        Called with one line per step (name and seconds).

    Returns
    -------
    dict
        Seconds (wall) per step: ``"graph"``, then one entry per method.
    """
    from odeval.detectors import available_methods, expand_methods, get_detector
    from odeval.neighbors import knn_graph, query_knn

    names = list(available_methods()) if methods is None else expand_methods(methods)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(48, 3))
    X[5] = X[4]  # a duplicate: the tie paths are compiled too
    Q = rng.normal(size=(4, 3))
    times: dict[str, float] = {}

    def step(name: str, fn: Callable[[], object]) -> None:
        t = time.perf_counter()
        fn()
        times[name] = time.perf_counter() - t
        if log is not None:
            log(f"{name}: {times[name]:.1f}s")

    graph = None

    def build() -> None:
        nonlocal graph
        graph = knn_graph(X, 6)
        graph.neighborhood_sizes()
        knn_graph(X, 6, backend="leaves")  # the exact search chosen for large N in low dimension

    step("graph", build)
    query = query_knn(graph, Q, 6) if novelty else None
    for name in names:
        det = get_detector(name)
        ks = list(range(det.info.min_k, 6))

        def run(det=det, ks=ks) -> None:
            det.score_all_k(graph, ks)
            if query is not None and getattr(det, "novelty", False):
                det.novelty_raw_scores_all_k(graph, query, ks)

        step(det.info.name, run)
    return times
