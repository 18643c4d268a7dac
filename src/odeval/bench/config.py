"""Study definition: a TOML file declaring datasets × methods × k, validated as a whole before any work.

A study file looks like this (all keys but ``datasets`` and ``methods`` are optional)::

    [study]
    name = "campos-small"
    k = "1..100"            # one k syntax (odeval._krange): "A..B", "A:B", "A..B:STEP", "1,5,10", [1, 2, 5], 10
    metric = "euclidean"
    measures = "all"        # or a list of names from odeval.measures.MEASURES
    keep_scores = false     # store full score vectors too
    seed = 0

    [[datasets]]            # catalogue selection (odeval.data.catalogue)
    base = "WBC"
    variant = "withoutdupl_norm"
    version = [1, 2]

    [[datasets]]            # files: paths or globs, relative to the study file
    glob = "data/*.arff"

    [[methods]]
    name = "LOF"

    [[methods]]
    name = "LDF"
    params = { h = 1.0, c = 0.1 }
    k = "2..50"             # per-method k range (default: the study's)

Optional label-free (internal) measures, computed per unit for every computed k (top level or in ``[study]``)::

    internal = ["em", "mv"]     # INTERNAL_MEASURES; methods without a novelty form get a "not applicable" note
    [internal_options]          # optional, the emmv defaults: draws = 50, features = 5, max_dim = 8,
    draws = 10                  # n_generated = 100000, box = "author" ("train_test": before issue 26),
                                # sampling = "auto" ("uniform": before the fallback, "nested"),
                                # seed = the study's seed
    n_generated = 2000

Per-variant label-free work over *all* candidates (every method × k of the study on that variant, or the ten
candidates of Marques et al. 2020 §4.2), run by :mod:`odeval.bench.variant_step` once per variant::

    internal = ["ireos"]        # IREOS of every candidate with one gamma_max per variant (options below)
    [internal_options]          # IREOS keys: mcl = 1 | "sqrt5" | n, knn = 250 | "exact", adjust = true,
    knn = 250                   # quadrature = "adaptive" | "fixed", n_gamma, tol, C, gamma_max,
                                # candidates = "all" | 10
    [selection]                 # the label-free selectors of odeval.labelfree.selection, their picks stored
    selectors = ["mc-spearman", "hits", "ensemble", "random", "default-knn10"]   # default: the default set
    candidates = "all"          # or 10, or ["all", 10] (one selection task per mode)

:func:`load_study` checks every entry and raises one :class:`StudyError` listing *all* problems found
(unknown method, bad parameter, missing dataset, bad k range), so a study never fails half-way for a typo.
"""

from __future__ import annotations

import glob as _glob
import hashlib
import inspect
import json
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odeval._key import ScoringKey
from odeval._krange import KRange, parse_k_range
from odeval.data.catalogue import Variant
from odeval.labelfree.emmv_algorithm import BOXES, SAMPLINGS, EMMVSettings
from odeval.labelfree.ireos import PAPER_KNN, IREOSSettings

if TYPE_CHECKING:
    from odeval.detectors.scoring import KPlan

__all__ = ["INTERNAL_MEASURES", "MethodSpec", "Study", "StudyError", "VariantStep", "emmv_not_applicable",
           "load_study", "method_k_plans", "parse_k_range", "study_from_dict", "study_k_plans", "variant_k_plans"]


INTERNAL_MEASURES = ("em", "mv", "ireos")
"""Label-free measures a study can request with ``internal = [...]``: EM/MV per unit and k, IREOS per variant
(one gamma_max over all candidates of the variant, :mod:`odeval.bench.variant_step`)."""
UNIT_MEASURES = ("em", "mv")
"""The internal measures computed per unit (the others are per variant)."""
INTERNAL_OPTIONS = (*EMMVSettings.__dataclass_fields__, "seed")
"""EM/MV keys of ``[internal_options]``: the fields of :class:`odeval.labelfree.emmv_algorithm.EMMVSettings` (their
defaults are its defaults, applied by :func:`odeval.labelfree.emmv_all_k`) and the seed."""
_IREOS = IREOSSettings()
IREOS_OPTIONS: dict[str, Any] = {"mcl": _IREOS.m_cl, "knn": PAPER_KNN, "adjust": True, "quadrature": _IREOS.quadrature,
                                 "n_gamma": _IREOS.n_gamma, "tol": _IREOS.tol, "C": _IREOS.C,
                                 "gamma_max": _IREOS.gamma_max, "null": _IREOS.null, "classifier": _IREOS.classifier,
                                 "candidates": "all"}
"""IREOS keys of ``[internal_options]`` with their defaults: those of :class:`odeval.labelfree.ireos.IREOSSettings`
(``mcl`` is its ``m_cl``), but ``knn`` = :data:`~odeval.labelfree.ireos.PAPER_KNN`, the kNN-subset approximation of
Marques et al. 2020 §3.5.3 ("exact" for none; exact anyway when N <= knn + 1), and ``adjust`` = true. The order of
the keys is part of no hash (the study hash sorts them). ``null = "permutation"`` (odeval's only null before
2026-11) is dropped from a task's options, so its task id is the one an older store holds; the default
``"uniform"`` (the paper's null) enters the id, so stores of the older null are never reused for it. Likewise
``classifier = "optimum"`` (the exact KLR optimum, odeval's only classifier before 2026-11) is dropped, and the
default ``"pinned"`` (the authors' reference code's classifier) enters the id: its separabilities, γ_max and every
stored IREOS value differ, so a store of the optimum is recomputed, never mixed."""
SELECTION_KEYS = ("selectors", "candidates")


@dataclass(frozen=True)
class VariantStep:
    """What a study computes once per dataset variant over all its candidates (:mod:`odeval.bench.variant_step`).

    ``ireos``: the IREOS options (keys of :data:`IREOS_OPTIONS`, ``candidates`` included) or None;
    ``selectors``: the label-free selectors to run (:mod:`odeval.labelfree.selection`) or None;
    ``selection_candidates``: "all" or the number of paper candidates, or a tuple of such modes (one selection
    task per mode, e.g. ``("all", "10")``); ``seed``: the study's seed.
    """

    ireos: dict[str, Any] | None = None
    selectors: tuple[str, ...] | None = None
    selection_candidates: str | tuple[str, ...] = "all"
    seed: int = 0

    @property
    def selection_modes(self) -> tuple[str, ...]:
        """The candidate modes of the selection tasks ("all" and/or a number of paper candidates)."""
        c = self.selection_candidates
        return (c,) if isinstance(c, str) else tuple(c)

    def key(self) -> dict[str, Any]:
        cand = self.selection_candidates
        return {"ireos": self.ireos, "selectors": list(self.selectors) if self.selectors is not None else None,
                "selection_candidates": cand if isinstance(cand, str) else list(cand), "seed": self.seed}


class StudyError(ValueError):
    """A study definition with one or more problems; ``problems`` lists each one."""

    def __init__(self, source: str, problems: list[str]):
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} problem(s) in the study definition:\n{lines}")


@dataclass(frozen=True)
class MethodSpec:
    """One configuration of a study's method: what one unit (per dataset variant) computes.

    A ``[[methods]]`` entry gives one spec per point of its non-k grid axes and per seed; ``ks`` (a
    :class:`~odeval._krange.KRange`, never expanded here: each dataset variant caps it at N − 1) stays inside the
    unit, scored from one kNN graph. Imported estimators (``estimator``) have no k: ``ks`` is None and the unit is
    one scoring.

    Attributes
    ----------
    name : str
        The method's name in the store (``runs.method``, the :class:`~odeval._key.ScoringKey` method).
    params : dict
        The fixed parameters (for registered methods every declared parameter with its value, the grid's axes
        excepted).
    ks : KRange or None
        The k the unit runs at; None for an imported estimator.
    setting : dict
        This spec's point on the entry's non-k grid axes (empty when the entry has none).
    seed : int or None
        The seed of a randomised detector (``seeds = N``), passed as ``random_state`` (estimators) or ``seed``.
    estimator : str or None
        The import path of a fit/score estimator (scikit-learn style or PyOD); None for kNN-graph detectors.
    imports : tuple of str
        Modules to import before the method is looked up (plugins that register detectors), also in worker
        processes.
    source : str or None
        The import path of an odeval Detector subclass given as ``estimator = ...``: resolved and registered
        wherever the spec is used (worker processes included).
    higher_is_outlier : bool or None
        The declared orientation of an estimator's scores (None: the adapter's default, see
        :class:`odeval.detectors.adapters.EstimatorDetector`).
    entry : str
        Where the spec comes from in the study file (``[[methods]] #3 (IForest)``), for error messages.
    """

    name: str
    params: dict[str, Any]
    ks: KRange | Any
    setting: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    estimator: str | None = None
    imports: tuple[str, ...] = ()
    higher_is_outlier: bool | None = None
    entry: str = ""
    source: str | None = None

    @property
    def params_json(self) -> str:
        return json.dumps(self.params, sort_keys=True)

    @property
    def setting_json(self) -> str:
        """The non-k setting as the store keeps it (``runs.setting``): '' when there is none."""
        return json.dumps(self.setting, sort_keys=True) if self.setting else ""

    @property
    def is_knn(self) -> bool:
        """True for detectors scored from the kNN graph over k; False for imported fit/score estimators."""
        return self.estimator is None

    @property
    def plain(self) -> bool:
        """A kNN-family spec with no other axis and no seed (what every study was before issue 25: its unit id,
        study hash and every downstream reader are unchanged)."""
        return self.is_knn and not self.setting and self.seed is None

    @property
    def detector_params(self) -> dict[str, Any]:
        """The keyword arguments of the detector: fixed parameters, the grid point and (registered detectors
        with a ``seed`` parameter) the seed."""
        out = {**self.params, **self.setting}
        if self.seed is not None and self.is_knn:
            out["seed"] = self.seed
        return out

    def key(self, k: int | None = None, metric: str = "") -> ScoringKey:
        """The :class:`~odeval._key.ScoringKey` of this spec's scoring at ``k`` (None for estimators)."""
        return ScoringKey.make(self.name, self.params, metric=metric if self.is_knn else "",
                               setting=self.setting, k=k, seed=self.seed)

    def configuration_key(self) -> str:
        """The name of this spec's configuration without its seed (specs differing only by seed share it)."""
        return ScoringKey.make(self.name, self.params, setting=self.setting).name + (
            f" [{self.estimator}]" if self.estimator else "")

    def identity(self) -> list[Any]:
        """What, beyond name, parameters and k, tells this spec apart in unit ids and the study hash; empty for a
        :attr:`plain` spec (their ids are those odeval always gave)."""
        if self.plain:
            return []
        extra: dict[str, Any] = {"setting": self.setting, "seed": self.seed}
        if self.estimator is not None:
            extra["estimator"] = self.estimator
            extra["higher_is_outlier"] = self.higher_is_outlier
        return [extra]


def method_detector(method: MethodSpec) -> Any:
    """The odeval detector of a kNN-family spec (its plugin modules imported first)."""
    from odeval.detectors import get_detector, register
    from odeval.detectors.base import _REGISTRY
    from odeval.detectors.imported import import_plugins, resolve_class

    import_plugins(method.imports)
    if method.source is not None and method.name.lower() not in _REGISTRY:
        register(resolve_class(method.source))  # e.g. in a worker process: the class is registered where it is used
    return get_detector(method.name, **method.detector_params)


@dataclass(frozen=True)
class Study:
    """A validated study: everything the runner needs, nothing it has to look up again."""

    name: str
    datasets: tuple[Variant, ...]
    methods: tuple[MethodSpec, ...]
    metric: str
    measures: tuple[str, ...]
    keep_scores: bool
    seed: int
    source: str
    definition: dict[str, Any]
    internal: tuple[str, ...] = ()
    internal_options: dict[str, Any] = field(default_factory=dict)
    variant_step: VariantStep | None = None

    @property
    def internal_key(self) -> dict[str, Any] | None:
        """The internal-measure request as it enters the study hash and unit ids (None when there is none,
        so studies without ``internal`` keep their hash and unit ids)."""
        if not self.internal:
            return None
        # EM/MV's box (issue 26): the default "author" changed the values of sub-sampled units, so it enters the
        # ids even when not written; "train_test" (the box every older store used) leaves the ids as they were
        options = dict(self.internal_options)
        box = options.pop("box", EMMVSettings.box)
        if box != "train_test":
            options["box"] = box
        # sampling: the default "auto" (issue 26) redoes the draws that uniform points cannot estimate, so it
        # enters the ids even when not written; "uniform" (the only sampling of older stores) leaves them as they were
        sampling = options.pop("sampling", EMMVSettings.sampling)
        if sampling != "uniform":
            options["sampling"] = sampling
        return {"internal": list(self.internal), "options": dict(sorted(options.items()))}

    @property
    def study_hash(self) -> str:
        """SHA-256 (16 hex digits) of the normalised definition: same study, same hash."""
        extra: dict[str, Any] = {"internal": self.internal_key} if self.internal else {}
        if self.variant_step is not None:  # absent: the hash of studies without a per-variant step is unchanged
            extra["variant_step"] = self.variant_step.key()
        payload = json.dumps(
            {
                **extra,
                "datasets": [(d.name, d.path) for d in self.datasets],
                "methods": [(m.name, m.params, parse_k_range(m.ks).canonical() if m.is_knn else None,
                             *m.identity()) for m in self.methods],
                "metric": self.metric,
                "measures": self.measures,
                "keep_scores": self.keep_scores,
                "seed": self.seed,
            },
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @property
    def k_max(self) -> int:
        """The largest k of the kNN-family methods (0 when the study has none)."""
        return max((parse_k_range(m.ks).max for m in self.methods if m.is_knn), default=0)


def method_k_plans(study: Study) -> list[tuple[MethodSpec, KRange | None, dict[str, str]]]:
    """Per method: the k that will run (before the per-variant cap at N − 1) and the skipped k with reasons
    (None and no skipped k for an imported estimator, which has no k)."""
    from odeval.detectors.scoring import plan_ks

    out: list[tuple[MethodSpec, KRange | None, dict[str, str]]] = []
    for m in study.methods:
        if not m.is_knn:
            out.append((m, None, {}))
            continue
        rng = parse_k_range(m.ks)
        det = method_detector(m)
        skipped = plan_ks(det, rng.capped(det.info.min_k) or rng, rng.max + 1).skipped
        out.append((m, rng.above(det.info.min_k), skipped))
    return out


def variant_k_plans(methods: Sequence[MethodSpec], n_objects: int
                    ) -> tuple[int | None, list[tuple[MethodSpec, KPlan]]]:
    """What the runner does on a dataset variant of ``n_objects`` objects: the k of the kNN graph it builds and,
    per kNN-family method, the :class:`~odeval.detectors.scoring.KPlan` (k that will run; skipped k with the
    reason the runner records in ``units.skipped``) — :func:`odeval.detectors.scoring.plan_ks`, the one owner of
    these rules. (Only k whose scores turn out NaN can still be skipped at run time.) Imported estimators need no
    graph: the graph's k is None when every method is one."""
    from odeval.detectors.scoring import plan_ks, required_graph_k

    dets = [(m, method_detector(m)) for m in methods if m.is_knn]
    if not dets:
        return None, []
    graph_k = max(required_graph_k(det, m.ks, n_objects) for m, det in dets)
    return graph_k, [(m, plan_ks(det, m.ks, n_objects, graph_k)) for m, det in dets]


@dataclass
class VariantKPlan:
    """:func:`variant_k_plans` for one dataset variant of a study (``error``: why its file cannot be read)."""

    ref: Variant
    n_objects: int | None
    graph_k: int | None = None
    plans: list[tuple[MethodSpec, KPlan]] = field(default_factory=list)
    error: str | None = None


def study_k_plans(study: Study) -> Iterator[VariantKPlan]:
    """Per dataset variant of ``study``: its N (the file is read) and the k each method will run and skip."""
    from odeval.data import load_dataset

    for ref in study.datasets:
        try:
            n = int(load_dataset(ref.path).X.shape[0])
        except (OSError, ValueError) as exc:
            yield VariantKPlan(ref, None, error=str(exc).splitlines()[0])
            continue
        graph_k, plans = variant_k_plans(study.methods, n)
        yield VariantKPlan(ref, n, graph_k, plans)


def emmv_not_applicable(method: MethodSpec) -> str | None:
    """Why EM/MV cannot be computed for a study method (None when it can): an imported estimator is fitted and
    scores the uniform sample itself (:func:`odeval.labelfree.emmv`); a kNN-family method needs a novelty form
    and its default parameters over k alone (:func:`odeval.labelfree.emmv_all_k`)."""
    from odeval.detectors import get_detector, novelty_methods

    if not method.is_knn:
        return None
    if not method.plain:
        return ("EM/MV not applicable: computed for the kNN family over k alone (no grid axis, no seeds) and for "
                "imported estimators")
    if method.name not in novelty_methods():
        return (f"EM/MV not applicable: {method.name} has no novelty form "
                f"(methods with one: {', '.join(novelty_methods())})")
    if dict(get_detector(method.name).params()) != dict(method.params):
        return f"EM/MV not applicable: emmv_all_k scores {method.name} with default parameters only"
    return None


def load_study(path: str | Path) -> Study:
    """Read and validate a study TOML file; paths inside are relative to the file's folder."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        raise StudyError(str(path), ["the study file does not exist"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(str(path), [f"not valid TOML: {exc}"]) from None
    return study_from_dict(raw, base_dir=path.parent, source=str(path))


def study_from_dict(raw: dict[str, Any], *, base_dir: str | Path = ".", source: str = "<study>") -> Study:
    """Validate a study given as a dict (the parsed TOML); see the module docstring for the keys."""
    from odeval.measures import MEASURES

    problems: list[str] = []
    base_dir = Path(base_dir)
    raw = _classes_as_paths(raw)
    unknown_top = set(raw) - {"study", "datasets", "methods", "internal", "internal_options", "selection", "plugins"}
    if unknown_top:
        problems.append(f"unknown top-level key(s) {sorted(unknown_top)}; expected [study], [[datasets]], [[methods]]")
    meta = raw.get("study", {})
    if not isinstance(meta, dict):
        problems.append("[study] must be a table")
        meta = {}
    known_meta = {"name", "k", "metric", "measures", "keep_scores", "seed", "data_dir", "internal",
                  "internal_options", "selection", "plugins"}
    if set(meta) - known_meta:
        problems.append(f"[study]: unknown key(s) {sorted(set(meta) - known_meta)}; known: {sorted(known_meta)}")

    study_ks: KRange | None = None
    try:
        study_ks = parse_k_range(meta.get("k", "1..100"))
    except ValueError as exc:
        problems.append(f"[study].k: {exc}")

    metric = meta.get("metric", "euclidean")
    if not isinstance(metric, str):
        problems.append(f"[study].metric must be a string, got {metric!r}")
        metric = "euclidean"

    measures_raw = meta.get("measures", "all")
    if measures_raw == "all":
        measures = tuple(MEASURES)
    elif isinstance(measures_raw, list) and all(isinstance(m, str) for m in measures_raw):
        bad = [m for m in measures_raw if m not in MEASURES]
        if bad:
            problems.append(f"[study].measures: unknown measure(s) {bad}; known: {list(MEASURES)}")
        measures = tuple(m for m in measures_raw if m in MEASURES)
    else:
        problems.append(f"[study].measures must be 'all' or a list of names, got {measures_raw!r}")
        measures = tuple(MEASURES)

    keep_scores = meta.get("keep_scores", False)
    if not isinstance(keep_scores, bool):
        problems.append(f"[study].keep_scores must be true or false, got {keep_scores!r}")
        keep_scores = False
    seed = meta.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        problems.append(f"[study].seed must be an integer, got {seed!r}")
        seed = 0

    internal, internal_options, ireos_options = _parse_internal(raw, meta, seed, problems)
    variant_step = _parse_variant_step(raw, meta, seed, ireos_options, problems)

    # --- methods ------------------------------------------------------------------------------
    if any(isinstance(e, dict) and "estimator" in e for e in raw.get("methods") or []) or "plugins" in raw \
            or "plugins" in meta:
        _study_folder_importable(base_dir)
    plugins = _load_plugins(raw, meta, problems)
    methods: list[MethodSpec] = []
    raw_methods = raw.get("methods")
    if not raw_methods:
        problems.append("no [[methods]] given")
        raw_methods = []
    for i, entry in enumerate(raw_methods, start=1):
        methods.extend(_parse_method(i, entry, study_ks, plugins, problems))
    sources: dict[str, set[str | None]] = {}
    for m in methods:
        sources.setdefault(m.name, set()).add(m.estimator)
    for name, paths in sources.items():
        if len(paths) > 1:  # one name, one method: the store and the analysis tell methods apart by name
            problems.append(f"[[methods]]: the name {name!r} stands for {len(paths)} methods "
                            f"({', '.join(sorted(p or 'registered' for p in paths))}); give each its own name")
    seen = set()
    for m in methods:
        key = (m.name, m.params_json, m.setting_json, m.seed, m.estimator)
        if key in seen:
            what = f" at {m.setting}" if m.setting else ""
            problems.append(f"[[methods]]: {m.name} with params {m.params}{what} is listed twice")
        seen.add(key)

    # --- datasets -----------------------------------------------------------------------------
    datasets: list[Variant] = []
    raw_datasets = raw.get("datasets")
    if not raw_datasets:
        problems.append("no [[datasets]] given")
        raw_datasets = []
    data_dir = meta.get("data_dir")
    for i, entry in enumerate(raw_datasets, start=1):
        where = f"[[datasets]] #{i}"
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be a table")
            continue
        try:
            datasets.extend(_resolve_datasets(entry, base_dir, data_dir))
        except (ValueError, FileNotFoundError) as exc:
            problems.append(f"{where}: {exc}")
    names: dict[str, str] = {}
    for d in datasets:
        if d.name in names and names[d.name] != d.path:
            problems.append(f"two different files share the dataset name {d.name!r}: {names[d.name]} and {d.path}")
        names[d.name] = d.path
    unique = list({d.path: d for d in datasets}.values())

    if problems:
        raise StudyError(source, problems)
    return Study(
        name=str(meta.get("name", Path(source).stem)),
        datasets=tuple(sorted(unique, key=lambda d: d.name)),
        methods=tuple(methods),
        metric=metric,
        measures=measures,
        keep_scores=keep_scores,
        seed=seed,
        source=source,
        definition=raw,
        internal=internal,
        internal_options=internal_options,
        variant_step=variant_step,
    )


METHOD_KEYS = ("name", "params", "k", "grid", "seeds", "estimator", "higher_is_outlier")
"""The keys of a ``[[methods]]`` entry."""


def _classes_as_paths(raw: dict[str, Any]) -> dict[str, Any]:
    """From Python, ``estimator`` may be the class itself: it stands for its import path ``module:QualName`` (also
    in the study's stored definition and hash)."""
    methods = raw.get("methods")
    if not isinstance(methods, list) or not any(isinstance(e, dict) and inspect.isclass(e.get("estimator"))
                                                 for e in methods):
        return raw
    converted = [{**e, "estimator": f"{e['estimator'].__module__}:{e['estimator'].__qualname__}"}
                 if isinstance(e, dict) and inspect.isclass(e.get("estimator")) else e for e in methods]
    return {**raw, "methods": converted}


def _study_folder_importable(base_dir: Path) -> None:
    """Put the study file's folder on ``sys.path`` (after what is there) so ``estimator = "mymodule:Class"`` and
    ``plugins = ["mymodule"]`` find a module next to the study file; spawned worker processes inherit the path."""
    import sys

    folder = str(base_dir.resolve())
    if folder not in sys.path:
        sys.path.append(folder)


def _load_plugins(raw: dict[str, Any], meta: dict[str, Any], problems: list[str]) -> tuple[str, ...]:
    """Import the ``plugins`` modules and the ``odeval.detectors`` entry points (they register detectors)."""
    from odeval.detectors.imported import import_plugins, load_entry_points

    if "plugins" in raw and "plugins" in meta:
        problems.append("plugins is given both at the top level and in [study]; give it once")
    names = raw.get("plugins", meta.get("plugins", []))
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        problems.append(f"plugins must be a list of module names, got {names!r}")
        names = []
    try:
        load_entry_points()
    except ValueError as exc:
        problems.append(str(exc))
    good = []
    for module in names:
        try:
            import_plugins([module])
            good.append(module)
        except ValueError as exc:
            problems.append(f"plugins: {exc}")
    return tuple(good)


def _grid_points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The product of the grid's axes, in the order the file gives them (the last axis varies fastest)."""
    import itertools

    names = list(grid)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(grid[n] for n in names))]


def _parse_seeds(entry: dict[str, Any], where: str, problems: list[str]) -> list[int | None]:
    """``seeds = N`` (seeds 0 … N−1) or a list of integers; [None] when absent."""
    if "seeds" not in entry:
        return [None]
    seeds = entry["seeds"]
    if isinstance(seeds, int) and not isinstance(seeds, bool) and seeds >= 1:
        return list(range(seeds))
    if (isinstance(seeds, list) and seeds and all(isinstance(x, int) and not isinstance(x, bool) for x in seeds)
            and len(set(seeds)) == len(seeds)):
        return list(seeds)
    problems.append(f"{where}.seeds must be a positive integer N (seeds 0..N-1) or a list of distinct integers, "
                    f"got {seeds!r}")
    return []


def _parse_grid(entry: dict[str, Any], where: str, problems: list[str]) -> dict[str, list[Any]] | None:
    grid = entry.get("grid", {})
    if not isinstance(grid, dict):
        problems.append(f"{where}.grid must be a table {{name = [values]}}, got {grid!r}")
        return None
    out: dict[str, list[Any]] = {}
    for name, values in grid.items():
        if name == "k" and not isinstance(values, list):
            out[name] = values  # a k range text ("1..50")
            continue
        if not isinstance(values, list) or not values:
            problems.append(f"{where}.grid.{name} must be a non-empty list of values, got {values!r}")
            return None
        if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
            problems.append(f"{where}.grid.{name} lists a value twice: {values!r}")
            return None
        out[name] = values
    return out


def _parse_method(i: int, entry: Any, study_ks: KRange | None, plugins: tuple[str, ...],
                  problems: list[str]) -> list[MethodSpec]:
    """The specs of one ``[[methods]]`` entry (one per non-k grid point and seed); problems are appended."""
    from odeval.detectors import available_methods

    where = f"[[methods]] #{i}"
    if not isinstance(entry, dict) or not ("name" in entry or "estimator" in entry):
        problems.append(f"{where}: needs a name (a registered method) or an estimator (an import path "
                        "'package.module:Class')")
        return []
    label = entry.get("name", entry.get("estimator"))
    where = f"[[methods]] #{i} ({label})"
    extra = set(entry) - set(METHOD_KEYS)
    if extra:
        problems.append(f"{where}: unknown key(s) {sorted(extra)}; known: {list(METHOD_KEYS)}")
    params = entry.get("params", {})
    if not isinstance(params, dict):
        problems.append(f"{where}: params must be a table")
        return []
    grid = _parse_grid(entry, where, problems)
    seeds = _parse_seeds(entry, where, problems)
    if grid is None or not seeds:
        return []
    imports: tuple[str, ...] = ()
    source = None
    name = entry.get("name")
    if "estimator" in entry:
        from odeval.detectors.imported import classify, resolve_class

        try:
            cls = resolve_class(entry["estimator"])
            kind = classify(cls)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            return []
        if kind != "detector":
            return _estimator_specs(where, entry, cls, params, grid, seeds, problems)
        from odeval.detectors import register

        try:
            register(cls)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            return []
        if name is not None and str(name).lower() != cls.info.name.lower():
            problems.append(f"{where}: an odeval Detector is named by its info.name ({cls.info.name!r}); "
                            "leave name out")
            return []
        name = cls.info.name
        # resolved (and registered) again wherever the spec is used: in a spawned worker "__main__:Class" is the
        # script imported again, which is why a script needs its `if __name__ == "__main__":` guard
        source = entry["estimator"].strip()
    if "higher_is_outlier" in entry:
        problems.append(f"{where}: higher_is_outlier is for imported estimators; an odeval detector declares its "
                        "orientation in MethodInfo.inverted")
    known = {m.lower(): m for m in available_methods()}
    if not isinstance(name, str) or name.lower() not in known:
        problems.append(f"{where}: unknown method; available: {', '.join(available_methods())} (or give "
                        "estimator = 'package.module:Class')")
        return []
    name = known[name.lower()]
    if source is None:
        from odeval.detectors.base import _REGISTRY

        module = _REGISTRY[name.lower()].__module__
        if not module.startswith("odeval.") and module not in ("__main__", "__mp_main__"):
            imports = tuple(dict.fromkeys((*plugins, module)))  # registered by a plugin: the workers import it too
    ks = study_ks
    if "k" in entry and "k" in grid:
        problems.append(f"{where}: give k either as k = ... or in grid, not both")
        return []
    k_text = entry.get("k", grid.pop("k", None))
    if k_text is not None:
        try:
            ks = parse_k_range(k_text)
        except ValueError as exc:
            problems.append(f"{where}.k: {exc}")
            return []
    specs = []
    probe = MethodSpec(name=name, params=dict(params), ks=ks, imports=imports, entry=where, source=source)
    try:
        detector = method_detector(probe)
    except (TypeError, ValueError) as exc:
        problems.append(f"{where}: bad parameters {params}: {exc}")
        return []
    if ks is None:
        return []
    if ks.max < detector.info.min_k:
        problems.append(f"{where}: every requested k is below the method's minimum k={detector.info.min_k}")
        return []
    declared = dict(detector.params())
    for axis in grid:
        if axis not in declared:
            problems.append(f"{where}.grid: {name} has no parameter {axis!r}; its parameters: "
                            f"{', '.join(declared) or 'none'} (and k)")
            return []
        if axis in params:
            problems.append(f"{where}: {axis} is both a fixed parameter and a grid axis")
            return []
    if seeds != [None] and "seed" not in declared:
        problems.append(f"{where}: seeds given but {name} is deterministic (it has no seed parameter)")
        return []
    for point in _grid_points(grid):
        for seed in seeds:
            try:
                det = method_detector(MethodSpec(name=name, params=dict(params), ks=ks, setting=point, seed=seed,
                                                 imports=imports, source=source))
            except (TypeError, ValueError) as exc:
                problems.append(f"{where}.grid {point}: {exc}")
                return []
            fixed = {p: v for p, v in det.params().items() if p not in point and (seed is None or p != "seed")}
            specs.append(MethodSpec(name=name, params=fixed, ks=ks, setting=point, seed=seed, imports=imports,
                                    entry=where, source=source))
    return specs


def _estimator_specs(where: str, entry: dict[str, Any], cls: type, params: dict[str, Any],
                     grid: dict[str, list[Any]], seeds: list[int | None], problems: list[str]) -> list[MethodSpec]:
    """The specs of an entry naming a fit/score estimator (scikit-learn style or PyOD): no k, no kNN graph."""
    from odeval.detectors import available_methods
    from odeval.detectors.imported import check_estimator_params

    path = entry["estimator"].strip()
    name = entry.get("name", cls.__name__)
    if not isinstance(name, str) or not name or any(c in name for c in "-([@ "):
        problems.append(f"{where}: name {name!r} must be non-empty without '-', '(', '[', '@' or spaces")
        return []
    if name.lower() in {m.lower() for m in available_methods()}:
        problems.append(f"{where}: {name!r} is the name of odeval's registered method; give this estimator "
                        f"another name (name = \"{cls.__module__.split('.')[0]}_{name}\")")
        return []
    if "k" in entry or "k" in grid:
        problems.append(f"{where}: k is the axis of the kNN-graph family; grid the class's own parameter instead "
                        "(e.g. grid = {n_neighbors = [5, 10, 20]})")
        return []
    hio = entry.get("higher_is_outlier")
    if hio is not None and not isinstance(hio, bool):
        problems.append(f"{where}.higher_is_outlier must be true or false, got {hio!r}")
        return []
    found = check_estimator_params(cls, params, grid, seeded=seeds != [None])
    if found:
        problems.extend(f"{where}: {p}" for p in found)
        return []
    for axis in grid:
        if axis in params:
            problems.append(f"{where}: {axis} is both a fixed parameter and a grid axis")
            return []
    specs = []
    for point in _grid_points(grid):
        try:
            cls(**params, **point)  # constructors that validate (PyOD's) refuse bad values now, not at run time
        except Exception as exc:
            problems.append(f"{where}: {cls.__name__}(**{ {**params, **point} }) fails: {type(exc).__name__}: {exc}")
            return []
        specs += [MethodSpec(name=name, params=dict(params), ks=None, setting=point, seed=seed, estimator=path,
                             higher_is_outlier=hio, entry=where) for seed in seeds]
    return specs


def _parse_internal(raw: dict[str, Any], meta: dict[str, Any], seed: int, problems: list[str]
                    ) -> tuple[tuple[str, ...], dict[str, int], dict[str, Any] | None]:
    """``internal`` and ``internal_options`` (top level or in [study]): the per-unit measures (EM/MV) with their
    options, and the IREOS options (None without IREOS). Problems are appended, not raised."""
    for key in ("internal", "internal_options", "selection"):
        if key in raw and key in meta:
            problems.append(f"{key} is given both at the top level and in [study]; give it once")
    names = raw.get("internal", meta.get("internal", []))
    opts = raw.get("internal_options", meta.get("internal_options", {}))
    wanted: set[str] = set()
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        problems.append(f"internal must be a list of names from {list(INTERNAL_MEASURES)}, got {names!r}")
    else:
        bad = [n for n in names if n.lower() not in INTERNAL_MEASURES]
        if bad:
            problems.append(f"internal: unknown measure(s) {bad}; known: {list(INTERNAL_MEASURES)}")
        wanted = {n.lower() for n in names}
    internal = tuple(m for m in UNIT_MEASURES if m in wanted)
    options: dict[str, Any] = {}
    ireos_opts: dict[str, Any] = {}
    if not isinstance(opts, dict):
        problems.append(f"internal_options must be a table, got {opts!r}")
        opts = {}
    if opts and not wanted:
        problems.append("internal_options given without internal = [...]")
    for key, value in opts.items():
        if key in IREOS_OPTIONS:
            if "ireos" not in wanted:
                problems.append(f"internal_options.{key} is an IREOS option but internal does not ask for 'ireos'")
            else:
                why = _check_ireos_option(key, value)
                if why:
                    problems.append(f"internal_options.{key} {why}, got {value!r}")
                else:
                    ireos_opts[key] = value
        elif key not in INTERNAL_OPTIONS:
            problems.append(f"internal_options: unknown key {key!r}; known: {list(INTERNAL_OPTIONS)} (EM/MV), "
                            f"{list(IREOS_OPTIONS)} (IREOS)")
        elif key != "seed" and not internal:
            problems.append(f"internal_options.{key} is an EM/MV option but internal asks for neither 'em' nor 'mv'")
        elif key in ("box", "sampling"):
            allowed = BOXES if key == "box" else SAMPLINGS
            if value in allowed:
                options[key] = value
            else:
                problems.append(f"internal_options.{key} must be one of {list(allowed)}, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int) or (key != "seed" and value < 1):
            problems.append(f"internal_options.{key} must be an integer{'' if key == 'seed' else ' ≥ 1'}, "
                            f"got {value!r}")
        else:
            options[key] = value
    if internal:
        options.setdefault("seed", seed)
    if "ireos" not in wanted:
        return internal, options if internal else {}, None
    ireos = dict(IREOS_OPTIONS) | ireos_opts
    ireos["seed"] = opts.get("seed", seed) if isinstance(opts.get("seed", seed), int) else seed
    ireos["candidates"] = str(ireos["candidates"])
    if ireos["knn"] == "exact":
        ireos["knn"] = None
    if ireos["null"] == "permutation":  # the older null: its tasks keep the ids (and the stored values) they had
        del ireos["null"]
    if ireos["classifier"] == "optimum":  # the older classifier: likewise
        del ireos["classifier"]
    return internal, options if internal else {}, ireos


def _check_ireos_option(key: str, value: Any) -> str | None:
    """Why an IREOS option value is bad (None when it is fine)."""
    def positive_int(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= 1

    if key == "mcl":  # a study names m_cl by an integer or "sqrt5" (IREOSSettings also takes any number >= 1)
        return None if positive_int(value) or value == "sqrt5" else "must be 1, a larger integer or 'sqrt5'"
    if key == "knn":
        return None if positive_int(value) or value == "exact" else "must be a positive integer or 'exact'"
    if key == "adjust":
        return None if isinstance(value, bool) else "must be true or false"
    if key in ("quadrature", "n_gamma", "tol", "C", "gamma_max", "null", "classifier"):
        if key == "gamma_max" and value is None:
            return "must be a positive number"  # TOML has no null: a given gamma_max is a number
        return IREOSSettings.problem(key, value)
    if key == "candidates":
        return None if value == "all" or positive_int(value) else "must be 'all' or a positive integer"
    return "is unknown"  # pragma: no cover - keys come from IREOS_OPTIONS


def _parse_variant_step(raw: dict[str, Any], meta: dict[str, Any], seed: int, ireos: dict[str, Any] | None,
                        problems: list[str]) -> VariantStep | None:
    """The per-variant step: IREOS (from ``internal``) and the ``[selection]`` table; None when neither."""
    sel = raw.get("selection", meta.get("selection"))
    selectors: tuple[str, ...] | None = None
    candidates = "all"
    if sel is not None:
        if not isinstance(sel, dict):
            problems.append(f"[selection] must be a table, got {sel!r}")
            sel = {}
        extra = set(sel) - set(SELECTION_KEYS)
        if extra:
            problems.append(f"[selection]: unknown key(s) {sorted(extra)}; known: {list(SELECTION_KEYS)}")
        from odeval.labelfree.selection import default_selectors, get_selector

        names = sel.get("selectors", "default")
        if names == "default":
            selectors = default_selectors()
        elif isinstance(names, list) and names and all(isinstance(n, str) for n in names):
            found = []
            for n in names:
                try:
                    found.append(get_selector(n).name)
                except ValueError as exc:
                    problems.append(f"[selection].selectors: {exc}")
            selectors = tuple(dict.fromkeys(found))
        else:
            problems.append(f"[selection].selectors must be 'default' or a non-empty list of names, got {names!r}")
        cand = sel.get("candidates", "all")
        modes = cand if isinstance(cand, list) else [cand]
        if not modes or any(_check_ireos_option("candidates", c) for c in modes):
            problems.append(f"[selection].candidates must be 'all', a positive integer or a list of them (e.g. "
                            f"[\"all\", 10]), got {cand!r}")
        else:
            found_modes = tuple(dict.fromkeys(str(c) for c in modes))
            candidates = found_modes[0] if len(found_modes) == 1 else found_modes
    if ireos is None and selectors is None:
        return None
    return VariantStep(ireos=ireos, selectors=selectors, selection_candidates=candidates, seed=seed)


def _resolve_datasets(entry: dict[str, Any], base_dir: Path, data_dir: str | None) -> list[Variant]:
    """Turn one [[datasets]] entry into dataset references (files must exist)."""
    file_keys = {"path", "glob"}
    if file_keys & set(entry):
        extra = set(entry) - file_keys - {"base"}
        if extra:
            raise ValueError(f"unknown key(s) {sorted(extra)} next to path/glob")
        paths: list[Path] = []
        if "path" in entry:
            p = Path(entry["path"])
            p = p if p.is_absolute() else base_dir / p
            if not p.is_file():
                raise FileNotFoundError(f"dataset file {p} does not exist")
            paths.append(p)
        if "glob" in entry:
            pattern = entry["glob"]
            pattern = pattern if Path(pattern).is_absolute() else str(base_dir / pattern)
            found = sorted(Path(p) for p in _glob.glob(pattern, recursive=True))
            if not found:
                raise FileNotFoundError(f"glob {entry['glob']!r} matches no file (looked for {pattern})")
            paths.extend(found)
        from odeval.data.loaders import dataset_format

        for p in paths:  # the extension decides the loader: check it now, not at run time
            dataset_format(p)
        return [_ref_from_path(p, entry.get("base")) for p in paths]
    return _resolve_catalogue(entry, base_dir, data_dir)


def _ref_from_path(path: Path, base: str | None) -> Variant:
    """A reference for a plain file: the catalogue parses the Campos naming scheme when the name follows it."""
    from dataclasses import replace

    from odeval.data import catalogue

    variant = catalogue.variant_from_path(path)
    return replace(variant, base=base) if base else variant


def _resolve_catalogue(entry: dict[str, Any], base_dir: Path, data_dir: str | None) -> list[Variant]:
    from odeval.data import catalogue

    return catalogue.study_refs(entry, base_dir=base_dir, data_dir=data_dir)
