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


def test_studies_of_a_store():
    import json

    import pandas as pd

    from odeval.render.results import studies_json, studies_lines

    assert studies_lines(pd.DataFrame(columns=["study_hash", "name"]), "r.duckdb") == ["r.duckdb: no study"]
    frame = pd.DataFrame({"study_hash": ["aaaa", "bbbb"], "name": ["first", "a longer name"], "n_units": [12, 3],
                          "n_datasets": [2, 1], "source": ["a.toml", "b.toml"],
                          "created": pd.to_datetime(["2026-11-26 10:00:31", "2026-11-26 11:05:00"])})
    lines = studies_lines(frame, "r.duckdb")
    assert lines[:4] == ["r.duckdb: 2 studies",
                         "hash  units  datasets  when              name",
                         "aaaa     12         2  2026-11-26 10:00  first",
                         "bbbb      3         1  2026-11-26 11:05  a longer name"]
    assert lines[4] == "report one of them: odeval report STORE -o DIR --study HASH|NAME"
    assert len(studies_lines(frame.iloc[:1], "r.duckdb")) == 3  # one study: nothing to choose
    assert json.loads(studies_json(frame))[1] == {"study_hash": "bbbb", "name": "a longer name", "n_units": 3,
                                                  "n_datasets": 1, "created": "2026-11-26 11:05",
                                                  "source": "b.toml"}
