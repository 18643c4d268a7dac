"""The scoring key: one name and one parse for every candidate (odeval._key)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odeval._key import ScoringKey, distinct_names


def test_knn_names_are_the_historic_ones():
    key = ScoringKey.make("LOF", {"variant": "published"}, metric="euclidean", k=10)
    assert key.name == "LOF(variant=published)[euclidean]-010"
    assert key.label(params=False, metric=False) == "LOF-010"
    assert key.k == 10 and key.params_json == '{"variant": "published"}'


def test_parse_round_trip_and_short_forms():
    key = ScoringKey.make("LoOP", {"lam": 3.0, "variant": "elki-0.7.1"}, metric="manhattan", k=7)
    assert ScoringKey.parse(key.name) == key
    assert ScoringKey.parse("LOF-020") == ScoringKey.make("LOF", k=20)
    assert ScoringKey.parse("LOF-k020") == ScoringKey.make("LOF", k=20)  # the older form
    other = ScoringKey.make("IForest", {"contamination": 0.1}, setting={"n_estimators": 100, "max_samples": 256},
                            seed=3)
    assert other.name == "IForest(contamination=0.1)-max_samples=256,n_estimators=100@3"
    assert ScoringKey.parse(other.name) == other and other.k is None
    assert ScoringKey.parse("OCSVM") == ScoringKey.make("OCSVM")


def test_strings_that_look_like_numbers_stay_strings():
    key = ScoringKey.make("X", {"mode": "10", "flag": True, "none": None})
    assert ScoringKey.parse(key.name) == key


def test_distinct_names_write_only_what_tells_members_apart():
    a = ScoringKey.make("LOF", {"variant": "published"}, metric="euclidean", k=1)
    b = ScoringKey.make("LOF", {"variant": "elki-0.7.1"}, metric="euclidean", k=1)
    c = ScoringKey.make("kNN", {"variant": "published"}, metric="euclidean", k=5)
    assert distinct_names([a, b, c]) == ["LOF(variant=published)-001", "LOF(variant=elki-0.7.1)-001", "kNN-005"]


@pytest.mark.parametrize("bad", ["", "LOF-", "LOF(a)-010", "-010", "LOF-a=1,b"])
def test_malformed_names_fail_with_the_text(bad):
    with pytest.raises(ValueError, match="scoring key"):
        ScoringKey.parse(bad)


def test_bad_method_names_are_refused():
    with pytest.raises(ValueError, match="method name"):
        ScoringKey.make("my-det", k=1)


@given(st.sampled_from(["LOF", "kNN", "pkg.mod:Det"]),
       st.dictionaries(st.sampled_from(["a", "b", "variant"]),
                       st.one_of(st.integers(-5, 500), st.floats(0.01, 10), st.sampled_from(["x", "elki-0.7.1"]))),
       st.one_of(st.none(), st.integers(1, 999)), st.one_of(st.none(), st.integers(0, 9)))
def test_parse_inverts_name(method, params, k, seed):
    key = ScoringKey.make(method, params, metric="euclidean", k=k, seed=seed)
    assert ScoringKey.parse(key.name) == key
