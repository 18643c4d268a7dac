"""Meta-features (odeval.labelfree.metafeatures) of every dataset file of a study, for the meta-selector (issue 27).

    NUMBA_NUM_THREADS=1 nice -n 10 python benchmarks/meta_features.py benchmarks/meta_store.toml \\
        /work/meta-store/features.csv

One row per file (dataset = the file's stem, as the study store names it), the columns of FEATURE_NAMES, the file's
SHA-256 and the seconds the features took. Resumable: rows already in the output are kept.
"""

from __future__ import annotations

import argparse
import hashlib
import time
from pathlib import Path

import numpy as np
import pandas as pd

from odeval.bench.config import load_study
from odeval.data import load_dataset
from odeval.labelfree.metafeatures import FEATURE_NAMES, meta_features


def study_files(study: Path) -> list[tuple[str, Path]]:
    """(dataset name, file) of the study's variants, as the runner resolves and names them."""
    return [(v.name, Path(v.path)) for v in load_study(study).datasets]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", type=Path)
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    done = pd.read_csv(a.out) if a.out.exists() else pd.DataFrame(columns=["dataset"])
    rows = done.to_dict("records")
    have = set(done["dataset"])
    for name, path in study_files(a.study):
        if name in have:
            continue
        ds = load_dataset(path)
        X = ds.numeric_matrix()
        t = time.perf_counter()
        f = meta_features(X)
        dt = time.perf_counter() - t
        rows.append({"dataset": name, "file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                     "n": X.shape[0], "d": X.shape[1], "seconds": round(dt, 3),
                     **dict(zip(FEATURE_NAMES, np.round(f, 12), strict=True))})
        pd.DataFrame(rows).to_csv(a.out, index=False)
        print(f"{name}: {dt:.1f} s", flush=True)


if __name__ == "__main__":
    main()
