"""The ``odeval`` command line. Each subcommand is a thin shell over a library function."""

from __future__ import annotations

import click

from odeval import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="odeval")
def main() -> None:
    """odeval — evaluate unsupervised outlier detection.

    From a folder of datasets to a report: load and prepare benchmark datasets, score them with twelve
    kNN-based detectors over every k, evaluate with every external measure of the literature, and compare.
    """


@main.group()
def datasets() -> None:
    """Inspect, list and prepare outlier datasets."""


if __name__ == "__main__":  # pragma: no cover
    main()
