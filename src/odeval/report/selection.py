"""Report section of the model-selection audit (:func:`odeval.analysis.selection.audit_selection`).

:func:`plot_selection_boxplots` draws, per dataset variant, the distribution of the candidates' quality as a
box plot with the quality of each selector's pick marked by its own symbol (Marques et al. 2020, Fig. 9).
:func:`selection_section_html` renders the summary, tests, verdicts, critical-difference diagram and box
plots as an HTML fragment; :func:`write_selection_report` writes it as a standalone page with CSV exports.

References
----------
H. O. Marques, R. J. G. B. Campello, J. Sander, A. Zimek. Internal evaluation of unsupervised outlier
detection. ACM TKDD 14(4), 2020, Fig. 9 and Table 7.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from odeval.report.plots import need_columns, new_figure, plain_text, plot_critical_difference
from odeval.report.primitives import Page, ReportContext, escape, html_figure, html_table, page_html

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

    from odeval.analysis.selection import SelectionAudit

__all__ = ["plot_selection_boxplots", "selection_section_html", "write_selection_report"]

_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p", "8", "d", "H")


@plain_text
def plot_selection_boxplots(candidates: pd.DataFrame, picks: pd.DataFrame, measure: str = "roc_auc",
                            selectors: Sequence[str] | None = None, datasets: Sequence[str] | None = None) -> Figure:
    """Box plots of the candidates' quality per variant, each selector's pick marked (IREOS paper, Fig. 9).

    Parameters
    ----------
    candidates : DataFrame
        ``dataset``, ``candidate`` and a column ``measure`` (the ``candidates`` frame of the audit).
    picks : DataFrame
        ``dataset``, ``selector``, ``measure``, ``value`` (the ``picks`` frame of the audit).
    selectors, datasets : optional subsets (default: all, in order of appearance).
    """
    need_columns(candidates, ["dataset", measure], "plot_selection_boxplots (candidates)")
    need_columns(picks, ["dataset", "selector", "measure", "value"], "plot_selection_boxplots (picks)")
    ds = list(datasets) if datasets is not None else list(dict.fromkeys(candidates["dataset"]))
    sub = picks[picks["measure"] == measure]
    sels = list(selectors) if selectors is not None else list(dict.fromkeys(sub["selector"]))
    if not ds:
        raise ValueError("plot_selection_boxplots: no dataset to draw")
    fig = new_figure(max(6.0, 0.55 * len(ds) + 3.5), 4.6)
    ax = fig.add_subplot()
    data = [candidates.loc[candidates["dataset"] == d, measure].to_numpy(float) for d in ds]
    ax.boxplot(data, positions=np.arange(len(ds)), widths=0.5, whis=(0, 100), showfliers=False,
               medianprops={"color": "0.3"}, boxprops={"color": "0.5"}, whiskerprops={"color": "0.5"},
               capprops={"color": "0.5"})
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(sels) <= 10 else "tab20"]
    offsets = np.linspace(-0.3, 0.3, len(sels)) if len(sels) > 1 else np.zeros(1)
    for j, s in enumerate(sels):
        vals = sub[sub["selector"] == s].set_index("dataset")["value"]
        y = np.array([vals.get(d, np.nan) for d in ds], dtype=float)
        ax.scatter(np.arange(len(ds)) + offsets[j], y, marker=_MARKERS[j % len(_MARKERS)], s=26,
                   color=cmap(j % cmap.N), label=s, zorder=3, edgecolors="black", linewidths=0.4)
    ax.set_xticks(np.arange(len(ds)))
    ax.set_xticklabels(ds, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel(measure)
    ax.set_title(f"Candidates' {measure} (box: min–max, quartiles) and each selector's pick", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return fig


def selection_section_html(audit: SelectionAudit, *, csv_prefix: str = "", ctx: Any = None,
                           max_per_figure: int = 30) -> str:
    """HTML fragment: summary table, Wilcoxon tests, Friedman/Nemenyi with the CD diagram, verdicts and the
    Fig.-9-style box plots (one figure per ``max_per_figure`` variants). ``ctx`` (the report's context, with
    a ``csv(frame, name, description)`` method) writes the CSV exports when given."""
    from odeval.analysis.selection import friedman_line

    m = audit.measure

    def csv(frame: pd.DataFrame, name: str, desc: str) -> str | None:
        return ctx.csv(frame, name, desc) if ctx is not None else None

    parts = ['<h2 id="selection">Label-free model selection</h2>',
             f"<p>Each selector picks one candidate per variant without labels ({escape(audit.candidates_mode)} "
             f"candidates); the labels judge the pick ({escape(m)}). Percentile: mid-rank among the candidates (a "
             "random pick averages 50). Tests: one-sided Wilcoxon signed-rank, selector better than the baseline. "
             "See docs/model-selection.md.</p>"]
    parts.append(html_table(audit.summary, csv=csv(audit.summary, "selection_summary", "model-selection summary"),
                            prefix=csv_prefix))
    parts.append("<h3>Verdicts</h3><ul>" + "".join(f"<li>{escape(v)}</li>" for v in audit.verdicts.values()) + "</ul>")
    if len(audit.tests):
        parts.append("<h3>Wilcoxon signed-rank tests against the baselines</h3>")
        parts.append(html_table(audit.tests, csv=csv(audit.tests, "selection_tests", "Wilcoxon tests"),
                                prefix=csv_prefix))
    fr = audit.friedman
    parts.append(f"<h3>Friedman and Nemenyi across selectors</h3><p>{escape(friedman_line(fr))}</p>")
    if "error" not in fr:
        parts.append(html_figure(lambda: plot_critical_difference(fr["ranks"], fr["cd"], f"α = {fr['alpha']}"),
                               "Critical-difference diagram of the selectors (Demšar 2006).", "CD diagram"))
    ds = list(dict.fromkeys(audit.candidates["dataset"]))
    for i in range(0, len(ds), max_per_figure):
        chunk = ds[i:i + max_per_figure]
        parts.append(html_figure(lambda chunk=chunk: plot_selection_boxplots(audit.candidates, audit.picks, m,
                                                                           audit.selectors, chunk),
                               "Candidates' quality per variant with each selector's pick (Marques et al. 2020, "
                               "Fig. 9 style).", "selection box plots"))
    picks = audit.picks[audit.picks["measure"] == m]
    csv(audit.picks, "selection_picks", "every selector's pick on every variant, all measures")
    csv(audit.candidates, "selection_candidates", "every candidate's quality")
    if ctx is not None:
        parts.append(f'<p><a href="{escape(csv_prefix)}tables/selection_picks.csv">All picks (CSV)</a></p>')
    else:
        parts.append("<details><summary>Picks per variant</summary>"
                     + html_table(picks.drop(columns=["measure"])) + "</details>")
    return "".join(parts)


def write_selection_report(audit: SelectionAudit, out_dir: str | Path, *, title: str = "Model-selection audit") -> Path:
    """Write ``index.html`` (the section of :func:`selection_section_html` as a page) and ``tables/*.csv``."""
    out = Path(out_dir)
    (out / "tables").mkdir(parents=True, exist_ok=True)
    ctx = ReportContext(out)
    page = Page(title)
    page.add(selection_section_html(audit, ctx=ctx))
    index = out / "index.html"
    index.write_text(page_html(page, home=None, subtitle=f"{audit.measure}, candidates {audit.candidates_mode}"),
                     encoding="utf-8")
    return index
