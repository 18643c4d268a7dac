"""odeval.compare: similarity of outlier scorings and outlier ensembles (Schubert, Wojdanowski, Zimek,
Kriegel, SDM 2012). See ``docs/scaling-and-ensembles.md``."""

# one list of public names per module: the package exports exactly theirs
from odeval.compare import ensemble as _ensemble
from odeval.compare import plot as _plot
from odeval.compare import similarity as _similarity
from odeval.compare.ensemble import *  # noqa: F403
from odeval.compare.plot import *  # noqa: F403
from odeval.compare.similarity import *  # noqa: F403
from odeval.compare.similarity import check_score_matrix

__all__ = [*_ensemble.__all__, *_plot.__all__, *_similarity.__all__, "check_score_matrix"]
