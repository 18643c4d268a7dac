"""odeval.measures.files: the library side of `odeval evaluate`."""

from __future__ import annotations

import numpy as np
import pytest

from odeval.data.score_files import write_score_table
from odeval.measures import evaluate
from odeval.measures.files import EvaluationInputError, evaluate_files

Y = np.array([True, False, True, False, False])
S = np.array([0.9, 0.1, 0.5, 0.7, 0.2])


def test_vector_and_table(tmp_path):
    (tmp_path / "s.txt").write_text("\n".join(map(str, S)))
    (tmp_path / "y.txt").write_text("\n".join(str(int(v)) for v in Y))
    ev = evaluate_files(str(tmp_path / "s.txt"), labels_file=str(tmp_path / "y.txt"), n=2)
    assert ev.single and ev.n_objects == 5 and ev.n_outliers == 2 and ev.n == 2
    assert ev.results[0] == evaluate(Y, S, n=2)
    write_score_table(tmp_path / "t.csv", ["ODIN-002-raw", "LOF-002"], np.vstack([S, S]), labels=Y)
    ev = evaluate_files(str(tmp_path / "t.csv"))
    assert ev.columns == ["ODIN-002-raw", "LOF-002"]
    assert ev.results[0] == evaluate(Y, -S) and ev.results[1] == evaluate(Y, S)  # raw ODIN: low = outlier


def test_inputs_that_do_not_fit_are_usage_errors(tmp_path):
    (tmp_path / "s.txt").write_text("\n".join(map(str, S)))
    with pytest.raises(EvaluationInputError, match="give --labels or --dataset"):
        evaluate_files(str(tmp_path / "s.txt"))
    write_score_table(tmp_path / "t.npz", ["LOF-002"], S[None, :])
    with pytest.raises(EvaluationInputError, match="no 'label' column"):
        evaluate_files(str(tmp_path / "t.npz"))
