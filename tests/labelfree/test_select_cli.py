"""``odeval select``: formats, outputs, JSON, bad input as one line with nothing written, Ctrl-C (issue 24)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from odeval.cli import main

ROOT = Path(__file__).resolve().parents[2]
WBC = ROOT / "src" / "odeval" / "data" / "vendored" / "dami" / "WBC" / "WBC_withoutdupl_norm_v01.arff"
QUICK = ["--resamples", "0", "--no-ireos"]


def _table(n: int = 40, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[:3] += 8.0
    y = np.zeros(n, dtype=int)
    y[:3] = 1
    return X, y


def _csv(path: Path, X: np.ndarray, y: np.ndarray | None = None, sep: str = ",") -> Path:
    cols = [f"a{j}" for j in range(X.shape[1])] + (["outlier"] if y is not None else [])
    rows = [sep.join(cols)]
    for i, x in enumerate(X):
        rows.append(sep.join([repr(float(v)) for v in x] + ([str(y[i])] if y is not None else [])))
    path.write_text("\n".join(rows) + "\n")
    return path


def _run(*args: str):
    return CliRunner().invoke(main, ["select", *map(str, args)])


def test_select_csv_text_output_and_files(tmp_path):
    X, y = _table()
    data = _csv(tmp_path / "t.csv", X, y)
    out = tmp_path / "out"
    res = _run(data, *QUICK, "--check-labels", "outlier", "-o", out)
    assert res.exit_code == 0, res.output
    text = res.output
    for head in ("Recommendation: kNN-010", "Agreement:", "Stability: not measured", "Warnings:", "What to expect",
                 "Which rows:", "Check against held-back labels (3 outliers of 40"):
        assert head in text
    assert text.index("Recommendation:") < text.index("Agreement:") < text.index("Stability") < text.index(
        "Warnings") < text.index("What to expect") < text.index("Which rows")
    assert "only 40 objects" in text
    import pandas as pd

    scores = pd.read_csv(out / "scores.csv")
    assert list(scores.columns) == ["row", "kNN-010", "probability", "flagged", "ensemble"] and len(scores) == 40
    doc = json.loads((out / "select.json").read_text())
    assert doc["recommendation"]["candidate"] == "kNN-010" and doc["check"]["n_outliers"] == 3
    assert sorted(p.name for p in out.iterdir()) == ["scores.csv", "select.html", "select.json"]


def test_label_column_is_never_a_feature(tmp_path):
    X, y = _table()
    res = _run(_csv(tmp_path / "t.csv", X, y), *QUICK, "--json")
    doc = json.loads(res.output)
    assert doc["dataset"]["n_attributes"] == 3 and doc["check"] is None
    assert any("column 'outlier' looks like labels" in n for n in doc["notes"])
    res = _run(_csv(tmp_path / "u.csv", X), *QUICK, "--json")
    assert "read as unlabelled" in json.loads(res.output)["notes"][0]


def test_labels_from_a_file(tmp_path):
    X, y = _table()
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(map(str, y)) + "\n")
    res = _run(_csv(tmp_path / "t.csv", X), *QUICK, "--check-labels", labels, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["check"]["n_outliers"] == 3


@pytest.mark.parametrize("fmt", ["tsv", "parquet", "npz", "mat", "arff"])
def test_select_reads_every_format(tmp_path, fmt):
    X, y = _table()
    if fmt == "tsv":
        data = _csv(tmp_path / "t.tsv", X, y, sep="\t")
    elif fmt == "parquet":
        import pandas as pd

        data = tmp_path / "t.parquet"
        pd.DataFrame({"a0": X[:, 0], "a1": X[:, 1], "a2": X[:, 2], "outlier": y}).to_parquet(data)
    elif fmt == "npz":
        data = tmp_path / "t.npz"
        np.savez(data, X=X, y=y)
    elif fmt == "mat":
        from scipy.io import savemat

        data = tmp_path / "t.mat"
        savemat(data, {"X": X, "y": y[:, None]})
    else:
        data = WBC
    res = _run(data, *QUICK, "--json")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["dataset"]["n_attributes"] == (9 if fmt == "arff" else 3)


def _bad_tables(tmp_path: Path) -> list[tuple[Path, list[str], str]]:
    X, _ = _table()
    empty = tmp_path / "empty.csv"
    empty.write_text("a,b\n")
    one = _csv(tmp_path / "one.csv", X[:1])
    const = X.copy()
    const[:, 1] = 2.0
    nan = tmp_path / "nan.csv"
    nan.write_text("a,b\n1,2\n3,\n" + "".join(f"{i},{i}\n" for i in range(10)))
    inf = tmp_path / "inf.csv"
    inf.write_text("a,b\n1,2\ninf,3\n" + "".join(f"{i},{i}\n" for i in range(10)))
    inf_npz = tmp_path / "inf.npz"
    X_inf = X.copy()
    X_inf[4, 2] = np.inf
    np.savez(inf_npz, X=X_inf)
    text = tmp_path / "text.csv"
    text.write_text("a,b\n1,2\n3,hello\n")
    return [(empty, [], "no data rows"), (one, [], "1 object(s)"),
            (_csv(tmp_path / "const.csv", const), [], "constant attribute(s) 'a1'"),
            (nan, [], "missing value(s), first at row 1, attribute 'b'"), (inf, [], "'inf' is not a number"),
            (inf_npz, [], "infinite value at row 4"),
            (text, [], "hello"), (_csv(tmp_path / "ok.csv", X), ["--check-labels", "nope"], "no label column 'nope'")]


def test_bad_input_is_one_line_naming_the_file_and_writes_nothing(tmp_path):
    for path, extra, cause in _bad_tables(tmp_path):
        out = tmp_path / f"out-{path.stem}"
        res = _run(path, *QUICK, *extra, "-o", out)
        assert res.exit_code == 1, (path, res.output)
        lines = res.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: ") and str(path) in lines[0], res.output
        assert cause in lines[0], (cause, lines[0])
        assert "Traceback" not in res.output and not out.exists()


def test_output_folder_must_be_new_or_empty(tmp_path):
    X, _ = _table()
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    res = _run(_csv(tmp_path / "t.csv", X), *QUICK, "-o", out)
    assert res.exit_code == 1 and "exists and is not an empty folder" in res.output
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_ctrl_c_stops_cleanly(tmp_path, monkeypatch):
    import odeval.labelfree.table as table

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(table, "select_file", interrupted)
    X, _ = _table()
    out = tmp_path / "out"
    res = _run(_csv(tmp_path / "t.csv", X), "-o", out)
    assert res.exit_code == 130 and "interrupted: nothing was written" in res.output and not out.exists()


def test_select_full_run_with_ireos_stability_and_page(tmp_path):
    out = tmp_path / "out"
    res = _run(WBC, "--resamples", "1", "--check-labels", "outlier", "--json", "-o", out, "--format", "parquet")
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    page = (out / "select.html").read_text()
    for anchor in ("id='recommendation'", "id='similarity'", "id='ireos'", "id='stability'", "id='rows'",
                   "id='check'"):
        assert anchor in page
    assert page.count("data:image/png;base64,") == 3 and "kNNW-049" in page
    import pandas as pd

    assert len(pd.read_parquet(out / "scores.parquet")) == 223
    assert doc["ireos"]["gamma_max"] > 0 and doc["stability"]["resamples"] == 1
    assert {c["selector"] for c in doc["choices"]} >= {"ireos", "ireos-guarded", "default-knn10"}


def test_k_max_option_caps_the_pool(tmp_path):
    X, _ = _table()
    res = _run(_csv(tmp_path / "t.csv", X), *QUICK, "--k-max", "12", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["pool"]["ks"] == list(range(1, 13))
