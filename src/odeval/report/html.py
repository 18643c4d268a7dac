"""The static HTML report of a study: index page, one page per base dataset, CSV exports of every table.

The pages are plain HTML with inline CSS and figures embedded as ``data:`` SVG images: no script, no
server, no network access, so the folder can be zipped and sent to a colleague. Every name taken from
the results (datasets, methods, parameters, measures) is HTML-escaped.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from odeval import analysis as A
from odeval.report.primitives import (
    Page,
    ReportContext,
    cards,
    escape,
    format_value,
    html_figure,
    html_table,
    nav_html,
    page_html,
)

__all__ = ["build_report"]


def _slug(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]+", "_", str(name)).strip("_")[:60] or "dataset"
    slug, i = base, 2
    while slug.lower() in taken:
        slug, i = f"{base}_{i}", i + 1
    taken.add(slug.lower())
    return slug


def _with_se(frame: pd.DataFrame, stats: Sequence[str], digits: int = 3) -> pd.DataFrame:
    """Replace each stat column by text 'mean ± se'."""
    out = frame.copy()
    for s in stats:
        se = out.get(f"{s}_se")
        errs = se if se is not None else [np.nan] * len(out)
        out[s] = [
            (f"{m:.{digits}f}" + (f" ± {e:.{digits}f}" if pd.notna(e) else "")) if pd.notna(m) else ""
            for m, e in zip(out[s], errs, strict=True)
        ]
        if se is not None:
            out = out.drop(columns=f"{s}_se")
    return out


def build_report(
    runs: pd.DataFrame,
    ranks: pd.DataFrame | None,
    out_dir: str | Path,
    *,
    measure: str = "roc_auc",
    statistic: str = "best",
    permutation: pd.DataFrame | None = None,
    units: pd.DataFrame | None = None,
    title: str = "odeval study report",
    n_simulations: int = 200,
    seed: int = 0,
    half_window: int = 5,
    max_curves_per_dataset: int = 6,
    comparisons: Mapping[str, Any] | None = None,
    selection: Any = None,
    internal: pd.DataFrame | None = None,
    ireos: pd.DataFrame | None = None,
    pages: Sequence[tuple[str, str, str]] = (),
) -> Path:
    """Write the static HTML report of a study to ``out_dir`` and return the path of ``index.html``.

    Parameters
    ----------
    runs : DataFrame
        The ``runs`` table of a results store (DEVELOPERS.md, "bench → analysis").
    ranks : DataFrame or None
        The ``outlier_ranks`` table; without it the dataset characterisation (difficulty, diversity,
        heat maps, Fig. 6) is left out and the report says so.
    out_dir : path
        Created if needed; ``index.html``, ``datasets/*.html`` and ``tables/*.csv`` are (over)written.
    measure : str, default "roc_auc"
        The measure of the ranking, the tests and the plots; defines the best k of the characterisation.
    statistic : {"best", "window_mean", "mean_over_k"}, default "best"
        The aggregate the Friedman and Nemenyi tests compare.
    permutation : DataFrame, optional
        Concatenated :func:`odeval.analysis.label_permutation_test` outputs (needs best-k scores, which the
        store does not hold by default); adds Fig. 7 and the permutation p-values.
    units : DataFrame, optional
        The store's ``units`` table; failed units (status ≠ 'ok', which write no ``runs`` rows) are then
        listed in the report.
    n_simulations, seed : int
        Random-ranker baselines (:func:`odeval.analysis.dataset_baselines`).
    half_window : int
        Window of :func:`odeval.analysis.per_variant_summary`.
    max_curves_per_dataset : int
        At most this many variants per base dataset get a measure-vs-k plot and a heat map (one per
        preprocessing / outlier-percentage group, first variant by name).
    comparisons : mapping, optional
        Base dataset → :class:`odeval.report.comparison.ScoreComparison` (similarity matrix of the scorings
        and greedy ensemble of Schubert et al. 2012 for one variant); built from the stored score vectors by
        :func:`odeval.report.comparison.comparisons_from_store`. Without it each dataset page says that
        these need the score vectors (study option ``keep_scores``).

    Returns
    -------
    Path
        ``out_dir / "index.html"``.
    selection : odeval.analysis.selection.SelectionAudit, optional
        Adds the label-free model-selection section (:func:`odeval.report.selection.selection_section_html`).
    internal : DataFrame, optional
        The store's ``internal_measures``: adds the EM/MV section (:mod:`odeval.report.internal`).
    ireos : DataFrame, optional
        IREOS of every candidate from the per-variant step: adds the IREOS section
        (:func:`odeval.report.internal.ireos_section_html`).
    pages : sequence of (href, title, description), optional
        Other pages to link from the index (a section "Linked pages" and its navigation entry), e.g. the
        ``odeval select`` page ``odeval demo`` writes beside the report; ``href`` relative to ``out_dir``.
    """
    if statistic not in A.STATISTICS:
        raise ValueError(f"statistic must be one of {A.STATISTICS}, got {statistic!r}")
    out = Path(out_dir)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "datasets").mkdir(parents=True, exist_ok=True)
    ctx = ReportContext(out)

    ok = A.check_runs_frame(runs)
    measures = A.measure_columns(ok)
    if measure not in measures:
        raise ValueError(f"measure {measure!r} is not a measure column of runs; available: {measures}")
    summary = A.per_variant_summary(runs, half_window=half_window)
    meta = A.dataset_table(ok)
    by_base = A.aggregate_variants(summary, by=("base_dataset",))
    by_group_keys = [c for c in ("base_dataset", "normalized", "deduplicated", "outlier_pct") if c in summary.columns]
    by_group = A.aggregate_variants(summary, by=by_group_keys)
    collection = A.aggregate_datasets(summary)
    study = A.study_summary(runs)

    ctx.csv(summary, "summary_per_variant", "best k, best value, window and mean over k per variant, method, measure")
    ctx.csv(by_base, "aggregate_by_base_dataset", "mean ± s.e. over the variants of each base dataset")
    ctx.csv(by_group, "aggregate_by_preprocessing", "mean ± s.e. over variants, per base dataset and preprocessing")
    ctx.csv(collection, "aggregate_collection", "mean ± s.e. over base datasets")
    ctx.csv(study, "study_summary", "study summary")

    # --- statistics -------------------------------------------------------------------------------------------
    stats_error = None
    avg = friedman = pairwise = table = None
    cd95 = cd90 = None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            matrix = A.performance_matrix(summary, measure, statistic, by="base_dataset")
        dropped_note = " ".join(str(w.message) for w in caught)
        avg = A.average_ranks(matrix)
        friedman = A.friedman_test(matrix)
        pairwise = A.nemenyi_test(matrix)
        table = A.nemenyi_table(pairwise)
        cd95 = A.nemenyi_critical_difference(matrix.shape[1], matrix.shape[0], 0.05)
        cd90 = A.nemenyi_critical_difference(matrix.shape[1], matrix.shape[0], 0.10)
        ctx.csv(matrix, "performance_matrix", f"{statistic} {measure} per base dataset and method (test input)")
        ctx.csv(avg, "average_ranks", "average Friedman ranks")
        ctx.csv(friedman, "friedman_test", "Friedman and Iman–Davenport tests")
        ctx.csv(pairwise, "nemenyi_pairwise", "Nemenyi test per pair of methods")
        ctx.csv(table, "nemenyi_table", "Nemenyi outcome at 90 % / 95 % (Campos Table 3 form)")
    except ValueError as exc:
        stats_error = str(exc)
        dropped_note = ""

    # --- characterisation -----------------------------------------------------------------------------------
    binned = chars = baselines = None
    char_error = None if ranks is not None else "the store has no outlier_ranks table"
    if ranks is not None:
        try:
            binned = A.best_k_binned_ranks(ranks, summary, measure)
            chars = A.difficulty_diversity(binned)
            baselines = A.dataset_baselines(meta, n_methods=ok["config"].nunique(), n_simulations=n_simulations,
                                            seed=seed)
            ctx.csv(binned, "binned_ranks", f"ranks and bins of the true outliers at each method's best-{measure} k")
            ctx.csv(chars, "difficulty_diversity", "difficulty and diversity per variant")
            ctx.csv(baselines, "random_baselines", "random-ranker baselines per variant (mean and sd)")
        except ValueError as exc:
            char_error = str(exc)
            binned = chars = baselines = None
    perm_summary = None
    if permutation is not None:
        perm_summary = A.permutation_test_summary(permutation)
        ctx.csv(perm_summary, "permutation_test", "label permutation test per variant")

    # dataset map table
    best_rows = summary[summary["measure"] == measure]
    best_by_base = (best_rows.groupby(["base_dataset", "config"])["best"].mean().reset_index()
                    .sort_values(["base_dataset", "best", "config"], ascending=[True, False, True])
                    .groupby("base_dataset").first().reset_index()
                    .rename(columns={"config": "best_method", "best": f"best_{measure}"}))
    dmap = meta.groupby("base_dataset").agg(
        variants=("dataset", "nunique"),
        n_objects=("n_objects", "median") if "n_objects" in meta.columns else ("dataset", "size"),
        n_attributes=("n_attributes", "median") if "n_attributes" in meta.columns else ("dataset", "size"),
        outlier_pct=("outlier_pct_actual", "mean") if "outlier_pct_actual" in meta.columns else ("dataset", "size"),
    ).reset_index().merge(best_by_base, on="base_dataset", how="left")
    if chars is not None:
        cm = chars.merge(meta[["dataset", "base_dataset"]], on="dataset").groupby("base_dataset")[
            ["difficulty", "diversity"]].mean().reset_index()
        dmap = dmap.merge(cm, on="base_dataset", how="left")
    if perm_summary is not None:
        pm = perm_summary.merge(meta[["dataset", "base_dataset"]], on="dataset").groupby("base_dataset")[
            "p_value"].max().reset_index().rename(columns={"p_value": "max_permutation_p"})
        dmap = dmap.merge(pm, on="base_dataset", how="left")
    taken: set[str] = {"index"}
    slugs = {b: _slug(b, taken) for b in sorted(dmap["base_dataset"].astype(str))}
    dmap_csv = ctx.csv(dmap, "datasets", "one row per base dataset")

    # --- index page -------------------------------------------------------------------------------------------
    s = study.iloc[0]
    page = Page(title)
    page.add(nav_html(_index_sections(stats=not stats_error, selection=selection is not None,
                                      internal=internal is not None and len(internal) > 0,
                                      ireos=ireos is not None and len(ireos) > 0, pages=bool(pages))))
    page.add('<h2 id="summary">Study summary</h2>')
    page.add(cards([("base datasets", s["n_base_datasets"]), ("dataset variants", s["n_variants"]),
                     ("methods", s["n_methods"]), ("k range", f"{s['k_min']}–{s['k_max']}"),
                     ("successful runs", s["n_runs_ok"]), ("failed runs", s["n_runs_error"])]))
    page.add(f'<p class="muted">Measures: {escape(s["measures"])}. Ranking measure: <b>{escape(measure)}</b>; '
             f"window: best k ± {half_window}. "
             + (f"Study hash: <code>{escape(s['study_hash'])}</code>. " if "study_hash" in study.columns else "")
             + "</p>")
    if s["n_runs_error"]:
        page.add(f'<p class="note">{int(s["n_runs_error"])} run(s) failed (status ≠ ok) and are left out of every '
                 "table; the runs table of the store holds their error messages.</p>")
    failed = _failed_units(units)
    if failed is not None and len(failed):
        page.add(f'<p class="note">{len(failed)} unit(s) of work (dataset × method) failed and have no results:</p>')
        page.add(html_table(failed, csv=ctx.csv(failed, "failed_units", "units of work that failed, with their error")))

    page.add('<h2 id="ranking">Method ranking</h2>')
    coll = collection[collection["measure"] == measure].sort_values("best", ascending=False)
    order = list(coll["config"])
    page.add(html_figure(lambda: _plots().plot_performance_bars(collection, measure, order=order),
                         f"Mean over the base datasets of each method's {escape(measure)} at its best k, over the "
                         f"window best k ± {half_window}, and over all k; error bars: standard error over base "
                         "datasets (Campos et al. Fig. 2).", "performance bars"))
    show = _with_se(coll[["config", "best", "best_se", "window_mean", "window_mean_se", "mean_over_k",
                          "mean_over_k_se", "n_datasets"]], ("best", "window_mean", "mean_over_k"))
    show = show.rename(columns={"config": "method", "best": "best k", "window_mean": f"best k ± {half_window}",
                                "mean_over_k": "mean over k", "n_datasets": "base datasets"})
    page.add(html_table(show, csv="tables/aggregate_collection.csv"))
    if stats_error:
        page.add(f'<p class="note">Friedman / Nemenyi tests not available: {escape(stats_error)}</p>')
    else:
        f = friedman.iloc[0]
        page.add(f"<h3>Average ranks over {int(f['n_datasets'])} base datasets "
                 f"({escape(statistic)} {escape(measure)})</h3>")
        page.add(f"<p>Friedman χ² = {f['chi2']:.3f} (p = {f['p_chi2']:.3g}); Iman–Davenport F = {format_value(f['f'])} "
                 f"(p = {f['p_f']:.3g}). Nemenyi critical difference: {cd90:.3f} at 90 %, {cd95:.3f} at 95 %.</p>")
        if dropped_note:
            page.add(f'<p class="note">{escape(dropped_note)}</p>')
        page.add(html_figure(lambda: _plots().plot_critical_difference(avg, cd95, "95 %"),
                             "Critical-difference diagram (Demšar 2006): methods joined by a red bar do not differ "
                             "significantly at 95 % (Nemenyi test).", "critical difference diagram"))
        page.add(html_table(avg.rename(columns={"config": "method", "mean_rank": "average rank"}),
                            csv="tables/average_ranks.csv"))
        page.add('<h2 id="nemenyi">Nemenyi test</h2>')
        page.add('<p class="muted">Row vs column: ▲ row significantly better at 95 %, △ better at 90 % only, '
                 "▼ worse at 95 %, ▽ worse at 90 % only (Campos et al. Table 3 form).</p>")
        page.add(_no_significant_pair_note(table, cd90, cd95))
        page.add(html_table(table, csv="tables/nemenyi_table.csv", sym_columns=True, index=True))
        page.add('<p class="csv"><a href="tables/nemenyi_pairwise.csv">Pairwise statistics and p-values (CSV)</a></p>')

    page.add('<h2 id="datasets">Dataset map</h2>')
    figs = []
    if chars is not None:
        page.add(html_figure(lambda: _plots().plot_diversity_difficulty(chars, meta, baselines),
                             "Diversity vs difficulty per variant (Campos et al. Fig. 6): "
                             + escape(_plots().diversity_difficulty_caption(chars, meta))
                             + "; grey: independent (×) and identical (+) random rankers.",
                             "diversity vs difficulty"))
    else:
        page.add(f'<p class="note">Difficulty and diversity not available: {escape(char_error)}</p>')
    figs.append(html_figure(lambda: _plots().plot_best_per_dataset(summary, measure),
                            f"Best-k {escape(measure)} of each method per base dataset (mean over variants); the "
                            "black tick marks the best method (Campos et al. Fig. 3).", "best per dataset"))
    if "n_attributes" in summary.columns:
        figs.append(html_figure(lambda: _plots().plot_performance_vs_dimensionality(summary, measure),
                                f"Best-k {escape(measure)} vs dimensionality (Campos et al. Fig. 4).",
                                "performance vs dimensionality"))
    page.add('<div class="grid2">' + "".join(figs) + "</div>")
    if permutation is not None:
        page.add(html_figure(lambda: _plots().plot_permutation_test(permutation),
                             "Difficulty of the true labels (red) vs labels permuted at random (boxes) "
                             "(Campos et al. Fig. 7).", "permutation test"))
    shown = dmap.rename(columns={"base_dataset": "base dataset", "n_objects": "N (median)", "n_attributes": "d",
                                 "outlier_pct": "outlier %", "best_method": "best method",
                                 "max_permutation_p": "max perm. p"})
    page.add(html_table(shown, csv=dmap_csv, links={"base dataset": lambda v: f"datasets/{slugs[str(v)]}.html"}))

    # --- one page per base dataset ------------------------------------------------------------------------------
    study_analysis = _StudyAnalysis(
        title=title, measure=measure, half_window=half_window, max_curves=max_curves_per_dataset, runs=ok,
        summary=summary, by_group=by_group, group_keys=by_group_keys, meta=meta, binned=binned, chars=chars,
        perm_summary=perm_summary, permutation=permutation)
    for base in sorted(meta["base_dataset"].astype(str).unique()):
        comparison = None if comparisons is None else comparisons.get(base, _NO_COMPARISON)
        _dataset_page(ctx, study_analysis, _DatasetPage(base, slugs[base], comparison))
    if comparisons:
        ens = _ensembles_table(comparisons)
        if len(ens):
            ctx.csv(ens, "ensembles", "greedy ensemble vs best single, naive and random ensembles per base dataset "
                    "(first variant; Schubert et al. 2012 Table 4 style)")

    if selection is not None:  # an odeval.analysis.selection.SelectionAudit
        from odeval.report.selection import selection_section_html

        page.add(selection_section_html(selection, ctx=ctx))

    if internal is not None and len(internal):  # the store's internal_measures (study option internal)
        from odeval.report.internal import internal_section_html

        page.add(internal_section_html(internal, runs, ctx=ctx))

    if ireos is not None and len(ireos):  # the per-variant step's IREOS (study option internal = ["ireos"])
        from odeval.report.internal import ireos_section_html

        page.add(ireos_section_html(ireos, ctx=ctx))

    if pages:
        page.add('<h2 id="pages">Linked pages</h2><ul>' + "".join(
            f'<li><a href="{escape(href)}">{escape(name)}</a> — {escape(desc)}</li>' for href, name, desc in pages)
            + "</ul>")
    page.add('<h2 id="tables">Tables (CSV)</h2><ul>' + "".join(
        f'<li><a href="{escape(rel)}">{escape(rel)}</a> — {escape(desc)}</li>'
        for rel, desc in sorted(ctx.tables.items()) if "/ds_" not in rel) + "</ul>")
    subtitle = f"{s['n_base_datasets']} base datasets · {s['n_variants']} variants · {s['n_methods']} methods"
    index = out / "index.html"
    index.write_text(page_html(page, home=None, subtitle=subtitle), encoding="utf-8")
    return index


def _index_sections(*, stats: bool, selection: bool, internal: bool, ireos: bool,
                    pages: bool = False) -> list[tuple[str, str]]:
    """(anchor, label) of the index page's sections, in page order: the top navigation."""
    sections = [("summary", "Summary"), ("ranking", "Method ranking")]
    sections += [("nemenyi", "Nemenyi test")] if stats else []
    sections += [("datasets", "Dataset map")]
    sections += [("selection", "Label-free selection")] if selection else []
    sections += [("internal", "EM / MV")] if internal else []
    sections += [("ireos", "IREOS")] if ireos else []
    sections += [("pages", "Linked pages")] if pages else []
    return [*sections, ("tables", "Tables (CSV)")]


def _no_significant_pair_note(table: pd.DataFrame, cd90: float, cd95: float) -> str:
    """A sentence where the Nemenyi grid has no significant pair (an empty grid looks like a rendering fault)."""
    marks = {"▲", "△", "▼", "▽"}
    if any(str(v) in marks for v in table.to_numpy().ravel()):
        return ""
    return (f'<p class="note"><b>No pair of methods differs significantly</b> at 90 % or 95 %: no two average ranks '
            f"are further apart than the critical difference ({cd90:.3f} at 90 %, {cd95:.3f} at 95 %), so every cell "
            "of the grid below is empty.</p>")


_SHORT = {"normalized": "norm.", "deduplicated": "dedup.", "outlier_pct": "outlier % (nominal)", "n_objects": "N",
          "n_outliers": "|O|", "n_attributes": "d", "outlier_pct_actual": "outlier %", "permutation_p": "perm. p"}


def _failed_units(units: pd.DataFrame | None) -> pd.DataFrame | None:
    """Failed units of the store's ``units`` table."""
    if units is None or "status" not in units.columns:
        return None
    bad = units[units["status"].astype(str) != "ok"]
    cols = [c for c in ("dataset", "method", "params", "metric", "error") if c in bad.columns]
    return bad[cols].sort_values(cols[:3]).reset_index(drop=True)


def _plots():
    from odeval.report import plots

    return plots


@dataclass(frozen=True)
class _StudyAnalysis:
    """What every dataset page draws from: the report's settings and the study's analysis frames (computed once by
    :func:`build_report`; each page selects its base dataset's rows)."""

    title: str
    measure: str
    half_window: int
    max_curves: int  # at most this many variants per page get a measure-vs-k plot and a heat map
    runs: pd.DataFrame  # the successful runs (:func:`odeval.analysis.check_runs_frame`)
    summary: pd.DataFrame  # :func:`odeval.analysis.per_variant_summary`
    by_group: pd.DataFrame  # aggregate over the variants of each preprocessing / outlier-percentage group
    group_keys: list[str]  # the columns of that grouping (base_dataset first)
    meta: pd.DataFrame  # :func:`odeval.analysis.dataset_table`
    binned: pd.DataFrame | None  # best-k binned ranks; None without outlier ranks
    chars: pd.DataFrame | None  # difficulty and diversity; None without outlier ranks
    perm_summary: pd.DataFrame | None  # label permutation test per variant; None without one
    permutation: pd.DataFrame | None  # the permutation test's raw rows


@dataclass(frozen=True)
class _DatasetPage:
    """One base dataset's page: its name, its file name (``datasets/<slug>.html``) and the similarity/ensemble
    comparison of its first variant (None: not computed for the report; ``_NO_COMPARISON``: not for this one)."""

    base: str
    slug: str
    comparison: Any = None


def _dataset_page(ctx: ReportContext, study: _StudyAnalysis, dataset: _DatasetPage) -> None:
    """Write ``datasets/<slug>.html`` of one base dataset (and its CSV exports)."""
    base, slug, measure, meta = dataset.base, dataset.slug, study.measure, study.meta
    page = Page(f"{base}")
    vmeta = meta[meta["base_dataset"].astype(str) == base].copy()
    if study.chars is not None:
        vmeta = vmeta.merge(study.chars[["dataset", "difficulty", "diversity"]], on="dataset", how="left")
    if study.perm_summary is not None:
        vmeta = vmeta.merge(study.perm_summary[["dataset", "p_value"]].rename(columns={"p_value": "permutation_p"}),
                            on="dataset", how="left")
    vmeta = vmeta.drop(columns=["base_dataset"])
    page.add(f'<p class="muted">Base dataset <b>{escape(base)}</b> of the report “{escape(study.title)}”: '
             f"{len(vmeta)} variant(s).</p>")
    page.add("<h2>Variants</h2>")
    csv = ctx.csv(vmeta, f"ds_{slug}_variants", f"{base}: variants")
    page.add(html_table(vmeta.rename(columns=_SHORT), csv=csv, prefix="../"))
    page.add('<p class="muted">N objects, |O| outliers, d attributes; outlier % nominal (of the preparation) and '
             "actual; difficulty / diversity at each method's best k; perm. p: label permutation test.</p>")

    page.add(f"<h2>Performance ({escape(measure)})</h2>")
    grp = study.by_group[(study.by_group["base_dataset"].astype(str) == base) & (study.by_group["measure"] == measure)]
    gkeys = [k for k in study.group_keys if k != "base_dataset"]
    show = _with_se(grp[[*gkeys, "config", "best", "best_se", "window_mean", "window_mean_se", "mean_over_k",
                         "mean_over_k_se", "best_k_median", "n_variants"]], ("best", "window_mean", "mean_over_k"))
    show = show.sort_values([*gkeys, "config"]).rename(columns={
        "config": "method", "best": "best k", "window_mean": f"best k ± {study.half_window}",
        "mean_over_k": "mean over k", "best_k_median": "median best k", "n_variants": "variants"})
    page.add('<p class="muted">Mean ± standard error over the variants of each preprocessing / outlier-percentage '
             "group.</p>")
    page.add(html_table(show, csv=ctx.csv(grp, f"ds_{slug}_aggregate", f"{base}: aggregate"), prefix="../"))

    # representative variants: first of each preprocessing group
    vm = meta[meta["base_dataset"].astype(str) == base].sort_values("dataset")
    if len(vm) <= study.max_curves:
        reps = list(vm["dataset"])
    else:
        reps = list(vm.groupby(gkeys, dropna=False, sort=True)["dataset"].first()) if gkeys else list(vm["dataset"])
        reps = sorted(reps)[:study.max_curves]
    page.add("<h2>Measure vs k</h2>")
    if len(vm) > len(reps):
        page.add(f'<p class="muted">Shown for {len(reps)} representative variant(s) of {len(vm)} (the first of each '
                 "preprocessing / outlier-percentage group); every curve's summary is in the per-variant CSV.</p>")
    page.add('<div class="grid2">' + "".join(
        html_figure(lambda d=d: _plots().plot_measure_vs_k(study.runs, d, measure, study.summary),
                    f"{escape(measure)} vs k on {escape(d)}; dots mark each method's best k (Campos et al. Fig. 1).",
                    f"measure vs k {d}")
        for d in reps) + "</div>")
    if study.binned is not None:
        page.add("<h2>Binned ranks of the outliers</h2>")
        page.add('<div class="grid2">' + "".join(
            html_figure(lambda d=d: _plots().plot_binned_ranks_heatmap(study.binned, d),
                        f"Bins ⌈rank/|O|⌉ (capped at 10) of the true outliers of {escape(d)} for each method at its "
                        "best k (Campos et al. Fig. 5).", f"binned ranks {d}")
            for d in reps) + "</div>")
    if study.permutation is not None:
        sub = study.permutation[study.permutation["dataset"].isin(vm["dataset"])]
        if len(sub):
            page.add("<h2>Label permutation test</h2>")
            page.add(html_figure(lambda: _plots().plot_permutation_test(sub),
                                 "Difficulty of the true labels (red) vs permuted labels (Campos et al. Fig. 7).",
                                 "permutation test"))
    page.add('<h2 id="ensembles">Similarity of scorings and ensembles</h2>')
    for part in _comparison_parts(ctx, base, slug, dataset.comparison):
        page.add(part)
    per = study.summary[(study.summary["base_dataset"].astype(str) == base) & (study.summary["measure"] == measure)][
        ["dataset", "config", "best_k", "best", "window_mean", "mean_over_k", "window_lo", "window_hi"]]
    page.add("<h2>Per variant</h2><details><summary>Show the table</summary>")
    page.add(html_table(per.rename(columns={"config": "method"}),
                        csv=ctx.csv(per, f"ds_{slug}_per_variant", f"{base}: per variant"), prefix="../"))
    page.add("</details>")
    html_text = page_html(page, home="../index.html", subtitle=f"{study.title} · dataset page")
    (ctx.out / "datasets" / f"{slug}.html").write_text(html_text, encoding="utf-8")


_NO_COMPARISON = object()  # comparisons were computed, but not for this base dataset


def _ensembles_table(comparisons: Mapping[str, Any]) -> pd.DataFrame:
    """One row per base dataset with a greedy ensemble (index-level CSV)."""
    rows = []
    for base, comp in sorted(comparisons.items()):
        res = getattr(comp, "ensemble", None)
        if res is None:
            continue
        ev = res.evaluation
        rows.append({"base_dataset": base, "dataset": comp.variant, "n_scorings": res.n_scorings,
                     "best_single": ev.best_single_name, "best_single_auc": ev.best_single_auc,
                     "naive_auc": ev.naive_auc, "greedy_size": ev.greedy_size, "greedy_auc": ev.greedy_auc,
                     "random_auc_mean": ev.random_auc_mean, "random_auc_std": ev.random_auc_std,
                     "improvement_sd": ev.improvement_sd, "gain_greedy_to_best": ev.gain_greedy_to_best,
                     "gain_greedy_to_naive": ev.gain_greedy_to_naive, "gain_greedy_to_random": ev.gain_greedy_to_random,
                     "members": " ".join(ev.greedy_members)})
    return pd.DataFrame(rows)


def _similarity_figure(sim: Any) -> Any:
    from matplotlib.figure import Figure

    from odeval.compare import plot_similarity_matrix

    n = sim.matrix.shape[0]
    size = max(4.5, min(13.0, 0.26 * n + 2.5))
    fig = Figure(figsize=(size + 1.2, size))
    ax = fig.add_subplot()
    plot_similarity_matrix(sim.matrix, list(sim.names), ax=ax, measure=sim.measure, title=sim.dataset)
    fig.tight_layout()
    return fig


def _comparison_parts(ctx: ReportContext, base: str, slug: str, comp: Any) -> list[str]:
    """The 'similarity of scorings and ensembles' section of a dataset page (Schubert et al. 2012)."""
    if comp is None:
        return ['<p class="note">Not shown: the similarity of scorings and the ensembles need the full score vectors '
                "of the runs (study option <code>keep_scores = true</code>); this report was built without them "
                "(the store kept none, or they were switched off with <code>--no-ensembles</code>).</p>"]
    if comp is _NO_COMPARISON:
        return ['<p class="note">Not computed for this base dataset.</p>']
    parts = [f'<p class="muted">Variant <b>{escape(comp.variant)}</b> (the first by name). Every scoring is normalised '
             "with <code>odeval.scaling.unify</code> (Kriegel et al. 2011) before it is compared or combined.</p>"]
    if comp.note:
        parts.append(f'<p class="note">{escape(comp.note)}</p>')
    sim = comp.similarity
    if sim is not None:
        parts.append("<h3>Similarity of the scorings</h3>")
        parts.append(html_figure(lambda: _similarity_figure(sim),
                                 f"Class-balanced weighted {escape(sim.measure)} correlation of the normalised "
                                 "scorings (each method at its best k and at its smallest and largest stored k) and "
                                 "of the ground truth (first row), outliers and inliers weighted ½ each (Schubert et "
                                 "al. 2012, Sect. 3).", f"similarity matrix {comp.variant}"))
        rel = ctx.csv(sim.frame(), f"ds_{slug}_similarity", f"{base}: similarity matrix of the scorings")
        parts.append(f'<div class="csv"><a href="../{escape(rel)}">Similarity matrix (CSV)</a></div>')
    res = comp.ensemble
    if res is not None:
        ev = res.evaluation
        parts.append("<h3>Greedy ensemble</h3>")
        parts.append(f'<p class="muted">Greedy diversity-aware ensemble (Schubert et al. 2012, Sect. 4.3) of '
                     f"{res.n_scorings} normalised scorings, selected without labels from "
                     f"{ev.n_estimated_outliers} estimated outliers (rate {escape(format_value(res.rate, 3))}, "
                     f"{escape(res.measure)}, rule {escape(res.rule)}); evaluated with the labels against the best "
                     f"single scoring, the naive ensemble of all scorings and {ev.n_random} random ensembles of the "
                     "same size. Cost: weighted distance to the true labels; gain of greedy: share of the remaining "
                     "ROC AUC gap the greedy ensemble closes (Sect. 5.5).</p>")
        frame = res.summary_frame()
        rel = ctx.csv(frame, f"ds_{slug}_ensemble", f"{base}: greedy ensemble summary")
        shown = frame.rename(columns={"roc_auc": "ROC AUC", "roc_auc_sd": "± sd", "gain_of_greedy": "gain of greedy"})
        parts.append(html_table(shown, csv=rel, prefix="../", digits=4))
        imp = "n/a" if not np.isfinite(ev.improvement_sd) else f"{ev.improvement_sd:+.2f}"
        parts.append(f"<p>Improvement of the greedy ensemble over random ensembles: <b>{escape(imp)}</b> standard "
                     f"deviations. Members ({ev.greedy_size}, in order of addition): "
                     f"{escape(', '.join(ev.greedy_members))}.</p>")
        if res.dropped:
            parts.append(f'<p class="note">Left out ({len(res.dropped)}): '
                         + escape("; ".join(f"{n}: {r}" for n, r in res.dropped[:10])) + "</p>")
    return parts
