"""The exact k-nearest-neighbour graph shared by all detectors: :class:`KNNGraph` and :func:`knn_graph`.

One exact kNN computation per dataset, for the largest k needed (``k_max``), with every object tied at the
k_max-distance included. All detectors then read any k ≤ k_max from it. Semantics follow ELKI 0.7.1
(``../shared/docs/elki-0.7.1-semantics.md`` §0.1, §0.2, §1.0b):

* k counts neighbours *other than* the query point; the query point itself is excluded by index;
* exact duplicates of the query point are ordinary neighbours at distance 0;
* rows are sorted by (distance, index); all objects tied with the k-distance belong to N_k(p);
* for the Euclidean metric, ties are decided on squared distances and the final distances are
  ``sqrt(Σ (x_j - y_j)²)`` summed in attribute order — never ``‖x‖² + ‖y‖² − 2x·y`` — so duplicates are
  exactly 0 and the values are bit-identical to ELKI's ``EuclideanDistanceFunction``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from odeval._validation import check_data_matrix, check_k
from odeval.neighbors import _kernels
from odeval.neighbors._metrics import Metric, resolve_metric

__all__ = ["KNNGraph", "knn_graph", "choose_search", "BACKENDS"]

# Entries of a block of full distance rows (block rows × N) for cdist metrics: 2**23 float64 = 64 MiB.
_DEFAULT_BLOCK_ENTRIES = 2**23
_MAX_ABS_VALUE = 1e150  # squares of larger coordinate differences overflow float64

#: ``knn_graph`` backends: "exact" (brute or leaves, chosen by :func:`choose_search`), "brute", "leaves", "tree",
#: "approx" (faiss HNSW) and "auto" (exact unless exact cannot keep up, then approx).
BACKENDS = ("exact", "auto", "brute", "tree", "leaves", "approx")
_TREE_METRICS = {"euclidean", "cityblock", "chebyshev"}
# measured (docs/scaling.md, 10-d Gaussian mixture, k_max = 100, CPU s): leaves / brute 0.28 at N = 10⁵, 0.22 at
# 2·10⁵; about equal on Waveform (3,443 × 21); 1.1–1.3× slower on structureless uniform/Gaussian data in 30–50 d
_LEAVES_MAX_DIM = 16
_LEAVES_MIN_N = 20_000
#: pair-dimension evaluations (N² · d) beyond which "auto" gives up exact search where the leaves search does not
#: apply (d > 16 or another metric): ≈ 7·10⁵ × 10 objects × dims, where the brute-force kernel alone takes
#: ≈ 2,200 CPU s, see docs/scaling.md
_BRUTE_BUDGET = 5e12


def choose_search(n: int, d: int, metric: str, backend: str = "exact") -> tuple[str, str]:
    """Which kNN search a backend uses for N objects in d dimensions: ("brute" | "leaves" | "tree" | "hnsw",
    reason).

    * "leaves" (spatial leaves with bounding-box pruning, :mod:`odeval.neighbors._leaves`: the brute-force
      arithmetic on the leaves a query cannot rule out) for the Euclidean, Manhattan and Chebyshev metrics when
      d ≤ 16 and N ≥ 2·10⁴;
    * "brute" (the numba kernel, working set O(N · k_max)) otherwise;
    * with ``backend="auto"``: "hnsw" (approximate, recall reported) only where "leaves" does not apply and
      N² · d > 5·10¹², where brute force cannot keep up.
    ``backend`` "brute", "leaves", "tree" and "approx" force the search; all exact searches give the same graph.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; available: {', '.join(map(repr, BACKENDS))}")
    if backend == "approx":
        return "hnsw", "requested (backend='approx')"
    if backend in ("brute", "tree", "leaves"):
        if backend != "brute" and metric not in _TREE_METRICS:
            raise ValueError(f"backend={backend!r} supports {sorted(_TREE_METRICS)}, not metric {metric!r}")
        return backend, f"requested (backend={backend!r})"
    tree_ok = metric in _TREE_METRICS
    if tree_ok and d <= _LEAVES_MAX_DIM and n >= _LEAVES_MIN_N:
        return "leaves", f"exact, pruned by spatial leaves: d={d} <= {_LEAVES_MAX_DIM} and N={n} >= {_LEAVES_MIN_N}"
    if backend == "auto" and float(n) * n * d > _BRUTE_BUDGET:
        return "hnsw", (f"approximate: N²·d={float(n) * n * d:.2g} > {_BRUTE_BUDGET:.0e} and "
                        + (f"metric {metric} has no leaves search" if not tree_ok else f"d={d} > {_LEAVES_MAX_DIM}"))
    why = (f"metric {metric} has no leaves search" if not tree_ok else
           f"d={d} > {_LEAVES_MAX_DIM}" if d > _LEAVES_MAX_DIM else f"N={n} < {_LEAVES_MIN_N}")
    return "brute", f"exact brute force: {why}"


@dataclass(eq=False)
class KNNGraph:
    """Exact kNN lists (+ ties) of every object, for all k ≤ ``k_max``.

    Attributes
    ----------
    distances : ndarray of shape (N, W), float64
        Row p: distances to p's neighbours sorted by (distance, index), p itself excluded, padded with
        ``+inf``. ``W >= k_max`` covers the ties at every row's k_max-distance.
    indices : ndarray of shape (N, W), int64
        The neighbours' object indices, padded with -1.
    k_max : int
        The largest k the graph serves.
    metric : str
        The metric's label (e.g. ``"euclidean"``, ``"minkowski(p=3)"``).
    X : ndarray of shape (N, d), float64
        The data matrix the graph was built from.
    n_objects : int
        N.
    counts : ndarray of shape (N,), int64
        Number of real (non-padding) entries per row, ``= neighborhood_size(k_max)``.
    keys : ndarray of shape (N, W), float64
        The values ties are decided on: squared distances for the Euclidean metric, else the distances.
    backend : {"exact", "approx"}
        How the graph was built.
    approx_recall : float or None
        ``backend="approx"`` only: mean recall of the approximate k_max-neighbourhoods against the exact ones
        (ties included) on a random sample of objects.
    search : {"brute", "leaves", "tree", "hnsw"}
        The search that produced the graph (see :func:`choose_search`); ``search_reason`` says why.
    """

    distances: np.ndarray
    indices: np.ndarray
    k_max: int
    metric: str
    X: np.ndarray
    keys: np.ndarray = field(repr=False)
    metric_spec: Metric = field(repr=False)
    backend: str = "exact"
    approx_recall: float | None = None
    search: str = "brute"
    search_reason: str = ""
    _sizes: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_objects(self) -> int:
        return int(self.distances.shape[0])

    @property
    def counts(self) -> np.ndarray:
        return self.neighborhood_sizes()[:, self.k_max - 1]

    def _check_k(self, k: int) -> int:
        k = check_k(k, self.n_objects, name="k")
        if k > self.k_max:
            raise ValueError(f"k={k} exceeds the graph's k_max={self.k_max}; build the graph for the largest k "
                             "you need")
        return k

    def kdist(self, k: int) -> np.ndarray:
        """Distance of every object to its k-th nearest other object, shape (N,)."""
        k = self._check_k(k)
        return self.distances[:, k - 1].copy()

    def neighborhood_sizes(self) -> np.ndarray:
        """``|N_k(p)|`` for all p and k = 1..k_max, shape (N, k_max), int64 (column k−1 is k).

        N_k(p) = all objects other than p within p's k-distance (ties included; Euclidean ties are decided
        on squared distances). Computed once and cached.
        """
        if self._sizes is None:
            self._sizes = _kernels.tie_group_ends(self.keys, self.k_max)
        return self._sizes

    def neighborhood_size(self, k: int) -> np.ndarray:
        """``|N_k(p)|`` for every object p, shape (N,), int64: ≥ k, larger when ties at the k-distance."""
        k = self._check_k(k)
        return self.neighborhood_sizes()[:, k - 1].copy()

    def neighbors(self, p: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(indices, distances) of N_k(p), ties included, sorted by (distance, index)."""
        k = self._check_k(k)
        if not 0 <= p < self.n_objects:
            raise ValueError(f"object index {p} out of range 0..{self.n_objects - 1}")
        n = int(self.neighborhood_sizes()[p, k - 1])
        return self.indices[p, :n].copy(), self.distances[p, :n].copy()

    def distance_between(self, a: Any, b: Any) -> np.ndarray:
        """Exact distances between objects ``a[i]`` and ``b[i]`` (elementwise; broadcast), same metric and
        arithmetic as the graph."""
        a_arr, b_arr = np.broadcast_arrays(np.asarray(a), np.asarray(b))
        shape = a_arr.shape
        a_flat = a_arr.ravel()
        b_flat = b_arr.ravel()
        for name, arr in (("a", a_flat), ("b", b_flat)):
            if arr.size and not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(f"distance_between: {name} must hold integer object indices, got {arr.dtype}")
            if arr.size and (arr.min() < 0 or arr.max() >= self.X.shape[0]):
                raise ValueError(f"distance_between: {name} holds indices outside 0..{self.X.shape[0] - 1}")
        a_flat = a_flat.astype(np.int64)
        b_flat = b_flat.astype(np.int64)
        code = _NUMBA_METRICS.get(self.metric_spec.name)
        if code is not None:
            out = _kernels.pair_distances(self.X, a_flat, b_flat, code)
        else:
            out = np.empty(a_flat.size)
            order = np.argsort(a_flat, kind="stable")
            sa = a_flat[order]
            bounds = np.flatnonzero(np.diff(sa)) + 1
            for grp in np.split(order, bounds):
                if grp.size:
                    i = a_flat[grp[0]]
                    out[grp] = self.metric_spec.pairwise(self.X[i:i + 1], self.X[b_flat[grp]])[0]
        return out.reshape(shape)

    def memory_bytes(self) -> int:
        """Bytes held by the graph's arrays (excluding X)."""
        total = self.distances.nbytes + self.indices.nbytes + self.keys.nbytes
        if self._sizes is not None:
            total += self._sizes.nbytes
        return int(total)


def _block_rows(n: int, chunk_size: int | None) -> int:
    if chunk_size is None:
        return max(1, min(n, _DEFAULT_BLOCK_ENTRIES // n))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer (query rows per block), got {chunk_size!r}")
    return int(min(chunk_size, n))


def _select_rows(X: np.ndarray, spec: Metric, rows: np.ndarray, k_max: int, block: int,
                 Q: np.ndarray | None = None):
    """kNN (+ ties) of the query rows ``rows`` from full distance rows, block by block.

    Without ``Q`` the queries are the objects ``X[rows]`` (each excluded from its own list); with ``Q`` they are
    the external objects ``Q[rows]`` and nothing is excluded.
    """
    out = []
    code = _NUMBA_METRICS.get(spec.name)
    for s in range(0, rows.size, block):
        r = rows[s:s + block]
        A = X[r] if Q is None else Q[r]
        D = _kernels.query_keys(A, X, code) if code is not None else spec.pairwise(A, X)
        excl = r if Q is None else np.full(r.size, -1, dtype=np.int64)
        cap = k_max + 8
        while True:
            keys = np.full((r.size, cap), np.inf)
            idx = np.full((r.size, cap), -1, dtype=np.int64)
            cnt = np.zeros(r.size, dtype=np.int64)
            _kernels.select_block(D, excl, k_max, cap, keys, idx, cnt)
            if cnt.max() <= cap:
                break
            cap = int(cnt.max())
        out.append((r, keys, idx, cnt))
    return out


_NUMBA_METRICS = {"euclidean": _kernels.EUCLIDEAN, "cityblock": _kernels.CITYBLOCK, "chebyshev": _kernels.CHEBYSHEV}


def knn_graph(
    X: Any,
    k_max: int,
    metric: str = "euclidean",
    backend: str = "exact",
    *,
    p: float | None = None,
    metric_params: dict[str, Any] | None = None,
    chunk_size: int | None = None,
    seed: int = 0,
    approx_params: dict[str, Any] | None = None,
    recall_sample: int = 200,
    device: str = "cpu",
) -> KNNGraph:
    """Exact k-nearest-neighbour lists of every object, ties at the k_max-distance included.

    Parameters
    ----------
    X : array-like of shape (N, d)
        Numeric data without NaN/inf.
    k_max : int
        Largest k needed, ``1 <= k_max <= N - 1`` (k counts neighbours other than the query point).
    metric : str, default "euclidean"
        ``"euclidean"``, ``"manhattan"``, ``"chebyshev"``, ``"minkowski"`` (with ``p``), ``"cosine"`` or
        another real-valued scipy/scikit-learn metric name; see :func:`odeval.neighbors.resolve_metric`.
    backend : {"exact", "auto", "brute", "leaves", "tree", "approx"}, default "exact"
        ``"exact"``: the exact search chosen by :func:`choose_search` (spatial leaves with pruning for d ≤ 16,
        else brute force; identical graphs); ``"brute"`` / ``"leaves"`` / ``"tree"`` force one; ``"auto"``:
        exact, or approximate where the exact searches cannot keep up (see :func:`choose_search`).
        ``"approx"``: candidate neighbours from a faiss HNSW index (the ``faiss-cpu`` package, extra
        ``odeval[approx]``; built on one thread with a seeded level generator, so deterministic), then exact
        distances of the candidates with this module's arithmetic, sorted
        by (distance, index). Faster for large N, but a true neighbour can be missed and ties at the
        k_max-distance are only included when they are among the candidates; rows with too few candidates
        are computed exactly. The graph's ``approx_recall`` reports the recall against the exact search on
        ``recall_sample`` random objects (seeded by ``seed``).
    p : float, optional
        Minkowski exponent.
    metric_params : dict, optional
        Extra keyword arguments of the metric.
    chunk_size : int, optional
        Query rows per block. Euclidean, Manhattan, Chebyshev: the kernel's query group size (at most 64).
        Other metrics: rows of the ``chunk_size × N`` distance block (by default sized to 64 MiB). The result
        does not depend on it.
    device : {"cpu", "cuda", "cuda:N"}, default "cpu"
        "cpu": the searches above. "cuda": the exact graph computed on a GPU with PyTorch (extra
        ``odeval[gpu]``; Euclidean, Manhattan, Chebyshev; ``search == "torch"``), identical bit for bit to the
        CPU graph (docs/scaling.md, "The graph on a GPU"). No CUDA device, no PyTorch, another metric or
        backend, or a GPU out of memory even with small tiles: a one-line error, never a silent CPU fallback.

    Returns
    -------
    KNNGraph

    Notes
    -----
    Euclidean, Manhattan and Chebyshev distances are computed exactly, from coordinate differences, by a
    numba kernel: query rows are processed in groups of 64 (``chunk_size`` if smaller) against all objects,
    keeping per query a heap of the k_max smallest keys and the candidates tied with it, so the working
    memory is O(N · k_max); all other metrics are evaluated block by block with scipy's ``cdist``
    (``chunk_size`` rows × N at a time). The dot-product expansion is never used, so exact duplicates are
    at distance exactly 0 and Euclidean values are bit-identical to ELKI's ``EuclideanDistanceFunction``
    (ties decided on the squared distance, as ELKI's kNN heap does). Rows with more tied candidates than
    the kernel's buffer holds (massive ties) are recomputed from their full distance row. The result does
    not depend on ``chunk_size``.
    """
    X = check_data_matrix(X, min_rows=2)
    n = X.shape[0]
    k_max = check_k(k_max, n, name="k_max")
    spec = resolve_metric(metric, p=p, metric_params=metric_params).fit_to(X)
    if device != "cpu":
        return device_graph(X, k_max, spec, backend, device)
    search, reason = choose_search(n, X.shape[1], spec.name, backend)
    block = _block_rows(n, chunk_size)
    if search == "hnsw":
        g = _approx_graph(X, k_max, spec, block, seed, approx_params or {}, recall_sample)
        g.search, g.search_reason = search, reason
        return g

    if spec.name == "euclidean":
        big = float(np.abs(X).max())
        if big > _MAX_ABS_VALUE:
            raise ValueError(f"X holds values up to {big:.3g} in magnitude; squared Euclidean distances would "
                             "overflow float64 — rescale the data")
    if search == "tree":
        parts = _tree_parts(X, k_max, spec, block)
    elif search == "leaves":
        parts = _leaves_parts(X, k_max, spec, block)
    else:
        parts = _brute_parts(X, k_max, spec, 0, n, block)

    g = _assemble(X, k_max, spec, parts, "exact")
    g.search, g.search_reason = search, reason
    return g


def _brute_parts(X, k_max, spec, q0, q1, block):
    """Exact graph rows of the objects q0 ≤ p < q1 (global row numbers in the parts) by brute force: the numba
    kernel for Euclidean, Manhattan, Chebyshev (rows with massive ties from full distance rows), full distance
    rows for the other metrics. A row does not depend on q0, q1 (so blocks of rows give the whole graph)."""
    code = _NUMBA_METRICS.get(spec.name)
    if code is None:
        return _select_rows(X, spec, np.arange(q0, q1, dtype=np.int64), k_max, block)
    m = q1 - q0
    cap = k_max + 8
    keys = np.full((m, cap), np.inf)
    idx = np.full((m, cap), -1, dtype=np.int64)
    cnt = np.zeros(m, dtype=np.int64)
    qb = min(64, max(1, block))
    _kernels.direct_knn_rows(X, q0, q1, k_max, code, qb, cap, 4 * k_max + 64, keys, idx, cnt)
    redo = (cnt < 0) | (cnt > cap)
    if not redo.any():  # no copy of the (m, k_max + 8) arrays
        return [(np.arange(q0, q1, dtype=np.int64), keys, idx, cnt)]
    done = np.flatnonzero(~redo)
    parts = [(done + q0, keys[done], idx[done], cnt[done])]
    parts += _select_rows(X, spec, np.flatnonzero(redo) + q0, k_max, block)  # rows with massive ties
    return parts


#: Objects per leaf of the "leaves" search: small leaves prune more, but each visited leaf costs a bound per query.
_LEAF_SIZE = 128


def _leaves_parts(X, k_max, spec, block, leaf_size: int = _LEAF_SIZE):
    """Exact graph rows by spatial leaves with bounding-box pruning (:mod:`odeval.neighbors._leaves`): the
    brute-force kernel's arithmetic, heap and tie buffer on the leaves a query cannot rule out, so the graph is
    the brute-force one bit for bit; rows with massive ties are recomputed from full distance rows."""
    from odeval.neighbors import _leaves

    n = X.shape[0]
    perm, starts = _leaves.leaf_order(X, leaf_size)
    Xp = np.ascontiguousarray(X[perm])
    XpT = np.ascontiguousarray(Xp.T)
    nleaf = starts.size - 1
    lo = np.empty((nleaf, X.shape[1]))
    hi = np.empty((nleaf, X.shape[1]))
    for b in range(nleaf):
        part = Xp[starts[b]:starts[b + 1]]
        lo[b], hi[b] = part.min(axis=0), part.max(axis=0)
    cap = k_max + 8
    keys = np.full((n, cap), np.inf)
    idx = np.full((n, cap), -1, dtype=np.int64)
    cnt = np.zeros(n, dtype=np.int64)
    _leaves.leaves_knn(Xp, XpT, perm, starts, lo, hi, k_max, _NUMBA_METRICS[spec.name], cap, 4 * k_max + 64,
                       keys, idx, cnt)
    del Xp, XpT
    redo = (cnt < 0) | (cnt > cap)
    if not redo.any():
        return [(np.arange(n, dtype=np.int64), keys, idx, cnt)]
    done = np.flatnonzero(~redo)
    parts = [(done, keys[done], idx[done], cnt[done])]
    parts += _select_rows(X, spec, np.flatnonzero(redo), k_max, block)  # rows with massive ties
    return parts


def _tree_parts(X, k_max, spec, block):
    """Exact graph rows from k-d tree candidates: the k_max + 1 + slack nearest by scikit-learn's tree, then
    exact keys with this module's arithmetic; rows whose candidates might not hold every tie (largest candidate
    key not above the k_max-th by a relative 10⁻⁹) are computed by brute force — so the graph is identical to
    the brute-force one."""
    from sklearn.neighbors import KDTree

    n = X.shape[0]
    w = min(n, k_max + 1 + max(8, k_max // 4))
    tree = KDTree(X, metric={"cityblock": "manhattan"}.get(spec.name, spec.name))
    cand = np.empty((n, w), dtype=np.int64)
    step = 65536
    for s in range(0, n, step):
        cand[s:s + step] = tree.query(X[s:s + step], k=w, return_distance=False, sort_results=False)
    return _candidate_parts(X, k_max, spec, cand, block, margin=1e-9)


def _stack(parts, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys, indices) of n rows from the (rows, keys, idx, counts) parts, width = the largest count."""
    width = max(int(c.max()) for _, _, _, c in parts if c.size)
    all_keys = np.full((n, width), np.inf)
    all_idx = np.full((n, width), -1, dtype=np.int64)
    for rows, keys, idx, _ in parts:
        w = min(width, keys.shape[1])
        all_keys[rows, :w] = keys[:, :w]
        all_idx[rows, :w] = idx[:, :w]
    return all_keys, all_idx


def _assemble(X, k_max, spec, parts, backend, approx_recall=None) -> KNNGraph:
    all_keys, all_idx = _stack(parts, X.shape[0])
    parts.clear()  # the pieces are copied: free them before the distances are allocated
    distances = spec.key_to_distance(all_keys)
    return KNNGraph(distances=distances, indices=all_idx, k_max=k_max, metric=spec.label, X=X, keys=all_keys,
                    metric_spec=spec, backend=backend, approx_recall=approx_recall)


def _candidate_keys(X: np.ndarray, spec: Metric, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Neighbour keys (squared for Euclidean) between X[a[i]] and X[b[i]], the graph's arithmetic."""
    if spec.name == "euclidean":  # squared key, summed in attribute order as the exact kernel
        acc = np.zeros(a.size)
        for j in range(X.shape[1]):
            t = X[a, j] - X[b, j]
            acc += t * t
        return acc
    code = _NUMBA_METRICS.get(spec.name)
    if code is not None:
        return _kernels.pair_distances(X, a, b, code)
    out = np.empty(a.size)
    order = np.argsort(a, kind="stable")
    bounds = np.flatnonzero(np.diff(a[order])) + 1
    for grp in np.split(order, bounds):
        if grp.size:
            i = a[grp[0]]
            out[grp] = spec.pairwise(X[i:i + 1], X[b[grp]])[0]
    return out


def _unique_candidates(cand: Any, first: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The distinct valid candidates of every row of a (N, w) candidate matrix, as (rows, objects) pairs.

    Drops padding (< 0), the row's own object and repeated candidates of a row; pairs come out sorted by
    (row, object) — exactly ``np.unique(rows * N + objects)`` of the valid pairs, but with a row-wise sort of
    the (N, w) matrix (w ≈ k_max) instead of a global unique over N·w keys (hash-based in numpy ≥ 2.3:
    ≈ 180 s and 11 GB for 1.1·10⁸ keys, against seconds for the row-wise sort). Row i of ``cand`` is object
    ``first + i``; the returned rows are 0-based within ``cand``.
    """
    s = np.sort(np.asarray(cand, dtype=np.int64), axis=1)
    n, w = s.shape
    keep = (s >= 0) & (s != np.arange(first, first + n, dtype=np.int64)[:, None])
    if w > 1:
        keep[:, 1:] &= s[:, 1:] != s[:, :-1]
    rows = np.repeat(np.arange(n, dtype=np.int64), keep.sum(axis=1))
    return rows, s[keep]


#: Rows of a candidate matrix processed at once by :func:`_candidate_parts` (bounds its temporaries to
#: ≈ 10 arrays of rows × w entries: 0.9 GB for w = 110, instead of ≈ 8 GB at N = 10⁶ in one piece).
_CANDIDATE_BLOCK_ROWS = 100_000


def _candidate_parts(X, k_max, spec, cand, block, margin: float = 0.0):
    """Graph rows from an (N, w) candidate matrix: exact keys of the distinct candidates, sorted by (key, index),
    cut after the ties at the k_max-th key; :data:`_CANDIDATE_BLOCK_ROWS` rows at a time (rows are
    independent, so the result does not depend on the block size).

    A row is taken from its candidates only if it has at least k_max of them and, when ``margin > 0``, its
    largest candidate key exceeds ``(1 + margin)`` × its k_max-th key (so, for candidates that are the exact
    w nearest neighbours, no tie or closer object can be missing); the other rows are computed by brute force.
    """
    n = X.shape[0]
    parts, short = [], []
    for first in range(0, n, _CANDIDATE_BLOCK_ROWS):
        p, sh = _candidate_block(X, k_max, spec, cand[first:first + _CANDIDATE_BLOCK_ROWS], first, margin)
        parts.append(p)
        short.append(sh)
    short_rows = np.concatenate(short)
    if short_rows.size:
        parts += _select_rows(X, spec, short_rows, k_max, block)
    return parts


def _candidate_block(X, k_max, spec, cand, first, margin):
    """:func:`_candidate_parts` for the rows ``first .. first + len(cand) - 1``: (part, rows left to brute force)."""
    n = cand.shape[0]
    rows, flat = _unique_candidates(cand, first)
    keys = _candidate_keys(X, spec, rows + first, flat)
    order = np.lexsort((flat, keys, rows))
    rows, flat, keys = rows[order], flat[order], keys[order]
    del order
    counts = np.bincount(rows, minlength=n)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    pos = np.arange(rows.size) - starts[rows]
    short = counts < k_max
    kth = np.full(n, np.inf)
    ok = ~short
    kth[ok] = keys[starts[ok] + k_max - 1]
    if margin > 0:
        last = np.full(n, -np.inf)
        last[ok] = keys[starts[ok] + counts[ok] - 1]
        short |= ~(last > kth * (1.0 + margin))
        ok = ~short
    keep = (~short[rows]) & (keys <= kth[rows])
    kept_counts = np.bincount(rows[keep], minlength=n)
    width = max(int(kept_counts.max()), k_max)
    full_rows = np.flatnonzero(ok)
    kk = np.full((full_rows.size, width), np.inf)
    ii = np.full((full_rows.size, width), -1, dtype=np.int64)
    slot = np.full(n, -1)
    slot[full_rows] = np.arange(full_rows.size)
    r_keep, p_keep = rows[keep], pos[keep]
    kk[slot[r_keep], p_keep] = keys[keep]
    ii[slot[r_keep], p_keep] = flat[keep]
    return (full_rows + first, kk, ii, kept_counts[full_rows]), np.flatnonzero(short) + first


#: Metrics of the approximate backend: faiss's own metric, or a linear map of X under which L2 ranks the same.
_APPROX_METRICS = ("euclidean", "cityblock", "chebyshev", "minkowski", "cosine", "canberra", "braycurtis",
                   "correlation", "seuclidean", "mahalanobis")


def _faiss_space(X, spec):
    """(float32 vectors, faiss metric, metric_arg) whose faiss distance ranks candidates like ``spec``."""
    import faiss

    direct = {"euclidean": faiss.METRIC_L2, "cityblock": faiss.METRIC_L1, "chebyshev": faiss.METRIC_Linf,
              "minkowski": faiss.METRIC_Lp, "canberra": faiss.METRIC_Canberra,
              "braycurtis": faiss.METRIC_BrayCurtis}
    if spec.name in direct:
        return X, direct[spec.name], float(spec.params.get("p", 0.0))
    Y = X
    if spec.name == "correlation":
        Y = X - X.mean(axis=1, keepdims=True)
    if spec.name in ("cosine", "correlation"):  # 1 - cos is monotone in the L2 distance of unit vectors
        norm = np.linalg.norm(Y, axis=1, keepdims=True)
        Y = Y / np.where(norm > 0, norm, 1.0)
    elif spec.name == "seuclidean":
        V = np.asarray(spec.params.get("V", np.var(X, axis=0, ddof=1)), dtype=np.float64)
        Y = X / np.sqrt(np.where(V > 0, V, 1.0))
    elif spec.name == "mahalanobis":  # (x-y)' VI (x-y) = |L'(x-y)|² with VI = L L'
        VI = spec.params.get("VI")
        VI = np.linalg.inv(np.cov(X.T)) if VI is None else np.asarray(VI, dtype=np.float64)
        Y = X @ np.linalg.cholesky(VI)
    return Y, faiss.METRIC_L2, 0.0


def _hnsw_candidates(X, spec, width, seed, params) -> np.ndarray:
    """(N, width) candidate neighbours of every object from a faiss HNSW index (``IndexHNSWFlat``).

    Built on one thread, with the level generator seeded by ``seed``: HNSW insertion on several threads depends
    on the thread schedule; on one thread the index depends only on (X, metric, parameters, seed). The search
    then runs on faiss's OpenMP threads: each query walks the fixed index on its own, so its candidates do not
    depend on the number of threads (tested). Padding (-1) where HNSW returns fewer than ``width`` results.
    """
    try:
        import faiss
    except ImportError as exc:
        raise ImportError("backend='approx' needs the faiss-cpu package: pip install 'odeval[approx]'") from exc
    Y, metric, arg = _faiss_space(X, spec)
    Y = np.ascontiguousarray(Y, dtype=np.float32)
    index = faiss.IndexHNSWFlat(Y.shape[1], int(params.get("M", 16)), metric)
    if metric == faiss.METRIC_Lp:  # the flat storage computes the distances: it needs p too
        index.metric_arg = arg
        faiss.downcast_index(index.storage).metric_arg = arg
    index.hnsw.rng = faiss.RandomGenerator(int(seed))
    index.hnsw.efConstruction = int(params.get("ef_construction", 64))
    index.hnsw.efSearch = max(int(params.get("ef_search", 2 * width)), width)
    threads = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        index.add(Y)
    finally:
        faiss.omp_set_num_threads(threads)
    _, cand = index.search(Y, width)
    return cand


def _approx_graph(X, k_max, spec, block, seed, approx_params, recall_sample) -> KNNGraph:
    if spec.name not in _APPROX_METRICS:
        raise ValueError(f"backend='approx' does not support metric {spec.label!r}; use backend='exact'")
    n = X.shape[0]
    width = min(n, k_max + 1 + max(5, k_max // 10))
    cand = _hnsw_candidates(X, spec, width, seed, approx_params)
    parts = _candidate_parts(X, k_max, spec, cand, block)
    del cand
    got = _assemble(X, k_max, spec, parts, "approx")  # one graph: the recall is read from it
    del parts
    if recall_sample:
        rng = np.random.default_rng(seed)
        sample = np.sort(rng.choice(n, size=min(n, int(recall_sample)), replace=False)).astype(np.int64)
        exact = {int(r): set(i[: c].tolist()) for rr, _, ii_, cc in _select_rows(X, spec, sample, k_max, block)
                 for r, i, c in zip(rr, ii_, cc, strict=True)}
        hits = [len(exact[int(r)] & set(got.indices[r, : got.counts[r]].tolist())) / len(exact[int(r)])
                for r in sample]
        got.approx_recall = float(np.mean(hits))
    return got


def device_graph(X: np.ndarray, k_max: int, spec: Metric, backend: str, device: str,
                 torch_device: str | None = None) -> KNNGraph:
    """``knn_graph(..., device=...)`` for a device other than "cpu": the exact graph searched by PyTorch
    (:mod:`odeval.neighbors._torch_graph`), assembled on the host like the CPU graph (search "torch").
    ``torch_device`` overrides the checked device (tests: "cpu")."""
    from odeval.neighbors._torch_graph import device_graph_parts

    parts, reason = device_graph_parts(X, k_max, spec, backend, device, max_abs_value=_MAX_ABS_VALUE,
                                       torch_device=torch_device)
    g = _assemble(X, k_max, spec, parts, "exact")
    g.search, g.search_reason = "torch", reason
    return g
