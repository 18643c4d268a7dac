"""Preparation steps (odeval.data.prepare) and the ARFF/JSON writers, on small hand-made datasets."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from odeval.cli import main
from odeval.data import Dataset, load_dataset
from odeval.data.prepare import (
    define_outliers,
    downsample_outliers,
    downsample_repeats,
    encode_categorical,
    handle_missing,
    n_outliers_for_rate,
    normalize,
    prepare,
    remove_duplicates,
)
from odeval.data.writers import describe_variant, write_arff, write_dataset


def make(X, y=None, name="Toy", ids=None, types=(), categories=None, names=None):
    X = np.asarray(X, dtype=float)
    return Dataset(X=X, y=None if y is None else np.asarray(y, dtype=bool), name=name,
                   attribute_names=names or tuple(f"a{j}" for j in range(X.shape[1])),
                   attribute_types=types, categories=categories or {},
                   ids=np.arange(1, X.shape[0] + 1, dtype=float) if ids is None else ids)


def steps(ds):
    return [s["step"] for s in ds.provenance["steps"]]


# --- missing values --------------------------------------------------------------------------------------
def test_missing_rule_drops_rows_below_threshold_and_attributes_at_or_above():
    X = np.arange(60, dtype=float).reshape(20, 3)
    X[3, 0] = np.nan                  # a0: 1/20 = 5 % missing -> drop object 3
    X[[5, 6], 1] = np.nan             # a1: 2/20 = 10 % -> not "fewer than 10 %": drop the attribute
    y = np.zeros(20, dtype=bool)
    y[3] = True
    out = handle_missing(make(X, y))
    assert out.attribute_names == ("a0", "a2")
    assert out.n_objects == 19 and out.n_missing == 0
    assert 4.0 not in out.ids             # id of row 3
    res = out.provenance["steps"][-1]["result"]
    assert res["dropped_attributes"] == [{"name": "a1", "missing_fraction": 0.1}]
    assert res["dropped_objects"]["rows"] == [3] and res["dropped_objects"]["ids"] == [4]
    assert res["dropped_outliers"] == 1


def test_missing_threshold_parameter_and_errors():
    X = np.ones((10, 2))
    X[0, 0] = np.nan
    assert handle_missing(make(X), max_fraction=0.05).attribute_names == ("a1",)
    assert handle_missing(make(X), max_fraction=0.5).n_objects == 9
    with pytest.raises(ValueError, match="max_fraction"):
        handle_missing(make(X), max_fraction=0)
    with pytest.raises(ValueError, match="nothing would remain"):
        handle_missing(make(np.full((4, 1), np.nan)))


def test_missing_keeps_nominal_metadata():
    X = np.array([[0, 1.0], [1, np.nan], [0, 2.0]] + [[1, 3.0]] * 17)
    ds = make(X, types=("nominal", "numeric"), categories={0: ("a", "b")})
    out = handle_missing(ds)
    assert out.categories == {0: ("a", "b")} and out.n_objects == 19


# --- categorical attributes ------------------------------------------------------------------------------
@pytest.fixture
def nominal_ds():
    # a0 numeric, a1 nominal with a declared but absent category, a2 nominal
    X = np.array([[1.5, 0, 1], [2.5, 1, 1], [3.5, 0, 0], [4.5, 0, 1]], dtype=float)
    return make(X, y=[False, True, False, False], types=("numeric", "nominal", "nominal"),
                categories={1: ("x", "y", "z"), 2: ("no", "yes")})


def test_categorical_remove(nominal_ds):
    for method in ("remove", "catremoved"):
        out = encode_categorical(nominal_ds, method)
        assert out.attribute_names == ("a0",) and out.nominal_columns == ()
        assert out.provenance["steps"][-1]["params"] == {"method": "remove"}


def test_categorical_onehot_in_place_with_all_declared_categories(nominal_ds):
    out = encode_categorical(nominal_ds, "1ofn")
    assert out.attribute_names == ("a0", "a1 = x", "a1 = y", "a1 = z", "a2 = no", "a2 = yes")
    np.testing.assert_array_equal(out.X[:, 1:4], [[1, 0, 0], [0, 1, 0], [1, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(out.X[:, 4:], [[0, 1], [0, 1], [1, 0], [0, 1]])
    assert out.categories == {} and set(out.attribute_types) == {"numeric"}


def test_categorical_idf(nominal_ds):
    out = encode_categorical(nominal_ds, "idf")
    assert out.attribute_names == ("a0", "a1", "a2")
    n = 4
    np.testing.assert_array_equal(out.X[:, 1], [math.log(n / 3), math.log(n / 1), math.log(n / 3), math.log(n / 3)])
    np.testing.assert_array_equal(out.X[:, 2], [math.log(n / 3), math.log(n / 3), math.log(n / 1), math.log(n / 3)])
    idf = out.provenance["steps"][-1]["result"]["encoded_attributes"][0]["idf"]
    assert idf["z"] is None and idf["y"] == pytest.approx(math.log(4))


def test_categorical_reports_new_duplicates_and_rejects_missing(nominal_ds):
    X = np.array([[1.0, 0], [1.0, 1]])
    ds = make(X, types=("numeric", "nominal"), categories={1: ("u", "v")})
    assert encode_categorical(ds, "remove").provenance["steps"][-1]["result"]["n_duplicates_after"] == 1
    bad = nominal_ds.with_changes(X=np.where(np.arange(3) == 1, np.nan, nominal_ds.X))
    with pytest.raises(ValueError, match=r"nominal attribute 'a1'.*missing at row 0"):
        encode_categorical(bad, "idf")
    with pytest.raises(ValueError, match="method must be one of"):
        encode_categorical(nominal_ds, "ordinal")


# --- normalisation ---------------------------------------------------------------------------------------
def test_minmax_formula_and_constant_attributes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) * [1.0, 1e-3, 1.0]
    X[:, 2] = 7.25
    out = normalize(make(X))
    lo, hi = X[:, :2].min(0), X[:, :2].max(0)
    np.testing.assert_array_equal(out.X[:, :2], (X[:, :2] - lo) / (hi - lo))  # exactly this expression
    assert (out.X[:, 2] == 0).all()
    assert out.X.min() == 0 and out.X.max() == 1
    res = out.provenance["steps"][-1]["result"]
    assert res["constant_attributes"] == ["a2"] and res["min"][2] == 7.25


def test_zscore():
    X = np.c_[np.arange(10.0), np.full(10, 3.0)]
    out = normalize(make(X), "zscore")
    assert out.X[:, 0].mean() == pytest.approx(0) and out.X[:, 0].std() == pytest.approx(1)
    assert (out.X[:, 1] == 0).all()


def test_normalize_refuses_nominal_and_missing(nominal_ds):
    with pytest.raises(ValueError, match="nominal attributes"):
        normalize(nominal_ds)
    with pytest.raises(ValueError, match="missing values"):
        normalize(make([[1.0], [np.nan]]))
    with pytest.raises(ValueError, match="method"):
        normalize(make([[1.0], [2.0]]), "robust")


# --- duplicates ------------------------------------------------------------------------------------------
def test_duplicates_first_occurrence_kept_in_order():
    X = [[1, 2], [3, 4], [1, 2], [5, 6], [3, 4], [1, 2]]
    out = remove_duplicates(make(X, y=[0, 1, 0, 0, 1, 0]))
    np.testing.assert_array_equal(out.X, [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(out.ids, [1, 2, 4])
    res = out.provenance["steps"][-1]["result"]
    assert res["n_removed"] == 3 and res["n_repeated_vectors"] == 2 and res["removed_outliers"] == 1
    assert res["removed_objects"]["ids"] == [3, 5, 6]


def test_duplicates_nan_equals_nan_and_signed_zero():
    out = remove_duplicates(make([[np.nan, 0.0], [np.nan, -0.0], [1.0, 0.0]]))
    assert out.n_objects == 2


def test_duplicate_label_conflicts():
    X = [[1, 1], [2, 2], [1, 1], [3, 3]]
    ds = make(X, y=[False, True, True, False])
    with pytest.raises(ValueError, match=r"carry both labels, first at rows \[0, 2\] \(ids \[1, 3\]\)"):
        remove_duplicates(ds)
    first = remove_duplicates(ds, on_conflict="first")
    np.testing.assert_array_equal(first.y, [False, True, False])
    assert remove_duplicates(ds, on_conflict="outlier").y.tolist() == [True, True, False]
    assert remove_duplicates(ds, on_conflict="inlier").y.tolist() == [False, True, False]
    dropped = remove_duplicates(ds, on_conflict="drop")
    np.testing.assert_array_equal(dropped.ids, [2, 4])
    assert first.provenance["steps"][-1]["result"]["n_label_conflicts"] == 1
    with pytest.raises(ValueError, match="on_conflict"):
        remove_duplicates(ds, on_conflict="majority")


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.booleans()), min_size=1, max_size=40))
def test_duplicates_property(rows):
    X = np.array([r[:2] for r in rows], dtype=float)
    y = np.array([r[2] for r in rows])
    out = remove_duplicates(make(X, y=y), on_conflict="first")
    assert out.n_duplicates() == 0
    assert {tuple(r) for r in out.X} == {tuple(r) for r in X}          # every vector survives once
    res = out.provenance["steps"][-1]["result"]
    assert res["n_removed"] == len(rows) - out.n_objects
    assert np.all(np.diff(out.ids) > 0)                                  # input order kept


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=30))
def test_minmax_property(values):
    out = normalize(make(np.array(values)[:, None]))
    assert out.X.min() >= 0 and out.X.max() <= 1
    if max(values) > min(values):
        assert out.X.min() == 0 and out.X.max() == 1
        order = np.argsort(values, kind="stable")
        assert np.all(np.diff(out.X[order, 0]) >= 0)                      # order preserved (weakly)


def test_duplicates_unlabelled():
    assert remove_duplicates(make([[1.0], [1.0]])).n_objects == 1


# --- outlier definition and downsampling -----------------------------------------------------------------
def test_rate_rule_reproduces_published_counts():
    # Annthyroid without duplicates: 6595 inliers -> 134 outliers at 2 %, 347 at 5 % (Campos et al. 2016)
    assert n_outliers_for_rate(6595, 0.02) == 134
    assert n_outliers_for_rate(6595, 0.05) == 347
    assert n_outliers_for_rate(500, 0.20) == 125   # exact: 0.2/0.8*500 = 125, no float truncation to 124
    assert n_outliers_for_rate(244, 0.10) == 27


@given(st.integers(0, 100_000), st.sampled_from([1, 2, 5, 10, 20, 25, 50]))
def test_rate_rule_is_exact(n_inliers, pct):
    assert n_outliers_for_rate(n_inliers, pct / 100) == (pct * n_inliers) // (100 - pct)


def test_rate_must_be_a_fraction():
    for bad in (0, 1, 5, -0.1):
        with pytest.raises(ValueError, match=r"rate must be in \(0, 1\)"):
            n_outliers_for_rate(10, bad)


@pytest.fixture
def labelled():
    rng = np.random.default_rng(1)
    y = np.zeros(120, dtype=bool)
    y[rng.choice(120, 30, replace=False)] = True
    return make(rng.normal(size=(120, 2)), y=y, name="Toy_30")


def test_downsample_keeps_all_inliers_in_input_order(labelled):
    out = downsample_outliers(labelled, 0.05, seed=3)
    assert out.n_outliers == n_outliers_for_rate(90, 0.05) == 4
    assert (~out.y).sum() == 90
    assert np.all(np.diff(out.ids) > 0)
    np.testing.assert_array_equal(out.X[~out.y], labelled.X[~labelled.y])
    res = out.provenance["steps"][-1]
    assert res["params"] == {"rate": 0.05, "n_outliers": None, "seed": 3, "version": 1}
    assert res["result"]["kept_outliers"]["ids"] == out.ids[out.y].astype(int).tolist()


def test_downsample_is_reproducible_and_versions_differ(labelled):
    a = downsample_outliers(labelled, n_outliers=10, seed=5, version=2)
    b = downsample_outliers(labelled, n_outliers=10, seed=5, version=2)
    np.testing.assert_array_equal(a.ids, b.ids)
    reps = downsample_repeats(labelled, n_outliers=10, seed=5, repeats=10)
    assert len({tuple(r.ids[r.y]) for r in reps}) == 10
    np.testing.assert_array_equal(reps[1].ids, a.ids)
    # a different seed gives a different draw
    assert tuple(downsample_outliers(labelled, n_outliers=10, seed=6, version=2).ids) != tuple(a.ids)


def test_downsample_rebuild_from_recorded_outliers(labelled):
    a = downsample_outliers(labelled, 0.10, seed=9)
    kept = a.provenance["steps"][-1]["result"]["kept_outliers"]["ids"]
    b = downsample_outliers(labelled, 0.10, outlier_ids=kept)
    np.testing.assert_array_equal(a.X, b.X)
    with pytest.raises(ValueError, match="asks for"):
        downsample_outliers(labelled, 0.20, outlier_ids=kept)
    with pytest.raises(ValueError, match="not outliers"):
        downsample_outliers(labelled, outlier_ids=[labelled.ids[~labelled.y][0]])


def test_downsample_refusals(labelled):
    with pytest.raises(ValueError, match=r"needs 90 outliers for 90 inliers, but 'Toy_30' has only 30"):
        downsample_outliers(labelled, 0.5)
    with pytest.raises(ValueError, match="leaves no outlier"):
        downsample_outliers(labelled, 0.001)
    with pytest.raises(ValueError, match="exactly one"):
        downsample_outliers(labelled)
    with pytest.raises(ValueError, match="no outlier labels"):
        downsample_outliers(labelled.with_changes(y=None), 0.05)
    with pytest.raises(ValueError, match="seed"):
        downsample_outliers(labelled, 0.05, seed=-1)


def test_define_outliers_nominal_and_numeric():
    X = np.array([[0.5, 0], [1.5, 1], [2.5, 2], [3.5, 1]])
    ds = make(X, types=("numeric", "nominal"), categories={1: ("healthy", "hyper", "sub")},
              names=("x", "class"))
    out = define_outliers(ds, ["hyper", "sub"])
    assert out.attribute_names == ("x",) and out.y.tolist() == [False, True, True, True]
    assert out.provenance["steps"][-1]["result"]["class_counts"] == {"healthy": 1, "hyper": 2, "sub": 1}
    with pytest.raises(ValueError, match="not among the categories"):
        define_outliers(ds, ["normal"])
    with pytest.raises(ValueError, match="no attribute 'label'"):
        define_outliers(ds, ["hyper"], column="label")
    num = make(np.array([[0.5, 1], [1.5, 4], [2.5, 1]]), names=("x", "Class"))
    assert define_outliers(num, [4]).y.tolist() == [False, True, False]


def test_prepare_pipeline_names_and_provenance(labelled):
    X = np.vstack([labelled.X, labelled.X[:5]])
    ds = make(X, y=np.r_[labelled.y, labelled.y[:5]], name="Toy_30")
    out = prepare(ds, dedup=True, rate=0.05, repeats=3, normalization="minmax", seed=4)
    assert [o.name for o in out] == [f"Toy_withoutdupl_norm_05_v0{i}" for i in (1, 2, 3)]
    for i, o in enumerate(out, 1):
        assert steps(o) == ["remove_duplicates", "downsample_outliers", "normalize"]
        assert o.provenance["variant"] == {"base": "Toy", "deduplicated": True, "normalized": True,
                                           "normalization": "minmax", "categorical": None, "outlier_pct": 5.0,
                                           "version": i, "downsampled": True}
        assert o.provenance["derived_from"] == "Toy_30"
        assert o.X.min() == 0 and o.X.max() == 1
    # without downsampling the natural percentage token and version of the input are kept
    assert prepare(ds, dedup=True)[0].name == "Toy_withoutdupl_30"
    assert prepare(make([[1.0], [2.0]], y=[0, 1], name="WBC_v01"), normalization="minmax")[0].name == "WBC_norm_v01"
    with pytest.raises(ValueError, match="repeats > 1 needs downsampling"):
        prepare(ds, repeats=2)
    with pytest.warns(UserWarning, match="missing values"):
        prepare(make([[1.0], [np.nan]], y=[0, 1]))


# --- writers ---------------------------------------------------------------------------------------------
def test_arff_round_trip_is_exact(tmp_path, nominal_ds):
    rng = np.random.default_rng(2)
    X = np.c_[rng.normal(size=4) * 1e-7, nominal_ds.X[:, 1:], [np.nan, 1 / 3, 1e300, -0.0]]
    X[2, 1] = np.nan
    ds = nominal_ds.with_changes(X=X, attribute_names=("v a'l", "a1", "a2", "w"),
                                 attribute_types=("numeric", "nominal", "nominal", "numeric"))
    path = write_arff(ds, tmp_path / "t.arff", relation="test")
    back = load_dataset(path)
    np.testing.assert_array_equal(back.X, ds.X)
    np.testing.assert_array_equal(back.y, ds.y)
    np.testing.assert_array_equal(back.ids, ds.ids)
    assert back.attribute_names == ds.attribute_names
    assert back.categories == ds.categories
    text = path.read_text()
    assert text.startswith("@RELATION 'test'\n\n@ATTRIBUTE 'v a\\'l' real\n@ATTRIBUTE 'a1' {'x','y','z'}")
    assert "@ATTRIBUTE 'id' real\n@ATTRIBUTE 'outlier' {'no','yes'}\n\n@DATA\n" in text
    assert ",?," in text


def test_arff_reserved_names(tmp_path):
    with pytest.raises(ValueError, match="reserves"):
        write_arff(make([[1.0]], names=("id",)), tmp_path / "x.arff")


def test_write_dataset_sidecar(tmp_path, labelled):
    ds = prepare(labelled, rate=0.05, normalization="minmax", seed=1)[0]
    arff, side = write_dataset(ds, tmp_path)
    assert arff.name == "Toy_norm_05_v01.arff" and side.name == "Toy_norm_05_v01.json"
    doc = json.loads(side.read_text())
    assert doc["sha256"] == hashlib.sha256(arff.read_bytes()).hexdigest()
    assert doc["n_outliers"] == ds.n_outliers and doc["provenance"]["variant"]["version"] == 1
    assert [s["step"] for s in doc["provenance"]["steps"]] == ["downsample_outliers", "normalize"]
    assert "Toy, with normalization, downsampled to 05 pct, v01" in arff.read_text().splitlines()[0]
    assert describe_variant(make([[1.0]], name="Annthyroid_07")) == "Annthyroid, 07 pct of outliers"


# --- command line ----------------------------------------------------------------------------------------
def test_cli_prepare(tmp_path, labelled):
    raw = write_arff(labelled, tmp_path / "Toy_30.arff")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["datasets", "prepare", str(raw), "--dedup", "--normalize", "--downsample", "0.05",
                                  "--repeats", "2", "--seed", "3", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == [
        "Toy_withoutdupl_norm_05_v01.arff", "Toy_withoutdupl_norm_05_v01.json",
        "Toy_withoutdupl_norm_05_v02.arff", "Toy_withoutdupl_norm_05_v02.json"]
    back = load_dataset(out / "Toy_withoutdupl_norm_05_v02.arff")
    expected = prepare(load_dataset(raw), dedup=True, rate=0.05, repeats=2, normalization="minmax", seed=3)[1]
    np.testing.assert_array_equal(back.X, expected.X)
    np.testing.assert_array_equal(back.ids, expected.ids)
    assert "remove_duplicates: removed 0 duplicate(s)" in r.output
    r = CliRunner().invoke(main, ["datasets", "prepare", str(raw), "--downsample", "0.5", "-o", str(out)])
    assert r.exit_code != 0 and "needs 90 outliers for 90 inliers" in r.output


def test_cli_prepare_zscore_and_classes(tmp_path):
    X = np.array([[0.5, 0], [1.5, 1], [2.5, 1], [3.5, 0], [4.5, 0]])
    ds = Dataset(X=X, y=None, name="Cls", attribute_names=("x", "class"), attribute_types=("numeric", "nominal"),
                 categories={1: ("a", "b")}, ids=np.arange(1.0, 6.0))
    raw = write_arff(ds, tmp_path / "Cls.arff")
    r = CliRunner().invoke(main, ["datasets", "prepare", str(raw), "--outlier-classes", "b", "--normalize", "zscore",
                                  "-o", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    back = load_dataset(tmp_path / "o" / "Cls_norm.arff")
    assert back.y.tolist() == [False, True, True, False, False]
    assert back.X[:, 0].mean() == pytest.approx(0)


def test_cli_prepare_missing_and_categorical(tmp_path):
    X = np.c_[np.arange(20) % 2, np.arange(20.0), np.arange(20.0) ** 2]
    X[0, 1] = np.nan                      # a1: 1/20 = 5 % missing -> that object is dropped
    X[[3, 7, 11, 15, 19], 2] = np.nan     # a2: 5/20 = 25 % missing -> the attribute is dropped
    ds = Dataset(X=X, y=np.arange(20) % 7 == 0, name="Mix", attribute_names=("colour", "a1", "a2"),
                 attribute_types=("nominal", "numeric", "numeric"), categories={0: ("red", "blue")},
                 ids=np.arange(1.0, 21.0))
    raw = write_arff(ds, tmp_path / "Mix.arff")
    r = CliRunner().invoke(main, ["datasets", "prepare", str(raw), "--missing", "--categorical", "idf",
                                  "--normalize", "-o", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert "handle_missing: dropped 1 attribute(s), 1 object(s)" in r.output
    assert "encode_categorical: 1 nominal attribute(s)" in r.output
    back = load_dataset(tmp_path / "o" / "Mix_norm_idf.arff")
    assert back.attribute_names == ("colour", "a1") and back.n_objects == 19
    doc = json.loads((tmp_path / "o" / "Mix_norm_idf.json").read_text())
    missing = doc["provenance"]["steps"][0]["result"]
    assert missing["dropped_attributes"] == [{"name": "a2", "missing_fraction": 0.25}]
    assert missing["dropped_objects"]["ids"] == [1]


def test_cli_prepare_unlabelled(tmp_path):
    """Preparation needs labels only to downsample: an unlabelled table is normalised and deduplicated (with a note),
    and --downsample is refused with the reason, nothing written."""
    raw = tmp_path / "Tab.csv"
    raw.write_text("a,b\n0,10\n1,30\n1,30\n4,20\n", encoding="utf-8")
    out = tmp_path / "o"
    r = CliRunner().invoke(main, ["datasets", "prepare", str(raw), "--dedup", "--normalize", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert r.stderr.strip() == f"note: {raw}: no label column 'outlier': read without labels"
    back = load_dataset(out / "Tab_withoutdupl_norm.arff", label=None)
    assert back.y is None
    np.testing.assert_array_equal(back.X, [[0, 0], [0.25, 1], [1, 0.5]])
    for args in (["--downsample", "0.05"], ["--n-outliers", "1"]):
        r = CliRunner().invoke(main, ["datasets", "prepare", str(raw), *args, "-o", str(tmp_path / "d")])
        assert r.exit_code == 1 and "Traceback" not in r.output
        assert r.output.strip().count("\n") == 0, r.output
        assert "downsampling needs outlier labels and the file has no label column 'outlier'" in r.output
        assert not (tmp_path / "d").exists()
