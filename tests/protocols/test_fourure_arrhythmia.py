"""External check: Table 1 of Fourure et al. (2021) for arrhythmia with OneClassSVM(gamma="auto", nu=0.9),
100 runs; every mean within two of the paper's standard deviations (docs/protocols.md)."""

from __future__ import annotations

import pytest
from sklearn.svm import OneClassSVM

from odeval.data import load_dataset
from odeval.detectors import wrap_estimator
from odeval.protocols import protocol_table, summarize

# Fourure et al. (2021), Table 1, arrhythmia: (mean, std) per setting and metric
PAPER = {
    ("alg1-20-estimated", "f1"): (0.451, 0.103), ("alg2-20-estimated", "f1"): (0.715, 0.025),
    ("alg2-5-estimated", "f1"): (0.867, 0.021), ("alg2-5-optimal", "f1"): (0.888, 0.012),
    ("alg1-20-estimated", "avpr"): (0.481, 0.116), ("alg2-20-estimated", "avpr"): (0.770, 0.041),
    ("alg2-5-estimated", "avpr"): (0.924, 0.028), ("alg2-5-optimal", "avpr"): (0.924, 0.029),
    ("alg1-20-estimated", "auc"): (0.809, 0.065), ("alg2-20-estimated", "auc"): (0.806, 0.020),
    ("alg2-5-estimated", "auc"): (0.803, 0.042), ("alg2-5-optimal", "auc"): (0.799, 0.042),
}


@pytest.mark.slow
def test_table1_arrhythmia_matches_the_paper(shared_datasets):
    path = shared_datasets / "odds" / "arrhythmia.mat"
    if not path.exists():
        pytest.skip(f"{path} not found")
    ds = load_dataset(path)
    det = wrap_estimator(OneClassSVM(gamma="auto", nu=0.9))
    rows = summarize(protocol_table(ds.numeric_matrix(), ds.y, det, runs=100, seed=0))
    assert len(rows) == 12
    for r in rows:
        mean, std = PAPER[(r["setting"], r["metric"])]
        assert abs(r["mean"] - mean) <= 2 * std, (r, mean, std)
