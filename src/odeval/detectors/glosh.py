"""GLOSH: global-local outlier scores from hierarchies (Campello, Moulavi, Zimek and Sander 2015)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numba import njit, prange

from odeval.detectors._neighborhood import _is_euclidean, _prepare_ks
from odeval.detectors.base import Detector, MethodInfo, Number, register

__all__ = ["GLOSH", "glosh_scores"]

# Non-Euclidean metrics: largest N for which the full pairwise distance matrix is kept (8·N² bytes ≈ 256 MB).
_DENSE_MAX_N = 5800


@njit(cache=True)
def _mst_mutual_reachability(D, X, dense, core):  # pragma: no cover - numba
    """Prim's MST of the complete mutual-reachability graph, max(core(a), core(b), d(a, b)); O(N²) time,
    O(N) memory beyond the distances (``D`` if ``dense``, else Euclidean distances from ``X`` on the fly).
    The vertices not yet in the tree are kept in a compact list. Returns (a, b, weight) of the N−1 edges."""
    n = core.shape[0]
    d = X.shape[1]
    rem = np.arange(1, n)
    dmin = np.full(n - 1, np.inf)
    src = np.zeros(n - 1, dtype=np.int64)
    ea = np.empty(n - 1, dtype=np.int64)
    eb = np.empty(n - 1, dtype=np.int64)
    ew = np.empty(n - 1)
    m = n - 1
    cur = 0
    for step in range(n - 1):
        cc = core[cur]
        best = -1
        bv = np.inf
        for i in range(m):
            j = rem[i]
            dm = dmin[i]
            w0 = cc if cc > core[j] else core[j]
            if w0 < dm:  # otherwise this edge cannot improve j: skip the distance
                if dense:
                    dd = D[cur, j]
                else:
                    # partial sums only grow: stop as soon as d(cur, j) surely exceeds dmin
                    lim = dm * dm * (1.0 + 1e-12)
                    s = 0.0
                    for t in range(d):
                        v = X[cur, t] - X[j, t]
                        s += v * v
                        if s > lim:
                            break
                    dd = np.sqrt(s) if s <= lim else np.inf
                w = dd if dd > w0 else w0
                if w < dm:
                    dmin[i] = w
                    src[i] = cur
            if best < 0 or dmin[i] < bv:
                best = i
                bv = dmin[i]
        nxt = rem[best]
        ea[step] = src[best]
        eb[step] = nxt
        ew[step] = bv
        m -= 1
        rem[best] = rem[m]
        dmin[best] = dmin[m]
        src[best] = src[m]
        cur = nxt
    return ea, eb, ew


@njit(cache=True)
def _find(parent, i):  # pragma: no cover - numba
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(cache=True)
def _glosh_from_mst(ea, eb, ew, min_cluster_size):  # pragma: no cover - numba
    """GLOSH from the MST: single-linkage dendrogram, HDBSCAN* cluster tree with simultaneous removal of
    equal-weight edges, then 1 − ε_max(C)/ε(x)."""
    n = ea.shape[0] + 1
    order = np.argsort(ew, kind="mergesort")
    # binary dendrogram: nodes 0..n-1 leaves, n..2n-2 internal
    left = np.empty(2 * n - 1, dtype=np.int64)
    right = np.empty(2 * n - 1, dtype=np.int64)
    height = np.zeros(2 * n - 1)
    size = np.ones(2 * n - 1, dtype=np.int64)
    uf = np.arange(2 * n - 1)
    comp = np.arange(2 * n - 1)  # union-find root -> dendrogram node
    for e in range(n - 1):
        i = order[e]
        ra = _find(uf, ea[i])
        rb = _find(uf, eb[i])
        node = n + e
        left[node] = comp[ra]
        right[node] = comp[rb]
        height[node] = ew[i]
        size[node] = size[comp[ra]] + size[comp[rb]]
        uf[rb] = ra
        comp[ra] = node
    root = 2 * n - 2
    eps = np.zeros(n)  # ε(x): the radius at which x leaves its last cluster
    clus = np.zeros(n, dtype=np.int64)  # that cluster
    cparent = np.full(n, -1, dtype=np.int64)  # parent of each cluster (≤ n clusters)
    n_clusters = 1
    # work stack of (node, cluster); expansion stack for equal-height children; leaf-collection stack
    stack_node = np.empty(2 * n, dtype=np.int64)
    stack_clu = np.empty(2 * n, dtype=np.int64)
    top = 0
    stack_node[0] = root
    stack_clu[0] = 0
    top = 1
    eff = np.empty(2 * n, dtype=np.int64)
    exp = np.empty(2 * n, dtype=np.int64)
    leaves = np.empty(2 * n, dtype=np.int64)
    while top > 0:
        top -= 1
        x = stack_node[top]
        c = stack_clu[top]
        h = height[x]
        # effective children: descend through internal children at the same height
        ne = 0
        sp = 0
        exp[sp] = left[x]
        sp += 1
        exp[sp] = right[x]
        sp += 1
        while sp > 0:
            sp -= 1
            y = exp[sp]
            if y >= n and height[y] == h:
                exp[sp] = left[y]
                sp += 1
                exp[sp] = right[y]
                sp += 1
            else:
                eff[ne] = y
                ne += 1
        nbig = 0
        for i in range(ne):
            if size[eff[i]] >= min_cluster_size:
                nbig += 1
        for i in range(ne):
            y = eff[i]
            if size[y] >= min_cluster_size:
                if nbig >= 2:
                    cparent[n_clusters] = c
                    stack_clu[top] = n_clusters
                    n_clusters += 1
                else:
                    stack_clu[top] = c
                stack_node[top] = y
                top += 1
            else:
                # all points of y leave cluster c at radius h
                lp = 0
                leaves[lp] = y
                lp += 1
                while lp > 0:
                    lp -= 1
                    z = leaves[lp]
                    if z < n:
                        eps[z] = h
                        clus[z] = c
                    else:
                        leaves[lp] = left[z]
                        lp += 1
                        leaves[lp] = right[z]
                        lp += 1
    # ε_max(C): smallest ε of any point of C or of its descendant clusters
    emax = np.full(n_clusters, np.inf)
    for z in range(n):
        if eps[z] < emax[clus[z]]:
            emax[clus[z]] = eps[z]
    for c in range(n_clusters - 1, 0, -1):  # children are created after their parents
        p = cparent[c]
        if emax[c] < emax[p]:
            emax[p] = emax[c]
    out = np.empty(n)
    for z in range(n):
        e = eps[z]
        out[z] = 0.0 if e == 0.0 else 1.0 - emax[clus[z]] / e
    return out


@njit(cache=True, parallel=True)
def _glosh_all_k(D, X, dense, cores, mcs):  # pragma: no cover - numba
    nk, n = cores.shape
    out = np.empty((nk, n))
    for t in prange(nk):
        ea, eb, ew = _mst_mutual_reachability(D, X, dense, cores[t])
        out[t] = _glosh_from_mst(ea, eb, ew, mcs[t])
    return out


def glosh_scores(graph: Any, ks: int | Sequence[int], min_cluster_size: int | None = None) -> np.ndarray:
    """GLOSH scores of all objects for every k in ``ks`` (k = the number of other neighbours that defines the
    core distance), from one kNN graph.

    Parameters
    ----------
    graph : KNNGraph
        Exact kNN graph (:func:`odeval.neighbors.knn_graph`) with ``k_max >= max(ks)``; the MST also needs
        pairwise distances, computed from ``graph.X`` (Euclidean: in numba, on the fly, O(N) memory; other
        metrics: a full matrix through ``graph.distance_between``, up to N = 5800).
    ks : int or sequence of int
        Each ≥ 2.
    min_cluster_size : int, optional
        Smallest cluster of the HDBSCAN* hierarchy (≥ 2). Default: k, as the ``hdbscan`` library's default
        (``min_samples = min_cluster_size``).

    Returns
    -------
    ndarray of shape (len(ks), n_objects)
        GLOSH(x) ∈ [0, 1]; higher = more outlying; 0 for the densest object of every cluster (1 when that
        densest object is an exact duplicate, ε_max = 0).

    Notes
    -----
    Campello et al. (2015), Sections 2–3 and Definition 6 (GLOSH):

    * core distance: core(x) = kdist_k(x), the distance to the k-th nearest *other* object. This is the
      ``hdbscan`` library's convention (``min_samples = k``); the paper's m_pts counts x itself, so
      k = m_pts − 1.
    * mutual reachability d_mreach(a, b) = max(core(a), core(b), d(a, b)); its minimum spanning tree (exact
      Prim over all pairs, O(N²) time; a distance is skipped or cut short when it cannot improve the tree)
      gives the HDBSCAN* hierarchy: lowering ε removes edges of weight ≥ ε.
      Edges of equal weight are removed simultaneously, as in the paper; a component of fewer than
      ``min_cluster_size`` objects is noise. A cluster that splits into ≥ 2 valid components ends and the
      components become child clusters; if one valid component remains, the cluster shrinks.
    * ε(x) = the radius at which x leaves its last cluster C_x; ε_max(x) = the smallest radius at which any
      object of C_x or of a descendant cluster leaves it (the densest object of that subtree)::

          GLOSH(x) = 1 − ε_max(x) / ε(x)          (0 when ε(x) = 0, i.e. exact duplicates)

    The ``hdbscan`` library builds a binary single-linkage tree, so where several MST edges share one weight
    its cluster tree (and then GLOSH) can depend on the order in which it processes them.

    References
    ----------
    R. J. G. B. Campello, D. Moulavi, A. Zimek, J. Sander. Hierarchical density estimates for data
    clustering, visualization, and outlier detection. ACM TKDD 10(1), 5:1–5:51, 2015.
    """
    return GLOSH(min_cluster_size=min_cluster_size).raw_scores_all_k(graph, ks)


@register
class GLOSH(Detector):
    """Global-local outlier score from hierarchies (Campello et al. 2015); see :func:`glosh_scores`."""

    info = MethodInfo(name="GLOSH", min_k=2, inverted=False, inlier_value=0.0, score_range=(0.0, 1.0),
                      reference="R. J. G. B. Campello, D. Moulavi, A. Zimek, J. Sander. Hierarchical density "
                      "estimates for data clustering, visualization, and outlier detection. ACM TKDD 10(1), 2015.")

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        "min_cluster_size": Number(None, low=2, integer=True, allow_none=True),
    }

    def raw_scores_all_k(self, graph: Any, ks: Sequence[int]) -> np.ndarray:
        _, uniq, inverse = _prepare_ks(graph, ks, self.info)
        n = int(graph.n_objects)
        X = np.ascontiguousarray(graph.X, dtype=np.float64)
        if _is_euclidean(graph):  # distances on the fly (with early exit): O(N) memory
            dense = False
            D = np.empty((1, 1))
        else:
            if n > _DENSE_MAX_N:
                raise ValueError(f"GLOSH: metric {getattr(graph.metric, 'name', graph.metric)!r} needs the full "
                                 f"distance matrix, supported up to N={_DENSE_MAX_N} objects (got N={n}); use "
                                 "the Euclidean metric")
            dense = True
            D = np.empty((n, n))
            for a in range(n):
                D[a] = graph.distance_between(np.full(n, a), np.arange(n))
        cores = np.stack([np.asarray(graph.kdist(int(k)), dtype=np.float64) for k in uniq])
        mcs = uniq.copy() if self.min_cluster_size is None else np.full(uniq.size, self.min_cluster_size)
        return _glosh_all_k(D, X, dense, cores, mcs.astype(np.int64))[inverse]
