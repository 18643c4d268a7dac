"""Heat map of a similarity matrix (matplotlib, Agg backend)."""

from __future__ import annotations

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from odeval.compare import plot_similarity_matrix, similarity_matrix  # noqa: E402


def test_plot_similarity_matrix(tmp_path):
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(0)
    y = np.arange(30) < 3
    S = rng.random((4, 30))
    M = similarity_matrix(S, y)
    ax = plot_similarity_matrix(M, ["a", "b", "c", "d"], title="test")
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["truth", "a", "b", "c", "d"]
    assert ax.get_title() == "test"
    assert len(ax.texts) == 25  # annotated cells for a small matrix
    ax.figure.savefig(tmp_path / "m.png")
    assert (tmp_path / "m.png").stat().st_size > 0
    _fig, ax2 = plt.subplots()
    assert plot_similarity_matrix(similarity_matrix(S, y, measure="manhattan"), measure="manhattan", ax=ax2) is ax2
    plt.close("all")
    with pytest.raises(ValueError, match="square"):
        plot_similarity_matrix(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="names has"):
        plot_similarity_matrix(M, ["a"])
