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
