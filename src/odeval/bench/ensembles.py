"""Similarity of scorings and outlier ensembles over the score vectors of a results store.

This module joins the results store (:mod:`odeval.bench.store`, table ``scores``, kept when a study sets
``keep_scores = true``) with the pure cores of :mod:`odeval.scaling` and :mod:`odeval.compare`:

1. :func:`read_scorings` reads, through :class:`odeval.bench.store.ResultStore`, the stored score vectors of
   one dataset variant (one row per scoring key: method, parameters, metric, setting with k, seed) and the
   variant's labels (table ``labels``), and checks that the vectors come from one dataset file and match the labels.
2. :meth:`StoredScorings.unified` normalises every row with :func:`odeval.scaling.unify`. The store holds
   odeval's *public* scores (higher = more outlying; ODIN and FastABOD already negated), so ``unify`` is
   called with ``orientation="public"``; it converts back to the raw orientation before the inversions of
   Kriegel et al. (2011).
3. :func:`similarity_from_store` computes the class-balanced similarity matrix (Schubert et al. 2012, Sect. 3)
   with the ground truth as row/column 0; :func:`ensemble_from_store` builds the greedy ensemble of
   Schubert et al. (2012, Sect. 4.3) without labels and evaluates it against the best single scoring, the
   naive ensemble and the random-ensemble control group (Table 4 style).

Why here: the stage order is ``scaling → compare → … → bench → analysis → report``. ``odeval.compare`` holds
the pure cores and must not know about the store; ``bench`` owns the store and its schema, and may import
the earlier stages. The report and the command line (later stages) call these functions.

References
----------
H.-P. Kriegel, P. Kröger, E. Schubert, A. Zimek. Interpreting and Unifying Outlier Scores. SDM 2011.
E. Schubert, R. Wojdanowski, A. Zimek, H.-P. Kriegel. On Evaluation of Outlier Rankings and Outlier Scores.
SDM 2012.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from odeval._key import ScoringKey, distinct_names
from odeval.bench.store import ResultStore, run_key

__all__ = [
    "NoStoredScoresError",
    "StoreEnsemble",
    "StoreSimilarity",
    "StoredScorings",
    "ensemble_from_store",
    "read_scorings",
    "select_scorings",
    "similarity_from_store",
    "stored_keys",
    "stored_runs",
]

_KEEP_SCORES_HINT = ("the study did not keep its score vectors; set keep_scores = true in the [study] table "
                     "of the study file and run it again (keep_scores is part of the unit id, so the units are "
                     "recomputed with their scores)")


class NoStoredScoresError(ValueError):
    """The results store holds no score vectors for the requested dataset (study option ``keep_scores``)."""


def stored_runs(store: str | Path, dataset: str, *, measure: str = "roc_auc") -> pd.DataFrame:
    """The scorings of ``dataset`` kept in the store's ``scores`` table, without the vectors.

    Returns
    -------
    DataFrame
        Columns ``unit_id``, ``file_sha256``, ``method``, ``params`` (JSON), ``metric``, ``k``, ``setting``
        (JSON of the non-k grid point, '' when none), ``seed``, ``name`` and the column ``measure`` (default
        ``roc_auc``) of each run. One row per distinct scoring key (:func:`odeval.bench.store.run_key`: method,
        params, metric, setting with k, seed) — a scoring stored by several units (two studies sharing it) is
        listed once (the smallest ``unit_id``), since scores are a pure function of (dataset file, key);
        scorings that differ only by their setting or seed are all kept. ``k`` is ``int64`` when every scoring
        has one (the kNN family), else the nullable ``Int64`` (NA for a scoring without k); ``seed`` is
        ``Int64``. Ordered by method, params, metric, k, setting, seed. ``name`` is the scoring key's name among
        the dataset's scorings (:func:`odeval._key.distinct_names`): ``METHOD-NNN`` (e.g. ``LOF-010``), with the
        parameters and the metric added when a method occurs with several of them, ``-a=v,...`` for a setting
        that is not k alone and ``@seed`` for a seeded scoring (``IsolationForest-n_estimators=20@1``).

    Raises
    ------
    StoreError
        If the store cannot be opened (missing, not DuckDB, in use, other schema version).
    NoStoredScoresError
        If the store has no score vector of ``dataset`` (names the study option ``keep_scores``).
    """
    with ResultStore(store, read_only=True) as rs:
        frame = rs.kept_scorings(dataset, measure=measure)
        if frame.empty:
            names = rs.datasets()
            if dataset not in names:
                shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
                raise ValueError(f"{store}: no dataset {dataset!r} in the store; datasets: {shown or 'none'}")
            n_all = rs.n_scores()
            if n_all == 0:
                raise NoStoredScoresError(f"{store}: {_KEEP_SCORES_HINT}")
            raise NoStoredScoresError(f"{store}: no score vector of dataset {dataset!r} ({n_all} vectors of other "
                                      f"datasets are stored): {_KEEP_SCORES_HINT}")
    frame["metric"] = frame["metric"].fillna("")
    frame["setting"] = frame["setting"].fillna("")
    frame["k"] = frame["k"].astype(np.int64 if frame["k"].notna().all() else "Int64")
    frame["seed"] = frame["seed"].astype("Int64")
    keys = stored_keys(frame)
    # only the same key stored twice (two studies) is one scoring; the first row has the smallest unit_id
    first = ~pd.Series(keys).duplicated(keep="first").to_numpy()
    frame = frame[first].reset_index(drop=True)
    frame["name"] = distinct_names([key for key, keep in zip(keys, first, strict=True) if keep])
    return frame


def stored_keys(runs: pd.DataFrame) -> list[ScoringKey]:
    """The :class:`~odeval._key.ScoringKey` of every row of :func:`stored_runs` (columns ``method``, ``params``
    JSON, ``metric``, ``k`` and, where present, ``setting`` and ``seed``; :func:`odeval.bench.store.run_key`)."""
    return [run_key(row) for row in runs.to_dict("records")]


def _setting_order(setting: tuple[tuple[str, Any], ...]) -> tuple[Any, ...]:
    """Sort key of a setting: numbers by value, anything else by its JSON text after the numbers."""
    def value(v: Any) -> tuple[int, float, str]:
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            return (0, float(v), "")
        return (1, 0.0, json.dumps(v, sort_keys=True, default=str))
    return tuple((name, value(v)) for name, v in setting)


def select_scorings(runs: pd.DataFrame, *, n_grid: int = 2, measure: str = "roc_auc") -> pd.DataFrame:
    """A readable subset of the scorings of :func:`stored_runs`: each configuration at its best setting plus a grid.

    For every configuration (method, params, metric) the *settings* are the points of its study axes (the
    setting of its scoring keys: k for the kNN family, ``n_bins`` for HBOS, ``h`` and k for LDF over h):

    - the best setting: the highest ``measure``, the mean over the seeds of a seeded configuration (as
      :func:`odeval.analysis.per_variant_summary` ranks settings); ties: the first setting in order;
    - ``n_grid`` settings spread over them. When the setting is k alone (the kNN family over k) these are the
      stored k nearest to ``n_grid`` values spread evenly from the smallest to the largest k (the smallest and the
      largest for ``n_grid = 2``; ties: the smaller k), as always; otherwise the settings (ordered by the values
      of their axes, sorted by axis name) at ``n_grid`` evenly spread positions (the first and the last for
      ``n_grid = 2``, the middle one for ``n_grid = 1``; positions rounded half to even).

    Every seed of a picked setting is kept (each seed is its own stored scoring, named ``...@seed``): the scores
    are not averaged, so every selected row is a stored vector. Without the ``measure`` column only the grid is
    taken.

    Returns
    -------
    DataFrame
        The selected rows of ``runs`` (same columns), in the order of ``runs``.
    """
    keys = stored_keys(runs)
    settings = pd.Series([key.setting for key in keys], index=runs.index)
    keep: set[int] = set()
    for _, grp in runs.groupby(["method", "params", "metric"], sort=False):
        grp_settings = settings.loc[grp.index]
        order = sorted(set(grp_settings), key=_setting_order)  # one entry per setting (its seeds together)
        if measure in grp.columns and grp[measure].notna().any():
            means = grp[measure].astype(np.float64).groupby(grp_settings.map(order.index)).mean()
            vals = np.array([means.get(i, np.nan) for i in range(len(order))], dtype=np.float64)
            best = order[int(np.flatnonzero(vals == np.nanmax(vals))[0])]
            keep.update(int(i) for i, s in grp_settings.items() if s == best)
        if n_grid <= 0:
            continue
        if all(len(s) == 1 and s[0][0] == "k" for s in order):  # the kNN family over k: nearest stored k
            ks = np.array([s[0][1] for s in order], dtype=np.int64)
            targets = np.linspace(ks.min(), ks.max(), n_grid) if n_grid > 1 else np.array([np.median(ks)])
            picked = [order[int(np.argmin(np.abs(ks - t)))] for t in targets]
        else:
            positions = np.linspace(0, len(order) - 1, n_grid) if n_grid > 1 else np.array([(len(order) - 1) / 2])
            picked = [order[int(p)] for p in np.rint(positions)]  # half to even
        for setting in picked:
            keep.update(int(i) for i, s in grp_settings.items() if s == setting)
    return runs.loc[sorted(keep)]


@dataclass(frozen=True)
class StoredScorings:
    """Score vectors of one dataset variant read from a results store.

    Attributes
    ----------
    dataset : str
        The variant name (``runs.dataset``).
    scores : ndarray of shape (R, N)
        One scoring per row: public scores as stored (higher = more outlying; ±inf possible) or, after
        :meth:`unified`, outlier probabilities in [0, 1].
    labels : ndarray of bool, shape (N,)
        True for the true outliers (the store's ``labels`` table).
    runs : DataFrame
        One row per scoring: ``unit_id``, ``method``, ``params``, ``metric``, ``k``, ``setting``, ``seed``,
        ``name`` (see
        :func:`stored_runs`).
    unified_with : tuple of str
        The one-line :class:`odeval.scaling.Unification` descriptions used, one per method (empty before
        :meth:`unified`).
    dropped : tuple of (str, str)
        Scorings left out by :meth:`unified` and why (name, reason).
    """

    dataset: str
    scores: np.ndarray
    labels: np.ndarray
    runs: pd.DataFrame = field(repr=False)
    unified_with: tuple[str, ...] = ()
    dropped: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.runs["name"])

    def unified(self, lam: float = 1.0) -> StoredScorings:
        """Every row normalised with :func:`odeval.scaling.unify` (``orientation="public"``; λ = ``lam``).

        A row that cannot be normalised (the scaling raises, e.g. too few finite scores) or that keeps NaN
        values is dropped and listed in ``dropped`` with the reason — never silently.
        """
        from odeval.scaling import recommended_unification

        recipes: dict[str, Any] = {}
        rows, keep, dropped = [], [], list(self.dropped)
        for i, (name, method) in enumerate(zip(self.runs["name"], self.runs["method"], strict=True)):
            recipe = recipes.get(method)
            if recipe is None:
                recipe = recipes[method] = recommended_unification(str(method), lam=lam)
            try:
                u = recipe.apply(self.scores[i], orientation="public")
            except ValueError as exc:
                dropped.append((str(name), f"unify failed: {exc}"))
                continue
            if not np.isfinite(u).all():
                bad = np.flatnonzero(~np.isfinite(u))
                dropped.append((str(name), f"{bad.size} non-finite normalised score(s), first at object(s) "
                                           f"{bad[:5].tolist()}"))
                continue
            rows.append(u)
            keep.append(i)
        if not rows:
            raise ValueError(f"{self.dataset}: no scoring could be normalised: "
                             + "; ".join(f"{n}: {r}" for n, r in dropped[:5]))
        return StoredScorings(self.dataset, np.vstack(rows), self.labels,
                              self.runs.iloc[keep].reset_index(drop=True),
                              tuple(r.description for r in recipes.values()), tuple(dropped))


def _as_list(values: Iterable[Any] | None) -> list[Any] | None:
    if values is None:
        return None
    if isinstance(values, str):
        values = [v for v in values.split(",") if v.strip()]
    return [v.strip() if isinstance(v, str) else v for v in values]


def read_scorings(
    store: str | Path,
    dataset: str,
    *,
    methods: Iterable[str] | str | None = None,
    ks: Iterable[int] | None = None,
    runs: pd.DataFrame | None = None,
) -> StoredScorings:
    """Read the stored score vectors of one dataset variant and its labels.

    Parameters
    ----------
    store : path
        A DuckDB results store (:class:`odeval.bench.ResultStore`).
    dataset : str
        The variant name (``runs.dataset``).
    methods : iterable of str or comma-separated str, optional
        Keep only these methods (case-insensitive; every name must occur in the store).
    ks : iterable of int, optional
        Keep only these k among the scorings with a k; scorings without k (imported estimators) stay.
    runs : DataFrame, optional
        A subset of :func:`stored_runs` (e.g. :func:`select_scorings`) to read instead of filtering.

    Returns
    -------
    StoredScorings
        Public scores as stored (not yet normalised: call :meth:`StoredScorings.unified`).

    Raises
    ------
    NoStoredScoresError
        If the store kept no score vectors of ``dataset`` (study option ``keep_scores``).
    ValueError
        If a method is unknown, the selection is empty, or the runs disagree on the number of objects or on
        the true outliers (e.g. two different files stored under the same variant name).
    """
    table = stored_runs(store, dataset) if runs is None else runs.reset_index(drop=True)
    if runs is None:
        wanted = _as_list(methods)
        if wanted:
            by_lower = {str(m).lower(): str(m) for m in table["method"].unique()}
            missing = [m for m in wanted if str(m).lower() not in by_lower]
            if missing:
                raise ValueError(f"{dataset}: no stored scores of method(s) {', '.join(map(str, missing))}; "
                                 f"stored: {', '.join(sorted(by_lower.values()))}")
            table = table[table["method"].isin({by_lower[str(m).lower()] for m in wanted})]
        if ks is not None:
            kset = {int(k) for k in ks}
            # a scoring without k (an imported estimator) is not on the k axis: the k filter leaves it in
            table = table[(table["k"].isna() | table["k"].isin(kset)).to_numpy(dtype=bool)]
        table = table.reset_index(drop=True)
    if table.empty:
        raise ValueError(f"{dataset}: no stored scoring matches the selection (methods={_as_list(methods)}, "
                         f"k={None if ks is None else sorted({int(k) for k in ks})})")
    files = set(table["file_sha256"].dropna()) if "file_sha256" in table.columns else set()
    if len(files) > 1:
        raise ValueError(f"{dataset}: the selected scorings come from {len(files)} different dataset files "
                         "stored under this variant name; select one study or k range")
    with ResultStore(store, read_only=True) as rs:
        S = rs.score_matrix(dataset, table)
        labels = rs.labels(dataset, next(iter(files)) if files else None)
    if S.shape[1] != labels.size:
        raise ValueError(f"{dataset}: stored score vectors have length {S.shape[1]}, the stored labels "
                         f"{labels.size}")
    return StoredScorings(dataset, S, labels, table)


@dataclass(frozen=True)
class StoreSimilarity:
    """Result of :func:`similarity_from_store`: ``matrix`` (R + 1, R + 1), row/column 0 = ground truth."""

    dataset: str
    matrix: np.ndarray
    names: tuple[str, ...]
    measure: str
    dropped: tuple[tuple[str, str], ...] = ()

    def frame(self, truth_name: str = "truth") -> pd.DataFrame:
        """The matrix as a labelled DataFrame (for CSV export)."""
        labels = [truth_name, *self.names]
        return pd.DataFrame(self.matrix, index=pd.Index(labels, name="scoring"), columns=labels)


def similarity_from_store(
    store: str | Path,
    dataset: str,
    *,
    measure: str = "pearson",
    methods: Iterable[str] | str | None = None,
    ks: Iterable[int] | None = None,
    runs: pd.DataFrame | None = None,
    lam: float = 1.0,
) -> StoreSimilarity:
    """Class-balanced similarity matrix of the stored scorings of one variant, with the ground truth.

    Reads the scorings (:func:`read_scorings`), normalises each with :func:`odeval.scaling.unify` and calls
    :func:`odeval.compare.similarity_matrix` with the *true* labels: the weights are 1/(2|O|) and 1/(2|I|)
    (Schubert et al. 2012, Sect. 3.1) and row/column 0 is the 0/1 label vector. Draw it with
    :func:`odeval.compare.plot_similarity_matrix`.

    Parameters
    ----------
    measure : str
        Any of :data:`odeval.compare.MEASURES` (default: weighted Pearson, Eq. 3.1).
    methods, ks, runs
        The selection; see :func:`read_scorings` (for a readable figure: ``runs=select_scorings(...)``).
    lam : float
        λ of the Gaussian scalings of ``unify``.
    """
    from odeval.compare import similarity_matrix

    sc = read_scorings(store, dataset, methods=methods, ks=ks, runs=runs).unified(lam)
    M = similarity_matrix(sc.scores, sc.labels, measure=measure)
    return StoreSimilarity(dataset, M, sc.names, measure, sc.dropped)


@dataclass(frozen=True)
class StoreEnsemble:
    """Result of :func:`ensemble_from_store`.

    Attributes
    ----------
    dataset : str
    n_objects, n_outliers, n_scorings : int
        Size of the variant and number of (normalised) scorings the ensemble chose from.
    greedy : odeval.compare.GreedyEnsemble
    evaluation : odeval.compare.EnsembleEvaluation
    rate, measure, rule : the settings of the greedy search
    unified_with : tuple of str
        The normalisation recipe of each method.
    dropped : tuple of (str, str)
        Scorings that could not be normalised, with the reason.
    """

    dataset: str
    n_objects: int
    n_outliers: int
    n_scorings: int
    greedy: Any = field(repr=False)
    evaluation: Any
    rate: float | None
    measure: str
    rule: str
    unified_with: tuple[str, ...] = ()
    dropped: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary (NaN, e.g. the improvement when all random ensembles agree, → None)."""
        return _finite_or_none({
            "dataset": self.dataset, "n_objects": self.n_objects, "n_outliers": self.n_outliers,
            "n_scorings": self.n_scorings, "rate": self.rate, "measure": self.measure, "rule": self.rule,
            **self.evaluation.to_dict(),
            "unified_with": list(self.unified_with),
            "dropped": [{"scoring": n, "reason": r} for n, r in self.dropped],
        })

    def summary_frame(self) -> pd.DataFrame:
        """Schubert et al. (2012) Table 4 style: one row per competitor of the greedy ensemble.

        Columns: ``ensemble``, ``scorings`` (size), ``roc_auc``, ``roc_auc_sd`` (random ensembles only),
        ``cost`` (weighted distance to the true labels), ``gain_of_greedy`` (gain of the greedy ensemble's ROC
        AUC over the row, Sect. 5.5).
        """
        ev = self.evaluation
        return pd.DataFrame({
            "ensemble": [f"best single scoring ({ev.best_single_name})", f"naive ensemble (all, {self.rule})",
                         f"random ensembles ({ev.n_random}, seed {ev.seed})", f"greedy ensemble ({self.rule})"],
            "scorings": [1, self.n_scorings, ev.greedy_size, ev.greedy_size],
            "roc_auc": [ev.best_single_auc, ev.naive_auc, ev.random_auc_mean, ev.greedy_auc],
            "roc_auc_sd": [np.nan, np.nan, ev.random_auc_std, np.nan],
            "cost": [ev.best_single_cost, ev.naive_cost, np.nan, ev.greedy_cost],
            "gain_of_greedy": [ev.gain_greedy_to_best, ev.gain_greedy_to_naive, ev.gain_greedy_to_random, np.nan],
        })


def _finite_or_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in d.items()}


def ensemble_from_store(
    store: str | Path,
    dataset: str,
    *,
    rate: float | None = 0.01,
    n_outliers: int | None = None,
    measure: str = "pearson",
    rule: str = "mean",
    n_random: int = 1000,
    seed: int = 0,
    methods: Iterable[str] | str | None = None,
    ks: Iterable[int] | None = None,
    runs: pd.DataFrame | None = None,
    lam: float = 1.0,
) -> StoreEnsemble:
    """Greedy ensemble of the stored scorings of one variant, evaluated Table-4 style.

    1. Read the variant's score vectors and labels (:func:`read_scorings`).
    2. Normalise each scoring with :func:`odeval.scaling.unify` (public orientation; Kriegel et al. 2011).
    3. :func:`odeval.compare.evaluate_ensembles`: the greedy diversity-aware ensemble of Schubert et al.
       (2012, Sect. 4.3), selected *without* labels from the estimated outlier set (``rate``), then evaluated
       with the labels against the best single scoring, the naive ensemble of all scorings and ``n_random``
       random ensembles of the same size (seeded); improvement in standard deviations and gains (Sect. 5.5).

    Parameters
    ----------
    rate, n_outliers : size of the estimated outlier set (:func:`odeval.compare.estimated_outliers`).
    measure : {"pearson", "manhattan", "sqeuclidean"}
    rule : str
        Combination rule (:data:`odeval.compare.COMBINATION_RULES`).
    n_random, seed : random-ensemble control group.
    methods, ks, runs : selection; see :func:`read_scorings`.
    lam : λ of the Gaussian scalings.

    Raises
    ------
    NoStoredScoresError
        If the store kept no score vectors (study option ``keep_scores``).
    """
    from odeval.compare import evaluate_ensembles

    sc = read_scorings(store, dataset, methods=methods, ks=ks, runs=runs).unified(lam)
    greedy, ev = evaluate_ensembles(sc.scores, sc.labels, sc.names, rate=rate, n_outliers=n_outliers,
                                    measure=measure, rule=rule, n_random=n_random, seed=seed)  # type: ignore[arg-type]
    return StoreEnsemble(dataset, int(sc.labels.size), int(sc.labels.sum()), int(sc.scores.shape[0]), greedy, ev,
                         rate if n_outliers is None else None, measure, rule, sc.unified_with, sc.dropped)
