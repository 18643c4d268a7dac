"""odeval.compare: similarity of outlier scorings and outlier ensembles (Schubert, Wojdanowski, Zimek,
Kriegel, SDM 2012; ``docs/scaling-and-ensembles.md``). Label-free model selection lives in
:mod:`odeval.labelfree.selection` (``docs/model-selection.md``)."""

# the public names are those of the submodules (one list each: their __all__)
from odeval.compare import ensemble as _ensemble
from odeval.compare import plot as _plot
from odeval.compare import similarity as _similarity
from odeval.compare.ensemble import *  # noqa: F403
from odeval.compare.plot import *  # noqa: F403
from odeval.compare.similarity import *  # noqa: F403

__all__ = [*_ensemble.__all__, *_plot.__all__, *_similarity.__all__]
