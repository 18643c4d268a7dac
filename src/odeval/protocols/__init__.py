"""odeval.protocols — train/test evaluation protocols and the bias audit of Fourure et al. (2021).

Algorithm 1 (unbiased) and Algorithm 2 (recycling) with estimated or F1-optimal thresholds, repeated seeded
runs (:mod:`odeval.protocols.core`), the contamination sweep of §3.4 (:mod:`odeval.protocols.sweep`), the
theory curves of Fig. 5–7 (:mod:`odeval.protocols.theory`) and the audit behind ``odeval protocol-audit``
(:mod:`odeval.protocols.audit`). See docs/protocols.md.
"""

from odeval.protocols.core import (
    METRICS,
    SETTINGS,
    RunResult,
    Setting,
    check_scorer,
    check_test_size,
    estimated_threshold,
    fit_normalizer,
    protocol_table,
    repeat_protocol,
    run_protocol,
    run_seeds,
    split_train_test,
    summarize,
)
from odeval.protocols.sweep import SWEEP_COLUMNS, contamination_sweep, sweep_counts
from odeval.protocols.theory import (
    f1_from_rates,
    ring_toy_curve,
    ring_toy_data,
    triangular_f1,
    triangular_rates,
    triangular_thresholds,
)

__all__ = ["METRICS", "SETTINGS", "RunResult", "Setting", "check_scorer", "check_test_size", "estimated_threshold",
           "fit_normalizer", "protocol_table", "repeat_protocol", "run_protocol", "run_seeds", "split_train_test",
           "summarize", "SWEEP_COLUMNS", "contamination_sweep", "sweep_counts", "f1_from_rates", "ring_toy_curve",
           "ring_toy_data", "triangular_f1", "triangular_rates", "triangular_thresholds"]
