"""External evaluation measures of outlier scorings (ground-truth labels needed).

Every function takes ``labels`` (bool or 0/1, True = outlier) and ``scores`` (higher = more outlying) and follows
ELKI 0.7.1's tie rules, the reference implementation of Campos et al. (2016). :func:`evaluate` computes all of
:data:`MEASURES` from one sort; :class:`ScoringEvaluator` the same numbers and the outliers' ranks for many
scorings of the same objects in one compiled pass each (the study runner). See ``docs/measures.md``. Label-free
(internal) measures live in :mod:`odeval.labelfree`.
"""

# the public measures are those of _ranking (one list: its __all__) and the compiled evaluator
from odeval.measures import _ranking
from odeval.measures._compiled import ScoringEvaluator
from odeval.measures._ranking import *  # noqa: F403

__all__ = [*_ranking.__all__, "ScoringEvaluator"]
