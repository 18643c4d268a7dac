"""The EM/MV section of the report, from a tiny study with ``internal = ["em", "mv"]``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from odeval._key import ScoringKey
from odeval.bench import ResultStore
from odeval.report import report_from_store
from odeval.report.internal import internal_picks


def _study_store(tmp):
    from tests.bench.test_internal_study import internal_study

    return internal_study(tmp)


def test_report_has_the_internal_section(tmp_path):
    store = _study_store(tmp_path)
    index, _ = report_from_store(store, tmp_path / "report", permutations=0, simulations=5, ensembles=False)
    html = index.read_text()
    assert 'id="internal"' in html and "EM (max)" in html and "MV (min)" in html
    assert "ODIN: EM/MV not applicable" in html
    picks = pd.read_csv(tmp_path / "report" / "tables" / "internal_picks.csv")
    assert list(picks["criterion"]) == ["EM (max)", "MV (min)"] and set(picks["candidates"]) == {6}
    with ResultStore(store, read_only=True) as st:
        internal, runs = st.internal_measures(), st.runs()
    em = internal[(internal.measure == "em") & internal.value.notna()]
    best = em.loc[em.value.idxmax()]
    # the one scoring key (odeval._key), shortened to what tells the candidates apart: "kNN-004"
    assert picks.loc[0, "pick"] == ScoringKey.make(best.method, k=int(best.k)).label(params=False, metric=False)
    auc = runs.set_index(["unit_id", "k"]).loc[(best.unit_id, best.k), "roc_auc"]
    assert np.isclose(picks.loc[0, "roc_auc pick"], auc)
    assert picks.loc[0, "roc_auc min"] <= auc <= picks.loc[0, "roc_auc max"]


def test_no_section_without_internal_measures():
    runs = pd.DataFrame({"unit_id": ["u"], "k": [3], "roc_auc": [0.5], "average_precision": [0.1]})
    empty = pd.DataFrame(columns=["unit_id", "dataset", "method", "k", "measure", "value"])
    assert internal_picks(empty, runs).empty
