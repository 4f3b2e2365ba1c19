"""The backend contract, operator filters: `where` maps of `gte`, `gt`, `lte`, `lt`, `ne`,
`in` and `exists` keep the same entries on every backend, in lists and in every
retrieval mode (part of `conformance`).

A Hypothesis test draws entries and filters and compares the backend's answer with
`reference_match`, a predicate written here from the rules of docs/language.md
§6.3 Operator filters, not from the code the backends share.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axon.memory.backend import MemoryBackend
from axon.memory.entry import NewEntry
from axon.testing.contract_helpers import keys

_ORDERS = {
    "gte": lambda have, bound: have >= bound,
    "gt": lambda have, bound: have > bound,
    "lte": lambda have, bound: have <= bound,
    "lt": lambda have, bound: have < bound,
}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(have: Any, wanted: Any) -> bool:
    """Equality as the scalar form has it: Python's `==` (`True == 1`), an array by
    one of its elements."""
    items = have if isinstance(have, list) else [have]
    return any(item == wanted for item in items)


def reference_match(metadata: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """Whether an entry with `metadata` passes `filters`, by the documented rules: every
    field must hold; a scalar by equality, a list by sharing an element, an operator map
    when each operator holds (every one but `exists: false` needs the field; `gte`, `gt`,
    `lte`, `lt` compare two numbers or two strings, by code point, nothing else)."""
    for name, wanted in filters.items():
        present = name in metadata
        have = metadata.get(name)
        if isinstance(wanted, Mapping):
            for op, operand in wanted.items():
                if op == "exists":
                    holds = present == operand
                elif not present:
                    holds = False
                elif op == "in":
                    holds = any(_same(have, item) for item in operand)
                elif op == "ne":
                    holds = not _same(have, operand)
                elif isinstance(operand, str):
                    holds = isinstance(have, str) and _ORDERS[op](have, operand)
                else:
                    holds = _number(have) and _ORDERS[op](have, operand)
                if not holds:
                    return False
        elif isinstance(wanted, list):
            if not present or not any(_same(have, item) for item in wanted):
                return False
        elif not present or not _same(have, wanted):
            return False
    return True


# ---------------------------------------------------------------------- fixed cases

_ENTRIES: dict[str, dict[str, Any]] = {
    "march": {"day": "2024-03-05", "n": 1, "tags": ["a", "b"]},
    "june": {"day": "2024-06-01T08:00", "n": 3, "tags": ["b"]},
    "july": {"day": "2024-07-20", "n": 5.5, "kind": None},
    "text": {"day": 20240101, "n": "7", "kind": "x"},
    "flag": {"n": True, "kind": 0},
    "bare": {},
}

_CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"n": {"gte": 3}}, ["july", "june"]),
    ({"n": {"gt": 3}}, ["july"]),
    ({"n": {"lte": 3}}, ["june", "march"]),
    ({"n": {"lt": 3, "gte": 1}}, ["march"]),
    ({"n": {"gte": "5"}}, ["text"]),  # a string bound: only strings
    ({"day": {"lt": "2024-06"}}, ["march"]),
    ({"day": {"gte": "2024-06", "lt": "2024-07"}}, ["june"]),
    ({"day": {"gte": "2024"}}, ["july", "june", "march"]),  # never the number
    ({"day": {"gt": 2024}}, ["text"]),
    ({"n": {"in": [1, "7"]}}, ["flag", "march", "text"]),  # True == 1
    ({"tags": {"in": ["a"]}}, ["march"]),
    ({"tags": {"ne": "a"}}, ["june"]),
    ({"n": {"ne": 3}}, ["flag", "july", "march", "text"]),
    ({"kind": {"ne": "x"}}, ["flag", "july"]),  # null is not "x"
    ({"kind": {"exists": True}}, ["flag", "july", "text"]),
    ({"kind": {"exists": False}}, ["bare", "june", "march"]),
    ({"kind": {"exists": False}, "n": {"gte": 1}}, ["june", "march"]),
    ({"n": {"exists": True, "ne": 1}}, ["july", "june", "text"]),
    ({"n": {"in": []}}, []),
]


async def test_operator_filters_keep_the_same_entries_in_lists_and_every_mode(
    backend: MemoryBackend,
) -> None:
    """Each case keeps the documented entries, in `list_matching` and in every retrieval
    mode: numbers against numbers, ISO dates as strings by code point, `in`, `ne`,
    `exists`, a number never against a string (nor a boolean)."""
    await backend.store_many(
        [NewEntry(key, f"note {key}", {**meta, "scope": "S"}) for key, meta in _ENTRIES.items()]
    )
    for filters, wanted in _CASES:
        assert wanted == sorted(
            key for key, meta in _ENTRIES.items() if reference_match(meta, filters)
        ), filters
        listed = await backend.list_matching("S", filters)
        assert sorted(keys(listed)) == wanted, filters
        for mode in sorted(backend.capabilities.retrieval):
            found = await backend.retrieve("note", 50, "S", mode=mode, filters=filters)
            assert sorted(keys(found)) == wanted, (mode, filters)


# ---------------------------------------------------------------------- random cases

_NAMES = ("n", "d", "t")
_STRINGS = ["", "a", "b", "ab", "2024-03", "2024-03-05", "2024-06", "é", "z中", "\U0001f600"]
_NUMBERS: list[Any] = [0, 1, -1, 2, 0.5, 1.0, 3.25, -2.5, 10**6, 1e20]
_SCALARS = st.sampled_from(_STRINGS) | st.sampled_from(_NUMBERS) | st.booleans()
_VALUES = st.none() | _SCALARS | st.lists(_SCALARS, max_size=3)
_BOUNDS = st.sampled_from(_STRINGS) | st.sampled_from(_NUMBERS)


@st.composite
def _operator_map(draw: st.DrawFn) -> dict[str, Any]:
    """A valid operator map: comparisons all numbers or all strings, then maybe `ne`,
    `in`, `exists`."""
    ops: dict[str, Any] = {}
    strings = draw(st.booleans())
    bound = st.sampled_from(_STRINGS) if strings else st.sampled_from(_NUMBERS)
    for op in draw(st.lists(st.sampled_from(sorted(_ORDERS)), max_size=2, unique=True)):
        ops[op] = draw(bound)
    if draw(st.booleans()):
        ops["ne"] = draw(_SCALARS)
    if draw(st.booleans()):
        ops["in"] = draw(st.lists(_SCALARS, max_size=3))
    if draw(st.booleans()) or not ops:
        ops["exists"] = draw(st.booleans())
    return ops


_FILTERS = st.dictionaries(
    st.sampled_from(_NAMES),
    _operator_map() | _SCALARS | st.lists(_SCALARS, min_size=1, max_size=3),
    min_size=1,
    max_size=2,
)
_METADATA = st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=3)
_scopes = itertools.count()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(metadata=st.lists(_METADATA, min_size=1, max_size=8), filters=_FILTERS)
async def test_random_operator_filters_match_the_reference_predicate(
    backend: MemoryBackend, metadata: list[dict[str, Any]], filters: dict[str, Any]
) -> None:
    """Random entries and valid filters: the backend's list keeps exactly the entries
    `reference_match` keeps (each example in a scope of its own)."""
    scope = f"R{next(_scopes)}"
    await backend.store_many(
        [NewEntry(f"k{i}", f"note {i}", {**m, "scope": scope}) for i, m in enumerate(metadata)]
    )
    wanted = sorted(f"k{i}" for i, m in enumerate(metadata) if reference_match(m, filters))
    assert sorted(keys(await backend.list_matching(scope, filters))) == wanted


__all__ = sorted(name for name in dict(globals()) if name.startswith("test_"))
