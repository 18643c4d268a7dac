"""The figures of Campos et al. (2016), §5, drawn from analysis DataFrames.

Each function returns a :class:`matplotlib.figure.Figure` built with the object-oriented API on the Agg
canvas — pyplot and the global backend are never touched, so the functions are safe in scripts, servers
and notebooks alike (``fig.savefig(path)`` to write it). One exception is matplotlib's own: its ``boxplot``
(:func:`plot_permutation_test`, the selection box plots) reads every rcParam, and reading the backend while it
is still "auto" (no ``MPLBACKEND``, no ``matplotlib.use``) imports pyplot to resolve it. matplotlib is imported
lazily: install the ``plot`` extra (``pip install 'odeval[plot]'``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "method_colors",
    "diversity_difficulty_caption",
    "plot_best_per_dataset",
    "plot_binned_ranks_heatmap",
    "plot_critical_difference",
    "plot_diversity_difficulty",
    "plot_measure_vs_k",
    "plot_performance_bars",
    "plot_performance_vs_dimensionality",
    "plot_permutation_test",
]

_STAT_LABELS = {"best": "best k", "window_mean": "best k ± 5", "mean_over_k": "mean over k"}


def plain_text(fn):
    """Run a plot function with mathtext off, so names containing ``$`` print literally."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return fn(*args, **kwargs)

    return wrapper


def new_figure(width: float, height: float) -> Figure:
    """A constrained-layout Figure of ``width`` × ``height`` inches on its own Agg canvas (pyplot untouched)."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("odeval's plots need matplotlib: pip install 'odeval[plot]'") from exc
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def method_colors(configs: Sequence[str]) -> dict[str, Any]:
    """A stable colour per method configuration (sorted names → tab10/tab20 colours)."""
    from matplotlib import colormaps

    names = sorted({str(c) for c in configs})
    cmap = colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {n: cmap(i % cmap.N) for i, n in enumerate(names)}


def need_columns(frame: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    """Raise a ValueError naming ``what`` and the missing columns unless ``frame`` has every one of ``cols``."""
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: the frame lacks column(s) {missing}")


@plain_text
def plot_measure_vs_k(
    runs: pd.DataFrame, dataset: str, measure: str = "roc_auc", summary: pd.DataFrame | None = None
) -> Figure:
    """Measure vs k for each method on one dataset variant (Campos et al. 2016, Fig. 1).

    Parameters
    ----------
    runs : DataFrame
        ``runs`` rows (successful ones are used); the ``config`` label is derived as in the analysis
        unless the frame already has it (the output of :func:`odeval.analysis.check_runs_frame`).
    dataset : str
        The variant name.
    measure : str
    summary : DataFrame, optional
        Output of :func:`odeval.analysis.per_variant_summary`; when given, each method's best k is marked.
    """
    from odeval.analysis import check_runs_frame

    if "config" in runs.columns:  # already validated (e.g. by check_runs_frame): no re-check of a large study
        frame = runs[runs["status"].astype(str) == "ok"] if "status" in runs.columns else runs
    else:
        frame = check_runs_frame(runs)
    need_columns(frame, [measure], "plot_measure_vs_k")
    sub = frame[frame["dataset"] == dataset]
    if sub.empty:
        raise ValueError(f"plot_measure_vs_k: no successful run for dataset {dataset!r}")
    colors = method_colors(frame["config"].unique())
    fig = new_figure(7.0, 4.2)
    ax = fig.add_subplot()
    for cfg, grp in sub.groupby("config", sort=True):
        grp = grp.sort_values("k")
        ax.plot(grp["k"], grp[measure], label=cfg, color=colors[cfg], lw=1.6)
        if summary is not None:
            sel = (summary["dataset"] == dataset) & (summary["config"] == cfg) & (summary["measure"] == measure)
            row = summary[sel]
            if len(row) and pd.notna(row["best_k"].iloc[0]):
                ax.plot([row["best_k"].iloc[0]], [row["best"].iloc[0]], "o", color=colors[cfg], ms=5)
    ax.set_xlabel("k (neighbours)")
    ax.set_ylabel(measure)
    ax.set_title(f"{dataset}: {measure} vs k", fontsize=11)
    ax.grid(alpha=0.3)
    _legend_outside(fig, ax, sub["config"].nunique())
    return fig


@plain_text
def plot_performance_bars(
    aggregate: pd.DataFrame, measure: str = "roc_auc", order: Sequence[str] | None = None
) -> Figure:
    """Bars of best-k, window (best k ± 5) and mean-over-k performance with standard errors (Fig. 2).

    Parameters
    ----------
    aggregate : DataFrame
        Output of :func:`odeval.analysis.aggregate_datasets` (or ``aggregate_variants`` filtered to one
        group): columns ``config``, ``measure``, ``best``, ``window_mean``, ``mean_over_k`` and ``*_se``.
    order : sequence of str, optional
        Method order; default by decreasing best-k performance.
    """
    need_columns(aggregate, ["config", "measure", "best", "window_mean", "mean_over_k"], "plot_performance_bars")
    sub = aggregate[aggregate["measure"] == measure].set_index("config")
    if sub.empty:
        raise ValueError(f"plot_performance_bars: no row for measure {measure!r}")
    order = list(order) if order is not None else list(sub.sort_values("best", ascending=False).index)
    sub = sub.loc[order]
    x = np.arange(len(order))
    width = 0.27
    fig = new_figure(max(6.0, 0.75 * len(order) + 2.5), 4.0)
    ax = fig.add_subplot()
    shades = {"best": "#1f4e79", "window_mean": "#4f8fc0", "mean_over_k": "#a9cbe8"}
    for i, stat in enumerate(("best", "window_mean", "mean_over_k")):
        se = sub[f"{stat}_se"].to_numpy(dtype=float) if f"{stat}_se" in sub.columns else None
        ax.bar(x + (i - 1) * width, sub[stat].to_numpy(dtype=float), width, yerr=se, capsize=2,
               label=_STAT_LABELS[stat], color=shades[stat], error_kw={"lw": 0.8})
    lo = np.nanmin(sub[["best", "window_mean", "mean_over_k"]].to_numpy(dtype=float))
    ax.set_ylim(max(0.0, lo - 0.1) if np.isfinite(lo) else 0.0, None)
    tilt = len(order) > 6 or max(len(str(o)) for o in order) > 12
    ax.set_xticks(x, order, rotation=30 if tilt else 0, ha="right" if tilt else "center",
                  rotation_mode="anchor" if tilt else "default")
    ax.set_ylabel(measure)
    ax.set_title(f"{measure}: best k, best k ± 5 and mean over k (± s.e.)", fontsize=11)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, frameon=False, ncols=3, loc="upper right")
    return fig


def _legend_outside(fig: Figure, ax: Any, n_entries: int, fontsize: float = 9) -> None:
    """The legend right of the axes, outside the data (constrained layout makes room for it)."""
    ax.legend(fontsize=fontsize, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
              ncols=1 if n_entries <= 16 else 2, handletextpad=0.3)


@plain_text
def plot_best_per_dataset(summary: pd.DataFrame, measure: str = "roc_auc", by: str = "base_dataset") -> Figure:
    """Best-k performance of every method per dataset, datasets sorted by their best method (Fig. 3).

    Each method's value is averaged over the variants of a base dataset (``by="base_dataset"``); the grey
    bar spans the methods' range and the black tick marks the best method. The legend sits right of the
    axes, never over the points.
    """
    need_columns(summary, ["config", "measure", "best", by], "plot_best_per_dataset")
    sub = summary[summary["measure"] == measure]
    if sub.empty:
        raise ValueError(f"plot_best_per_dataset: no row for measure {measure!r}")
    wide = sub.pivot_table(index=by, columns="config", values="best", aggfunc="mean")
    wide = wide.loc[wide.max(axis=1).sort_values().index]
    colors = method_colors(wide.columns)
    fig = new_figure(7.0, max(3.2, 0.34 * len(wide) + 1.4, 0.19 * wide.shape[1] + 0.9))
    ax = fig.add_subplot()
    y = np.arange(len(wide))
    ax.hlines(y, wide.min(axis=1), wide.max(axis=1), color="0.8", lw=5, zorder=1)
    for cfg in wide.columns:
        ax.scatter(wide[cfg], y, s=26, color=colors[cfg], label=cfg, zorder=2, edgecolor="white", lw=0.5)
    ax.scatter(wide.max(axis=1), y, marker="|", s=140, color="black", zorder=3, label="best method")
    ax.set_yticks(y, [str(i) for i in wide.index], fontsize=9)
    ax.set_ylim(-0.6, len(wide) - 0.4)
    ax.set_xlabel(f"{measure} at best k")
    ax.set_title(f"Best {measure} per dataset", fontsize=11)
    ax.grid(axis="x", alpha=0.3)
    _legend_outside(fig, ax, wide.shape[1] + 1)
    return fig


def _spread_labels(pos: np.ndarray, gap: float, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    """Move sorted label positions apart to at least ``gap``, as little as possible, inside [lo, hi].

    Positions (axes fractions) that cannot all fit are spread evenly over [lo, hi].
    """
    pos = np.asarray(pos, dtype=float)
    n = pos.size
    if n == 0:
        return pos
    if (n - 1) * gap > hi - lo:
        return np.linspace(lo, hi, n) if n > 1 else np.array([(lo + hi) / 2])
    out = pos.copy()
    for i in range(1, n):  # push right
        out[i] = max(out[i], out[i - 1] + gap)
    if out[-1] > hi:  # then push back left from the right edge
        out[-1] = hi
        for i in range(n - 2, -1, -1):
            out[i] = min(out[i], out[i + 1] - gap)
    return np.maximum(out, lo)


@plain_text
def plot_performance_vs_dimensionality(summary: pd.DataFrame, measure: str = "roc_auc") -> Figure:
    """Best-k performance vs number of attributes, one line per method (Fig. 4).

    Values are averaged over the variants of each base dataset; the x axis is logarithmic. The base
    datasets are named above the axes, with a leader line to their dimensionality where names would
    otherwise overlap.
    """
    need_columns(summary, ["config", "measure", "best", "base_dataset", "n_attributes"],
                 "plot_performance_vs_dimensionality")
    sub = summary[summary["measure"] == measure]
    if sub.empty:
        raise ValueError(f"plot_performance_vs_dimensionality: no row for measure {measure!r}")
    per = sub.groupby(["base_dataset", "config"], as_index=False).agg(best=("best", "mean"), d=("n_attributes", "mean"))
    colors = method_colors(per["config"].unique())
    width_in = 7.0
    fig = new_figure(width_in, 4.6)
    ax = fig.add_subplot()
    for cfg, grp in per.groupby("config", sort=True):
        grp = grp.sort_values("d")
        ax.plot(grp["d"], grp["best"], "o-", ms=4, lw=1, color=colors[cfg], label=cfg, alpha=0.9)
    dims = per.groupby("base_dataset")["d"].first().sort_values(kind="stable")
    from matplotlib.ticker import LogLocator, NullFormatter, NullLocator, ScalarFormatter

    ax.set_xscale("log")
    d_lo, d_hi = float(dims.min()), float(dims.max())
    x_lo, x_hi = d_lo / 1.3, d_hi * 1.3
    ax.set_xlim(x_lo, x_hi)
    decades = np.log10(x_hi / x_lo)
    subs = np.arange(1.0, 10.0) if decades < 1.5 else (1.0, 2.0, 5.0) if decades < 3 else (1.0,)
    ax.xaxis.set_major_locator(LogLocator(subs=subs))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())
    # dataset names above the axes, 45°, pushed apart where they would overlap, leader lines to their d
    fontsize = 8.0
    frac = (np.log(dims.to_numpy()) - np.log(x_lo)) / (np.log(x_hi) - np.log(x_lo))
    axes_width_pt = 0.62 * width_in * 72  # the axes' share of the figure (legend on the right)
    gap = 1.8 * fontsize / axes_width_pt
    placed = _spread_labels(frac, gap)
    for name, x_true, x_text in zip(dims.index, frac, placed, strict=True):
        ax.text(x_text, 1.055, str(name), transform=ax.transAxes, rotation=45, ha="left", va="bottom",
                rotation_mode="anchor", fontsize=fontsize, clip_on=False)
        # tick at the dataset's d, then a leader to its (possibly moved) name
        ax.plot([x_true, x_true, x_text], [1.0, 1.02, 1.05], transform=ax.transAxes, color="0.45", lw=0.7,
                clip_on=False)
    ax.set_xlabel("number of attributes (log scale)")
    ax.set_ylabel(f"{measure} at best k")
    ax.grid(alpha=0.3)
    _legend_outside(fig, ax, per["config"].nunique())
    return fig


@plain_text
def plot_binned_ranks_heatmap(binned: pd.DataFrame, dataset: str, n_bins: int = 10) -> Figure:
    """Heat map of the binned ranks of the true outliers, methods × outliers, for one variant (Fig. 5).

    Outliers are sorted by their mean bin (easiest left); colour 1 (found in the top |O|) to ``n_bins``.
    """
    need_columns(binned, ["dataset", "config", "object", "bin"], "plot_binned_ranks_heatmap")
    sub = binned[binned["dataset"] == dataset]
    if sub.empty:
        raise ValueError(f"plot_binned_ranks_heatmap: no binned ranks for dataset {dataset!r}")
    wide = sub.pivot_table(index="config", columns="object", values="bin", aggfunc="first")
    wide = wide[wide.mean(axis=0).sort_values(kind="stable").index]
    wide = wide.loc[wide.mean(axis=1).sort_values(kind="stable").index]
    n_out = wide.shape[1]
    fig = new_figure(min(11.0, max(6.0, 0.22 * n_out + 3.5)), max(2.6, 0.3 * wide.shape[0] + 1.6))
    ax = fig.add_subplot()
    from matplotlib import colormaps

    im = ax.imshow(wide.to_numpy(dtype=float), aspect="auto", cmap=colormaps["viridis_r"].resampled(n_bins),
                   vmin=0.5, vmax=n_bins + 0.5, interpolation="nearest")
    ax.set_yticks(np.arange(wide.shape[0]), [str(c) for c in wide.index], fontsize=8)
    if n_out <= 40:
        ax.set_xticks(np.arange(n_out), [str(o) for o in wide.columns], fontsize=8, rotation=90)
    else:
        ax.set_xticks([])
    ax.set_xlabel("true outliers (object index), easiest first")
    ax.set_title(f"{dataset}\nbins ⌈rank/|O|⌉ of the outliers at best k", fontsize=9)
    cb = fig.colorbar(im, ax=ax, ticks=np.arange(1, n_bins + 1), fraction=0.05, pad=0.02)
    cb.set_label("bin", fontsize=8)
    cb.ax.tick_params(labelsize=8)
    return fig


def _ellipse(ax: Any, x: np.ndarray, y: np.ndarray, color: Any, level: float = 0.95) -> bool:
    """Draw the ``level`` normal data ellipse of the points; False when it cannot (fewer than 3 points, or all
    points equal)."""
    from matplotlib.patches import Ellipse
    from scipy.stats import chi2

    if x.size < 3:
        return False
    cov = np.cov(x, y)
    if not np.all(np.isfinite(cov)):
        return False
    vals, vecs = np.linalg.eigh(cov)
    vals = np.maximum(vals, 0.0)
    if vals.max() <= 0:
        return False
    scale = chi2.ppf(level, 2)
    angle = np.degrees(np.arctan2(vecs[1, -1], vecs[0, -1]))
    ax.add_patch(Ellipse((x.mean(), y.mean()), 2 * np.sqrt(scale * vals[-1]), 2 * np.sqrt(scale * vals[0]),
                         angle=angle, facecolor=color, alpha=0.12, edgecolor=color, lw=1))
    return True


@plain_text
def plot_diversity_difficulty(
    characteristics: pd.DataFrame,
    datasets: pd.DataFrame | None = None,
    baselines: pd.DataFrame | None = None,
    label_points: bool = False,
) -> Figure:
    """Diversity vs difficulty per dataset variant, with 95 % ellipses per base dataset and random baselines (Fig. 6).

    A base dataset with at least 3 variants gets the 95 % normal data ellipse of its variants' points; two
    variants are joined by a line; :func:`diversity_difficulty_caption` says which of these the figure shows.

    Parameters
    ----------
    characteristics : DataFrame
        Output of :func:`odeval.analysis.difficulty_diversity` (``dataset``, ``difficulty``, ``diversity``).
    datasets : DataFrame, optional
        ``dataset`` → ``base_dataset`` mapping (e.g. :func:`odeval.analysis.dataset_table`); without it each
        variant is its own base dataset.
    baselines : DataFrame, optional
        Output of :func:`odeval.analysis.dataset_baselines`; each variant's independent (×) and identical (+)
        random-ranker means are drawn in grey.
    label_points : bool
        Write the base dataset name next to its centroid.
    """
    need_columns(characteristics, ["dataset", "difficulty", "diversity"], "plot_diversity_difficulty")
    ch = characteristics.copy()
    if datasets is not None and "base_dataset" in datasets.columns:
        ch = ch.merge(datasets[["dataset", "base_dataset"]].drop_duplicates("dataset"), on="dataset", how="left")
        ch["base_dataset"] = ch["base_dataset"].fillna(ch["dataset"])
    else:
        ch["base_dataset"] = ch["dataset"]
    colors = method_colors(ch["base_dataset"].unique())
    fig = new_figure(7.5, 5.0)
    ax = fig.add_subplot()
    if baselines is not None and len(baselines):
        for base, marker in (("independent", "x"), ("identical", "+")):
            b = baselines[baselines["baseline"] == base]
            ax.scatter(b["difficulty"], b["diversity"], marker=marker, color="0.55", s=22, lw=0.8,
                       label=f"random rankers ({base})", zorder=1)
    n_ellipses = n_joined = 0
    for base, grp in ch.groupby("base_dataset", sort=True):
        x, y = grp["difficulty"].to_numpy(float), grp["diversity"].to_numpy(float)
        ax.scatter(x, y, s=22, color=colors[base], label=str(base), zorder=3, edgecolor="white", lw=0.4)
        if _ellipse(ax, x, y, colors[base]):
            n_ellipses += 1
        elif x.size == 2:  # too few variants for an ellipse: join them
            ax.plot(x, y, color=colors[base], lw=1.0, alpha=0.7, zorder=2)
            n_joined += 1
        if label_points:
            ax.annotate(str(base), (x.mean(), y.mean()), fontsize=8, color=colors[base], xytext=(3, 3),
                        textcoords="offset points")
    ax.set_xlabel("difficulty (mean binned rank of the outliers; 1 = easy)")
    ax.set_ylabel("diversity (RMS of the sd of bins across methods)")
    ax.set_xlim(0.8, max(10.2, float(ax.get_xlim()[1])))
    ax.set_ylim(-0.1, None)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if n_ellipses:
        handles.append(Patch(facecolor="0.5", alpha=0.25, edgecolor="0.3"))
        labels.append("95 % ellipse of a base dataset's variants")
    if n_joined:
        handles.append(Line2D([], [], color="0.3", lw=1.0))
        labels.append("the 2 variants of a base dataset")
    if len(labels) <= 18:  # one column right of the axes
        ax.legend(handles, labels, fontsize=9, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0)
    else:  # many base datasets: columns below the axes, the figure grows to hold them
        ncols = 4
        fig.set_figheight(5.0 + 0.19 * -(-len(labels) // ncols))
        ax.legend(handles, labels, fontsize=9, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.13),
                  borderaxespad=0.0, ncols=ncols, handletextpad=0.3, columnspacing=1.2)
    return fig


def diversity_difficulty_caption(characteristics: pd.DataFrame, datasets: pd.DataFrame | None = None) -> str:
    """What :func:`plot_diversity_difficulty` draws around each base dataset's variants, in words.

    A 95 % normal data ellipse needs at least 3 variants (that are not all equal); 2 variants are joined
    by a line; a single variant is a lone point.
    """
    ch = characteristics[["dataset", "difficulty", "diversity"]]
    if datasets is not None and "base_dataset" in datasets.columns:
        ch = ch.merge(datasets[["dataset", "base_dataset"]].drop_duplicates("dataset"), on="dataset", how="left")
        ch["base_dataset"] = ch["base_dataset"].fillna(ch["dataset"])
    else:
        ch = ch.assign(base_dataset=ch["dataset"])
    sizes = ch.groupby("base_dataset").apply(
        lambda g: len(g) if len(g) < 3 or g[["difficulty", "diversity"]].drop_duplicates().shape[0] > 1 else 1,
        include_groups=False)
    n = len(sizes)
    n3, n2 = int((sizes >= 3).sum()), int((sizes == 2).sum())
    parts = []
    if n3:
        parts.append(f"95 % normal data ellipses around the variants of the {n3} base dataset(s) with at least 3")
    if n2:
        parts.append(f"a line joins the 2 variants of {n2} base dataset(s)")
    if n - n3 - n2:
        parts.append(f"{n - n3 - n2} base dataset(s) have a single variant (a lone point)")
    if not n3:
        parts.append("ellipses need at least 3 variants of a base dataset, which none has here")
    return "; ".join(parts)


@plain_text
def plot_permutation_test(distribution: pd.DataFrame, datasets: Sequence[str] | None = None) -> Figure:
    """Box plots of the difficulty under permuted labels, with the observed difficulty in red (Fig. 7).

    Parameters
    ----------
    distribution : DataFrame
        Concatenated :func:`odeval.analysis.label_permutation_test` outputs (with a ``dataset`` column).
    """
    need_columns(distribution, ["dataset", "difficulty", "observed_difficulty"], "plot_permutation_test")
    names = list(datasets) if datasets is not None else sorted(distribution["dataset"].unique())
    data = [distribution.loc[distribution["dataset"] == n, "difficulty"].to_numpy(float) for n in names]
    obs = [float(distribution.loc[distribution["dataset"] == n, "observed_difficulty"].iloc[0]) for n in names]
    fig = new_figure(7.0, max(2.8, 0.35 * len(names) + 1.5))
    ax = fig.add_subplot()
    y = np.arange(1, len(names) + 1)
    style = {"positions": y, "widths": 0.6, "showfliers": False, "patch_artist": True,
             "boxprops": {"facecolor": "#dde7f1", "edgecolor": "#4f6f8f"}, "medianprops": {"color": "#1f4e79"},
             "whiskerprops": {"color": "#4f6f8f"}, "capprops": {"color": "#4f6f8f"}}
    try:
        ax.boxplot(data, orientation="horizontal", **style)
    except TypeError:  # matplotlib < 3.10
        ax.boxplot(data, vert=False, **style)
    ax.scatter(obs, y, color="#c0392b", marker="D", s=26, zorder=3)
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlabel("difficulty (mean binned rank)")
    ax.set_title("Difficulty: true labels (red ◆) vs permuted labels (boxes)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    return fig


@plain_text
def plot_critical_difference(
    ranks: pd.DataFrame, cd: float, alpha_label: str = "α = 0.05"
) -> Figure:
    """Critical-difference diagram of the Nemenyi test (Demšar 2006, Fig. 1).

    Methods are placed on the axis of average ranks (1 = best, on the left); thick bars join groups of
    methods whose average ranks differ by at most ``cd`` (no significant difference).

    Parameters
    ----------
    ranks : DataFrame
        Output of :func:`odeval.analysis.average_ranks` (``config``, ``mean_rank``).
    cd : float
        Critical difference, :func:`odeval.analysis.nemenyi_critical_difference`.
    """
    need_columns(ranks, ["config", "mean_rank"], "plot_critical_difference")
    r = ranks.sort_values(["mean_rank", "config"], kind="stable").reset_index(drop=True)
    names = [str(n) for n in r["config"]]
    vals = r["mean_rank"].to_numpy(float)
    k = len(names)
    lo, hi = 1, max(k, int(np.ceil(vals.max())))
    half = (k + 1) // 2
    n_rows = max(half, k - half)
    fig = new_figure(8.0, 1.3 + 0.3 * n_rows + 0.1 * k)
    ax = fig.add_subplot()
    ax.set_xlim(lo - 0.6, hi + 0.6)
    ax.axis("off")
    ax.hlines(0, lo, hi, color="black", lw=1)
    for t in range(lo, hi + 1):
        ax.vlines(t, 0, 0.15, color="black", lw=1)
        ax.text(t, 0.25, str(t), ha="center", va="bottom", fontsize=9)
    # CD scale bar
    ax.hlines(1.15, lo, lo + cd, color="black", lw=1)
    ax.vlines([lo, lo + cd], 1.05, 1.25, color="black", lw=1)
    ax.text(lo + cd / 2, 1.3, f"CD = {cd:.3f} ({alpha_label})", ha="center", va="bottom", fontsize=9)
    # cliques: maximal runs of consecutive methods within cd (no significant difference inside)
    cliques: list[tuple[int, int]] = []
    for i in range(k):
        j = i
        while j + 1 < k and vals[j + 1] - vals[i] <= cd:
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in cliques):
            cliques.append((i, j))
    for n, (i, j) in enumerate(cliques):
        y = -0.3 - 0.2 * n
        ax.hlines(y, vals[i] - 0.04, vals[j] + 0.04, color="#c0392b", lw=3, zorder=3)
    # methods: best half on the left, the rest on the right, below the clique bars
    top = -0.5 - 0.2 * len(cliques)
    text_left, text_right = lo - 0.5, hi + 0.5
    for i, (name, v) in enumerate(zip(names, vals, strict=True)):
        left = i < half
        row = top - (i if left else k - 1 - i) * 0.8
        ax.vlines(v, row, 0, color="0.3", lw=0.8)
        ax.hlines(row, text_left if left else v, v if left else text_right, color="0.3", lw=0.8)
        ax.text(text_left if left else text_right, row + 0.06, f"{name} ({v:.2f})", ha="left" if left else "right",
                va="bottom", fontsize=9)
    ax.set_ylim(top - (n_rows - 1) * 0.8 - 0.4, 1.7)
    return fig
