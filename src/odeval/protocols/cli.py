"""The edge of ``odeval protocol-audit``: load the dataset, run the audit with a progress bar, write the files,
print Table 1 and the findings. The click command in :mod:`odeval.cli` is a thin shell over
:func:`run_protocol_audit`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import pandas as pd

from odeval.executor import workers_renamed_from
from odeval.protocols.audit import audit, make_scorer

__all__ = ["run_protocol_audit", "format_table"]


def format_table(table: list[dict[str, Any]]) -> str:
    """Table 1 as text: one line per setting, ``mean ± std`` per metric."""
    settings = list(dict.fromkeys(r["setting"] for r in table))
    metrics = list(dict.fromkeys(r["metric"] for r in table))
    names = {"f1": "F1", "avpr": "AVPR", "auc": "ROC AUC"}
    lines = [f"{'setting':<20}" + "".join(f"{names.get(m, m):<18}" for m in metrics)]
    for s in settings:
        cells = []
        for m in metrics:
            r = next(r for r in table if r["setting"] == s and r["metric"] == m)
            cells.append(f"{r['mean']:.3f} ± {r['std']:.3f}".ljust(18))
        lines.append(f"{s:<20}" + "".join(cells))
    return "\n".join(lines)


@workers_renamed_from("jobs")
def run_protocol_audit(dataset: str, detector: str, params: dict[str, Any], *, k: int | None, runs: int,
                       sweep_runs: int, seed: int, workers: int, normalize: str | None, stratify: bool,
                       label: str | None, out_dir: str, as_json: bool) -> None:
    from odeval.data import load_dataset
    from odeval.protocols.plot import plot_sweep

    options = {"label": label} if label else {}
    ds = load_dataset(dataset, **options)
    if ds.y is None:
        raise ValueError(f"{dataset}: the dataset has no labels; the protocols need binary labels")
    X = ds.numeric_matrix()
    scorer = make_scorer(detector, params, k)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with click.progressbar(length=runs + max(0, sweep_runs), label="protocol runs", file=sys.stderr) as bar:
        res = audit(X, ds.y, scorer, runs=runs, seed=seed, workers=workers, sweep_runs=sweep_runs,
                    normalize=normalize, stratify=stratify, progress=bar.update)
    pd.DataFrame(res.table).to_csv(out / "table1.csv", index=False)
    pd.DataFrame([r.as_dict() for r in res.results]).to_csv(out / "runs.csv", index=False)
    written = [out / "table1.csv", out / "runs.csv"]
    if res.sweep is not None:
        res.sweep.to_csv(out / "sweep.csv", index=False)
        title = f"{Path(dataset).name}, {detector}: measures vs injected anomalies (Fig. 4)"
        written += [out / "sweep.csv", plot_sweep(res.sweep, out / "sweep.png", title=title)]
    (out / "findings.txt").write_text("\n".join(res.statements) + "\n", encoding="utf-8")
    written.append(out / "findings.txt")
    if as_json:
        click.echo(json.dumps(res.table, indent=1))
        return
    desc = ", ".join(f"{key}={value}" for key, value in params.items())
    click.echo(f"Table 1 — {Path(dataset).name}, {detector}{f' ({desc})' if desc else ''}"
               f"{f', k={k}' if k is not None else ''}: {runs} runs, seed {seed}, mean ± std (ddof = 1)")
    click.echo(format_table(res.table))
    click.echo("")
    for line in res.statements:
        click.echo(f"- {line}")
    click.echo("")
    click.echo("wrote " + ", ".join(str(p) for p in written))
