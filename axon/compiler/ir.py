"""IR nodes: what a program means, produced by the checker and run by the executor.

Names are resolved, defaults applied (store, backend, retrieval, top_k), durations
are in seconds and backends are canonical registry names. Every node is a frozen
attrs class with `to_dict()` giving plain JSON data (`{"node": "IRMemory", ...}`).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs


class _Node:
    """Mixin: `to_dict()` for attrs nodes, recursively, tuples as lists."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"node": type(self).__name__}
        for field in attrs.fields(type(self)):  # type: ignore[arg-type]
            out[field.name] = _plain(getattr(self, field.name))
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, _Node):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return value


# ---------------------------------------------------------------- expressions


@attrs.frozen
class IRLiteral(_Node):
    """A constant: string, number, boolean, or a list/dict of constants."""

    value: Any


@attrs.frozen
class IRRef(_Node):
    """A reference to a bound name (`summary`, `Extract.output`); `path` is its parts."""

    path: tuple[str, ...]

    @property
    def text(self) -> str:
        return ".".join(self.path)


@attrs.frozen
class IRList(_Node):
    items: tuple[IRExpr, ...]


@attrs.frozen
class IRMap(_Node):
    entries: tuple[tuple[str, IRExpr], ...]


IRExpr: TypeAlias = IRLiteral | IRRef | IRList | IRMap

# ---------------------------------------------------------------- declarations


@attrs.frozen
class IRMemory(_Node):
    """A memory declaration with every default applied."""

    name: str
    store: str
    backend: str
    retrieval: str
    decay: str
    decay_seconds: float | None
    top_k: int
    location: str | None
    line: int
    column: int
    link: str = "none"
    """`none` (entries independent) or `sequence` (each read with the one before it)."""


@attrs.frozen
class IRDeclaration(_Node):
    """A persona, context, anchor, tool or intent: its fields as plain data."""

    kind: str
    name: str
    fields: dict[str, Any]
    line: int
    column: int


@attrs.frozen
class IRType(_Node):
    name: str
    kind: str  # "range" | "struct" | "where" | "alias"
    range: tuple[float, float] | None
    fields: dict[str, str]
    where: str | None
    alias: str | None
    line: int
    column: int


@attrs.frozen
class IRImport(_Node):
    module: str
    names: tuple[str, ...]
    line: int
    column: int


# ---------------------------------------------------------------- statements


@attrs.frozen
class IRLet(_Node):
    name: str
    value: IRExpr
    line: int
    column: int


@attrs.frozen
class IRRemember(_Node):
    """`remember(expression) -> memory_target`: the key is resolved at check time.

    `expression` is the argument as text (a name, or a literal's value); `value`
    is what the executor evaluates; `options` holds the `with { ... }` fields as
    written. What becomes the entry's metadata, besides the runtime's `scope`
    and `source`: `tags` and `importance` when given, and the `metadata:` map.
    """

    expression: str
    memory_target: str
    key: str
    options: dict[str, Any]
    line: int
    column: int
    value: IRExpr = IRLiteral(None)
    tags: tuple[str, ...] | None = None
    importance: float | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class IRRecall(_Node):
    """`recall(query) from memory_source`: `top_k` resolved from `with` or the memory.

    `query` is the text as written (a string's value, or a name); `query_value`
    is evaluated at run time (a bound name's value, else its text). `filters`
    restrict by metadata: `tags` (any shared element) and each `where:` field.
    """

    query: str
    memory_source: str
    top_k: int
    alias: str | None
    options: dict[str, Any]
    line: int
    column: int
    query_value: IRExpr = IRLiteral("")
    retrieval: str = "exact"
    filters: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class IRStep(_Node):
    """`step Name { ... }`: a model-facing step; `output` names its result type."""

    name: str
    given: IRExpr | None
    ask: str | None
    output: str | None
    fields: dict[str, Any]
    actions: tuple[IRStatement, ...]
    line: int
    column: int


@attrs.frozen
class IRCognitive(_Node):
    """`probe`, `reason`, `validate`, `refine`, `weave` or `use`: a model-facing operation.

    `target` is what it operates on (probe/validate/use), `into` the result name
    (weave), `items` the list it takes (probe's aspects, weave's sources, use's
    arguments), `rules` a validate's `if` rules.
    """

    kind: str
    target: str | None
    into: str | None
    items: tuple[IRExpr, ...]
    fields: dict[str, Any]
    rules: tuple[IRIf, ...]
    line: int
    column: int


@attrs.frozen
class IRAction(_Node):
    """A bare action in an `if` branch: `refine(max_attempts: 2)`, `raise E`, `escalate`."""

    kind: str  # "call" | "raise" | "name"
    name: str
    arguments: dict[str, Any]
    line: int
    column: int


@attrs.frozen
class IRComparison(_Node):
    left: IRExpr
    op: str | None
    right: IRExpr | None


@attrs.frozen
class IRCondition(_Node):
    """`first (and|or next)*`, evaluated left to right; `text` is the source form."""

    text: str
    first: IRComparison
    rest: tuple[tuple[str, IRComparison], ...]


@attrs.frozen
class IRIf(_Node):
    condition: IRCondition
    then: tuple[IRStatement, ...]
    otherwise: tuple[IRStatement, ...]
    line: int
    column: int


@attrs.frozen
class IRParam(_Node):
    name: str
    type: str | None


@attrs.frozen
class IRFlow(_Node):
    """A flow: parameters and its statements (`steps`) in source order."""

    name: str
    params: tuple[IRParam, ...]
    returns: str | None
    steps: tuple[IRStatement, ...]
    line: int
    column: int


@attrs.frozen
class IRArg(_Node):
    name: str | None
    value: IRExpr


@attrs.frozen
class IRRun(_Node):
    """`run Flow(args)` with its modifiers resolved."""

    flow: str
    args: tuple[IRArg, ...]
    persona: str | None
    context: str | None
    anchors: tuple[str, ...]
    on_failure: Any
    output_to: str | None
    effort: str | None
    line: int
    column: int


IRStatement: TypeAlias = (
    IRLet | IRRemember | IRRecall | IRStep | IRCognitive | IRIf | IRAction | IRRun
)


@attrs.frozen
class IRProgram(_Node):
    """A checked program: its declarations by kind and its top-level statements in order."""

    memories: tuple[IRMemory, ...] = ()
    flows: tuple[IRFlow, ...] = ()
    runs: tuple[IRRun, ...] = ()
    statements: tuple[IRStatement, ...] = ()
    personas: tuple[IRDeclaration, ...] = ()
    contexts: tuple[IRDeclaration, ...] = ()
    anchors: tuple[IRDeclaration, ...] = ()
    tools: tuple[IRDeclaration, ...] = ()
    intents: tuple[IRDeclaration, ...] = ()
    types: tuple[IRType, ...] = ()
    imports: tuple[IRImport, ...] = ()
    filename: str = "<input>"
    warnings: tuple[Any, ...] = attrs.field(default=(), eq=False)

    def memory(self, name: str) -> IRMemory | None:
        return next((m for m in self.memories if m.name == name), None)

    def flow(self, name: str) -> IRFlow | None:
        return next((f for f in self.flows if f.name == name), None)
