"""The results store as one owned component: schema version, study links, labels, internal measures, errors."""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from odeval.bench import load_study, run_study
from odeval.bench.runner import make_progress
from odeval.bench.store import (
    SCHEMA_VERSION,
    InternalMeasure,
    ResultStore,
    StoreError,
    StoreVersionError,
    UnitResult,
    schema_ddl,
)
from odeval.cli import main
from odeval.data import load_dataset

STUDY_A = '[study]\nname = "A"\nk = "1..6"\n[[datasets]]\nglob = "data/*.npz"\n[[methods]]\nname = "kNN"\n'
STUDY_B = STUDY_A.replace('name = "A"', 'name = "B"') + '[[methods]]\nname = "LOF"\n'


@pytest.fixture
def two_studies(tmp_path, npz_dataset, study_file):
    """Study A (kNN) then study B (kNN + LOF) on one store: B computes only LOF."""
    data = tmp_path / "data"
    data.mkdir()
    npz_dataset(data / "v1.npz", 40, 3, 2, seed=1)
    npz_dataset(data / "v2.npz", 50, 4, 2, seed=2, n_dup=3)
    a = load_study(study_file(tmp_path / "a.toml", STUDY_A))
    b = load_study(study_file(tmp_path / "b.toml", STUDY_B))
    store = tmp_path / "r.duckdb"
    run_study(a, store, workers=1, progress="none")
    sb = run_study(b, store, workers=1, progress="none")
    assert sb.already_done == 2 and sb.ok == 2
    return store, a, b


def test_a_unit_computed_by_study_a_belongs_to_study_b(two_studies, tmp_path):
    store, a, b = two_studies
    with ResultStore(store, read_only=True) as rs:
        runs_b = rs.runs(study_hash=b.study_hash)
        runs_a = rs.runs(study_hash=a.study_hash)
        assert sorted(runs_b["method"].unique()) == ["LOF", "kNN"] and (runs_b["study_hash"] == b.study_hash).all()
        assert sorted(runs_a["method"].unique()) == ["kNN"]
        assert len(rs.units(study_hash=b.study_hash)) == 4 and len(rs.units(study_hash=a.study_hash)) == 2
        assert len(rs.runs()) == len(runs_b)  # the kNN rows are stored once
        ranks_b = rs.outlier_ranks(study_hash=b.study_hash)
        assert set(ranks_b["method"]) == {"kNN", "LOF"}
        assert set(rs.studies()["n_units"]) == {2, 4}
        with pytest.raises(StoreError, match="no study with study_hash 'nope'"):
            rs.runs(study_hash="nope")
    pytest.importorskip("matplotlib")
    out = tmp_path / "rep"
    res = CliRunner().invoke(main, ["report", str(store), "-o", str(out), "--study-hash", b.study_hash,
                                    "--simulations", "5", "--permutations", "0", "--no-ensembles"])
    assert res.exit_code == 0, res.output
    summary = pd.read_csv(out / "tables" / "summary_per_variant.csv")
    assert sorted(summary["method"].unique()) == ["LOF", "kNN"]


def test_labels_are_stored_per_variant(two_studies, tmp_path):
    store, _, _ = two_studies
    with ResultStore(store, read_only=True) as rs:
        table = rs.labels_table()
        assert sorted(table["dataset"]) == ["v1", "v2"] and table["file_sha256"].str.len().eq(64).all()
        for name in ("v1", "v2"):
            np.testing.assert_array_equal(rs.labels(name), load_dataset(tmp_path / "data" / f"{name}.npz").y)
        with pytest.raises(StoreError, match="no labels of dataset 'v3'"):
            rs.labels("v3")
        by_name = rs.labels_by_dataset(study_hash=rs.studies()["study_hash"].iloc[0])
        assert sorted(by_name) == ["v1", "v2"]
        np.testing.assert_array_equal(by_name["v2"], rs.labels("v2"))


def test_schema_version_is_recorded_and_checked(two_studies, tmp_path):
    store, _, _ = two_studies
    with ResultStore(store, read_only=True) as rs:
        assert rs.schema_version == SCHEMA_VERSION
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE runs (dataset VARCHAR)")  # an odeval store from before schema versions
    con.close()
    with pytest.raises(StoreVersionError, match=r"no schema version .*reads schema version \d"):
        ResultStore(other, read_only=True)
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES (?, ?)", ["schema_version", "99"])
    con.close()
    for args in (["report", str(other), "-o", str(tmp_path / "x")], ["results", "export", str(other)],
                 ["ensemble", str(other), "--dataset", "v1"]):
        res = CliRunner().invoke(main, args)
        assert res.exit_code == 1 and "has schema version 99" in res.output, (args, res.output)
        assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


#: sha256 of the declared schema (``"\n".join(schema_ddl())``) of every schema version. A change of the declared
#: tables — a column, a type, a key, a measure added to odeval.measures.MEASURES — changes the hash: raise
#: SCHEMA_VERSION and pin the new hash under the new version (never replace a pinned one).
SCHEMA_HASHES = {
    3: "451c1dac14bcc608114cfc44e14bdf52144882632a41af66c3124e7eaa174fc4",
    4: "a009ecdeffeb7852ba69340435b9d1525936c2326d4bcebedf09e6fd4ae2690d",  # runs/units: setting, seed (issue 25)
    5: "21409a36d74fd8e8c1d967574208f57c49f6c9d03b843db3b5e79cee481df321",  # variant_candidates: setting, seed
}


def test_the_declared_schema_changes_only_with_its_version():
    got = hashlib.sha256("\n".join(schema_ddl()).encode()).hexdigest()
    assert SCHEMA_VERSION in SCHEMA_HASHES, f"pin the hash of schema version {SCHEMA_VERSION}: {got}"
    assert got == SCHEMA_HASHES[SCHEMA_VERSION], (
        f"the declared tables (schema_ddl) changed but SCHEMA_VERSION is still {SCHEMA_VERSION}: raise it and pin "
        f"{got} under the new version")
    assert len(set(SCHEMA_HASHES.values())) == len(SCHEMA_HASHES)
    assert any('"adjusted_max_f1" DOUBLE' in statement for statement in schema_ddl())  # the measures are declared


def test_a_store_whose_tables_differ_from_its_version_is_refused(tmp_path, monkeypatch):
    """Same version number, other tables: refused with the one-line StoreVersionError, for reading and writing,
    never altered (a store is changed only by a new schema version)."""
    store = tmp_path / "r.duckdb"
    ResultStore(store).close()
    with ResultStore(store, read_only=True):
        pass
    import odeval.bench.store as store_module

    newer = (*store_module.measure_columns(), "new_measure")  # an odeval that knows one more measure
    monkeypatch.setattr(store_module, "measure_columns", lambda: newer)
    for read_only in (True, False):
        with pytest.raises(StoreVersionError, match=r"has schema version 5 but other tables \(runs lacks "
                                                     r"new_measure\); this odeval reads schema version 5"):
            ResultStore(store, read_only=read_only)
    monkeypatch.undo()
    with ResultStore(store, read_only=True) as rs:  # nothing was added on the way
        assert "new_measure" not in rs.runs().columns
    con = duckdb.connect(str(store))
    con.execute("ALTER TABLE runs DROP COLUMN adjusted_max_f1")
    con.execute("ALTER TABLE labels ADD COLUMN note VARCHAR")
    con.execute("ALTER TABLE scores ALTER COLUMN k TYPE BIGINT")
    con.close()
    with pytest.raises(StoreVersionError) as info:
        ResultStore(store, read_only=True)
    assert str(info.value) == (
        f"results store {store} has schema version 5 but other tables (labels has unknown note; runs lacks "
        "adjusted_max_f1; scores k is BIGINT, not INTEGER); this odeval reads schema version 5: write to a new "
        "store (or delete this one) and run the study again")
    _one_line_error(CliRunner().invoke(main, ["results", "export", str(store)]), str(store), "other tables")


def test_internal_measures_round_trip(two_studies):
    store, a, b = two_studies
    with ResultStore(store) as rs:
        units = rs.units()
        lof = units[units["method"] == "LOF"].iloc[0]
        knn = units[units["method"] == "kNN"].iloc[0]
        rows = [InternalMeasure(u.unit_id, u.dataset, u.method, u.params, u.metric, k, "ireos", 0.1 * k,
                                {"n_gamma": 100, "gammas": np.array([0.5, 1.0])})
                for u in (lof, knn) for k in (2, 3)]
        assert rs.write_internal_measures(rows) == 4
        # same (unit, k, measure) again: replaced, not duplicated
        rs.write_internal_measures([InternalMeasure(lof.unit_id, lof.dataset, "LOF", lof.params, lof.metric, 2,
                                                    "ireos", 0.75, {})])
        with pytest.raises(TypeError, match="InternalMeasure"):
            rs.write_internal_measures([{"unit_id": "x"}])
    with ResultStore(store, read_only=True) as rs:
        im = rs.internal_measures()
        assert len(im) == 4 and set(im.columns) >= {"unit_id", "dataset", "method", "params", "metric", "k",
                                                    "measure", "value", "details"}
        row = im[(im.unit_id == lof.unit_id) & (im.k == 2)].iloc[0]
        assert row.value == 0.75 and json.loads(row.details) == {}
        assert json.loads(im[im.unit_id == knn.unit_id].iloc[0].details)["gammas"] == [0.5, 1.0]
        assert set(rs.internal_measures(study_hash=a.study_hash)["method"]) == {"kNN"}
        assert len(rs.internal_measures(study_hash=b.study_hash, measure="ireos")) == 4


def test_unit_results_carry_internal_measures(tmp_path):
    facts = {"name": "d", "base_dataset": "d", "n_objects": 5, "n_outliers": 1, "n_attributes": 2, "outliers": [4]}
    res = UnitResult("u1", facts, "LOF", "{}", "euclidean", "ok", ks=[2], measures=[{"roc_auc": 1.0}],
                     internal=[(2, "em", 0.5, {"alpha": 0.9})])
    with ResultStore(tmp_path / "r.duckdb") as rs:
        rs.register_study("s", "s", "test", {}, "0", ["u1"])
        rs.write_unit(res, study_hash="s", version="0", file_sha256="f" * 64)
        im = rs.internal_measures(study_hash="s")
        assert im[["k", "measure", "value"]].values.tolist() == [[2, "em", 0.5]]
        np.testing.assert_array_equal(rs.labels("d"), [False, False, False, False, True])


def _one_line_error(res, *needles: str) -> None:
    assert res.exit_code == 1, res.output
    text = res.output.strip()
    assert len(text.splitlines()) == 1 and "Traceback" not in text, text
    for needle in needles:
        assert needle in text, (needle, text)


def test_a_file_that_is_not_duckdb_is_named(tmp_path, two_studies):
    bad = tmp_path / "notes.duckdb"
    bad.write_text("not a database\n" * 20)
    study = tmp_path / "a.toml"
    runner = CliRunner()
    for args in (["report", str(bad), "-o", str(tmp_path / "rep")], ["results", "export", str(bad)],
                 ["ensemble", str(bad), "--dataset", "v1"], ["study", "run", str(study), "--store", str(bad)]):
        _one_line_error(runner.invoke(main, args), str(bad), "not a DuckDB results store")


def test_unwritable_output_paths_are_one_line_errors(tmp_path, two_studies):
    store, _, _ = two_studies
    afile = tmp_path / "a-file"
    afile.write_text("x")
    runner = CliRunner()
    _one_line_error(runner.invoke(main, ["results", "export", str(store), "-o", str(afile / "runs.csv")]),
                    str(afile / "runs.csv"), "does not exist")
    _one_line_error(runner.invoke(main, ["report", str(store), "-o", str(afile / "rep"), "--permutations", "0",
                                         "--simulations", "2"]), str(afile), "cannot write")
    _one_line_error(runner.invoke(main, ["study", "run", str(tmp_path / "a.toml"), "--store",
                                         str(tmp_path / "nope" / "r.duckdb")]), "folder", "does not exist")
    _one_line_error(runner.invoke(main, ["datasets", "prepare", str(tmp_path / "data" / "v1.npz"), "-o",
                                         str(afile / "out")]), str(afile), "cannot write")


def test_read_only_folders_are_one_line_errors(tmp_path, two_studies):
    """Store, report, prepare, export and score into a folder without write permission, through the CLI."""
    import os
    import shutil
    import subprocess

    store, _, _ = two_studies
    prefix: list[str] = []
    if os.geteuid() == 0:  # root ignores permissions unless it drops the capability to
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a folder read-only for the command")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    cases = [
        ["study", "run", str(tmp_path / "a.toml"), "--store", str(ro / "r.duckdb"), "-q"],
        ["report", str(store), "-o", str(ro / "rep"), "--permutations", "0", "--simulations", "2"],
        ["datasets", "prepare", str(tmp_path / "data" / "v1.npz"), "-o", str(ro / "out")],
        ["results", "export", str(store), "-o", str(ro / "runs.csv")],
        ["score", str(tmp_path / "data" / "v1.npz"), "-m", "kNN", "--k", "1:3", "-o", str(ro / "s.csv")],
    ]
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    script = ("import json, sys; from click.testing import CliRunner; from odeval.cli import main; "
              "print(json.dumps([(r.exit_code, r.output) for r in "
              "(CliRunner().invoke(main, a) for a in json.loads(sys.argv[1]))]))")
    try:  # one interpreter for the five commands: the CLI through click's runner, without the capability
        proc = subprocess.run([*prefix, sys.executable, "-c", script, json.dumps(cases)], capture_output=True,
                              text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr
        for args, (code, output) in zip(cases, json.loads(proc.stdout.splitlines()[-1]), strict=True):
            text = output.strip()
            assert code == 1, (args, text)
            # the error is one line; informational lines before it (e.g. score's "kNN graph: ...") are allowed
            errors = [line for line in text.splitlines() if line.startswith("Error")]
            assert len(errors) == 1 and "Traceback" not in text, text
            assert str(ro) in errors[0] and "permission denied" in errors[0], (args, text)
    finally:
        ro.chmod(0o755)


def test_study_check_rejects_unknown_extensions_up_front(tmp_path, npz_dataset, study_file):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.txt").write_text("1,2\n3,4\n")
    study = study_file(tmp_path / "s.toml", '[[datasets]]\npath = "data/notes.txt"\n[[methods]]\nname = "kNN"\n')
    res = CliRunner().invoke(main, ["study", "check", str(study)])
    assert res.exit_code == 2 and "notes.txt" in res.output and "'.txt'" in res.output, res.output


def test_gz_decompression_is_bounded(tmp_path, monkeypatch):
    import gzip

    from odeval.data import DatasetFormatError, loaders

    path = tmp_path / "big.csv.gz"
    rows = "a,b,outlier\n" + "".join(f"{i},{i % 7},{int(i % 50 == 0)}\n" for i in range(5000))
    path.write_bytes(gzip.compress(rows.encode()))
    assert load_dataset(path).X.shape == (5000, 2)
    monkeypatch.setattr(loaders, "MAX_DECOMPRESSED_BYTES", 10_000)
    with pytest.raises(DatasetFormatError, match=r"decompresses to more than .*MAX_DECOMPRESSED_BYTES"):
        load_dataset(path)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _fake_unit(name: str) -> UnitResult:
    return UnitResult("u", {"name": name}, "LOF", "{}", "euclidean", "ok", runtime_s=0.1)


def test_progress_plain_lines_when_not_a_terminal():
    out = io.StringIO()
    with make_progress("rich", total=10, already=4, stream=out) as p:
        p.interval = 0.0
        p.started("Waveform_withoutdupl_norm_v01")
        p.started("ALOI_withoutdupl")
        for _ in range(3):
            p.finished(_fake_unit("ALOI_withoutdupl"))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("resuming: 4 of 10 units are already in the store and are skipped; 6 to compute")
    i = next(i for i, ln in enumerate(lines) if ln.startswith("units 7/10"))
    assert re.match(r"units 7/10 \(70%\)  [\d.]+ units/s  ETA \S+$", lines[i]), lines
    assert lines[i + 1] == "  now: Waveform_withoutdupl_norm_v01, ALOI_withoutdupl"
    assert all(len(line) <= 80 for line in lines[1:])


def test_progress_bar_fits_80_columns_with_names_below(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = _Terminal()
    names = [f"Dataset_withoutdupl_norm_05_v{i:02d}" for i in range(6)]
    with make_progress("rich", total=123456, already=0, stream=out) as p:
        for n in names:
            p.started(n)
        for _ in range(5):
            p.finished(_fake_unit(names[0]))
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()).replace("\r", "\n")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    bars = [ln for ln in lines if "units" in ln and "/123456" in ln]
    assert bars and all(len(ln) <= 80 for ln in lines), lines
    assert all(not any(n in ln for n in names) for ln in bars)  # names are not inside the bar line
    assert any(ln.startswith("  now: Dataset_") for ln in lines)


def test_only_the_store_module_touches_duckdb():
    src = Path(__file__).resolve().parents[2] / "src" / "odeval"
    users = sorted(str(p.relative_to(src)) for p in src.rglob("*.py")
                   if re.search(r"^\s*(import duckdb|from duckdb)", p.read_text(encoding="utf-8"), re.M))
    assert users == ["bench/store.py"]


def test_stored_selection_keeps_the_latest_pick_and_its_candidates(tmp_path):
    """ResultStore.stored_selection: tasks of one candidates mode and seed, oldest first; a selector's pick comes
    from the most recent task that ran it, the candidates from the most recent task; IREOS of the mode or of all."""
    import time

    from odeval._key import ScoringKey
    from odeval.bench.store import VariantCandidate, VariantTaskResult

    def cand(k, auc):
        key = ScoringKey.make("kNN", metric="euclidean", k=k)
        return VariantCandidate(key, key.label(params=False, metric=False), f"u{k}", auc, auc / 2, auc / 3)

    def pick(selector, candidate, auc):
        return {"selector": selector, "selector_kind": "pick", "candidate": candidate, "choice": f"kNN-00{candidate}",
                "members": [], "note": "", "roc_auc": auc, "average_precision": auc / 2,
                "adjusted_average_precision": auc / 3}

    def task(task_id, kind, mode, seed, cands, picks=(), values=()):
        return VariantTaskResult(task_id=task_id, kind=kind, dataset="d1", file_sha256="f", metric="euclidean",
                                 candidates_mode=mode, options={"seed": seed}, candidates=list(cands),
                                 picks=list(picks), values=list(values))

    with ResultStore(tmp_path / "s.duckdb") as rs:
        empty = rs.stored_selection(candidates="all", seed=0)
        assert empty.datasets == () and empty.picks.empty and empty.ireos_values is None
        rs.write_variant_task(task("t-old", "selection", "all", 0, [cand(1, 0.6), cand(2, 0.7)],
                                   [pick("hits", 0, 0.6), pick("random", 1, 0.7)]), study_hash="h", version="v")
        time.sleep(0.01)
        rs.write_variant_task(task("t-new", "selection", "all", 0, [cand(1, 0.6), cand(3, 0.8)],
                                   [pick("hits", 1, 0.8)]), study_hash="h", version="v")
        rs.write_variant_task(task("t-seed", "selection", "all", 1, [cand(4, 0.9)], [pick("hits", 0, 0.9)]),
                              study_hash="h", version="v")
        rs.write_variant_task(task("t-ten", "selection", "10", 0, [cand(5, 0.9)], [pick("hits", 0, 0.9)]),
                              study_hash="h", version="v")
        rs.write_variant_task(task("i-all", "ireos", "all", 0, [cand(1, 0.6)], values=[(0, "ireos", 0.5)]),
                              study_hash="h", version="v")
        rs.write_variant_task(task("i-ten", "ireos", "10", 0, [cand(5, 0.9)], values=[(0, "ireos", 0.4)]),
                              study_hash="h", version="v")
        got = rs.stored_selection(candidates="all", seed=0)
    assert got.datasets == ("d1",)
    assert list(zip(got.picks["selector"], got.picks["task_id"], strict=True)) == [("random", "t-old"),
                                                                                  ("hits", "t-new")]
    assert list(got.candidates["name"]) == ["kNN-001", "kNN-003"] and set(got.candidates["task_id"]) == {"t-new"}
    assert list(got.ireos_tasks["task_id"]) == ["i-all"] and got.ireos_names == {"i-all": ("kNN-001",)}
    assert list(got.ireos_values["value"]) == [0.5] and got.facts == {"d1": {}}


def _schema4_store(path: Path) -> None:
    """A store as odeval wrote it with schema version 4 (its declared tables: the pinned hash), with one
    variant task whose candidates are the kNN family's."""
    from odeval.bench.store import _schema4_ddl

    assert hashlib.sha256("\n".join(_schema4_ddl()).encode()).hexdigest() == SCHEMA_HASHES[4]
    con = duckdb.connect(str(path))
    for statement in _schema4_ddl():
        con.execute(statement)
    con.execute("INSERT INTO meta VALUES ('schema_version', '4'), ('created_by', 'odeval test')")
    con.execute("INSERT INTO variant_candidates VALUES ('t', 'd1', 0, 'kNN-002', 'u2', 'kNN', '{}', 'euclidean', 2, "
                "0.7, 0.5, 0.4)")
    con.close()


@pytest.mark.parametrize("read_only", [False, True])
def test_a_schema_4_store_is_upgraded_in_place_once(tmp_path, capfd, read_only):
    """Schema 4 → 5: variant_candidates gains setting and seed (NULL for the rows already there), meta says 5, the
    upgrade is said once on stderr; also when the store is opened for reading. Older versions stay refused."""
    store = tmp_path / "four.duckdb"
    _schema4_store(store)
    with ResultStore(store, read_only=read_only) as rs:
        assert rs.schema_version == SCHEMA_VERSION == 5
        cands = rs.variant_table("variant_candidates")
    err = capfd.readouterr().err
    assert err.count("upgraded results store") == 1 and "from schema version 4 to 5" in err and str(store) in err
    assert list(cands.columns[-2:]) == ["setting", "seed"]
    assert cands[["name", "k"]].values.tolist() == [["kNN-002", 2]]
    assert cands["setting"].isna().all() and cands["seed"].isna().all()
    with ResultStore(store) as rs:  # once: opened again, nothing to do
        assert rs.schema_version == 5
    assert "upgraded" not in capfd.readouterr().err
    con = duckdb.connect(str(store), read_only=True)
    assert dict(con.execute("SELECT key, value FROM meta").fetchall())["upgraded_from"] == "4"
    con.close()
    three = tmp_path / "three.duckdb"
    con = duckdb.connect(str(three))
    con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    con.close()
    with pytest.raises(StoreVersionError, match="has schema version 3; this odeval reads schema version 5"):
        ResultStore(three, read_only=read_only)


def test_a_schema_4_store_with_other_tables_is_refused_unchanged(tmp_path, capfd):
    store = tmp_path / "four.duckdb"
    _schema4_store(store)
    con = duckdb.connect(str(store))
    con.execute("ALTER TABLE labels ADD COLUMN note VARCHAR")
    con.close()
    with pytest.raises(StoreVersionError, match=r"has schema version 4 but other tables \(labels has unknown "
                                                r"note\); this odeval reads schema version 5"):
        ResultStore(store)
    con = duckdb.connect(str(store), read_only=True)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall() == [("4",)]
    con.close()
    assert "upgraded" not in capfd.readouterr().err


def test_variant_candidates_store_their_setting_and_seed(tmp_path):
    from odeval._key import ScoringKey
    from odeval.bench.store import VariantCandidate, VariantTaskResult

    keys = [ScoringKey.make("LOF", metric="euclidean", k=5),
            ScoringKey.make("IForest", {"max_samples": 64}, setting={"n_estimators": 50}, seed=2),
            ScoringKey.make("HBOS", setting={"n_bins": 10})]
    res = VariantTaskResult(task_id="t", kind="selection", dataset="d", file_sha256="f", metric="euclidean",
                            candidates_mode="all", options={},
                            candidates=[VariantCandidate(k, k.name, f"u{i}", 0.5) for i, k in enumerate(keys)])
    with ResultStore(tmp_path / "s.duckdb") as rs:
        rs.write_variant_task(res, study_hash="h", version="v")
        got = rs.variant_table("variant_candidates")
    assert got["setting"].tolist() == ["", '{"n_estimators": 50}', '{"n_bins": 10}']
    assert got["seed"].tolist()[1] == 2 and got["seed"].isna().tolist() == [True, False, True]
    assert got["k"].isna().tolist() == [False, True, True]


def test_internal_measures_of_a_scoring_without_k_read_back_with_k_null(tmp_path):
    """internal_measures keys rows by (unit_id, k, measure); an estimator's unit has no k: stored as NO_K, read back
    as NULL (as runs.k), replaced like any other row."""
    from odeval.bench.store import NO_K

    row = InternalMeasure("u1", "d", "IForest", "{}", "", None, "em", 0.25, {})
    with ResultStore(tmp_path / "r.duckdb") as rs:
        rs.register_study("s", "s", "test", {}, "0", ["u1"])
        rs.write_internal_measures([row, InternalMeasure("u2", "d", "kNN", "{}", "euclidean", 3, "em", 0.5, {})])
        rs.write_internal_measures([InternalMeasure("u1", "d", "IForest", "{}", "", None, "em", 0.75, {})])
        im = rs.internal_measures()
        raw = rs.con.execute("SELECT unit_id, k FROM internal_measures ORDER BY unit_id").fetchall()
    assert raw == [("u1", NO_K), ("u2", 3)]
    assert im["k"].isna().tolist() == [True, False] and im["value"].tolist() == [0.75, 0.5]


def test_the_scoring_path_imports_without_duckdb():
    """benchmarks/gpu_graph.py runs the study unit on a bare GPU machine without DuckDB: importing the runner
    and the store's record types must not import it (the store imports it when it opens a file)."""
    import subprocess
    import sys

    code = ("import sys; import odeval.bench.runner, odeval.bench.store; "
            "assert 'duckdb' not in sys.modules, 'duckdb imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
