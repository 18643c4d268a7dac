"""Regenerate the published Campos et al. (2016) variants from their nearest-raw files.

"Reproduced" means: same multiset of (feature vector, label) pairs, values equal to 1e-12 (row order may
differ; in fact it does not, and for most files the values are bit-identical). What was learnt doing this
is in ``odeval.data.prepare`` (module docstring) and ``docs/datasets.md``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from odeval.data import Dataset, load_dataset
from odeval.data.catalogue import parse_variant_name
from odeval.data.prepare import downsample_outliers, n_outliers_for_rate, normalize, prepare, remove_duplicates

TOL = 1e-12


def load(dami: Path, name: str) -> Dataset:
    return load_dataset(dami / parse_variant_name(name).base / f"{name}.arff")


def multiset(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    Z = np.column_stack([X, y.astype(float)])
    order = np.lexsort(np.round(Z, 9).T[::-1])
    return Z[order]


def assert_same_multiset(ours: Dataset, published: Dataset, columns: list[int] | None = None) -> None:
    Xp = published.X if columns is None else published.X[:, columns]
    assert ours.X.shape == Xp.shape
    assert ours.n_outliers == published.n_outliers
    A, B = multiset(ours.X, ours.y), multiset(Xp, published.y)
    np.testing.assert_array_equal(A[:, -1], B[:, -1])
    assert np.abs(A - B).max() <= TOL


PAIRS = [
    # raw, published, prepare() options
    ("Annthyroid_07", "Annthyroid_withoutdupl_norm_07", {"dedup": True, "normalization": "minmax"}),
    ("Wilt_05", "Wilt_withoutdupl_norm_05", {"dedup": True, "normalization": "minmax"}),
    ("WBC_withoutdupl_v01", "WBC_withoutdupl_norm_v01", {"normalization": "minmax"}),
    ("HeartDisease_withoutdupl_44", "HeartDisease_withoutdupl_norm_44", {"normalization": "minmax"}),
    ("Shuttle_withoutdupl_v01", "Shuttle_withoutdupl_norm_v01", {"normalization": "minmax"}),
    ("Lymphography_original", "Lymphography_withoutdupl_catremoved", {"dedup": True, "categorical": "remove"}),
    ("Lymphography_original", "Lymphography_withoutdupl_idf", {"dedup": True, "categorical": "idf"}),
    ("Lymphography_original", "Lymphography_withoutdupl_norm_catremoved",
     {"dedup": True, "categorical": "remove", "normalization": "minmax"}),
    ("Lymphography_original", "Lymphography_withoutdupl_norm_idf",
     {"dedup": True, "categorical": "idf", "normalization": "minmax"}),
]


@pytest.mark.parametrize(("raw", "published", "options"), PAIRS, ids=[p[1] for p in PAIRS])
def test_regenerate_published_variant(dami, raw, published, options):
    ours = prepare(load(dami, raw), **options)
    assert [o.name for o in ours] == [published]          # the name follows the published scheme too
    pub = load(dami, published)
    assert_same_multiset(ours[0], pub)
    # stronger than required: same objects (ids) in the same order
    np.testing.assert_array_equal(ours[0].ids, pub.ids)


@pytest.mark.parametrize("norm", [False, True])
def test_regenerate_lymphography_1ofn(dami, norm):
    """1-of-n: one column per declared category, named 'attribute = value'. odeval keeps each attribute's
    columns at its position; the published file moves the three numeric attributes behind the encoded ones,
    so columns are matched by name."""
    published = "Lymphography_withoutdupl_norm_1ofn" if norm else "Lymphography_withoutdupl_1ofn"
    ours = prepare(load(dami, "Lymphography_original"), dedup=True, categorical="onehot",
                   normalization="minmax" if norm else None)[0]
    assert ours.name == published
    pub = load(dami, published)
    assert sorted(ours.attribute_names) == sorted(pub.attribute_names)
    columns = [pub.attribute_names.index(a) for a in ours.attribute_names]
    assert columns != list(range(len(columns)))             # the layouts do differ
    assert_same_multiset(ours, pub, columns)


def test_lymphography_duplicates_are_removed_before_categorical_treatment(dami):
    """The published catremoved file keeps all 148 objects although only 28 distinct vectors remain: duplicates
    were removed on the full record, then the nominal attributes were dropped."""
    raw = load(dami, "Lymphography_original")
    pub = load(dami, "Lymphography_withoutdupl_catremoved")
    assert pub.n_objects == 148 and pub.n_duplicates() == 120
    ours = prepare(raw, dedup=True, categorical="remove")[0]
    assert ours.provenance["steps"][-1]["result"]["n_duplicates_after"] == 120
    # the other order would leave 28 objects, and 2 of the vectors would be both inlier and outlier
    with pytest.raises(ValueError, match=r"2 repeated vector.*carry both labels"):
        remove_duplicates(prepare(raw, categorical="remove")[0])
    wrong_order = remove_duplicates(prepare(raw, categorical="remove")[0], on_conflict="first")
    assert wrong_order.n_objects == 28


def test_idf_uses_natural_log_and_counts_after_dedup(dami):
    raw = load(dami, "Lymphography_original")
    ours = prepare(raw, dedup=True, categorical="idf")[0]
    j = ours.attribute_names.index("Lymphatics")
    codes = raw.X[:, raw.attribute_names.index("Lymphatics")].astype(int)
    counts = np.bincount(codes)
    np.testing.assert_array_equal(ours.X[:, j], np.log(148 / counts[codes]))


def test_normalisation_formula_is_bit_identical(dami):
    ours = prepare(load(dami, "Annthyroid_07"), dedup=True, normalization="minmax")[0]
    pub = load(dami, "Annthyroid_withoutdupl_norm_07")
    np.testing.assert_array_equal(ours.X, pub.X)           # (x - min) / (max - min), not * (1 / (max - min))


def test_wbc_raw_and_withoutdupl_v01_are_independent_draws(dami):
    """WBC_v01 -> WBC_withoutdupl_v01 / WBC_withoutdupl_norm_v01 cannot be reproduced row for row: the published
    without-duplicates file was drawn separately from the full WBC (9 of its 10 outliers do not occur in WBC_v01).
    What is reproduced: N and |O|, and the inliers exactly; the norm file follows from WBC_withoutdupl_v01."""
    raw = load(dami, "WBC_v01")
    pub = load(dami, "WBC_withoutdupl_v01")
    ours = prepare(raw, dedup=True)[0]
    assert ours.name == "WBC_withoutdupl_v01"
    assert (ours.n_objects, ours.n_outliers) == (pub.n_objects, pub.n_outliers) == (223, 10)
    assert_same_multiset(ours.with_changes(X=ours.X[~ours.y], y=ours.y[~ours.y], ids=None),
                         pub.with_changes(X=pub.X[~pub.y], y=pub.y[~pub.y], ids=None))
    shared = {tuple(r) for r in ours.X[ours.y]} & {tuple(r) for r in pub.X[pub.y]}
    assert len(shared) == 1
    norm_pub = load(dami, "WBC_withoutdupl_norm_v01")
    ours_norm = prepare(raw, dedup=True, normalization="minmax")[0]
    assert ours_norm.name == norm_pub.name
    assert (ours_norm.n_objects, ours_norm.n_outliers) == (norm_pub.n_objects, norm_pub.n_outliers)
    assert_same_multiset(prepare(pub, normalization="minmax")[0], norm_pub)


# --- downsampled variants: (N, |O|) by the rule, for every published file ---------------------------------
_DOWN = re.compile(r"^(?P<base>[A-Za-z]+)_(?P<flags>[a-z_]+)_(?P<pct>\d\d)_v(?P<v>\d\d)\.arff$")


def _count(path: Path) -> tuple[int, int]:
    """(N, |O|) of an all-numeric file whose only quoted value per row is the label: a cheap scan of the text,
    so that all 200 downsampled files are checked quickly (the slow test below parses every one)."""
    text = path.read_bytes()
    body = text[re.search(rb"(?im)^@data\s*$", text).end():]
    rows = [r for r in body.split(b"\n") if r.strip() and not r.startswith(b"%")]
    yes = [r.count(b"'yes'") for r in rows]
    assert all(y + r.count(b"'no'") == 1 and r.count(b"'") == 2 for y, r in zip(yes, rows, strict=True)), path
    return len(rows), sum(yes)


def _full_variant(dami: Path, base: str) -> Path:
    """The published full (not downsampled) variant of a semantic dataset: Base_withoutdupl[_norm]_PP."""
    cands = sorted(p for p in (dami / base).glob(f"{base}_withoutdupl*_[0-9][0-9].arff"))
    assert cands, base
    return cands[-1]


def test_every_downsampled_file_follows_the_rate_rule(dami):
    files = sorted(p for p in dami.glob("*/*.arff") if _DOWN.match(p.name))
    assert len(files) == 200
    inliers: dict[str, int] = {}
    for p in files:
        m = _DOWN.match(p.name)
        n, o = _count(p)
        base = m["base"]
        if base not in inliers:
            n_full, o_full = _count(_full_variant(dami, base))
            inliers[base] = n_full - o_full
        assert n - o == inliers[base], f"{p.name}: not all inliers of the full variant kept"
        assert o == n_outliers_for_rate(inliers[base], int(m["pct"]) / 100), p.name
    assert inliers["Annthyroid"] == 6595


def test_prepare_reproduces_downsampled_sizes(dami):
    ds = prepare(load(dami, "Annthyroid_07"), dedup=True)[0]
    for pct, expected in ((0.02, (6729, 134)), (0.05, (6942, 347))):
        out = prepare(ds, rate=pct, repeats=2, normalization="minmax", seed=0)
        assert [(o.n_objects, o.n_outliers) for o in out] == [expected] * 2
        assert out[0].name == f"Annthyroid_withoutdupl_norm_{round(pct * 100):02d}_v01"
    with pytest.raises(ValueError, match="needs 1648 outliers for 6595 inliers"):
        prepare(ds, rate=0.20)


def test_fixed_count_downsampled_files(dami):
    """Literature datasets are downsampled to a fixed number of outliers; every draw has the same (N, |O|)."""
    for base, expected in {"PenDigits": (9868, 20), "Shuttle": (1013, 13), "WBC": (223, 10), "WDBC": (367, 10),
                           "Waveform": (3443, 100)}.items():
        for v in range(1, 11):
            assert _count(dami / base / f"{base}_withoutdupl_norm_v{v:02d}.arff") == expected


def _rebuild(full: Dataset, published: Dataset) -> Dataset:
    kept = published.ids[published.y]
    return normalize(downsample_outliers(full, outlier_ids=kept))


@pytest.mark.parametrize("name", ["Annthyroid_withoutdupl_norm_02_v01", "Wilt_withoutdupl_norm_02_v07",
                                  "HeartDisease_withoutdupl_norm_20_v03", "Parkinson_withoutdupl_norm_05_v10"])
def test_downsampled_file_rebuilt_from_its_outlier_ids(dami, name):
    """Given which outliers a published draw kept (its seed is unknown), downsampling then normalising with the
    min/max of the downsampled data regenerates the file exactly."""
    base = parse_variant_name(name).base
    full = prepare(load_dataset(_full_variant(dami, base)))[0]
    if base in ("Annthyroid", "Wilt"):
        full = prepare(load(dami, {"Annthyroid": "Annthyroid_07", "Wilt": "Wilt_05"}[base]), dedup=True)[0]
    pub = load(dami, name)
    assert_same_multiset(_rebuild(full, pub), pub)


@pytest.mark.slow
def test_every_downsampled_file_rebuilt_from_its_outlier_ids(dami):
    fulls: dict[str, object] = {}  # each base dataset's full file is read once, not once per downsampled file
    for p in sorted(p for p in dami.glob("*/*.arff") if _DOWN.match(p.name)):
        base = _DOWN.match(p.name)["base"]
        if base not in fulls:
            fulls[base] = load_dataset(_full_variant(dami, base))
        full = fulls[base]
        pub = load_dataset(p)
        assert_same_multiset(_rebuild(full, pub), pub)


# --- where the published files disagree with their description -------------------------------------------
def test_pendigits_norm_files_are_not_normalised(dami):
    for v in (1, 5, 10):
        pub = load(dami, f"PenDigits_withoutdupl_norm_v{v:02d}")
        assert pub.X.max() == 100 and pub.X.min() == 0       # raw 0..100 integers despite "norm"
        ours = normalize(pub)
        assert ours.X.max() == 1 and np.array_equal(ours.X, pub.X / 100)


@pytest.mark.parametrize(("name", "ids", "removed_outliers"), [("Glass_withoutdupl_norm", [166], 0),
                                                               ("Ionosphere_withoutdupl_norm", [249], 1)])
def test_withoutdupl_files_that_still_repeat_a_vector(dami, name, ids, removed_outliers):
    pub = load(dami, name)
    assert pub.n_duplicates() == 1                        # "withoutdupl", yet one vector repeats
    ours = remove_duplicates(pub)                           # odeval follows the description
    res = ours.provenance["steps"][-1]["result"]
    assert res["removed_objects"]["ids"] == ids and res["removed_outliers"] == removed_outliers
    assert res["n_label_conflicts"] == 0 and ours.n_duplicates() == 0
