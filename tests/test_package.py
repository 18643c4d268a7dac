import numpy as np
import pytest
from click.testing import CliRunner

import odeval
from odeval._validation import check_data_matrix, check_k, check_labels, check_labels_scores
from odeval.cli import main
from odeval.data import Dataset


def test_cli_help_lists_groups():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "datasets" in result.output


def test_version():
    assert isinstance(odeval.__version__, str)


@pytest.mark.parametrize(
    ("labels", "message"),
    [([0, 2, 1], "binary"), ([0, 0, 0], "no outlier"), ([1, 1], "no inlier"), ([[0, 1]], "1-dimensional")],
)
def test_check_labels_errors(labels, message):
    with pytest.raises(ValueError, match=message):
        check_labels(labels)


def test_check_labels_scores_errors():
    with pytest.raises(ValueError, match="NaN or infinite values at position"):
        check_labels_scores([0, 1, 1], [0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="differ in length"):
        check_labels_scores([0, 1, 1], [0.1, 0.2])


def test_check_data_matrix_and_k():
    with pytest.raises(ValueError, match=r"row 1, column 0"):
        check_data_matrix([[1.0], [np.inf]])
    with pytest.raises(ValueError, match="needs at least 4 objects"):
        check_k(3, 3)
    assert check_k(2, 3) == 2


def test_dataset_value():
    X = np.array([[0.0, 1.0], [0.0, 1.0], [2.0, np.nan]])
    ds = Dataset(X=X, y=np.array([False, False, True]), name="toy", attribute_names=("a", "b"))
    assert ds.n_outliers == 1 and ds.n_missing == 1 and ds.n_duplicates() == 1
    with pytest.raises(ValueError, match="missing values"):
        ds.numeric_matrix()
    with pytest.raises(ValueError, match="y has shape"):
        Dataset(X=X, y=np.array([True]), name="bad", attribute_names=("a", "b"))
