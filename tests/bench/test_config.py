import pytest

from odeval.bench import StudyError, load_study, study_from_dict


def test_every_problem_is_reported_at_once(tmp_path):
    raw = {
        "study": {"k": "9..3", "measures": ["roc_auc", "nonsense"], "colour": "red"},
        "datasets": [{"path": "missing.arff"}, {"glob": "nothing/*.npz"}],
        "methods": [{"name": "LOF"}, {"name": "NoSuchMethod"}, {"name": "LDF", "params": {"bandwidth": 3}}],
    }
    with pytest.raises(StudyError) as info:
        study_from_dict(raw, base_dir=tmp_path, source="s.toml")
    text = str(info.value)
    for needle in ("[study].k", "nonsense", "colour", "missing.arff", "nothing/*.npz", "NoSuchMethod", "LDF"):
        assert needle in text, needle
    assert len(info.value.problems) == 7


def test_load_study_resolves_relative_globs(toy_study):
    study = load_study(toy_study)
    assert [d.name for d in study.datasets] == ["toy_a", "toy_b"]
    assert [m.name for m in study.methods] == ["kNN", "LOF", "LDOF"]
    assert study.methods[2].ks.values() == tuple(range(1, 9))
    assert study.study_hash == load_study(toy_study).study_hash


def test_invalid_toml_is_reported(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[study\nname=")
    with pytest.raises(StudyError, match="not valid TOML"):
        load_study(bad)


def test_huge_k_range_is_capped_per_variant_and_skips_are_recorded(tmp_path, npz_dataset, study_file):
    """k = "1..1000000000" neither expands at load time nor at run time; skipped k are recorded with their
    reason, and `study check` reports what will run."""
    import json

    from click.testing import CliRunner

    from odeval.bench import ResultStore, run_study
    from odeval.cli import main

    npz_dataset(tmp_path / "small.npz", 20, 3, 2, seed=4)
    path = study_file(tmp_path / "s.toml", """
[study]
k = "1..1000000000"

[[datasets]]
path = "small.npz"

[[methods]]
name = "LDOF"

[[methods]]
name = "kNN"
k = "1:4, 10"

[[methods]]
name = "LOF"
k = "30..40"
""")
    study = load_study(path)
    assert study.k_max == 1_000_000_000
    res = CliRunner().invoke(main, ["study", "check", str(path)])
    assert res.exit_code == 0, res.output
    assert "LDOF {'variant': 'paper'} k=2..1000000000 (999999999 values)" in res.output
    assert "skipped k=1: LDOF is defined for k ≥ 2" in res.output
    assert "kNN {'variant': 'paper'} k=1..4,10 (5 values)" in res.output
    store = tmp_path / "r.duckdb"
    summary = run_study(study, store, workers=1, progress="none")
    assert summary.ok == 2 and len(summary.failed) == 1  # LOF: every k ≥ N, nothing computed: an error
    assert "no requested k can be computed on 23 objects: k=30..40: k ≥ N = 23" in summary.failed[0]["error"]
    with ResultStore(store, read_only=True) as rs:
        runs, units = rs.runs(), rs.units()
    assert sorted(runs[runs.method == "LDOF"].k) == list(range(2, 23))
    assert sorted(runs[runs.method == "kNN"].k) == [1, 2, 3, 4, 10]
    skipped = json.loads(units[units.method == "LDOF"].iloc[0].skipped)
    assert skipped == {"1": "LDOF is defined for k ≥ 2",
                       "23..1000000000": "k ≥ N = 23 objects (k counts neighbours other than the query point)"}
    # `study check` reported, for the variant, exactly what the runner recorded (the same words)
    assert "small (N=23, kNN graph k=22):" in res.output
    assert "LDOF {'variant': 'paper'} k=2..22 (21 values)" in res.output
    assert "LDOF: skipped k=23..1000000000 (k ≥ N = 23 objects" in res.output
    assert "LOF {'variant': 'paper'} k=none (0 values): nothing to compute" in res.output
    from odeval.bench.config import study_k_plans

    (variant,) = list(study_k_plans(study))
    for m, plan in variant.plans:
        unit = units[units.method == m.name].iloc[0]
        assert json.loads(unit.skipped) == plan.skipped, m.name
        assert sorted(runs[runs.method == m.name].k) == plan.ks, m.name


def test_study_check_names_an_unreadable_variant(tmp_path, study_file):
    from click.testing import CliRunner

    from odeval.cli import main

    (tmp_path / "broken.npz").write_bytes(b"not a zip file")
    path = study_file(tmp_path / "s.toml", '[[datasets]]\npath = "broken.npz"\n\n[[methods]]\nname = "kNN"\n')
    res = CliRunner().invoke(main, ["study", "check", str(path)])
    assert res.exit_code == 0, res.output
    assert "broken: cannot be read:" in res.output
