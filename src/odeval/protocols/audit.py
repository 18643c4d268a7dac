"""The protocol audit behind ``odeval protocol-audit``: Table 1, the Fig. 4 sweep and plain-words findings.

Builds a scorer from a name (odeval methods in novelty mode, or the scikit-learn adapters ``ocsvm``,
``iforest``, ``lof-novelty``), runs the four settings of Fourure et al. (2021), Table 1, and states which
reported numbers a protocol inflates and by how much, relative to the unbiased protocol (Algorithm 1).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from odeval.data import load_dataset
from odeval.detectors import NoveltyDetector, available_methods, wrap_estimator
from odeval.executor import open_executor, workers_renamed_from
from odeval.protocols.core import SETTINGS, RunResult, _run_executor, protocol_table, summarize
from odeval.protocols.sweep import contamination_sweep

__all__ = ["ADAPTERS", "AuditResult", "EstimatorFactory", "FileAudit", "audit", "audit_file", "inflation_statements",
           "make_scorer"]

#: Adapter names → (module, class, fixed constructor arguments).
ADAPTERS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "ocsvm": ("sklearn.svm", "OneClassSVM", {}),
    "iforest": ("sklearn.ensemble", "IsolationForest", {}),
    "lof-novelty": ("sklearn.neighbors", "LocalOutlierFactor", {"novelty": True}),
}

_DESCRIPTION = {
    "alg1-20-estimated": "the unbiased protocol (Algorithm 1, 20 % test size, threshold from the training set)",
    "alg2-20-estimated": "the recycling protocol (Algorithm 2) at 20 % test size",
    "alg2-5-estimated": "the recycling protocol at 5 % test size",
    "alg2-5-optimal": "the recycling protocol at 5 % test size with the F1-optimal threshold",
}
_METRIC_NAME = {"f1": "F1", "avpr": "AVPR", "auc": "ROC AUC"}


@dataclass(frozen=True)
class EstimatorFactory:
    """Picklable ``seed -> EstimatorDetector`` for an adapter: estimators with a ``random_state`` get the run
    seed unless the user fixed one."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        import importlib

        module, cls, fixed = ADAPTERS[self.name]
        estimator_cls = getattr(importlib.import_module(module), cls)
        try:
            return estimator_cls(**{**self.params, **fixed})
        except TypeError as exc:
            raise ValueError(f"{self.name} ({cls}): {exc}") from None

    def __call__(self, seed: int) -> Any:
        est = self.build()
        seeded = "random_state" in est.get_params() and "random_state" not in self.params
        return wrap_estimator(est, seed=int(seed) if seeded else None, name=self.name)


def make_scorer(detector: str, params: dict[str, Any] | None = None, k: int | None = None) -> Any:
    """A protocol scorer from a name: ``ocsvm`` / ``iforest`` / ``lof-novelty`` (scikit-learn, ``params`` are
    the estimator's; ``k`` sets ``n_neighbors`` of lof-novelty) or an odeval method with a novelty form (needs
    ``k``; ``params`` are the method's)."""
    params = dict(params or {})
    key = detector.lower()
    if key in ADAPTERS:
        if k is not None:
            if key != "lof-novelty":
                raise ValueError(f"--k does not apply to {key}")
            params.setdefault("n_neighbors", int(k))
        factory = EstimatorFactory(key, params)
        factory.build().get_params()  # fail now on bad parameters
        return factory
    if key not in {m.lower() for m in available_methods()}:
        raise ValueError(f"unknown detector {detector!r}; choose {', '.join(ADAPTERS)} or an odeval method: "
                         f"{', '.join(available_methods())}")
    if k is None:
        raise ValueError(f"{detector}: give the neighbourhood size k (--k)")
    try:
        return NoveltyDetector(detector, int(k), **params)
    except TypeError as exc:
        raise ValueError(f"{detector}: {exc}") from None


@dataclass
class AuditResult:
    """Table 1 rows (:func:`odeval.protocols.summarize`), the per-run results, the sweep and the findings."""

    table: list[dict[str, Any]]
    results: list[RunResult]
    sweep: pd.DataFrame | None
    statements: list[str]


def _row(table: list[dict[str, Any]], setting: str, metric: str) -> dict[str, Any] | None:
    return next((r for r in table if r["setting"] == setting and r["metric"] == metric), None)


def inflation_statements(table: list[dict[str, Any]], base: str = "alg1-20-estimated") -> list[str]:
    """Plain-words findings: how much each setting inflates F1 and AVPR relative to ``base``, and whether
    ROC AUC moves (Fourure et al. 2021, §3.5, §4)."""
    out = []
    settings = [s for s in dict.fromkeys(r["setting"] for r in table) if s != base]
    base_text = "the unbiased protocol" if base == "alg1-20-estimated" else _DESCRIPTION.get(base, base)
    for metric in ("f1", "avpr"):
        b = _row(table, base, metric)
        if b is None or not b["mean"] > 0:
            continue
        for s in settings:
            r = _row(table, s, metric)
            if r is None:
                continue
            ratio = r["mean"] / b["mean"]
            verb = "inflated" if ratio > 1.05 else ("deflated" if ratio < 0.95 else "about unchanged")
            out.append(f"{_METRIC_NAME[metric]} under {_DESCRIPTION.get(s, s)} is {ratio:.2f}× {base_text}'s "
                       f"({r['mean']:.3f} vs {b['mean']:.3f}): {verb} by the protocol, not by the model.")
    b = _row(table, base, "auc")
    if b is not None:
        rows = [_row(table, s, "auc") for s in settings]
        rows = [r for r in rows if r is not None]
        if rows:
            ratios = np.array([r["mean"] / b["mean"] for r in rows])
            out.append(f"ROC AUC moves by at most {np.max(np.abs(ratios - 1)) * 100:.1f} % across the settings "
                       f"({b['mean']:.3f} under the unbiased protocol, {min(r['mean'] for r in rows):.3f}–"
                       f"{max(r['mean'] for r in rows):.3f} otherwise): the protocol does not inflate it.")
            r20 = _row(table, "alg2-20-estimated", "auc")
            if r20 is not None and np.isfinite(b["std"]) and np.isfinite(r20["std"]):
                out.append(f"Recycling the training anomalies (Algorithm 2, 20 %) changes the ROC AUC's std from "
                           f"{b['std']:.3f} to {r20['std']:.3f}: report ROC AUC under Algorithm 2 (the paper's "
                           "recommendation), never F1 or AVPR.")
    if _row(table, "alg2-20-estimated", "f1") is not None:
        out.append("Under Algorithm 2 with the test-estimated threshold, precision = recall = F1 (as many objects "
                   "are flagged as there are anomalies): a paper reporting P = R = F1 used the test contamination.")
    return out


@workers_renamed_from("n_jobs")
def audit(X: Any, y: Any, scorer: Any, *, runs: int = 100, seed: int = 0, workers: int = 1, sweep_runs: int = 10,
          sweep_points: int | None = 50, normalize: str | None = "minmax", stratify: bool = False,
          progress: Callable[[int], None] | None = None, executor: Any = None) -> AuditResult:
    """Table 1 (the four settings × F1 / AVPR / ROC AUC, ``runs`` runs) plus the Fig. 4 sweep (``sweep_runs``
    runs; 0 skips it) and :func:`inflation_statements`. ``progress`` is called once per finished run.
    ``workers`` (formerly ``n_jobs``, deprecated) and ``executor`` as for
    :func:`~odeval.protocols.protocol_table`: the table and the sweep share one pool of workers."""
    with open_executor(_run_executor(executor, workers, max(runs, sweep_runs)), workers) as ex:
        results = protocol_table(X, y, scorer, settings=SETTINGS, runs=runs, seed=seed, stratify=stratify,
                                 normalize=normalize, workers=workers, progress=progress, executor=ex)
        table = summarize(results)
        sweep = None
        if sweep_runs:
            sweep = contamination_sweep(X, y, scorer, runs=sweep_runs, seed=seed, points=sweep_points,
                                        normalize=normalize, workers=workers, progress=progress, executor=ex)
    return AuditResult(table=table, results=results, sweep=sweep, statements=inflation_statements(table))


@dataclass
class FileAudit:
    """:func:`audit_file`'s result: the audit of ``detector`` (with ``params``, ``k``) on ``dataset`` and the
    files written."""

    dataset: str
    detector: str
    params: dict[str, Any]
    k: int | None
    runs: int
    seed: int
    result: AuditResult
    written: list[Path]


def _write_audit(res: AuditResult, out: Path, title: str) -> list[Path]:
    """table1.csv, runs.csv, (sweep.csv, sweep.png,) findings.txt in ``out``."""
    from odeval.protocols.plot import plot_sweep

    pd.DataFrame(res.table).to_csv(out / "table1.csv", index=False)
    pd.DataFrame([r.as_dict() for r in res.results]).to_csv(out / "runs.csv", index=False)
    written = [out / "table1.csv", out / "runs.csv"]
    if res.sweep is not None:
        res.sweep.to_csv(out / "sweep.csv", index=False)
        written += [out / "sweep.csv", plot_sweep(res.sweep, out / "sweep.png", title=title)]
    (out / "findings.txt").write_text("\n".join(res.statements) + "\n", encoding="utf-8")
    written.append(out / "findings.txt")
    return written


@workers_renamed_from("jobs")
def audit_file(dataset: str | os.PathLike[str], detector: str, params: dict[str, Any] | None = None, *,
               k: int | None = None, runs: int = 100, sweep_runs: int = 10, seed: int = 0, workers: int = -1,
               normalize: str | None = "minmax", stratify: bool = False, label: str | None = None,
               out_dir: str | os.PathLike[str] = ".",
               progress_bar: Callable[[int], AbstractContextManager[Any]] | None = None) -> FileAudit:
    """Load ``dataset``, run :func:`audit` with the scorer :func:`make_scorer` builds, and write table1.csv,
    runs.csv, sweep.csv, sweep.png and findings.txt into ``out_dir``: the library side of
    ``odeval protocol-audit``.

    ``workers = -1`` uses every local core (formerly ``jobs``, deprecated). ``progress_bar(total)``, if given,
    is entered around the runs; the object it yields has ``update(n)`` (e.g. ``click.progressbar``), called once
    per finished run.
    """
    params = dict(params or {})
    ds = load_dataset(dataset, **({"label": label} if label else {}))
    if ds.y is None:
        raise ValueError(f"{dataset}: the dataset has no labels; the protocols need binary labels")
    X = ds.numeric_matrix()
    scorer = make_scorer(detector, params, k)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bar = progress_bar(runs + max(0, sweep_runs)) if progress_bar is not None else nullcontext()
    with bar as shown:
        res = audit(X, ds.y, scorer, runs=runs, seed=seed, workers=workers, sweep_runs=sweep_runs, normalize=normalize,
                    stratify=stratify, progress=None if shown is None else shown.update)
    title = f"{Path(dataset).name}, {detector}: measures vs injected anomalies (Fig. 4)"
    return FileAudit(str(dataset), detector, params, k, runs, seed, res, _write_audit(res, out, title))
