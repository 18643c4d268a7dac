"""The static HTML report of a study: index page, one page per base dataset, CSV exports of every table.

The pages are plain HTML with inline CSS and figures embedded as ``data:`` SVG images: no script, no
server, no network access, so the folder can be zipped and sent to a colleague. Every name taken from
the results (datasets, methods, parameters, measures) is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import io
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from odeval import __version__
from odeval import analysis as A

__all__ = ["build_report"]

_CSS = """
:root { --fg:#1d2733; --muted:#5b6b7c; --line:#dfe5ec; --accent:#1f4e79; --bg:#ffffff; --soft:#f5f8fb; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
       color:var(--fg); background:var(--bg); }
header.top { background:var(--accent); color:#fff; padding:18px 0 14px; }
header.top .wrap { display:flex; align-items:baseline; gap:18px; flex-wrap:wrap; }
header.top h1 { margin:0; font-size:22px; font-weight:600; }
header.top a { color:#dbe8f5; }
header.top .sub { color:#c9d9ea; font-size:13px; }
.wrap { max-width:1120px; margin:0 auto; padding:0 24px; }
main.wrap { padding-top:8px; padding-bottom:48px; }
nav.toc { font-size:13px; margin:14px 0 4px; color:var(--muted); }
nav.toc a { margin-right:14px; }
h2 { font-size:19px; margin:34px 0 8px; padding-bottom:4px; border-bottom:2px solid var(--line); }
h3 { font-size:16px; margin:22px 0 6px; }
p.note, .muted { color:var(--muted); font-size:13px; }
a { color:var(--accent); }
table { border-collapse:collapse; font-size:13px; margin:6px 0 4px; font-variant-numeric: tabular-nums; }
th, td { padding:4px 10px; border-bottom:1px solid var(--line); text-align:right; white-space:nowrap; }
th { background:var(--soft); font-weight:600; position:sticky; top:0; }
td.txt, th.txt { text-align:left; }
tbody tr:nth-child(even) td { background:#fafcfd; }
tbody tr:hover td { background:#eef4fa; }
.tablebox { overflow-x:auto; max-width:100%; }
.csv { font-size:12px; }
.cards { display:flex; gap:12px; flex-wrap:wrap; margin:12px 0; }
.card { background:var(--soft); border:1px solid var(--line); border-radius:6px; padding:8px 14px; min-width:120px; }
.card .v { font-size:20px; font-weight:600; color:var(--accent); }
.card .l { font-size:12px; color:var(--muted); }
figure { margin:14px 0; }
figure img { max-width:100%; height:auto; border:1px solid var(--line); border-radius:4px; background:#fff; }
figcaption { font-size:12.5px; color:var(--muted); max-width:860px; }
/* two figures side by side only where each still gets its natural width (7 in = 672 px): never shrink text */
.grid2 { display:grid; grid-template-columns: repeat(auto-fit, minmax(min(660px, 100%), 1fr)); gap:8px 22px; }
td.sym { text-align:center; font-size:14px; }
td.up { color:#1e7b34; } td.down { color:#b03a2e; }
details summary { cursor:pointer; color:var(--accent); font-size:13px; margin:6px 0; }
footer { color:var(--muted); font-size:12px; border-top:1px solid var(--line); margin-top:40px; padding-top:10px; }
"""


def _e(value: Any) -> str:
    """HTML-escape any value (quotes too)."""
    return html.escape("" if value is None else str(value), quote=True)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, float | np.floating):
        if np.isnan(value):
            return ""
        if float(value).is_integer() and abs(value) >= 1000:
            return f"{int(value):d}"
        return f"{value:.{digits}f}"
    return str(value)


def _slug(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]+", "_", str(name)).strip("_")[:60] or "dataset"
    slug, i = base, 2
    while slug.lower() in taken:
        slug, i = f"{base}_{i}", i + 1
    taken.add(slug.lower())
    return slug


def _svg_data_uri(fig: Any) -> str:
    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "odeval", "text.parse_math": False}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


@dataclass
class _Page:
    """Accumulates the HTML body of one page."""

    title: str
    parts: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.parts.append(text)


@dataclass
class _Context:
    out: Path
    tables: dict[str, str] = field(default_factory=dict)  # csv file → description

    def csv(self, frame: pd.DataFrame, name: str, description: str) -> str:
        """Write ``tables/<name>.csv``; return its path relative to the report root."""
        rel = f"tables/{name}.csv"
        frame.to_csv(self.out / rel, index=isinstance(frame.index, pd.MultiIndex) or frame.index.name is not None)
        self.tables[rel] = description
        return rel


def _table(
    frame: pd.DataFrame,
    *,
    csv: str | None = None,
    prefix: str = "",
    digits: int = 3,
    links: Mapping[str, Callable[[Any], str | None]] | None = None,
    sym_columns: bool = False,
    index: bool = False,
) -> str:
    """Render a DataFrame as an escaped HTML table (+ a link to its CSV export)."""
    df = frame.reset_index() if index else frame
    links = links or {}
    # float columns holding only whole numbers (counts, nominal percentages) print without decimals
    whole = {c for c in df.columns if pd.api.types.is_float_dtype(df[c])
             and all(np.isnan(v) or float(v).is_integer() for v in df[c])}
    head = "".join(
        f'<th class="{"txt" if not pd.api.types.is_numeric_dtype(df[c]) else ""}">{_e(c)}</th>' for c in df.columns
    )
    body = []
    for row in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, row, strict=True):
            text = _e(_fmt(v, 0 if c in whole else digits))
            numeric = pd.api.types.is_numeric_dtype(df[c])
            cls = "" if numeric else "txt"
            if sym_columns and c != df.columns[0]:
                cls = "sym " + ("up" if v in ("▲", "△") else "down" if v in ("▼", "▽") else "")
            if c in links:
                href = links[c](v)
                if href:
                    text = f'<a href="{_e(href)}">{text}</a>'
            cells.append(f'<td class="{cls.strip()}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    link = f'<div class="csv"><a href="{_e(prefix + csv)}">CSV</a></div>' if csv else ""
    return (f'<div class="tablebox"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
            f"{link}")


def _figure(fig_fn: Callable[[], Any], caption: str, alt: str) -> str:
    """Render a figure (closing it) as an <img> with a data URI; a failure becomes a visible note."""
    try:
        fig = fig_fn()
    except (ValueError, KeyError) as exc:
        return f'<p class="note">Figure not available ({_e(alt)}): {_e(exc)}</p>'
    uri = _svg_data_uri(fig)
    return f'<figure><img src="{uri}" alt="{_e(alt)}"><figcaption>{caption}</figcaption></figure>'


def _page_html(page: _Page, *, home: str | None, subtitle: str) -> str:
    back = f'<a href="{_e(home)}">← report index</a>' if home else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{_e(page.title)}</title><style>{_CSS}</style></head><body>"
        f'<header class="top"><div class="wrap"><h1>{_e(page.title)}</h1>'
        f'<span class="sub">{_e(subtitle)}</span>{back}</div></header>'
        f'<main class="wrap">{"".join(page.parts)}'
        f"<footer>Generated by odeval {_e(__version__)}. Analysis after Campos et al. (2016), DAMI 30(4), §5; "
        "statistics after Demšar (2006), JMLR 7. This page uses no scripts and no network.</footer>"
        "</main></body></html>\n"
    )


def _cards(items: Sequence[tuple[str, Any]]) -> str:
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="v">{_e(v)}</div><div class="l">{_e(label)}</div></div>' for label, v in items
    ) + "</div>"


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
    """
    if statistic not in A.STATISTICS:
        raise ValueError(f"statistic must be one of {A.STATISTICS}, got {statistic!r}")
    out = Path(out_dir)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    (out / "datasets").mkdir(parents=True, exist_ok=True)
    ctx = _Context(out)

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
    page = _Page(title)
    page.add('<nav class="toc"><a href="#summary">Summary</a><a href="#ranking">Method ranking</a>'
             '<a href="#nemenyi">Nemenyi test</a><a href="#datasets">Dataset map</a>'
             '<a href="#tables">Tables (CSV)</a></nav>')
    page.add('<h2 id="summary">Study summary</h2>')
    page.add(_cards([("base datasets", s["n_base_datasets"]), ("dataset variants", s["n_variants"]),
                     ("methods", s["n_methods"]), ("k range", f"{s['k_min']}–{s['k_max']}"),
                     ("successful runs", s["n_runs_ok"]), ("failed runs", s["n_runs_error"])]))
    page.add(f'<p class="muted">Measures: {_e(s["measures"])}. Ranking measure: <b>{_e(measure)}</b>; '
             f"window: best k ± {half_window}. "
             + (f"Study hash: <code>{_e(s['study_hash'])}</code>. " if "study_hash" in study.columns else "")
             + "</p>")
    if s["n_runs_error"]:
        page.add(f'<p class="note">{int(s["n_runs_error"])} run(s) failed (status ≠ ok) and are left out of every '
                 "table; the runs table of the store holds their error messages.</p>")
    failed = _failed_units(units)
    if failed is not None and len(failed):
        page.add(f'<p class="note">{len(failed)} unit(s) of work (dataset × method) failed and have no results:</p>')
        page.add(_table(failed, csv=ctx.csv(failed, "failed_units", "units of work that failed, with their error")))

    page.add('<h2 id="ranking">Method ranking</h2>')
    coll = collection[collection["measure"] == measure].sort_values("best", ascending=False)
    order = list(coll["config"])
    page.add(_figure(lambda: _plots().plot_performance_bars(collection, measure, order=order),
                     f"Mean over the base datasets of each method's {_e(measure)} at its best k, over the window "
                     f"best k ± {half_window}, and over all k; error bars: standard error over base datasets "
                     "(Campos et al. Fig. 2).", "performance bars"))
    show = _with_se(coll[["config", "best", "best_se", "window_mean", "window_mean_se", "mean_over_k",
                          "mean_over_k_se", "n_datasets"]], ("best", "window_mean", "mean_over_k"))
    show = show.rename(columns={"config": "method", "best": "best k", "window_mean": f"best k ± {half_window}",
                                "mean_over_k": "mean over k", "n_datasets": "base datasets"})
    page.add(_table(show, csv="tables/aggregate_collection.csv"))
    if stats_error:
        page.add(f'<p class="note">Friedman / Nemenyi tests not available: {_e(stats_error)}</p>')
    else:
        f = friedman.iloc[0]
        page.add(f"<h3>Average ranks over {int(f['n_datasets'])} base datasets ({_e(statistic)} {_e(measure)})</h3>")
        page.add(f"<p>Friedman χ² = {f['chi2']:.3f} (p = {f['p_chi2']:.3g}); Iman–Davenport F = {_fmt(f['f'])} "
                 f"(p = {f['p_f']:.3g}). Nemenyi critical difference: {cd90:.3f} at 90 %, {cd95:.3f} at 95 %.</p>")
        if dropped_note:
            page.add(f'<p class="note">{_e(dropped_note)}</p>')
        page.add(_figure(lambda: _plots().plot_critical_difference(avg, cd95, "95 %"),
                         "Critical-difference diagram (Demšar 2006): methods joined by a red bar do not differ "
                         "significantly at 95 % (Nemenyi test).", "critical difference diagram"))
        page.add(_table(avg.rename(columns={"config": "method", "mean_rank": "average rank"}),
                        csv="tables/average_ranks.csv"))
        page.add('<h2 id="nemenyi">Nemenyi test</h2>')
        page.add('<p class="muted">Row vs column: ▲ row significantly better at 95 %, △ better at 90 % only, '
                 "▼ worse at 95 %, ▽ worse at 90 % only (Campos et al. Table 3 form).</p>")
        page.add(_table(table, csv="tables/nemenyi_table.csv", sym_columns=True, index=True))
        page.add('<p class="csv"><a href="tables/nemenyi_pairwise.csv">Pairwise statistics and p-values (CSV)</a></p>')

    page.add('<h2 id="datasets">Dataset map</h2>')
    figs = []
    if chars is not None:
        page.add(_figure(lambda: _plots().plot_diversity_difficulty(chars, meta, baselines),
                         "Diversity vs difficulty per variant (Campos et al. Fig. 6): "
                         + _e(_plots().diversity_difficulty_caption(chars, meta))
                         + "; grey: independent (×) and identical (+) random rankers.",
                         "diversity vs difficulty"))
    else:
        page.add(f'<p class="note">Difficulty and diversity not available: {_e(char_error)}</p>')
    figs.append(_figure(lambda: _plots().plot_best_per_dataset(summary, measure),
                        f"Best-k {_e(measure)} of each method per base dataset (mean over variants); the black tick "
                        "marks the best method (Campos et al. Fig. 3).", "best per dataset"))
    if "n_attributes" in summary.columns:
        figs.append(_figure(lambda: _plots().plot_performance_vs_dimensionality(summary, measure),
                            f"Best-k {_e(measure)} vs dimensionality (Campos et al. Fig. 4).",
                            "performance vs dimensionality"))
    page.add('<div class="grid2">' + "".join(figs) + "</div>")
    if permutation is not None:
        page.add(_figure(lambda: _plots().plot_permutation_test(permutation),
                         "Difficulty of the true labels (red) vs labels permuted at random (boxes) "
                         "(Campos et al. Fig. 7).", "permutation test"))
    shown = dmap.rename(columns={"base_dataset": "base dataset", "n_objects": "N (median)", "n_attributes": "d",
                                 "outlier_pct": "outlier %", "best_method": "best method",
                                 "max_permutation_p": "max perm. p"})
    page.add(_table(shown, csv=dmap_csv, links={"base dataset": lambda v: f"datasets/{slugs[str(v)]}.html"}))

    # --- one page per base dataset ------------------------------------------------------------------------------
    for base in sorted(meta["base_dataset"].astype(str).unique()):
        _dataset_page(ctx, base, slugs[base], title, ok, summary, by_group, by_group_keys, meta, binned, chars,
                      perm_summary, permutation, measure, half_window, max_curves_per_dataset,
                      None if comparisons is None else comparisons.get(base, _NO_COMPARISON))
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

    page.add('<h2 id="tables">Tables (CSV)</h2><ul>' + "".join(
        f'<li><a href="{_e(rel)}">{_e(rel)}</a> — {_e(desc)}</li>' for rel, desc in sorted(ctx.tables.items())
        if "/ds_" not in rel) + "</ul>")
    subtitle = f"{s['n_base_datasets']} base datasets · {s['n_variants']} variants · {s['n_methods']} methods"
    index = out / "index.html"
    index.write_text(_page_html(page, home=None, subtitle=subtitle), encoding="utf-8")
    return index


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


def _dataset_page(ctx, base, slug, title, ok, summary, by_group, keys, meta, binned, chars, perm_summary, permutation,
                  measure, half_window, max_curves, comparison=None) -> None:
    page = _Page(f"{base}")
    vmeta = meta[meta["base_dataset"].astype(str) == base].copy()
    if chars is not None:
        vmeta = vmeta.merge(chars[["dataset", "difficulty", "diversity"]], on="dataset", how="left")
    if perm_summary is not None:
        vmeta = vmeta.merge(perm_summary[["dataset", "p_value"]].rename(columns={"p_value": "permutation_p"}),
                            on="dataset", how="left")
    vmeta = vmeta.drop(columns=["base_dataset"])
    page.add(f'<p class="muted">Base dataset <b>{_e(base)}</b> of the report “{_e(title)}”: '
             f"{len(vmeta)} variant(s).</p>")
    page.add("<h2>Variants</h2>")
    csv = ctx.csv(vmeta, f"ds_{slug}_variants", f"{base}: variants")
    page.add(_table(vmeta.rename(columns=_SHORT), csv=csv, prefix="../"))
    page.add('<p class="muted">N objects, |O| outliers, d attributes; outlier % nominal (of the preparation) and '
             "actual; difficulty / diversity at each method's best k; perm. p: label permutation test.</p>")

    page.add(f"<h2>Performance ({_e(measure)})</h2>")
    grp = by_group[(by_group["base_dataset"].astype(str) == base) & (by_group["measure"] == measure)]
    gkeys = [k for k in keys if k != "base_dataset"]
    show = _with_se(grp[[*gkeys, "config", "best", "best_se", "window_mean", "window_mean_se", "mean_over_k",
                         "mean_over_k_se", "best_k_median", "n_variants"]], ("best", "window_mean", "mean_over_k"))
    show = show.sort_values([*gkeys, "config"]).rename(columns={
        "config": "method", "best": "best k", "window_mean": f"best k ± {half_window}", "mean_over_k": "mean over k",
        "best_k_median": "median best k", "n_variants": "variants"})
    page.add('<p class="muted">Mean ± standard error over the variants of each preprocessing / outlier-percentage '
             "group.</p>")
    page.add(_table(show, csv=ctx.csv(grp, f"ds_{slug}_aggregate", f"{base}: aggregate"), prefix="../"))

    # representative variants: first of each preprocessing group
    vm = meta[meta["base_dataset"].astype(str) == base].sort_values("dataset")
    if len(vm) <= max_curves:
        reps = list(vm["dataset"])
    else:
        reps = list(vm.groupby(gkeys, dropna=False, sort=True)["dataset"].first()) if gkeys else list(vm["dataset"])
        reps = sorted(reps)[:max_curves]
    page.add("<h2>Measure vs k</h2>")
    if len(vm) > len(reps):
        page.add(f'<p class="muted">Shown for {len(reps)} representative variant(s) of {len(vm)} (the first of each '
                 "preprocessing / outlier-percentage group); every curve's summary is in the per-variant CSV.</p>")
    page.add('<div class="grid2">' + "".join(
        _figure(lambda d=d: _plots().plot_measure_vs_k(ok, d, measure, summary),
                f"{_e(measure)} vs k on {_e(d)}; dots mark each method's best k (Campos et al. Fig. 1).",
                f"measure vs k {d}")
        for d in reps) + "</div>")
    if binned is not None:
        page.add("<h2>Binned ranks of the outliers</h2>")
        page.add('<div class="grid2">' + "".join(
            _figure(lambda d=d: _plots().plot_binned_ranks_heatmap(binned, d),
                    f"Bins ⌈rank/|O|⌉ (capped at 10) of the true outliers of {_e(d)} for each method at its best k "
                    "(Campos et al. Fig. 5).", f"binned ranks {d}")
            for d in reps) + "</div>")
    if permutation is not None:
        sub = permutation[permutation["dataset"].isin(vm["dataset"])]
        if len(sub):
            page.add("<h2>Label permutation test</h2>")
            page.add(_figure(lambda: _plots().plot_permutation_test(sub),
                             "Difficulty of the true labels (red) vs permuted labels (Campos et al. Fig. 7).",
                             "permutation test"))
    page.add('<h2 id="ensembles">Similarity of scorings and ensembles</h2>')
    for part in _comparison_parts(ctx, base, slug, comparison):
        page.add(part)
    per = summary[(summary["base_dataset"].astype(str) == base) & (summary["measure"] == measure)][
        ["dataset", "config", "best_k", "best", "window_mean", "mean_over_k", "window_lo", "window_hi"]]
    page.add("<h2>Per variant</h2><details><summary>Show the table</summary>")
    page.add(_table(per.rename(columns={"config": "method"}),
                    csv=ctx.csv(per, f"ds_{slug}_per_variant", f"{base}: per variant"), prefix="../"))
    page.add("</details>")
    html_text = _page_html(page, home="../index.html", subtitle=f"{title} · dataset page")
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


def _comparison_parts(ctx: _Context, base: str, slug: str, comp: Any) -> list[str]:
    """The 'similarity of scorings and ensembles' section of a dataset page (Schubert et al. 2012)."""
    if comp is None:
        return ['<p class="note">Not shown: the similarity of scorings and the ensembles need the full score vectors '
                "of the runs (study option <code>keep_scores = true</code>); this report was built without them "
                "(the store kept none, or they were switched off with <code>--no-ensembles</code>).</p>"]
    if comp is _NO_COMPARISON:
        return ['<p class="note">Not computed for this base dataset.</p>']
    parts = [f'<p class="muted">Variant <b>{_e(comp.variant)}</b> (the first by name). Every scoring is normalised '
             "with <code>odeval.scaling.unify</code> (Kriegel et al. 2011) before it is compared or combined.</p>"]
    if comp.note:
        parts.append(f'<p class="note">{_e(comp.note)}</p>')
    sim = comp.similarity
    if sim is not None:
        parts.append("<h3>Similarity of the scorings</h3>")
        parts.append(_figure(lambda: _similarity_figure(sim),
                             f"Class-balanced weighted {_e(sim.measure)} correlation of the normalised scorings "
                             "(each method at its best k and at its smallest and largest stored k) and of the "
                             "ground truth (first row), outliers and inliers weighted ½ each (Schubert et al. 2012, "
                             "Sect. 3).", f"similarity matrix {comp.variant}"))
        rel = ctx.csv(sim.frame(), f"ds_{slug}_similarity", f"{base}: similarity matrix of the scorings")
        parts.append(f'<div class="csv"><a href="../{_e(rel)}">Similarity matrix (CSV)</a></div>')
    res = comp.ensemble
    if res is not None:
        ev = res.evaluation
        parts.append("<h3>Greedy ensemble</h3>")
        parts.append(f'<p class="muted">Greedy diversity-aware ensemble (Schubert et al. 2012, Sect. 4.3) of '
                     f"{res.n_scorings} normalised scorings, selected without labels from "
                     f"{ev.n_estimated_outliers} estimated outliers (rate {_e(_fmt(res.rate, 3))}, "
                     f"{_e(res.measure)}, rule {_e(res.rule)}); evaluated with the labels against the best single "
                     f"scoring, the naive ensemble of all scorings and {ev.n_random} random ensembles of the same "
                     "size. Cost: weighted distance to the true labels; gain of greedy: share of the remaining ROC "
                     "AUC gap the greedy ensemble closes (Sect. 5.5).</p>")
        frame = res.summary_frame()
        rel = ctx.csv(frame, f"ds_{slug}_ensemble", f"{base}: greedy ensemble summary")
        shown = frame.rename(columns={"roc_auc": "ROC AUC", "roc_auc_sd": "± sd", "gain_of_greedy": "gain of greedy"})
        parts.append(_table(shown, csv=rel, prefix="../", digits=4))
        imp = "n/a" if not np.isfinite(ev.improvement_sd) else f"{ev.improvement_sd:+.2f}"
        parts.append(f"<p>Improvement of the greedy ensemble over random ensembles: <b>{_e(imp)}</b> standard "
                     f"deviations. Members ({ev.greedy_size}, in order of addition): "
                     f"{_e(', '.join(ev.greedy_members))}.</p>")
        if res.dropped:
            parts.append(f'<p class="note">Left out ({len(res.dropped)}): '
                         + _e("; ".join(f"{n}: {r}" for n, r in res.dropped[:10])) + "</p>")
    return parts
