"""Every figure of odeval.report.plots draws from analysis frames and saves without pyplot."""

from __future__ import annotations

import io
import sys

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


def test_pyplot_is_never_imported(frames):
    _, s, *_ = frames
    had = "matplotlib.pyplot" in sys.modules
    P.plot_best_per_dataset(s)
    assert had or "matplotlib.pyplot" not in sys.modules


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
