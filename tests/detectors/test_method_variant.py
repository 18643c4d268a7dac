"""MethodVariant: the variant parameter as an enum whose members are the strings they replace, so parameters,
their JSON (study files, the store's ``params`` column) and unit ids are unchanged."""

import json

import pytest

from odeval.detectors import MethodVariant, get_detector
from odeval.detectors.base import VARIANT, VARIANTS


def test_values_are_the_strings_of_the_variant_parameter():
    assert [v.value for v in MethodVariant] == ["paper", "elki-0.7.1", "elki-0.7.1-cks"]
    assert VARIANTS == ("paper", "elki-0.7.1", "elki-0.7.1-cks") and VARIANT.default == "paper"
    for v in MethodVariant:
        assert v == v.value and hash(v) == hash(v.value) and f"{v}" == str(v) == v.value
        assert json.dumps(v) == json.dumps(v.value)


@pytest.mark.parametrize("variant", ["elki-0.7.1-cks", MethodVariant.ELKI_071_CKS])
def test_a_member_or_its_string_give_the_same_detector(variant):
    det = get_detector("LOF", variant=variant)
    assert type(det.variant) is str and det.variant == "elki-0.7.1-cks"  # stored as the plain value
    assert json.dumps(det.params(), sort_keys=True) == '{"variant": "elki-0.7.1-cks"}'
    assert repr(det) == "LOF(variant='elki-0.7.1-cks')"
    assert det.depends_on_k_range


def test_default_and_unknown_variant():
    assert get_detector("kNN").variant == "paper" and type(get_detector("kNN").variant) is str
    choices = r"choose one of paper, elki-0\.7\.1, elki-0\.7\.1-cks$"
    with pytest.raises(ValueError, match=r"unknown variant 'elki'; " + choices):
        get_detector("kNN", variant="elki")
