"""Private APIs of dependencies that odeval relies on: a test that fails with one line naming the version."""

from __future__ import annotations

import numba
from numba.np import linalg as numba_linalg


def test_numba_still_has_the_private_lapack_binding_ireos_calls():
    # IREOS's kernel logistic regression (the _klr module of odeval's label-free measures) calls dpotrf through
    # numba.np.linalg._LAPACK().numba_xxpotrf; pyproject.toml bounds numba to the versions checked to have it.
    lapack = getattr(numba_linalg, "_LAPACK", None)
    assert lapack is not None and hasattr(lapack, "numba_xxpotrf") and hasattr(numba_linalg, "get_blas_kind"), (
        f"numba {numba.__version__}: numba.np.linalg._LAPACK().numba_xxpotrf or get_blas_kind is gone; odeval's "
        "IREOS (_klr.py) needs it: lower numba's bound in pyproject.toml or give _klr a fallback")
    assert callable(lapack().numba_xxpotrf(numba.types.float64))
