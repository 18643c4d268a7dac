"""Whole-store identity check for behaviour-preserving refactors (issue 23, "Acceptance").

Subcommands (``selftest STORE``, last, shows on a perturbed copy of a store that ``compare`` catches each kind of
change and ignores what it should):

``run STORE``
    Stages the input data into a folder (default ``identity-data/`` next to STORE) and runs three studies through
    the public study runner (:func:`odeval.bench.run_study`, one worker, in this process) into STORE, which must
    not exist yet:

    * ``store_identity.toml``: the 11 vendored Campos files + 8 small Campos variants of ``../shared/datasets/dami``,
      the twelve Campos methods + GLOSH × k = 1..100, all external measures, score vectors kept, per-unit EM/MV
      with reduced settings (2 feature draws, 1,000 uniform points), per-variant IREOS of all candidates and the
      cheap label-free selectors among all candidates and among the ten of Marques et al. (2020, §4.2);
    * ``store_identity_emmv.toml``: the selectors whose settings are module defaults, not study options (``em``,
      ``mv``, ``ireos``) and ``mc-kendall``, among the ten candidates, on five small variants;
    * ``store_identity_options.toml``: another seed, IREOS options away from their defaults, the default selector
      set + ``ireos-sqrt5`` + ``laplacian-sqrt`` among the ten candidates, on the two smallest variants.

    Then ``odeval select-audit STORE --candidates all|10 --json`` (a subprocess of the same interpreter), its
    output kept next to the store (``STORE.select-audit-MODE.json`` / ``.stderr``) and compared too.

    Staging makes every path the store records (the study hash, which hashes the dataset paths; ``studies.source``;
    ``runs.provenance``; error messages) the same for the "before" and the "after" run, whichever checkout runs
    them: give both runs the same ``--data-dir`` (the default is the same when both stores are in the same folder).
    An existing staging folder is reused only when its files are byte-identical to the sources.

    ``--only NAME ...`` runs the same studies restricted to the named dataset variants (the unit and task ids do
    not depend on the other variants; the study hashes do): compare such a store with ``compare --subset``.

    Thread counts are pinned to 1 (numba, OpenMP, BLAS) before odeval is imported, so that no parallel
    reduction can make two runs differ.

``compare STORE_A STORE_B``
    Reads every table of both stores (a read-only DuckDB connection: a benchmark script may, ``src/`` may not)
    and compares them bit for bit: rows matched by their natural key (:data:`KEYS`), every other column compared
    exactly — floats by their bits (so -0.0 differs from 0.0), NaN equal to NaN, NULL equal only to NULL, list
    columns element by element, JSON text by its parsed content (key order ignored). Ignored, and listed here:
    :data:`IGNORED_COLUMNS` (timings, timestamps, the odeval version), :data:`IGNORED_JSON_KEYS` (timings inside
    JSON details) and :data:`NOTED_META_KEYS` (reported, never a failure). A table or column present in one store
    only is reported as a schema difference (a failure) instead of a crash; ``--rename-table A=B`` and
    ``--rename-column TABLE.A=B`` map a legitimate rename, ``--ignore-column TABLE.COL`` drops a column
    (``*.COL``: in every table). ``--map-ids`` matches units, per-variant tasks and studies by content when their
    content-hash ids changed (:data:`_ID_QUERIES`; the changed ids are reported and still fail the check, the
    tables are compared on the mapped rows). The ``select-audit`` outputs kept next to the stores are compared as
    parsed JSON (exact floats) and their warnings line by line. ``--subset``: STORE_B was run with ``--only`` —
    rows of A missing from B, the study tables, the ``study_hash`` columns and the audits are not compared. Prints a
    summary per table and exits 1 on any difference (2 on a usage error).

Usage (from the repository root; see benchmarks/README.md, "store_identity.py")::

    PYTHONPATH=$PWD/src nice -n 10 .venv/bin/python benchmarks/store_identity.py run /work/identity/before.duckdb
    PYTHONPATH=$PWD/src nice -n 10 .venv/bin/python benchmarks/store_identity.py run /work/identity/after.duckdb
    .venv/bin/python benchmarks/store_identity.py compare /work/identity/before.duckdb /work/identity/after.duckdb
"""

from __future__ import annotations

import os

# Before numpy/numba are imported: one thread everywhere, in both runs (a parallel reduction's result may depend
# on the number of threads), and the 2 shared cores of this project's machine are not oversubscribed.
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import inspect  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tomllib  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

HERE = Path(__file__).resolve().parent
STUDY_FILES = ("store_identity.toml", "store_identity_emmv.toml", "store_identity_options.toml")
SHARED_DAMI = Path(os.environ.get("ODEVAL_SHARED_DATASETS", HERE.parent.parent / "shared" / "datasets")) / "dami"
#: The 8 small Campos variants taken from the shared collection (none of them vendored), relative to its dami/.
CAMPOS_VARIANTS = (
    "HeartDisease/HeartDisease_withoutdupl_norm_02_v01.arff",   # N = 157, d = 13
    "Hepatitis/Hepatitis_withoutdupl_norm_05_v02.arff",         # N = 74, d = 19
    "Ionosphere/Ionosphere_withoutdupl_norm.arff",              # N = 351, d = 32
    "Lymphography/Lymphography_withoutdupl_idf.arff",           # N = 148, d = 18, not normalised
    "Parkinson/Parkinson_withoutdupl_norm_05_v02.arff",         # N = 50, d = 22
    "Pima/Pima_withoutdupl_norm_02_v01.arff",                   # N = 510, d = 8
    "WBC/WBC_withoutdupl_norm_v02.arff",                        # N = 223, d = 9
    "WDBC/WDBC_withoutdupl_norm_v01.arff",                      # N = 367, d = 30
)

# ----------------------------------------------------------------------------------------------- compare rules
#: Natural key of each table (a table not listed is compared as a multiset of whole rows).
KEYS: dict[str, tuple[str, ...]] = {
    "meta": ("key",),
    "studies": ("study_hash",),
    "study_units": ("study_hash", "unit_id"),
    "units": ("unit_id",),
    "runs": ("unit_id", "k"),
    "labels": ("dataset", "file_sha256"),
    "outlier_ranks": ("unit_id", "k", "object"),
    "scores": ("unit_id", "k"),
    "internal_measures": ("unit_id", "k", "measure"),
    "variant_tasks": ("task_id",),
    "study_variant_tasks": ("study_hash", "task_id"),
    "variant_candidates": ("task_id", "candidate"),
    "variant_values": ("task_id", "candidate", "measure"),
    "selection_picks": ("task_id", "selector"),
}
#: Columns that legitimately differ between two runs of the same computation ("*": in every table).
IGNORED_COLUMNS: dict[str, frozenset[str]] = {
    "*": frozenset({"runtime_s", "odeval_version"}),   # wall time of the unit / task; the package version
    "studies": frozenset({"created"}),                  # timestamp
    "units": frozenset({"finished"}),                   # timestamp
    "variant_tasks": frozenset({"finished"}),           # timestamp
}
#: Keys dropped (at any depth) from JSON text before comparing it: timings.
IGNORED_JSON_KEYS = frozenset({"scoring_s", "cpu_seconds", "cpu_s", "wall_s", "runtime_s", "elapsed_s"})
#: ``meta`` rows whose differences are printed but do not fail the check (a refactor that changes a table must
#: bump the schema version; ``created_by`` names the odeval version).
NOTED_META_KEYS = frozenset({"schema_version", "created_by"})
#: With ``--subset``: tables tied to the study definition (its dataset list), and the column naming the study.
STUDY_TABLES = frozenset({"studies", "study_units", "study_variant_tasks"})
STUDY_COLUMN = "study_hash"
MAX_SHOWN = 5
#: ``odeval select-audit`` is run on the store for these candidate modes; its JSON output (and its warnings) are
#: kept next to the store and compared too (the audit reads the store: a downstream check of what it holds).
AUDIT_MODES = ("all", "10")


# ================================================================================================== run
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stage(data_dir: Path) -> list[Path]:
    """Copy the study files and the datasets into ``data_dir`` (or check that the copies there are identical)."""
    import odeval

    vendored = Path(odeval.__file__).resolve().parent / "data" / "vendored" / "dami"
    sources = {p.relative_to(vendored): p for p in sorted(vendored.glob("*/*.arff"))}
    if not sources:
        raise SystemExit(f"no vendored datasets under {vendored}")
    for rel in CAMPOS_VARIANTS:
        src = SHARED_DAMI / rel
        if not src.is_file():
            raise SystemExit(f"Campos variant {src} not found (set ODEVAL_SHARED_DATASETS to the datasets folder)")
        if Path(rel) in sources:
            raise SystemExit(f"{rel} is both vendored and in CAMPOS_VARIANTS")
        sources[Path(rel)] = src
    files = {Path("dami") / rel: src for rel, src in sources.items()}
    files.update({Path(name): HERE / name for name in STUDY_FILES})
    for rel, src in files.items():
        dst = data_dir / rel
        if dst.exists():
            if _sha256(dst) != _sha256(src):
                raise SystemExit(f"staged {dst} differs from its source {src}: use another --data-dir (or remove "
                                 f"the staging folder if no store made from it is still to be compared)")
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    extra = sorted(p for p in (data_dir / "dami").glob("*/*") if p.relative_to(data_dir) not in files)
    if extra:
        raise SystemExit(f"unexpected files in the staging folder: {[str(p) for p in extra]}")
    print(f"staged {len(files) - len(STUDY_FILES)} dataset files and {len(STUDY_FILES)} study files in {data_dir}")
    return [data_dir / name for name in STUDY_FILES]


def _restricted(study_path: Path, only: set[str]) -> Any:
    """The study of ``study_path``, its datasets restricted to the variants named in ``only`` (None if none)."""
    from odeval.bench.config import load_study, study_from_dict

    full = load_study(study_path)
    keep = [d for d in full.datasets if d.name in only]
    if not keep:
        return None
    raw = tomllib.loads(study_path.read_text())
    raw["datasets"] = [{"path": d.path} for d in keep]
    return study_from_dict(raw, base_dir=study_path.parent, source=str(study_path))


def _one_worker(run_study: Any) -> dict[str, Any]:
    """Keyword arguments for one local worker and log progress, by the runner's signature (the refactor may
    rename the degree-of-parallelism parameter)."""
    params = inspect.signature(run_study).parameters
    name = next((n for n in ("workers", "n_jobs", "jobs") if n in params), None)
    if name is None:
        raise SystemExit(f"run_study{inspect.signature(run_study)}: no workers/n_jobs/jobs parameter; adapt "
                         f"_one_worker in {__file__}")
    kwargs: dict[str, Any] = {name: 1}
    if "progress" in params:
        kwargs["progress"] = "log"
    return kwargs


def cmd_run(args: argparse.Namespace) -> int:
    store = Path(args.store).resolve()
    if store.exists():
        print(f"{store} exists: the check needs a fresh store (remove it or pick another name)", file=sys.stderr)
        return 2
    data_dir = Path(args.data_dir).resolve() if args.data_dir else store.parent / "identity-data"
    study_paths = stage(data_dir)

    import odeval
    from odeval.bench import load_study, run_study

    print(f"odeval {odeval.__version__} from {Path(odeval.__file__).resolve().parent}; store {store}; "
          f"threads pinned to 1 ({', '.join(v for v in os.environ if v.endswith('_NUM_THREADS'))})", flush=True)
    kwargs = _one_worker(run_study)
    only = set(args.only or ())
    t_all, c_all = time.perf_counter(), time.process_time()
    failed = 0
    for path in study_paths:
        study = _restricted(path, only) if only else load_study(path)
        if study is None:
            print(f"{path.name}: none of --only among its datasets, skipped")
            continue
        t0, c0 = time.perf_counter(), time.process_time()
        summary = run_study(study, store, **kwargs)
        bad = len(getattr(summary, "failed", ()) or ())
        failed += bad
        print(f"{path.name}: study {study.name!r} ({study.study_hash}), {len(study.datasets)} variants × "
              f"{len(study.methods)} methods: {getattr(summary, 'ok', '?')} units computed, "
              f"{getattr(summary, 'already_done', '?')} already in the store, {bad} failed (kept: the store "
              f"records errors too), per-variant tasks {getattr(summary, 'variant_tasks_total', '?')}; "
              f"{time.perf_counter() - t0:.1f} s wall, {time.process_time() - c0:.1f} s CPU", flush=True)
    for mode in AUDIT_MODES:
        t0 = time.perf_counter()
        out, err = audit_files(store, mode)
        with out.open("w") as fo, err.open("w") as fe:
            proc = subprocess.run([sys.executable, "-m", "odeval.cli", "select-audit", str(store), "--candidates",
                                   mode, "--json"], stdout=fo, stderr=fe, check=False)
        print(f"select-audit --candidates {mode}: exit {proc.returncode}, {time.perf_counter() - t0:.1f} s wall "
              f"-> {out.name}, {err.name}", flush=True)
    print(f"done: {time.perf_counter() - t_all:.1f} s wall, {time.process_time() - c_all:.1f} s CPU (this "
          f"process), {store.stat().st_size / 2**20:.1f} MiB, {failed} failed unit(s)/task(s) recorded")
    return 0


def audit_files(store: Path, mode: str) -> tuple[Path, Path]:
    """The files next to ``store`` holding ``odeval select-audit --candidates MODE --json``: stdout, stderr."""
    return (store.with_name(f"{store.name}.select-audit-{mode}.json"),
            store.with_name(f"{store.name}.select-audit-{mode}.stderr"))


# ============================================================================================== compare
_NAN = ("nan",)
_NULL = ("null",)


def _canon_float(v: float) -> Any:
    """Exact, hashable form of a float: its bits, every NaN the same."""
    return _NAN if v != v else struct.pack("<d", v)


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in IGNORED_JSON_KEYS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _canon_json(text: str) -> Any:
    """Parsed JSON without the ignored keys, dumped with sorted keys (floats round-trip exactly); plain text
    when it is not JSON."""
    if not text or text[0] not in "{[":
        return text
    try:
        obj = json.loads(text)
    except ValueError:
        return text
    return "json:" + json.dumps(_strip(obj), sort_keys=True, allow_nan=True)


def _canon_list(values: list[Any]) -> Any:
    """A list column value: floats as one byte string of their bits (NaN made canonical), else a tuple."""
    if values and all(isinstance(v, float) for v in values):
        import numpy as np

        a = np.asarray(values, dtype="<f8")
        a[np.isnan(a)] = np.nan  # one NaN bit pattern
        return ("f8[]", a.tobytes())
    return tuple(_canon_value(v) for v in values)


def _canon_value(v: Any) -> Any:
    if v is None:
        return _NULL
    if isinstance(v, float):
        return _canon_float(v)
    if isinstance(v, str):
        return _canon_json(v)
    if isinstance(v, list | tuple):
        return _canon_list(list(v))
    if isinstance(v, dict):
        return tuple(sorted((k, _canon_value(x)) for k, x in v.items()))
    return v  # int, bool, timestamp, ...


def _shown(c: Any) -> str:
    """A canonical value, readable."""
    if c is _NAN or c == _NAN:
        return "NaN"
    if c == _NULL:
        return "NULL"
    if isinstance(c, bytes) and len(c) == 8:
        return repr(struct.unpack("<d", c)[0])
    if isinstance(c, tuple) and len(c) == 2 and c[0] == "f8[]":
        return f"<{len(c[1]) // 8} floats>"
    s = str(c)
    return s if len(s) <= 120 else s[:117] + "..."


def _list_diff(a: Any, b: Any) -> str:
    """Where two float-list values first differ."""
    import numpy as np

    x, y = np.frombuffer(a[1], dtype="<f8"), np.frombuffer(b[1], dtype="<f8")
    if x.size != y.size:
        return f"lengths {x.size} vs {y.size}"
    diff = np.flatnonzero((x.view("<i8") != y.view("<i8")) & ~(np.isnan(x) & np.isnan(y)))
    i = int(diff[0])
    return f"{diff.size} of {x.size} elements differ, first [{i}]: {float(x[i])!r} vs {float(y[i])!r}"


def _describe(a: Any, b: Any) -> str:
    if isinstance(a, tuple) and isinstance(b, tuple) and a[:1] == b[:1] == ("f8[]",):
        return _list_diff(a, b)
    return f"{_shown(a)}  vs  {_shown(b)}"


@dataclass
class TableReport:
    name: str
    rows_a: int = 0
    rows_b: int = 0
    compared: int = 0
    differing: int = 0
    only_a: int = 0
    only_b: int = 0
    schema: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    by_column: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.differing or self.only_b or self.schema) or (self.only_a > 0 and not SUBSET)


SUBSET = False  # set by cmd_compare (--subset)


def _tables(con: Any) -> list[str]:
    return [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                      "WHERE table_schema = 'main' ORDER BY table_name").fetchall()]


def _columns(con: Any, table: str) -> list[str]:
    return [r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                      "AND table_schema = 'main' ORDER BY ordinal_position", [table]).fetchall()]


def _rows(con: Any, table: str, columns: list[str], key: list[str], id_map: dict[str, dict[str, str]] | None = None
          ) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Canonical rows keyed by ``key`` (repeated keys get an occurrence number, in the order of the other
    columns' canonical values, so a multiset compares equal whatever the storage order). ``id_map``: per id
    column (``unit_id``, ``task_id``, ``study_hash``), B's id → A's id (``--map-ids``)."""
    cols = ", ".join(f'"{c}"' for c in columns)
    cur = con.execute(f'SELECT {cols} FROM "{table}"')
    ki = [columns.index(c) for c in key]
    maps = [(i, id_map[c]) for i, c in enumerate(columns) if id_map and c in id_map]
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    while batch := cur.fetchmany(20_000):
        for raw in batch:
            if maps:
                raw = list(raw)
                for i, m in maps:
                    raw[i] = m.get(raw[i], raw[i])
            row = tuple(_canon_value(v) for v in raw)
            groups.setdefault(tuple(row[i] for i in ki), []).append(row)
    out = {}
    for k, rows in groups.items():
        if len(rows) == 1:
            out[k] = rows[0]
        else:
            for n, row in enumerate(sorted(rows, key=repr)):
                out[(*k, ("#", n))] = row
    return out


def compare_table(con_a: Any, con_b: Any, name_a: str, name_b: str, renames: dict[str, str],
                  ignored: set[str], id_map: dict[str, dict[str, str]] | None = None) -> TableReport:
    """Compare one table of A with its counterpart in B (``renames``: A's column name → B's)."""
    rep = TableReport(name_a if name_a == name_b else f"{name_a} → {name_b}")
    cols_a = [c for c in _columns(con_a, name_a) if c not in ignored]
    cols_b = [c for c in _columns(con_b, name_b) if c not in ignored]
    in_b = {renames.get(c, c) for c in cols_a}
    only_a = [c for c in cols_a if renames.get(c, c) not in cols_b]
    only_b = [c for c in cols_b if c not in in_b]
    if only_a:
        rep.schema.append(f"column(s) only in A: {only_a}")
    if only_b:
        rep.schema.append(f"column(s) only in B: {only_b}")
    common_a = [c for c in cols_a if renames.get(c, c) in cols_b]
    common_b = [renames.get(c, c) for c in common_a]
    key = [c for c in KEYS.get(name_a, ()) if c in common_a]
    if len(key) < len(KEYS.get(name_a, ())):
        missing = [c for c in KEYS[name_a] if c not in key]
        rep.schema.append(f"key column(s) {missing} not in both stores: rows compared as a multiset of the "
                          f"common columns (map a rename with --rename-column {name_a}.OLD=NEW)")
        key = []
    if not KEYS.get(name_a):
        rep.notes.append("no natural key known: compared as a multiset of whole rows")
    if not key:
        key = list(common_a)
    key_b = [renames.get(c, c) for c in key]
    ra = _rows(con_a, name_a, common_a, key)
    rb = _rows(con_b, name_b, common_b, key_b,
               {renames.get(c, c): m for c, m in id_map.items()} if id_map else None)
    rep.rows_a, rep.rows_b = len(ra), len(rb)
    missing_b = [k for k in ra if k not in rb]
    extra_b = [k for k in rb if k not in ra]
    rep.only_a, rep.only_b = len(missing_b), len(extra_b)
    for label, keys in (("only in A", missing_b), ("only in B", extra_b)):
        if keys and (label == "only in B" or not SUBSET):
            shown = ", ".join("(" + ", ".join(_shown(v) for v in k) + ")" for k in keys[:3])
            rep.examples.append(f"{len(keys)} row(s) {label}, e.g. key ({', '.join(key)}) = {shown}")
    for k, row_a in ra.items():
        row_b = rb.get(k)
        if row_b is None:
            continue
        rep.compared += 1
        if row_a == row_b:
            continue
        rep.differing += 1
        diff_cols = [i for i, (x, y) in enumerate(zip(row_a, row_b, strict=True)) if x != y]
        for i in diff_cols:
            rep.by_column[common_a[i]] = rep.by_column.get(common_a[i], 0) + 1
        if len(rep.examples) < MAX_SHOWN + 2:
            where = ", ".join(f"{c}={_shown(v)}" for c, v in zip(key, k, strict=False))
            rep.examples.append(f"[{where}] " + "; ".join(f"{common_a[i]}: {_describe(row_a[i], row_b[i])}"
                                                          for i in diff_cols[:3]))
    if name_a == "meta":  # the noted keys are reported, not failed
        noted = [k for k in ra if k[0] in NOTED_META_KEYS and k in rb and ra[k] != rb[k]]
        if noted:
            rep.differing -= len(noted)
            rep.by_column.clear()
            rep.examples = [e for e in rep.examples if not any(f"key={k[0]}" in e for k in noted)]
            rep.notes += [f"meta {k[0]}: {_shown(ra[k][1])} vs {_shown(rb[k][1])} (noted, not a failure)"
                          for k in noted]
    return rep


def _json_diffs(a: Any, b: Any, where: str, out: list[str]) -> None:
    """Append one line per difference between two parsed JSON values (floats exact: JSON keeps every bit)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in b or k not in a:
                out.append(f"{where}.{k}: only in {'A' if k in a else 'B'}")
            else:
                _json_diffs(a[k], b[k], f"{where}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} vs {len(b)} items")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _json_diffs(x, y, f"{where}[{i}]", out)
    elif type(a) is not type(b) or (_canon_float(a) != _canon_float(b) if isinstance(a, float) else a != b):
        out.append(f"{where}: {str(a)[:100]}  vs  {str(b)[:100]}")


def compare_audits(store_a: Path, store_b: Path) -> bool:
    """Compare the ``select-audit`` outputs kept next to both stores; True when they differ."""
    failed = False
    print()
    for mode in AUDIT_MODES:
        (ja, ea), (jb, eb) = audit_files(store_a, mode), audit_files(store_b, mode)
        if not (ja.is_file() and jb.is_file()):
            print(f"select-audit --candidates {mode}: not compared ({ja if not ja.is_file() else jb} missing)")
            failed = True
            continue
        diffs: list[str] = []
        try:
            _json_diffs(json.loads(ja.read_text()), json.loads(jb.read_text()), "$", diffs)
        except ValueError as exc:
            diffs.append(f"not JSON: {exc} (see {ea} / {eb})")
        la = ea.read_text().splitlines() if ea.is_file() else []
        lb = eb.read_text().splitlines() if eb.is_file() else []
        if la != lb:
            diffs.append(f"stderr differs: {len(la)} vs {len(lb)} lines, first differing: "
                         + next((f"{x!r} vs {y!r}" for x, y in zip(la, lb, strict=False) if x != y),
                                "(one is a prefix of the other)"))
        print(f"select-audit --candidates {mode} (JSON + warnings): "
              + ("identical" if not diffs else f"DIFFERENT, {len(diffs)} difference(s)"))
        for line in diffs[:MAX_SHOWN]:
            print(f"  {line}")
        failed = failed or bool(diffs)
    return failed


#: ``--map-ids``: how a unit, a per-variant task and a study are recognised across stores without their ids
#: (content-hash ids change when their hashed payload does). A unit: its variant file, method and metric and the
#: names of the studies linking it (each study lists a method once); a task: its variant file, kind, candidate
#: mode and studies; a study: its name.
_ID_QUERIES = {
    "unit_id": "SELECT u.unit_id, u.dataset, u.file_sha256, u.method, u.metric, string_agg(s.name, ',' ORDER BY "
               "s.name) FROM units u JOIN study_units su ON su.unit_id = u.unit_id JOIN studies s ON "
               "s.study_hash = su.study_hash GROUP BY ALL",
    "task_id": "SELECT t.task_id, t.dataset, t.file_sha256, t.kind, t.candidates, string_agg(s.name, ',' ORDER BY "
               "s.name) FROM variant_tasks t JOIN study_variant_tasks st ON st.task_id = t.task_id JOIN studies s "
               "ON s.study_hash = st.study_hash GROUP BY ALL",
    "study_hash": "SELECT study_hash, name FROM studies",
}


def map_ids(con_a: Any, con_b: Any) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Per id column, B's id → A's id for the things recognised in both by content (:data:`_ID_QUERIES`)."""
    maps: dict[str, dict[str, str]] = {}
    lines = []
    for column, sql in _ID_QUERIES.items():
        try:
            rows_a, rows_b = con_a.execute(sql).fetchall(), con_b.execute(sql).fetchall()
        except Exception as exc:  # a renamed table or column: say so, compare without mapping this id
            lines.append(f"{column} not mapped ({type(exc).__name__}: {str(exc).splitlines()[0]})")
            continue
        by_a = {tuple(r[1:]): r[0] for r in rows_a}
        by_b = {tuple(r[1:]): r[0] for r in rows_b}
        if len(by_a) != len(rows_a) or len(by_b) != len(rows_b):
            lines.append(f"{column} not mapped (the content key is not unique)")
            continue
        maps[column] = {by_b[k]: by_a[k] for k in by_a.keys() & by_b.keys()}
        changed = sum(a != b for b, a in maps[column].items())
        lines.append(f"{column}: {len(maps[column])} matched by content, {changed} with another id in B")
    return maps, lines


def _pairs(text: list[str], sep: str, what: str) -> dict[str, str]:
    out = {}
    for item in text or []:
        if sep not in item:
            raise SystemExit(f"{what} {item!r}: expected OLD{sep}NEW")
        old, new = item.split(sep, 1)
        out[old] = new
    return out


def cmd_compare(args: argparse.Namespace) -> int:
    global SUBSET
    import duckdb

    SUBSET = bool(args.subset)
    paths = [Path(args.store_a), Path(args.store_b)]
    for p in paths:
        if not p.is_file():
            print(f"{p} does not exist", file=sys.stderr)
            return 2
    con_a, con_b = (duckdb.connect(str(p), read_only=True) for p in paths)
    table_renames = _pairs(args.rename_table, "=", "--rename-table")
    col_renames: dict[str, dict[str, str]] = {}
    for item, new in _pairs(args.rename_column, "=", "--rename-column").items():
        table, _, old = item.partition(".")
        col_renames.setdefault(table, {})[old] = new
    extra_ignored: dict[str, set[str]] = {}
    for item in args.ignore_column or []:
        table, _, col = item.partition(".")
        if not col:
            raise SystemExit(f"--ignore-column {item!r}: expected TABLE.COLUMN or *.COLUMN")
        extra_ignored.setdefault(table, set()).add(col)

    id_map: dict[str, dict[str, str]] | None = None
    ids_changed = 0
    if args.map_ids:
        id_map, lines = map_ids(con_a, con_b)
        ids_changed = sum(sum(a != b for b, a in m.items()) for m in id_map.values())
        print("--map-ids: " + "; ".join(lines))
    tables_a, tables_b = _tables(con_a), _tables(con_b)
    print(f"A = {paths[0]} ({len(tables_a)} tables), B = {paths[1]} ({len(tables_b)} tables)"
          + (" [--subset: B is a restricted run; rows only in A, study tables and study_hash not compared]"
             if SUBSET else ""))
    print("ignored columns: " + "; ".join(f"{t}: {', '.join(sorted(c))}" for t, c in IGNORED_COLUMNS.items())
          + f"; JSON keys {sorted(IGNORED_JSON_KEYS)}"
          + "".join(f"; {t}: {', '.join(sorted(c))} (--ignore-column)" for t, c in extra_ignored.items()))
    reports: list[TableReport] = []
    missing_tables = []
    mapped_b = set()
    for ta in tables_a:
        tb = table_renames.get(ta, ta)
        if tb not in tables_b:
            missing_tables.append(ta)
            continue
        mapped_b.add(tb)
        if SUBSET and ta in STUDY_TABLES:
            continue
        ignored = set(IGNORED_COLUMNS["*"]) | set(IGNORED_COLUMNS.get(ta, ())) | extra_ignored.get("*", set()) \
            | extra_ignored.get(ta, set()) | ({STUDY_COLUMN} if SUBSET else set())
        reports.append(compare_table(con_a, con_b, ta, tb, col_renames.get(ta, {}), ignored, id_map))
    only_b_tables = [t for t in tables_b if t not in mapped_b]
    failed = bool(missing_tables or only_b_tables)

    width = max(len(r.name) for r in reports) if reports else 10
    print(f"\n{'table':<{width}} {'rows A':>9} {'rows B':>9} {'compared':>9} {'differing':>9} {'only A':>7} "
          f"{'only B':>7}  verdict")
    for r in reports:
        verdict = "DIFFERENT" if r.failed else "identical"
        print(f"{r.name:<{width}} {r.rows_a:>9} {r.rows_b:>9} {r.compared:>9} {r.differing:>9} {r.only_a:>7} "
              f"{r.only_b:>7}  {verdict}")
    for r in reports:
        if not (r.failed or r.notes):
            continue
        print(f"\n{r.name}:")
        for line in r.schema:
            print(f"  SCHEMA {line}")
        for line in r.notes:
            print(f"  note: {line}")
        if r.by_column:
            print("  differing rows per column: " + ", ".join(f"{c} {n}" for c, n in sorted(r.by_column.items())))
        for line in r.examples[:MAX_SHOWN + 2]:
            print(f"  {line}")
        failed = failed or r.failed
    if missing_tables:
        print(f"\nSCHEMA table(s) only in A: {missing_tables} (map a rename with --rename-table OLD=NEW)")
    if only_b_tables:
        print(f"SCHEMA table(s) only in B: {only_b_tables}")
    if not SUBSET:
        failed = compare_audits(paths[0], paths[1]) or failed
    if ids_changed:
        print(f"\nIDS CHANGED: {ids_changed} unit/task/study id(s) of B differ from A's (mapped by content with "
              "--map-ids; the tables above compare the mapped rows): a store made before would recompute them")
        failed = True
    total = sum(r.compared for r in reports)
    print(f"\n{'DIFFERENT' if failed else 'IDENTICAL'}: {len(reports)} tables, {total} rows compared, "
          f"{sum(r.differing for r in reports)} differing, {sum(r.only_a for r in reports)} only in A, "
          f"{sum(r.only_b for r in reports)} only in B")
    return 1 if failed else 0


# ============================================================================================= selftest
#: What ``selftest`` changes in a copy of the store, and the verdict ``compare`` must give each table.
SELFTEST_EXPECTED = {
    "runs": "DIFFERENT",                # roc_auc of one row one ulp up
    "scores": "DIFFERENT",              # the last bit of one element of one score vector
    "internal_measures": "DIFFERENT",   # one NULL value (a NaN as the store writes it) made 0.0
    "variant_values": "DIFFERENT",      # one value one ulp up
    "selection_picks": "DIFFERENT",     # one note with a trailing space
    "outlier_ranks": "DIFFERENT",       # one row deleted
    "labels": "DIFFERENT",              # column n_objects renamed n_obj (schema); identical with --rename-column
    "units": "identical",               # runtime_s changed (ignored)
    "variant_tasks": "identical",       # details.scoring_s changed and the JSON keys reordered (ignored)
}


def _perturb(path: Path) -> None:
    import duckdb
    import numpy as np

    con = duckdb.connect(str(path))
    uid, k, v = con.execute("SELECT unit_id, k, roc_auc FROM runs WHERE status = 'ok' AND NOT isnan(roc_auc) "
                            "ORDER BY unit_id, k LIMIT 1").fetchone()
    con.execute("UPDATE runs SET roc_auc = ? WHERE unit_id = ? AND k = ?", [float(np.nextafter(v, 2.0)), uid, k])
    uid, k, vec = con.execute("SELECT unit_id, k, scores FROM scores ORDER BY unit_id, k LIMIT 1").fetchone()
    bits = struct.unpack("<q", struct.pack("<d", vec[0]))[0] ^ 1
    vec[0] = struct.unpack("<d", struct.pack("<q", bits))[0]
    con.execute("UPDATE scores SET scores = ? WHERE unit_id = ? AND k = ?", [vec, uid, k])
    uid, k, m = con.execute("SELECT unit_id, k, measure FROM internal_measures WHERE value IS NULL "
                            "ORDER BY unit_id, k, measure LIMIT 1").fetchone()
    con.execute("UPDATE internal_measures SET value = 0.0 WHERE unit_id = ? AND k = ? AND measure = ?", [uid, k, m])
    t, c, m, v = con.execute("SELECT task_id, candidate, measure, value FROM variant_values WHERE NOT isnan(value) "
                             "ORDER BY task_id, candidate, measure LIMIT 1").fetchone()
    con.execute("UPDATE variant_values SET value = ? WHERE task_id = ? AND candidate = ? AND measure = ?",
                [float(np.nextafter(v, 2.0)), t, c, m])
    t, sel = con.execute("SELECT task_id, selector FROM selection_picks ORDER BY task_id, selector LIMIT 1").fetchone()
    con.execute("UPDATE selection_picks SET note = note || ' ' WHERE task_id = ? AND selector = ?", [t, sel])
    uid, k, o = con.execute("SELECT unit_id, k, object FROM outlier_ranks ORDER BY unit_id, k, object "
                            "LIMIT 1").fetchone()
    con.execute("DELETE FROM outlier_ranks WHERE unit_id = ? AND k = ? AND object = ?", [uid, k, o])
    con.execute("ALTER TABLE labels RENAME COLUMN n_objects TO n_obj")
    con.execute("UPDATE units SET runtime_s = runtime_s + 1.0")
    for task, details in con.execute("SELECT task_id, details FROM variant_tasks WHERE details LIKE '%scoring_s%' "
                                      "ORDER BY task_id LIMIT 3").fetchall():
        d = json.loads(details)
        d["scoring_s"] += 1.0
        con.execute("UPDATE variant_tasks SET details = ? WHERE task_id = ?",
                    [json.dumps(dict(reversed(list(d.items())))), task])
    con.close()


def cmd_selftest(args: argparse.Namespace) -> int:
    """Show that ``compare`` catches a perturbed copy of STORE (and ignores what it should)."""
    import tempfile

    import numpy as np

    store = Path(args.store).resolve()
    ok = True
    with tempfile.TemporaryDirectory(dir=store.parent, prefix="identity-selftest-") as tmp:
        copy = Path(tmp) / store.name
        shutil.copyfile(store, copy)
        for mode in AUDIT_MODES:
            for src, dst in zip(audit_files(store, mode), audit_files(copy, mode), strict=True):
                if src.is_file():
                    shutil.copyfile(src, dst)
        _perturb(copy)
        audit = audit_files(copy, AUDIT_MODES[0])[0]
        if audit.is_file():
            doc = json.loads(audit.read_text())
            doc["summary"][0]["mean"] = float(np.nextafter(doc["summary"][0]["mean"], 2.0))
            audit.write_text(json.dumps(doc, indent=2))
        for extra, expect in (([], SELFTEST_EXPECTED), (["--rename-column", "labels.n_objects=n_obj"],
                                                         SELFTEST_EXPECTED | {"labels": "identical"})):
            proc = subprocess.run([sys.executable, __file__, "compare", str(store), str(copy), *extra],
                                  capture_output=True, text=True, check=False)
            print(proc.stdout)
            verdicts = {line.split()[0]: line.split()[-1] for line in proc.stdout.splitlines()
                        if line.split() and line.split()[-1] in ("identical", "DIFFERENT")}
            wrong = {t: (verdicts.get(t), v) for t, v in expect.items() if verdicts.get(t) != v}
            wrong |= {t: (v, "identical") for t, v in verdicts.items() if t not in expect and v != "identical"}
            audit_caught = "select-audit --candidates all (JSON + warnings): DIFFERENT" in proc.stdout
            good = proc.returncode == 1 and not wrong and audit_caught
            print(f"selftest {' '.join(extra) or '(no options)'}: exit {proc.returncode} (expected 1), "
                  f"audit perturbation {'caught' if audit_caught else 'MISSED'}, "
                  + ("every table as expected" if not wrong else f"unexpected verdicts (got, expected): {wrong}"))
            ok = ok and good
    print("SELFTEST " + ("PASSED" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the identity studies into a fresh store")
    r.add_argument("store")
    r.add_argument("--data-dir", help="staging folder [default: identity-data/ next to STORE]; give the before "
                                      "and the after run the same one")
    r.add_argument("--only", nargs="+", metavar="VARIANT", help="restrict to these dataset variants (compare the "
                                                                 "result with compare --subset)")
    c = sub.add_parser("compare", help="compare two stores bit for bit")
    c.add_argument("store_a")
    c.add_argument("store_b")
    c.add_argument("--subset", action="store_true", help="STORE_B was run with --only")
    c.add_argument("--map-ids", action="store_true", help="match units, tasks and studies by content instead of "
                   "their ids (when a change of the hashed payload changed the ids; still a failure, reported)")
    c.add_argument("--rename-table", action="append", metavar="OLD=NEW", help="table OLD of A is NEW in B")
    c.add_argument("--rename-column", action="append", metavar="TABLE.OLD=NEW",
                   help="column OLD of A's TABLE is NEW in B")
    c.add_argument("--ignore-column", action="append", metavar="TABLE.COL", help="do not compare TABLE.COL "
                                                                                 "(*.COL: in every table)")
    t = sub.add_parser("selftest", help="check that compare catches a perturbed copy of STORE")
    t.add_argument("store")
    args = ap.parse_args(argv)
    return {"run": cmd_run, "compare": cmd_compare, "selftest": cmd_selftest}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
