"""Results-store frames for the analysis and report tests.

* :func:`synthetic_results` — fast synthetic ``runs`` / ``outlier_ranks`` frames of the store schema with a
  known structure (method quality offsets, curves peaking at a method-specific k).
* :func:`realistic_results` — frames produced by scoring a few real Campos (DAMI) datasets with simple kNN,
  kNNW and LOF scorers built on scikit-learn's NearestNeighbors (stand-ins until odeval's detectors and
  runner exist), evaluated with :func:`odeval.measures.evaluate`. Also returns the best-k scores for the
  label permutation test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from odeval.analysis import known_measures

MEASURES = known_measures()


def synthetic_results(
    n_base: int = 5,
    n_variants: int = 3,
    methods: tuple[str, ...] = ("KNN", "KNNW", "LOF", "LDOF"),
    ks: range = range(1, 31),
    seed: int = 0,
    n_objects: int = 200,
    n_outliers: int = 8,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Synthetic ``runs`` and ``outlier_ranks`` frames (status all 'ok')."""
    rng = np.random.default_rng(seed)
    quality = {m: 0.9 - 0.05 * i for i, m in enumerate(methods)}  # first method best
    peak = {m: 5 + 4 * i for i, m in enumerate(methods)}
    runs, ranks = [], []
    for b in range(n_base):
        base = f"Base{b}"
        for v in range(1, n_variants + 1):
            name = f"{base}_withoutdupl_norm_05_v{v:02d}"
            n_attr = int(3 + 7 * b)
            for m in methods:
                for k in ks:
                    auc = quality[m] - 0.004 * abs(k - peak[m]) + rng.normal(0, 0.01) - 0.03 * b
                    row = {
                        "dataset": name, "base_dataset": base, "normalized": True, "deduplicated": True,
                        "outlier_pct": 5.0, "version": v, "provenance": json.dumps({"synthetic": True}),
                        "n_objects": n_objects, "n_outliers": n_outliers, "n_attributes": n_attr,
                        "method": m, "params": "{}", "k": k,
                        "runtime_s": 0.01, "status": "ok", "error": None, "odeval_version": "0.1.0",
                        "study_hash": "synthetic",
                    }
                    for meas in MEASURES:
                        row[meas] = auc if meas == "roc_auc" else auc - 0.3 + 0.01 * len(meas) % 0.1
                    runs.append(row)
                    r = np.sort(rng.choice(n_objects, n_outliers, replace=False) + 1)
                    for o, rank in enumerate(r):
                        ranks.append({"dataset": name, "method": m, "params": "{}", "k": k, "object": o,
                                      "rank": float(rank)})
    return pd.DataFrame(runs), pd.DataFrame(ranks)


def _load_arff(path: Path) -> tuple[np.ndarray, np.ndarray]:
    import arff

    with open(path) as fh:
        data = arff.load(fh)
    names = [a[0].lower() for a in data["attributes"]]
    rows = data["data"]
    y = np.array([str(r[names.index("outlier")]).strip("'\"") == "yes" for r in rows])
    keep = [i for i, n in enumerate(names) if n not in ("id", "outlier")]
    X = np.array([[float(r[i]) for i in keep] for r in rows], dtype=np.float64)
    return X, y


def _scores_all_k(X: np.ndarray, k_max: int) -> dict[str, np.ndarray]:
    """(k_max, N) public scores of kNN (k-distance), kNNW (sum of k distances) and LOF for k = 1..k_max."""
    from sklearn.neighbors import NearestNeighbors

    nn = NearestNeighbors(n_neighbors=k_max + 1).fit(X)
    dist, idx = nn.kneighbors(X)
    dist, idx = dist[:, 1:], idx[:, 1:]  # drop the query point (ties with duplicates are ignored here)
    out = {"KNN": np.empty((k_max, X.shape[0])), "KNNW": np.empty((k_max, X.shape[0])),
           "LOF": np.empty((k_max, X.shape[0]))}
    for k in range(1, k_max + 1):
        kd = dist[:, k - 1]
        out["KNN"][k - 1] = kd
        out["KNNW"][k - 1] = dist[:, :k].sum(axis=1)
        reach = np.maximum(dist[:, :k], kd[idx[:, :k]])
        lrd = 1.0 / np.maximum(reach.mean(axis=1), 1e-12)
        out["LOF"][k - 1] = lrd[idx[:, :k]].mean(axis=1) / lrd
    return out


REALISTIC_FILES = (
    "Glass/Glass_withoutdupl_norm.arff",
    "Hepatitis/Hepatitis_withoutdupl_norm_05_v01.arff",
    "Hepatitis/Hepatitis_withoutdupl_norm_05_v02.arff",
    "Hepatitis/Hepatitis_withoutdupl_norm_10_v01.arff",
    "WBC/WBC_withoutdupl_norm_v01.arff",
    "WBC/WBC_withoutdupl_norm_v02.arff",
    "WBC/WBC_withoutdupl_norm_v03.arff",
    "Parkinson/Parkinson_withoutdupl_norm_05_v01.arff",
    "Parkinson/Parkinson_withoutdupl_norm_05_v02.arff",
    "Lymphography/Lymphography_withoutdupl_norm_catremoved.arff",
)


def realistic_results(
    dami: Path, k_max: int = 25, files: tuple[str, ...] = REALISTIC_FILES
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]]:
    """Score real DAMI datasets over k = 1..k_max; return (runs, outlier_ranks, best-k scores by variant).

    The third value maps each variant to (labels, {method: scores at its best ROC AUC k}).
    """
    from odeval.measures import evaluate, outlier_ranks

    runs, ranks, best_scores = [], [], {}
    for rel in files:
        path = dami / rel
        X, y = _load_arff(path)
        name = path.stem
        base = rel.split("/")[0]
        parts = name.split("_")
        pct = next((float(p) for p in parts if p.isdigit() and len(p) == 2), None)
        n_out = int(y.sum())
        per_method = {}
        for method, S in _scores_all_k(X, k_max).items():
            best_auc, best_s = -1.0, None
            for k in range(1, k_max + 1):
                vals = evaluate(y, S[k - 1])
                runs.append({
                    "dataset": name, "base_dataset": base, "normalized": "norm" in parts,
                    "deduplicated": "withoutdupl" in parts, "outlier_pct": pct, "version": None,
                    "provenance": json.dumps({"file": rel}), "n_objects": X.shape[0], "n_outliers": n_out,
                    "n_attributes": X.shape[1], "method": method, "params": "{}", "k": k,
                    **{m: vals[m] for m in MEASURES}, "runtime_s": 0.0, "status": "ok", "error": None,
                    "odeval_version": "0.1.0", "study_hash": "realistic-test",
                })
                r = outlier_ranks(y, S[k - 1])
                for o, rank in zip(np.flatnonzero(y), r, strict=True):
                    ranks.append({"dataset": name, "method": method, "params": "{}", "k": k, "object": int(o),
                                  "rank": float(rank)})
                if vals["roc_auc"] > best_auc:
                    best_auc, best_s = vals["roc_auc"], S[k - 1].copy()
            per_method[method] = best_s
        best_scores[name] = (y, per_method)
    return pd.DataFrame(runs), pd.DataFrame(ranks), best_scores
