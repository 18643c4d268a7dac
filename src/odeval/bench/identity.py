"""The identity of a study unit: a content hash of the dataset file, the method, its k (its grid point and seed) and
the study's settings.

Same inputs ⇒ same id, in any study that contains them, so a unit computed once is found by every study that
needs it (:func:`unit_id`); the method's scoring version is part of the id from version 2 on
(:func:`scoring_version`, see docs/studies.md).
"""

from __future__ import annotations

import hashlib
import json

from odeval._krange import parse_k_range
from odeval.bench.config import MethodSpec, Study
from odeval.data.catalogue import Variant

__all__ = ["file_sha256", "scoring_version", "unit_id"]


def file_sha256(path: str) -> str:
    """SHA-256 of a dataset file's bytes (read in blocks of 1 MiB), as hex."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def scoring_version(method: MethodSpec) -> int:
    """The method's :attr:`~odeval.detectors.MethodInfo.scoring_version` (1 unless its definition changed)."""
    from odeval.bench.config import method_detector

    if not method.is_knn:
        return 1  # an imported estimator's definition is its package's: its version is not odeval's to track
    return int(method_detector(method).info.scoring_version)


def unit_id(file_sha256: str, ref: Variant, method: MethodSpec, study: Study, version: int | None = None) -> str:
    """Content hash identifying a unit: same inputs ⇒ same id, in any study that contains them.

    The method's scoring version (``version``, default: the current one, :func:`scoring_version`) is part of
    the id from version 2 on, so a changed scoring definition gives new ids and is recomputed; version 1
    leaves the id as it was before versions existed.
    """
    version = scoring_version(method) if version is None else version
    ks = parse_k_range(method.ks).canonical() if method.is_knn else None
    metric = study.metric if method.is_knn else ""  # an estimator reads the data matrix, not a kNN graph
    payload = json.dumps([file_sha256, ref.name, method.name, method.params_json, ks, metric,
                          list(study.measures), study.keep_scores]
                         + ([study.internal_key] if study.internal else [])
                         + ([{"scoring_version": version}] if version > 1 else [])
                         # the non-k setting, the seed, the estimator's import path: absent for the kNN family
                         # over k alone, whose ids stay those of every earlier store (tests/bench pin them)
                         + method.identity(), sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:24]
