"""Significance of differences between methods over datasets: Friedman test and Nemenyi post-hoc test.

Following Demšar (2006), methods are ranked on each dataset (rank 1 = best, ties get the average rank),
the Friedman test asks whether the average ranks differ at all, and the Nemenyi test compares every pair:
two methods differ significantly at level α when their average ranks differ by more than the critical
difference CD_α = q_α √(k(k+1) / (6N)), q_α being the studentized range quantile divided by √2.
Campos et al. (2016), Table 3, report the pairwise outcome at 90 % and 95 %.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

__all__ = [
    "average_ranks",
    "friedman_test",
    "nemenyi_claims",
    "nemenyi_critical_difference",
    "nemenyi_table",
    "nemenyi_test",
    "performance_matrix",
    "rank_matrix",
]


def performance_matrix(
    summary: pd.DataFrame,
    measure: str = "roc_auc",
    statistic: str = "best",
    by: str = "base_dataset",
) -> pd.DataFrame:
    """Datasets × methods matrix of one statistic of one measure, the input of the tests.

    Parameters
    ----------
    summary : DataFrame
        Output of :func:`odeval.analysis.per_variant_summary` (possibly filtered).
    measure : str, default "roc_auc"
    statistic : {"best", "window_mean", "mean_over_k"} or another numeric column, default "best"
    by : {"base_dataset", "dataset"}, default "base_dataset"
        The blocks of the test. With ``"base_dataset"`` the variants of a base dataset are averaged first.

    Returns
    -------
    DataFrame
        Index: datasets (sorted), columns: method configurations (sorted). Datasets lacking a value for
        some method are removed with a ``UserWarning`` naming them.
    """
    for c in ("measure", "config", by, statistic):
        if c not in summary.columns:
            raise ValueError(f"summary has no column {c!r}; pass the output of per_variant_summary")
    sub = summary[summary["measure"] == measure]
    if sub.empty:
        raise ValueError(f"no row for measure {measure!r}; measures present: {sorted(summary['measure'].unique())}")
    wide = sub.pivot_table(index=by, columns="config", values=statistic, aggfunc="mean", dropna=False)
    wide = wide.sort_index().sort_index(axis=1)
    incomplete = wide.isna().any(axis=1)
    if incomplete.any():
        names = [str(x) for x in wide.index[incomplete]]
        warnings.warn(
            f"performance_matrix: {len(names)} dataset(s) lack a {statistic} {measure} value for some method and "
            f"are left out of the test: {names[:10]}{' ...' if len(names) > 10 else ''}",
            UserWarning,
            stacklevel=2,
        )
        wide = wide[~incomplete]
    wide.columns.name = "config"
    return wide


def _check_matrix(matrix: pd.DataFrame | np.ndarray) -> tuple[np.ndarray, list[str]]:
    if isinstance(matrix, pd.DataFrame):
        names = [str(c) for c in matrix.columns]
        values = matrix.to_numpy(dtype=np.float64)
    else:
        values = np.asarray(matrix, dtype=np.float64)
        if values.ndim != 2:
            raise ValueError(f"the performance matrix must be 2-d (datasets × methods), got shape {values.shape}")
        names = [f"method {j}" for j in range(values.shape[1])]
    if values.ndim != 2 or values.shape[0] < 2 or values.shape[1] < 2:
        raise ValueError(
            f"the tests need at least 2 datasets and 2 methods; the performance matrix has shape {values.shape}"
        )
    bad = ~np.isfinite(values)
    if bad.any():
        r, c = np.nonzero(bad)
        raise ValueError(f"the performance matrix holds NaN/inf at (dataset row {r[0]}, method {names[c[0]]!r})")
    return values, names


def rank_matrix(matrix: pd.DataFrame | np.ndarray, higher_is_better: bool = True) -> pd.DataFrame:
    """Rank the methods on each dataset: 1 = best, ties get the average of the ranks they span (Demšar 2006)."""
    values, names = _check_matrix(matrix)
    ranks = sps.rankdata(-values if higher_is_better else values, method="average", axis=1)
    index = matrix.index if isinstance(matrix, pd.DataFrame) else None
    return pd.DataFrame(ranks, index=index, columns=names)


def average_ranks(matrix: pd.DataFrame | np.ndarray, higher_is_better: bool = True) -> pd.DataFrame:
    """Average rank of each method over the datasets, best first.

    Returns
    -------
    DataFrame
        Columns ``config``, ``mean_rank``, ``position`` (1 = lowest mean rank; equal mean ranks share the
        smaller position), sorted by ``mean_rank`` then name.
    """
    r = rank_matrix(matrix, higher_is_better)
    out = pd.DataFrame({"config": r.columns, "mean_rank": r.mean(axis=0).to_numpy()})
    out = out.sort_values(["mean_rank", "config"], kind="stable").reset_index(drop=True)
    out["position"] = sps.rankdata(out["mean_rank"].to_numpy(), method="min").astype(np.int64)
    return out


def friedman_test(matrix: pd.DataFrame | np.ndarray, higher_is_better: bool = True) -> pd.DataFrame:
    """Friedman test of equal average ranks, with the Iman–Davenport F correction.

    χ²_F = 12N / (k(k+1)) · [Σ_j R_j² − k(k+1)²/4] (Demšar 2006, eq. on p. 11), divided by the tie
    correction 1 − Σ(t³ − t) / (N k (k² − 1)) over the groups of tied values within each dataset (as
    ``scipy.stats.friedmanchisquare``; without ties it is 1). F_F = (N − 1) χ²_F / (N(k − 1) − χ²_F) with
    (k − 1, (k − 1)(N − 1)) degrees of freedom (Iman and Davenport 1980).

    Returns
    -------
    DataFrame
        One row: ``n_datasets``, ``n_methods``, ``chi2``, ``p_chi2``, ``f``, ``p_f``, ``tie_correction``.

    References
    ----------
    J. Demšar. Statistical comparisons of classifiers over multiple data sets. JMLR 7:1–30, 2006.
    R. L. Iman and J. M. Davenport. Approximations of the critical region of the Friedman statistic.
    Communications in Statistics 9(6):571–595, 1980.
    """
    values, _ = _check_matrix(matrix)
    n, k = values.shape
    ranks = sps.rankdata(-values if higher_is_better else values, method="average", axis=1)
    mean_ranks = ranks.mean(axis=0)
    chi2 = 12.0 * n / (k * (k + 1)) * (np.sum(mean_ranks**2) - k * (k + 1) ** 2 / 4.0)
    ties = 0.0
    for row in ranks:
        _, counts = np.unique(row, return_counts=True)
        ties += float(np.sum(counts.astype(np.float64) ** 3 - counts))
    correction = 1.0 - ties / (n * k * (k * k - 1.0))
    if correction <= 0:  # every dataset ties all methods: no evidence of any difference
        chi2, correction = 0.0, 0.0
    else:
        chi2 /= correction
    p_chi2 = float(sps.chi2.sf(chi2, k - 1))
    denom = n * (k - 1) - chi2
    f = np.inf if denom <= 0 else (n - 1) * chi2 / denom
    p_f = 0.0 if not np.isfinite(f) else float(sps.f.sf(f, k - 1, (k - 1) * (n - 1)))
    return pd.DataFrame(
        [{"n_datasets": n, "n_methods": k, "chi2": chi2, "p_chi2": p_chi2, "f": f, "p_f": p_f,
          "tie_correction": correction}]
    )


def nemenyi_critical_difference(n_methods: int, n_datasets: int, alpha: float = 0.05) -> float:
    """Critical difference of the Nemenyi test: q_α √(k(k+1)/(6N)), q_α = studentized range(1−α; k, ∞)/√2.

    References
    ----------
    J. Demšar. Statistical comparisons of classifiers over multiple data sets. JMLR 7:1–30, 2006, §3.2.2.
    """
    if n_methods < 2 or n_datasets < 1:
        raise ValueError(f"need at least 2 methods and 1 dataset, got {n_methods} methods, {n_datasets} datasets")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    q = float(sps.studentized_range.ppf(1.0 - alpha, n_methods, np.inf)) / np.sqrt(2.0)
    return q * np.sqrt(n_methods * (n_methods + 1) / (6.0 * n_datasets))


def nemenyi_test(
    matrix: pd.DataFrame | np.ndarray,
    higher_is_better: bool = True,
    alphas: Sequence[float] = (0.10, 0.05),
) -> pd.DataFrame:
    """Nemenyi post-hoc test for every pair of methods (Demšar 2006, §3.2.2).

    The statistic is q = |R_a − R_b| / √(k(k+1)/(6N)) and the p-value is the upper tail of the
    studentized range distribution with k groups and infinite degrees of freedom at q·√2 (as
    ``scikit_posthocs.posthoc_nemenyi_friedman``). The pair differs significantly at level α when
    |R_a − R_b| > CD_α (:func:`nemenyi_critical_difference`).

    Returns
    -------
    DataFrame
        One row per ordered pair (a, b), a ≠ b: ``method_a``, ``method_b``, ``rank_a``, ``rank_b``,
        ``rank_diff`` (R_b − R_a: positive when a ranks better), ``q``, ``p_value``, and for each α
        ``cd_<level>`` and ``significant_<level>`` where level is the confidence in percent (90, 95).
    """
    values, names = _check_matrix(matrix)
    n, k = values.shape
    ranks = sps.rankdata(-values if higher_is_better else values, method="average", axis=1).mean(axis=0)
    se = np.sqrt(k * (k + 1) / (6.0 * n))
    rows = []
    cds = {a: nemenyi_critical_difference(k, n, a) for a in alphas}
    for i in range(k):
        for j in range(k):
            if i == j:
                continue
            diff = ranks[j] - ranks[i]
            q = abs(diff) / se
            row = {
                "method_a": names[i],
                "method_b": names[j],
                "rank_a": ranks[i],
                "rank_b": ranks[j],
                "rank_diff": diff,
                "q": q,
                "p_value": float(sps.studentized_range.sf(q * np.sqrt(2.0), k, np.inf)),
            }
            for a, cd in cds.items():
                level = round(100 * (1 - a))
                row[f"cd_{level}"] = cd
                row[f"significant_{level}"] = bool(abs(diff) > cd)
            rows.append(row)
    return pd.DataFrame(rows)


#: Symbols of :func:`nemenyi_table`.
TABLE_SYMBOLS = {"better_95": "▲", "better_90": "△", "worse_95": "▼", "worse_90": "▽"}


def nemenyi_table(pairwise: pd.DataFrame, order: Sequence[str] | None = None) -> pd.DataFrame:
    """Square table of the pairwise Nemenyi outcomes at 90 % and 95 %, in the form of Campos et al. Table 3.

    Cell (row a, column b): ``▲`` a is significantly better than b at 95 %, ``△`` better at 90 % only,
    ``▼`` / ``▽`` worse at 95 % / 90 % only, empty otherwise (and on the diagonal).

    Parameters
    ----------
    pairwise : DataFrame
        Output of :func:`nemenyi_test` with the default ``alphas=(0.10, 0.05)``.
    order : sequence of str, optional
        Row/column order; default by average rank, best first.
    """
    for c in ("method_a", "method_b", "rank_a", "rank_diff", "significant_90", "significant_95"):
        if c not in pairwise.columns:
            raise ValueError(f"pairwise has no column {c!r}; pass the output of nemenyi_test with alphas (0.10, 0.05)")
    if order is None:
        ranks = pairwise.groupby("method_a")["rank_a"].first().sort_values(kind="stable")
        order = list(ranks.index)
    order = [str(o) for o in order]
    table = pd.DataFrame("", index=order, columns=order)
    for row in pairwise.itertuples(index=False):
        if row.method_a not in table.index or row.method_b not in table.columns:
            continue
        better = row.rank_diff > 0
        if row.significant_95:
            sym = TABLE_SYMBOLS["better_95" if better else "worse_95"]
        elif row.significant_90:
            sym = TABLE_SYMBOLS["better_90" if better else "worse_90"]
        else:
            sym = ""
        table.loc[row.method_a, row.method_b] = sym
    table.index.name = "method"
    return table


def nemenyi_claims(pairwise: pd.DataFrame, claims: Sequence[tuple[str, str, int]]) -> pd.DataFrame:
    """Hold a published table of pairwise Nemenyi outcomes against measured ones, one row per pair of methods.

    A published table such as Campos et al. (2016), Table 3, states for some pairs "a is better than b at 90 %
    (or 95 %) confidence" and, by leaving the other cells empty, that no other pair differs at 90 %. This
    function puts each stated pair, and each measured significant pair the table does not state, next to the
    measured average ranks, p-value and critical differences.

    Parameters
    ----------
    pairwise : DataFrame
        Output of :func:`nemenyi_test` with the default ``alphas=(0.10, 0.05)``.
    claims : sequence of (better, worse, level)
        The stated differences: method ``better`` is better than ``worse`` at ``level`` % confidence (90 or 95).
        Every pair not listed is taken as stated "no significant difference at 90 %".

    Returns
    -------
    DataFrame
        One row per stated pair (in the order given), then one per unstated pair that is measured significant
        at 90 % (ordered by p-value): ``better``, ``worse`` (as stated; for unstated pairs, the measured better
        one first), ``claimed`` (90, 95, or 0 = not stated), ``rank_better``, ``rank_worse``, ``rank_diff``
        (rank_worse − rank_better: positive when the measured order agrees), ``p_value``, ``cd_90``, ``cd_95``,
        ``measured`` (the confidence at which the measured difference is significant in the stated direction:
        95, 90, 0 when not significant at 90 %, −90 / −95 when significant in the opposite direction), and
        ``holds``: for a stated pair, ``measured >= claimed``; for an unstated pair, ``measured == 0`` (hence
        always False in the rows returned).

    Raises
    ------
    ValueError
        If a claim names a method the pairwise table lacks, lists a pair twice, or has a level other than 90/95.
    """
    need = ("method_a", "method_b", "rank_a", "rank_b", "rank_diff", "p_value", "cd_90", "cd_95", "significant_90",
            "significant_95")
    for c in need:
        if c not in pairwise.columns:
            raise ValueError(f"pairwise has no column {c!r}; pass the output of nemenyi_test with alphas (0.10, 0.05)")
    index = {(str(r.method_a), str(r.method_b)): r for r in pairwise.itertuples(index=False)}
    methods = set(pairwise["method_a"].astype(str))

    def level(r) -> int:  # signed: positive when method_a is significantly better than method_b
        sign = 1 if r.rank_diff > 0 else -1
        return sign * (95 if r.significant_95 else 90 if r.significant_90 else 0)

    def row(better: str, worse: str, claimed: int) -> dict:
        r = index[(better, worse)]
        measured = level(r)
        return {"better": better, "worse": worse, "claimed": claimed, "rank_better": float(r.rank_a),
                "rank_worse": float(r.rank_b), "rank_diff": float(r.rank_diff), "p_value": float(r.p_value),
                "cd_90": float(r.cd_90), "cd_95": float(r.cd_95), "measured": measured,
                "holds": bool(measured >= claimed) if claimed else measured == 0}

    rows, stated = [], set()
    for better, worse, claimed in claims:
        better, worse = str(better), str(worse)
        for m in (better, worse):
            if m not in methods:
                raise ValueError(f"claim ({better!r} better than {worse!r}): no method {m!r} in the pairwise table; "
                                 f"methods: {sorted(methods)}")
        if claimed not in (90, 95):
            raise ValueError(f"claim ({better!r} better than {worse!r}): level must be 90 or 95, got {claimed!r}")
        if frozenset((better, worse)) in stated or better == worse:
            raise ValueError(f"claim ({better!r} better than {worse!r}): the pair is listed twice or is one method")
        stated.add(frozenset((better, worse)))
        rows.append(row(better, worse, int(claimed)))
    extra = [row(a, b, 0) for (a, b), r in index.items()
             if frozenset((a, b)) not in stated and r.rank_diff > 0 and r.significant_90]
    extra.sort(key=lambda x: (x["p_value"], x["better"], x["worse"]))
    columns = ["better", "worse", "claimed", "rank_better", "rank_worse", "rank_diff", "p_value", "cd_90", "cd_95",
               "measured", "holds"]
    return pd.DataFrame(rows + extra, columns=columns)
