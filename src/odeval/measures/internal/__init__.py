"""odeval.measures.internal: label-free (internal) evaluation measures.

* Excess-Mass / Mass-Volume criteria (Goix 2016): :mod:`~odeval.measures.internal.excess_mass_volume` (the
  estimators) and :mod:`~odeval.measures.internal.emmv_algorithm` (a detector, feature sub-sampling).
"""

from odeval.measures.internal.emmv_algorithm import EMMVResult, emmv, emmv_all_k  # noqa: F401
from odeval.measures.internal.excess_mass_volume import EMMVWarning, excess_mass, mass_volume  # noqa: F401
