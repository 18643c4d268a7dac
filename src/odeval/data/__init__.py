"""Stage 1: datasets — the :class:`Dataset` value, loaders, preparation and the catalogue."""

from odeval.data._info import DatasetInfos, dataset_info, dataset_infos
from odeval.data.catalogue import CatalogueError, Variant
from odeval.data.dataset import Dataset
from odeval.data.loaders import (
    DatasetFormatError,
    label_note,
    load_arff,
    load_csv,
    load_dataset,
    load_mat,
    load_npz,
)
from odeval.data.writers import write_arff, write_dataset

__all__ = [
    "CatalogueError",
    "Dataset",
    "DatasetFormatError",
    "DatasetInfos",
    "Variant",
    "dataset_info",
    "dataset_infos",
    "label_note",
    "load_arff",
    "load_csv",
    "load_dataset",
    "load_mat",
    "load_npz",
    "write_arff",
    "write_dataset",
]
