"""Every figure of odeval.report.plots draws from analysis frames and saves without pyplot."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import odeval.analysis as A
from odeval.report import plots as P

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def frames(small_study):
    runs, ranks = small_study
    s = A.per_variant_summary(runs)
    binned = A.best_k_binned_ranks(ranks, s)
    chars = A.difficulty_diversity(binned)
    meta = A.dataset_table(A.check_runs_frame(runs))
    base = A.dataset_baselines(meta, n_methods=4, n_simulations=30, seed=0)
    rng = np.random.default_rng(0)
    y = np.zeros(60, dtype=bool)
    y[:4] = True
    perm = pd.concat([A.label_permutation_test(y, {"a": rng.random(60) + y, "b": rng.random(60)}, 50, 0, dataset=d)
                      for d in ("one", "two")])
    return runs, s, binned, chars, meta, base, perm


def _saves(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    assert buf.getvalue()[:4] == b"\x89PNG"
    return fig


def test_every_figure_draws(frames):
    runs, s, binned, chars, meta, base, perm = frames
    matrix = A.performance_matrix(s)
    ranks = A.average_ranks(matrix)
    cd = A.nemenyi_critical_difference(matrix.shape[1], matrix.shape[0])
    name = runs["dataset"].iloc[0]
    figs = [
        P.plot_measure_vs_k(runs, name, "roc_auc", s),
        P.plot_performance_bars(A.aggregate_datasets(s)),
        P.plot_best_per_dataset(s),
        P.plot_performance_vs_dimensionality(s),
        P.plot_binned_ranks_heatmap(binned, name),
        P.plot_diversity_difficulty(chars, meta, base, label_points=True),
        P.plot_permutation_test(perm),
        P.plot_critical_difference(ranks, cd),
    ]
    for fig in figs:
        _saves(fig)
    # the measure-vs-k plot has one line per method
    assert len(figs[0].axes[0].get_lines()) >= runs["method"].nunique()


_DRAW_FIGURES = """
import io
import sys

import numpy as np

import odeval.analysis as A
from odeval.report import plots as P
from results_frames import synthetic_results

with_box_plots = sys.argv[1] == "all"
assert "matplotlib.pyplot" not in sys.modules, "pyplot imported before any figure was drawn"
runs, ranks = synthetic_results(n_base=3, n_variants=2, ks=range(1, 8), seed=1)
s = A.per_variant_summary(runs)
binned = A.best_k_binned_ranks(ranks, s)
chars = A.difficulty_diversity(binned)
meta = A.dataset_table(A.check_runs_frame(runs))
matrix = A.performance_matrix(s)
name = runs["dataset"].iloc[0]
draw = {
    "plot_measure_vs_k": lambda: P.plot_measure_vs_k(runs, name, "roc_auc", s),
    "plot_performance_bars": lambda: P.plot_performance_bars(A.aggregate_datasets(s)),
    "plot_best_per_dataset": lambda: P.plot_best_per_dataset(s),
    "plot_performance_vs_dimensionality": lambda: P.plot_performance_vs_dimensionality(s),
    "plot_binned_ranks_heatmap": lambda: P.plot_binned_ranks_heatmap(binned, name),
    "plot_diversity_difficulty": lambda: P.plot_diversity_difficulty(
        chars, meta, A.dataset_baselines(meta, n_methods=4, n_simulations=10, seed=0)),
    "plot_critical_difference": lambda: P.plot_critical_difference(
        A.average_ranks(matrix), A.nemenyi_critical_difference(matrix.shape[1], matrix.shape[0])),
}
if with_box_plots:
    y = np.zeros(60, dtype=bool)
    y[:4] = True
    rng = np.random.default_rng(0)
    perm = A.label_permutation_test(y, {"a": rng.random(60) + y, "b": rng.random(60)}, 20, 0, dataset="one")
    draw["plot_permutation_test"] = lambda: P.plot_permutation_test(perm)
if with_box_plots:  # every figure of the module
    missing = sorted(set(P.__all__) - set(draw) - {"method_colors", "diversity_difficulty_caption"})
    assert not missing, f"figures not drawn here: {missing}"
for fn, make in draw.items():
    make().savefig(io.BytesIO(), format="svg")
    if "matplotlib.pyplot" in sys.modules:
        sys.exit(f"{fn} imported matplotlib.pyplot")
"""


@pytest.mark.parametrize("backend", ["agg", None])
def test_pyplot_is_never_imported(backend):
    """Drawing and saving the figures leaves pyplot unimported. Checked in a fresh interpreter: in the test process
    another test may have imported pyplot already, and the check could not fail.

    With no backend chosen (``backend=None``) the box plot (Fig. 7) is left out: matplotlib's ``boxplot`` reads every
    rcParam, and reading ``rcParams["backend"]`` while it is still "auto" imports pyplot to resolve it.
    """
    import odeval

    paths = [str(Path(odeval.__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "analysis")]
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env["PYTHONPATH"] = os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])
    if backend:
        env["MPLBACKEND"] = backend
    res = subprocess.run([sys.executable, "-c", _DRAW_FIGURES, "all" if backend else "no-box-plots"], env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-3000:]


def test_names_with_dollar_signs_print_literally(frames):
    runs, *_ = frames
    odd = runs.assign(method=runs["method"] + "$x$", dataset=runs["dataset"] + "$")
    _saves(P.plot_measure_vs_k(odd, odd["dataset"].iloc[0]))


def test_clear_errors(frames):
    runs, s, binned, *_ = frames
    with pytest.raises(ValueError, match="no successful run for dataset"):
        P.plot_measure_vs_k(runs, "nope")
    with pytest.raises(ValueError, match="no binned ranks"):
        P.plot_binned_ranks_heatmap(binned, "nope")
    with pytest.raises(ValueError, match="measure"):
        P.plot_best_per_dataset(s, "nope")


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_legends_do_not_cover_the_data(frames):
    """Issue 11: the legend of "Best roc_auc per dataset" sat over data points; legends now sit beside the axes."""
    runs, s, *_ = frames
    for fig in (P.plot_best_per_dataset(s), P.plot_performance_vs_dimensionality(s),
                P.plot_measure_vs_k(runs, sorted(runs["dataset"].unique())[0])):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent(renderer)
        assert not _overlaps(legend, ax.get_window_extent(renderer))
        assert min(t.get_fontsize() for t in ax.get_legend().get_texts()) >= 8


def test_spread_labels_keeps_order_gap_and_bounds():
    pos = np.array([0.1, 0.11, 0.12, 0.5, 0.98, 0.99])
    out = P._spread_labels(pos, 0.05)
    assert np.all(np.diff(out) >= 0.05 - 1e-12) and out[0] >= 0 and out[-1] <= 1
    assert out[3] == pytest.approx(0.5)          # a label with room stays where it is
    np.testing.assert_allclose(P._spread_labels(np.linspace(0, 0.1, 30), 0.05), np.linspace(0, 1, 30))  # no room


def test_dataset_map_caption_says_what_is_drawn():
    """Ellipses need ≥ 3 variants; the caption must not promise ellipses that are not drawn."""
    ch = pd.DataFrame({"dataset": ["a1", "a2", "a3", "b1", "b2", "c1"],
                       "difficulty": [1.0, 2.0, 1.5, 3.0, 4.0, 5.0], "diversity": [0.5, 0.7, 0.9, 1.0, 1.2, 0.1]})
    meta = pd.DataFrame({"dataset": ch["dataset"], "base_dataset": ["A", "A", "A", "B", "B", "C"]})
    text = P.diversity_difficulty_caption(ch, meta)
    assert "95 % normal data ellipses" in text and "1 base dataset(s) with at least 3" in text
    assert "joins the 2 variants of 1" in text and "1 base dataset(s) have a single variant" in text
    from matplotlib.patches import Ellipse

    fig = P.plot_diversity_difficulty(ch, meta)
    assert sum(isinstance(p, Ellipse) for p in fig.axes[0].patches) == 1
    alone = P.diversity_difficulty_caption(ch[ch["dataset"].isin(["b1", "b2", "c1"])], meta)
    assert "which none has here" in alone and "95 % normal" not in alone
