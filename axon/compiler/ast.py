"""AST nodes: what was written, with positions. Produced by `parser.parse`, read by the checker.

Every node is a frozen attrs class. `span` is excluded from equality, so two parses
of the same program compare equal however it was laid out. Values keep their
surface form (a `Name` is not yet resolved, a `Duration` is still text).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from axon.source import NO_SPAN, Span


def _span() -> Any:
    return attrs.field(default=NO_SPAN, eq=False, repr=False, kw_only=True)


# ---------------------------------------------------------------- values


@attrs.frozen
class Literal:
    """A string, number or boolean written in the source."""

    value: str | int | float | bool
    span: Span = _span()


@attrs.frozen
class Name:
    """An identifier or dotted name: `ContractSummary`, `Extract.output`."""

    parts: tuple[str, ...]
    span: Span = _span()

    @property
    def text(self) -> str:
        return ".".join(self.parts)


@attrs.frozen
class Duration:
    """A duration literal as written (`7d`, `1h30m`); the checker converts it."""

    text: str
    span: Span = _span()


@attrs.frozen
class ListValue:
    items: tuple[Value, ...]
    span: Span = _span()


@attrs.frozen
class Field:
    """`name: value` inside a declaration body, a step, or a `with { ... }` block."""

    name: str
    value: Value
    span: Span = _span()


@attrs.frozen
class MapValue:
    fields: tuple[Field, ...]
    span: Span = _span()


@attrs.frozen
class Arg:
    """A call argument: positional (`name` is None) or keyword."""

    name: str | None
    value: Value
    span: Span = _span()


@attrs.frozen
class Call:
    """`retry(backoff: exponential)`, `WebSearch("query")`."""

    callee: Name
    args: tuple[Arg, ...]
    span: Span = _span()


@attrs.frozen
class Raise:
    """`raise AnchorBreachError`."""

    error: str
    span: Span = _span()


@attrs.frozen
class TypeRef:
    """A type expression: `Document`, `List<Party>`, `String?`."""

    name: str
    args: tuple[TypeRef, ...] = ()
    optional: bool = False
    span: Span = _span()

    @property
    def text(self) -> str:
        inner = f"<{', '.join(a.text for a in self.args)}>" if self.args else ""
        return f"{self.name}{inner}{'?' if self.optional else ''}"


Value: TypeAlias = Literal | Name | Duration | ListValue | MapValue | Call | Raise | TypeRef

# ---------------------------------------------------------------- conditions


@attrs.frozen
class Comparison:
    """`left [op right]`: a bare operand tests truthiness."""

    left: Literal | Name | Duration
    op: str | None = None
    right: Literal | Name | Duration | None = None
    span: Span = _span()


@attrs.frozen
class Condition:
    """Comparisons joined by `and` / `or`, evaluated left to right."""

    first: Comparison
    rest: tuple[tuple[str, Comparison], ...] = ()
    span: Span = _span()


# ---------------------------------------------------------------- statements


@attrs.frozen
class Let:
    name: str
    value: Value
    span: Span = _span()


@attrs.frozen
class Remember:
    """`remember(x) -> M [with {...}]` or `remember x in M [with {...}]`."""

    value: Value
    target: str
    options: MapValue | None = None
    target_span: Span = _span()
    span: Span = _span()


@attrs.frozen
class Recall:
    """`recall(q) from M [with {...}] [as name]` or `recall q from M ...`."""

    query: Value
    source: str
    options: MapValue | None = None
    alias: str | None = None
    source_span: Span = _span()
    span: Span = _span()


@attrs.frozen
class Forget:
    """`forget(k) from M`, `forget k from M` (`key`) or `forget from M with {...}` (a filter).

    The grammar accepts a key and `with` together, and neither; the checker refuses both.
    """

    key: Value | None
    source: str
    options: MapValue | None = None
    source_span: Span = _span()
    span: Span = _span()


@attrs.frozen
class Step:
    """`step Name { given: ..., ask: ..., output: ... }` and nested actions."""

    name: str
    fields: tuple[Field, ...]
    actions: tuple[Statement, ...] = ()
    span: Span = _span()


@attrs.frozen
class Probe:
    target: Name
    items: ListValue
    span: Span = _span()


@attrs.frozen
class Reason:
    about: Name | None
    fields: tuple[Field, ...]
    span: Span = _span()


@attrs.frozen
class Validate:
    target: Name
    schema: Name
    fields: tuple[Field, ...]
    rules: tuple[If, ...]
    span: Span = _span()


@attrs.frozen
class Refine:
    fields: tuple[Field, ...]
    span: Span = _span()


@attrs.frozen
class Weave:
    sources: ListValue
    target: Name
    fields: tuple[Field, ...]
    span: Span = _span()


@attrs.frozen
class Use:
    tool: Name
    args: tuple[Arg, ...]
    span: Span = _span()


@attrs.frozen
class Action:
    """A bare action in an `if` branch: `refine(max_attempts: 2)`, `raise E`, `escalate`."""

    value: Call | Raise | Name
    span: Span = _span()


@attrs.frozen
class If:
    condition: Condition
    then: tuple[Statement, ...]
    otherwise: tuple[Statement, ...] = ()
    span: Span = _span()


Statement: TypeAlias = (
    Let
    | Remember
    | Recall
    | Forget
    | Step
    | Probe
    | Reason
    | Validate
    | Refine
    | Weave
    | Use
    | If
    | Action
)

# ---------------------------------------------------------------- declarations


@attrs.frozen
class Import:
    module: tuple[str, ...]
    names: tuple[str, ...] = ()
    span: Span = _span()


@attrs.frozen
class Declaration:
    """`persona`, `context`, `anchor`, `tool`, `intent` or `memory`: a name and fields."""

    kind: str
    name: str
    fields: tuple[Field, ...]
    name_span: Span = _span()
    span: Span = _span()


@attrs.frozen
class TypeField:
    name: str
    type: TypeRef
    span: Span = _span()


@attrs.frozen
class TypeDecl:
    """`type N(lo..hi)`, `type N { f: T }`, `type N where cond` or `type N = T`."""

    name: str
    range: tuple[float, float] | None = None
    fields: tuple[TypeField, ...] = ()
    where: Condition | None = None
    alias: TypeRef | None = None
    name_span: Span = _span()
    span: Span = _span()


@attrs.frozen
class Param:
    name: str
    type: TypeRef | None = None
    span: Span = _span()


@attrs.frozen
class Flow:
    name: str
    params: tuple[Param, ...]
    returns: TypeRef | None
    body: tuple[Statement, ...]
    name_span: Span = _span()
    span: Span = _span()


@attrs.frozen
class Run:
    """`run Flow(args)` with `as P`, `within C`, `constrained_by [A]` and option fields."""

    flow: Name
    args: tuple[Arg, ...]
    persona: str | None = None
    context: str | None = None
    anchors: tuple[str, ...] = ()
    options: tuple[Field, ...] = ()
    persona_span: Span = _span()
    context_span: Span = _span()
    anchor_spans: tuple[Span, ...] = attrs.field(default=(), eq=False, repr=False, kw_only=True)
    span: Span = _span()


TopLevel: TypeAlias = (
    Import | Declaration | TypeDecl | Flow | Run | Let | Remember | Recall | Forget
)


@attrs.frozen
class Program:
    items: tuple[TopLevel, ...]
    filename: str = attrs.field(default="<input>", eq=False)
    span: Span = _span()


def to_data(node: Any) -> Any:
    """An AST node as plain JSON data: `{"node": "Remember", ..., "span": [line, col]}`."""
    if attrs.has(type(node)):
        out: dict[str, Any] = {"node": type(node).__name__}
        for field in attrs.fields(type(node)):
            value = getattr(node, field.name)
            if isinstance(value, Span):
                if field.name == "span":
                    out["span"] = [value.line, value.column]
                continue
            if field.name == "anchor_spans":
                continue
            out[field.name] = to_data(value)
        return out
    if isinstance(value := node, tuple | list):
        return [to_data(item) for item in value]
    return node
