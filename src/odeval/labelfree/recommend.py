"""From an unlabelled table to a recommendation: which detector, which k, how sure, and which rows.

:func:`recommend` is the library behind ``odeval select`` (docs/select.md). In order:

1. **Preparation** as the Campos et al. (2016, §4.1) pipeline (:mod:`odeval.data.prepare`): missing values refused
   or handled by the §4.1 rule, categorical attributes encoded, exact duplicates counted (removed only on request),
   attribute-wise min–max normalisation by default (a warning when scaling is off and attribute ranges differ by
   more than 10×).
2. **The candidate pool**: the twelve methods of Campos et al. × k, k = 1..100 capped at N − 1 (the rules of
   :func:`odeval.detectors.scoring.plan_ks`) and thinned to a geometric grid (always holding k = 10) where
   12 · |k| · N would exceed ``max_pool_values``; plus any registered or imported detector given in
   ``SelectSettings.methods``, spelled as a study's ``[[methods]]`` entry (:func:`parse_pool_methods`: a
   registered method over the pool's k at each grid point and seed, an imported estimator fitted once per grid
   point and seed); candidates named by :class:`odeval._key.ScoringKey` (:func:`odeval._key.distinct_names`:
   ``LOF-010``, ``IForest-n_estimators=100@0``).
3. **The selectors**: the consensus selectors of Ma et al. (2023, §3) and the ensembles (Kriegel et al. 2011;
   Rayana & Akoglu 2016), IREOS on a pruned set of candidates (Marques et al. 2020, §3.5.2;
   :mod:`odeval.labelfree.guarded`), the γ_max-guarded rule, and kNN with k = 10 as the reference.
4. **The recommendation**: the choice with the best measured record on the Campos collection among the candidate
   pickers (:mod:`odeval.labelfree.record`; today kNN k = 10, which no label-free selector beat there), the
   ensemble as the alternative; how strongly the selectors agree; how stable the picks are over seeded subsamples;
   warnings that apply to this table; what to expect, from the record.
5. **Which rows**: the recommended scoring unified into outlier probabilities (Kriegel et al. 2011,
   :func:`odeval.scaling.unify`), objects above 0.5 flagged; the top-n objects with the number of the strongest
   candidates that also rank each in their top-n.
6. Optionally, **a check against held-back labels** the selection never saw (ROC AUC, average precision, the
   pick's percentile among the candidates).

References
----------
G. O. Campos et al. On the evaluation of unsupervised outlier detection. DMKD 30(4), 2016, §4.1.
M. Q. Ma, Y. Zhao, X. Zhang, L. Akoglu. SIGKDD Explorations 25(1), 2023, §3.
H.-P. Kriegel, P. Kröger, E. Schubert, A. Zimek. Interpreting and unifying outlier scores. SDM 2011.
H. O. Marques, R. J. G. B. Campello, J. Sander, A. Zimek. ACM TKDD 14(4), 2020.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from odeval._key import ScoringKey, distinct_names
from odeval.data import Dataset
from odeval.detectors.campos import CAMPOS_METHODS
from odeval.labelfree.guarded import GuardedSettings, IreosPick, guarded_choice, pruned_ireos
from odeval.labelfree.record import best_by_record, campos_record, expectations

__all__ = ["CAMPOS_POOL", "CONSENSUS_SELECTORS", "POOL_METHOD_KEYS", "Pool", "PoolMethod", "Recommendation",
           "SelectSettings", "candidate_ks", "candidate_pool", "parse_pool_methods", "prepare_table", "recommend"]

#: The twelve methods of Campos et al. (2016) with the study parameters, as (name, params):
#: :data:`odeval.detectors.campos.CAMPOS_METHODS`.
CAMPOS_POOL: tuple[tuple[str, dict[str, Any]], ...] = tuple((m["name"], dict(m.get("params", {})))
                                                            for m in CAMPOS_METHODS)
#: Candidate-picking consensus selectors run by default (mc-kendall is left out: O(R² N log N)).
CONSENSUS_SELECTORS: tuple[str, ...] = ("mc-spearman", "mc-ndcg", "hits", "select")
#: Selectors that return a scoring instead of a candidate.
ENSEMBLE_SELECTORS: tuple[str, ...] = ("ensemble", "select-ensemble", "ensemble-rank")
REFERENCE = "default-knn10"

#: Progress callback: ``progress(stage, done, total)`` (total 0 when unknown).
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class SelectSettings:
    """Every parameter of :func:`recommend` (the CLI's options map onto these fields).

    Attributes
    ----------
    normalize : {"minmax", "zscore"} or None
        Attribute-wise scaling (Campos et al. 2016, §4.1); None keeps the values (a warning when ranges differ
        by more than ``range_ratio_warning``).
    missing : {"refuse", "drop"}
        Missing values: refuse the table, or the §4.1 rule (an attribute missing in ≥ ``max_missing_fraction``
        of the objects is dropped, else the objects missing it).
    max_missing_fraction : float
    categorical : {"onehot", "idf", "remove"}
        Encoding of nominal attributes (§4.1).
    dedup : bool
        Remove exact duplicates (first occurrence kept); they are always counted and reported.
    constant : {"refuse", "drop"}
        An attribute with one value: refuse the table (default), or drop it with a note.
    k_max : int
        Largest k of the pool (capped at N − 1).
    max_pool_values : int
        Bound on 12 · |k| · N (the pool's scores); above it the k grid becomes geometric.
    selectors : tuple of str
        Candidate-picking consensus selectors to run.
    ireos : bool
        Run IREOS on a pruned set and the guarded rule.
    guarded : GuardedSettings
    primary : str
        ``"record"``: recommend the choice with the best record on the collection among the pickers run; or a
        selector name whose choice is the recommendation.
    top_n : int
        Objects listed (and the n of the top-n agreement).
    resamples : int
        Seeded subsamples of the stability check (0: none).
    resample_fraction : float
        Fraction of the objects in each subsample, at most ``resample_max_objects``.
    resample_max_objects : int
    stability_selectors : tuple of str
        Consensus selectors rerun on each subsample (``select`` is left out by default: the slowest, and the lowest
        record of the four).
    methods : tuple of str or dict
        Detectors added to the pool, each spelled as a study's ``[[methods]]`` entry (:func:`parse_pool_methods`):
        a registered name (``"LOF"`` with other parameters, a plugin's detector), an import path
        (``"pyod.models.iforest:IForest"``), or a table / inline TOML table with ``name`` or ``estimator``,
        ``params``, ``grid`` and ``seeds`` (``{estimator = "pyod.models.iforest:IForest", grid = {n_estimators =
        [50, 100]}, seeds = 3}``). Checked when the settings are made: a bad entry is a one-line ``ValueError``.
    campos : bool
        Include the twelve Campos methods over k (False: the pool is ``methods`` alone).
    meta : bool
        Run the meta-learned selector (:mod:`odeval.labelfree.meta`); it makes the recommendation only where its
        held-out validation beat kNN k = 10 (:func:`odeval.labelfree.record.meta_validated`), else it is reported
        with that record.
    details : bool
        Also compute what the HTML page draws (``Recommendation.details``): the weighted Pearson similarity of a
        thinned set of candidates (Schubert et al. 2012) and a 2-D PCA projection of the prepared data.
    seed : int
    """

    normalize: Literal["minmax", "zscore"] | None = "minmax"
    missing: Literal["refuse", "drop"] = "refuse"
    max_missing_fraction: float = 0.10
    categorical: Literal["onehot", "idf", "remove"] = "onehot"
    dedup: bool = False
    constant: Literal["refuse", "drop"] = "refuse"
    k_max: int = 100
    max_pool_values: int = 30_000_000
    selectors: tuple[str, ...] = CONSENSUS_SELECTORS
    ireos: bool = True
    guarded: GuardedSettings = field(default_factory=GuardedSettings)
    primary: str = "record"
    top_n: int = 10
    resamples: int = 3
    resample_fraction: float = 0.5
    resample_max_objects: int = 20_000
    stability_selectors: tuple[str, ...] = ("mc-spearman", "mc-ndcg", "hits")
    methods: tuple[Any, ...] = ()
    campos: bool = True
    details: bool = False
    seed: int = 0
    meta: bool = True

    def __post_init__(self) -> None:
        if self.normalize not in ("minmax", "zscore", None):
            raise ValueError(f"normalize must be 'minmax', 'zscore' or None, got {self.normalize!r}")
        if self.missing not in ("refuse", "drop"):
            raise ValueError(f"missing must be 'refuse' or 'drop', got {self.missing!r}")
        if self.constant not in ("refuse", "drop"):
            raise ValueError(f"constant must be 'refuse' or 'drop', got {self.constant!r}")
        if self.categorical not in ("onehot", "idf", "remove"):
            raise ValueError(f"categorical must be 'onehot', 'idf' or 'remove', got {self.categorical!r}")
        for name in ("k_max", "top_n", "resample_max_objects", "max_pool_values"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if isinstance(self.resamples, bool) or not isinstance(self.resamples, int) or self.resamples < 0:
            raise ValueError(f"resamples must be a non-negative integer, got {self.resamples!r}")
        if not 0.0 < self.resample_fraction < 1.0:
            raise ValueError(f"resample_fraction must be in (0, 1), got {self.resample_fraction!r}")
        if isinstance(self.methods, str | dict) or not isinstance(self.methods, tuple | list):
            raise ValueError(f"methods must be a tuple of method entries, got {self.methods!r}")
        if not self.campos and not self.methods:
            raise ValueError("the pool is empty: campos is off and no methods are given")
        if self.methods:
            self.pool_methods()  # a bad entry fails now, in one line

    def pool_methods(self) -> tuple[PoolMethod, ...]:
        """The configurations of :attr:`methods` (:func:`parse_pool_methods`), each checked against the Campos pool
        (when :attr:`campos`) and the others for duplicates."""
        found = parse_pool_methods(self.methods)
        seen = {ScoringKey.make(name, params) for name, params in CAMPOS_POOL} if self.campos else set()
        for m in found:
            if m.key() in seen:
                raise ValueError(f"methods: {m.entry}: {m.key().name} is already in the pool")
            seen.add(m.key())
        return found


#: Fewest objects :func:`recommend` accepts (k ≥ 1 for every method, LDOF needs k ≥ 2, IREOS N ≥ 3).
MIN_OBJECTS = 5
#: Below this many objects a warning says the selection is noisy.
FEW_OBJECTS = 100
#: Dimensionality from which a warning says distances lose contrast.
HIGH_DIMENSION = 50
#: Fraction of exact duplicates from which a warning applies.
MANY_DUPLICATES = 0.05
#: Attribute-range ratio above which unscaled data gets a warning.
RANGE_RATIO = 10.0


# ----------------------------------------------------------------------------------------------- preparation
def prepare_table(ds: Dataset, settings: SelectSettings = SelectSettings()
                  ) -> tuple[Dataset, dict[str, Any], list[str], np.ndarray]:
    """Prepare ``ds`` as the Campos pipeline does (missing → duplicates → categorical → normalisation).

    Returns
    -------
    (Dataset, dict, list of str, ndarray of int64)
        The prepared dataset (numeric, no missing values; its ``ids`` those of ``ds``), a JSON-serialisable
        report (objects and attributes before/after, duplicates, dropped attributes, steps), warnings, and the
        rows of ``ds`` the prepared objects come from (missing values and ``dedup`` drop objects).

    Raises
    ------
    ValueError
        One line naming the dataset and the cause: no objects, fewer than :data:`MIN_OBJECTS`, missing values
        with ``missing="refuse"``, a constant attribute with ``constant="refuse"``, every attribute constant.
    """
    from odeval.data.prepare import encode_categorical, handle_missing, normalize, remove_duplicates

    name = ds.name
    original_ids = ds.ids
    ds = ds.with_changes(ids=np.arange(ds.n_objects))  # positions travel through the steps that drop rows
    warnings: list[str] = []
    report: dict[str, Any] = {"n_objects_in": ds.n_objects, "n_attributes_in": ds.n_attributes}
    if ds.n_objects == 0:
        raise ValueError(f"{name}: the table has no rows")
    if ds.n_attributes == 0:
        raise ValueError(f"{name}: the table has no attribute columns")
    if ds.n_objects < MIN_OBJECTS:
        raise ValueError(f"{name}: {ds.n_objects} object(s); model selection needs at least {MIN_OBJECTS}")
    if ds.n_missing:
        if settings.missing == "refuse":
            r, c = np.argwhere(np.isnan(ds.X))[0]
            raise ValueError(f"{name}: {ds.n_missing} missing value(s), first at row {r}, attribute "
                             f"{ds.attribute_names[c]!r}; drop them with --missing drop (the rule of Campos et al. "
                             "2016, §4.1) or fill them first")
        ds = handle_missing(ds, settings.max_missing_fraction)
        res = ds.provenance["steps"][-1]["result"]
        report["missing"] = {"dropped_attributes": [a["name"] for a in res["dropped_attributes"]],
                             "dropped_objects": int(res["dropped_objects"]["count"])}
    n_dup = ds.n_duplicates()
    report["duplicates"] = n_dup
    if settings.dedup and n_dup:
        ds = remove_duplicates(ds, on_conflict="first")
        report["duplicates_removed"] = n_dup
    if ds.nominal_columns:
        report["categorical"] = {"method": settings.categorical,
                                 "attributes": [ds.attribute_names[j] for j in ds.nominal_columns]}
        ds = encode_categorical(ds, settings.categorical)
    X = ds.X
    span = np.ptp(X, axis=0) if X.shape[0] else np.zeros(X.shape[1])
    const = np.flatnonzero(span == 0)
    if const.size == X.shape[1]:
        raise ValueError(f"{name}: every attribute is constant (all {ds.n_objects} objects are equal): nothing to "
                         "detect")
    if const.size:
        names = [ds.attribute_names[j] for j in const]
        if settings.constant == "refuse":
            raise ValueError(f"{name}: constant attribute(s) {', '.join(map(repr, names[:5]))}"
                             f"{' ...' if len(names) > 5 else ''}: they carry no information; drop them with "
                             "--drop-constant")
        keep = np.setdiff1d(np.arange(X.shape[1]), const)
        ds = ds.with_changes(X=X[:, keep], attribute_names=tuple(ds.attribute_names[j] for j in keep),
                             attribute_types=tuple(ds.attribute_types[j] for j in keep), categories={})
        report["constant_dropped"] = names
        span = span[keep]
    if ds.n_objects < MIN_OBJECTS:
        raise ValueError(f"{name}: {ds.n_objects} object(s); model selection needs at least {MIN_OBJECTS}")
    if settings.normalize:
        ds = normalize(ds, settings.normalize)
    else:
        ratio = float(span.max() / span.min())
        report["range_ratio"] = ratio
        if ratio > RANGE_RATIO:
            warnings.append(f"scaling is off and attribute ranges differ by {ratio:.3g}× (> {RANGE_RATIO:g}×): the "
                            "widest attributes dominate every distance; use --normalize minmax (the default)")
    report.update(n_objects=ds.n_objects, n_attributes=ds.n_attributes, normalize=settings.normalize,
                  steps=[s["step"] for s in ds.provenance.get("steps", [])])
    kept = np.asarray(ds.ids, dtype=np.int64)
    return ds.with_changes(ids=None if original_ids is None else np.asarray(original_ids)[kept]), report, warnings, kept


# ----------------------------------------------------------------------------------------------- more methods
#: The keys of an entry of :attr:`SelectSettings.methods`: those of a study's ``[[methods]]`` but ``k`` (the pool's
#: k apply to every kNN-family method: ``k_max``).
POOL_METHOD_KEYS = ("name", "estimator", "params", "grid", "seeds", "higher_is_outlier")


@dataclass(frozen=True)
class PoolMethod:
    """One configuration added to the pool: a registered detector (scored at the pool's k from the shared kNN
    graph) or an imported estimator (``estimator``: fitted on the table and scoring it, once).

    ``params`` are the fixed parameters, ``setting`` the grid point, ``seed`` the seed of a randomised detector
    (``seed`` of a registered one, ``random_state`` of an estimator); ``entry`` is the entry as given (errors)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    setting: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    estimator: str | None = None
    higher_is_outlier: bool | None = None
    entry: str = ""

    def key(self, k: int | None = None) -> ScoringKey:
        """The scoring key of this configuration (at ``k`` for a registered detector)."""
        return ScoringKey.make(self.name, self.params, setting=self.setting, k=k, seed=self.seed)

    def detector(self) -> Any:
        """The odeval detector of a registered method's configuration."""
        from odeval.detectors import get_detector

        extra = {} if self.seed is None else {"seed": self.seed}
        return get_detector(self.name, **self.params, **self.setting, **extra)

    def scores(self, X: np.ndarray) -> np.ndarray:
        """An estimator's scores of ``X`` after fitting on ``X`` (:func:`odeval.detectors.imported.fit_score`)."""
        from odeval.detectors.imported import fit_score, resolve_class

        return fit_score(resolve_class(self.estimator), {**self.params, **self.setting}, X,  # type: ignore[arg-type]
                         seed=self.seed, higher_is_outlier=self.higher_is_outlier, name=self.name)


def parse_pool_methods(entries: Sequence[Any], *, option: str = "methods") -> tuple[PoolMethod, ...]:
    """The configurations of ``entries``, each spelled as a study's ``[[methods]]`` entry (docs/custom-detectors.md).

    An entry is a dict with the keys of :data:`POOL_METHOD_KEYS` (``name`` of a registered method or ``estimator``,
    an import path ``package.module:Class`` of a scikit-learn / PyOD estimator or an odeval ``Detector``;
    ``params``; ``grid = {name = [values]}``, several axes giving their product; ``seeds = N`` or a list;
    ``higher_is_outlier`` for an estimator), or a string: an inline TOML table (``{estimator = "...", grid =
    {...}}``), an import path (``"pyod.models.iforest:IForest"``) or a registered name (``"LOF"``).

    Raises
    ------
    ValueError
        One line naming ``option``, the entry and the cause: text that is not a table, an unknown key, ``k`` (the
        pool's), an import path that does not import, a class without fit/score methods, a parameter the class or
        method does not take, a grid value of the wrong type, seeds for a deterministic detector, an estimator
        named as a registered method.
    """
    out: list[PoolMethod] = []
    for entry in entries:
        text = entry if isinstance(entry, str) else json.dumps(entry, default=str)
        try:
            out.extend(_pool_configurations(_method_entry(entry), text))
        except ValueError as exc:
            raise ValueError(f"{option} {text!r}: {exc}") from None
    return tuple(out)


def _method_entry(entry: Any) -> dict[str, Any]:
    """The dict of an entry: a table as is; a string as an inline TOML table, an import path or a name."""
    if isinstance(entry, dict):
        return entry
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError("a method entry is a name, an import path or a table of [[methods]] keys")
    text = entry.strip()
    if text.startswith("{"):
        import tomllib

        try:
            return tomllib.loads(f"m = {text}")["m"]
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"not an inline TOML table as in a study's [[methods]] ({exc})") from None
    return {"estimator": text} if ":" in text or "." in text else {"name": text}


def _seeds(entry: dict[str, Any]) -> list[int | None]:
    if "seeds" not in entry:
        return [None]
    seeds = entry["seeds"]
    if isinstance(seeds, int) and not isinstance(seeds, bool) and seeds >= 1:
        return list(range(seeds))
    if (isinstance(seeds, list) and seeds and all(isinstance(x, int) and not isinstance(x, bool) for x in seeds)
            and len(set(seeds)) == len(seeds)):
        return list(seeds)
    raise ValueError(f"seeds must be a positive integer N (seeds 0..N-1) or a list of distinct integers, got {seeds!r}")


def _grid(entry: dict[str, Any]) -> dict[str, list[Any]]:
    grid = entry.get("grid", {})
    if not isinstance(grid, dict):
        raise ValueError(f"grid must be a table {{name = [values]}}, got {grid!r}")
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid.{name} must be a non-empty list of values, got {values!r}")
    return dict(grid)


def _pool_configurations(entry: dict[str, Any], text: str) -> list[PoolMethod]:
    """The configurations of one entry (one per grid point and seed), checked."""
    import itertools

    from odeval.detectors import available_methods, get_detector, register
    from odeval.detectors.base import _REGISTRY
    from odeval.detectors.imported import classify, resolve_class

    unknown = set(entry) - set(POOL_METHOD_KEYS)
    if "k" in unknown or "k" in entry.get("grid", {}):
        raise ValueError("k is the pool's (k = 1..k_max for every kNN-family method); grid other parameters")
    if unknown:
        raise ValueError(f"unknown key(s) {sorted(unknown)}; known: {list(POOL_METHOD_KEYS)}")
    if "name" not in entry and "estimator" not in entry:
        raise ValueError("give a name (a registered method) or an estimator (an import path 'package.module:Class')")
    params = entry.get("params", {})
    if not isinstance(params, dict):
        raise ValueError(f"params must be a table, got {params!r}")
    grid, seeds = _grid(entry), _seeds(entry)
    points = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    both = sorted(set(grid) & set(params))
    if both:
        raise ValueError(f"{both[0]} is both a fixed parameter and a grid axis")
    name = entry.get("name")
    if "estimator" in entry:
        cls = resolve_class(str(entry["estimator"]))
        if classify(cls) != "detector":
            return _estimator_configurations(entry, cls, params, grid, points, seeds, text)
        if cls.info.name.lower() not in _REGISTRY:
            register(cls)
        name = cls.info.name
    if "higher_is_outlier" in entry:
        raise ValueError("higher_is_outlier is for imported estimators; an odeval detector declares its orientation")
    known = {m.lower(): m for m in available_methods()}
    if not isinstance(name, str) or name.lower() not in known:
        raise ValueError(f"unknown method; available: {', '.join(available_methods())} (or give an import path "
                         "'package.module:Class')")
    name = known[name.lower()]
    declared = dict(get_detector(name).params())
    for axis in grid:
        if axis not in declared:
            raise ValueError(f"grid: {name} has no parameter {axis!r}; its parameters: {', '.join(declared) or 'none'}")
    if seeds != [None] and "seed" not in declared:
        raise ValueError(f"seeds given but {name} is deterministic (it has no seed parameter)")
    out = [PoolMethod(name, dict(params), point, seed, entry=text) for point in points for seed in seeds]
    for m in out:
        try:
            m.detector()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad parameters {({**m.params, **m.setting})}: {exc}") from None
    return out


def _estimator_configurations(entry: dict[str, Any], cls: type, params: dict[str, Any], grid: dict[str, list[Any]],
                              points: list[dict[str, Any]], seeds: list[int | None], text: str) -> list[PoolMethod]:
    from odeval.detectors import available_methods
    from odeval.detectors.imported import check_estimator_params

    name = entry.get("name", cls.__name__)
    if not isinstance(name, str) or not name or any(c in name for c in "-([@ "):
        raise ValueError(f"name {name!r} must be non-empty without '-', '(', '[', '@' or spaces")
    if name.lower() in {m.lower() for m in available_methods()}:
        raise ValueError(f"{name!r} is the name of odeval's registered method; give this estimator another name "
                         f"(name = \"{cls.__module__.split('.')[0]}_{name}\")")
    hio = entry.get("higher_is_outlier")
    if hio is not None and not isinstance(hio, bool):
        raise ValueError(f"higher_is_outlier must be true or false, got {hio!r}")
    problems = check_estimator_params(cls, params, grid, seeded=seeds != [None])
    if problems:
        raise ValueError("; ".join(problems))
    for point in points:
        try:
            cls(**params, **point)  # constructors that validate (PyOD's) refuse bad values now
        except Exception as exc:
            raise ValueError(f"{cls.__name__}(**{ {**params, **point} }) fails: {type(exc).__name__}: {exc}") from None
    path = str(entry["estimator"]).strip()
    return [PoolMethod(name, dict(params), point, seed, path, hio, text) for point in points for seed in seeds]


# ----------------------------------------------------------------------------------------------- memory
def available_memory() -> int | None:
    """Bytes of physical memory available now (Linux ``/proc/meminfo`` MemAvailable); None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def memory_needed(n_objects: int, n_attributes: int, ks: Sequence[int], n_candidates: int | None = None) -> int:
    """Bytes the largest step holds at once, roughly: the kNN graph (distances and indices for k_max + 1 plus
    ties, 16 bytes each), the pool's scores (``n_candidates``, default 12 methods × |k|, × N) and the rank
    matrices of the consensus selectors (three of the pool's size), the data."""
    k_graph = max(ks) + 2
    graph = n_objects * (k_graph + 8) * 16
    rows = len(CAMPOS_POOL) * len(ks) if n_candidates is None else n_candidates
    pool = rows * n_objects * 8
    return int(graph + 4 * pool + n_objects * n_attributes * 8)


def check_memory(n_objects: int, n_attributes: int, ks: Sequence[int], name: str,
                 n_candidates: int | None = None) -> None:
    """Refuse, in one line, a table whose pool would not fit into the memory available now."""
    need, have = memory_needed(n_objects, n_attributes, ks, n_candidates), available_memory()
    if have is not None and need > have:
        raise ValueError(f"{name}: {n_objects} objects × {len(ks)} k need about {need / 2**30:.1f} GiB, "
                         f"{have / 2**30:.1f} GiB available; lower --k-max or subsample the table")


# ----------------------------------------------------------------------------------------------- candidates
def candidate_ks(n_objects: int, settings: SelectSettings = SelectSettings()) -> list[int]:
    """The k of the pool for ``n_objects`` objects: 1..min(k_max, N − 1), or a geometric grid of that range
    (always holding k = 10 where N > 10) when 12 · |k| · N would exceed ``settings.max_pool_values``."""
    top = max(1, min(settings.k_max, n_objects - 1))
    ks = list(range(1, top + 1))
    n_methods = max(1, (len(CAMPOS_POOL) if settings.campos else 0)
                    + sum(m.estimator is None for m in settings.pool_methods()))
    if n_methods * len(ks) * n_objects > settings.max_pool_values:
        m = max(5, settings.max_pool_values // (n_methods * n_objects))
        grid = set(np.unique(np.round(np.geomspace(1, top, m)).astype(int)).tolist())
        if top >= 10:
            grid.add(10)
        ks = sorted(grid)
    return ks


@dataclass(frozen=True)
class Pool:
    """The candidate scorings of one table.

    Attributes
    ----------
    keys : tuple of ScoringKey
    names : tuple of str
        :func:`odeval._key.distinct_names` of the keys.
    scores : ndarray of shape (R, N)
        Public scores, ±inf mapped by :func:`odeval.measures.finite_for_ranking` (order and ties kept).
    ks : tuple of int
        The k requested.
    skipped : tuple of str
        ``"LDOF: skipped k=1 (...)"`` lines.
    """

    keys: tuple[ScoringKey, ...]
    names: tuple[str, ...]
    scores: np.ndarray = field(repr=False)
    ks: tuple[int, ...] = ()
    skipped: tuple[str, ...] = ()

    def index(self, name: str) -> int | None:
        return self.names.index(name) if name in self.names else None


def candidate_pool(X: np.ndarray, ks: Sequence[int], *, progress: Progress | None = None,
                   methods: Sequence[PoolMethod] = (), campos: bool = True) -> Pool:
    """Score the pool on ``X``: the twelve methods (``campos``) and the registered ``methods`` at ``ks`` through the
    one scoring path (:func:`odeval.detectors.scoring.score_ks`, one kNN graph for the largest k any method needs),
    and each imported estimator of ``methods`` fitted on ``X`` once (:meth:`PoolMethod.scores`). An estimator whose
    scores are unusable (NaN, constant, …) is left out with the reason in ``Pool.skipped``."""
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import required_graph_k, score_ks
    from odeval.measures import finite_for_ranking
    from odeval.neighbors import knn_graph

    n = X.shape[0]
    dets = []
    for m, p in (CAMPOS_POOL if campos else ()):
        det = get_detector(m, **p)
        dets.append((det, ScoringKey.make(det.info.name, p), det.info.name))
    dets += [(m.detector(), m.key(), m.key().name) for m in methods if m.estimator is None]
    estimators = [m for m in methods if m.estimator is not None]
    graph = knn_graph(X, max(required_graph_k(d, list(ks), n) for d, _, _ in dets)) if dets else None
    keys: list[ScoringKey] = []
    rows: list[np.ndarray] = []
    skipped: list[str] = []
    total = len(dets) + len(estimators)
    for i, (det, base, label) in enumerate(dets):
        if progress:
            progress(f"scoring {label}", i, total)
        res = score_ks(det, graph, list(ks))
        skipped += [f"{label}: skipped k={ks_} ({reason})" for ks_, reason in res.skipped.items()]
        for k, s in zip(res.ks, res.scores, strict=True):
            keys.append(base.with_setting(k=k))
            rows.append(finite_for_ranking(s))
    for i, m in enumerate(estimators, start=len(dets)):
        if progress:
            progress(f"scoring {m.name}", i, total)
        try:
            s = m.scores(X)
        except Exception as exc:  # the estimator's own failure (e.g. a parameter only its fit checks): left out
            why = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            skipped.append(f"{m.key().name}: left out ({why})")
            continue
        keys.append(m.key())
        rows.append(finite_for_ranking(s))
    if progress:
        progress("scoring", total, total)
    if not rows:
        raise ValueError("no method could score any k on this table"
                         + (f" ({skipped[0]})" if skipped and not dets else ""))
    return Pool(tuple(keys), tuple(distinct_names(keys)), np.vstack(rows), tuple(ks), tuple(skipped))


# ----------------------------------------------------------------------------------------------- selection
def _run_selectors(S: np.ndarray, names: Sequence[str], selectors: Sequence[str], seed: int,
                   ensembles: Sequence[str] = ENSEMBLE_SELECTORS) -> dict[str, Any]:
    """The registered selectors, with ``select`` and ``select-ensemble`` from one greedy SELECT run (the registry
    runs it once for each; the choices are the same as the registered selectors', tested)."""
    from odeval.labelfree.selection import Selection, kendall_to, run_selectors, select_greedy

    shared = [s for s in ("select", "select-ensemble") if s in (*selectors, *ensembles)]
    rest = [s for s in (*selectors, *ensembles, REFERENCE) if s not in shared]
    out = run_selectors(S, list(names), rest, seed=seed)
    if shared:
        members, ens, tau = select_greedy(S)
        if "select" in shared:
            agree = np.full(S.shape[0], -np.inf)
            agree[list(members)] = kendall_to(S[list(members)], ens)
            out["select"] = Selection("select", int(np.argmax(agree)), criterion=tau, members=members)
        if "select-ensemble" in shared:
            out["select-ensemble"] = Selection("select-ensemble", None, scores=ens, criterion=tau, members=members)
    order = [*selectors, *ensembles, REFERENCE]
    return {name: out[name] for name in order if name in out}


def _top(scores: np.ndarray, m: int) -> np.ndarray:
    """Rows of the ``m`` largest scores (ties: the lower row first)."""
    return np.argsort(-scores, kind="stable")[:m]


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from odeval.labelfree.selection import spearman_matrix

    return float(spearman_matrix(np.vstack([a, b]))[0, 1])


@dataclass(frozen=True)
class Choice:
    """What one selector chose: a candidate (``name``) or a scoring (``name`` = the selector)."""

    selector: str
    kind: Literal["candidate", "scoring"]
    name: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"selector": self.selector, "kind": self.kind, "choice": self.name, "note": self.note}


@dataclass(frozen=True)
class Recommendation:
    """The outcome of :func:`recommend`; :meth:`to_dict` is its JSON form (``odeval select --json``).

    Attributes
    ----------
    dataset : dict
        Name, source, objects and attributes of the table as read.
    preparation : dict
        What :func:`prepare_table` did (duplicates, encoding, dropped attributes, scaling).
    pool : dict
        Methods, k, number of candidates, skipped k.
    choices : tuple of Choice
        Every selector's choice, in the order run.
    recommended : str
        The recommended candidate (a pool name, e.g. ``kNN-010``) or ``"ensemble"``.
    recommended_by : str
        The selector whose choice it is.
    reason : str
        Why this one, in plain words, from the record.
    alternative : str
        ``"ensemble"`` (the mean of the Gaussian-scaled scores of every candidate).
    agreement : dict
        Distinct picks of the label-free selectors, and the Spearman ρ of each pick to the recommendation.
    stability : dict
        Per selector the fraction of subsamples with the same pick; the top-n overlap of the recommendation and
        of the ensemble.
    ireos : dict
        The pruned IREOS run: pruned candidates best first, γ_max, objects, the guarded rule's verdict.
    warnings : tuple of str
    expectations : tuple of dict
        :class:`odeval.labelfree.record.Expectation` of each selector, as dicts.
    record_source : dict
    threshold : dict
        ``n_flagged`` objects with unified outlier probability > 0.5, their fraction, and how the probabilities
        were made.
    top : tuple of dict
        The top-n objects: row, id, score, probability, votes (of the strongest candidates: each method at its
        most central k).
    check : dict or None
        The evaluation against held-back labels (:func:`recommend` with ``labels``).
    scores, ensemble_scores, probabilities : ndarray
        The recommended scoring, the ensemble, the unified probabilities of the recommendation (not in JSON).
    """

    dataset: dict[str, Any]
    preparation: dict[str, Any]
    pool: dict[str, Any]
    choices: tuple[Choice, ...]
    recommended: str
    recommended_by: str
    reason: str
    alternative: str
    agreement: dict[str, Any]
    stability: dict[str, Any]
    ireos: dict[str, Any]
    warnings: tuple[str, ...]
    expectations: tuple[dict[str, Any], ...]
    record_source: dict[str, Any]
    threshold: dict[str, Any]
    top: tuple[dict[str, Any], ...]
    check: dict[str, Any] | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    scores: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    ensemble_scores: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    probabilities: np.ndarray = field(default=None, repr=False)  # type: ignore[assignment]
    ids: np.ndarray | None = field(default=None, repr=False)
    details: dict[str, Any] | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Everything but the score vectors, JSON-serialisable (NaN → None)."""
        def clean(v: Any) -> Any:
            if isinstance(v, dict):
                return {str(k): clean(x) for k, x in v.items()}
            if isinstance(v, list | tuple):
                return [clean(x) for x in v]
            if isinstance(v, Choice):
                return v.to_dict()
            if isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, float) and not math.isfinite(v):
                return None
            return v

        return clean({
            "dataset": self.dataset, "preparation": self.preparation, "pool": self.pool,
            "recommendation": {"candidate": self.recommended, "by": self.recommended_by, "reason": self.reason,
                               "alternative": self.alternative},
            "choices": list(self.choices), "agreement": self.agreement, "stability": self.stability,
            "ireos": self.ireos, "warnings": list(self.warnings), "expectations": list(self.expectations),
            "record_source": self.record_source, "threshold": self.threshold, "top": list(self.top),
            "check": self.check, "settings": self.settings,
        })


def _choices(sels: dict[str, Any], names: Sequence[str]) -> list[Choice]:
    out = []
    for sel_name, sel in sels.items():
        if sel.index is not None:
            out.append(Choice(sel_name, "candidate", names[sel.index], sel.note))
        elif sel.scores is not None:
            out.append(Choice(sel_name, "scoring", "ensemble" if sel_name == "ireos-guarded" else sel_name, sel.note))
        else:
            out.append(Choice(sel_name, "scoring", "", sel.note or "no choice"))
    return out


def _scoring_of(choice: Choice, pool: Pool, ensemble: np.ndarray, sels: dict[str, Any]) -> np.ndarray | None:
    if choice.kind == "candidate":  # None where a subsample's pool lacks it (k ≥ the subsample's N)
        i = pool.index(choice.name)
        return None if i is None else pool.scores[i]
    if choice.name == "ensemble":
        return ensemble
    sel = sels.get(choice.selector)
    return None if sel is None else sel.scores


def _stability(X: np.ndarray, pool: Pool, settings: SelectSettings, full: dict[str, Choice], rec: Choice,
               rec_scores: np.ndarray, ensemble: np.ndarray, progress: Progress | None) -> dict[str, Any]:
    """Re-run the pool and the consensus selectors on ``settings.resamples`` seeded subsamples."""
    n = X.shape[0]
    size = min(round(settings.resample_fraction * n), settings.resample_max_objects)
    if settings.resamples == 0 or size < MIN_OBJECTS:
        return {"resamples": 0, "note": "no resampling" if settings.resamples == 0 else "too few objects"}
    rng = np.random.default_rng(settings.seed)
    same: dict[str, int] = {name: 0 for name in full}
    same_method: dict[str, int] = {name: 0 for name in full}
    rho: dict[str, list[float]] = {name: [] for name in full}
    overlap_rec, overlap_ens = [], []
    for r in range(settings.resamples):
        if progress:
            progress("stability", r, settings.resamples)
        rows = np.sort(rng.choice(n, size, replace=False))
        sub_pool = candidate_pool(X[rows], [k for k in pool.ks if k < size], methods=settings.pool_methods(),
                                  campos=settings.campos)
        sels = _run_selectors(sub_pool.scores, sub_pool.names, settings.stability_selectors, settings.seed,
                              ensembles=("ensemble",))
        sub_choices = {c.selector: c for c in _choices(sels, sub_pool.names)}
        for name, c in full.items():
            sc = sub_choices.get(name)
            if sc is None or not sc.name:
                continue
            same[name] += sc.name == c.name
            same_method[name] += ScoringKey.parse(sc.name).method == ScoringKey.parse(c.name).method
            rho[name].append(_spearman(pool.scores[pool.names.index(c.name)][rows],
                                       sub_pool.scores[sub_pool.names.index(sc.name)]))
        m = max(1, round(settings.top_n * size / n))
        sub_ens = sels["ensemble"].scores
        sub_rec = _scoring_of(sub_choices.get(rec.selector, rec), sub_pool, sub_ens, sels)
        if sub_rec is not None:
            overlap_rec.append(len(np.intersect1d(_top(rec_scores[rows], m), _top(sub_rec, m))) / m)
        overlap_ens.append(len(np.intersect1d(_top(ensemble[rows], m), _top(sub_ens, m))) / m)
    if progress:
        progress("stability", settings.resamples, settings.resamples)
    k = settings.resamples
    return {"resamples": k, "objects_per_resample": size, "seed": settings.seed,
            "same_pick": {name: same[name] / k for name in full},
            "same_method": {name: same_method[name] / k for name in full},
            "pick_rho": {name: float(np.mean(v)) if v else None for name, v in rho.items()},
            "top_n_overlap": float(np.mean(overlap_rec)) if overlap_rec else None,
            "top_n_overlap_ensemble": float(np.mean(overlap_ens)),
            "top_n": settings.top_n,
            "note": f"the pool, {', '.join(settings.stability_selectors)} and the ensemble are recomputed on each "
                    "subsample; IREOS and select are not (cost)"}


def _agreement(choices: Sequence[Choice], rec_scores: np.ndarray, pool: Pool, ensemble: np.ndarray,
               sels: dict[str, Any]) -> dict[str, Any]:
    label_free = [c for c in choices if c.selector != REFERENCE and c.name]
    picks = [c for c in label_free if c.kind == "candidate"]
    rho = {}
    for c in label_free:
        s = _scoring_of(c, pool, ensemble, sels)
        if s is not None:
            rho[c.selector] = _spearman(s, rec_scores)
    values = np.array(list(rho.values())) if rho else np.zeros(0)
    median = float(np.median(values)) if values.size else float("nan")
    strength = ("strong" if median >= 0.9 else "moderate" if median >= 0.7 else "weak") if values.size else "none"
    methods = {ScoringKey.parse(c.name).method for c in picks}
    return {"pickers": len(picks), "distinct_picks": len({c.name for c in picks}),
            "distinct_methods": len(methods), "rho_to_recommendation": rho, "median_rho": median,
            "strength": strength}


def _threshold(rec: Choice, scores: np.ndarray, pool: Pool) -> tuple[np.ndarray, dict[str, Any]]:
    from odeval.scaling import unify

    if rec.kind == "candidate":
        method = ScoringKey.parse(rec.name).method
        key = pool.keys[pool.names.index(rec.name)]
        p = unify(scores, key.method)
        how = f"{method}'s recommended regularisation and normalisation (Kriegel et al. 2011, odeval.scaling.unify)"
    else:
        p = np.clip(scores, 0.0, 1.0)
        how = "the ensemble is the mean of Gaussian-scaled probabilities (Kriegel et al. 2011): taken as they are"
    p = np.nan_to_num(p, nan=0.0)
    flagged = p > 0.5
    return p, {"cutoff": 0.5, "n_flagged": int(flagged.sum()), "fraction": float(flagged.mean()), "how": how}


def _top_rows(scores: np.ndarray, probs: np.ndarray, pool: Pool, centrality: np.ndarray, top_n: int,
              ids: np.ndarray | None) -> tuple[tuple[dict[str, Any], ...], list[str]]:
    """The top-n objects of the recommended scoring, each with the number of "strongest candidates" — every
    method at its most central k (largest mean Spearman ρ to all candidates) — that rank it in their top-n."""
    n = scores.shape[0]
    m = min(top_n, n)
    top = _top(scores, m)
    c = np.where(np.isfinite(centrality), centrality, -np.inf)
    best: dict[str, int] = {}
    for i, key in enumerate(pool.keys):
        j = best.get(key.method)
        if j is None or c[i] > c[j]:
            best[key.method] = i
    strong = list(best.values())
    votes = np.zeros(n, dtype=np.int64)
    for i in strong:
        votes[_top(pool.scores[i], m)] += 1

    def ident(o: int) -> Any:
        if ids is None:
            return None
        v = ids[o]
        return v.item() if isinstance(v, np.generic) else v

    rows = tuple({"row": int(o), "id": ident(int(o)), "score": float(scores[o]), "probability": float(probs[o]),
                  "votes": int(votes[o]), "of": len(strong)} for o in top)
    return rows, [pool.names[i] for i in strong]


def _warnings(n: int, d: int, n_dup: int, pick: IreosPick | None, settings: SelectSettings) -> list[str]:
    out = []
    if n < FEW_OBJECTS:
        out.append(f"only {n} objects: k is capped at {n - 1} and every selector's choice rests on few objects; "
                   "read the stability line before trusting the pick")
    if d >= HIGH_DIMENSION:
        out.append(f"high dimension (d = {d}): distances concentrate and kNN-based scores lose contrast "
                   "(Zimek, Schubert, Kriegel 2012); consider reducing the attributes first")
    if n_dup and n_dup / max(1, n) >= MANY_DUPLICATES:
        out.append(f"{n_dup} of {n} objects ({n_dup / n:.0%}) repeat another object exactly: LOF-like methods score "
                   "them ±inf or as perfect inliers, and IREOS cannot separate them (--dedup removes them)")
    if pick is not None and pick.above:
        g = f"= {pick.gamma_max:.3g} " if np.isfinite(pick.gamma_max) else ""
        out.append(f"IREOS γ_max {g}> {settings.guarded.threshold:g}: near-duplicates blow the "
                   "kernel width up, and on the Campos collection IREOS was near random in that regime "
                   "(docs/model-selection.md); the guarded rule uses the ensemble instead")
    return out


def _check(labels: np.ndarray, rec_scores: np.ndarray, ensemble: np.ndarray, pool: Pool,
           choices: Sequence[Choice], sels: dict[str, Any]) -> dict[str, Any]:
    from odeval.measures import average_precision, roc_auc

    y = np.asarray(labels)
    if y.dtype != bool:
        y = y.astype(bool)
    if y.shape != (pool.scores.shape[1],):
        raise ValueError(f"labels have shape {y.shape}, the table has {pool.scores.shape[1]} objects")
    if y.all() or not y.any():
        raise ValueError(f"labels hold one class only ({int(y.sum())} outliers of {y.size}): nothing to check")
    aucs = np.array([roc_auc(y, s) for s in pool.scores])

    def percentile(a: float) -> float:
        return float(100.0 * ((aucs < a).sum() + 0.5 * (aucs == a).sum()) / aucs.size)

    def judged(s: np.ndarray) -> dict[str, float]:
        a = roc_auc(y, s)
        return {"roc_auc": a, "average_precision": average_precision(y, s), "percentile": percentile(a)}

    per = {}
    for c in choices:
        s = _scoring_of(c, pool, ensemble, sels)
        if s is not None:
            per[c.selector] = {"choice": c.name, **judged(s)}
    return {"n_outliers": int(y.sum()), "n_objects": int(y.size), "recommended": judged(rec_scores),
            "ensemble": judged(ensemble), "selectors": per,
            "candidates_roc_auc": {"min": float(aucs.min()), "median": float(np.median(aucs)),
                                   "max": float(aucs.max())},
            "note": "labels were read after the selection and never passed to it"}


def recommend(data: Dataset | Any, *, settings: SelectSettings = SelectSettings(), labels: Any = None,
              progress: Progress | None = None) -> Recommendation:
    """Recommend a detector and k for an unlabelled table, with the evidence (module docstring, docs/select.md).

    Parameters
    ----------
    data : Dataset or array-like of shape (N, d)
        The table; a Dataset's labels (``y``) are ignored.
    settings : SelectSettings
    labels : array-like of bool, optional
        Held-back labels for the check (``Recommendation.check``); used only after the selection.
    progress : callable, optional
        ``progress(stage, done, total)``.

    Raises
    ------
    ValueError
        Bad input, one line naming the table and the cause (see :func:`prepare_table`).
    """
    from odeval.labelfree.selection import model_centrality

    ds = data if isinstance(data, Dataset) else _as_dataset(data)
    info = {"name": ds.name, "source": ds.provenance.get("source"), "sha256": ds.provenance.get("sha256"),
            "n_objects": ds.n_objects, "n_attributes": ds.n_attributes}
    if progress:
        progress("preparing", 0, 1)
    prepared, prep, warns, kept = prepare_table(ds.with_changes(y=None), settings)
    X = prepared.numeric_matrix()
    n, d = X.shape
    ks = candidate_ks(n, settings)
    extra = settings.pool_methods()
    n_knn = (len(CAMPOS_POOL) if settings.campos else 0) + sum(m.estimator is None for m in extra)
    check_memory(n, d, ks, ds.name, n_knn * len(ks) + sum(m.estimator is not None for m in extra))
    pool = candidate_pool(X, ks, progress=progress, methods=extra, campos=settings.campos)
    if progress:
        progress("selecting", 0, 1)
    sels = _run_selectors(pool.scores, pool.names, settings.selectors, settings.seed)
    if settings.meta:
        from odeval.labelfree.meta_select import meta_selection

        sels["meta"] = meta_selection(pool.scores, pool.names, X, settings.seed)
    ensemble = sels["ensemble"].scores
    pick: IreosPick | None = None
    if settings.ireos:
        def ireos_progress(stage: str, fits: int) -> None:
            if progress:
                progress(f"IREOS ({stage}, classifiers)", fits, 0)

        pick = pruned_ireos(pool.scores, X, seed=settings.seed, settings=settings.guarded, progress=ireos_progress)
        from odeval.labelfree.selection import Selection

        sels["ireos"] = (Selection("ireos", pick.best, note=pick.note) if pick.best is not None
                         else Selection("ireos", None, note=pick.note))
        sels["ireos-guarded"] = guarded_choice(pick, ensemble, threshold=settings.guarded.threshold)
    choices = _choices(sels, pool.names)
    by_selector = {c.selector: c for c in choices}
    pickers = [c.selector for c in choices if c.kind == "candidate" or c.selector == "ireos-guarded"]
    if settings.primary == "record":
        chosen_by = best_by_record([s for s in pickers if by_selector[s].name])
    elif settings.primary in by_selector:
        chosen_by = settings.primary
    else:
        raise ValueError(f"primary selector {settings.primary!r} was not run; run: {', '.join(by_selector)}")
    rec = by_selector[chosen_by]
    rec_scores = _scoring_of(rec, pool, ensemble, sels)
    if rec_scores is None:
        raise ValueError(f"selector {chosen_by!r} made no choice: {rec.note}")
    reason = _reason(chosen_by, pickers)
    mc = sels.get("mc-spearman")
    centrality = mc.criterion if mc is not None and mc.criterion is not None else model_centrality(pool.scores)
    probs, threshold = _threshold(rec, rec_scores, pool)
    top, strong = _top_rows(rec_scores, probs, pool, centrality, settings.top_n, prepared.ids)
    threshold["strong_candidates"] = strong
    full = {c.selector: c for c in choices
            if c.kind == "candidate" and c.selector in (*settings.stability_selectors, REFERENCE)}
    stability = _stability(X, pool, settings, full, rec, rec_scores, ensemble, progress)
    warns += _warnings(n, d, int(prep.get("duplicates", 0)), pick, settings)
    if len(ks) < min(settings.k_max, n - 1):
        prep["note_k"] = f"k thinned to a geometric grid of {len(ks)} values (12 · |k| · N above the pool budget)"
    record = campos_record()
    ireos_info: dict[str, Any] = {"run": settings.ireos}
    if pick is not None:
        ireos_info.update(order=[pool.names[i] for i in pick.order], bounds=[list(b) for b in pick.bounds],
                          gamma_max=pick.gamma_max, above=pick.above,
                          n_objects=pick.n_objects, subsampled=pick.subsampled, note=pick.note,
                          threshold=settings.guarded.threshold, guarded=sels["ireos-guarded"].note)
    check = None
    if labels is not None:
        y = np.asarray(labels)
        if y.shape != (ds.n_objects,):
            raise ValueError(f"labels have {y.size} values, the table has {ds.n_objects} objects")
        check = _check(y[kept].astype(bool), rec_scores, ensemble, pool, choices, sels)
    exp = tuple(e.to_dict() for e in expectations([c.selector for c in choices]))
    return Recommendation(
        dataset=info, preparation=prep,
        pool={"methods": list(dict.fromkeys([*(m for m, _ in CAMPOS_POOL if settings.campos),
                                             *(m.name for m in extra)])),
              "ks": list(pool.ks), "n_candidates": len(pool.names), "skipped": list(pool.skipped),
              "campos": settings.campos, "added": [m.key().name for m in extra],
              "added_methods": list(dict.fromkeys(m.name for m in extra))},
        choices=tuple(choices), recommended=rec.name, recommended_by=chosen_by, reason=reason,
        alternative="ensemble", agreement=_agreement(choices, rec_scores, pool, ensemble, sels), stability=stability,
        ireos=ireos_info, warnings=tuple(warns), expectations=exp, record_source=record["source"],
        threshold=threshold, top=top, check=check, settings=_settings_dict(settings), scores=rec_scores,
        ensemble_scores=ensemble, probabilities=probs, ids=prepared.ids,
        details=_details(X, pool, choices, settings) if settings.details else None)


def _details(X: np.ndarray, pool: Pool, choices: Sequence[Choice], settings: SelectSettings) -> dict[str, Any]:
    """What the HTML page draws: the weighted Pearson similarity (Schubert et al. 2012, §3; estimated outliers as
    weights) of each method at up to 8 spread k plus every pick, on unified scores; a 2-D PCA projection of X."""
    from odeval.compare.similarity import similarity_matrix
    from odeval.scaling import unify

    by_method: dict[str, list[int]] = {}
    for i, key in enumerate(pool.keys):
        by_method.setdefault(key.method, []).append(i)
    rows: set[int] = set()
    for idx in by_method.values():
        rows.update(idx[j] for j in np.unique(np.linspace(0, len(idx) - 1, min(8, len(idx))).astype(int)))
    rows.update(pool.names.index(c.name) for c in choices if c.kind == "candidate" and c.name in pool.names)
    keep = sorted(rows)
    U = np.vstack([np.nan_to_num(unify(pool.scores[i], pool.keys[i].method), nan=0.0) for i in keep])
    sim = similarity_matrix(U, measure="pearson")
    Xc = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(Xc[:: max(1, X.shape[0] // 20_000)], full_matrices=False)
    proj = Xc @ vt[:2].T if vt.shape[0] >= 2 else np.column_stack([Xc[:, 0], np.zeros(X.shape[0])])
    return {"similarity_names": [pool.names[i] for i in keep], "similarity": sim, "projection": proj}


def _reason(chosen_by: str, pickers: Sequence[str]) -> str:
    exp = {e.selector: e for e in expectations([chosen_by, *pickers, "ensemble"])}
    e = exp[chosen_by]
    label_free = [s for s in pickers if s != REFERENCE]
    beats = [s for s in label_free if exp[s].p_vs_reference is not None and exp[s].p_vs_reference < 0.05]
    ens = exp["ensemble"]
    if chosen_by == REFERENCE:
        return (f"kNN with k = 10 had the best record of the choices run here on the Campos collection "
                f"({e.n_variants} variants: mean ROC AUC {e.mean_roc_auc:.3f}, percentile {e.mean_percentile:.0f}); "
                + ("no label-free selector beat it there" if not beats else
                   f"{', '.join(beats)} beat it there, yet had a lower mean percentile")
                + f". The ensemble (mean ROC AUC {ens.mean_roc_auc:.3f}) was not better than it either "
                  f"(p = {ens.p_vs_reference:.2g}).")
    if e.mean_roc_auc is None:
        return f"{chosen_by} was asked for; it has no record on the Campos collection"
    return (f"{chosen_by}'s pick: mean ROC AUC {e.mean_roc_auc:.3f}, percentile {e.mean_percentile:.0f} on the Campos "
            f"collection ({e.sentence})")


def _as_dataset(X: Any) -> Dataset:
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"data must be a 2-d table, got shape {arr.shape}")
    return Dataset(X=arr, y=None, name="data", attribute_names=tuple(f"x{j}" for j in range(arr.shape[1])))


def _settings_dict(settings: SelectSettings) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(settings)
