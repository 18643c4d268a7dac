"""Small numba helpers shared by the kernel-density detectors (KDEOS, LDF)."""

from __future__ import annotations

import math

from numba import njit

#: 1/√(2π), the normalisation of the 1-d standard normal density φ (ELKI applies the 1-d φ in any dimension).
GAUSS_NORM = 1.0 / math.sqrt(2.0 * math.pi)


@njit(cache=True, inline="always")
def powi(x, p):  # pragma: no cover - numba
    """x**p for an integer p ≥ 0 by repeated squaring — ELKI's ``MathUtil.powi``, whose rounding (and thus
    whose ties) the ELKI-conformant variants reproduce."""
    r = 1.0
    b = x
    while p > 0:
        if p & 1:
            r *= b
        b *= b
        p >>= 1
    return r
