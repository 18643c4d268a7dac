"""ELKI 0.7.1's erfc (``odeval.detectors._erf``): values of the jar's ``NormalDistribution.erfc`` itself.

Each argument below is one where Cody's CALERF (split of exp(−y²) at y rounded to 1/16, cut-off at 26.543)
gives a different last bit from ELKI's variant; the expected values were printed by the installed ELKI 0.7.1
jar (OpenJDK 17). On 10⁶ random arguments the module agrees with the jar except where the JVM's
``Math.exp`` itself differs from glibc's exp (0.07 %; tests/fixtures/elki_cks/STATUS.md).
"""

import math

import pytest

from odeval.detectors._erf import cody_erfc, elki_normal_cdf

JAR_ERFC = [
    (0.46933958289447797, 0.5068526342684093),
    (0.8972988942744877, 0.204450955919822),
    (2.4080894539061948, 0.0006603025214256899),
    (5.638647323907232, 1.5330704809512215e-15),
    (27.013506489014297, 2.5237e-319),  # no cut-off to 0 above 26.543
    (-0.5362002430757231, 1.5517295837954281),
]


@pytest.mark.parametrize(("x", "expected"), JAR_ERFC)
def test_erfc_is_the_jar_s_to_the_last_bit(x, expected):
    assert cody_erfc(x) == expected


def test_standard_normal_cdf_at_kdeos_k2_values():
    # KDEOS at k = 2: z = ±1/√2 up to the last bit; the jar gives one value for each sign
    for z in (0.7071067811865474, 0.7071067811865475, 0.7071067811865476, 0.7071067811865477):
        assert elki_normal_cdf(z) == 0.7602499389065233
    for z in (0.7071067811865475, 0.7071067811865476):
        assert elki_normal_cdf(-z) == 0.23975006109347674
    assert math.isnan(cody_erfc(math.nan)) and cody_erfc(math.inf) == 0.0 and cody_erfc(-math.inf) == 2.0
