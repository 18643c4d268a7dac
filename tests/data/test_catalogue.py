"""The dataset catalogue (odeval.data.catalogue): names, registry, selection, resolution, vendored data."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from odeval.cli import main
from odeval.data import catalogue as cat
from odeval.data import load_dataset


@pytest.fixture
def no_data_dir(monkeypatch, tmp_path):
    """Simulate a machine without the shared folder: no $ODEVAL_DATA, no ../shared/datasets anywhere."""
    monkeypatch.delenv(cat.ENV_VAR, raising=False)
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    monkeypatch.setattr(cat, "_repo_root", lambda: None)


# --- names -----------------------------------------------------------------------------------------------
def test_every_registered_name_round_trips():
    for b in cat.bases("campos"):
        for name in b.files:
            p = cat.parse_variant_name(name)
            assert p is not None and p.base == b.name, name
            again = cat.format_variant_name(p.base, deduplicated=p.deduplicated, normalized=p.normalized,
                                            categorical=p.categorical, outlier_pct=p.outlier_pct, version=p.version)
            assert again == name


def test_parse_variant_name():
    p = cat.parse_variant_name("Annthyroid_withoutdupl_norm_05_v03.arff")
    assert (p.base, p.deduplicated, p.normalized, p.outlier_pct, p.version, p.downsampled) == \
        ("Annthyroid", True, True, 5, 3, True)
    p = cat.parse_variant_name("Annthyroid_07")
    assert (p.outlier_pct, p.version, p.downsampled, p.deduplicated) == (7, None, False, False)
    assert cat.parse_variant_name("Lymphography_withoutdupl_norm_1ofn").categorical == "1ofn"
    assert cat.parse_variant_name("Glass") == cat.VariantName(base="Glass")
    for odd in ("1_ALOI", "my_data", "WBC_norm_withoutdupl", "_x"):
        assert cat.parse_variant_name(odd) is None, odd
    assert cat.format_variant_name("X", outlier_pct=2.5) == "X_02.5"
    assert cat.parse_variant_name("X_02.5").outlier_pct == 2.5
    with pytest.raises(ValueError, match="categorical"):
        cat.format_variant_name("X", categorical="ordinal")


def test_registry_entries():
    b = cat.BASES["Annthyroid"]
    assert (b.n_objects, b.n_outliers, b.n_attributes, b.n_objects_dedup) == (7200, 534, 21, 7129)
    assert "Campos" in b.citation and "Thyroid" in b.source and "outliers" in b.semantics
    assert len(cat.bases("campos")) == 15 and len(cat.bases("odds")) == 21 and len(cat.bases("adbench")) == 8
    assert sum(len(b.files) for b in cat.bases("campos")) == 272
    json.dumps([b.to_dict() for b in cat.bases()])


# --- against the shared folder ---------------------------------------------------------------------------
def test_registry_matches_the_shared_folder(shared_datasets):
    found = cat.scan(shared_datasets)
    rep = cat.presence(shared_datasets)
    assert rep["unregistered"] == []
    assert all(not e["missing"] for e in rep["bases"])
    assert len([v for v in found if v.collection == "campos"]) == 272
    assert {v.collection for v in found} == {"campos", "odds", "adbench"}


def test_registry_sizes_match_the_files(dami):
    full = {"Annthyroid": "Annthyroid_07", "Arrhythmia": "Arrhythmia_withoutdupl_norm_46",
            "Glass": "Glass_withoutdupl_norm", "HeartDisease": "HeartDisease_withoutdupl_44",
            "Hepatitis": "Hepatitis_withoutdupl_norm_16", "Ionosphere": "Ionosphere_withoutdupl_norm",
            "Lymphography": "Lymphography_withoutdupl_catremoved", "Parkinson": "Parkinson_withoutdupl_norm_75",
            "PenDigits": "PenDigits_withoutdupl_norm_v01", "Pima": "Pima_withoutdupl_norm_35",
            "Shuttle": "Shuttle_withoutdupl_v01", "Waveform": "Waveform_withoutdupl_norm_v01", "WBC": "WBC_v01",
            "WDBC": "WDBC_withoutdupl_norm_v01", "Wilt": "Wilt_05"}
    for base, name in full.items():
        b = cat.BASES[base]
        ds = load_dataset(dami / base / f"{name}.arff")
        assert (ds.n_objects, ds.n_outliers, ds.n_attributes) == (b.n_objects, b.n_outliers, b.n_attributes), base


def test_registry_sizes_match_odds_and_adbench(shared_datasets):
    pytest.importorskip("h5py")
    for b in [*cat.bases("odds"), *cat.bases("adbench")]:
        v = cat.get(b.name, shared_datasets)
        ds = v.load()
        assert (ds.n_objects, ds.n_outliers, ds.n_attributes) == (b.n_objects, b.n_outliers, b.n_attributes), b.name


def test_select_filters(shared_datasets):
    sel = cat.select(shared_datasets, base="Annthyroid", variant="withoutdupl_norm", pct=5, version=3)
    assert [v.name for v in sel] == ["Annthyroid_withoutdupl_norm_05_v03"]
    v = sel[0]
    assert (v.base, v.normalized, v.deduplicated, v.outlier_pct, v.version, v.downsampled, v.collection) == \
        ("Annthyroid", True, True, 5, 3, True, "campos")
    assert Path(v.path).is_file() and v.base_dataset == "Annthyroid" and not v.vendored
    assert cat.select(shared_datasets, base="annthyroid", pct=0.05, version=3) == sel    # case, fraction
    assert len(cat.select(shared_datasets, base="Pima", pct=[2, 20])) == 20
    # WBC, WDBC, Waveform, Wilt 02 %
    assert len(cat.select(shared_datasets, base="W*", variant="withoutdupl_norm", version=1)) == 4
    assert [v.name for v in cat.select(shared_datasets, variant="raw")] == ["Annthyroid_07", "WBC_v01", "Wilt_05"]
    assert len(cat.select(shared_datasets, categorical="idf")) == 2
    assert len(cat.select(shared_datasets, collection="odds")) == 21
    assert [v.name for v in cat.select(shared_datasets, name="Hepatitis_*_05_v0[12]")] == \
        ["Hepatitis_withoutdupl_norm_05_v01", "Hepatitis_withoutdupl_norm_05_v02"]
    assert len(cat.select(shared_datasets, base="Arrhythmia", downsampled=False)) == 1
    assert cat.select(shared_datasets, base="Nope") == []


def test_resolve_names_globs_paths(shared_datasets, tmp_path):
    dami = shared_datasets / "dami"
    by_name = cat.resolve("WBC_withoutdupl_norm_v01", shared_datasets)
    by_path = cat.resolve(str(dami / "WBC" / "WBC_withoutdupl_norm_v01.arff"))
    assert by_name == by_path and len(by_name) == 1
    assert len(cat.resolve("Pima_withoutdupl_norm_05_v*", shared_datasets)) == 10
    assert len(cat.resolve(str(dami / "Wilt" / "*_02_v*.arff"))) == 10
    assert len(cat.resolve(dami / "Lymphography")) == 7
    assert len(cat.resolve(["Lymphography", "Glass_withoutdupl_norm"], shared_datasets, normalized=True)) == 4
    odds = cat.resolve("odds/wbc", shared_datasets)
    assert odds[0].collection == "odds" and odds[0].info.n_objects == 378
    # the same file through two specs is listed once
    assert len(cat.resolve(["WBC_v01", str(dami / "WBC" / "WBC_v01.arff")], shared_datasets)) == 1
    with pytest.raises(cat.CatalogueError, match=r"'Annthyroid_withoutdupl_norm_05_v11' is not in .*present "
                                                 r"variants of Annthyroid: Annthyroid_07"):
        cat.resolve("Annthyroid_withoutdupl_norm_05_v11", shared_datasets)
    with pytest.raises(cat.CatalogueError, match=r"matches no dataset.*known bases include"):
        cat.get("Foo_norm", shared_datasets)
    with pytest.raises(cat.CatalogueError, match="with filters"):
        cat.resolve("Glass", shared_datasets, version=1)
    with pytest.raises(ValueError, match="does not exist"):               # CatalogueError is a ValueError
        cat.select(tmp_path / "nowhere")


def test_variant_from_plain_files(tmp_path):
    p = tmp_path / "sensor.csv"
    p.write_text("a,outlier\n1,0\n2,1\n")
    v = cat.variant_from_path(p)
    assert (v.name, v.base, v.collection, v.normalized, v.format) == ("sensor", "sensor", "other", None, "csv")
    q = tmp_path / "Glass_withoutdupl_norm.arff"
    q.write_text("")
    assert cat.variant_from_path(q).collection == "campos"
    r = tmp_path / "mine_withoutdupl_norm_05_v02.arff"
    r.write_text("")
    v = cat.variant_from_path(r)
    assert (v.base, v.collection, v.version) == ("mine", "other", 2)


def test_data_dir_resolution(monkeypatch, tmp_path, no_data_dir):
    assert cat.resolve_data_dir() is None
    with pytest.raises(cat.CatalogueError, match="no data directory found"):
        cat.resolve_data_dir(required=True)
    monkeypatch.setenv(cat.ENV_VAR, str(tmp_path / "missing"))
    with pytest.raises(cat.CatalogueError, match=r"from \$ODEVAL_DATA\) does not exist"):
        cat.resolve_data_dir()
    monkeypatch.setenv(cat.ENV_VAR, str(tmp_path))
    assert cat.resolve_data_dir() == tmp_path
    assert cat.resolve_data_dir(tmp_path / "a") == tmp_path / "a"       # explicit wins
    monkeypatch.delenv(cat.ENV_VAR)
    shared = tmp_path / "a" / "shared" / "datasets"                      # ../shared/datasets from cwd a/b
    shared.mkdir(parents=True)
    assert cat.resolve_data_dir() == Path("..") .resolve() / "shared" / "datasets"


def test_partial_data_dir_reports_missing(tmp_path, dami):
    (tmp_path / "dami" / "WBC").mkdir(parents=True)
    shutil.copy(dami / "WBC" / "WBC_v01.arff", tmp_path / "dami" / "WBC")
    rep = cat.presence(tmp_path)
    wbc = next(e for e in rep["bases"] if e["base"].name == "WBC")
    assert wbc["present"] == ["WBC_v01"] and len(wbc["missing"]) == 11
    glass = next(e for e in rep["bases"] if e["base"].name == "Glass")
    assert glass["present"] == [] and glass["missing"] == ["Glass_withoutdupl_norm"]
    r = CliRunner().invoke(main, ["datasets", "list", "--data-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert re.search(r"WBC\s+1/12\s+incomplete", r.output) and re.search(r"Glass\s+0/1\s+MISSING", r.output)
    assert "missing: Glass_withoutdupl_norm" in r.output


# --- vendored --------------------------------------------------------------------------------------------
def test_vendored_files_match_their_provenance():
    vend = cat.vendored()
    assert len(vend) == 11 and all(v.vendored for v in vend)
    table = (cat.vendored_dir() / "PROVENANCE.md").read_text()
    total = 0
    for v in vend:
        data = Path(v.path).read_bytes()
        total += len(data)
        assert hashlib.sha256(data).hexdigest() in table, v.name
        ds = v.load()
        row = table.split(f"`dami/{v.base}/{v.name}.arff`")[1][:40]
        assert f"| {ds.n_objects} | {ds.n_outliers} | {ds.n_attributes} |" in row
    assert total < 300_000
    assert {v.base for v in vend} >= {"WBC", "Glass", "Lymphography", "Hepatitis", "Parkinson"}


def test_vendored_files_are_the_published_files(dami):
    for v in cat.vendored():
        assert Path(v.path).read_bytes() == (dami / v.base / f"{v.name}.arff").read_bytes()


def test_fallback_to_vendored_without_data_dir(no_data_dir):
    sel = cat.select(base="WBC", variant="withoutdupl_norm")
    assert [v.name for v in sel] == ["WBC_withoutdupl_norm_v01"] and sel[0].vendored
    assert cat.get("Lymphography_original").vendored
    with pytest.raises(cat.CatalogueError, match=r"'Annthyroid_07'.*vendored datasets"):
        cat.get("Annthyroid_07")
    with pytest.raises(cat.CatalogueError, match="no data directory"):
        cat.select(fallback_vendored=False)
    r = CliRunner().invoke(main, ["datasets", "list"])
    assert r.exit_code == 0, r.output
    assert "vendored datasets" in r.output and re.search(r"WBC\s+2/12\s+vendored", r.output)
    assert "WBC_withoutdupl_norm_v01" in r.output
    assert "Annthyroid" not in r.output                       # bases with nothing vendored are not listed
    r = CliRunner().invoke(main, ["datasets", "list", "--base", "Lymph*", "--variant", "withoutdupl_norm_idf"])
    assert r.exit_code == 0 and "Lymphography_withoutdupl_norm_idf" in r.output and "1 file(s)" in r.output
    r = CliRunner().invoke(main, ["datasets", "list", "--json", "--base", "Hepatitis"])
    assert [d["name"] for d in json.loads(r.output)] == ["Hepatitis_withoutdupl_norm_05_v01",
                                                        "Hepatitis_withoutdupl_norm_16"]
    r = CliRunner().invoke(main, ["datasets", "list", "--base", "Nope"])
    assert r.exit_code != 0 and "no dataset matches these filters" in r.output


def test_demo_pipeline_on_vendored_data(no_data_dir, tmp_path):
    """What `make demo` relies on: prepare a vendored raw file, from Python and from the command line."""
    raw = cat.get("WBC_v01")
    out = CliRunner().invoke(main, ["datasets", "prepare", raw.path, "--dedup", "--normalize", "-o", str(tmp_path)])
    assert out.exit_code == 0, out.output
    ds = load_dataset(tmp_path / "WBC_withoutdupl_norm_v01.arff")
    assert (ds.n_objects, ds.n_outliers) == (223, 10)
    assert np.all((ds.X >= 0) & (ds.X <= 1))


# --- study selection -------------------------------------------------------------------------------------
def test_study_refs(shared_datasets, tmp_path):
    refs = cat.study_refs({"base": "WBC", "variant": "withoutdupl_norm", "version": [1, 2]},
                          data_dir=shared_datasets)
    assert [r.name for r in refs] == ["WBC_withoutdupl_norm_v01", "WBC_withoutdupl_norm_v02"]
    r = refs[0]
    assert (r.base_dataset, r.normalized, r.deduplicated, r.outlier_pct, r.version) == ("WBC", True, True, None, 1)
    assert r.extra["collection"] == "campos" and isinstance(r.path, str)
    assert len(cat.study_refs({"name": ["Pima_withoutdupl_norm_10_v*"]}, data_dir=shared_datasets)) == 10
    (tmp_path / "data").symlink_to(shared_datasets)        # data_dir relative to the study file's folder
    assert len(cat.study_refs({"collection": "adbench", "data_dir": "data"}, base_dir=tmp_path)) == 8
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['verison'\]"):
        cat.study_refs({"base": "WBC", "verison": 1}, data_dir=shared_datasets)
    with pytest.raises(ValueError, match="needs 'name', 'base' or 'collection'"):
        cat.study_refs({"pct": 5}, data_dir=shared_datasets)
    with pytest.raises(ValueError, match=r"no dataset in .* matches"):
        cat.study_refs({"base": "WBC", "pct": 5}, data_dir=shared_datasets)


def test_variant_records_are_serialisable(shared_datasets):
    v = cat.get("Lymphography_withoutdupl_norm_1ofn", shared_datasets)
    d = v.to_dict()
    assert d["variant"] == "withoutdupl_norm_1ofn" and d["categorical"] == "1ofn"
    json.dumps(d)
    assert repr(v).startswith("Variant('Lymphography_withoutdupl_norm_1ofn', campos")
    assert hash(v) == hash(cat.get("Lymphography_withoutdupl_norm_1ofn", shared_datasets))
