"""The HTML page of ``odeval select -o DIR``: one self-contained file (figures embedded as PNG).

Sections: the recommendation and why; the selectors' choices; warnings; what to expect (the Campos record); a
similarity map of candidates (weighted Pearson of unified scores, estimated outliers as weights: Schubert,
Wojdanowski, Zimek, Kriegel, SDM 2012, §3); IREOS of the pruned candidates, best first, with their bounds (Marques
et al. 2020, §3.5.2); the stability figure; a 2-D PCA projection of the prepared data with the flagged objects and
the top-n marked. Stand-alone (its own small HTML helpers) so that it does not depend on the report's private
primitives, which issue 23 reorganises.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["write_select_page"]

_CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;line-height:1.4}"
        "table{border-collapse:collapse;font-size:.9em;display:block;overflow-x:auto}"
        "td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left}img{max-width:100%}"
        ".warn{color:#a40}")


def _e(text: Any) -> str:
    return html.escape(str(text))


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _figure(fig: Any, alt: str) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def _fmt(v: Any, spec: str = ".3f") -> str:
    return "—" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, spec)


def write_select_page(rec: Any, path: str | Path) -> Path:
    """Write the page of ``rec`` (an :class:`odeval.labelfree.recommend.Recommendation`, ideally computed with
    ``SelectSettings(details=True)``; without details the two data figures are left out with a note)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from odeval.compare.plot import plot_similarity_matrix

    parts = [f"<!doctype html><meta charset='utf-8'><title>odeval select: {_e(rec.dataset['name'])}</title>"
             f"<style>{_CSS}</style><h1>odeval select: {_e(rec.dataset['name'])}</h1>"]
    prep = rec.preparation
    parts.append(f"<p>{prep['n_objects']} objects × {prep['n_attributes']} attributes after preparation "
                 f"({_e(', '.join(prep.get('steps', [])) or 'none')}); {prep.get('duplicates', 0)} exact duplicates; "
                 f"{rec.pool['n_candidates']} candidates.</p>")
    parts.append(f"<h2 id='recommendation'>Recommendation: {_e(rec.recommended)}</h2><p>{_e(rec.reason)}</p>"
                 f"<p>Alternative: the {_e(rec.alternative)}.</p>")
    ag = rec.agreement
    parts.append(f"<h2 id='choices'>Selectors (agreement: {_e(ag['strength'])})</h2>")
    parts.append(_table(["selector", "choice", "ρ to the recommendation", "note"],
                        [[c.selector, c.name, _fmt(ag["rho_to_recommendation"].get(c.selector), ".2f"), c.note]
                         for c in rec.choices]))
    parts.append("<h2 id='warnings'>Warnings</h2>" + ("".join(f"<p class='warn'>{_e(w)}</p>" for w in rec.warnings)
                                                      or "<p>None apply to this table.</p>"))
    src = rec.record_source
    parts.append(f"<h2 id='expect'>What to expect</h2><p>Measured on the labelled Campos collection "
                 f"({_e(src['document'])}; main at {_e(src['commit'])}, {_e(src['run_date'])}).</p>")
    parts.append(_table(["selector", "mean ROC AUC", "mean percentile", "variants", "reading"],
                        [[e["selector"], _fmt(e["mean_roc_auc"]), _fmt(e["mean_percentile"], ".0f"),
                          e["n_variants"] or "—", e["sentence"]] for e in rec.expectations]))
    details = rec.details
    if details is not None:
        n = len(details["similarity_names"])
        fig, ax = plt.subplots(figsize=(min(14, 3 + 0.12 * n), min(14, 3 + 0.12 * n)))
        plot_similarity_matrix(details["similarity"], details["similarity_names"], ax=ax,
                               truth_name="estimated outliers", annotate=False,
                               title="weighted Pearson of unified scores (Schubert et al. 2012)")
        methods = [name.split("-")[0].split("(")[0] for name in details["similarity_names"]]
        starts = [i for i, m in enumerate(methods) if i == 0 or m != methods[i - 1]]
        ticks = [0, *(i + 1 for i in starts)]  # row 0 is the estimated outlier set
        labels = ["estimated outliers", *(methods[i] for i in starts)]
        ax.set_xticks(ticks, labels, rotation=90, fontsize=7)
        ax.set_yticks(ticks, labels, fontsize=7)
        parts.append("<h2 id='similarity'>Similarity of the candidates</h2><p>Each method at up to 8 k spread over "
                     "the pool, plus every pick; row 0 is the estimated outlier set.</p>"
                     + _figure(fig, "similarity map"))
    ir = rec.ireos
    parts.append("<h2 id='ireos'>IREOS</h2>")
    if ir.get("order"):
        parts.append(f"<p>{_e(ir['note'])}; γ_max = {_fmt(ir['gamma_max'], '.4g')}. {_e(ir['guarded'])}.</p>")
        parts.append(_table(["rank", "candidate", "IREOS lower", "IREOS upper"],
                            [[i + 1, name, _fmt(b[0], ".4f"), _fmt(b[1], ".4f")]
                             for i, (name, b) in enumerate(zip(ir["order"], ir["bounds"], strict=True))]))
    else:
        parts.append(f"<p>{_e(ir.get('note') or ir.get('guarded') or 'not run')}</p>")
    st = rec.stability
    parts.append("<h2 id='stability'>Stability</h2>")
    if st.get("resamples"):
        names = list(st["same_pick"])
        fig, ax = plt.subplots(figsize=(7, 3))
        x = np.arange(len(names))
        ax.bar(x - 0.2, [st["same_pick"][k] for k in names], 0.4, label="same pick")
        ax.bar(x + 0.2, [st["same_method"][k] for k in names], 0.4, label="same method")
        ax.plot(x, [st["pick_rho"][k] if st["pick_rho"][k] is not None else np.nan for k in names], "ko",
                label="ρ to the full-table pick")
        ax.set_xticks(x, names, rotation=20)
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=8)
        overlap = (f"overlap {_fmt(st['top_n_overlap'], '.0%')} "
                   f"(ensemble {_fmt(st['top_n_overlap_ensemble'], '.0%')})")
        ax.set_title(f"{st['resamples']} subsamples of {st['objects_per_resample']} objects; top-{st['top_n']} "
                     + overlap, fontsize=9)
        parts.append(_figure(fig, "stability") + f"<p>{_e(st['note'])}</p>")
    else:
        parts.append(f"<p>Not measured ({_e(st.get('note', ''))}).</p>")
    th = rec.threshold
    parts.append(f"<h2 id='rows'>Which rows</h2><p>{th['n_flagged']} objects ({th['fraction']:.1%}) have outlier "
                 f"probability &gt; {th['cutoff']:g} ({_e(th['how'])}).</p>")
    if details is not None:
        P = np.asarray(details["projection"])
        flagged = rec.probabilities > th["cutoff"]
        top = [t["row"] for t in rec.top]
        fig, ax = plt.subplots(figsize=(6, 5))
        ax.scatter(P[~flagged, 0], P[~flagged, 1], s=4, c="#bbb", label="not flagged")
        ax.scatter(P[flagged, 0], P[flagged, 1], s=8, c="#e80", label="probability > 0.5")
        ax.scatter(P[top, 0], P[top, 1], s=60, facecolors="none", edgecolors="k", label=f"top {len(top)}")
        ax.set_xlabel("PC 1")
        ax.set_ylabel("PC 2")
        ax.legend(fontsize=8)
        parts.append(_figure(fig, "2-D projection"))
    parts.append(_table(["row", "id", "score", "probability", "votes"],
                        [[t["row"], t["id"] if t["id"] is not None else "", _fmt(t["score"], ".5g"),
                          _fmt(t["probability"]), f"{t['votes']}/{t['of']}"] for t in rec.top]))
    if rec.check:
        c = rec.check
        parts.append("<h2 id='check'>Check against held-back labels</h2><p>" + _e(c["note"]) + "</p>")
        parts.append(_table(["selector", "choice", "ROC AUC", "AP", "percentile"],
                            [[name, v["choice"], _fmt(v["roc_auc"]), _fmt(v["average_precision"]),
                              _fmt(v["percentile"], ".0f")] for name, v in c["selectors"].items()]))
    if details is None:
        parts.append("<p>(Similarity map and projection: computed with SelectSettings(details=True).)</p>")
    out = Path(path)
    out.write_text("\n".join(parts) + "\n", encoding="utf-8")
    return out
