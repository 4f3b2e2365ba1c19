"""`with { ... }` on remember and recall -> checked options (docs/language.md §5, §6).

The options are a closed set: a misspelt name is an error with a suggestion,
never a silent metadata filter. Free metadata is written `metadata: { ... }` on
remember, a metadata filter `where: { field: value }` on recall. Each option is
checked for the statement it is written on and for the type of its value.

Memory records (seed 002; docs/language.md §8 Memory records): `type`,
`expires_in` and `related` on remember, `type` and `min_importance` on recall;
`importance` and `min_importance` take a number or a level (`IMPORTANCE_LEVELS`).
`min_importance` becomes a comparison filter on `importance` (`matches_filters`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import attrs

from axon.compiler import ast
from axon.compiler.check_memory import Reporter, min_score, positive_int
from axon.compiler.durations import DurationError, parse_decay
from axon.compiler.ir import JSON
from axon.compiler.lowering import plain, value_span
from axon.compiler.names import did_you_mean
from axon.memory.backend import MAX_TOP_K, RETRIEVAL_MODES
from axon.memory.entry import (
    COMPARISONS,
    DEFAULT_IMPORTANCE,
    IMPORTANCE_LEVELS,
    OPERATORS,
    RECORD_TYPES,
    Ago,
    comparison_filter,
    is_number,
    json_kind,
    number_text,
    time_bound,
)

REMEMBER_OPTIONS = (
    "expires_in", "importance", "key", "metadata", "related", "tags", "tier", "type",
)
"""What `with { ... }` accepts on remember (`tier`: tiered memories only, see the checker)."""
RECALL_OPTIONS = (
    "min_importance", "min_score", "retrieval", "since", "tags", "tiers", "top_k", "type",
    "until", "where",
)
"""What `with { ... }` accepts on recall (`tiers`: tiered memories only, see the checker)."""
OPTION_MEANINGS: dict[str, str] = {
    "expires_in": "How long this entry is recalled (a duration: 1h, 7d), past the memory's decay",
    "importance": "How much the entry matters: 0 to 1, or low | normal | high | critical",
    "key": "The key the entry is stored under (default: derived from the value)",
    "metadata": "Free fields stored with the entry: { project: \"apollo\" }",
    "related": "Keys of entries this one relates to",
    "tags": "Tags: a list of strings; on recall and forget, entries carrying all of them",
    "tier": "The tier a tiered memory stores the entry in",
    "type": "The record type: long_term | short_term | reflex | dreams",
    "min_importance": "Only entries of at least this importance",
    "min_score": "The relevance floor of this recall, 0 to 1",
    "since": "Only entries last written at or after this: \"2024-03-01\", or a duration "
    "before now: \"7d\"",
    "until": "Only entries last written before this: \"2024-04-01\", or \"1d\" (before now)",
    "retrieval": "How this recall ranks entries: exact | keyword | semantic | hybrid",
    "tiers": "The tiers of a tiered memory this recall reads",
    "top_k": "How many entries this recall returns",
    "where": "Metadata fields the entries must match: { project: \"apollo\", n: { gte: 3 } }",
}
"""One line on what each `with { ... }` option means (editor hover: `axon lsp`)."""
TIER_NAMES = ("ephemeral", "session", "persistent")
"""The tiers `tier` and `tiers` may name (fastest first, as `check_tiers.TIER_ORDER`)."""
RECORD_FIELDS = ("importance", "related", "tags", "type")
"""Metadata names that are options of their own (records, seed 002): not free metadata."""
FILTER_OPTIONS = ("importance", "tags", "type")
"""Metadata fields that recall options filter on (`min_importance` filters `importance`)."""
RUNTIME_METADATA = ("scope", "source")
"""Metadata the runtime writes itself; a program cannot set it."""


@attrs.frozen
class RememberOptions:
    """The checked `with` of a remember: `None` where the option was not given (or wrong)."""

    key: str | None = None
    tags: tuple[str, ...] | None = None
    importance: float | None = None
    metadata: dict[str, JSON] = attrs.field(factory=dict)
    type: str | None = None
    expires_in: str | None = None
    """The entry's own expiry as written (`3d`, `never`), checked by `expires_in_problem`."""
    related: tuple[str, ...] | None = None
    tier: str | None = None
    tier_field: ast.Field | None = attrs.field(default=None, eq=False)


@attrs.frozen
class RecallOptions:
    """The checked `with` of a recall; `filters` merges `tags` and `where` for the backend."""

    top_k: int | None = None
    retrieval: str | None = None
    filters: dict[str, JSON] = attrs.field(factory=dict)
    retrieval_field: ast.Field | None = attrs.field(default=None, eq=False)
    tiers: tuple[str, ...] | None = None
    tiers_field: ast.Field | None = attrs.field(default=None, eq=False)
    min_score: float | None = None


def _fields(op: str, options: ast.MapValue | None, report: Reporter) -> dict[str, ast.Field]:
    """The fields of a `with`, each name once, every name valid for `op`."""
    valid: tuple[str, ...]
    other: tuple[str, ...]
    if op == "remember":
        valid, other = REMEMBER_OPTIONS, RECALL_OPTIONS
    else:
        valid, other = RECALL_OPTIONS, REMEMBER_OPTIONS
    fields: dict[str, ast.Field] = {}
    for f in options.fields if options else ():
        if f.name in fields:
            report.error(f"Duplicate option '{f.name}' in {op}", f.span)
        elif f.name in valid:
            fields[f.name] = f
        elif f.name in other:
            report.error(
                f"'{f.name}' is a {'recall' if op == 'remember' else 'remember'} option, "
                f"not valid in {op}. Valid: {', '.join(valid)}",
                f.span,
            )
        elif op == "remember" and f.name in RUNTIME_METADATA:
            report.error(f"'{f.name}' is set by the runtime and cannot be given in 'with'", f.span)
        else:
            hint = (
                f"; free metadata goes in metadata: {{ {f.name}: ... }}"
                if op == "remember"
                else f"; filter by metadata with where: {{ {f.name}: ... }}"
            )
            report.error(
                f"Unknown option '{f.name}' in {op}{did_you_mean(f.name, valid)}. "
                f"Valid: {', '.join(valid)}{hint}",
                f.span,
            )
    return fields


# ---------------------------------------------------------------- the rules, on plain values
# Each returns the problem with a value (the message the checker reports), or None. The
# checker applies them to what a program wrote; the Python handle (`axon.runtime.handle`)
# to the Python values it is given, so both refuse the same things with the same words.


def key_problem(value: Any, where: str = " in 'with'") -> str | None:
    """An explicit key must be a non-empty string."""
    if isinstance(value, str) and value.strip():
        return None
    return f"key{where} must be a non-empty string"


def memory_name_problem(name: str) -> str | None:
    """A memory's name must be one a program can declare (the grammar's `NAME`)."""
    from axon.compiler.parser import is_name  # loads the grammar: only when asked

    if is_name(name):
        return None
    return (
        "not a memory name a program can declare "
        "(letters, digits and _, not starting with a digit)"
    )


def tags_problem(value: Any) -> str | None:
    """Tags are a list of strings."""
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return None
    return f'tags must be a list of strings, such as ["finance"], got {_shown(value)}'


def importance_problem(value: Any, name: str = "importance") -> str | None:
    """Importance is a number from 0 to 1 (not a boolean) or a level: low, normal, high,
    critical (`IMPORTANCE_LEVELS`: 0.25, 0.5, 0.75, 1.0)."""
    if is_number(value) and 0.0 <= value <= 1.0:
        return None
    if isinstance(value, str) and value in IMPORTANCE_LEVELS:
        return None
    levels = ", ".join(IMPORTANCE_LEVELS)
    if isinstance(value, str):
        return (
            f"Unknown importance level {_shown(value)}"
            f"{did_you_mean(value, IMPORTANCE_LEVELS)}. "
            f"{name} is a number from 0 to 1 or one of {levels}"
        )
    return f"{name} must be a number from 0 to 1 or one of {levels}, got {_shown(value)}"


def importance_value(value: float | str) -> float:
    """The number of an importance accepted by `importance_problem` (a level's number)."""
    return IMPORTANCE_LEVELS[value] if isinstance(value, str) else value


def type_problem(value: Any) -> str | None:
    """A record type is one of seed 002's: long_term, short_term, reflex, dreams."""
    if isinstance(value, str) and value in RECORD_TYPES:
        return None
    valid = ", ".join(RECORD_TYPES)
    if isinstance(value, str):
        suggestion = did_you_mean(value, RECORD_TYPES)
        return f"Unknown memory type {_shown(value)}{suggestion}. Valid: {valid}"
    return f"type must be one of {valid}, got {_shown(value)}"


def expires_in_problem(value: Any) -> str | None:
    """An entry's expiry: a duration (`3d`, `1h30m`) or never/none."""
    if isinstance(value, str):
        try:
            parse_decay(value)
        except DurationError as exc:
            return f"Invalid expires_in {_shown(value)}: {exc}"
        return None
    hint = " (add a unit: ms, s, m, h, d, w)" if is_number(value) else ""
    return (
        f"expires_in must be a duration such as 30m, 7d or 1h30m, or never, "
        f"got {_shown(value)}{hint}"
    )


def related_problem(value: Any) -> str | None:
    """Associations are a list of the keys of other entries (non-empty strings)."""
    if isinstance(value, list) and all(isinstance(k, str) and k.strip() for k in value):
        return None
    return f'related must be a list of entry keys, such as ["q3_summary"], got {_shown(value)}'


def metadata_name_problem(name: str) -> str | None:
    """Free metadata may not use the runtime's names nor those of the options."""
    if name in RUNTIME_METADATA:
        return f"'{name}' is set by the runtime and cannot be given in metadata"
    if name in RECORD_FIELDS:
        return (
            f"'{name}' is an option of its own: write with {{ {name}: ... }}, "
            "not inside metadata"
        )
    return None


def top_k_problem(value: Any, where: str = "in recall") -> str | None:
    """top_k is an integer from 1 to `MAX_TOP_K` (the checker's rule, `positive_int`)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        if value <= MAX_TOP_K:
            return None
        return f"top_k {where} must be at most {MAX_TOP_K:,}, got {_shown(value)}"
    return f"top_k {where} must be a positive integer, got {_shown(value)}"


def retrieval_problem(value: Any) -> str | None:
    """A retrieval override names one of the strategies."""
    if isinstance(value, str) and value in RETRIEVAL_MODES:
        return None
    # quoted as the memory-level message quotes it: 'fuzzy' (other values as JSON)
    shown = f"'{value}'" if isinstance(value, str) and len(value) <= 40 else _shown(value)
    return (
        f"Unknown retrieval strategy {shown} in recall"
        f"{did_you_mean(str(value), RETRIEVAL_MODES)}. "
        f"Valid: {', '.join(sorted(RETRIEVAL_MODES))}"
    )


def tier_problem(value: Any) -> str | None:
    """`with { tier: ... }` names a tier (whether the memory has it is checked apart)."""
    if isinstance(value, str) and value in TIER_NAMES:
        return None
    return (
        f"Unknown tier {_shown(value)}{did_you_mean(str(value), TIER_NAMES)}. "
        f"Valid: {', '.join(TIER_NAMES)}"
    )


def tiers_problem(value: Any) -> str | None:
    """`with { tiers: [...] }` is a non-empty list of tier names."""
    if not isinstance(value, list) or not value:
        return f"tiers must be a non-empty list of tiers, such as [session], got {_shown(value)}"
    for item in value:
        problem = tier_problem(item)
        if problem is not None:
            return problem
    return None


def tier_membership_problem(memory: str, tiers: Any, asked: Any) -> str | None:
    """A tier that the memory does not have (`tiers` are its declared tiers, maybe none)."""
    names = asked if isinstance(asked, list | tuple) else [asked]
    if not tiers:
        return (
            f"Memory '{memory}' has no tiers: declare tiers: [...] in it to use "
            f"{'tier' if isinstance(asked, str) else 'tiers'} in with"
        )
    for name in names:
        if name not in tiers:
            return f"Memory '{memory}' has no tier '{name}'. Its tiers: {', '.join(tiers)}"
    return None


def where_value(value: Any) -> Any:
    """A `where` value as Python gives it -> as `filter_problem` checks it and every
    backend takes it: a tuple is a list (`("a", "b")`, and an operator map's `in`
    operand, `{"in": (1, 2)}`), an operator map a new dict; anything else as it is
    (a set or a string operand is then refused by `filter_problem`)."""
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {op: list(v) if isinstance(v, tuple) else v for op, v in value.items()}
    return value


def filter_problem(name: str, value: Any, filters: dict[str, Any]) -> str | None:
    """A `where` field: not given twice (nor as `tags` too), a scalar, a list of scalars
    or an operator map (`operator_problem`, `operators_problem`)."""
    if name in filters:
        twice = "as an option and in where" if name in FILTER_OPTIONS else "twice in where"
        return f"Filter '{name}' given {twice}"
    if isinstance(value, dict):
        for op, operand in value.items():
            problem = operator_problem(name, op, operand)
            if problem is not None:
                return problem
        return operators_problem(name, value)
    if not _is_filter_value(value):
        return (
            f"where: '{name}' must be a string, number, boolean, a list of them or an "
            f"operator map such as {{\"gte\": 3}}, got {_shown(value)}"
        )
    for item in value if isinstance(value, list) else [value]:
        problem = _finite_problem(name, item)
        if problem is not None:
            return problem
    return None


def _finite_problem(name: str, item: Any) -> str | None:
    if isinstance(item, float) and not math.isfinite(item):  # only Python passes one
        return f"where: '{name}' must be a finite number, got {item!r} (no entry holds it)"
    return None


def operator_problem(name: str, op: Any, operand: Any) -> str | None:
    """One operator of a `where` operator map: a known operator (`OPERATORS`, with a
    "did you mean") and an operand of its type: a number or a string for `gte`, `gt`,
    `lte`, `lt`; a string, number or boolean for `ne`; a list of them for `in`; true or
    false for `exists`. Numbers finite."""
    if not isinstance(op, str) or op not in OPERATORS:
        shown = f"'{op}'" if isinstance(op, str) and len(op) <= 40 else _shown(op)
        return (
            f"where: unknown operator {shown} for '{name}'"
            f"{did_you_mean(str(op), OPERATORS)}. Valid: {', '.join(OPERATORS)}"
        )
    if op == "exists":
        if isinstance(operand, bool):
            return None
        return f"where: '{name}': exists takes true or false, got {_shown(operand)}"
    if op == "in":
        if not isinstance(operand, list) or not _is_filter_value(operand):
            return (
                f"where: '{name}': in takes a list of strings, numbers or booleans, "
                f"got {_shown(operand)}"
            )
        for item in operand:
            problem = _finite_problem(name, item)
            if problem is not None:
                return problem
        return None
    if op == "ne":
        if isinstance(operand, list) or not _is_filter_value(operand):
            return (
                f"where: '{name}': ne takes a string, number or boolean, got {_shown(operand)}"
            )
        return _finite_problem(name, operand)
    if not isinstance(operand, str) and not is_number(operand):
        return f"where: '{name}': {op} takes a number or a string, got {_shown(operand)}"
    return _finite_problem(name, operand)


def operators_problem(name: str, value: dict[str, Any]) -> str | None:
    """A whole operator map: not empty, and its `gte`/`gt`/`lte`/`lt` all numbers or
    all strings (no value is both)."""
    if not value:
        return f"where: '{name}' has an empty operator map (give at least one of " + (
            f"{', '.join(OPERATORS)})"
        )
    kinds = {isinstance(value[op], str) for op in COMPARISONS if op in value}
    if len(kinds) > 1:
        return (
            f"where: '{name}' compares with a number and a string in one map "
            "(no value is both; give numbers or strings)"
        )
    return None


def _tags(f: ast.Field | None, report: Reporter) -> tuple[str, ...] | None:
    if f is None:
        return None
    value = plain(f.value)  # a list only when a list was written
    problem = tags_problem(value)
    if problem is not None:
        report.error(problem, value_span(f))
        return None
    assert isinstance(value, list)  # tags_problem accepts only lists of strings
    return tuple(t for t in value if isinstance(t, str))


def _map(f: ast.Field, op: str, report: Reporter) -> ast.MapValue | None:
    if isinstance(f.value, ast.MapValue):
        return f.value
    example = "{ project: \"apollo\" }"
    report.error(
        f"{f.name} in {op} must be a map such as {example}, got {_shown(plain(f.value))}",
        value_span(f),
    )
    return None


def _shown(value: Any) -> str:
    """`value` as JSON for a message, cut at 40 characters. The Python APIs pass any
    object here: what JSON cannot show (a set, bytes, data nested past the encoder's
    stack) is named by its type instead."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        if isinstance(value, int) and not isinstance(value, bool):
            return number_text(value)  # an int too long for text
        return f"a value of type {type(value).__name__}"
    return text if len(text) <= 40 else text[:37] + "..."


def remember_options(options: ast.MapValue | None, report: Reporter) -> RememberOptions:
    """The checked options of `remember(...) -> M with { ... }`; problems go to `report`."""
    fields = _fields("remember", options, report)
    key = None
    if "key" in fields:
        value = plain(fields["key"].value)
        problem = key_problem(value)
        if problem is not None:
            report.error(problem, value_span(fields["key"]))
        elif isinstance(value, str):
            key = value
    importance = _importance(fields.get("importance"), report)
    record_type = _type(fields.get("type"), report)
    expires_in = None
    if "expires_in" in fields:
        value = plain(fields["expires_in"].value)
        problem = expires_in_problem(value)
        if problem is not None:
            report.error(problem, value_span(fields["expires_in"]))
        elif isinstance(value, str):
            expires_in = value
    related = None
    if "related" in fields:
        value = plain(fields["related"].value)
        problem = related_problem(value)
        if problem is not None:
            report.error(problem, value_span(fields["related"]))
        elif isinstance(value, list):
            related = tuple(dict.fromkeys(k for k in value if isinstance(k, str)))
        if key is not None and related is not None and key in related:
            report.error(
                f"Entry '{key}' cannot be related to itself", value_span(fields["related"])
            )
    metadata: dict[str, JSON] = {}
    mapping = _map(fields["metadata"], "remember", report) if "metadata" in fields else None
    for f in mapping.fields if mapping else ():
        problem = metadata_name_problem(f.name)
        if f.name in metadata:
            report.error(f"Duplicate field '{f.name}' in metadata", f.span)
        elif problem is not None:
            report.error(problem, f.span)
        else:
            metadata[f.name] = plain(f.value)
    tier = None
    if "tier" in fields:
        value = plain(fields["tier"].value)
        problem = tier_problem(value)
        if problem is not None:
            report.error(problem, value_span(fields["tier"]))
        elif isinstance(value, str):
            tier = value
    return RememberOptions(
        key, _tags(fields.get("tags"), report), importance, metadata,
        record_type, expires_in, related, tier, fields.get("tier"),
    )


def _importance(f: ast.Field | None, report: Reporter, name: str = "importance") -> float | None:
    """A number from 0 to 1 or a level (`high`, as a name or a string) -> its number."""
    if f is None:
        return None
    value = plain(f.value)
    problem = importance_problem(value, name)
    if problem is not None:
        report.error(problem, value_span(f))
        return None
    assert isinstance(value, int | float | str)  # importance_problem accepts only these
    return importance_value(value)


def _type(f: ast.Field | None, report: Reporter) -> str | None:
    """A record type (`short_term`, as a name or a string)."""
    if f is None:
        return None
    value = plain(f.value)
    problem = type_problem(value)
    if problem is not None:
        report.error(problem, value_span(f))
        return None
    assert isinstance(value, str)
    return value


def min_importance_filter(bound: float) -> dict[str, JSON]:
    """The `importance` filter of `min_importance`: at least `bound`; no importance = normal."""
    return dict(comparison_filter("gte", bound, DEFAULT_IMPORTANCE))


def _is_filter_value(value: Any) -> bool:
    scalar = (str, int, float, bool)
    return isinstance(value, scalar) or (
        isinstance(value, list) and all(isinstance(v, scalar) for v in value)
    )


def recall_options(options: ast.MapValue | None, report: Reporter) -> RecallOptions:
    """The checked options of `recall(...) from M with { ... }`; problems go to `report`.

    `retrieval` is returned as written when it names a strategy; whether the
    memory's backend can do it is the checker's question (it knows the memory).
    """
    fields = _fields("recall", options, report)
    top_k = positive_int(fields["top_k"], "in recall", report) if "top_k" in fields else None
    retrieval = None
    if "retrieval" in fields:
        value = plain(fields["retrieval"].value)
        problem = retrieval_problem(value)
        if problem is not None:
            report.error(problem, value_span(fields["retrieval"]))
        elif isinstance(value, str):
            retrieval = value
    filters: dict[str, JSON] = {}
    tags = _tags(fields.get("tags"), report)
    if tags is not None:
        filters["tags"] = list(tags)
    record_type = _type(fields.get("type"), report)
    if record_type is not None:
        filters["type"] = record_type
    least = _importance(fields.get("min_importance"), report, "min_importance")
    if least is not None:
        filters["importance"] = min_importance_filter(least)
    _add_where(fields, "recall", report, filters)
    tiers = None
    if "tiers" in fields:
        value = plain(fields["tiers"].value)
        problem = tiers_problem(value)
        if problem is not None:
            report.error(problem, value_span(fields["tiers"]))
        elif isinstance(value, list):
            tiers = tuple(dict.fromkeys(str(t) for t in value))
    floor = min_score(fields["min_score"], "in recall", report) if "min_score" in fields else None
    _window(fields, report)
    return RecallOptions(
        top_k, retrieval, filters, fields.get("retrieval"), tiers, fields.get("tiers"), floor
    )


def _window(fields: dict[str, ast.Field], report: Reporter) -> None:
    """`since` / `until` of a recall: each a text (an ISO 8601 date or time, or a
    duration before now) or Unix seconds, checked as the runtime reads them
    (`entry.time_bound`); two dates with since not before until are an error at
    `until`. The executor reads them from the statement's options."""
    bounds: dict[str, float | Ago] = {}
    for name in ("since", "until"):
        if name not in fields:
            continue
        value = plain(fields[name].value)
        problem = None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            problem = (
                f"{name} must be a date or time (\"2024-03-01\"), a duration before now "
                f"(\"7d\") or Unix seconds, not {json_kind(value)}"
            )
        else:
            try:
                bounds[name] = time_bound(value, name)
            except ValueError as exc:
                problem = str(exc)
        if problem is not None:
            report.error(problem, value_span(fields[name]))
    low, high = bounds.get("since"), bounds.get("until")
    if isinstance(low, float) and isinstance(high, float) and low >= high:
        report.error("since must be before until (nothing is in that window)",
                     value_span(fields["until"]))


# ---------------------------------------------------------------- forget
# `forget from M with { ... }` takes a filter and nothing else (kept apart from the
# remember and recall options above, which grow with memory records).

FORGET_OPTIONS = ("tags", "where")
"""What `with { ... }` accepts on forget: the filters of recall, nothing else."""


@attrs.frozen
class ForgetOptions:
    """The checked `with` of a forget: `filters` merges `tags` and `where` as recall's do."""

    filters: dict[str, JSON] = attrs.field(factory=dict)


def _forget_fields(options: ast.MapValue | None, report: Reporter) -> dict[str, ast.Field]:
    """The fields of a forget's `with`, each name once, each `tags` or `where`."""
    valid = ", ".join(FORGET_OPTIONS)
    fields: dict[str, ast.Field] = {}
    for f in options.fields if options else ():
        if f.name in fields:
            report.error(f"Duplicate option '{f.name}' in forget", f.span)
        elif f.name in FORGET_OPTIONS:
            fields[f.name] = f
        elif f.name == "key":
            report.error(
                "'key' is not an option of forget: write the key before from, "
                f'forget({json.dumps(plain(f.value), ensure_ascii=False)}) from M '
                f"(with takes a filter: {valid})",
                f.span,
            )
        elif f.name in REMEMBER_OPTIONS or f.name in RECALL_OPTIONS:
            kind = " and ".join(
                op
                for op, names in (("remember", REMEMBER_OPTIONS), ("recall", RECALL_OPTIONS))
                if f.name in names
            )
            kind = f"a {kind}"
            report.error(
                f"'{f.name}' is {kind} option, not valid in forget. Valid: {valid}", f.span
            )
        else:
            report.error(
                f"Unknown option '{f.name}' in forget{did_you_mean(f.name, FORGET_OPTIONS)}. "
                f"Valid: {valid}; filter by metadata with where: {{ {f.name}: ... }}",
                f.span,
            )
    return fields


def forget_options(options: ast.MapValue | None, report: Reporter) -> ForgetOptions:
    """The checked filter of `forget from M with { ... }`; problems go to `report`.

    The rules are recall's (`tags` a list of strings, `where` a map of scalars or
    lists of them, no filter given twice), so a forget deletes exactly what a
    recall with the same `with` may return (and `list` lists).
    """
    fields = _forget_fields(options, report)
    filters: dict[str, JSON] = {}
    tags = _tags(fields.get("tags"), report)
    if tags is not None:
        filters["tags"] = list(tags)
    _add_where(fields, "forget", report, filters)
    return ForgetOptions(filters)


def _add_where(
    fields: dict[str, ast.Field], op: str, report: Reporter, filters: dict[str, JSON]
) -> None:
    """Add the fields of `where: { ... }` to `filters`, each checked by `filter_problem`
    (recall's rules, which forget shares: a forget deletes what that recall returns)."""
    mapping = _map(fields["where"], op, report) if "where" in fields else None
    for f in mapping.fields if mapping else ():
        if isinstance(f.value, ast.MapValue) and f.name not in filters:
            if _operators_checked(f, f.value, report):
                filters[f.name] = plain(f.value)
            continue
        value = plain(f.value)
        problem = filter_problem(f.name, value, filters)
        if problem is None:
            filters[f.name] = value
        else:
            report.error(problem, f.span if f.name in filters else value_span(f))


def _operators_checked(field: ast.Field, operators: ast.MapValue, report: Reporter) -> bool:
    """Check the operator map of a `where` field, each problem at its operator (an
    unknown or repeated one), its operand or the field (the map as a whole); whether
    it is sound."""
    name = field.name
    sound = True
    seen: set[str] = set()
    for f in operators.fields:
        if f.name in seen:
            report.error(f"where: operator '{f.name}' given twice for '{name}'", f.span)
            sound = False
            continue
        seen.add(f.name)
        problem = operator_problem(name, f.name, plain(f.value))
        if problem is not None:
            report.error(problem, f.span if f.name not in OPERATORS else value_span(f))
            sound = False
    if sound:
        problem = operators_problem(name, plain(operators))  # type: ignore[arg-type]
        if problem is not None:
            report.error(problem, field.span)
            sound = False
    return sound
