"""Dataset characterisation: difficulty and diversity from binned outlier ranks (Campos et al. 2016, §5.3).

Each true outlier o of a dataset with |O| outliers gets, from each method at its best k, a rank r (1 = most
outlying) and a *bin* ⌈r / |O|⌉ capped at 10: bin 1 means the method put it among the top |O|, bin 10 means
at rank 9|O| + 1 or later. Then

* **difficulty** = mean bin over all outliers and all methods (1 = easy: every method finds every outlier
  in the top |O|; high = hard);
* **diversity** = root mean square over the outliers of the standard deviation of an outlier's bins across
  the methods (0 = all methods agree on where each outlier is).

Two random baselines calibrate these numbers: *independent* random rankers (each method an independent
uniformly random permutation) and *identical* random rankers (all methods the same random permutation,
diversity 0). The label permutation test asks whether the given labels are easier for the methods than
random labels with the same number of outliers: it keeps each method's scores (at its best k) fixed and
draws the |O| "outliers" uniformly at random.

The store's ``outlier_ranks`` table gives observed ranks only. The permutation test needs the full score
vectors at the best k of each method — the store must keep them (optional table ``scores``) or the runner
must re-score the best k; :func:`label_permutation_test` therefore takes (labels, scores per method).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from odeval._validation import check_labels, check_scores
from odeval.analysis._schema import canonical_params, check_ranks_frame

__all__ = [
    "best_k_binned_ranks",
    "bin_ranks",
    "dataset_baselines",
    "difficulty_diversity",
    "difficulty_diversity_from_bins",
    "label_permutation_test",
    "permutation_test_summary",
    "pooled_permutation_summary",
    "permutation_tests",
    "random_ranker_baselines",
    "rank_objects",
]

_TIES = ("average", "min", "max")


def _check_count(value: object, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def bin_ranks(ranks: np.ndarray, n_outliers: int, n_bins: int = 10) -> np.ndarray:
    """Binned ranks ⌈rank / |O|⌉, capped at ``n_bins`` (Campos et al. 2016, §5.3).

    Parameters
    ----------
    ranks : array-like
        1-based ranks (float ranks from averaged ties are allowed).
    n_outliers : int
        |O|, the number of true outliers of the dataset (the bin width).
    n_bins : int, default 10

    Returns
    -------
    ndarray of int64, same shape as ``ranks``
    """
    n_outliers = _check_count(n_outliers, "n_outliers")
    n_bins = _check_count(n_bins, "n_bins")
    r = np.asarray(ranks, dtype=np.float64)
    if r.size and (not np.all(np.isfinite(r)) or r.min() < 1):
        raise ValueError("ranks must be finite and >= 1")
    # IEEE division is correctly rounded: r / |O| is an exact integer when |O| divides r, else above it
    bins = np.ceil(r / n_outliers).astype(np.int64)
    return np.minimum(np.maximum(bins, 1), n_bins)


def difficulty_diversity_from_bins(bins: np.ndarray, ddof: int = 0) -> tuple[float, float]:
    """Difficulty and diversity of a (methods × outliers) array of binned ranks.

    difficulty = mean of all bins; diversity = √(mean over outliers of sd²_methods(bins)), the sd taken
    with ``ddof`` (0: population sd over the methods).

    References
    ----------
    Campos et al. (2016), §5.3.
    """
    b = np.asarray(bins, dtype=np.float64)
    if b.ndim != 2 or b.shape[0] < 1 or b.shape[1] < 1:
        raise ValueError(f"bins must be a non-empty 2-d array (methods × outliers), got shape {b.shape}")
    difficulty = float(b.mean())
    if b.shape[0] - ddof <= 0:
        return difficulty, float("nan")
    var = b.var(axis=0, ddof=ddof)
    return difficulty, float(np.sqrt(var.mean()))


def rank_objects(scores: np.ndarray, ties: str = "average") -> np.ndarray:
    """1-based rank of every object in the descending order of ``scores`` (higher = more outlying).

    Tie groups get the mid-rank (``"average"``), the first (``"min"``) or the last (``"max"``) rank they
    span, the same conventions as :func:`odeval.measures.outlier_ranks`. ±inf scores rank first / last
    (tied among themselves); NaN raises.
    """
    if ties not in _TIES:
        raise ValueError(f"ties must be one of {_TIES}, got {ties!r}")
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-dimensional, got shape {s.shape}")
    if np.isnan(s).any():
        check_scores(s)  # raises, naming the NaN positions
    return sps.rankdata(-s, method=ties).astype(np.float64)


def best_k_binned_ranks(
    ranks: pd.DataFrame,
    summary: pd.DataFrame,
    measure: str = "roc_auc",
    n_bins: int = 10,
) -> pd.DataFrame:
    """Ranks and bins of the true outliers for each method at its best k.

    Parameters
    ----------
    ranks : DataFrame
        The ``outlier_ranks`` table (dataset, method, params, k, object, rank).
    summary : DataFrame
        Output of :func:`odeval.analysis.per_variant_summary`; gives the best k per (dataset, method,
        params) for ``measure`` and ``n_outliers``.
    measure : str, default "roc_auc"
        The measure that defines the best k.

    Returns
    -------
    DataFrame
        Columns ``dataset``, ``config``, ``method``, ``params``, ``k``, ``object``, ``rank``, ``bin``,
        ``n_outliers``.

    Raises
    ------
    ValueError
        If a (dataset, method) at its best k has no ranks, or a number of ranks other than n_outliers.
    """
    r = check_ranks_frame(ranks)
    best = summary[summary["measure"] == measure]
    if best.empty:
        raise ValueError(f"summary has no row for measure {measure!r}")
    best = best[best["best_k"].notna()]
    cols = ["dataset", "method", "params", "config", "best_k"]
    # join on the store's unit of work when both frames carry it (exact even with several metrics)
    on = ["unit_id", "k"] if "unit_id" in best.columns and "unit_id" in r.columns else ["dataset", "method", "params",
                                                                                       "k"]
    if "unit_id" in on:
        cols.append("unit_id")
    if "n_outliers" in best.columns:
        cols.append("n_outliers")
    best = best[cols].rename(columns={"best_k": "k"})
    best["k"] = best["k"].astype(np.int64)
    merged = best.merge(r[[*on, "object", "rank"]], on=on, how="left")
    missing = merged["rank"].isna()
    if missing.any():
        row = merged.loc[missing].iloc[0]
        raise ValueError(
            f"outlier_ranks has no rank for dataset {row['dataset']!r}, method {row['config']!r} "
            f"at its best k={row['k']}"
        )
    counts = merged.groupby(["dataset", "config"])["object"].transform("count")
    if "n_outliers" not in merged.columns:
        merged["n_outliers"] = counts
    bad = counts != merged["n_outliers"]
    if bad.any():
        row = merged.loc[bad].iloc[0]
        raise ValueError(
            f"outlier_ranks holds {int(counts[bad].iloc[0])} ranks for dataset {row['dataset']!r}, method "
            f"{row['config']!r}, k={row['k']}, but the dataset has {int(row['n_outliers'])} outliers"
        )
    merged["n_outliers"] = merged["n_outliers"].astype(np.int64)
    bins = np.empty(len(merged), dtype=np.int64)
    for n_out, idx in merged.groupby("n_outliers").indices.items():
        bins[idx] = bin_ranks(merged["rank"].to_numpy()[idx], int(n_out), n_bins)
    merged["bin"] = bins
    out = merged[["dataset", "config", "method", "params", "k", "object", "rank", "bin", "n_outliers"]]
    return out.sort_values(["dataset", "config", "object"], kind="stable").reset_index(drop=True)


def difficulty_diversity(binned: pd.DataFrame, ddof: int = 0) -> pd.DataFrame:
    """Difficulty and diversity per dataset variant from :func:`best_k_binned_ranks`.

    Returns
    -------
    DataFrame
        Columns ``dataset``, ``difficulty``, ``diversity``, ``n_methods``, ``n_outliers``.

    Raises
    ------
    ValueError
        If some method lacks the bin of some outlier of a dataset.
    """
    rows = []
    for name, grp in binned.groupby("dataset", sort=True):
        wide = grp.pivot_table(index="config", columns="object", values="bin", aggfunc="first")
        if wide.isna().any().any():
            raise ValueError(f"dataset {name!r}: some method lacks the rank of some outlier")
        d, v = difficulty_diversity_from_bins(wide.to_numpy(), ddof=ddof)
        rows.append({"dataset": name, "difficulty": d, "diversity": v, "n_methods": wide.shape[0],
                     "n_outliers": wide.shape[1]})
    return pd.DataFrame(rows, columns=["dataset", "difficulty", "diversity", "n_methods", "n_outliers"])


def _rng_for(seed: int, name: str | None) -> np.random.Generator:
    """A generator for one dataset: depends on (seed, name) only, not on the order datasets are processed."""
    if name is None:
        return np.random.default_rng(seed)
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode("utf-8"))]))


def _random_outlier_ranks(rng: np.random.Generator, n_objects: int, n_outliers: int, size: int) -> np.ndarray:
    """(size, n_outliers) ranks of |O| objects drawn without replacement from a random permutation of n.

    Each row is the first |O| positions of an independent uniform random permutation (argpartition of
    uniform keys), generated in chunks of at most ~4 million keys.
    """
    out = np.empty((size, n_outliers), dtype=np.int64)
    chunk = max(1, 4_000_000 // n_objects)
    for start in range(0, size, chunk):
        stop = min(size, start + chunk)
        keys = rng.random((stop - start, n_objects))
        out[start:stop] = np.argpartition(keys, n_outliers - 1, axis=1)[:, :n_outliers] + 1
    return out


def random_ranker_baselines(
    n_objects: int,
    n_outliers: int,
    n_methods: int,
    n_simulations: int = 1000,
    seed: int = 0,
    n_bins: int = 10,
    ddof: int = 0,
    *,
    _name: str | None = None,
) -> pd.DataFrame:
    """Difficulty and diversity of random rankers, by simulation (Campos et al. 2016, §5.3, Fig. 6).

    For each simulation, *independent* random rankers give each of ``n_methods`` methods its own uniformly
    random ranking of the ``n_objects`` objects; *identical* random rankers give all methods one shared
    random ranking (so their diversity is exactly 0). The outliers' ranks in a uniform random ranking are a
    uniform sample without replacement of |O| of the ranks 1..n.

    Returns
    -------
    DataFrame
        Columns ``baseline`` ('independent' | 'identical'), ``simulation``, ``difficulty``, ``diversity``.
    """
    n_objects = _check_count(n_objects, "n_objects", 2)
    n_outliers = _check_count(n_outliers, "n_outliers")
    n_methods = _check_count(n_methods, "n_methods")
    n_simulations = _check_count(n_simulations, "n_simulations")
    if n_outliers >= n_objects:
        raise ValueError(f"n_outliers ({n_outliers}) must be smaller than n_objects ({n_objects})")
    rng = _rng_for(seed, _name)
    indep = _random_outlier_ranks(rng, n_objects, n_outliers, n_simulations * n_methods)
    indep = bin_ranks(indep, n_outliers, n_bins).reshape(n_simulations, n_methods, n_outliers).astype(np.float64)
    ident = bin_ranks(_random_outlier_ranks(rng, n_objects, n_outliers, n_simulations), n_outliers, n_bins)
    sims = np.arange(n_simulations)
    diff_i = indep.mean(axis=(1, 2))
    div_i = (np.sqrt(indep.var(axis=1, ddof=ddof).mean(axis=1)) if n_methods - ddof > 0
             else np.full(n_simulations, np.nan))
    diff_s = ident.mean(axis=1).astype(np.float64)
    return pd.concat(
        [
            pd.DataFrame({"baseline": "independent", "simulation": sims, "difficulty": diff_i, "diversity": div_i}),
            pd.DataFrame({"baseline": "identical", "simulation": sims, "difficulty": diff_s,
                          "diversity": np.zeros(n_simulations)}),
        ],
        ignore_index=True,
    )


def dataset_baselines(
    datasets: pd.DataFrame,
    n_methods: int,
    n_simulations: int = 1000,
    seed: int = 0,
    n_bins: int = 10,
    ddof: int = 0,
) -> pd.DataFrame:
    """Mean and sd of the random-ranker baselines for each dataset variant.

    Parameters
    ----------
    datasets : DataFrame
        One row per variant with ``dataset``, ``n_objects``, ``n_outliers`` (e.g.
        :func:`odeval.analysis.dataset_table`).
    n_methods : int
        Number of methods of the study (the baselines depend on it).

    Returns
    -------
    DataFrame
        Columns ``dataset``, ``baseline``, ``difficulty``, ``difficulty_sd``, ``diversity``, ``diversity_sd``.
        Each variant's simulation is seeded from (seed, variant name), so it does not depend on the other
        rows.
    """
    for c in ("dataset", "n_objects", "n_outliers"):
        if c not in datasets.columns:
            raise ValueError(f"datasets has no column {c!r}")
    rows = []
    for rec in datasets.drop_duplicates("dataset").itertuples(index=False):
        sim = random_ranker_baselines(int(rec.n_objects), int(rec.n_outliers), n_methods, n_simulations, seed, n_bins,
                                      ddof, _name=str(rec.dataset))
        for base, grp in sim.groupby("baseline", sort=False):
            rows.append({"dataset": rec.dataset, "baseline": base,
                         "difficulty": grp["difficulty"].mean(), "difficulty_sd": grp["difficulty"].std(ddof=1),
                         "diversity": grp["diversity"].mean(), "diversity_sd": grp["diversity"].std(ddof=1)})
    return pd.DataFrame(rows, columns=["dataset", "baseline", "difficulty", "difficulty_sd", "diversity",
                                       "diversity_sd"])


def _score_matrix(scores: Mapping[str, np.ndarray] | np.ndarray | Sequence[np.ndarray], n: int) -> np.ndarray:
    if isinstance(scores, Mapping):
        items = list(scores.items())
    else:
        arr = np.asarray(scores, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError(f"scores must be a mapping method → scores or a 2-d array, got shape {arr.shape}")
        items = [(f"method {i}", row) for i, row in enumerate(arr)]
    if not items:
        raise ValueError("scores holds no method")
    rows = []
    for name, s in items:
        s = np.asarray(s, dtype=np.float64)
        if s.ndim != 1 or np.isnan(s).any():
            check_scores(s, name=f"scores of {name}")  # raises with the shape / NaN positions
        if s.shape[0] != n:
            raise ValueError(f"scores of {name} have {s.shape[0]} values, labels have {n}")
        rows.append(s)
    return np.vstack(rows)


def label_permutation_test(
    labels: np.ndarray,
    scores: Mapping[str, np.ndarray] | np.ndarray,
    n_permutations: int = 1000,
    seed: int = 0,
    ties: str = "average",
    n_bins: int = 10,
    ddof: int = 0,
    *,
    dataset: str | None = None,
) -> pd.DataFrame:
    """Difficulty and diversity under randomly permuted labels (Campos et al. 2016, §5.3, Fig. 7).

    Each permutation keeps the methods' scores and the number of outliers and makes |O| objects drawn
    uniformly without replacement the outliers (a uniformly random permutation of the labels).

    Parameters
    ----------
    labels : array-like of shape (N,)
        True labels (bool or 0/1, True = outlier).
    scores : mapping method → array of shape (N,), or array of shape (n_methods, N)
        Each method's scores at its best k (higher = more outlying).
    n_permutations : int, default 1000
    seed : int, default 0
        With ``dataset`` given, the generator is seeded from (seed, dataset name).
    ties : {"average", "min", "max"}
        Rank convention for tied scores (see :func:`rank_objects`); use the store's convention.

    Returns
    -------
    DataFrame
        One row per permutation: ``permutation``, ``difficulty``, ``diversity``, and the observed values
        ``observed_difficulty``, ``observed_diversity`` (constant columns); ``dataset`` first when given.
    """
    y = check_labels(labels)
    n_permutations = _check_count(n_permutations, "n_permutations")
    smat = _score_matrix(scores, y.shape[0])
    ranks = np.vstack([rank_objects(s, ties) for s in smat])  # (m, N)
    n, n_out = y.shape[0], int(y.sum())
    obs_bins = bin_ranks(ranks[:, y], n_out, n_bins)
    obs_d, obs_v = difficulty_diversity_from_bins(obs_bins, ddof)
    rng = _rng_for(seed, dataset)
    picks = _random_outlier_ranks(rng, n, n_out, n_permutations) - 1  # random object subsets
    perm_bins = bin_ranks(ranks[:, picks], n_out, n_bins).astype(np.float64)  # (m, P, |O|)
    diff = perm_bins.mean(axis=(0, 2))
    m = smat.shape[0]
    div = (np.sqrt(perm_bins.var(axis=0, ddof=ddof).mean(axis=1)) if m - ddof > 0
           else np.full(n_permutations, np.nan))
    out = pd.DataFrame({"permutation": np.arange(n_permutations), "difficulty": diff, "diversity": div,
                        "observed_difficulty": obs_d, "observed_diversity": obs_v})
    if dataset is not None:
        out.insert(0, "dataset", dataset)
    return out


def permutation_test_summary(distribution: pd.DataFrame) -> pd.DataFrame:
    """Summarise :func:`label_permutation_test` output, one row per dataset.

    The p-value is one-sided, for "the true labels are easier than random labels":
    p = (1 + #{permuted difficulty ≤ observed}) / (1 + P) (Phipson and Smyth 2010).

    Returns
    -------
    DataFrame
        ``dataset`` (when present), ``observed_difficulty``, ``permuted_mean``, ``permuted_sd``,
        ``permuted_q05``, ``p_value``, ``n_permutations``, ``observed_diversity``, ``permuted_diversity_mean``.
    """
    groups = distribution.groupby("dataset", sort=True) if "dataset" in distribution.columns else [(None, distribution)]
    rows = []
    for name, grp in groups:
        obs = float(grp["observed_difficulty"].iloc[0])
        d = grp["difficulty"].to_numpy()
        row = {} if name is None else {"dataset": name}
        row.update({
            "observed_difficulty": obs,
            "permuted_mean": float(d.mean()),
            "permuted_sd": float(d.std(ddof=1)) if d.size > 1 else float("nan"),
            "permuted_q05": float(np.quantile(d, 0.05)),
            "p_value": (1.0 + float(np.sum(d <= obs))) / (1.0 + d.size),
            "n_permutations": int(d.size),
            "observed_diversity": float(grp["observed_diversity"].iloc[0]),
            "permuted_diversity_mean": float(grp["diversity"].mean()),
        })
        rows.append(row)
    return pd.DataFrame(rows)


def permutation_tests(
    summary: pd.DataFrame,
    ranks: pd.DataFrame,
    scores: pd.DataFrame,
    measure: str = "roc_auc",
    n_permutations: int = 1000,
    seed: int = 0,
    ties: str = "average",
    n_bins: int = 10,
    ddof: int = 0,
    labels: Mapping[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """Label permutation test of every dataset variant from results-store frames.

    The labels are the store's ``labels`` table when given (``labels``: dataset → bool array, e.g.
    :meth:`odeval.bench.store.ResultStore.labels_by_dataset`); otherwise they are rebuilt from
    ``outlier_ranks`` (its ``object`` column lists every true outlier) and ``n_objects``. The scores are each
    method's score vector at its best k for ``measure``, taken from the store's optional ``scores`` table (the
    study must keep scores, or the runner must re-score the best k).

    Parameters
    ----------
    summary : DataFrame
        Output of :func:`odeval.analysis.per_variant_summary` (with ``n_objects``).
    ranks : DataFrame
        The ``outlier_ranks`` table.
    labels : mapping of str to ndarray of bool, optional
        The ground truth per dataset variant (the store's ``labels`` table).
    scores : DataFrame
        Rows (dataset, method, params, k, scores) — ``scores`` an array of length n_objects — for at least
        the best k of every method; ``unit_id`` is used for the join when both frames have it.

    Returns
    -------
    DataFrame
        Concatenated :func:`label_permutation_test` outputs with a ``dataset`` column. Variants where some
        method lacks its best-k scores are left out with a ``UserWarning`` naming them.
    """
    import warnings

    r = check_ranks_frame(ranks)
    best = summary[(summary["measure"] == measure) & summary["best_k"].notna()].copy()
    if best.empty:
        raise ValueError(f"summary has no row for measure {measure!r}")
    best["k"] = best["best_k"].astype(np.int64)
    sc = scores.copy()
    sc["params"] = canonical_params(sc["params"]) if "params" in sc.columns else ""
    sc["k"] = pd.to_numeric(sc["k"]).astype(np.int64)
    on = ["unit_id", "k"] if "unit_id" in best.columns and "unit_id" in sc.columns else ["dataset", "method", "params",
                                                                                        "k"]
    merged = best[[*dict.fromkeys(["dataset", "config", "n_objects", *on])]].merge(
        sc[[*on, "scores"]].drop_duplicates(on), on=on, how="left")
    parts, missing = [], []
    for name, grp in merged.groupby("dataset", sort=True):
        if grp["scores"].isna().any():
            missing.append(str(name))
            continue
        n = int(grp["n_objects"].iloc[0])
        if labels is not None and str(name) in labels:
            y = np.asarray(labels[str(name)], dtype=bool)
            if y.shape != (n,):
                raise ValueError(f"permutation_tests: labels of {name!r} have shape {y.shape}, n_objects is {n}")
        else:
            objects = r.loc[r["dataset"] == name, "object"].unique()
            y = np.zeros(n, dtype=bool)
            y[np.asarray(objects, dtype=np.int64)] = True
        per_method = {cfg: np.asarray(v, dtype=np.float64) for cfg, v in zip(grp["config"], grp["scores"], strict=True)}
        parts.append(label_permutation_test(y, per_method, n_permutations, seed, ties, n_bins, ddof,
                                            dataset=str(name)))
    if missing:
        warnings.warn(f"permutation_tests: no best-k scores for some method of {len(missing)} variant(s), left out: "
                      f"{missing[:10]}{' ...' if len(missing) > 10 else ''}", UserWarning, stacklevel=2)
    if not parts:
        raise ValueError("permutation_tests: no variant has the best-k scores of every method")
    return pd.concat(parts, ignore_index=True)


def pooled_permutation_summary(distribution: pd.DataFrame, groups: Mapping[str, str]) -> pd.DataFrame:
    """Campos et al. (2016), Fig. 7: per base dataset, the observed difficulties against the pooled permutations.

    The paper draws, per base dataset, the difficulty of each of its variants (observed) beside the difficulties
    of all the label permutations of all those variants pooled (1000 per variant, so 10,000 for ten variants),
    and reports that no permuted value "is even close to the observed difficulty values". This summary says how
    close: the pooled permuted minimum against the largest (hardest) observed difficulty, and how many permuted
    values are at or below it.

    Parameters
    ----------
    distribution : DataFrame
        Concatenated :func:`label_permutation_test` outputs, with the ``dataset`` column (e.g.
        :func:`permutation_tests`).
    groups : mapping of str to str
        Variant name → base dataset. Every variant of ``distribution`` must be mapped.

    Returns
    -------
    DataFrame
        One row per base dataset (sorted): ``base_dataset``, ``n_variants``, ``observed_min``,
        ``observed_median``, ``observed_max`` (over its variants), ``n_permuted`` (pooled), ``permuted_min``,
        ``permuted_q01``, ``permuted_mean``, ``permuted_max``, ``gap`` (permuted_min − observed_max, in bins: > 0
        when every random labelling is harder than every observed one), ``n_permuted_le_observed_max``
        (permuted values ≤ observed_max) and ``p_value`` = (1 + that count) / (1 + n_permuted): the one-sided
        permutation p-value of the hardest variant against the pooled null (Phipson and Smyth 2010), an upper
        bound on that of every variant of the base dataset. Then, each variant against its own permutations
        only (as :func:`permutation_test_summary`): ``n_variants_unmatched`` (variants none of whose permuted
        difficulties is ≤ their observed one) and ``max_variant_p`` (the largest per-variant p-value).
    """
    for c in ("dataset", "difficulty", "observed_difficulty"):
        if c not in distribution.columns:
            raise ValueError(f"distribution has no column {c!r}; pass label_permutation_test outputs with dataset")
    names = distribution["dataset"].astype(str)
    unmapped = sorted(set(names) - set(map(str, groups)))
    if unmapped:
        raise ValueError(f"pooled_permutation_summary: no base dataset for {len(unmapped)} variant(s): {unmapped[:5]}")
    frame = distribution.assign(dataset=names, base_dataset=names.map({str(k): str(v) for k, v in groups.items()}))
    rows = []
    for base, grp in frame.groupby("base_dataset", sort=True):
        observed = grp.groupby("dataset")["observed_difficulty"].first().to_numpy(dtype=np.float64)
        permuted = grp["difficulty"].to_numpy(dtype=np.float64)
        hardest = float(observed.max())
        below = int(np.sum(permuted <= hardest))
        # per variant: its permuted difficulties at or below its own observed one (constant within a variant)
        own = (grp["difficulty"] <= grp["observed_difficulty"]).groupby(grp["dataset"]).sum()
        sizes = grp.groupby("dataset").size()
        rows.append({
            "base_dataset": base, "n_variants": int(observed.size), "observed_min": float(observed.min()),
            "observed_median": float(np.median(observed)), "observed_max": hardest, "n_permuted": int(permuted.size),
            "permuted_min": float(permuted.min()), "permuted_q01": float(np.quantile(permuted, 0.01)),
            "permuted_mean": float(permuted.mean()), "permuted_max": float(permuted.max()),
            "gap": float(permuted.min()) - hardest, "n_permuted_le_observed_max": below,
            "p_value": (1.0 + below) / (1.0 + permuted.size),
            "n_variants_unmatched": int((own == 0).sum()),
            "max_variant_p": float(((1.0 + own) / (1.0 + sizes[own.index])).max()),
        })
    return pd.DataFrame(rows)
