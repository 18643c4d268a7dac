import pytest

from odeval.bench import StudyError, load_study, parse_k_range, study_from_dict


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("1..5", (1, 2, 3, 4, 5)), ("2..10:4", (2, 6, 10)), ("1:3", (1, 2, 3)), ([5, 1, 5], (1, 5)), (7, (7,))],
)
def test_parse_k_range(spec, expected):
    assert parse_k_range(spec) == expected


@pytest.mark.parametrize("spec", ["5..1", "0..3", "a..b", [1.5], True, "1..3:0"])
def test_parse_k_range_rejects(spec):
    with pytest.raises(ValueError):
        parse_k_range(spec)


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
    assert study.methods[2].ks == tuple(range(1, 9))
    assert study.study_hash == load_study(toy_study).study_hash


def test_invalid_toml_is_reported(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[study\nname=")
    with pytest.raises(StudyError, match="not valid TOML"):
        load_study(bad)
