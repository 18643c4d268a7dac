"""The benchmark catalogue: which datasets exist, what they mean, and where their files are.

Three collections are registered (see ``docs/datasets.md``, section "Catalogue"):

- ``campos`` — the collection of Campos et al. (2016) ("DAMI"), ARFF, one folder per base dataset under
  ``<data dir>/dami/``, file names encoding the preparation (:func:`parse_variant_name`);
- ``odds`` — ODDS (Rayana 2016), ``<data dir>/odds/*.mat``;
- ``adbench`` — ADBench "Classical" (Han et al. 2022), ``<data dir>/adbench/*.npz``.

A *variant* is one file: one base dataset prepared one way (``Annthyroid_withoutdupl_norm_05_v03``: base
Annthyroid, duplicates removed, normalised, outliers downsampled to 5 %, draw 3). :func:`select` filters the
variants present in a data directory; :func:`resolve` turns catalogue names, globs or paths into variants;
:func:`vendored` lists the small datasets shipped with odeval, used when no data directory is available.

The data directory is, in this order: the ``data_dir`` argument (``--data-dir``), the ``ODEVAL_DATA``
environment variable, ``../shared/datasets`` relative to the current directory, ``../shared/datasets``
relative to the odeval source tree. See :func:`resolve_data_dir`.

References
----------
.. [1] G. O. Campos et al. "On the evaluation of unsupervised outlier detection: measures, datasets, and an
   empirical study." Data Mining and Knowledge Discovery 30(4):891–927, 2016. §4 and Table 2.
.. [2] S. Rayana. "ODDS Library." Stony Brook University, 2016. https://odds.cs.stonybrook.edu
.. [3] S. Han, X. Hu, H. Huang, M. Jiang, Y. Zhao. "ADBench: Anomaly Detection Benchmark." NeurIPS 2022.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from odeval.data.dataset import Dataset

__all__ = [
    "BASES",
    "BaseDataset",
    "CatalogueError",
    "Variant",
    "VariantName",
    "bases",
    "format_variant_name",
    "get",
    "parse_variant_name",
    "presence",
    "resolve",
    "resolve_data_dir",
    "scan",
    "select",
    "study_refs",
    "variant_from_path",
    "vendored",
    "vendored_dir",
]

ENV_VAR = "ODEVAL_DATA"
DATA_EXTENSIONS = (".arff", ".mat", ".npz", ".csv")
CAMPOS_CITATION = (
    "G. O. Campos, A. Zimek, J. Sander, R. J. G. B. Campello, B. Micenková, E. Schubert, I. Assent, "
    "M. E. Houle. On the evaluation of unsupervised outlier detection: measures, datasets, and an empirical "
    "study. Data Mining and Knowledge Discovery 30(4):891-927, 2016. doi:10.1007/s10618-015-0444-8"
)
ODDS_CITATION = "S. Rayana. ODDS Library. Stony Brook University, Department of Computer Sciences, 2016."
ADBENCH_CITATION = ("S. Han, X. Hu, H. Huang, M. Jiang, Y. Zhao. ADBench: Anomaly Detection Benchmark. "
                    "NeurIPS 2022 (Datasets and Benchmarks).")
UCI = "UCI Machine Learning Repository"


class CatalogueError(LookupError, ValueError):
    """A dataset name, filter or path does not resolve to any file; the message says what is missing.

    A :class:`ValueError` too, so that callers validating user input (study files) catch it with the rest."""


# --- variant names -----------------------------------------------------------------------------------------
_CAT_TOKENS = ("original", "catremoved", "1ofn", "idf")
_PCT = re.compile(r"^\d{2}(\.\d+)?$")
_VERSION = re.compile(r"^v(\d{2,})$")


@dataclass(frozen=True)
class VariantName:
    """The parts of a variant name (see :func:`parse_variant_name`)."""

    base: str
    deduplicated: bool = False
    normalized: bool = False
    categorical: str | None = None
    outlier_pct: int | float | None = None
    version: int | None = None

    @property
    def downsampled(self) -> bool:
        """A draw number is present: the outliers were downsampled (v01..v10)."""
        return self.version is not None


def parse_variant_name(name: str) -> VariantName | None:
    """Split a Campos-collection variant name into base and preparation flags.

    ``Base[_withoutdupl][_norm][_original|_catremoved|_1ofn|_idf][_PP][_vNN]``, tokens in this order, where
    ``PP`` is the outlier percentage (two digits) and ``vNN`` the downsampling draw. A name without
    underscore is a base without flags. A file extension is ignored.

    Returns
    -------
    VariantName or None
        None when the name does not follow the scheme (e.g. ``"1_ALOI"``, ``"my_data"``).

    Examples
    --------
    >>> parse_variant_name("Annthyroid_withoutdupl_norm_05_v03").outlier_pct
    5
    >>> parse_variant_name("Lymphography_withoutdupl_norm_idf").categorical
    'idf'
    """
    stem = Path(name).stem if name.lower().endswith(DATA_EXTENSIONS) else name
    parts = stem.split("_")
    if not parts[0]:
        return None
    flags: dict[str, Any] = {"base": parts[0]}
    order = 0  # tokens must come in the scheme's order
    for tok in parts[1:]:
        if tok == "withoutdupl" and order < 1:
            flags["deduplicated"], order = True, 1
        elif tok == "norm" and order < 2:
            flags["normalized"], order = True, 2
        elif tok in _CAT_TOKENS and order < 3:
            flags["categorical"], order = tok, 3
        elif _PCT.match(tok) and order < 4:
            v = float(tok)
            flags["outlier_pct"], order = (int(v) if v.is_integer() else v), 4
        elif (m := _VERSION.match(tok)) and order < 5:
            flags["version"], order = int(m.group(1)), 5
        else:
            return None
    return VariantName(**flags)


def format_variant_name(base: str, *, deduplicated: bool = False, normalized: bool = False,
                        categorical: str | None = None, outlier_pct: float | None = None,
                        version: int | None = None) -> str:
    """The inverse of :func:`parse_variant_name`: ``format_variant_name("WBC", deduplicated=True,
    normalized=True, version=1) == "WBC_withoutdupl_norm_v01"``."""
    parts = [base]
    if deduplicated:
        parts.append("withoutdupl")
    if normalized:
        parts.append("norm")
    if categorical:
        if categorical not in _CAT_TOKENS:
            raise ValueError(f"categorical must be one of {_CAT_TOKENS}, got {categorical!r}")
        parts.append(categorical)
    if outlier_pct is not None:
        p = float(outlier_pct)
        parts.append(f"{int(p):02d}" if p.is_integer() else f"{p:05.2f}".rstrip("0"))
    if version is not None:
        parts.append(f"v{int(version):02d}")
    return "_".join(parts)


# --- the registry ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BaseDataset:
    """One base dataset of a collection.

    ``n_objects`` / ``n_outliers`` / ``n_attributes`` describe the full variant (before downsampling; for
    the Campos collection with duplicates, ``n_objects_dedup`` / ``n_outliers_dedup`` without). ``files``
    lists the variant names this collection holds for the base (as distributed in the shared copy).
    """

    name: str
    collection: str
    folder: str
    source: str
    semantics: str
    n_objects: int
    n_outliers: int
    n_attributes: int
    citation: str
    kind: str = ""
    n_objects_dedup: int | None = None
    n_outliers_dedup: int | None = None
    files: tuple[str, ...] = ()
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["files"] = list(self.files)
        return d


def _campos_files(base: str, full: Sequence[str] = (), down: Sequence[int] = (), versions: bool = False,
                  flags: str = "withoutdupl_norm") -> tuple[str, ...]:
    names = [f"{base}_{f}" if f else base for f in full]
    for pct in down:
        names += [f"{base}_{flags}_{pct:02d}_v{v:02d}" for v in range(1, 11)]
    if versions:
        names += [f"{base}_{flags}_v{v:02d}" for v in range(1, 11)]
    return tuple(names)


def _campos(name: str, source: str, semantics: str, n: int, o: int, d: int, kind: str, files: tuple[str, ...],
            n_dedup: int | None = None, o_dedup: int | None = None, notes: str = "") -> BaseDataset:
    return BaseDataset(name=name, collection="campos", folder=f"dami/{name}", source=source, semantics=semantics,
                       n_objects=n, n_outliers=o, n_attributes=d, citation=CAMPOS_CITATION, kind=kind,
                       n_objects_dedup=n if n_dedup is None else n_dedup,
                       n_outliers_dedup=o if o_dedup is None else o_dedup, files=files, notes=notes)


_CAMPOS = [
    _campos("Annthyroid", f"{UCI}: Thyroid Disease (annthyroid)", "healthy patients are inliers; the two "
            "disease classes (hyperfunction, subnormal functioning) are outliers", 7200, 534, 21, "semantic",
            _campos_files("Annthyroid", ["07", "withoutdupl_norm_07"], [2, 5]), 7129, 534,
            notes="the file without 'norm' is already within [0, 1]"),
    _campos("Arrhythmia", f"{UCI}: Arrhythmia", "healthy people are inliers; patients with any type of cardiac "
            "arrhythmia are outliers", 450, 206, 259, "semantic",
            _campos_files("Arrhythmia", ["withoutdupl_norm_46"], [2, 5, 10, 20])),
    _campos("Glass", f"{UCI}: Glass Identification", "class 6 (tableware) is the outlier class; the other "
            "glass types are inliers", 214, 9, 7, "literature", _campos_files("Glass", ["withoutdupl_norm"]),
            notes="the published 'withoutdupl' file still repeats one feature vector"),
    _campos("HeartDisease", f"{UCI}: Statlog (Heart)", "healthy people are inliers; patients with heart "
            "disease are outliers", 270, 120, 13, "semantic",
            _campos_files("HeartDisease", ["withoutdupl_44", "withoutdupl_norm_44"], [2, 5, 10, 20])),
    _campos("Hepatitis", f"{UCI}: Hepatitis", "patients who survived are inliers; patients who died are "
            "outliers", 80, 13, 19, "semantic", _campos_files("Hepatitis", ["withoutdupl_norm_16"], [5, 10])),
    _campos("Ionosphere", f"{UCI}: Ionosphere", "'good' radar returns are inliers, 'bad' ones outliers", 351,
            126, 32, "literature", _campos_files("Ionosphere", ["withoutdupl_norm"]),
            notes="the published 'withoutdupl' file still repeats one feature vector"),
    _campos("Lymphography", f"{UCI}: Lymphography", "classes 1 (normal find) and 4 (fibrosis) are outliers; "
            "metastases and malign lymph are inliers", 148, 6, 3, "literature",
            ("Lymphography_original", "Lymphography_withoutdupl_catremoved", "Lymphography_withoutdupl_1ofn",
             "Lymphography_withoutdupl_idf", "Lymphography_withoutdupl_norm_catremoved",
             "Lymphography_withoutdupl_norm_1ofn", "Lymphography_withoutdupl_norm_idf"),
            notes="15 of 18 attributes are categorical: n_attributes is 3 with them removed, 47 with 1-of-n, "
                  "18 with IDF"),
    _campos("Parkinson", f"{UCI}: Parkinsons", "healthy people are inliers; patients with Parkinson's disease "
            "are outliers", 195, 147, 22, "semantic",
            _campos_files("Parkinson", ["withoutdupl_norm_75"], [5, 10, 20])),
    _campos("PenDigits", f"{UCI}: Pen-Based Recognition of Handwritten Digits", "digit 4 is the outlier class, "
            "downsampled to 20 objects (10 draws); the other digits are inliers", 9868, 20, 16, "literature",
            _campos_files("PenDigits", versions=True),
            notes="the published 'norm' files hold the raw 0..100 values (not normalised)"),
    _campos("Pima", f"{UCI}: Pima Indians Diabetes", "healthy people are inliers; patients with diabetes are "
            "outliers", 768, 268, 8, "semantic", _campos_files("Pima", ["withoutdupl_norm_35"], [2, 5, 10, 20])),
    _campos("Shuttle", f"{UCI}: Statlog (Shuttle)", "class 1 ('Rad Flow') objects are inliers (1000 sampled); "
            "13 objects sampled from the other classes are the outliers (10 draws; see Campos et al. 2016, §4 for "
            "the exact class selection)", 1013, 13, 9, "literature",
            ("Shuttle_withoutdupl_v01", *_campos_files("Shuttle", versions=True))),
    _campos("Waveform", f"{UCI}: Waveform Database Generator (Version 1)", "class 0 is the outlier class, "
            "downsampled to 100 objects (10 draws); classes 1 and 2 are inliers", 3443, 100, 21, "literature",
            _campos_files("Waveform", versions=True)),
    _campos("WBC", f"{UCI}: Breast Cancer Wisconsin (Original)", "benign tumours are inliers; malignant ones "
            "are outliers, downsampled to 10 (10 draws)", 454, 10, 9, "literature",
            ("WBC_v01", "WBC_withoutdupl_v01", *_campos_files("WBC", versions=True)), 223, 10,
            notes="WBC_v01 and WBC_withoutdupl_v01 are independent draws: their outliers differ"),
    _campos("WDBC", f"{UCI}: Breast Cancer Wisconsin (Diagnostic)", "benign tumours are inliers; malignant ones "
            "are outliers, downsampled to 10 (10 draws)", 367, 10, 30, "literature",
            _campos_files("WDBC", versions=True)),
    _campos("Wilt", f"{UCI}: Wilt", "healthy land cover is inliers; diseased trees are outliers", 4839, 261, 5,
            "semantic", _campos_files("Wilt", ["05", "withoutdupl_norm_05"], [2]), 4819, 257),
]

_ODDS = [  # name, n, outliers, d (as in the shared copy)
    ("annthyroid", 7200, 534, 6), ("arrhythmia", 452, 66, 274), ("breastw", 683, 239, 9),
    ("cardio", 1831, 176, 21), ("glass", 214, 9, 9), ("ionosphere", 351, 126, 33), ("letter", 1600, 100, 32),
    ("lympho", 148, 6, 18), ("mammography", 11183, 260, 6), ("mnist", 7603, 700, 100), ("musk", 3062, 97, 166),
    ("optdigits", 5216, 150, 64), ("pendigits", 6870, 156, 16), ("pima", 768, 268, 8),
    ("satellite", 6435, 2036, 36), ("satimage-2", 5803, 71, 36), ("shuttle", 49097, 3511, 9),
    ("smtp", 95156, 30, 3), ("vertebral", 240, 30, 6), ("vowels", 1456, 50, 12), ("wbc", 378, 21, 30),
]
_ADBENCH = [  # file stem, n, outliers, d
    ("1_ALOI", 49534, 1508, 27), ("2_annthyroid", 7200, 534, 6), ("18_Ionosphere", 351, 126, 32),
    ("28_pendigits", 6870, 156, 16), ("29_Pima", 768, 268, 8), ("32_shuttle", 49097, 3511, 9),
    ("34_smtp", 95156, 30, 3), ("44_Wilt", 4819, 257, 5),
]

_ONE_FILE_COLLECTIONS = (  # collection, its label name, source, citation, table, notes per file stem
    ("odds", "ODDS", "ODDS library, {}.mat", ODDS_CITATION, _ODDS, {"smtp": "MATLAB v7.3 (HDF5): needs h5py"}),
    ("adbench", "ADBench", "ADBench Classical, {}.npz", ADBENCH_CITATION, _ADBENCH,
     {"1_ALOI": "the without-duplicates, normalised ALOI of the Campos collection"}),
)

BASES: dict[str, BaseDataset] = {b.name: b for b in _CAMPOS}
for _coll, _label, _source, _citation, _table, _notes in _ONE_FILE_COLLECTIONS:
    for _n, _N, _O, _d in _table:
        BASES[f"{_coll}/{_n}"] = BaseDataset(
            name=f"{_coll}/{_n}", collection=_coll, folder=_coll, source=_source.format(_n),
            semantics=f"outlier labels as defined by {_label} (y = 1)", n_objects=_N, n_outliers=_O,
            n_attributes=_d, citation=_citation, kind=_coll, files=(_n,), notes=_notes.get(_n, ""))
del _coll, _label, _source, _citation, _table, _notes, _n, _N, _O, _d

_CAMPOS_BY_LOWER = {b.lower(): b for b in BASES if "/" not in b}


def bases(collection: str | None = None) -> list[BaseDataset]:
    """The registered base datasets, optionally of one collection (``"campos"``, ``"odds"``, ``"adbench"``)."""
    return [b for b in BASES.values() if collection is None or b.collection == collection]


# --- variants ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    """One dataset file: a base dataset prepared one way.

    ``path`` is the absolute file path (a str). Flags are None where the collection does not say (ODDS,
    ADBench, unknown files). The attributes ``name``, ``path``, ``base_dataset``, ``normalized``,
    ``deduplicated``, ``outlier_pct``, ``version``, ``extra`` match the study runner's dataset references.
    """

    name: str
    path: str
    base: str
    collection: str
    format: str
    deduplicated: bool | None = None
    normalized: bool | None = None
    categorical: str | None = None
    outlier_pct: int | float | None = None
    version: int | None = None
    downsampled: bool | None = None
    vendored: bool = False

    @property
    def base_dataset(self) -> str:
        """The base dataset's name (the ``runs.base_dataset`` column of the results store)."""
        return self.base

    @property
    def extra(self) -> dict[str, Any]:
        """Facts beyond the results store's columns: collection, categorical treatment, vendored."""
        return {"collection": self.collection, "categorical": self.categorical, "downsampled": self.downsampled,
                "vendored": self.vendored}

    @property
    def variant(self) -> str | None:
        """The preparation part of the name: ``"withoutdupl_norm"``, ``"withoutdupl_norm_1ofn"``, ``"raw"``
        (no token); None when the preparation is not known (ODDS, ADBench, other files)."""
        if self.deduplicated is None and self.normalized is None:
            return None
        tokens = [t for t, on in (("withoutdupl", self.deduplicated), ("norm", self.normalized)) if on]
        if self.categorical:
            tokens.append(self.categorical)
        return "_".join(tokens) or "raw"

    @property
    def info(self) -> BaseDataset | None:
        """The registry entry of the base dataset, if registered."""
        key = self.base if self.collection == "campos" else f"{self.collection}/{self.base}"
        return BASES.get(key)

    def load(self, **options: Any) -> Dataset:
        """Load the file with :func:`odeval.data.load_dataset`."""
        from odeval.data.loaders import load_dataset

        return load_dataset(self.path, **options)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["variant"] = self.variant
        return d

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Variant({self.name!r}, {self.collection}, {self.path!r})"


def variant_from_path(path: str | os.PathLike[str], *, collection: str | None = None,
                      vendored: bool = False) -> Variant:
    """Describe one dataset file; the collection is guessed from its folder (``dami``/``odds``/``adbench``)."""
    p = Path(path).resolve()
    fmt = p.suffix.lower().lstrip(".")
    parents = [q.name.lower() for q in p.parents]
    if collection is None:
        collection = next((c for c, folder in (("campos", "dami"), ("odds", "odds"), ("adbench", "adbench"))
                           if folder in parents[:2]), "other")
    stem = p.stem
    f = parse_variant_name(stem) if collection in ("campos", "other") else None
    if f is not None and collection == "other" and f.base.lower() in _CAMPOS_BY_LOWER:
        collection = "campos"
    if f is not None and (collection == "campos" or f.base != stem):
        return Variant(name=stem, path=str(p), base=f.base, collection=collection, format=fmt,
                       deduplicated=f.deduplicated, normalized=f.normalized, categorical=f.categorical,
                       outlier_pct=f.outlier_pct, version=f.version, downsampled=f.downsampled, vendored=vendored)
    return Variant(name=stem, path=str(p), base=stem, collection=collection, format=fmt, vendored=vendored)


def _is_data_file(p: Path) -> bool:
    return p.is_file() and p.suffix.lower() in DATA_EXTENSIONS


def scan(data_dir: str | os.PathLike[str], *, vendored: bool = False) -> list[Variant]:
    """All dataset files of the known layout under ``data_dir`` (``dami/*/*.arff``, ``odds/*.mat``,
    ``adbench/*.npz``), sorted by collection and name."""
    root = Path(data_dir)
    if not root.is_dir():
        raise CatalogueError(f"data directory {root} does not exist")
    found: list[Variant] = []
    for pattern, coll in (("dami/*/*.arff", "campos"), ("odds/*.mat", "odds"), ("adbench/*.npz", "adbench")):
        found += [variant_from_path(p, collection=coll, vendored=vendored) for p in root.glob(pattern)
                  if _is_data_file(p)]
    order = {"campos": 0, "odds": 1, "adbench": 2}
    return sorted(found, key=lambda v: (order.get(v.collection, 3), v.base.lower(), v.name))


# --- data directory ----------------------------------------------------------------------------------------
def _repo_root() -> Path | None:
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "src" / "odeval").is_dir():
            return parent
    return None


def resolve_data_dir(data_dir: str | os.PathLike[str] | None = None, *, required: bool = False) -> Path | None:
    """Find the data directory.

    Order: ``data_dir`` if given (must exist), ``$ODEVAL_DATA`` (must exist), ``./../shared/datasets``,
    ``<odeval source tree>/../shared/datasets``. Returns None when none exists (then :func:`select` falls
    back to :func:`vendored`), or raises :class:`CatalogueError` if ``required``.
    """
    if data_dir is not None:
        p = Path(data_dir).expanduser()
        if not p.is_dir():
            raise CatalogueError(f"data directory {p} (given as data_dir / --data-dir) does not exist")
        return p
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env).expanduser()
        if not p.is_dir():
            raise CatalogueError(f"data directory {p} (from ${ENV_VAR}) does not exist")
        return p
    candidates = [Path.cwd().parent / "shared" / "datasets"]
    repo = _repo_root()
    if repo is not None:
        candidates.append(repo.parent / "shared" / "datasets")
    for p in candidates:
        if p.is_dir():
            return p
    if required:
        tried = ", ".join(str(c) for c in candidates)
        raise CatalogueError(f"no data directory found: pass --data-dir / data_dir or set ${ENV_VAR} "
                             f"(tried {tried})")
    return None


def vendored_dir() -> Path:
    """The folder of the datasets shipped with odeval (same layout as the data directory)."""
    return Path(__file__).resolve().parent / "vendored"


def vendored() -> list[Variant]:
    """The small real datasets shipped with odeval (see ``vendored/PROVENANCE.md``)."""
    d = vendored_dir()
    return scan(d, vendored=True) if d.is_dir() else []


# --- selection ---------------------------------------------------------------------------------------------
def _as_list(v: Any) -> list[Any] | None:
    if v is None:
        return None
    if isinstance(v, str | int | float) or not isinstance(v, Iterable):
        return [v]
    return list(v)


def _pct_value(p: Any) -> float:
    v = float(p)
    return v * 100 if 0 < v < 1 else v


def _available(data_dir: str | os.PathLike[str] | None, fallback_vendored: bool) -> tuple[list[Variant], str]:
    root = resolve_data_dir(data_dir)
    if root is not None:
        return scan(root), str(root)
    if fallback_vendored:
        return vendored(), f"the vendored datasets ({vendored_dir()}; no data directory found)"
    raise CatalogueError(f"no data directory found (pass data_dir / --data-dir or set ${ENV_VAR})")


def _filter(variants: Iterable[Variant], *, base: Any = None, variant: Any = None, pct: Any = None,
            version: Any = None, collection: Any = None, normalized: bool | None = None,
            deduplicated: bool | None = None, categorical: Any = None, downsampled: bool | None = None,
            name: Any = None) -> list[Variant]:
    bases_ = [str(b).lower() for b in _as_list(base) or []]
    variants_ = [("" if str(v).lower() == "raw" else str(v).lower()) for v in _as_list(variant) or []]
    pcts = [_pct_value(p) for p in _as_list(pct) or []]
    versions = [int(v) for v in _as_list(version) or []]
    colls = [str(c).lower() for c in _as_list(collection) or []]
    cats = [str(c).lower() for c in _as_list(categorical) or []]
    names = [str(n).lower() for n in _as_list(name) or []]
    out = []
    for v in variants:
        if bases_ and not any(fnmatch.fnmatchcase(v.base.lower(), b) for b in bases_):
            continue
        if variants_ and (v.variant is None or ("" if v.variant == "raw" else v.variant.lower()) not in variants_):
            continue
        if pcts and (v.outlier_pct is None or not any(abs(float(v.outlier_pct) - p) < 1e-9 for p in pcts)):
            continue
        if versions and v.version not in versions:
            continue
        if colls and v.collection not in colls:
            continue
        if normalized is not None and v.normalized is not normalized:
            continue
        if deduplicated is not None and v.deduplicated is not deduplicated:
            continue
        if cats and (v.categorical or "").lower() not in cats:
            continue
        if downsampled is not None and v.downsampled is not downsampled:
            continue
        if names and not any(fnmatch.fnmatchcase(v.name.lower(), n) for n in names):
            continue
        out.append(v)
    return out


def select(data_dir: str | os.PathLike[str] | None = None, *, base: str | Sequence[str] | None = None,
           variant: str | Sequence[str] | None = None, pct: float | Sequence[float] | None = None,
           version: int | Sequence[int] | None = None, collection: str | Sequence[str] | None = None,
           normalized: bool | None = None, deduplicated: bool | None = None,
           categorical: str | Sequence[str] | None = None, downsampled: bool | None = None,
           name: str | Sequence[str] | None = None, fallback_vendored: bool = True) -> list[Variant]:
    """The variants present in the data directory that pass every given filter.

    Parameters
    ----------
    data_dir : path, optional
        See :func:`resolve_data_dir`. When no data directory exists and ``fallback_vendored`` is true, the
        vendored datasets are searched instead.
    base : str or sequence of str
        Base dataset names or globs, case-insensitive (``"Annthyroid"``, ``"W*"``).
    variant : str or sequence of str
        Preparation flags exactly: ``"withoutdupl_norm"``, ``"withoutdupl"``, ``"withoutdupl_norm_idf"``,
        ``"raw"`` (none).
    pct : number or sequence
        Outlier percentage (5 or 0.05 both mean 5 %).
    version : int or sequence of int
        Downsampling draw (1..10).
    collection : {"campos", "odds", "adbench"} or sequence
    normalized, deduplicated, downsampled : bool, optional
    categorical : {"original", "catremoved", "1ofn", "idf"} or sequence
    name : str or sequence
        Variant names or globs (``"Pima_*_05_v0[1-3]"``).

    Returns
    -------
    list of Variant
        Sorted by collection, base and name; empty if nothing matches (use :func:`resolve` to get an error
        instead).

    Examples
    --------
    >>> select(base="Annthyroid", variant="withoutdupl_norm", pct=5, version=3)  # doctest: +SKIP
    [Variant(name='Annthyroid_withoutdupl_norm_05_v03', ...)]
    """
    found, _ = _available(data_dir, fallback_vendored)
    return _filter(found, base=base, variant=variant, pct=pct, version=version, collection=collection,
                   normalized=normalized, deduplicated=deduplicated, categorical=categorical,
                   downsampled=downsampled, name=name)


def _missing_message(spec: str, found: list[Variant], where: str) -> str:
    p = parse_variant_name(spec)
    key = (p.base if p is not None else spec).lower()
    if key in _CAMPOS_BY_LOWER:
        b = BASES[_CAMPOS_BY_LOWER[key]]
        present = [v.name for v in found if v.base == b.name]
        expected = f"{b.folder}/{spec}.arff"
        if not present:
            return (f"{spec!r}: base dataset {b.name} is in the catalogue but none of its files is in {where} "
                    f"(expected e.g. {expected})")
        shown = ", ".join(present[:8]) + (f" and {len(present) - 8} more" if len(present) > 8 else "")
        return f"{spec!r} is not in {where} (expected {expected}); present variants of {b.name}: {shown}"
    known = sorted({v.base for v in found})
    close = [k for k in known if k.lower().startswith(key[:3])] or known[:15]
    return f"{spec!r} matches no dataset in {where}; known bases include: {', '.join(close)}"


def get(name: str, data_dir: str | os.PathLike[str] | None = None, *, fallback_vendored: bool = True) -> Variant:
    """The variant with exactly this name (case-insensitive), e.g. ``"Annthyroid_withoutdupl_norm_05_v03"``
    or ``"odds/wbc"``; :class:`CatalogueError` saying what is present if it is missing."""
    found, where = _available(data_dir, fallback_vendored)
    key = name.lower()
    for v in found:
        if v.name.lower() == key or f"{v.collection}/{v.name}".lower() == key:
            return v
    raise CatalogueError(_missing_message(name, found, where))


def resolve(specs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
            data_dir: str | os.PathLike[str] | None = None, *, fallback_vendored: bool = True,
            **filters: Any) -> list[Variant]:
    """Turn dataset specifications into variants; the entry point for study configurations.

    Each spec is one of:

    - a path to a file (any supported format) or a directory (all its dataset files, recursively);
    - a glob over paths (contains ``/`` and a wildcard): ``"../data/*.arff"``;
    - a variant name or a glob over names: ``"WBC_withoutdupl_norm_v01"``, ``"Pima_withoutdupl_norm_05_v*"``,
      ``"odds/wbc"``;
    - a base dataset name: ``"Annthyroid"`` (all its variants) — narrow it with ``filters``.

    ``filters`` are those of :func:`select` (``variant``, ``pct``, ``version``, ...) and apply to every
    spec. Duplicates are removed, order is kept. A spec that matches nothing raises
    :class:`CatalogueError` naming the spec and what is present.
    """
    if isinstance(specs, str | os.PathLike):
        specs = [specs]
    out: list[Variant] = []
    seen: set[str] = set()
    catalogue: list[Variant] | None = None
    where = ""
    for spec in specs:
        s = os.fspath(spec)
        p = Path(s).expanduser()
        if p.is_file():
            matches = [variant_from_path(p)]
        elif p.is_dir():
            inner = scan(p) if any((p / d).is_dir() for d in ("dami", "odds", "adbench")) else []
            matches = inner or [variant_from_path(q) for q in sorted(p.rglob("*")) if _is_data_file(q)]
        elif ("/" in s or os.sep in s) and any(c in s for c in "*?[") and not s.startswith(("odds/", "adbench/")):
            import glob as _glob

            matches = [variant_from_path(q) for q in map(Path, sorted(_glob.glob(s, recursive=True)))
                       if _is_data_file(q)]
        else:
            if catalogue is None:
                catalogue, where = _available(data_dir, fallback_vendored)
            key = s.lower()
            matches = [v for v in catalogue if fnmatch.fnmatchcase(v.name.lower(), key)
                       or fnmatch.fnmatchcase(f"{v.collection}/{v.name}".lower(), key)]
            if not matches:
                matches = [v for v in catalogue if fnmatch.fnmatchcase(v.base.lower(), key)]
        if filters:
            matches = _filter(matches, **filters)
        if not matches:
            if catalogue is None:
                catalogue, where = _available(data_dir, fallback_vendored)
            suffix = f" with filters {filters}" if filters else ""
            raise CatalogueError(_missing_message(s, catalogue, where) + suffix)
        for v in matches:
            if v.path not in seen:
                seen.add(v.path)
                out.append(v)
    return out


def presence(data_dir: str | os.PathLike[str] | None = None, *, fallback_vendored: bool = True
             ) -> dict[str, Any]:
    """What of the catalogue is present: per registered base the present and missing variant names, plus
    files not in the registry. Used by ``odeval datasets list``.

    Returns ``{"where": str, "vendored": bool, "bases": [{"base": BaseDataset, "present": [...],
    "missing": [...]}, ...], "unregistered": [...]}``; with the vendored fallback only bases with a vendored
    file are listed."""
    found, where = _available(data_dir, fallback_vendored)
    by_base: dict[str, list[str]] = {}
    for v in found:
        key = v.base if v.collection == "campos" else f"{v.collection}/{v.base}"
        by_base.setdefault(key, []).append(v.name)
    vend = bool(found) and all(v.vendored for v in found)
    report: dict[str, Any] = {"where": where, "vendored": vend, "bases": [], "unregistered": []}
    for b in BASES.values():
        present = sorted(by_base.get(b.name, []))
        missing = [f for f in b.files if f not in present]
        if vend and not present:
            continue
        report["bases"].append({"base": b, "present": present, "missing": missing})
    registered = {f for b in BASES.values() for f in b.files}
    report["unregistered"] = [v.name for v in found if v.name not in registered]
    return report


_STUDY_KEYS = frozenset({"name", "base", "variant", "pct", "version", "collection", "normalized", "deduplicated",
                         "categorical", "downsampled", "data_dir"})


def study_refs(entry: dict[str, Any], *, base_dir: str | os.PathLike[str] | None = None,
               data_dir: str | os.PathLike[str] | None = None) -> list[Variant]:
    """The variants selected by one ``[[datasets]]`` table of a study file.

    Keys: ``name`` (names or globs, as in :func:`resolve`) and/or the filters of :func:`select` (``base``,
    ``variant``, ``pct``, ``version``, ``collection``, ``normalized``, ``deduplicated``, ``categorical``,
    ``downsampled``), and optionally ``data_dir`` (relative to ``base_dir``, the study file's folder).
    At least one of ``name`` / ``base`` / ``collection`` is required. Raises :class:`CatalogueError`
    (a ValueError) naming unknown keys or what is missing.

    Examples
    --------
    ``{"base": "WBC", "variant": "withoutdupl_norm", "version": [1, 2]}`` → WBC_withoutdupl_norm_v01, _v02.
    """
    unknown = sorted(set(entry) - _STUDY_KEYS)
    if unknown:
        raise CatalogueError(f"unknown key(s) {unknown} in a catalogue selection; allowed: {sorted(_STUDY_KEYS)}")
    if not ({"name", "base", "collection"} & set(entry)):
        raise CatalogueError("a catalogue selection needs 'name', 'base' or 'collection' (or use path / glob)")
    dd = entry.get("data_dir", data_dir)
    if dd is not None and base_dir is not None and not Path(dd).expanduser().is_absolute():
        dd = Path(base_dir) / dd
    filters = {k: v for k, v in entry.items() if k not in ("name", "data_dir")}
    if "name" in entry:
        names = entry["name"] if isinstance(entry["name"], list | tuple) else [entry["name"]]
        return resolve([str(n) for n in names], dd, **filters)
    found = select(dd, **filters)
    if not found:
        _, where = _available(dd, True)
        raise CatalogueError(f"no dataset in {where} matches {dict(sorted(filters.items()))}")
    return found
