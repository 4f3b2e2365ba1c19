"""`with { ... }` on remember and recall -> checked options (docs/language.md, remember and recall).

The options are a closed set: a misspelt name is an error with a suggestion,
never a silent metadata filter. Free metadata is written `metadata: { ... }` on
remember, a metadata filter `where: { field: value }` on recall. Each option is
checked for the statement it is written on and for the type of its value.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from axon.compiler import ast
from axon.compiler.check_memory import Reporter, positive_int
from axon.compiler.ir import JSON
from axon.compiler.lowering import plain, value_span
from axon.compiler.names import did_you_mean
from axon.memory.backend import RETRIEVAL_MODES

REMEMBER_OPTIONS = ("importance", "key", "metadata", "tags")
"""What `with { ... }` accepts on remember."""
RECALL_OPTIONS = ("retrieval", "tags", "top_k", "where")
"""What `with { ... }` accepts on recall."""
PLANNED_OPTIONS = ("expires_in", "min_importance", "related", "tier", "tiers", "type")
"""Options planned for tiers and memory records that this implementation does not have yet."""
RUNTIME_METADATA = ("scope", "source")
"""Metadata the runtime writes itself; a program cannot set it."""


@attrs.frozen
class RememberOptions:
    """The checked `with` of a remember: `None` where the option was not given (or wrong)."""

    key: str | None = None
    tags: tuple[str, ...] | None = None
    importance: float | None = None
    metadata: dict[str, JSON] = attrs.field(factory=dict)


@attrs.frozen
class RecallOptions:
    """The checked `with` of a recall; `filters` merges `tags` and `where` for the backend."""

    top_k: int | None = None
    retrieval: str | None = None
    filters: dict[str, JSON] = attrs.field(factory=dict)
    retrieval_field: ast.Field | None = attrs.field(default=None, eq=False)


def _fields(op: str, options: ast.MapValue | None, report: Reporter) -> dict[str, ast.Field]:
    """The fields of a `with`, each name once, every name valid for `op`."""
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
        elif f.name in PLANNED_OPTIONS:
            report.error(
                f"Option '{f.name}' (tiers and memory records) is not implemented yet. "
                f"Valid in {op}: {', '.join(valid)}",
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


def tags_problem(value: Any) -> str | None:
    """Tags are a list of strings."""
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return None
    return f'tags must be a list of strings, such as ["finance"], got {_shown(value)}'


def importance_problem(value: Any) -> str | None:
    """Importance is a number from 0 to 1 (not a boolean)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
        return None
    return f"importance must be a number from 0 to 1, got {_shown(value)}"


def metadata_name_problem(name: str) -> str | None:
    """Free metadata may not use the runtime's names nor those of the options."""
    if name in RUNTIME_METADATA:
        return f"'{name}' is set by the runtime and cannot be given in metadata"
    if name in ("tags", "importance"):
        return (
            f"'{name}' is an option of its own: write with {{ {name}: ... }}, "
            "not inside metadata"
        )
    return None


def top_k_problem(value: Any, where: str = "in recall") -> str | None:
    """top_k is a positive integer."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return None
    return f"top_k {where} must be a positive integer, got {_shown(value)}"


def retrieval_problem(value: Any) -> str | None:
    """A retrieval override names one of the strategies."""
    if isinstance(value, str) and value in RETRIEVAL_MODES:
        return None
    return (
        f"Unknown retrieval strategy {_shown(value)} in recall"
        f"{did_you_mean(str(value), RETRIEVAL_MODES)}. "
        f"Valid: {', '.join(sorted(RETRIEVAL_MODES))}"
    )


def filter_problem(name: str, value: Any, filters: dict[str, Any]) -> str | None:
    """A `where` field: not given twice (nor as `tags` too), a scalar or a list of scalars."""
    if name in filters:
        twice = "as an option and in where" if name == "tags" else "twice in where"
        return f"Filter '{name}' given {twice}"
    if not _is_filter_value(value):
        return (
            f"where: '{name}' must be a string, number, boolean or a list of them, "
            f"got {_shown(value)}"
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
    text = json.dumps(value)
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
    importance = None
    if "importance" in fields:
        value = plain(fields["importance"].value)
        problem = importance_problem(value)
        if problem is not None:
            report.error(problem, value_span(fields["importance"]))
        elif isinstance(value, int | float):
            importance = value
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
    return RememberOptions(key, _tags(fields.get("tags"), report), importance, metadata)


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
    mapping = _map(fields["where"], "recall", report) if "where" in fields else None
    for f in mapping.fields if mapping else ():
        value = plain(f.value)
        problem = filter_problem(f.name, value, filters)
        if problem is None:
            filters[f.name] = value
        else:
            report.error(problem, f.span if f.name in filters else value_span(f))
    return RecallOptions(top_k, retrieval, filters, fields.get("retrieval"))


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
            kind = "a remember" if f.name in REMEMBER_OPTIONS else "a recall"
            report.error(
                f"'{f.name}' is {kind} option, not valid in forget. Valid: {valid}", f.span
            )
        elif f.name in PLANNED_OPTIONS:
            report.error(
                f"Option '{f.name}' (tiers and memory records) is not implemented yet. "
                f"Valid in forget: {valid}",
                f.span,
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
    mapping = _map(fields["where"], "forget", report) if "where" in fields else None
    for f in mapping.fields if mapping else ():
        value = plain(f.value)
        problem = filter_problem(f.name, value, filters)
        if problem is None:
            filters[f.name] = value
        else:
            report.error(problem, f.span if f.name in filters else value_span(f))
    return ForgetOptions(filters)
