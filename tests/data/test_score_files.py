"""odeval.data.score_files: the one owner of the score-table format (write and read back)."""

from __future__ import annotations

import numpy as np
import pytest

from odeval._key import ScoringKey
from odeval.data.score_files import (
    is_score_table,
    raw_column_method,
    read_score_table,
    score_column_name,
    write_score_table,
)


def _table():
    rng = np.random.default_rng(3)
    scores = rng.normal(size=(3, 7))
    scores[1, 2] = np.inf  # ±inf is kept (LOF-like methods on duplicates)
    columns = [score_column_name(ScoringKey.make("LOF", k=k)) for k in (1, 2, 10)]
    labels = np.array([True, False, False, True, False, False, False])
    return columns, scores, labels


@pytest.mark.parametrize("suffix", [".csv", ".npz", ".parquet"])
def test_write_then_read_is_exact(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    columns, scores, labels = _table()
    path = write_score_table(tmp_path / "sub" / f"s{suffix}", columns, scores, ks=[10, 1, 2], labels=labels,
                             ids=np.arange(7) + 100)
    assert is_score_table(path)
    table = read_score_table(path)
    assert table.columns == ["LOF-001", "LOF-002", "LOF-010"]
    np.testing.assert_array_equal(table.scores, scores)
    np.testing.assert_array_equal(table.labels, labels)
    if suffix == ".npz":
        assert np.load(path)["ks"].tolist() == [1, 2, 10]


def test_unlabelled_table_and_bad_extension(tmp_path):
    columns, scores, _ = _table()
    table = read_score_table(write_score_table(tmp_path / "u.csv", columns, scores))
    assert table.labels is None
    with pytest.raises(ValueError, match=r"\.parquet, \.csv or \.npz"):
        write_score_table(tmp_path / "u.txt", columns, scores)


def test_column_names_are_scoring_keys():
    key = ScoringKey.make("ODIN", k=5)
    assert score_column_name(key) == "ODIN-005"
    assert score_column_name(key, raw=True) == "ODIN-005-raw"
    assert raw_column_method("ODIN-005-raw") == "ODIN"
    assert raw_column_method("ODIN-005") is None
    assert raw_column_method("a-b-c-raw") == "a-b"  # not a key odeval writes: the old rule
