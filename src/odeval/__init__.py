"""odeval: evaluation of unsupervised outlier detection.

Pipeline stages, each a subpackage; data flows one way and a stage never imports a later one::

    data -> neighbors -> detectors -> scaling -> measures -> compare -> protocols -> bench
         -> analysis -> report ;  cli on top

Conventions (see ``DEVELOPERS.md``): scores in the public API are "higher = more outlying"; ``k`` counts
neighbours other than the query point and objects tied at the k-distance belong to the neighbourhood;
every random step takes a seed.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("odeval")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
