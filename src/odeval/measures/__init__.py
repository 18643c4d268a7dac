"""External evaluation measures of outlier scorings (ground-truth labels needed).

Every function takes ``labels`` (bool or 0/1, True = outlier) and ``scores`` (higher = more outlying) and follows
ELKI 0.7.1's tie rules, the reference implementation of Campos et al. (2016). :func:`evaluate` computes all of
:data:`MEASURES` from one sort. See ``docs/measures.md``. Internal measures (no labels) live in
:mod:`odeval.measures.internal`.
"""

# the public measures are those of _ranking (one list: its __all__)
from odeval.measures._ranking import *  # noqa: F403
from odeval.measures._ranking import __all__  # noqa: F401
