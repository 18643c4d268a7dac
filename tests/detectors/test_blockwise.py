"""Block-partitioned scoring (in one process) equals the one-process scores bit for bit, for every method with a
block plan (all 12 of Campos et al.); the others refuse with the reason."""

import numpy as np
import pytest

from odeval.detectors import available_methods, get_detector
from odeval.detectors.blockwise import block_plan, block_raw_scores, partitioned_methods
from odeval.neighbors import knn_graph
from odeval.neighbors.blocks import Partition, block_bounds, knn_block, knn_rows, spatial_partition


@pytest.fixture(scope="module")
def setting():
    rng = np.random.default_rng(11)
    X = rng.integers(0, 5, size=(300, 3)).astype(float)
    X += rng.normal(size=X.shape) * (rng.random((300, 1)) < 0.5)
    X[40:52] = X[0]  # duplicates (zero k-distances: inf/1 branches of LOF, INFLO, COF, LDF, ...)
    X[290:] = X[289]
    k_max = 22
    g = knn_graph(X, k_max)
    blocks = {nb: [knn_block(X, a, b, k_max) for a, b in block_bounds(len(X), nb)] for nb in (2, 7)}
    # blocks that are not ranges: a k-d split of the data, and objects dealt out to 3 blocks in turn
    for name, part in (("spatial", spatial_partition(X, 5)),
                       ("dealt", Partition.of([np.arange(i, len(X), 3) for i in range(3)]))):
        blocks[name] = (part, [knn_rows(X, m, k_max) for m in part.members])
    return g, blocks


CASES = [("kNN", {}), ("kNNW", {}), ("LDOF", {}), ("FastABOD", {}), ("LOF", {}), ("SimplifiedLOF", {}),
         ("COF", {}), ("ODIN", {}), ("LoOP", {"lam": 2.0}), ("LDF", {"h": 0.5}), ("INFLO", {}),
         ("KDEOS", {}), ("kNN", {"variant": "elki-0.7.1"}), ("LOF", {"variant": "elki-0.7.1"}), ("INFLO", {"m": 0.6}),
         ("KDEOS", {"variant": "elki-0.7.1", "idim": -1, "min_bandwidth": 0.3})]


@pytest.mark.parametrize("method, params", CASES, ids=[f"{m}{p or ''}" for m, p in CASES])
@pytest.mark.parametrize("n_blocks", [2, 7, "spatial", "dealt"])
def test_blockwise_is_bit_identical(setting, method, params, n_blocks):
    g, blocks = setting
    det = get_detector(method, **params)
    lo = max(det.info.min_k, 1)
    part, blks = (None, blocks[n_blocks]) if isinstance(n_blocks, int) else blocks[n_blocks]
    for ks in (np.arange(lo, g.k_max + 1), np.array([lo, 5, 13, g.k_max])):
        ref = det.raw_scores_all_k(g, ks)
        got = block_raw_scores(det, blks, ks, partition=part)
        assert got.shape == ref.shape
        assert np.array_equal(got, ref, equal_nan=True), method


def test_every_campos_method_has_a_plan():
    assert set(partitioned_methods()) == {"kNN", "kNNW", "LOF", "SimplifiedLOF", "LoOP", "LDOF", "ODIN", "FastABOD",
                                          "LDF", "INFLO", "COF", "KDEOS"}


@pytest.mark.parametrize("method, params, match", [
    ("KDEOS", {"variant": "elki-0.7.1-cks"}, "variant 'elki-0.7.1-cks' is not block-partitioned"),
    ("LOF", {"variant": "elki-0.7.1-cks"}, "variant 'elki-0.7.1-cks' is not block-partitioned"),
    ("COF", {"variant": "elki-0.7.1"}, "variant 'elki-0.7.1' is not block-partitioned"),
    ("FastABOD", {"kernel": "poly2"}, "variant 'poly2'"),
    ("GLOSH", {}, "GLOSH is not block-partitioned"),
])
def test_refusals_name_the_reason(method, params, match):
    with pytest.raises(NotImplementedError, match=match):
        block_plan(get_detector(method, **params))


def test_ks_must_ascend(setting):
    _, blocks = setting
    with pytest.raises(ValueError, match="ascending"):
        block_raw_scores(get_detector("LOF"), blocks[2], [5, 3])


def test_plans_are_declared_by_the_detectors_not_by_blockwise():
    """blockwise.py is the generic machinery: it imports no method module and names no method."""
    import ast
    from pathlib import Path

    import odeval.detectors.blockwise as blockwise

    tree = ast.parse(Path(blockwise.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"__future__", "collections.abc", "dataclasses", "typing", "odeval.detectors._neighborhood",
                        "odeval.detectors.base", "odeval.neighbors.blocks"}
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not strings & set(available_methods())  # no dispatch on a method's name
