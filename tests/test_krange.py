"""The one k-range syntax (odeval._krange): every form, the cap before expansion, rejections."""

import pytest

from odeval._krange import MAX_EXPANDED, format_ks, parse_k_range


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("1..5", (1, 2, 3, 4, 5)), ("2..10:4", (2, 6, 10)), ("1:3", (1, 2, 3)), ("2:10:4", (2, 6, 10)),
     ([5, 1, 5], (1, 5)), ((3, 2), (2, 3)), (7, (7,)), ("10", (10,)), ("1,5,10", (1, 5, 10)),
     ("1..3, 8, 10:12", (1, 2, 3, 8, 10, 11, 12)), (" 1 .. 3 ", (1, 2, 3))],
)
def test_every_form_parses_to_the_same_values(spec, expected):
    assert parse_k_range(spec).values() == expected


@pytest.mark.parametrize("spec", ["5..1", "0..3", "a..b", [1.5], True, "1..3:0", "", "1,,2", [], "1..2..3", 0,
                                  "-1..3", None])
def test_bad_specs_are_rejected_with_the_syntax(spec):
    with pytest.raises(ValueError, match="k"):
        parse_k_range(spec)


def test_huge_ranges_are_capped_before_expanding():
    rng = parse_k_range("1..1000000000")
    assert rng.max == 1_000_000_000 and rng.count() == 1_000_000_000
    assert rng.values(upper=4) == (1, 2, 3, 4)
    assert str(rng.above(150)) == "150..1000000000"
    assert parse_k_range("1:1000000000:7").values(upper=20) == (1, 8, 15)
    with pytest.raises(ValueError, match="values"):
        rng.values()  # no upper bound: refused instead of allocating
    assert parse_k_range(f"1..{MAX_EXPANDED}").count() == MAX_EXPANDED


def test_above_respects_the_step_and_format_compacts_runs():
    assert parse_k_range("2..20:4").above(7).values() == (10, 14, 18)
    assert parse_k_range("2..20:4").max == 18
    assert format_ks([1, 2, 3, 7, 9, 10]) == "1..3,7,9..10"
    assert str(parse_k_range("1..100:5")) == "1..100:5"
