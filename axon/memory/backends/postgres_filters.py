"""Recall filters as a PostgreSQL condition: `matches_filters` filters in, a WHERE fragment
over the stored `json` metadata and its parameters out.

The twin of `sqlite_filters` (see there for why the condition is *necessary*: the
backend checks every row it returns with `matches_filters`, so slack costs time,
never a different answer). In PostgreSQL terms:

- a scalar or list filter on field `f` is jsonb containment: the row's metadata
  contains `{"f": w}` or `{"f": [w]}` for one of the items `w` (an array holding `w`
  contains `[w]`). jsonb keeps booleans apart from numbers where Python's
  `True == 1` does not, so `True` also looks for `1` and `1` for `true` (and
  `False`/`0`). Numbers compare as decimals, which agrees with Python's comparison
  of the stored values except for integers and integral floats of 2**53 and beyond
  (a float's shortest decimal is not its exact value): those are left to Python.
- a comparison (`{"gte": 0.75, "default": 0.5}`): a `number` compared as `numeric`
  (never out of range) with bounds widened by `FILTER_SLACK`; the absent-field case is
  decided here, once, from `default`.

The metadata column is `json` because strings may hold `\\u0000`, which jsonb
refuses: a row whose metadata text holds that escape passes the condition
unexamined (`CASE` evaluates the guard first) and is left to `matches_filters`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from axon.memory.backends.sql_common import FILTER_SLACK, FILTER_TINY
from axon.memory.entry import COMPARISONS, encode_json, is_number, matches_filters

if TYPE_CHECKING:
    from psycopg.sql import Composable

EXACT_LIMIT = 2**53
"""Numbers at least this large (integers and integral floats) are left to Python."""


class _Unexpressed(Exception):
    """A filter field this module leaves to Python."""


def filter_condition(filters: Mapping[str, Any], column: str) -> tuple[Composable, list[Any], bool]:
    """`(sql, params, exact)`: a condition on the `json` column `column` (as SQL text, e.g.
    `e.metadata`) that every row whose metadata `matches_filters(metadata, filters)`
    passes; `exact` when no other row does (not with a comparison: its bounds have a
    slack)."""
    from psycopg import sql

    parts: list[Composable] = []
    params: list[Any] = []
    exact = True
    for name, wanted in filters.items():
        try:
            part, values = _field(name, wanted, column)
        except _Unexpressed:
            exact = False
            continue
        parts.append(part)
        params += values
        exact = exact and not isinstance(wanted, Mapping)  # comparisons have a slack
    if not parts:
        return sql.SQL("true"), [], exact
    guarded = sql.SQL(
        "(CASE WHEN strpos({column}::text, %s) > 0 THEN true ELSE ({parts}) END)"
    ).format(column=sql.SQL(column), parts=sql.SQL(" AND ").join(parts))
    return guarded, ["\\u0000", *params], exact


def _field(name: str, wanted: Any, column: str) -> tuple[Composable, list[Any]]:
    from psycopg import sql

    if "\x00" in name:
        raise _Unexpressed
    if isinstance(wanted, Mapping):
        return _comparison(name, wanted, column)
    items: Sequence[Any] = wanted if isinstance(wanted, list | tuple) else [wanted]
    if not items:
        return sql.SQL("false"), []
    documents: list[str] = []
    for item in items:
        for same in _equals(item):
            documents += [encode_json({name: same}), encode_json({name: [same]})]
    condition = sql.SQL("{column}::jsonb @> ANY (%s::jsonb[])").format(column=sql.SQL(column))
    return condition, [documents]


def _equals(item: Any) -> list[Any]:
    """`item` and the JSON values jsonb tells apart from it that Python's `==` does not."""
    if isinstance(item, str):
        if "\x00" in item:
            raise _Unexpressed
        return [item]
    if not (is_number(item) or isinstance(item, bool)):
        raise _Unexpressed
    if not abs(item) < EXACT_LIMIT:  # NaN too: JSON cannot hold it, and it equals nothing
        raise _Unexpressed
    if item == 1:
        return [1, True]
    if item == 0:
        return [0, False]
    return [item]


def _comparison(name: str, wanted: Mapping[str, Any], column: str) -> tuple[Composable, list[Any]]:
    from psycopg import sql

    bounds: list[Composable] = []
    params: list[Any] = []
    value = sql.SQL("({column} ->> %s)::numeric").format(column=sql.SQL(column))
    for op, bound in wanted.items():
        if op == "default":
            continue
        if op not in COMPARISONS or not is_number(bound):
            return sql.SQL("false"), []  # matches_filters: never a match
        try:
            number = float(bound)
        except OverflowError:
            raise _Unexpressed from None
        slack = abs(number) * FILTER_SLACK + FILTER_TINY
        if op in ("gte", "gt"):
            bounds.append(sql.SQL("{} >= %s::float8::numeric").format(value))
            params += [name, number - slack]
        else:
            bounds.append(sql.SQL("{} <= %s::float8::numeric").format(value))
            params += [name, number + slack]
    absent = "default" in wanted and matches_filters({}, {"field": dict(wanted)})
    # CASE, not AND: PostgreSQL may evaluate AND's operands in any order, and the cast
    # must only ever see a number.
    condition = sql.SQL(
        "(CASE WHEN {column} -> %s IS NULL THEN {absent} "
        "WHEN json_typeof({column} -> %s) = 'number' THEN ({present}) ELSE false END)"
    )
    present = sql.SQL(" AND ").join(bounds) if bounds else sql.SQL("true")
    return (
        condition.format(
            column=sql.SQL(column), absent=sql.SQL("true" if absent else "false"), present=present
        ),
        [name, name, *params],
    )
