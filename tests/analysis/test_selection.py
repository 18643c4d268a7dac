"""Meta-evaluation of model selection (odeval.analysis.selection) on hand-made candidate sets and frames,
and `odeval select-audit` on a small study store."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

from odeval.analysis import friedman_test
from odeval.analysis.selection import (
    CandidateSet,
    audit_selection,
    audit_variant,
    candidates_from_store,
    evaluate_selections,
    paper_candidates,
    selection_friedman,
    selection_summary,
    selection_tests,
    selection_verdicts,
    stored_variants,
)
from odeval.cli import main
from odeval.labelfree.selection import Selection
from odeval.measures import roc_auc

LABELS = np.array([1, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
# ROC AUC 1.0, 0.5 (ties everywhere: constant would be 0.5 too) and 0.0
PERFECT = np.array([8, 7, 6, 5, 4, 3, 2, 1], dtype=float)
INVERTED = -PERFECT
MIXED = np.array([8, 1, 7, 2, 6, 3, 5, 4], dtype=float)


def _cset() -> CandidateSet:
    return CandidateSet("toy", np.vstack([PERFECT, MIXED, INVERTED]), LABELS, ("kNN-010", "LOF-020", "kNN-005"),
                        "toybase", {"LOF-010": PERFECT})


def test_paper_candidates_best_worst_and_evenly_spaced():
    q = np.array([0.5, 0.9, 0.1, 0.52, 0.3, np.nan, 0.31, 0.7, 0.69])
    assert paper_candidates(q, 3).tolist() == [0, 1, 2]  # worst 0.1, best 0.9, then nearest to 0.5
    assert paper_candidates(q, 5).tolist() == [0, 1, 2, 4, 7]  # targets 0.1, 0.9, 0.3, 0.5, 0.7
    assert paper_candidates(q, 20).tolist() == [0, 1, 2, 3, 4, 6, 7, 8]  # all finite
    with pytest.raises(ValueError, match=">= 1"):
        paper_candidates(q, 0)


def test_evaluate_selections_numbers():
    cs = _cset()
    aucs = [roc_auc(LABELS, r) for r in cs.scores]
    assert aucs[0] == 1.0 and aucs[2] == 0.0
    sels = {"mc-spearman": Selection("mc-spearman", 1), "random": Selection("random", 0),
            "ensemble-rank": Selection("ensemble-rank", None, scores=PERFECT * 2, members=(0, 1, 2)),
            "default-lof20": Selection("default-lof20", None, note="LOF with k = 20 is not among the candidates")}
    picks, cands = evaluate_selections(cs, sels, measures=("roc_auc",))
    assert cands["roc_auc"].tolist() == aucs
    row = picks.set_index("selector")
    mid = aucs[1]
    assert row.loc["mc-spearman", "value"] == mid and row.loc["mc-spearman", "choice"] == "LOF-020"
    assert row.loc["mc-spearman", "percentile"] == pytest.approx(100 * 1.5 / 3)
    assert (row.loc["mc-spearman", ["cand_min", "cand_mean", "cand_max"]].tolist()
            == pytest.approx([0.0, np.mean(aucs), 1.0]))
    # random: the expectation over candidates, percentile exactly 50
    assert row.loc["random", "value"] == pytest.approx(np.mean(aucs)) and row.loc["random", "percentile"] == 50.0
    assert row.loc["ensemble-rank", "value"] == 1.0 and row.loc["ensemble-rank", "is_best"]
    assert row.loc["ensemble-rank", "percentile"] == pytest.approx(100 * 2.5 / 3)
    assert np.isnan(row.loc["default-lof20", "value"]) and "not among" in row.loc["default-lof20", "note"]


def test_audit_variant_judges_defaults_outside_the_set_on_their_reference():
    cs = CandidateSet("toy", np.vstack([MIXED, INVERTED]), LABELS, ("kNN-010", "kNN-005"), "toy",
                      {"LOF-020": PERFECT})
    picks, _ = audit_variant(cs, ["default-knn10", "default-lof20", "mc-kendall"], measures=("roc_auc",))
    row = picks.set_index("selector")
    assert row.loc["default-knn10", "choice"] == "kNN-010"
    assert row.loc["default-lof20", "value"] == 1.0 and row.loc["default-lof20", "choice"] == "reference LOF-020"
    assert row.loc["default-lof20", "percentile"] == 100.0


def _frame() -> pd.DataFrame:
    """Hand-made picks: 'good' beats 'random' on 7 of 8 variants, 'bad' loses on all."""
    rng = np.random.default_rng(0)
    rows = []
    for v in range(8):
        base = 0.6 + 0.02 * v
        vals = {"random": base, "good": base + (0.1 if v < 7 else -0.01), "bad": base - 0.05 - 0.001 * v,
                "default-knn10": base + 0.05 * rng.uniform()}
        for s, x in vals.items():
            rows.append({"dataset": f"d{v}", "base_dataset": f"b{v // 2}", "n_candidates": 5, "selector": s,
                         "choice": "", "measure": "roc_auc", "value": x, "cand_min": 0.3, "cand_mean": base,
                         "cand_max": 0.9, "percentile": 50.0 + 100 * (x - base), "is_best": False, "note": ""})
    return pd.DataFrame(rows)


def test_tests_summary_friedman_and_verdicts_on_a_hand_made_frame():
    picks = _frame()
    tests = selection_tests(picks, baselines=("random",))
    good = tests.set_index("selector").loc["good"]
    d = np.array([0.1] * 7 + [-0.01])
    assert good["n_better"] == 7 and good["n_worse"] == 1
    assert good["p_value"] == pytest.approx(stats.wilcoxon(d, alternative="greater").pvalue)
    assert tests.set_index("selector").loc["bad", "p_value"] == pytest.approx(1.0, abs=0.01)
    summary = selection_summary(picks).set_index("selector")
    wide = picks.pivot_table(index="dataset", columns="selector", values="value")
    ranks = stats.rankdata(-wide.to_numpy(), axis=1).mean(axis=0)
    assert summary["mean_rank"].to_dict() == pytest.approx(dict(zip(wide.columns, ranks, strict=True)))
    assert summary.loc["bad", "mean_rank"] == 4.0
    fr = selection_friedman(picks)
    assert fr["friedman"].iloc[0]["chi2"] == pytest.approx(friedman_test(wide).iloc[0]["chi2"])
    assert fr["n_blocks"] == 8
    assert selection_friedman(picks, blocks="base_dataset")["n_blocks"] == 4
    v = selection_verdicts(selection_summary(picks), tests)
    assert "significantly better than random" in v["good"]
    assert "on average worse than random" in v["bad"]
    assert "error" in selection_friedman(picks[picks["dataset"] == "d0"])


# --------------------------------------------------------------------------------------------- on a store
def _vendored(name: str) -> Path:
    from odeval.data import catalogue

    return next(Path(v.path) for v in catalogue.vendored() if Path(v.path).stem == name)


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    from odeval.bench import run_study, study_from_dict

    path = tmp_path_factory.mktemp("sel") / "r.duckdb"
    spec = study_from_dict({
        "study": {"name": "sel", "k": "8..22:2", "keep_scores": True},
        "datasets": [{"path": str(_vendored(d))} for d in ("Hepatitis_withoutdupl_norm_05_v01",
                                                            "Parkinson_withoutdupl_norm_05_v01")],
        "methods": [{"name": "kNN"}, {"name": "LOF"}],
    }, source="test")
    assert not run_study(spec, path, workers=1, progress="none").failed
    return path


def test_candidates_from_store(store):
    names = stored_variants(store)
    assert names == ["Hepatitis_withoutdupl_norm_05_v01", "Parkinson_withoutdupl_norm_05_v01"]
    cs = candidates_from_store(store, names[0])
    assert cs.scores.shape[0] == 16 and cs.base_dataset == "Hepatitis" and cs.labels.sum() > 0
    assert "kNN-010" in cs.names and "LOF-020" in cs.names and not cs.references
    ten = candidates_from_store(store, names[0], candidates=10)
    assert ten.scores.shape[0] == 10 and set(ten.names) <= set(cs.names)
    aucs = dict(zip(cs.names, [roc_auc(cs.labels, r) for r in cs.scores], strict=True))
    got = [aucs[n] for n in ten.names]
    assert max(got) == max(aucs.values()) and min(got) == min(aucs.values())
    for ref in ("kNN-010", "LOF-020"):
        assert (ref in ten.names) != (ref in ten.references)


def test_audit_on_store_is_bit_identical(store):
    loaders = [(n, lambda n=n: candidates_from_store(store, n)) for n in stored_variants(store)]
    a, b = audit_selection(loaders, seed=1), audit_selection(loaders, seed=1)
    pd.testing.assert_frame_equal(a.picks, b.picks)
    assert a.to_dict() == b.to_dict()
    assert set(a.picks["selector"]) == set(a.selectors)


def test_select_audit_cli(store, tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["select-audit", str(store)])
    assert res.exit_code == 0, res.output
    assert "model-selection audit: 2 variants, candidates all (16–16 per variant)" in res.output
    assert "mc-kendall" in res.output and "Friedman over 2 blocks" in res.output
    res = runner.invoke(main, ["select-audit", str(store), "--json", "--candidates", "10", "--selectors",
                               "mc-spearman,hits,random", "--report", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["candidates"] == "10" and out["selectors"] == ["mc-spearman", "hits", "random"]
    assert {r["selector"] for r in out["summary"]} == {"mc-spearman", "hits", "random"}
    assert (tmp_path / "rep" / "index.html").read_text().count("<img") >= 2
    assert (tmp_path / "rep" / "tables" / "selection_picks.csv").exists()
    for args, msg in ((["--selectors", "nope"], "unknown selector 'nope'"),
                      (["--candidates", "x"], "use 'all' or a positive integer"),
                      (["--datasets", "Nope"], "no kept scores of variant(s) Nope")):
        res = runner.invoke(main, ["select-audit", str(store), *args])
        assert res.exit_code != 0 and msg in res.output and "Traceback" not in res.output


def test_candidates_from_store_with_data(store):
    from odeval.data import load_dataset

    name = "Parkinson_withoutdupl_norm_05_v01"
    cs = candidates_from_store(store, name, with_data=True)
    assert np.array_equal(cs.X, load_dataset(_vendored(name)).numeric_matrix())


def test_study_report_passes_the_selection_audit(store, tmp_path, monkeypatch):
    """`odeval report --selection 10` audits the stored variants and hands the audit to build_report (the full
    report build is covered by tests/report; the section itself by test_select_audit_cli)."""
    import odeval.report.html as html
    from odeval.analysis.selection import SelectionAudit

    seen = {}

    def fake_build_report(runs, ranks, out_dir, **kw):
        seen.update(kw)
        return Path(out_dir) / "index.html"

    monkeypatch.setattr(html, "build_report", fake_build_report)
    runner = CliRunner()
    res = runner.invoke(main, ["report", str(store), "-o", str(tmp_path / "rep"), "--permutations", "0",
                               "--no-ensembles", "--simulations", "5", "--selection", "10"])
    assert res.exit_code == 0, res.output
    audit = seen["selection"]
    assert isinstance(audit, SelectionAudit) and audit.candidates_mode == "10"
    assert len(audit.picks["dataset"].unique()) == 2
    res = runner.invoke(main, ["report", str(store), "-o", str(tmp_path / "rep2"), "--selection", "some"])
    assert res.exit_code != 0 and "selection must be 'all' or a positive integer" in res.output


def test_select_audit_cli_em_mv(store):
    """`--selectors em,mv,ireos,laplacian-sqrt` loads the data and runs them (coarse EM/MV settings: fast)."""
    res = CliRunner().invoke(main, ["select-audit", str(store), "--json", "--selectors",
                                    "em,mv,ireos,laplacian-sqrt,random", "--emmv-draws", "2",
                                    "--emmv-n-generated", "2000"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["selectors"] == ["em", "mv", "ireos", "laplacian-sqrt", "random"]
    rows = [r for r in out["picks"] if r["selector"] in ("em", "mv", "ireos", "laplacian-sqrt")
            and r["measure"] == "roc_auc"]
    assert len(rows) == 8 and all(r["value"] is not None and r["choice"] for r in rows)
