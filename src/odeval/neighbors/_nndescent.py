"""NN-descent (pynndescent) with its kernels cached on disk (private; imported only by the approximate backend).

pynndescent's ``nn_descent`` and the kernels it calls take the distance function as an *argument*; numba cannot
cache a function whose signature holds a dispatcher type, so every process recompiled them (≈ 55 s, issue 17).
Here one wrapper per metric refers to pynndescent's distance as a module *global* and is ``@njit(cache=True)``:
its signature holds arrays and scalars only, and the compiled code of ``nn_descent`` and everything it calls is
stored with it (in ``__pycache__`` next to this file, or ``$NUMBA_CACHE_DIR``). :func:`cached_nn_descent`
substitutes the wrappers for ``pynndescent.pynndescent_.nn_descent`` while an index is built; other metrics
keep pynndescent's own (uncached) path. The results are pynndescent's: same calls, same arguments.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pynndescent.pynndescent_ as _pnd
from numba import njit
from pynndescent.distances import chebyshev, manhattan, squared_euclidean

_original = _pnd.nn_descent
_nn_descent = _pnd.nn_descent


@njit(cache=True)
def _nnd_sqeuclidean(data, n_neighbors, rng_state, max_candidates, n_iters, delta, init_graph, rp_tree_init,
                     leaf_array, low_memory, verbose, kernel):  # pragma: no cover - numba
    return _nn_descent(data, n_neighbors, rng_state, max_candidates, squared_euclidean, n_iters, delta, init_graph,
                       rp_tree_init, leaf_array, low_memory, verbose, kernel)


@njit(cache=True)
def _nnd_manhattan(data, n_neighbors, rng_state, max_candidates, n_iters, delta, init_graph, rp_tree_init,
                   leaf_array, low_memory, verbose, kernel):  # pragma: no cover - numba
    return _nn_descent(data, n_neighbors, rng_state, max_candidates, manhattan, n_iters, delta, init_graph,
                       rp_tree_init, leaf_array, low_memory, verbose, kernel)


@njit(cache=True)
def _nnd_chebyshev(data, n_neighbors, rng_state, max_candidates, n_iters, delta, init_graph, rp_tree_init,
                   leaf_array, low_memory, verbose, kernel):  # pragma: no cover - numba
    return _nn_descent(data, n_neighbors, rng_state, max_candidates, chebyshev, n_iters, delta, init_graph,
                       rp_tree_init, leaf_array, low_memory, verbose, kernel)


_WRAPPERS = {id(squared_euclidean): _nnd_sqeuclidean, id(manhattan): _nnd_manhattan, id(chebyshev): _nnd_chebyshev}


def _dispatch(data, n_neighbors, rng_state, max_candidates=50, dist=None, n_iters=10, delta=0.001,
              init_graph=_pnd.EMPTY_GRAPH, rp_tree_init=True, leaf_array=None, low_memory=True, verbose=False,
              kernel=0):
    wrapper = _WRAPPERS.get(id(dist))
    if wrapper is None or leaf_array is None:
        return _original(data, n_neighbors, rng_state, max_candidates, dist, n_iters, delta, init_graph,
                         rp_tree_init, leaf_array, low_memory, verbose, kernel)
    return wrapper(data, n_neighbors, rng_state, max_candidates, n_iters, delta, init_graph, rp_tree_init,
                   leaf_array, low_memory, verbose, kernel)


@contextmanager
def cached_nn_descent() -> Iterator[None]:
    """Within the block, ``pynndescent.NNDescent`` builds its graph through the disk-cached wrappers."""
    _pnd.nn_descent = _dispatch
    try:
        yield
    finally:
        _pnd.nn_descent = _original


def nndescent_index(X: Any, **kwargs: Any) -> Any:
    """``pynndescent.NNDescent(X, **kwargs)`` with the cached kernels."""
    with cached_nn_descent():
        return _pnd.NNDescent(X, **kwargs)
