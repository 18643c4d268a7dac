"""odeval.labelfree: label-free (internal) evaluation of outlier solutions and label-free model selection.

* :func:`ireos`, :func:`ireos_select`: IREOS (Marques, Campello, Sander, Zimek, ACM TKDD 2020), docs/ireos.md.
* :func:`laplacian_score`: the Laplacian Score baseline of the IREOS paper (He, Cai, Niyogi 2005).
* :func:`excess_mass`, :func:`mass_volume`: Excess-Mass / Mass-Volume criteria (Goix 2016), the estimators of
  :mod:`~odeval.labelfree.excess_mass_volume`; :func:`emmv` (a detector, feature sub-sampling) and
  :func:`emmv_all_k` (one method at many k), :func:`emmv_many` (several methods sharing the draws) in
  :mod:`~odeval.labelfree.emmv_algorithm`. See docs/emmv.md.
* :mod:`odeval.labelfree.selection`: the label-free selectors (model centrality, HITS, SELECT, EM/MV, IREOS,
  Laplacian Score, the γ_max-guarded IREOS rule of :mod:`~odeval.labelfree.guarded`, ...), which pick one
  candidate scoring without labels. See docs/model-selection.md.
* :func:`odeval.labelfree.recommend.recommend`: ``odeval select``, from an unlabelled table to a
  recommended detector and k with its label-free confidence. See docs/select.md.
"""

from odeval.labelfree.emmv_algorithm import EMMVResult, EMMVSettings, emmv, emmv_all_k, emmv_many
from odeval.labelfree.excess_mass_volume import EMMVWarning, excess_mass, mass_volume

# after the indexes: guarded registers the ``ireos-guarded`` selector; recommend is ``odeval select``'s library
from odeval.labelfree.guarded import GuardedSettings
from odeval.labelfree.ireos import (
    PAPER_KNN,
    IREOSResult,
    IREOSSettings,
    SelectResult,
    ireos,
    ireos_select,
    resolve_mcl,
    solution_weights,
)
from odeval.labelfree.laplacian import laplacian_score
from odeval.labelfree.recommend import Recommendation, SelectSettings  # recommend(): the module's (same name)

__all__ = ["EMMVResult", "EMMVSettings", "EMMVWarning", "GuardedSettings", "IREOSResult", "IREOSSettings", "PAPER_KNN",
           "Recommendation", "SelectResult", "SelectSettings",
           "emmv", "emmv_all_k", "emmv_many", "excess_mass", "ireos", "ireos_select", "laplacian_score", "mass_volume",
           "resolve_mcl", "solution_weights"]
