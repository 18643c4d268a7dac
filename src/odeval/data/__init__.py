"""Stage 1: datasets — the :class:`Dataset` value, loaders, preparation and the catalogue."""

from odeval.data.dataset import Dataset

__all__ = ["Dataset"]
