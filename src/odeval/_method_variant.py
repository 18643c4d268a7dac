"""The implementation variants of a neighbourhood method: :class:`MethodVariant` (the ``variant`` parameter).

A top-level helper, not part of ``odeval.detectors``, because the kNN graph (``odeval.neighbors``, an earlier
stage) re-enacts ELKI's batch-tool lists for one of them. Named ``MethodVariant``, not ``Variant``: that name is a
*dataset* variant (:class:`odeval.data.catalogue.Variant`).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["MethodVariant"]


class MethodVariant(StrEnum):
    """Which definition of a method a detector computes (docs/detectors.md, "Variants").

    A ``str`` enum (``StrEnum``, i.e. ``class MethodVariant(str, Enum)`` whose ``str()`` and f-strings give the
    value): members are strings equal to their values (``MethodVariant.PAPER == "paper"``, the same hash), so
    plain strings keep working everywhere a member is accepted, and ``json.dumps`` writes the value. Detectors store
    the plain value (:class:`odeval.detectors.base.Options` casts a member to it), so their parameters, study
    files and unit ids are the strings they always were.
    """

    #: The published definition.
    PAPER = "paper"
    #: ELKI 0.7.1's stand-alone implementation.
    ELKI_071 = "elki-0.7.1"
    #: ELKI 0.7.1's batch tool ``ComputeKNNOutlierScores``, as the Campos et al. (2016) reference results were made.
    ELKI_071_CKS = "elki-0.7.1-cks"
