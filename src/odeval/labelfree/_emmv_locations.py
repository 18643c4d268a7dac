"""Location-compressed EM/MV draws: a feature draw of few distinct points scored on its distinct locations.

A draw of d' attributes can leave few *distinct* points: Annthyroid's 15 binary attributes give draws of 10–300
distinct points among 6,729 objects. Each object then has thousands of exact duplicates, and by odeval's
convention (duplicates are neighbours at distance 0, every object tied at the k-distance belongs to N_k) the kNN
graph of the draw and the query of its 10⁵ uniform points hold rows thousands wide — ≈ 14 of the ≈ 16.6 CPU s of
such a draw (benchmarks/README.md, emmv_campos.py, "third round"), twice where ``sampling="auto"`` redoes it with
nested points. Every score of the kNN family depends on a row only through the *locations* of its members and
how many members sit at each (the members of one location are interchangeable: same coordinates, same distances,
same k-distances and densities), so this module works on the D distinct locations instead:

* **location rows** (:func:`location_rows`): the nearest distinct locations of each query (a uniform point, or a
  location itself with its own count less one: k excludes the object), each with its multiplicity, found by
  :func:`odeval.neighbors._leaf_query.query_knn_leaves` among the D locations — rows of ≈ k_max + ties *locations*
  instead of thousands of objects. The keys are those of the full search bit for bit (same coordinates, same
  arithmetic). N_k(q) is the prefix of locations up to the one where the cumulative count reaches k, plus every
  location tied with it (:func:`_loc_sizes`), exactly the locations of today's tie-complete row.
* **first-k methods** (kNN, kNNW, LoOP: no tie extension): the first ``k_max`` entries of every object's and every
  uniform point's row are rebuilt *exactly*, members of a tie group in index order (:func:`_expand_first`), and
  the methods' own code scores them.
* **tie-complete sums** (LOF, SimplifiedLOF, LDOF): numba kernels on the location rows that add the same terms in
  the same order as the uncompressed kernels: a location alone at its distance adds its term once per member
  (multiplicity × value is *not* used: it would round differently), the members of several locations tied at one
  distance are merged by object index as the full row lists them (:func:`_row_sum`, :func:`_row_labels`); LDOF
  sums D̄ by location exactly where :mod:`odeval.detectors.ldof` does (rows of ≥ 128 members on ≤ half as many
  locations, :func:`odeval.detectors.ldof._ldof_row_by_location`'s order) and pairwise in row order elsewhere,
  the location distances from one D × D table (the graph's arithmetic, symmetric to the last bit).

So every score is **bit-identical** to the uncompressed path (tested on duplicate-heavy data with tie groups of
several locations, and on Annthyroid's compressed draws: benchmarks/README.md), and so are EM and MV. The work per
draw is a leaf query of the D locations for each uniform point (rows of ≈ k_max locations), the sums above
(O(|N_k|) per row, as before, without writing thousands-wide padded rows) and O(N · k_max) for the first-k rows.

When (:func:`compress_draw`): D ≤ N / :data:`MIN_MULTIPLICITY` (a mean multiplicity of at least 4), D ≤
:data:`MAX_LOCATIONS`, every method one of the six above with its default (paper) variant, and no two distinct
locations at key 0 (an underflowing squared difference, which would put another location into a row's own
group at distance 0; never on scaled data). Other draws — every draw of a data
set without duplicates — take the uncompressed path unchanged.

References
----------
Goix, N. (2016). PhD thesis, chapter "How to Evaluate the Quality of Anomaly Detection Algorithms?", Algorithm
EMMV (feature sub-sampling). Breunig et al. (2000), Def. 5–7 (LOF); Schubert, Zimek, Kriegel (2014), §4.1
(SimplifiedLOF); Kriegel et al. (2009), Eq. 6–8 (LoOP); Zhang, Hutter, Jin (2009), Def. 1–3 (LDOF).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

from odeval.detectors.base import orient
from odeval.detectors.ldof import _TIE_ROW_MIN, _ldof_ratio, _location_ids

__all__ = ["MAX_LOCATIONS", "MIN_MULTIPLICITY", "DrawLocations", "compress_draw"]

#: A draw is scored on its distinct locations when N ≥ this × D (D distinct points among N objects).
MIN_MULTIPLICITY = 4
#: ... and D is at most this (the D × D table of location distances LDOF reads: 128 MB at 4,096).
MAX_LOCATIONS = 4096
_FIRST_K = ("kNN", "kNNW", "LoOP")
_TIE_SUMS = ("LOF", "SimplifiedLOF", "LDOF")


@njit(cache=True)
def _compact_rows(keys, idx, counts, self_rows):  # pragma: no cover - numba
    """Location rows from the leaf query's (keys, location indices): multiplicities attached, a location's own
    count less one in its own row (``self_rows``), zero counts dropped. Returns (keys, locs, cnt, width, ok):
    ``ok`` False when a row holds another location at key 0 (compression would then change N_k's order)."""
    m, w = keys.shape
    ok = True
    okeys = np.full((m, w), np.inf)
    olocs = np.full((m, w), -1, np.int64)
    ocnt = np.zeros((m, w), np.int64)
    width = np.zeros(m, np.int64)
    for r in range(m):
        n = 0
        for j in range(w):
            a = idx[r, j]
            if a < 0:
                break
            c = counts[a]
            if self_rows:
                if a == r:
                    c -= 1
                elif keys[r, j] == 0.0:
                    ok = False
            if c == 0:
                continue
            okeys[r, n] = keys[r, j]
            olocs[r, n] = a
            ocnt[r, n] = c
            n += 1
        width[r] = n
    return okeys, olocs, ocnt, width, ok


@njit(cache=True, parallel=True)
def _loc_sizes(keys, cnt, width, ks):  # pragma: no cover - numba
    """(sizes, ends), each (len(ks), rows): |N_k| (objects, ties included) and the number of location entries
    of N_k in every row — the prefix up to the location where the cumulative count reaches k, and every location
    tied with it."""
    m = keys.shape[0]
    T = ks.shape[0]
    sizes = np.zeros((T, m), np.int64)
    ends = np.zeros((T, m), np.int64)
    for r in prange(m):
        for t in range(T):
            k = ks[t]
            cum = 0
            j = 0
            while j < width[r]:
                cum += cnt[r, j]
                if cum >= k:
                    break
                j += 1
            kk = keys[r, j]
            j += 1
            while j < width[r] and keys[r, j] == kk:
                cum += cnt[r, j]
                j += 1
            sizes[t, r] = cum
            ends[t, r] = j
    return sizes, ends


@njit(cache=True, parallel=True)
def _expand_first(keys, locs, width, members, starts, k_max, row_loc, skip):  # pragma: no cover - numba
    """The first ``k_max`` (key, object index) entries of the uncompressed rows, exactly: output row r expands
    location row ``row_loc[r]`` leaving out object ``skip[r]`` (−1: none), the members of a group of tied
    locations merged in index order (the full rows are sorted by (key, index))."""
    R = row_loc.shape[0]
    okeys = np.empty((R, k_max))
    oidx = np.empty((R, k_max), np.int64)
    for r in prange(R):
        lr = row_loc[r]
        s = skip[r]
        filled = 0
        j = 0
        ptr = np.empty(width[lr], np.int64)
        while filled < k_max and j < width[lr]:
            g = j + 1
            while g < width[lr] and keys[lr, g] == keys[lr, j]:
                g += 1
            kj = keys[lr, j]
            for i in range(j, g):
                ptr[i] = starts[locs[lr, i]]
            while filled < k_max:
                best = -1
                bi = -1
                for i in range(j, g):
                    a = locs[lr, i]
                    p = ptr[i]
                    if p < starts[a + 1] and members[p] == s:
                        p += 1
                        ptr[i] = p
                    if p < starts[a + 1]:
                        o = members[p]
                        if best < 0 or o < best:
                            best = o
                            bi = i
                if bi < 0:
                    break
                okeys[r, filled] = kj
                oidx[r, filled] = best
                ptr[bi] += 1
                filled += 1
            j = g
    return okeys, oidx


@njit(cache=True)
def _row_sum(keys_r, locs_r, cnt_r, vals, end, members, starts, ptr, lab):  # pragma: no cover - numba
    """Σ over the first ``end`` location entries of one row of each entry's term ``vals[j]`` once per member, in the
    order of the uncompressed row (:func:`_row_labels`: a location alone at its key adds its term ``cnt`` times;
    the members of tied locations are merged by object index). So the same additions in the same order as the
    uncompressed kernels: bit for bit. ``lab`` holds at least the row's members."""
    s = 0.0
    for i in range(_row_labels(keys_r, locs_r, cnt_r, end, members, starts, ptr, lab)):
        s += vals[lab[i]]
    return s


@njit(cache=True, parallel=True)
def _density_loc(keys, dist, locs, cnt, ends, sizes, KD, simplified, members, starts):  # pragma: no cover - numba
    """LOF's lrd_k (SimplifiedLOF's density) of every location row, (len(ks), rows): ``n / Σ_{o ∈ N_k} max(d,
    k-dist(o))`` (``d``) summed as the uncompressed row (:func:`_row_sum`), +inf where the sum is 0
    (:func:`odeval.detectors.lof._density_all_k`). ``KD[a, t]``: k-distance of location a at ``ks[t]``."""
    T, m = ends.shape
    w = keys.shape[1]
    dens = np.empty((T, m))
    for r in prange(m):
        vals = np.empty(w)
        ptr = np.empty(w, np.int64)
        lab = np.empty(cnt[r, :ends[T - 1, r]].sum() + 1, np.int64)  # the row's members (ks ascending)
        for t in range(T):
            for j in range(ends[t, r]):
                d = dist[r, j]
                if not simplified:
                    kd = KD[locs[r, j], t]
                    if kd > d:
                        d = kd
                vals[j] = d
            s = _row_sum(keys[r], locs[r], cnt[r], vals, ends[t, r], members, starts, ptr, lab)
            n = sizes[t, r]
            dens[t, r] = n / s if s > 0 else np.inf
    return dens


@njit(cache=True, parallel=True)
def _ratio_loc(dens_q, keys, locs, cnt, ends, sizes, dens_ref, members, starts):  # pragma: no cover - numba
    """LOF_k = Σ_{o ∈ N_k} dens_ref(o) / (|N_k| · dens_q), 1 where dens_q = +inf
    (:func:`odeval.detectors.lof._ratio_all_k` on location rows, summed as the uncompressed row; ``dens_ref``
    (len(ks), D) per location)."""
    T, m = ends.shape
    w = keys.shape[1]
    out = np.empty((T, m))
    for r in prange(m):
        vals = np.empty(w)
        ptr = np.empty(w, np.int64)
        lab = np.empty(cnt[r, :ends[T - 1, r]].sum() + 1, np.int64)  # the row's members (ks ascending)
        for t in range(T):
            lp = dens_q[t, r]
            if np.isinf(lp):
                out[t, r] = 1.0
                continue
            for j in range(ends[t, r]):
                vals[j] = dens_ref[t, locs[r, j]]
            s = _row_sum(keys[r], locs[r], cnt[r], vals, ends[t, r], members, starts, ptr, lab)
            out[t, r] = s / (lp * sizes[t, r])
    return out


@njit(cache=True)
def _row_labels(keys_r, locs_r, cnt_r, end, members, starts, ptr, lab):  # pragma: no cover - numba
    """The location entry (``lab[i]``, an index into the row) of each member of the first ``end`` entries, in the
    order of the uncompressed row (a location alone at its key repeated ``cnt`` times; the members of tied
    locations — a group of equal keys — merged by object index, ``members`` / ``starts`` holding each location's
    objects ascending, as the full row sorted by (key, index) lists them; a row's own location has one member
    less and sits alone at key 0, :func:`_compact_rows`); returns the
    number of members."""
    n = 0
    j = 0
    while j < end:
        g = j + 1
        while g < end and keys_r[g] == keys_r[j]:
            g += 1
        if g == j + 1:
            for _ in range(cnt_r[j]):
                lab[n] = j
                n += 1
        else:
            total = 0
            for i in range(j, g):
                ptr[i] = starts[locs_r[i]]
                total += cnt_r[i]
            for _ in range(total):
                best = -1
                bi = j
                for i in range(j, g):
                    if ptr[i] < starts[locs_r[i] + 1]:
                        o = members[ptr[i]]
                        if best < 0 or o < best:
                            best = o
                            bi = i
                lab[n] = bi
                n += 1
                ptr[bi] += 1
        j = g
    return n


@njit(cache=True, parallel=True)
def _ldof_loc(keys, dist, locs, cnt, ends, sizes, table, members, starts, tie_row_min):  # pragma: no cover - numba
    """LDOF of every location row for ascending ks, (len(ks), rows), summed as the uncompressed LDOF kernels sum
    the same row (:mod:`odeval.detectors.ldof`), bit for bit: a row of at least ``tie_row_min`` members on at most
    half as many locations by location (d̄ over the members in order, D̄ = Σ_{a<b} c_a c_b d(a, b) over its
    locations ordered by location id: :func:`odeval.detectors.ldof._ldof_row_by_location`); any other row over
    its members in row order, each new member's distances to the earlier ones (:func:`odeval.detectors.ldof.
    _ldof_novelty_chunk`). ``table``: the D × D location distances (``sqrt`` of the key, symmetric to the
    last bit)."""
    T, m = ends.shape
    wmax = keys.shape[1]
    out = np.empty((T, m))
    for r in prange(m):
        w = ends[T - 1, r]
        nw = sizes[T - 1, r]
        if nw >= tie_row_min and 2 * w <= nw:
            order = np.argsort(locs[r, :w])
            slot = np.empty(w, np.int64)
            rep = np.empty(w, np.int64)
            for i in range(w):
                slot[order[i]] = i
                rep[i] = locs[r, order[i]]
            c = np.zeros(w)
            dsum = 0.0
            j = 0
            for t in range(T):
                while j < ends[t, r]:
                    d = dist[r, j]
                    for _ in range(cnt[r, j]):
                        dsum += d
                    c[slot[j]] += cnt[r, j]
                    j += 1
                psum = 0.0
                for a in range(w):
                    if c[a] == 0.0:
                        continue
                    inner = 0.0
                    for b in range(a + 1, w):
                        inner += c[b] * table[rep[a], rep[b]]
                    psum += c[a] * inner
                out[t, r] = _ldof_ratio(dsum, psum, sizes[t, r])
            continue
        ptr = np.empty(wmax, np.int64)
        lab = np.empty(nw, np.int64)
        _row_labels(keys[r], locs[r], cnt[r], w, members, starts, ptr, lab)
        dsum = 0.0
        psum = 0.0
        j = 0
        for t in range(T):
            target = sizes[t, r]
            while j < target:
                j += 1
                lb = locs[r, lab[j - 1]]
                dsum += dist[r, lab[j - 1]]
                for i in range(1, j):
                    psum += table[locs[r, lab[i - 1]], lb]
            out[t, r] = _ldof_ratio(dsum, psum, target)
    return out


@dataclass(eq=False)
class LocationRows:
    """Rows of nearest distinct locations with multiplicities (padded: key +inf, location −1, count 0)."""

    keys: np.ndarray
    dist: np.ndarray
    locs: np.ndarray
    cnt: np.ndarray
    width: np.ndarray


def location_rows(Xloc: np.ndarray, Q: np.ndarray, counts: np.ndarray, k_max: int, self_rows: bool
                  ) -> LocationRows | None:
    """The location rows of the queries ``Q`` (``self_rows``: Q is ``Xloc`` itself, k excludes the object), or
    None where two distinct locations lie at key 0 (see :func:`_compact_rows`)."""
    from odeval.neighbors._leaf_query import query_knn_leaves

    n_loc = Xloc.shape[0]
    # enough locations for a cumulative count ≥ k_max (each location holds ≥ 1 object; a row's own location may
    # hold none but itself); the leaf query adds every location tied with the last one
    kk = min(k_max + 1 if self_rows else k_max, n_loc)
    keys, idx = query_knn_leaves(Xloc, np.ascontiguousarray(Q, dtype=np.float64), kk, 0)
    okeys, olocs, ocnt, width, ok = _compact_rows(keys, idx, counts, self_rows)
    if not ok:
        return None
    w = max(int(width.max()), 1)
    okeys = np.ascontiguousarray(okeys[:, :w])
    return LocationRows(keys=okeys, dist=np.sqrt(okeys), locs=np.ascontiguousarray(olocs[:, :w]),
                        cnt=np.ascontiguousarray(ocnt[:, :w]), width=width)


class DrawLocations:
    """One feature draw ``Xf`` (N × d') on its D distinct locations, fitted for the methods of ``plan``
    (``[(method, detector, ks), ...]`` of :func:`odeval.labelfree.emmv_algorithm.emmv_many`); built by
    :func:`compress_draw`."""

    def __init__(self, Xf: np.ndarray, loc: np.ndarray, k_max: int, plan: list) -> None:
        from odeval.neighbors._kernels import pair_distances
        from odeval.neighbors._metrics import resolve_metric
        from odeval.neighbors.graph import KNNGraph

        n = Xf.shape[0]
        self.loc, self.k_max, self.plan, self.n = loc, k_max, plan, n
        n_loc = int(loc.max()) + 1
        self.counts = np.bincount(loc, minlength=n_loc).astype(np.int64)
        self.members = np.argsort(loc, kind="stable").astype(np.int64)  # each location's objects, ascending
        self.starts = np.concatenate([[0], np.cumsum(self.counts)]).astype(np.int64)
        self.Xloc = np.ascontiguousarray(Xf[self.members[self.starts[:-1]]])
        rows = location_rows(self.Xloc, self.Xloc, self.counts, k_max, True)
        self.rows = rows
        if rows is None:  # two distinct locations at key 0: compress_draw refuses the draw
            return
        self.spec = resolve_metric("euclidean").fit_to(Xf)
        self.all_ks = np.unique(np.concatenate([np.asarray(ks, dtype=np.int64) for _, _, ks in plan]))
        self.sizes, self.ends = _loc_sizes(rows.keys, rows.cnt, rows.width, self.all_ks)
        names = {det.info.name for _, det, _ in plan}
        self.tgraph = None
        if names & set(_FIRST_K):  # the exact first k_max entries of every object's row (self excluded)
            keys, idx = _expand_first(rows.keys, rows.locs, rows.width, self.members, self.starts, k_max, loc,
                                      np.arange(n, dtype=np.int64))
            self.tgraph = KNNGraph(distances=self.spec.key_to_distance(keys), indices=idx, k_max=k_max,
                                   metric=self.spec.label,
                                   X=np.ascontiguousarray(Xf), keys=keys, metric_spec=self.spec, search="tree",
                                   search_reason="first k_max entries rebuilt from the draw's distinct locations")
        # per location and k: the k-distance (LOF), the densities (LOF, SimplifiedLOF)
        self.kd = np.ascontiguousarray(np.take_along_axis(rows.dist, self._kth(rows, self.all_ks), axis=1))
        self.table = np.empty((0, 0))
        if "LDOF" in names:
            a, b = np.divmod(np.arange(n_loc * n_loc, dtype=np.int64), n_loc)
            self.table = pair_distances(self.Xloc, a, b, 0).reshape(n_loc, n_loc)
        self._dens_ref: dict[bool, np.ndarray] = {}

    @staticmethod
    def _kth(rows: LocationRows, ks: np.ndarray) -> np.ndarray:
        """(rows, len(ks)) position of the location holding the k-th nearest object."""
        cum = np.cumsum(rows.cnt, axis=1)
        return np.stack([np.argmax(cum >= k, axis=1) for k in ks], axis=1)

    def _t(self, ks: list[int]) -> np.ndarray:
        return np.searchsorted(self.all_ks, np.asarray(ks, dtype=np.int64))

    def _dens_ref_all(self, simplified: bool) -> np.ndarray:
        if simplified not in self._dens_ref:
            r = self.rows
            self._dens_ref[simplified] = _density_loc(r.keys, r.dist, r.locs, r.cnt, self.ends, self.sizes, self.kd,
                                                      simplified, self.members, self.starts)
        return self._dens_ref[simplified]

    def _tie_scores(self, name: str, q: LocationRows, sizes: np.ndarray, ends: np.ndarray, t: np.ndarray
                    ) -> np.ndarray:
        """Raw LOF / SimplifiedLOF / LDOF of location rows ``q`` at the ks of positions ``t`` in ``all_ks``."""
        if name == "LDOF":  # the kernel grows N_k with k: ascending distinct ks, then the requested order
            tu = np.unique(t)
            raw = _ldof_loc(q.keys, q.dist, q.locs, q.cnt, np.ascontiguousarray(ends[tu]),
                            np.ascontiguousarray(sizes[tu]), self.table, self.members, self.starts, _TIE_ROW_MIN)
            return raw[np.searchsorted(tu, t)]
        # only the method's own ks (``all_ks`` is the union over the plan's methods): every k's sums are
        # independent of the others, so the rows of the others would be work thrown away
        tu = np.unique(t)
        simplified = name == "SimplifiedLOF"
        dens_ref = np.ascontiguousarray(self._dens_ref_all(simplified)[tu])
        ends_u, sizes_u = np.ascontiguousarray(ends[tu]), np.ascontiguousarray(sizes[tu])
        dens_q = _density_loc(q.keys, q.dist, q.locs, q.cnt, ends_u, sizes_u, np.ascontiguousarray(self.kd[:, tu]),
                              simplified, self.members, self.starts)
        raw = _ratio_loc(dens_q, q.keys, q.locs, q.cnt, ends_u, sizes_u, dens_ref, self.members, self.starts)
        return raw[np.searchsorted(tu, t)]

    def score_data(self) -> dict[Any, np.ndarray]:
        """In-sample scores of the N objects, ``{method: (len(ks), N)}`` (as ``det.score_all_k(graph, ks)``)."""
        out = {}
        for method, det, ks in self.plan:
            name = det.info.name
            if name in _FIRST_K:
                out[method] = det.score_all_k(self.tgraph, ks)
            else:
                raw = self._tie_scores(name, self.rows, self.sizes, self.ends, self._t(ks))
                out[method] = orient(raw, det.info)[:, self.loc]
        return out

    def score_query(self, U: np.ndarray) -> dict[Any, np.ndarray] | None:
        """Novelty scores of the points ``U``, ``{method: (len(ks), M)}`` (as ``det.novelty_scores_all_k``)."""
        from odeval.neighbors.query import QueryKNN

        q = location_rows(self.Xloc, U, self.counts, self.k_max, False)
        sizes, ends = _loc_sizes(q.keys, q.cnt, q.width, self.all_ks)
        query = None
        out = {}
        for method, det, ks in self.plan:
            name = det.info.name
            if name in _FIRST_K:
                if query is None:
                    m = U.shape[0]
                    keys, idx = _expand_first(q.keys, q.locs, q.width, self.members, self.starts, self.k_max,
                                              np.arange(m, dtype=np.int64), np.full(m, -1, dtype=np.int64))
                    query = QueryKNN(distances=self.spec.key_to_distance(keys), indices=idx, keys=keys,
                                     k_max=self.k_max, Q=U, reference=self.tgraph)
                out[method] = det.novelty_scores_all_k(self.tgraph, query, ks)
            else:
                out[method] = orient(self._tie_scores(name, q, sizes, ends, self._t(ks)), det.info)
        return out


def _supported(det: Any) -> bool:
    name = det.info.name
    return (name in _FIRST_K or name in _TIE_SUMS) and getattr(det, "variant", "paper") == "paper"


def compress_draw(Xf: np.ndarray, k_max: int, plan: list) -> DrawLocations | None:
    """The draw ``Xf`` on its distinct locations when the rule of the module docstring holds, else None (the
    uncompressed path)."""
    from odeval.neighbors.graph import _MAX_ABS_VALUE

    n = Xf.shape[0]
    if n < MIN_MULTIPLICITY or not all(_supported(det) for _, det, _ in plan):
        return None
    Xf = np.ascontiguousarray(Xf, dtype=np.float64)
    if float(np.abs(Xf).max()) > _MAX_ABS_VALUE:
        return None
    loc = _location_ids(Xf)
    n_loc = int(loc.max()) + 1
    if n_loc * MIN_MULTIPLICITY > n or n_loc > MAX_LOCATIONS or n_loc < 2:
        return None
    draw = DrawLocations(Xf, loc, k_max, plan)
    return None if draw.rows is None else draw
