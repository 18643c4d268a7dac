"""odeval.render: the text of the commands, pinned character for character on small result objects."""

from __future__ import annotations

from pathlib import Path

from odeval.measures.files import FileEvaluation
from odeval.protocols.audit import AuditResult, FileAudit
from odeval.render._table import name_value_lines, named_rows
from odeval.render.protocols import audit_lines
from odeval.render.scores import evaluation_lines, skipped_notes


def test_evaluation_of_one_scoring():
    ev = FileEvaluation([None], [{"roc_auc": 0.75, "average_precision": 0.5}], 4, 2, None)
    assert evaluation_lines(ev) == ["N = 4, |O| = 2", "roc_auc            0.750000", "average_precision  0.500000"]


def test_evaluation_of_table_columns():
    ev = FileEvaluation(["LOF-001", "kNN-010"], [{"roc_auc": 1.0, "p@n": 0.5}, {"roc_auc": 0.25, "p@n": 0.0}],
                        4, 2, 2)
    assert evaluation_lines(ev) == [
        "N = 4, |O| = 2, n = 2",
        "column     roc_auc        p@n",
        "LOF-001   1.000000   0.500000",
        "kNN-010   0.250000   0.000000",
    ]


def test_table_primitives_and_notes():
    assert name_value_lines({"a": 1, "bbb": 2}, str) == ["a    1", "bbb  2"]
    assert named_rows(["x"], ["v"], [{"v": 1.5}], {"v": 4}, lambda v, w: f"{v:>{w}.1f}") == \
        ["column     v", "x        1.5"]
    assert skipped_notes("KDEOS", {"1": "KDEOS is defined for k ≥ 2"}) == \
        ["note: KDEOS: skipped k=1 (KDEOS is defined for k ≥ 2)"]


def test_protocol_audit_text():
    table = [{"setting": "alg1-20-estimated", "metric": "f1", "mean": 0.5, "std": 0.25}]
    audit = FileAudit("data/wbc.arff", "kNN", {"a": 1}, 5, 3, 0, AuditResult(table, [], None, ["F1 is fine."]),
                      [Path("out/table1.csv")])
    assert audit_lines(audit) == [
        "Table 1 — wbc.arff, kNN (a=1), k=5: 3 runs, seed 0, mean ± std (ddof = 1)",
        "setting             F1                \nalg1-20-estimated   0.500 ± 0.250     ",
        "",
        "- F1 is fine.",
        "",
        "wrote out/table1.csv",
    ]
