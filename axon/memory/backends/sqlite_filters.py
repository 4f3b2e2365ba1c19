"""Recall filters as an SQLite condition: `matches_filters` filters in, a WHERE fragment over
the stored metadata JSON and its parameters out.

A filtered list (`list(where=...)`, `axon memory list --where`) at 100k entries read
every entry into Python to test it; with the filter in the query, SQLite walks the
newest-first index and decodes only the rows that pass. The condition is built to
be *necessary*: every entry `matches_filters` accepts passes it. The backend still
runs `matches_filters` on what comes back, so a condition that lets a few more rows
through (a number within a rounding of the filter's, a field this module cannot
express) costs a little time, never a different answer. `exact` says whether no
such slack was needed, for the differential test.

How each filter form of `matches_filters` maps to SQLite's JSON functions:

- a scalar or list filter on field `f`: `json_type` of `$."f"` tells strings,
  numbers, booleans, arrays and a missing field apart (`json_extract` alone turns
  `true` into 1 and an array into its text). A string matches a `text` of equal
  bytes; a number or boolean matches a number or boolean within
  `sql_common.FILTER_SLACK` of it (Python's `True == 1 == 1.0`, and SQLite's own
  decimal parser may round a float one step away from Python's); an array matches
  when one of its elements does (`json_each`).
- a comparison (`{"gte": 0.75, "default": 0.5}`): a number (not a boolean) on the
  bounds' side, widened by `FILTER_SLACK`; the absent-field case is decided here, once,
  from `default`.

Not expressed (left to Python, no condition): field names SQLite's JSON path cannot
spell (a `"`, a backslash or a control character), strings holding NUL or unpaired
surrogates, numbers beyond a float's range, and filter values that are not strings,
numbers or booleans.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from axon.memory.backends.sql_common import FILTER_SLACK, FILTER_TINY
from axon.memory.entry import COMPARISONS, is_number, matches_filters

_NUMERIC = "('integer', 'real', 'true', 'false')"
_NUMBER = "('integer', 'real')"


class _Unexpressed(Exception):
    """A filter field this module leaves to Python."""


def filter_condition(filters: Mapping[str, Any], column: str) -> tuple[str, list[Any], bool]:
    """`(sql, params, exact)`: a condition on the JSON text in `column` that every row whose
    metadata `matches_filters(metadata, filters)` passes; `exact` when no other row does
    (string filters: a number is matched within a slack, so a filter with one is not)."""
    parts: list[str] = []
    params: list[Any] = []
    exact = True
    for name, wanted in filters.items():
        try:
            sql, values = _field(name, wanted, column)
        except _Unexpressed:
            exact = False
            continue
        parts.append(sql)
        params += values
        exact = exact and not _has_numbers(wanted)
    return (" AND ".join(parts) if parts else "1"), params, exact


def _has_numbers(wanted: Any) -> bool:
    """A comparison, or numbers or booleans among the items: matched within a slack."""
    if isinstance(wanted, Mapping):
        return True
    items = wanted if isinstance(wanted, list | tuple) else [wanted]
    return any(not isinstance(item, str) for item in items)


def _path(name: str) -> str:
    """The JSON path of top-level field `name`; `_Unexpressed` when SQLite cannot spell it.

    SQLite 3.40 compares a quoted path label with the key's text as stored, escapes and
    all, and has no way to write a `"` in a label.
    """
    if any(ch in name for ch in '"\\') or any(ord(ch) < 0x20 for ch in name):
        raise _Unexpressed
    _text(name)
    return f'$."{name}"'


def _text(value: str) -> str:
    if "\x00" in value:
        raise _Unexpressed
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _Unexpressed from None
    return value


def _field(name: str, wanted: Any, column: str) -> tuple[str, list[Any]]:
    path = _path(name)
    kind = f"json_type({column}, ?)"
    value = f"json_extract({column}, ?)"
    if isinstance(wanted, Mapping):
        return _comparison(wanted, kind, value, path)
    items: Sequence[Any] = wanted if isinstance(wanted, list | tuple) else [wanted]
    if not items:
        return "0", []
    strings: list[str] = []
    numbers: list[float] = []
    for item in items:
        if isinstance(item, str):
            strings.append(_text(item))
        elif is_number(item) or isinstance(item, bool):
            numbers.append(_finite(item))
        else:
            raise _Unexpressed
    one, one_params = _items("j.type", "j.value", strings, numbers)
    scalar, scalar_params = _items(kind, value, strings, numbers, path)
    sql = (
        f"(CASE {kind} WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each({column}, ?) AS j "
        f"WHERE {one}) ELSE {scalar} END)"
    )
    return sql, [path, path, *one_params, *scalar_params]


def _items(
    kind: str, value: str, strings: list[str], numbers: list[float], path: str | None = None
) -> tuple[str, list[Any]]:
    """One value (its JSON type `kind`, its SQL value `value`) equal to one of the items."""
    at = [path] if path is not None else []
    parts: list[str] = []
    params: list[Any] = []
    if strings:
        marks = ", ".join("?" * len(strings))
        parts.append(f"({kind} = 'text' AND {value} IN ({marks}))")
        params += [*at, *at, *strings]
    if numbers:
        ranges = " OR ".join(f"{value} BETWEEN ? AND ?" for _ in numbers)
        parts.append(f"({kind} IN {_NUMERIC} AND ({ranges}))")
        params += at
        for number in numbers:
            params += [*at, *_around(number)]
    return "(" + " OR ".join(parts) + ")", params


def _comparison(
    wanted: Mapping[str, Any], kind: str, value: str, path: str
) -> tuple[str, list[Any]]:
    bounds: list[str] = []
    params: list[Any] = [path]
    for op, bound in wanted.items():
        if op == "default":
            continue
        if op not in COMPARISONS or not is_number(bound):
            return "0", []  # matches_filters: never a match
        low, high = _around(_finite(bound))
        if op in ("gte", "gt"):
            bounds.append(f"{value} >= ?")
            params += [path, low]
        else:
            bounds.append(f"{value} <= ?")
            params += [path, high]
    present = " AND ".join([f"{kind} IN {_NUMBER}", *bounds])
    absent = "default" in wanted and matches_filters({}, {"field": dict(wanted)})
    return f"(CASE WHEN {kind} IS NULL THEN {int(absent)} ELSE ({present}) END)", [path, *params]


def _finite(number: float) -> float:
    """`number` as a float; `_Unexpressed` for an int too large for one."""
    try:
        converted = float(number)
    except OverflowError:
        raise _Unexpressed from None
    if not math.isfinite(converted):
        raise _Unexpressed
    return converted


def _around(number: float) -> tuple[float, float]:
    slack = abs(number) * FILTER_SLACK + FILTER_TINY
    return number - slack, number + slack
