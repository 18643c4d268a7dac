"""Label-free (internal) measures as optional columns of a study: ``internal = ["em", "mv"]``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from odeval.bench import ResultStore, StudyError, run_study, study_from_dict
from odeval.bench.runner import _file_sha256, unit_id
from odeval.cli import main
from odeval.data import catalogue

DATASET = "Glass_withoutdupl_norm"
OPTIONS = {"draws": 2, "n_generated": 300, "features": 3}


def _vendored(name: str) -> Path:
    return next(Path(v.path) for v in catalogue.vendored() if Path(v.path).stem == name)


def _raw(**extra) -> dict:
    return {"study": {"name": "int", "k": "3..5"}, "datasets": [{"path": str(_vendored(DATASET))}],
            "methods": [{"name": "kNN"}, {"name": "LOF"}, {"name": "ODIN"}], **extra}


def internal_study(tmp: Path) -> Path:
    spec = study_from_dict(_raw(internal=["em", "mv"], internal_options=OPTIONS), source="test")
    store = tmp / "r.duckdb"
    assert not run_study(spec, store, workers=1, progress="none").failed
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return internal_study(tmp_path_factory.mktemp("internal"))


def test_internal_rows_for_novelty_methods_and_a_note_for_odin(store):
    with ResultStore(store, read_only=True) as st:
        df = st.internal_measures()
    ok = df[df.method.isin(["kNN", "LOF"])]
    assert set(ok.measure) == {"em", "mv"} and set(ok.k) == {3, 4, 5}
    assert len(ok) == 2 * 3 * 2 and ok.value.notna().all()
    details = json.loads(ok.details.iloc[0])
    assert details["n_generated"] == 300 and details["sampling"] == "auto"
    counts = details["method_counts"]  # how many draws each estimation method gave (sampling="auto")
    assert set(counts) == {"em", "mv"} and sum(counts["em"].values()) == details["draws"] - details["em_failed"]
    odin = df[df.method == "ODIN"]
    assert len(odin) == 3 * 2 and odin.value.isna().all()
    assert all("no novelty form" in json.loads(d)["not_applicable"] for d in odin.details)


def test_unit_ids_change_only_when_internal_is_requested(tmp_path):
    plain, plain2 = study_from_dict(_raw(), source="a"), study_from_dict(_raw(), source="b")
    inner = study_from_dict(_raw(internal=["em", "mv"]), source="a")
    ref, m = plain.datasets[0], plain.methods[0]
    sha = _file_sha256(ref.path)
    assert plain.internal == () and plain.study_hash == plain2.study_hash
    assert unit_id(sha, ref, m, plain) != unit_id(sha, ref, m, inner)
    assert plain.study_hash != inner.study_hash
    # the id of a study without `internal` is the pre-existing formula (stores keep working)
    import hashlib

    from odeval._krange import parse_k_range
    payload = json.dumps([sha, ref.name, m.name, m.params_json, parse_k_range(m.ks).canonical(), plain.metric,
                          list(plain.measures), plain.keep_scores], sort_keys=True)
    assert unit_id(sha, ref, m, plain) == hashlib.sha256(payload.encode()).hexdigest()[:24]


def test_bad_internal_entries_are_study_errors():
    with pytest.raises(StudyError, match=r"unknown measure.*bogus"):
        study_from_dict(_raw(internal=["em", "bogus"]), source="t")
    with pytest.raises(StudyError, match="internal_options: unknown key 'bogus'"):
        study_from_dict(_raw(internal=["em"], internal_options={"bogus": 1}), source="t")
    with pytest.raises(StudyError, match="draws must be an integer"):
        study_from_dict(_raw(internal=["mv"], internal_options={"draws": 0}), source="t")
    spec = study_from_dict({**_raw(), "study": {"k": "3..5", "internal": ["MV"]}}, source="t")
    assert spec.internal == ("mv",) and spec.internal_options == {"seed": 0}


def test_study_check_names_methods_without_emmv(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text(f'internal = ["em", "mv"]\n[study]\nk = "3..5"\n[[datasets]]\npath = "{_vendored(DATASET)}"\n'
                 '[[methods]]\nname = "kNN"\n[[methods]]\nname = "ODIN"\n')
    out = CliRunner().invoke(main, ["study", "check", str(f)])
    assert out.exit_code == 0, out.output
    assert "ODIN: no EM/MV" in out.output and "kNN: no" not in out.output


def test_emmv_box_enters_the_ids_unless_it_is_the_box_of_older_stores():
    """Issue 26: the default box="author" changed sub-sampled EM/MV values, so it is part of the study hash and
    unit ids even when not written; box="train_test" (every older store's box) keeps the older ids."""
    import hashlib

    from odeval._krange import parse_k_range

    default = study_from_dict(_raw(internal=["em", "mv"]), source="a")
    author = study_from_dict(_raw(internal=["em", "mv"], internal_options={"box": "author"}), source="a")
    old = study_from_dict(_raw(internal=["em", "mv"], internal_options={"box": "train_test"}), source="a")
    ref, m = default.datasets[0], default.methods[0]
    sha = _file_sha256(ref.path)
    assert default.internal_options == {"seed": 0} and old.internal_options == {"box": "train_test", "seed": 0}
    assert unit_id(sha, ref, m, default) == unit_id(sha, ref, m, author) != unit_id(sha, ref, m, old)
    assert default.study_hash == author.study_hash != old.study_hash
    # the id of box="train_test" with sampling="uniform" (below) is the formula of stores written before either option
    payload = json.dumps([sha, ref.name, m.name, m.params_json, parse_k_range(m.ks).canonical(), old.metric,
                          list(old.measures), old.keep_scores,
                          {"internal": ["em", "mv"], "options": {"seed": 0}}], sort_keys=True, default=str)
    assert unit_id(sha, ref, m, old) != hashlib.sha256(payload.encode()).hexdigest()[:24]  # sampling "auto" enters
    # sampling: the default "auto" enters the ids (it redoes draws the uniform points cannot estimate); "uniform",
    # the only sampling of older stores, keeps their ids
    uniform = study_from_dict(_raw(internal=["em", "mv"], internal_options={"sampling": "uniform"}), source="a")
    nested = study_from_dict(_raw(internal=["em", "mv"], internal_options={"sampling": "nested"}), source="a")
    auto = study_from_dict(_raw(internal=["em", "mv"], internal_options={"sampling": "auto"}), source="a")
    assert unit_id(sha, ref, m, auto) == unit_id(sha, ref, m, default)
    assert len({unit_id(sha, ref, m, s) for s in (default, uniform, nested)}) == 3
    assert default.internal_key["options"]["sampling"] == "auto" and "sampling" not in uniform.internal_key["options"]
    old_uniform = study_from_dict(_raw(internal=["em", "mv"], internal_options={"box": "train_test",
                                                                                 "sampling": "uniform"}), source="a")
    assert unit_id(sha, ref, m, old_uniform) == hashlib.sha256(payload.encode()).hexdigest()[:24]
    with pytest.raises(StudyError, match=r"internal_options.sampling must be one of \['auto', 'uniform', 'nested'\]"):
        study_from_dict(_raw(internal=["em"], internal_options={"sampling": "importance"}), source="t")
    with pytest.raises(StudyError, match=r"internal_options.box must be one of \['author', 'train_test'\]"):
        study_from_dict(_raw(internal=["em"], internal_options={"box": "data"}), source="t")
