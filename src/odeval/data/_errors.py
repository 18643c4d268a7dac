"""The error raised for malformed dataset files."""

from __future__ import annotations

import os

__all__ = ["DatasetFormatError"]


class DatasetFormatError(ValueError):
    """A dataset file is malformed or cannot be interpreted as an outlier dataset.

    The message names the file, the line (1-based, where the problem is tied to one) and the problem;
    the three parts are also available as attributes.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    problem : str
        What is wrong, naming the attribute / column / value concerned.
    line : int, optional
        1-based line number in the file, where applicable.

    Examples
    --------
    >>> str(DatasetFormatError("data.arff", "unknown nominal value 'maybe'", line=12))
    "data.arff, line 12: unknown nominal value 'maybe'"
    """

    def __init__(self, path: str | os.PathLike[str], problem: str, line: int | None = None) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        self.line = line
        where = self.path if line is None else f"{self.path}, line {line}"
        super().__init__(f"{where}: {problem}")

    def __reduce__(self):  # keep pickling (e.g. across worker processes) working
        return (type(self), (self.path, self.problem, self.line))
