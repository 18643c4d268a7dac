"""IREOS Table 6 and Table 7 (Marques et al. 2020) on the authors' own candidates (docs/ireos.md).

For each of the 15 variants in ``../shared/datasets/ireos_authors/`` (the data, the authors' ten candidates as
Gaussian-scaled weights and their ROC AUC / AP, README there): IREOS of the ten weight vectors for m_cl = 1,
sqrt(5 % N) and n (the paper's Sect. 4.2.2: n = the number of outliers of the ground truth), exact (N <= 500) and
approximate (kNN subsets of 250, Sect. 3.5.3), gamma_max searched. Table 6 = Spearman of the ten indexes against
the candidates' ROC AUC; Table 7 = ROC AUC / AP of the candidate with the largest index against min / mean / max
of the ten. The paper's values sit beside ours.

Both separability classifiers (``--classifier``): "pinned", the authors' reference code's (odeval's default since
2026-11), and "optimum", the exact KLR optimum (the rows of the earlier runs, which hold no ``classifier`` key).

One JSON line per (variant, mode, m_cl, candidates, classifier) goes to ``--out`` (default
benchmarks/ireos_authors.jsonl); lines already
there are skipped, so a run can be stopped and resumed. Cheapest first (m_cl = 1 shares every curve between the
candidates; small N first). Within a job, every chunk of classifiers the solver finishes is appended to a
checkpoint file (``--checkpoints``, default ~/.cache/odeval-bench/ireos-authors/; the project's own long cells use
benchmarks/checkpoints/, committed, see its README): a job stopped by its
``--budget`` or by the end of a session resumes where it stopped (the same numbers; an exact cell above N = 3,000
takes CPU-hours). The row's ``cpu_seconds`` then counts the CPU of every session (``cpu_sessions``: how many).

    PYTHONPATH=src nice -n 10 .venv/bin/python benchmarks/ireos_authors.py [--max-n 500] [--classifier pinned]
        [--mcl 1,sqrt5,n,sqrt5i,sqrt5r] [--only Wilt,Annthyroid] [--exact-max-n 1013] [--budget 600] [--table]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import math
import os
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from odeval.data import load_dataset
from odeval.executor import ThreadExecutor
from odeval.labelfree.ireos import BLOCK_MIN_N, BLOCK_SOLVERS, CLASSIFIERS, PAPER_KNN, ireos

# the module, not the function the package exports under the same name (``from odeval.labelfree import ireos``)
ireos_module = importlib.import_module("odeval.labelfree.ireos")

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ODEVAL_SHARED_DATASETS", ROOT.parent / "shared" / "datasets"))
AUTHORS = SHARED / "ireos_authors"
MCLS = ("1", "sqrt5", "n")
#: The exact index where N is at most this (the machine is small); the approximation above (and everywhere).
EXACT_MAX_N = 500

#: Table 6 of the paper: (exact m_cl = 1, sqrt5, n), (approximate m_cl = 1, sqrt5, n); None = not computed there.
TABLE6 = {
    "Annthyroid": ((0.248, -0.285, -0.394), (0.248, -0.285, -0.37)),
    "Arrhythmia": ((0.539, 0.673, 0.721), (0.539, 0.673, 0.721)),
    "Glass": ((0.467, 0.479, 0.382), (0.467, 0.479, 0.394)),
    "HeartDisease": ((0.927, 0.903, 0.903), (0.927, 0.903, 0.903)),
    "Hepatitis": ((0.939, 0.903, 0.903), (0.939, 0.903, 0.903)),
    "Ionosphere": ((0.648, 0.721, 0.709), (0.648, 0.721, 0.709)),
    "Lymphography": ((0.661, 0.758, 0.758), (0.661, 0.721, 0.758)),
    "Parkinson": ((0.515, 0.515, -0.37), (0.515, 0.515, 0.515)),
    "PenDigits": ((None, None, None), (0.6, 0.661, 0.661)),
    "Pima": ((0.758, 0.83, 0.879), (0.758, 0.879, 0.879)),
    "Shuttle": ((0.867, 0.867, 0.867), (0.867, 0.867, 0.867)),
    "WBC": ((0.042, 0.042, 0.042), (-0.018, 0.042, 0.042)),
    "WDBC": ((0.915, 0.952, 0.952), (0.915, 0.915, 0.915)),
    "Waveform": ((0.818, 0.855, 0.891), (0.794, 0.855, 0.891)),
    "Wilt": ((-0.794, -0.903, -0.939), (-0.794, -0.903, -0.915)),
}
#: Table 7 of the paper: ROC AUC min / mean / max of the ten, then the ROC AUC of IREOS's pick (exact m_cl = 1,
#: sqrt5, n; approximate m_cl = 1, sqrt5, n). Lymphography's and Parkinson's max are unreadable in our copy of the
#: paper (None; solutions_info gives them).
TABLE7 = {
    "Annthyroid": ((0.528, 0.63, 0.732), (0.642, 0.574, 0.551), (0.642, 0.574, 0.596)),
    "Arrhythmia": ((0.5, 0.737, 0.916), (0.879,) * 3, (0.879,) * 3),
    "Glass": ((0.492, 0.699, 0.904), (0.539,) * 3, (0.539,) * 3),
    "HeartDisease": ((0.387, 0.687, 0.97), (0.847,) * 3, (0.847,) * 3),
    "Hepatitis": ((0.075, 0.522, 0.96), (0.96,) * 3, (0.96,) * 3),
    "Ionosphere": ((0.514, 0.745, 0.96), (0.868,) * 3, (0.868,) * 3),
    "Lymphography": ((0.43, 0.748, None), (0.95,) * 3, (0.95,) * 3),
    "Parkinson": ((0.448, 0.765, None), (1.0, 1.0, 0.51), (1.0, 1.0, 1.0)),
    "PenDigits": ((0.431, 0.715, 0.993), (None,) * 3, (0.993,) * 3),
    "Pima": ((0.499, 0.67, 0.834), (0.762,) * 3, (0.762,) * 3),
    "Shuttle": ((0.415, 0.708, 0.992), (0.992, 0.87, 0.87), (0.992, 0.87, 0.87)),
    "WBC": ((0.438, 0.721, 0.997), (0.997,) * 3, (0.997,) * 3),
    "WDBC": ((0.497, 0.745, 0.988), (0.988,) * 3, (0.988,) * 3),
    "Waveform": ((0.5, 0.66, 0.796), (0.708, 0.796, 0.796), (0.708, 0.796, 0.796)),
    "Wilt": ((0.34, 0.527, 0.713), (0.424, 0.424, 0.382), (0.424, 0.424, 0.382)),
}
#: Variants with degenerate GLOSH weights (only 0 and 1) among the candidates (README; Waveform's are all zero).
GLOSH_DEGENERATE = ("Glass", "WBC", "WDBC", "Pima")
#: The older commit's (790b162) tenth WBC candidate: KNN-100, the same ROC AUC as the degenerate GLOSH-100.
WBC_ALT = "alt_790b162_w_10_KNN-100.txt.gz"


def variants() -> list[Path]:
    """The 15 variant folders, smallest N first."""
    folders = [p for p in sorted(AUTHORS.iterdir()) if p.is_dir()]
    return sorted(folders, key=lambda p: _n_lines(p / "w_1.txt.gz"))


def _n_lines(path: Path) -> int:
    return np.loadtxt(path).size


def base_name(folder: Path) -> str:
    return folder.name.split("_")[0]


def degenerate_glosh(info: list[dict], W: list[np.ndarray]) -> list[int]:
    """The GLOSH candidates whose stored weights hold only 0 and 1 (the README's "degenerate GLOSH weights":
    weight 1 where ELKI wrote -Inf, 0 elsewhere); an all-zero vector (Waveform) is not among them."""
    return [i for i, (inf, w) in enumerate(zip(info, W, strict=True))
            if inf["algorithm"] == "GLOSH" and np.isin(w, (0.0, 1.0)).all() and 0 < w.sum() < w.size]


def load_variant(folder: Path, *, alt_wbc: bool = False, glosh_complement: bool = False) -> dict:
    """Data, labels (from the Campos ARFF), the ten weight vectors and solutions_info (ROC AUC, AP, algorithm, k).

    ``glosh_complement``: degenerate GLOSH weights (:func:`degenerate_glosh`) replaced by 1 - w, i.e. weight 1 on
    the objects with a finite GLOSH score (Glass: the "8 non-null values" the paper's §4.3.2 describes)."""
    base = base_name(folder)
    ds = load_dataset(SHARED / "dami" / base / f"{folder.name}.arff")
    X = np.loadtxt(folder / "data.txt.gz", ndmin=2)
    W = [np.loadtxt(folder / f"w_{i}.txt.gz") for i in range(1, 11)]
    if alt_wbc:
        W[9] = np.loadtxt(folder / WBC_ALT)
    rows = [line.split() for line in (folder / "solutions_info.txt").read_text().splitlines()[1:]]
    info = [{"algorithm": r[1].strip('"'), "k": int(r[2]), "auc": float(r[3]), "ap": float(r[4])} for r in rows]
    if alt_wbc:
        info[9] = {**info[9], "algorithm": "KNN"}  # same k (100) and ROC AUC; its AP is not in solutions_info
        info[9]["ap"] = math.nan
    if glosh_complement:
        for i in degenerate_glosh(info, W):
            W[i] = 1.0 - W[i]
    return {"X": X, "y": np.asarray(ds.y, bool), "W": W, "info": info, "name": folder.name, "base": base}


CHECKPOINTS = Path.home() / ".cache" / "odeval-bench" / "ireos-authors"


class CheckpointExecutor(ThreadExecutor):
    """Threads whose results are appended, one JSON line per task, to ``path`` and read back instead of being
    recomputed when the same task comes again (a resumed job). A task is the solver's payload (the data, the
    training sets, the costs, the gammas and settings; not the caller's pid), named by a SHA-1 of its arrays'
    bytes, so a changed input never meets a stale result. Results are floats written by ``repr`` (exact)."""

    def __init__(self, workers: int, path: Path) -> None:
        super().__init__(workers)
        self.path = path
        self.done: dict[str, dict] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:  # a line cut by a kill: that task is computed again
                    continue
                self.done[rec["key"]] = rec
        # what the records reused by this job cost earlier (records of other inputs, e.g. another solver's
        # chunks of the same job, are neither reused nor counted)
        self.reused = 0
        self.cpu_before = 0.0
        self.cpu_now = 0.0
        self._x_digest: tuple[int, str] | None = None

    def _key(self, payload: tuple) -> str:
        X, rest = payload[0], payload[1:10]  # payload[10:]: the device, BLAS limit and caller's pid, not the task
        if self._x_digest is None or self._x_digest[0] != id(X):
            self._x_digest = (id(X), hashlib.sha1(np.ascontiguousarray(X).tobytes()).hexdigest())
        h = hashlib.sha1(self._x_digest[1].encode())
        for part in rest:
            h.update(np.ascontiguousarray(part).tobytes() if isinstance(part, np.ndarray) else repr(part).encode())
        return h.hexdigest()

    def imap(self, fn, tasks):
        tasks = list(tasks)
        keys = [self._key(t) for t in tasks]
        todo = [t for t, k in zip(tasks, keys, strict=True) if k not in self.done]

        def timed(task):
            c0 = time.thread_time()
            value = fn(task)
            return value, time.thread_time() - c0

        computed = super().imap(timed, todo)
        for k in keys:
            rec = self.done.get(k)
            if rec is not None:
                self.reused += 1
                self.cpu_before += rec["cpu"]
            else:
                (areas, fits, facts), cpu = next(computed)
                rec = {"key": k, "areas": areas.tolist(), "fits": int(fits), "facts": int(facts), "cpu": cpu}
                with self.path.open("a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                self.done[k] = rec
                self.cpu_now += cpu
            yield np.array(rec["areas"], dtype=np.float64), rec["fits"], rec["facts"]


def run_one(v: dict, mcl: str, knn: int | None, classifier: str = "pinned", workers: int = 1,
            checkpoint: Path | None = None, device: str = "cpu") -> dict:
    """IREOS of the ten candidates; Spearman against ROC AUC (Table 6) and the pick (Table 7). ``workers``: threads
    for the objects' classifiers (the same numbers for any count; ``cpu_seconds`` counts every thread).
    ``checkpoint``: a file of finished chunks (:class:`CheckpointExecutor`) to resume from and append to (the
    device is not part of a chunk's key: a cell begun on the CPU resumes on a GPU). ``device``: as ``ireos``'s (the
    exact index's block solver on a CUDA device through PyTorch)."""
    n_out = int(v["y"].sum())
    # sqrt5i / sqrt5r: sqrt(5 % N) truncated / rounded to an integer -- the reference code's IREOS.setmCl takes an
    # int (a stated cause of the sqrt5 gaps, tested by these rows; docs/ireos.md)
    root = math.sqrt(0.05 * v["X"].shape[0])
    m_cl = {"1": 1, "sqrt5": "sqrt5", "sqrt5i": int(root), "sqrt5r": math.floor(root + 0.5), "n": n_out}[mcl]
    # A weight vector of only 0 and 1 is a binary solution to odeval; keep the ones IREOS can take (a vector of
    # zeros, Waveform's GLOSH-30, has no outlier: it is refused and left out, as the README says).
    keep = [i for i, w in enumerate(v["W"]) if (w > 0).any()]
    ex = None
    if checkpoint is not None:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        ex = CheckpointExecutor(workers, checkpoint)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        r = ireos(v["X"], [v["W"][i] for i in keep], weights="none", m_cl=m_cl, knn=knn, classifier=classifier,
                  workers=workers, executor=ex if ex is not None else "threads", device=device)
    finally:
        if ex is not None:
            ex.close()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    resumed = {}
    if ex is not None and ex.reused:  # the classifiers of earlier sessions count as well
        resumed = {"cpu_seconds_earlier": round(ex.cpu_before, 2), "tasks_reused": ex.reused}
        cpu += ex.cpu_before
    auc = np.array([v["info"][i]["auc"] for i in keep])
    ap = np.array([v["info"][i]["ap"] for i in keep])
    rho = float(spearmanr(r.index, auc).statistic)
    pick = int(np.argmax(r.index))
    ties = int(np.sum(np.isclose(r.index, r.index[pick], rtol=0, atol=1e-12)))
    return {"variant": v["name"], "base": v["base"], "mode": "exact" if knn is None else f"knn{knn}", "m_cl": mcl,
            "m_cl_value": float(r.m_cl), "N": int(v["X"].shape[0]), "n_outliers": n_out, "kept": keep,
            "index": [float(x) for x in r.index], "spearman": rho, "gamma_max": float(r.gamma_max),
            "pick": keep[pick], "pick_ties": ties, "pick_algorithm": v["info"][keep[pick]]["algorithm"],
            "pick_k": v["info"][keep[pick]]["k"], "pick_auc": float(auc[pick]), "pick_ap": float(ap[pick]),
            "auc_min_mean_max": [float(auc.min()), float(auc.mean()), float(auc.max())],
            "ap_min_mean_max": [float(np.nanmin(ap)), float(np.nanmean(ap)), float(np.nanmax(ap))],
            "n_fits": int(r.n_fits), "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
            "load": round(os.getloadavg()[0], 1), "classifier": classifier,
            **({"solver": ireos_module.BLOCK} if knn is None and classifier == "pinned" and (len(v["X"]) >= BLOCK_MIN_N
                                                                               or device != "cpu") else {}),
            **({"workers": workers} if workers != 1 else {}), **({"device": _card(device)} if device != "cpu" else {}),
            **resumed}


def _card(device: str) -> str:
    """The device and its card's name, recorded with every figure computed there."""
    import torch

    return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"


def jobs(max_n: int, exact_max_n: int = EXACT_MAX_N) -> list[tuple[Path, str, str, str]]:
    """(folder, m_cl, mode, candidates: "stored", "alt10" or "glosh"), cheapest first: m_cl = 1 (curves shared by
    the candidates) before the others, N <= 500 before the rest, small N first."""
    out = []
    folders = [(f, _n_lines(f / "w_1.txt.gz")) for f in variants()]
    stages = [(small, group) for group in (("1",), ("sqrt5", "n", "sqrt5i", "sqrt5r")) for small in (True, False)]
    for small, group in stages:
        for f, n in folders:
            if n > max_n or (n <= EXACT_MAX_N) != small:
                continue
            for mcl in group:
                modes = (["exact"] if n <= exact_max_n else []) + (["knn"] if n > PAPER_KNN + 1 else [])
                for mode in modes:
                    out.append((f, mcl, mode, "stored"))
                    if base_name(f) == "WBC":
                        out.append((f, mcl, mode, "alt10"))
                    if base_name(f) in GLOSH_DEGENERATE:
                        out.append((f, mcl, mode, "glosh"))
    return out


def key(row: dict) -> tuple:
    return (row["variant"], row["mode"], row["m_cl"],
            row.get("candidates", "alt10" if row.get("alt_wbc") else "stored"), row.get("classifier", "optimum"))


def run(out: Path, max_n: int, classifier: str = "pinned", mcls: tuple[str, ...] = MCLS,
        only: tuple[str, ...] | None = None, exact_max_n: int = EXACT_MAX_N, budget: float | None = None,
        workers: int = 1, checkpoints: Path | None = CHECKPOINTS, device: str = "cpu") -> None:
    """Run the missing jobs; ``budget`` (CPU seconds): a job is run in a child process and stopped there, with a
    line saying so, when it takes longer (a stopped job writes no row; with ``checkpoints``, a directory, its
    finished classifiers are kept there and the next run of the job starts from them -- run it with the same
    ``workers``, which sets the chunks on small data)."""
    done = {key(json.loads(line)) for line in out.read_text().splitlines()} if out.exists() else set()
    for folder, mcl, mode, cands in jobs(max_n, exact_max_n):
        if mcl not in mcls or (only and base_name(folder) not in only):
            continue
        knn = None if mode == "exact" else PAPER_KNN
        k = (folder.name, "exact" if knn is None else f"knn{knn}", mcl, cands, classifier)
        if k in done:
            continue
        cp = None if checkpoints is None else checkpoints / ("-".join(k) + ".jsonl")
        if budget is None:
            row = _job(folder, mcl, knn, cands, classifier, workers, cp, device)
        else:
            row = _job_with_budget(folder, mcl, knn, cands, classifier, budget, workers, cp, device)
            if row is None:
                print(f"{folder.name:40s} {k[1]:6s} m_cl={mcl:5s} {cands:6s} {classifier}: stopped after "
                      f"{budget:.0f} s CPU (no row)", flush=True)
                continue
        with out.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"{row['variant']:40s} {row['mode']:6s} m_cl={mcl:5s} {cands:6s} {classifier} rho={row['spearman']:+.3f} "
              f"pick={row['pick_algorithm']}-{row['pick_k']} auc={row['pick_auc']:.3f} gmax={row['gamma_max']:.4g} "
              f"{row['seconds']}s", flush=True)


def _job(folder: Path, mcl: str, knn: int | None, cands: str, classifier: str, workers: int = 1,
         checkpoint: Path | None = None, device: str = "cpu") -> dict:
    row = run_one(load_variant(folder, alt_wbc=cands == "alt10", glosh_complement=cands == "glosh"), mcl, knn,
                  classifier, workers, checkpoint, device)
    row["candidates"] = cands
    return row


def _job_child(conn, *args) -> None:
    import resource

    budget, workers, checkpoint, device = args[-4:]
    resource.setrlimit(resource.RLIMIT_CPU, (int(budget), int(budget) + 5))
    conn.send(_job(*args[:-4], workers, checkpoint, device))


def _job_with_budget(folder: Path, mcl: str, knn: int | None, cands: str, classifier: str,
                     budget: float, workers: int = 1, checkpoint: Path | None = None,
                     device: str = "cpu") -> dict | None:
    """:func:`_job` in a child process limited to ``budget`` CPU seconds (None when it was stopped)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_job_child, args=(child, folder, mcl, knn, cands, classifier, budget, workers,
                                                           checkpoint, device))
    proc.start()
    child.close()
    try:
        row = parent.recv()
    except EOFError:  # the child was stopped (its CPU limit) before it sent a row
        row = None
    proc.join()
    return row if proc.exitcode == 0 else None


def fmt(x) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}".replace("-", "−")


def table(out: Path) -> str:
    """The Table 6 / Table 7 comparison as markdown (ours vs the paper's; an approximate run at N <= 251 equals
    the exact index, since a kNN subset of 250 then holds every object)."""
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    by = {key(r): r for r in rows}
    lines = ["| dataset | N | mode | m_cl = 1 ours / paper | √(5 %·N) ours / paper | n ours / paper "
             "| ⌊√(5 %·N)⌋ ours / paper's √(5 %·N) | √(5 %·N) rounded ours / paper's √(5 %·N) |",
             "| --- | ---: | --- | --- | --- | --- | --- | --- |"]
    lines7 = ["| dataset | mode | ROC AUC min / mean / max (ours; paper) | AP min / mean / max | "
              "pick m_cl = 1: ROC AUC (AP) ours / paper | pick √(5 %·N) | pick n |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for folder, clf in [(f, c) for f in variants() for c in CLASSIFIERS]:
        base, n = base_name(folder), _n_lines(folder / "w_1.txt.gz")
        kinds = ["stored"] + (["alt10"] if base == "WBC" else []) + (["glosh"] if base in GLOSH_DEGENERATE else [])
        for alt in kinds:
            for m, mode in enumerate(("exact", f"knn{PAPER_KNN}")):
                look = mode if (mode == "exact" or n > PAPER_KNN + 1) else "exact"
                got = [by.get((folder.name, look, mcl, alt, clf)) for mcl in MCLS]
                if not any(got):
                    continue
                paper6 = TABLE6[base][m]
                name = base + {"stored": "", "alt10": " (790b162 cand. 10)", "glosh": " (GLOSH 1 − w)"}[alt]
                cells = [f"{fmt(g['spearman'] if g else None)} / {fmt(p)}" for g, p in zip(got, paper6, strict=True)]
                for as_int in (by.get((folder.name, look, m, alt, clf)) for m in ("sqrt5i", "sqrt5r")):
                    cells.append(f"{fmt(as_int['spearman'] if as_int else None)} / {fmt(paper6[1])}"
                                 + (f" (m_cl = {as_int['m_cl_value']:g})" if as_int else ""))
                lines.append(f"| {name} | {n} | {mode}, {clf} | " + " | ".join(cells) + " |")
                p7 = TABLE7[base]
                first = next(g for g in got if g)
                lo, mean, hi = first["auc_min_mean_max"]
                a_lo, a_mean, a_hi = first["ap_min_mean_max"]
                picks = [f"{g['pick_algorithm']}-{g['pick_k']} {fmt(g['pick_auc'])} ({fmt(g['pick_ap'])})"
                         f"{'*' if g['pick_ties'] > 1 else ''} / {fmt(p)}" if g else f"— / {fmt(p)}"
                         for g, p in zip(got, p7[1 + m], strict=True)]
                lines7.append(f"| {name} | {mode}, {clf} | {fmt(lo)} / {fmt(mean)} / {fmt(hi)}; "
                              f"{' / '.join(fmt(x) for x in p7[0])} | {fmt(a_lo)} / {fmt(a_mean)} / {fmt(a_hi)} | "
                              + " | ".join(picks) + " |")
    return "\n".join(lines) + "\n\n" + "\n".join(lines7) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "ireos_authors.jsonl")
    parser.add_argument("--max-n", type=int, default=100_000, help="skip variants with more objects")
    parser.add_argument("--classifier", choices=CLASSIFIERS, default="pinned")
    parser.add_argument("--mcl", default=",".join(MCLS),
                        help="comma-separated m_cl settings among 1,sqrt5,n,sqrt5i,sqrt5r (sqrt5 truncated / "
                             "rounded to an integer)")
    parser.add_argument("--only", default="", help="comma-separated base names (e.g. Wilt,Annthyroid)")
    parser.add_argument("--exact-max-n", type=int, default=EXACT_MAX_N, help="the exact index up to this N")
    parser.add_argument("--budget", type=float, default=None, help="CPU seconds per job (stopped beyond)")
    parser.add_argument("--table", action="store_true", help="print the markdown tables of what --out holds")
    parser.add_argument("--workers", type=int, default=1, help="threads for the objects' classifiers (same numbers)")
    parser.add_argument("--checkpoints", type=Path, default=CHECKPOINTS,
                        help="directory of the jobs' finished classifiers, resumed from (default %(default)s)")
    parser.add_argument("--no-checkpoints", action="store_true", help="keep no checkpoints (every job from scratch)")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda / cuda:N: the exact index's block solver on "
                        "that GPU through PyTorch (ireos(device=...)); rows record the card")
    parser.add_argument("--solver", choices=list(BLOCK_SOLVERS), default=ireos_module.BLOCK,
                        help="the exact index's block solver (default %(default)s; an earlier one to resume a cell "
                             "begun with it: checkpoints are per solver)")
    args = parser.parse_args()
    ireos_module.BLOCK = args.solver
    if args.table:
        print(table(args.out))
    else:
        run(args.out, args.max_n, args.classifier, tuple(args.mcl.split(",")),
            tuple(x for x in args.only.split(",") if x) or None, args.exact_max_n, args.budget, args.workers,
            None if args.no_checkpoints else args.checkpoints, args.device)


if __name__ == "__main__":
    main()
