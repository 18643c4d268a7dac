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
    draws = 10                  # n_generated = 100000, seed = the study's seed
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
import json
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from odeval._krange import KRange, parse_k_range
from odeval.data.catalogue import Variant
from odeval.labelfree.emmv_algorithm import EMMVSettings
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
                                 "gamma_max": _IREOS.gamma_max, "null": _IREOS.null, "candidates": "all"}
"""IREOS keys of ``[internal_options]`` with their defaults: those of :class:`odeval.labelfree.ireos.IREOSSettings`
(``mcl`` is its ``m_cl``), but ``knn`` = :data:`~odeval.labelfree.ireos.PAPER_KNN`, the kNN-subset approximation of
Marques et al. 2020 §3.5.3 ("exact" for none; exact anyway when N <= knn + 1), and ``adjust`` = true. The order of
the keys is part of no hash (the study hash sorts them). ``null = "permutation"`` (odeval's only null before
2026-11) is dropped from a task's options, so its task id is the one an older store holds; the default
``"uniform"`` (the paper's null) enters the id, so stores of the older null are never reused for it."""
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
    """A method with its parameters and the k values it is run at (a :class:`~odeval._krange.KRange`, never
    expanded here: each dataset variant caps it at N − 1)."""

    name: str
    params: dict[str, Any]
    ks: KRange | Any

    @property
    def params_json(self) -> str:
        return json.dumps(self.params, sort_keys=True)


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
    internal_options: dict[str, int] = field(default_factory=dict)
    variant_step: VariantStep | None = None

    @property
    def internal_key(self) -> dict[str, Any] | None:
        """The internal-measure request as it enters the study hash and unit ids (None when there is none,
        so studies without ``internal`` keep their hash and unit ids)."""
        if not self.internal:
            return None
        return {"internal": list(self.internal), "options": dict(sorted(self.internal_options.items()))}

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
                "methods": [(m.name, m.params, parse_k_range(m.ks).canonical()) for m in self.methods],
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
        return max(parse_k_range(m.ks).max for m in self.methods)


def method_k_plans(study: Study) -> list[tuple[MethodSpec, KRange, dict[str, str]]]:
    """Per method: the k that will run (before the per-variant cap at N − 1) and the skipped k with reasons."""
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import plan_ks

    out = []
    for m in study.methods:
        rng = parse_k_range(m.ks)
        det = get_detector(m.name, **m.params)
        skipped = plan_ks(det, rng.capped(det.info.min_k) or rng, rng.max + 1).skipped
        out.append((m, rng.above(det.info.min_k), skipped))
    return out


def variant_k_plans(methods: Sequence[MethodSpec], n_objects: int) -> tuple[int, list[tuple[MethodSpec, KPlan]]]:
    """What the runner does on a dataset variant of ``n_objects`` objects: the k of the kNN graph it builds and,
    per method, the :class:`~odeval.detectors.scoring.KPlan` (k that will run; skipped k with the reason the
    runner records in ``units.skipped``) — :func:`odeval.detectors.scoring.plan_ks`, the one owner of these rules.
    (Only k whose scores turn out NaN can still be skipped at run time.)"""
    from odeval.detectors import get_detector
    from odeval.detectors.scoring import plan_ks, required_graph_k

    dets = [(m, get_detector(m.name, **m.params)) for m in methods]
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
    """Why EM/MV cannot be computed for a study method (None when it can): :func:`odeval.labelfree.
    emmv_all_k` needs a novelty form and scores with the method's default parameters."""
    from odeval.detectors import get_detector, novelty_methods

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
    from odeval.detectors import available_methods, get_detector
    from odeval.measures import MEASURES

    problems: list[str] = []
    base_dir = Path(base_dir)
    unknown_top = set(raw) - {"study", "datasets", "methods", "internal", "internal_options", "selection"}
    if unknown_top:
        problems.append(f"unknown top-level key(s) {sorted(unknown_top)}; expected [study], [[datasets]], [[methods]]")
    meta = raw.get("study", {})
    if not isinstance(meta, dict):
        problems.append("[study] must be a table")
        meta = {}
    known_meta = {"name", "k", "metric", "measures", "keep_scores", "seed", "data_dir", "internal",
                  "internal_options", "selection"}
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
    methods: list[MethodSpec] = []
    raw_methods = raw.get("methods")
    if not raw_methods:
        problems.append("no [[methods]] given")
        raw_methods = []
    known = {m.lower(): m for m in available_methods()}
    for i, entry in enumerate(raw_methods, start=1):
        where = f"[[methods]] #{i}"
        if not isinstance(entry, dict) or "name" not in entry:
            problems.append(f"{where}: needs a name")
            continue
        name = entry["name"]
        where = f"[[methods]] #{i} ({name})"
        extra = set(entry) - {"name", "params", "k"}
        if extra:
            problems.append(f"{where}: unknown key(s) {sorted(extra)}")
        if not isinstance(name, str) or name.lower() not in known:
            problems.append(f"{where}: unknown method; available: {', '.join(available_methods())}")
            continue
        name = known[name.lower()]
        params = entry.get("params", {})
        if not isinstance(params, dict):
            problems.append(f"{where}: params must be a table")
            continue
        try:
            detector = get_detector(name, **params)
        except (TypeError, ValueError) as exc:
            problems.append(f"{where}: bad parameters {params}: {exc}")
            continue
        ks = study_ks
        if "k" in entry:
            try:
                ks = parse_k_range(entry["k"])
            except ValueError as exc:
                problems.append(f"{where}.k: {exc}")
                continue
        if ks is None:
            continue
        if ks.max < detector.info.min_k:
            problems.append(f"{where}: every requested k is below the method's minimum k={detector.info.min_k}")
            continue
        methods.append(MethodSpec(name=name, params=dict(detector.params()), ks=ks))
    seen = set()
    for m in methods:
        key = (m.name, m.params_json)
        if key in seen:
            problems.append(f"[[methods]]: {m.name} with params {m.params} is listed twice")
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
    options: dict[str, int] = {}
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
    if key in ("quadrature", "n_gamma", "tol", "C", "gamma_max", "null"):
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
