"""odeval.measures.internal: label-free (internal) evaluation of outlier solutions.

* :func:`ireos`, :func:`ireos_select`: IREOS (Marques, Campello, Sander, Zimek, ACM TKDD 2020), docs/ireos.md.
* :func:`laplacian_score`: the Laplacian Score baseline of the IREOS paper (He, Cai, Niyogi 2005).
"""

from odeval.measures.internal.ireos import (
    IREOSResult,
    SelectResult,
    ireos,
    ireos_select,
    resolve_mcl,
    solution_weights,
)
from odeval.measures.internal.laplacian import laplacian_score

__all__ = ["IREOSResult", "SelectResult", "ireos", "ireos_select", "laplacian_score", "resolve_mcl",
           "solution_weights"]
