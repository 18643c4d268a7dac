"""Stage 1: datasets — the :class:`Dataset` value, loaders, preparation and the catalogue."""

# the loaders' public names are those of odeval.data.loaders (one list: its __all__)
from odeval.data import loaders as _loaders
from odeval.data._info import DatasetInfos, dataset_info, dataset_infos
from odeval.data.catalogue import CatalogueError, Variant
from odeval.data.dataset import Dataset
from odeval.data.loaders import *  # noqa: F403
from odeval.data.writers import write_arff, write_dataset

__all__ = ["CatalogueError", "Dataset", "DatasetInfos", "Variant", "dataset_info", "dataset_infos", "write_arff",
           "write_dataset", *_loaders.__all__]
