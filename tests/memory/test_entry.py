"""Value validation: what cannot be stored is refused with the memory and key named."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axon.errors import AxonMemoryError
from axon.memory.entry import (
    COMPARISONS,
    MAX_VALUE_BYTES,
    filter_predicate,
    is_number,
    matches_filters,
    validate_entry,
)


@pytest.mark.parametrize(
    ("key", "value", "metadata", "fragment"),
    [
        ("", "v", None, "Memory key must not be empty"),
        ("k", object(), None, "of type object, which is not JSON-representable"),
        ("k", {1, 2}, None, "of type set"),
        ("k", math.nan, None, "not a finite number"),
        ("k", {"a": [1, {"b": b"x"}]}, None, "value['a'][1]['b'] is of type bytes"),
        ("k", {1: "x"}, None, "keys must be strings"),
        ("k", "x" * (MAX_VALUE_BYTES + 1), None, "too large to store"),
        ("k", "ok \ud800", None, "unpaired surrogate (U+D800)"),
        ("\udfff", "v", None, "Cannot store key"),
        ("k", "v", {"tags": [object()]}, "Cannot store metadata"),
        ("k", "v", {"note": "\ud801"}, "Cannot store metadata"),
        # the first bad character in the JSON's order (nested list before a later key)
        (
            "k",
            "v",
            {"a": ["ok", "x\udc80"], "\ud800": 1},
            "metadata: its text contains an unpaired surrogate (U+DC80)",
        ),
        ("k", "v", {"a": 1, "ü\ud800": 1}, "unpaired surrogate (U+D800)"),  # in a key
        ("k", "é" * (MAX_VALUE_BYTES // 2), None, "1,000,002 bytes as JSON"),  # 2 bytes each
        ("a\x00b", "v", None, "NUL"),
    ],
)
def test_unstorable_input_is_refused(
    key: str, value: object, metadata: dict[str, object] | None, fragment: str
) -> None:
    with pytest.raises(AxonMemoryError) as info:
        validate_entry(key, value, metadata, memory="Notes")
    assert fragment in str(info.value)
    assert "memory 'Notes'" in str(info.value)


def test_storable_values_pass() -> None:
    for value in ["text", 3, 2.5, True, None, [1, "a"], {"nested": {"list": [1.0]}}]:
        validate_entry("k", value, {"scope": "S", "tags": ["a"]}, memory="S")
    validate_entry("k", "x" * (MAX_VALUE_BYTES - 2), {"tags": ["ü", ("日本",)]}, memory="S")


def test_filters_match_lists_by_overlap_and_scalars_by_equality() -> None:
    meta = {"tags": ["finance", "q3"], "source": "main", "importance": 0.8}
    assert matches_filters(meta, {"tags": ["q3", "x"]})
    assert not matches_filters(meta, {"tags": ["ops"]})
    assert matches_filters(meta, {"source": "main", "importance": 0.8})
    assert not matches_filters(meta, {"missing": 1})
    assert matches_filters(meta, None)


def test_comparison_filters() -> None:
    assert matches_filters({"importance": 0.8}, {"importance": {"gte": 0.75}})
    assert not matches_filters({"importance": 0.7}, {"importance": {"gte": 0.75}})
    assert matches_filters({"importance": 1}, {"importance": {"gt": 0.5, "lte": 1}})
    assert not matches_filters({}, {"importance": {"gte": 0.5}})  # absent, no default
    assert matches_filters({}, {"importance": {"gte": 0.5, "default": 0.5}})
    assert not matches_filters({}, {"importance": {"gte": 0.75, "default": 0.5}})
    assert not matches_filters({"importance": "high"}, {"importance": {"gte": 0.0}})
    assert not matches_filters({"importance": True}, {"importance": {"gte": 0.0}})
    assert not matches_filters({"importance": 0.9}, {"importance": {"about": 0.9}})
    assert not matches_filters({"importance": 0.9}, {"importance": {"gte": "0.5"}})
    assert matches_filters(
        {"type": "reflex", "importance": 0.9}, {"type": "reflex", "importance": {"gte": 0.5}}
    )
    assert not matches_filters(
        {"type": "dreams", "importance": 0.9}, {"type": "reflex", "importance": {"gte": 0.5}}
    )


def _reference_match(metadata: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """The filter rules of `matches_filters`'s docstring, read filter by filter."""
    for name, wanted in filters.items():
        if isinstance(wanted, Mapping):
            if name in metadata:
                have = metadata[name]
            elif "default" in wanted:
                have = wanted["default"]
            else:
                return False
            if not is_number(have):
                return False
            for op, bound in wanted.items():
                if op == "default":
                    continue
                if op not in COMPARISONS or not is_number(bound):
                    return False
                if not COMPARISONS[op](float(have), float(bound)):
                    return False
            continue
        if name not in metadata:
            return False
        have_items = metadata[name] if isinstance(metadata[name], list) else [metadata[name]]
        if isinstance(wanted, list | tuple):
            if not any(item in have_items for item in wanted):
                return False
        elif wanted not in have_items:
            return False
    return True


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 0.5, 1.0, 2.5]),
    st.sampled_from(["a", "b", ""]),
)
_values = st.one_of(_scalars, st.lists(_scalars, max_size=3))
_names = st.sampled_from(["tags", "group", "importance"])
_comparisons = st.dictionaries(
    st.sampled_from(["gte", "gt", "lte", "lt", "default", "about"]), _scalars, min_size=1
)
_wanted = st.one_of(_scalars, st.lists(_scalars, max_size=3), _comparisons)


@given(
    st.dictionaries(_names, _values, max_size=3),
    st.dictionaries(_names, _wanted, min_size=1, max_size=3),
)
def test_a_compiled_filter_answers_as_the_rules_say(
    metadata: dict[str, Any], filters: dict[str, Any]
) -> None:
    expected = _reference_match(metadata, filters)
    assert filter_predicate(filters)(metadata) is expected
    assert matches_filters(metadata, filters) is expected
