"""Which files of ../shared/datasets hold the same base data (issue 27): the groups of the leave-one-base-out folds.

    python benchmarks/meta_base_datasets.py benchmarks/meta_store.toml src/odeval/labelfree/data/meta_base_datasets.csv

The same base data appears under other names and other preparations (ODDS ``wbc`` is Campos's WDBC, ODDS
``breastw`` is Campos's WBC; ODDS keeps 6 of Annthyroid's 21 attributes; ADBench re-ships ODDS files). Names are not
trusted: files are matched **by content**. Each file (for a Campos base dataset: its variant with the most objects)
is described by the quantile profile of every attribute after min–max scaling to [0, 1] (41 quantiles: invariant to
the affine rescaling a preparation applies, robust to removed duplicates and downsampled outliers); two files match
where at least ``MATCH_FRACTION`` of the attributes of the one with fewer attributes have a profile within
``PROFILE_TOLERANCE`` (largest quantile difference) of some attribute of the other, attributes with ≥ 3 distinct
values only (binary and constant attributes match too easily). Matches are closed transitively (union–find). The
output table lists every file with its group (the base dataset), the best match it has outside itself, that
match's fraction and the sizes, so that each decision can be checked by eye.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from odeval.bench.config import load_study
from odeval.data import load_dataset

QUANTILES = np.linspace(0.0, 1.0, 41)
PROFILE_TOLERANCE = 0.03
MATCH_FRACTION = 0.8
#: Matches the profiles cannot show (another selection of attributes, duplicates removed, a different class
#: downsampled), from the collections' documentation, each with the content evidence that is consistent with it.
#: Merging two files that are not the same data costs the validation a fold; missing a match would leak.
DOCUMENTED = {
    "glass": ("Glass", "ODDS: UCI Glass Identification; same N = 214 and 9 outliers as Campos Glass; Campos keeps 7 "
                       "of the 9 attributes"),
    "wbc": ("WDBC", "ODDS 'wbc' is UCI Breast Cancer Wisconsin (Diagnostic): 30 attributes as Campos WDBC; another "
                    "downsampling of the malignant class (21 outliers, Campos 10)"),
    "breastw": ("WBC", "ODDS 'breastw' is UCI Breast Cancer Wisconsin (Original): the 9 scores 1..10 of Campos WBC "
                       "((x - 1)/9 there), 683 objects with duplicates (Campos 223 without)"),
    "pendigits": ("PenDigits", "ODDS/ADBench pendigits is UCI Pen-Based Recognition of Handwritten Digits, 16 "
                               "attributes 0..100 as Campos PenDigits (another outlier class and downsampling)"),
    "satimage-2": ("satellite", "ODDS satimage-2 and satellite are both UCI Statlog (Landsat Satellite), 36 "
                                "attributes (satimage-2: class 2 downsampled as outliers)"),
}


def profiles(X: np.ndarray) -> np.ndarray:
    """(c, 41) quantile profiles of the attributes with ≥ 3 distinct values, min–max scaled."""
    out = []
    for j in range(X.shape[1]):
        x = X[:, j]
        if np.unique(x).size < 3:
            continue
        out.append(np.quantile((x - x.min()) / (x.max() - x.min()), QUANTILES))
    return np.asarray(out).reshape(-1, QUANTILES.size)


def match_fraction(P: np.ndarray, Q: np.ndarray) -> float:
    """Fraction of the smaller profile set's attributes with a profile within the tolerance in the other."""
    if len(P) == 0 or len(Q) == 0:
        return 0.0
    A, B = (P, Q) if len(P) <= len(Q) else (Q, P)
    dist = np.abs(A[:, None, :] - B[None, :, :]).max(axis=2).min(axis=1)
    return float((dist <= PROFILE_TOLERANCE).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", type=Path)
    ap.add_argument("out", type=Path)
    a = ap.parse_args()
    variants = load_study(a.study).datasets
    rep: dict[str, tuple[str, Path, int]] = {}  # representative file per Campos base / per other file
    facts = {}
    for v in variants:
        path = Path(v.path)
        is_campos = "/dami/" in str(path)
        key = f"campos:{v.base_dataset}" if is_campos else path.stem
        ds = load_dataset(path)
        n = ds.X.shape[0]
        facts[v.name] = (key, n, ds.X.shape[1], int(ds.y.sum()), str(path))
        if key not in rep or n > rep[key][2]:
            rep[key] = (v.name, path, n)
    keys = sorted(rep)
    prof = {}
    for key in keys:
        ds = load_dataset(rep[key][1])
        prof[key] = profiles(ds.numeric_matrix())
    M = np.zeros((len(keys), len(keys)))
    for i, ki in enumerate(keys):
        for j in range(i + 1, len(keys)):
            M[i, j] = M[j, i] = match_fraction(prof[ki], prof[keys[j]])
    parent = list(range(len(keys)))
    by_content = np.zeros(len(keys), dtype=bool)

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i
    for i in range(len(keys)):
        for j in range(i + 1, len(keys)):
            if M[i, j] >= MATCH_FRACTION:
                by_content[i] = by_content[j] = True
                ri, rj = find(i), find(j)
                parent[max(ri, rj)] = min(ri, rj)
    for file_key, (target, _) in DOCUMENTED.items():
        i = keys.index(file_key)
        j = keys.index(f"campos:{target}") if f"campos:{target}" in keys else keys.index(target)
        ri, rj = find(i), find(j)
        parent[max(ri, rj)] = min(ri, rj)
    group_name = {}
    for i, k in enumerate(keys):  # a group containing a Campos base is named after it, else after its first file
        r = find(i)
        members = [keys[j] for j in range(len(keys)) if find(j) == r]
        campos = sorted(m for m in members if m.startswith("campos:"))
        group_name[k] = campos[0].split(":", 1)[1] if campos else sorted(members)[0]
    rows = []
    for name, (key, n, d, n_out, path) in sorted(facts.items()):
        i = keys.index(key)
        others = [(M[i, j], keys[j]) for j in range(len(keys)) if j != i]
        best_frac, best = max(others)
        rows.append({"dataset": name, "base_dataset": group_name[key], "file": path.split("datasets/", 1)[-1],
                     "n_objects": n, "n_attributes": d, "n_outliers": n_out, "profiled_as": rep[key][0],
                     "profiled_attributes": len(prof[key]),
                     "best_other_match": best.replace("campos:", "Campos "), "best_match_fraction": round(best_frac, 3),
                     "matched_by": ("documentation: " + DOCUMENTED[key][1] if key in DOCUMENTED else
                                    "documentation: joined by " + ", ".join(
                                        f for f, (tgt, _) in DOCUMENTED.items() if tgt == key)
                                    if any(tgt == key for tgt, _ in DOCUMENTED.values()) and not by_content[i] else
                                    "content" if by_content[i] else
                                    "Campos file name" if key.startswith("campos:") else "no match (own base)")})
    df = pd.DataFrame(rows)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(a.out, index=False)
    show = df[~df["file"].str.startswith("dami/")]
    print(show.to_string(index=False))
    print(df.groupby("base_dataset").size().to_string())


if __name__ == "__main__":
    main()
