"""The same work through two source trees, for an A/B speed check of a refactor (issue 23: "no regression").

One of three workloads, run by whichever odeval ``PYTHONPATH`` points at (old trees import IREOS and EM/MV from
``odeval.measures.internal``, new ones from ``odeval.labelfree``):

* ``score``: the twelve Campos methods, k = min_k..100, on Waveform (3,443 × 21), from one kNN graph;
* ``ireos``: exact IREOS of nine kNN / LOF / LDOF scorings of Ionosphere (351 × 32);
* ``emmv``: EM/MV of iForest on ODDS arrhythmia (constant attributes dropped), 6 feature draws.

Time both trees in turn with any whole-process timer, e.g.::

    git worktree add /tmp/old b644316
    for w in score ireos emmv; do
      /usr/bin/time -v env PYTHONPATH=/tmp/old/src python benchmarks/refactor_ab.py $w
      /usr/bin/time -v env PYTHONPATH=$PWD/src python benchmarks/refactor_ab.py $w
    done
"""

import os
import sys
from pathlib import Path

import numpy as np

from odeval.data import load_dataset

SHARED = Path(os.environ.get("ODEVAL_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))
what = sys.argv[1]
if what == "score":
    from odeval.detectors import get_detector
    from odeval.neighbors import knn_graph
    ds = load_dataset(SHARED / "dami/Waveform/Waveform_withoutdupl_norm_v01.arff")
    X = ds.numeric_matrix()
    g = knn_graph(X, 100)
    for m in ["kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "KDEOS", "COF", "FastABOD", "LDF",
              "INFLO"]:
        det = get_detector(m)
        det.score_all_k(g, range(max(1, det.info.min_k), 101))
elif what == "ireos":
    try:
        from odeval.labelfree import ireos
    except ImportError:
        from odeval.measures.internal import ireos  # the tree before issue 23
    from odeval.detectors import get_detector
    from odeval.neighbors import knn_graph
    ds = load_dataset(SHARED / "dami/Ionosphere/Ionosphere_withoutdupl_norm.arff")
    X = ds.numeric_matrix()
    g = knn_graph(X, 50)
    sols = [get_detector(m).score_all_k(g, [k])[0] for m in ("kNN", "LOF", "LDOF") for k in (5, 20, 50)]
    ireos(X, sols)
elif what == "emmv":
    try:
        from odeval.labelfree import emmv
    except ImportError:
        from odeval.measures.internal import emmv  # the tree before issue 23
    ds = load_dataset(SHARED / "odds/arrhythmia.mat")
    X = ds.numeric_matrix()
    X = X[:, np.ptp(X, axis=0) > 0]
    emmv("iforest", X, draws=6, features=5, n_generated=100_000, seed=0)
