"""Tests for odeval.data loaders (ARFF, MAT, NPZ, CSV), DatasetFormatError and `odeval datasets info`."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from odeval.cli import main
from odeval.data import (
    Dataset,
    DatasetFormatError,
    dataset_info,
    load_arff,
    load_csv,
    load_dataset,
    load_mat,
    load_npz,
)
from odeval.render.datasets import attribute_rows

ARFF_HEADER = """% a comment
@RELATION 'tiny'

@ATTRIBUTE 'a' real
@ATTRIBUTE id numeric
@ATTRIBUTE "b c" INTEGER
@ATTRIBUTE 'outlier' {LABELS}

@DATA
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def tiny_arff(tmp_path: Path, rows: str, labels: str = "'no','yes'", name: str = "tiny.arff") -> Path:
    return write(tmp_path, name, ARFF_HEADER.replace("{LABELS}", "{" + labels + "}") + rows)


def format_error(fn, *args, **kwargs) -> DatasetFormatError:
    with pytest.raises(DatasetFormatError) as info:
        fn(*args, **kwargs)
    return info.value


# --- ARFF: crafted files ---------------------------------------------------------------------------------
class TestArffCrafted:
    ROWS = "1.5,1,2,'no'\n-0.25,2,3,'yes'\n\n% comment inside data\n3e2, 7 , 4 , no\n"

    def test_basic(self, tmp_path):
        ds = load_arff(tiny_arff(tmp_path, self.ROWS))
        assert isinstance(ds, Dataset)
        assert ds.name == "tiny"
        assert ds.attribute_names == ("a", "b c")
        np.testing.assert_array_equal(ds.X, [[1.5, 2], [-0.25, 3], [300, 4]])
        np.testing.assert_array_equal(ds.y, [False, True, False])
        assert ds.ids.dtype == np.int64
        np.testing.assert_array_equal(ds.ids, [1, 2, 7])
        load = ds.provenance["load"]
        assert load["relation"] == "tiny"
        assert load["id_attribute"] == "id"
        assert load["label_attribute"] == "outlier"
        assert load["missing_values"] == 0

    def test_label_parsed_by_value_in_either_declared_order(self, tmp_path):
        a = load_arff(tiny_arff(tmp_path, self.ROWS, "'no','yes'", "a.arff"))
        b = load_arff(tiny_arff(tmp_path, self.ROWS, "'yes','no'", "b.arff"))
        np.testing.assert_array_equal(a.y, b.y)
        np.testing.assert_array_equal(a.X, b.X)
        assert b.provenance["load"]["label_categories"] == ["yes", "no"]

    def test_provenance(self, tmp_path):
        p = tiny_arff(tmp_path, self.ROWS)
        prov = load_arff(p).provenance
        assert prov["source"] == str(p.resolve())
        assert prov["format"] == "arff"
        assert prov["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
        json.dumps(prov)  # JSON-serialisable

    def test_missing_values_become_nan_and_are_reported(self, tmp_path):
        ds = load_arff(tiny_arff(tmp_path, "?,1,2,'no'\n1,2,?,'yes'\n?,3,4,'no'\n"))
        assert ds.n_objects == 3  # nothing dropped
        assert np.isnan(ds.X[[0, 2], 0]).all() and np.isnan(ds.X[1, 1])
        assert ds.provenance["load"]["missing_values"] == 3
        assert ds.provenance["load"]["missing_by_attribute"] == {"a": 2, "b c": 1}
        with pytest.raises(ValueError, match="missing values"):
            ds.numeric_matrix()

    def test_nominal_missing_value(self, tmp_path):
        text = "@relation r\n@attribute c {x,y}\n@attribute outlier {yes,no}\n@data\nx,no\n?,yes\n"
        ds = load_arff(write(tmp_path, "n.arff", text))
        assert ds.attribute_types == ("nominal",)
        assert ds.X[0, 0] == 0 and np.isnan(ds.X[1, 0])

    def test_quoting(self, tmp_path):
        text = (
            "@relation 'q r'\n"
            "@attribute 'name with space' {'a, b', \"c\", 'it\\'s', plain}\n"
            "@attribute \"x\" real\n"
            "@attribute class{yes,no}\n"
            "@data\n"
            "'a, b', '1.5', yes\n"
            "\"c\",2,no\n"
            "'it\\'s',3,no\n"
            "plain , 4 , 'no'\n"
            "\"a, b\",5,\"yes\"\n"
        )
        ds = load_arff(write(tmp_path, "q.arff", text), label_attribute="class")
        assert ds.attribute_names == ("name with space", "x")
        assert ds.categories[0] == ("a, b", "c", "it's", "plain")
        np.testing.assert_array_equal(ds.X, [[0, 1.5], [1, 2], [2, 3], [3, 4], [0, 5]])
        np.testing.assert_array_equal(ds.y, [True, False, False, False, True])
        assert ds.provenance["load"]["relation"] == "q r"

    def test_case_insensitive_keywords_crlf_and_bom(self, tmp_path):
        text = "\ufeff@Relation r\r\n@ATTRIBUTE x NUMERIC\r\n@attribute Outlier {no,yes}\r\n@Data\r\n1,yes\r\n2,no\r\n"
        ds = load_arff(write(tmp_path, "c.arff", text))
        np.testing.assert_array_equal(ds.X[:, 0], [1, 2])
        assert ds.provenance["load"]["label_attribute"] == "Outlier"
        assert ds.ids is None and ds.provenance["load"]["id_attribute"] is None

    def test_string_attribute_becomes_nominal(self, tmp_path):
        text = "@relation r\n@attribute s string\n@attribute v real\n@attribute outlier {no,yes}\n@data\n" \
               "'z',1,no\n'a',2,yes\nz,3,no\n"
        ds = load_arff(write(tmp_path, "s.arff", text))
        assert ds.attribute_types == ("nominal", "numeric")
        assert ds.categories == {0: ("z", "a")}
        np.testing.assert_array_equal(ds.X[:, 0], [0, 1, 0])
        assert ds.provenance["load"]["string_attributes_as_nominal"] == ["s"]

    def test_numeric_label_and_unlabelled(self, tmp_path):
        text = "@relation r\n@attribute v real\n@attribute outlier numeric\n@data\n1,0\n2,1\n3,0\n"
        p = write(tmp_path, "n.arff", text)
        np.testing.assert_array_equal(load_arff(p).y, [False, True, False])
        ds = load_arff(p, label_attribute=None)
        assert ds.y is None and ds.attribute_names == ("v", "outlier")

    def test_id_options(self, tmp_path):
        p = tiny_arff(tmp_path, self.ROWS)
        ds = load_arff(p, id_attribute=None)
        assert ds.ids is None and ds.attribute_names == ("a", "id", "b c")
        err = format_error(load_arff, p, id_attribute="key")
        assert "no id attribute 'key'" in str(err)

    def test_gzip_and_name(self, tmp_path):
        p = tmp_path / "z.arff.gz"
        p.write_bytes(gzip.compress((ARFF_HEADER.replace("{LABELS}", "{no,yes}") + self.ROWS).encode()))
        ds = load_dataset(p, name="zz")
        assert ds.name == "zz" and ds.n_objects == 3
        assert load_dataset(p).name == "z"
        assert ds.provenance["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()

    def test_non_integer_ids_stay_float(self, tmp_path):
        ds = load_arff(tiny_arff(tmp_path, "1,1.5,2,no\n2,2.5,3,yes\n"))
        assert ds.ids.dtype == np.float64


# --- ARFF: malformed files -------------------------------------------------------------------------------
class TestArffErrors:
    @pytest.mark.parametrize(
        ("rows", "line", "pattern"),
        [
            ("1,1,2,no\n1,2,abc,yes\n", 11, r"attribute 'b c' \(numeric\): 'abc' is not a number"),
            ("1,1,2,no\n1,2,3\n", 11, r"data line has 3 values, expected 4"),
            ("1,1,2,no\n1,2,3,4,yes\n", 11, r"data line has 5 values, expected 4"),
            ("1,1,2,maybe\n", 10, r"attribute 'outlier': unknown nominal value 'maybe' \(declared: 'no', 'yes'\)"),
            ("1,1,2,no\n1,2,3,?\n", 11, r"label attribute 'outlier': missing value"),
            ("1,1,2,no\n1,?,3,yes\n", 11, r"id attribute 'id': missing value"),
            ("1,1,2,'no\n", 10, r"unbalanced quote"),
            ("1,1,2,no\n{0 1, 3 yes}\n", 11, r"sparse ARFF"),
            ("1,1,1e999,no\n", 10, r"out of the float64 range"),
            ("1,1,inf,no\n", 10, r"'inf' is not a number"),
            ("1,1,1_000,no\n", 10, r"'1_000' is not a number"),
            ("1,1,,no\n", 10, r"'' is not a number"),
            ("1,1,2,'no' x\n", 10, r"text after the closing quote"),
        ],
    )
    def test_data_errors(self, tmp_path, rows, line, pattern):
        p = tiny_arff(tmp_path, rows)
        err = format_error(load_arff, p)
        assert err.line == line
        assert err.path == str(p)
        assert re.search(pattern, err.problem), err.problem
        assert str(err).startswith(f"{p}, line {line}: ")

    @pytest.mark.parametrize(
        ("text", "line", "pattern"),
        [
            ("@relation r\n@attribute x real\n@attribute outlier {no,yes}\n1,no\n", 4, r"unexpected line before @data"),
            ("@relation r\n@attribute x real\n@attribute outlier {no,yes}\n", 3, r"no @data section"),
            ("@relation r\n@data\n1\n", 2, r"no @attribute declared"),
            ("@relation r\n@attribute x real\n@attribute outlier {no,yes}\n@data\n% none\n", 4, r"no data lines"),
            ("@relation r\n@attribute x date\n@data\n", 2, r"date attributes are not supported"),
            ("@relation r\n@attribute x complex\n@data\n", 2, r"unknown type 'complex'"),
            ("@relation r\n@attribute x\n@data\n", 2, r"attribute 'x' has no type"),
            ("@relation r\n@attribute x real\n@attribute x real\n@data\n", 3, r"declared twice"),
            ("@relation r\n@attribute x {a,b\n@data\n", 2, r"missing closing"),
            ("@relation r\n@attribute x {a,a}\n@data\n", 2, r"declares category 'a' twice"),
            ("@relation r\n@attribute x {}\n@data\n", 2, r"declares no categories"),
            ("@relation r\n@attributes x real\n@data\n", 2, r"unknown declaration '@attributes'"),
            ("@relation r\n@attribute 'x real\n@data\n", 2, r"unbalanced quote in attribute name"),
        ],
    )
    def test_header_errors(self, tmp_path, text, line, pattern):
        err = format_error(load_arff, write(tmp_path, "h.arff", text))
        assert err.line == line
        assert re.search(pattern, err.problem), err.problem

    def test_no_label_attribute(self, tmp_path):
        p = write(tmp_path, "n.arff", "@relation r\n@attribute x real\n@attribute id real\n@data\n1,1\n")
        err = format_error(load_arff, p)
        assert "no label attribute 'outlier'" in err.problem and "'x', 'id'" in err.problem
        assert err.line is None
        assert load_arff(p, label_attribute=None).y is None

    def test_non_binary_nominal_label(self, tmp_path):
        text = "@relation r\n@attribute x real\n@attribute outlier {a,b,yes}\n@data\n1,a\n"
        err = format_error(load_arff, write(tmp_path, "n.arff", text))
        assert err.line == 3 and "two categories" in err.problem
        text = "@relation r\n@attribute x real\n@attribute outlier {o,i}\n@data\n1,o\n2,i\n"
        p = write(tmp_path, "m.arff", text)
        assert "one of them 'yes'" in format_error(load_arff, p).problem
        np.testing.assert_array_equal(load_arff(p, positive="o").y, [True, False])

    def test_non_binary_numeric_label(self, tmp_path):
        text = "@relation r\n@attribute x real\n@attribute outlier real\n@data\n1,0\n2,2\n"
        err = format_error(load_arff, write(tmp_path, "n.arff", text))
        assert err.line == 6 and "must be 0/1, found 2" in err.problem

    def test_only_id_and_label(self, tmp_path):
        text = "@relation r\n@attribute id real\n@attribute outlier {no,yes}\n@data\n1,no\n"
        assert "no feature attributes" in format_error(load_arff, write(tmp_path, "n.arff", text)).problem

    def test_latin1_file(self, tmp_path):
        p = tmp_path / "l.arff"
        p.write_bytes("@relation 'caf\xe9'\n@attribute x real\n@attribute outlier {no,yes}\n@data\n1,no\n"
                      .encode("latin-1"))
        ds = load_arff(p)
        assert ds.provenance["load"]["relation"] == "café" and ds.provenance["load"]["encoding"] == "latin-1"


def test_format_error_is_value_error_and_pickles():
    err = DatasetFormatError("f.arff", "bad", line=3)
    assert isinstance(err, ValueError)
    again = pickle.loads(pickle.dumps(err))
    assert (again.path, again.problem, again.line, str(again)) == ("f.arff", "bad", 3, "f.arff, line 3: bad")
    assert str(DatasetFormatError("f.npz", "bad")) == "f.npz: bad"


# --- ARFF: the Campos et al. (2016) collection -------------------------------------------------------------
def _liac(path: Path):
    """Independent reference decoding with liac-arff."""
    import arff

    with open(path, encoding="utf-8") as fh:
        return arff.load(fh)


def _check_against_liac(ds: Dataset, path: Path) -> None:
    ref = _liac(path)
    names = [a[0] for a in ref["attributes"]]
    data = ref["data"]
    lab = next(j for j, n in enumerate(names) if n.lower() == "outlier")
    idj = names.index("id")
    np.testing.assert_array_equal(ds.y, [row[lab] == "yes" for row in data])
    np.testing.assert_array_equal(ds.ids, [row[idj] for row in data])
    feat = [j for j in range(len(names)) if j not in (lab, idj)]
    assert list(ds.attribute_names) == [names[j] for j in feat]
    for k, j in enumerate(feat):
        decl = ref["attributes"][j][1]
        col = [row[j] for row in data]
        if isinstance(decl, list):
            expected = [decl.index(v) for v in col]
        else:
            expected = [np.nan if v is None else v for v in col]
        np.testing.assert_array_equal(ds.X[:, k], np.asarray(expected, dtype=np.float64))


@pytest.mark.parametrize(
    ("rel", "n", "d", "n_out"),
    [
        ("WBC/WBC_withoutdupl_norm_v01.arff", 223, 9, 10),
        ("Annthyroid/Annthyroid_07.arff", 7200, 21, 534),
        ("PenDigits/PenDigits_withoutdupl_norm_v01.arff", 9868, 16, 20),
        ("Lymphography/Lymphography_withoutdupl_1ofn.arff", 148, 47, 6),
        ("Hepatitis/Hepatitis_withoutdupl_norm_16.arff", 80, 19, 13),
    ],
)
def test_campos_files(dami, rel, n, d, n_out):
    path = dami / rel
    ds = load_dataset(path)
    assert (ds.n_objects, ds.n_attributes, ds.n_outliers) == (n, d, n_out)
    assert "id" not in ds.attribute_names and "outlier" not in {a.lower() for a in ds.attribute_names}
    assert ds.ids.dtype == np.int64 and np.unique(ds.ids).size == n
    assert ds.provenance["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    if n < 1000:  # the large files are compared in the slow test over the whole collection
        _check_against_liac(ds, path)


def test_campos_label_declared_in_both_orders(dami):
    # PenDigits declares {'yes','no'}, Annthyroid {'no','yes'}: both parse by value
    pen = load_dataset(dami / "PenDigits/PenDigits_withoutdupl_norm_v01.arff")
    ann = load_dataset(dami / "Annthyroid/Annthyroid_07.arff")
    assert pen.provenance["load"]["label_categories"] == ["yes", "no"]
    assert ann.provenance["load"]["label_categories"] == ["no", "yes"]
    assert pen.n_outliers == 20 and ann.n_outliers == 534


def test_campos_lymphography_original_nominal(dami):
    ds = load_dataset(dami / "Lymphography/Lymphography_original.arff")
    assert (ds.n_objects, ds.n_attributes, ds.n_outliers) == (148, 18, 6)
    assert ds.nominal_columns == (0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16)
    assert ds.categories[0] == ("deformed", "displaced", "arched", "normal")
    assert ds.categories[1] == ("yes", "no")  # declared order kept, codes index it
    # first data line: 1.0,'deformed','yes','no','no','no','yes','no','yes',1.0,2.0,'oval','lacunar',...
    # ('yes' is code 0 where declared {'yes','no'}, code 1 where declared {'no','yes'})
    np.testing.assert_array_equal(ds.X[0, :11], [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0])
    np.testing.assert_array_equal(ds.X[2, :8], [2, 0, 0, 0, 0, 0, 0, 0])  # 'arched','yes','no','no','no','yes'
    assert ds.X[3, 1] == 1 and ds.X[3, 7] == 1  # 'no' where declared {'yes','no'}
    assert ds.ids[0] == 1
    with pytest.raises(ValueError, match="nominal attributes"):
        ds.numeric_matrix()
    _check_against_liac(ds, dami / "Lymphography/Lymphography_original.arff")


def _dami_files() -> list[str]:
    """The ARFF files of the collection, relative to dami/ (empty when the shared folder is absent)."""
    default = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
    root = Path(os.environ.get("ODEVAL_SHARED_DATASETS", default)) / "dami"
    return sorted(p.relative_to(root).as_posix() for p in root.glob("*/*.arff")) if root.is_dir() else []


def _check_campos_invariants(ds: Dataset, path: Path) -> None:
    assert ds.n_objects > 0 and 0 < ds.n_outliers < ds.n_objects
    assert ds.ids is not None and ds.ids.dtype == np.int64 and np.unique(ds.ids).size == ds.n_objects
    assert ds.n_missing == 0
    m = re.search(r"_(\d\d)(_v\d\d)?$", ds.name)  # e.g. _05_v01: 5 % outliers after downsampling
    if m:
        assert abs(100 * ds.outlier_fraction - int(m.group(1))) <= 1


def test_one_campos_file_per_base_dataset(dami):
    folders = sorted(p for p in dami.iterdir() if p.is_dir())
    assert len(folders) >= 15
    for folder in folders:
        path = sorted(folder.glob("*.arff"))[-1]
        _check_campos_invariants(load_dataset(path), path)


@pytest.mark.slow
@pytest.mark.parametrize("rel", _dami_files() or [pytest.param("", marks=pytest.mark.skip(reason="no dami/"))])
def test_every_campos_file_loads(dami, rel):
    path = dami / rel
    ds = load_dataset(path)
    _check_campos_invariants(ds, path)
    _check_against_liac(ds, path)


# --- MAT ---------------------------------------------------------------------------------------------------
def test_mat_odds(shared_datasets):
    ds = load_mat(shared_datasets / "odds/lympho.mat")
    assert (ds.n_objects, ds.n_attributes, ds.n_outliers) == (148, 18, 6)
    assert ds.attribute_names[0] == "att1" and ds.ids is None
    assert ds.provenance["format"] == "mat"
    ds = load_dataset(shared_datasets / "odds/shuttle.mat")  # int16 X, uint8 y
    assert ds.X.dtype == np.float64 and ds.y.dtype == bool and ds.n_objects == 49097


def test_mat_v73_via_h5py(shared_datasets):
    pytest.importorskip("h5py")
    ds = load_dataset(shared_datasets / "odds/smtp.mat")
    assert (ds.n_objects, ds.n_attributes, ds.n_outliers) == (95156, 3, 30)
    assert ds.provenance["load"]["mat_version"].startswith("7.3")
    # ADBench redistributes the same data: same matrix, same labels
    ref = load_npz(shared_datasets / "adbench/34_smtp.npz")
    np.testing.assert_array_equal(ds.X, ref.X)
    np.testing.assert_array_equal(ds.y, ref.y)


def test_mat_v73_without_h5py(shared_datasets, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)  # makes `import h5py` raise ImportError
    with pytest.raises(ImportError, match=r"pip install 'odeval\[mat\]'"):
        load_mat(shared_datasets / "odds/smtp.mat")


class TestMatCrafted:
    def save(self, tmp_path, **arrays):
        import scipy.io

        p = tmp_path / "m.mat"
        scipy.io.savemat(p, arrays)
        return p

    def test_roundtrip_and_unlabelled(self, tmp_path):
        p = self.save(tmp_path, X=np.array([[1.0, np.nan], [3, 4], [5, 6]]), y=np.array([[0], [1], [0]]))
        ds = load_mat(p)
        np.testing.assert_array_equal(ds.y, [False, True, False])
        assert ds.provenance["load"]["missing_values"] == 1
        assert load_mat(p, y_key=None).y is None

    def test_non_binary_labels(self, tmp_path):
        err = format_error(load_mat, self.save(tmp_path, X=np.ones((3, 2)), y=np.array([[0], [2], [1]])))
        assert "not binary" in err.problem and "value(s) [2" in err.problem and "position(s) [1]" in err.problem

    def test_missing_variable(self, tmp_path):
        err = format_error(load_mat, self.save(tmp_path, data=np.ones((3, 2))))
        assert "no variable 'X'" in err.problem and "data" in err.problem

    def test_wrong_label_count(self, tmp_path):
        err = format_error(load_mat, self.save(tmp_path, X=np.ones((3, 2)), y=np.array([[0], [1]])))
        assert "expected 3 labels" in err.problem

    def test_not_a_mat_file(self, tmp_path):
        p = write(tmp_path, "x.mat", "hello")
        assert "not a readable MATLAB file" in format_error(load_mat, p).problem

    def test_infinite_value(self, tmp_path):
        p = self.save(tmp_path, X=np.array([[1.0, np.inf], [0, 0]]), y=np.array([[0], [1]]))
        assert "infinite value at row 0, column 1" in format_error(load_mat, p).problem


# --- NPZ ---------------------------------------------------------------------------------------------------
def test_npz_adbench(shared_datasets):
    ds = load_dataset(shared_datasets / "adbench/29_Pima.npz")
    assert (ds.n_objects, ds.n_attributes, ds.n_outliers) == (768, 8, 268)
    assert ds.provenance["format"] == "npz"
    path = shared_datasets / "adbench/29_Pima.npz"
    assert ds.provenance["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


class TestNpzCrafted:
    def test_bool_labels_and_keys(self, tmp_path):
        p = tmp_path / "a.npz"
        np.savez(p, data=np.arange(6.0).reshape(3, 2), lab=np.array([True, False, False]))
        ds = load_npz(p, x_key="data", y_key="lab")
        np.testing.assert_array_equal(ds.y, [True, False, False])
        ds = load_dataset(p, x_key="data", label="lab")  # format-independent alias
        assert ds.n_outliers == 1

    def test_non_binary_labels(self, tmp_path):
        p = tmp_path / "a.npz"
        np.savez(p, X=np.ones((4, 2)), y=np.array([0, 1, -1, 0.5]))
        err = format_error(load_npz, p)
        assert "not binary" in err.problem and "[-1.0, 0.5]" in err.problem and "[2, 3]" in err.problem

    def test_missing_array(self, tmp_path):
        p = tmp_path / "a.npz"
        np.savez(p, X=np.ones((4, 2)))
        assert "no array 'y'" in format_error(load_npz, p).problem
        assert load_npz(p, y_key=None).y is None

    def test_pickled_arrays_refused(self, tmp_path):
        p = tmp_path / "a.npz"
        np.savez(p, X=np.array([[1, "a"]], dtype=object), y=np.array([0]))
        assert "cannot read arrays" in format_error(load_npz, p).problem

    def test_bad_shapes_and_types(self, tmp_path):
        p = tmp_path / "a.npz"
        np.savez(p, X=np.ones(4), y=np.zeros(4))
        assert "2-d matrix" in format_error(load_npz, p).problem
        np.savez(p, X=np.array([["a", "b"]]), y=np.zeros(1))
        assert "must be real numeric" in format_error(load_npz, p).problem

    def test_not_an_archive(self, tmp_path):
        assert "not a valid .npz" in format_error(load_npz, write(tmp_path, "b.npz", "junk")).problem


# --- CSV ---------------------------------------------------------------------------------------------------
class TestCsv:
    def test_zero_one_labels_id_and_missing(self, tmp_path):
        p = write(tmp_path, "t.csv", "id,a,b,outlier\n10,1.5,2,0\n11,,3,1\n\n12,NA,?,0\n")
        ds = load_csv(p)
        assert ds.attribute_names == ("a", "b")
        np.testing.assert_array_equal(ds.y, [False, True, False])
        np.testing.assert_array_equal(ds.ids, [10, 11, 12])
        assert ds.provenance["load"]["missing_values"] == 3
        assert ds.provenance["load"]["missing_by_attribute"] == {"a": 2, "b": 1}
        assert ds.provenance["format"] == "csv"

    @pytest.mark.parametrize("labels", [("true", "False", "TRUE"), ("1.0", "0.0", "1"), ("yes", "no", "Yes")])
    def test_boolean_spellings(self, tmp_path, labels):
        p = write(tmp_path, "t.csv", "x,Outlier\n" + "".join(f"{i},{v}\n" for i, v in enumerate(labels)))
        np.testing.assert_array_equal(load_csv(p).y, [True, False, True])

    def test_positive_value_and_custom_columns(self, tmp_path):
        p = write(tmp_path, "t.csv", "key;x;\"y, z\";class\nk1;1;2;normal\nk2;3;4;attack\nk3;5;6;other\n")
        ds = load_csv(p, label_column="class", positive="attack", id_column="key", delimiter=";")
        np.testing.assert_array_equal(ds.y, [False, True, False])
        np.testing.assert_array_equal(ds.ids, ["k1", "k2", "k3"])
        assert ds.attribute_names == ("x", "y, z")
        p = write(tmp_path, "u.csv", "x,label\n1,1.0\n2,2.0\n")
        np.testing.assert_array_equal(load_csv(p, label_column="label", positive=1).y, [True, False])

    def test_unlabelled(self, tmp_path):
        p = write(tmp_path, "t.csv", "x,y\n1,2\n")
        ds = load_csv(p, label_column=None)
        assert ds.y is None and ds.attribute_names == ("x", "y")

    @pytest.mark.parametrize(
        ("text", "options", "line", "pattern"),
        [
            ("x,outlier\n1,0\nabc,1\n", {}, 3, r"column 'x': 'abc' is not a number"),
            ("x,outlier\n1,0\n2,1,3\n", {}, 3, r"row has 3 fields, expected 2"),
            ("x,label\n1,0\n", {}, 1, r"no label column 'outlier' \(columns: 'x', 'label'\)"),
            ("x,outlier\n1,0\n2,2\n", {}, 3, r"not binary .* found \['0', '2'\]; pass positive="),
            ("x,outlier\n1,a\n2,b\n", {"positive": "c"}, None, r"no value equals positive='c'"),
            ("x,outlier\n1,0\n2,\n", {}, 3, r"label column 'outlier': missing value"),
            ("id,x,outlier\n1,1,0\n,2,1\n", {}, 3, r"id column 'id': missing value"),
            ("x,x,outlier\n1,1,0\n", {}, 1, r"column 'x' appears twice"),
            ("x,outlier\n", {}, 1, r"no data rows"),
            ("", {}, None, r"empty file"),
            ("x,outlier\n1,0\n", {"id_column": "key"}, 1, r"no id column 'key'"),
            ("x,outlier\n1e999,0\n", {}, 2, r"out of the float64 range"),
            ("id,outlier\n1,0\n", {}, 1, r"no attribute columns"),
        ],
    )
    def test_errors(self, tmp_path, text, options, line, pattern):
        p = write(tmp_path, "bad.csv", text)
        err = format_error(load_csv, p, **options)
        assert err.line == line
        assert re.search(pattern, err.problem), err.problem


# --- dispatch ----------------------------------------------------------------------------------------------
def test_load_dataset_dispatch_and_errors(tmp_path):
    p = write(tmp_path, "t.txt", "x,outlier\n1,0\n2,1\n")
    err = format_error(load_dataset, p)
    assert "unknown dataset extension '.txt'" in err.problem and ".arff" in err.problem
    assert load_dataset(p, format="csv").n_outliers == 1
    with pytest.raises(ValueError, match="format must be one of"):
        load_dataset(p, format="xls")
    with pytest.raises(FileNotFoundError):
        load_dataset(tmp_path / "absent.arff")
    with pytest.raises(TypeError):
        load_dataset(write(tmp_path, "t.csv", "x,outlier\n1,0\n"), x_key="X")


# --- info --------------------------------------------------------------------------------------------------
def test_dataset_info(tmp_path):
    text = "@relation r\n@attribute a real\n@attribute b real\n@attribute c {u,v,w}\n@attribute outlier {no,yes}\n" \
           "@data\n1,5,u,no\n1,5,u,yes\n?,6,v,no\n2,7,?,no\n"
    info = dataset_info(load_arff(write(tmp_path, "i.arff", text)))
    assert (info["n_objects"], info["n_attributes"], info["n_outliers"]) == (4, 3, 1)
    assert info["outlier_pct"] == 25.0
    assert info["n_duplicates"] == 1
    assert (info["n_missing"], info["n_objects_with_missing"]) == (2, 2)
    assert info["nominal_attributes"] == ["c"]
    a, b, c = info["attributes"]
    assert (a["min"], a["max"], a["n_missing"], a["n_distinct"]) == (1, 2, 1, 2)
    assert (b["min"], b["max"]) == (5, 7)
    assert c["categories"] == ["u", "v", "w"] and c["type"] == "nominal"
    json.dumps(info)


def test_attribute_rows_group_equal_ranges():
    attrs = [{"name": f"att{i}", "type": "numeric", "min": 0, "max": 1, "n_missing": 0, "n_distinct": i + 2}
             for i in range(5)]
    attrs.append({"name": "z", "type": "numeric", "min": 0.5, "max": 2, "n_missing": 1, "n_distinct": 3})
    rows = attribute_rows({"attributes": attrs})
    assert [r["attribute"] for r in rows] == ["att0 … att4 (5)", "z"]
    assert rows[0]["distinct"] == "2–6" and rows[1]["min"] == "0.5"


class TestCliInfo:
    def test_text(self, dami):
        res = CliRunner().invoke(main, ["datasets", "info", str(dami / "WBC/WBC_withoutdupl_norm_v01.arff")])
        assert res.exit_code == 0, res.output
        out = res.output
        assert "WBC_withoutdupl_norm_v01" in out
        assert re.search(r"objects \(N\)\s+223", out)
        assert re.search(r"attributes \(d\)\s+9", out)
        assert re.search(r"outliers \(\|O\|\)\s+10 \(4\.48 %\)", out)
        assert re.search(r"duplicate vectors\s+0", out)
        assert "att2 … att10 (9)" in out

    def test_json_and_folder(self, dami):
        res = CliRunner().invoke(main, ["datasets", "info", "--json", str(dami / "Glass")])
        assert res.exit_code == 0, res.output
        infos = json.loads(res.output)
        assert len(infos) == len(list((dami / "Glass").glob("*.arff")))
        assert {i["n_objects"] for i in infos} == {214}
        assert all(len(i["attributes"]) == 7 for i in infos)

    def test_missing_nominal_and_max_rows(self, tmp_path):
        text = "@relation r\n" + "".join(f"@attribute a{j} real\n" for j in range(30)) + \
               "@attribute c {u,v}\n@attribute outlier {no,yes}\n@data\n"
        text += "".join(",".join(str((i * j) % 7) if (i, j) != (1, 3) else "?" for j in range(30)) +
                        f",u,{'yes' if i == 0 else 'no'}\n" for i in range(5))
        p = write(tmp_path, "w.arff", text)
        res = CliRunner().invoke(main, ["datasets", "info", "--max-rows", "5", str(p)])
        assert res.exit_code == 0, res.output
        assert re.search(r"missing values\s+1 \(in 1 objects\)", res.output)
        assert re.search(r"nominal attributes\s+c", res.output)
        assert "more rows" in res.output
        res = CliRunner().invoke(main, ["datasets", "info", "--max-rows", "0", str(p)])
        assert "more rows" not in res.output and "nominal(2)" in res.output

    def test_label_options(self, tmp_path):
        p = write(tmp_path, "t.csv", "x,class\n1,a\n2,b\n3,b\n")
        res = CliRunner().invoke(main, ["datasets", "info", "--json", "--label", "class", "--positive", "a", str(p)])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)[0]["n_outliers"] == 1
        res = CliRunner().invoke(main, ["datasets", "info", "--json", "--unlabelled", str(p)])
        assert res.exit_code == 1  # 'class' is not numeric
        res = CliRunner().invoke(main, ["datasets", "info", "--json", "--unlabelled",
                                        str(write(tmp_path, "u.csv", "x\n1\n"))])
        assert res.exit_code == 0 and json.loads(res.output)[0]["n_outliers"] is None

    def test_error_exit_code_and_message(self, tmp_path):
        good = tiny_arff(tmp_path, "1,1,2,no\n2,2,3,yes\n", name="good.arff")
        bad = tiny_arff(tmp_path, "1,1,x,no\n", name="bad.arff")
        res = CliRunner().invoke(main, ["datasets", "info", str(bad), str(good)])
        assert res.exit_code == 1
        assert f"error: {bad}, line 10:" in res.output  # CliRunner mixes stderr into output
        assert "good" in res.output
        res = CliRunner().invoke(main, ["datasets", "info", "--json", str(bad)])
        assert res.exit_code == 1
        assert "line 10" in json.loads(res.output)[0]["error"]

    def test_folder_without_datasets(self, tmp_path):
        write(tmp_path, "notes.txt", "x")
        res = CliRunner().invoke(main, ["datasets", "info", str(tmp_path)])
        assert res.exit_code == 1 and "no dataset files" in res.output


# --- labels optional where they are not needed (load_dataset(require_labels=False)) -----------------------
class TestLabelsOptional:
    """One rule, in load_dataset: without the *default* label attribute a file is read unlabelled when labels are
    not required, with a note; a label attribute named explicitly must exist; nothing changes with labels."""

    def test_every_format(self, tmp_path):
        import scipy.io

        from odeval.data import label_note

        X = np.arange(12, dtype=float).reshape(4, 3)
        files = {
            "csv": write(tmp_path, "u.csv", "a,b,c\n" + "".join(",".join(map(str, r)) + "\n" for r in X)),
            "arff": write(tmp_path, "u.arff", "@RELATION u\n@ATTRIBUTE a real\n@ATTRIBUTE b real\n@ATTRIBUTE c real\n"
                                              "@DATA\n" + "".join(",".join(map(str, r)) + "\n" for r in X)),
            "npz": tmp_path / "u.npz", "mat": tmp_path / "u.mat"}
        np.savez(files["npz"], X=X)
        scipy.io.savemat(files["mat"], {"X": X})
        for fmt, path in files.items():
            with pytest.raises(DatasetFormatError):  # labels required (the default): unchanged
                load_dataset(path)
            ds = load_dataset(path, require_labels=False)
            assert ds.y is None and ds.n_objects == 4 and ds.n_attributes == 3, fmt
            np.testing.assert_array_equal(ds.X, X)
            what = {"csv": "label column 'outlier'", "arff": "label attribute 'outlier'"}.get(fmt, "label")
            assert what in label_note(ds) and label_note(ds).endswith(": read without labels"), (fmt, label_note(ds))
            with pytest.raises(DatasetFormatError, match="nope"):  # named explicitly: must exist
                load_dataset(path, require_labels=False, label="nope")

    def test_labelled_file_unchanged(self, tmp_path):
        from odeval.data import label_note

        p = write(tmp_path, "l.csv", "a,outlier\n1,0\n2,1\n3,0\n")
        ds, ref = load_dataset(p, require_labels=False), load_dataset(p)
        np.testing.assert_array_equal(ds.y, ref.y)
        assert label_note(ds) is None and ds.provenance == ref.provenance

    def test_non_numeric_column_hints_at_the_label(self, tmp_path):
        p = write(tmp_path, "c.csv", "a,class\n1,yes\n2,no\n")
        err = format_error(load_dataset, p, require_labels=False)
        assert "'class': 'yes' is not a number" in err.problem and "if this is the label column" in err.problem
        err = format_error(load_dataset, p)  # labels required: the missing label column is the error
        assert "no label column 'outlier'" in err.problem and "--unlabelled" not in err.problem

    def test_bad_missing_label_value(self, tmp_path):
        with pytest.raises(ValueError, match="missing_label"):
            load_csv(write(tmp_path, "u.csv", "a\n1\n"), missing_label="maybe")

    def test_cli_info_notes_unlabelled(self, tmp_path):
        u = write(tmp_path, "u.csv", "a,b\n1,2\n3,5\n")
        res = CliRunner().invoke(main, ["datasets", "info", "--json", str(u)])
        assert res.exit_code == 0, res.output
        assert json.loads(res.stdout)[0]["n_outliers"] is None
        assert res.stderr.strip() == f"note: {u}: no label column 'outlier': read without labels"
        res = CliRunner().invoke(main, ["datasets", "info", str(u)])
        assert res.exit_code == 0 and "unlabelled" in res.stdout
        res = CliRunner().invoke(main, ["datasets", "info", "--label", "nope", str(u)])
        assert res.exit_code == 1 and "no label column 'nope'" in res.output

    @pytest.mark.parametrize(("text", "cause"), [
        ("", "empty file: no header line"),
        ("a,b\n", "no data rows after the header"),
        ("a,b\n1,2\n", "at least"),
        ("a,b\n1,2\ninf,3\n2,4\n5,5\n", "'inf' is not a number"),
        ("a,b\n1,2\nx,3\n2,4\n5,5\n", "'x' is not a number"),
        ("a,b\n1,2\n,3\n2,4\n5,5\n", "missing values"),
    ])
    def test_bad_unlabelled_tables_are_one_line_errors(self, tmp_path, text, cause):
        """Every command that reads unlabelled tables refuses bad ones in one line naming the file and the cause."""
        p = write(tmp_path, "bad.csv", text)
        scores = tmp_path / "s.npz"
        np.savez(scores, scores=np.arange(4.0)[None], columns=np.array(["x"]))
        for args in (["score", str(p), "-m", "kNN", "--k", "1", "-o", str(tmp_path / "s.csv")],
                     ["emmv", str(p), "-d", "kNN", "--setting", "unsupervised"],
                     ["ireos", str(p), "--scores", str(scores), "--json"],
                     ["datasets", "prepare", str(p), "--normalize", "-o", str(tmp_path / "o")]):
            if args[0] == "datasets" and cause == "at least":  # one row is a table preparation can write
                continue
            res = CliRunner().invoke(main, args)
            assert res.exit_code == 1, (args, res.output)
            err = [line for line in res.output.splitlines() if line.strip() and not line.startswith("note:")]
            assert len(err) == 1 and "Traceback" not in res.output, (args, res.output)
            assert ("bad" in err[0]) and (cause in err[0] or "4 objects" in err[0]), (args, err[0])
        assert not (tmp_path / "o").exists() and not (tmp_path / "s.csv").exists()
