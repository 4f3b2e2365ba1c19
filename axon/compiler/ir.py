"""IR nodes: what a program means, produced by the checker and run by the executor.

Names are resolved, defaults applied (store, backend, retrieval, top_k, retry
attempts), durations are in seconds and backends are canonical registry names.
Every node is a frozen attrs class with slots, built by keyword, and `to_dict()`
gives plain JSON data (`{"node": "IRMemory", ...}`; `IRProgram.to_dict()` carries
`ir_version`, see docs/language.md). A node that stands for source text has a
`span` (its start, from `line` and `column`); positions take no part in equality,
so two layouts of the same program give equal IR.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from axon.errors import Diagnostic
from axon.source import Span

IR_VERSION = 6
"""The shape of `IRProgram.to_dict()`. 1: no `ir_version` key, `runs` beside
`statements`, `on_failure` as written. 2: `on_failure` an `IROnFailure` node, flows
carry `result_name`, no `runs` (a run is in `statements`). Still 2 with `IRForget`:
a new node type, no existing node changed shape (a reader of version 2 that meets a
node it does not know should refuse the program, not skip the statement). 3: tiered
memories: `IRMemory` carries `tiers`, `promote_after`, `demote_after`,
`demote_after_seconds` and `persist_if` (an `IRTierPolicy` or null), `IRRemember`
carries `tier`, `IRRecall` carries `tiers` (docs/language.md §9 Tiered memories). 4:
`IRMemory` and `IRRecall` carry `min_score` (a number, or null for the default floor;
docs/language.md §6.1 Relevance floor). 5: `IRMemory` carries `refresh_on_read` (a
boolean; docs/language.md §4.1 Refresh on read). 6: `IRMemory` carries `history` (null,
a positive count of earlier versions, or "all"; docs/language.md §5.3 History)."""

JSON: TypeAlias = "str | int | float | bool | list[JSON] | dict[str, JSON] | None"
"""Plain data as the checker keeps a field's value: names as their text."""


class _Node:
    """Mixin: `to_dict()` for attrs nodes, recursively, tuples as lists."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"node": type(self).__name__}
        for field in attrs.fields(type(self)):  # type: ignore[arg-type]
            out[field.name] = _plain(getattr(self, field.name))
        return out


class _Located(_Node):
    """Mixin of the nodes written at a place in the source: `span` from `line`, `column`."""

    __slots__ = ()
    line: int
    column: int

    @property
    def span(self) -> Span:
        """Where the node starts in the source (1-based; 0, 0 for a node built by hand)."""
        return Span.point(self.line, self.column)


def _position() -> Any:
    """`line` or `column`: serialised, but not part of equality (as the AST's spans)."""
    return attrs.field(eq=False)


def _plain(value: object) -> Any:
    if isinstance(value, _Node | Diagnostic):
        return value.to_dict()
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- expressions


@attrs.frozen
class IRLiteral(_Node):
    """A constant: string, number, boolean, or a list/dict of constants."""

    value: JSON


@attrs.frozen
class IRRef(_Node):
    """A reference to a bound name (`summary`, `Extract.output`); `path` is its parts."""

    path: tuple[str, ...]

    @property
    def text(self) -> str:
        return ".".join(self.path)


@attrs.frozen
class IRList(_Node):
    """A list with at least one reference in it (an all-constant list is an `IRLiteral`)."""

    items: tuple[IRExpr, ...]


@attrs.frozen
class IRMap(_Node):
    """A map with at least one reference among its values, entries in source order."""

    entries: tuple[tuple[str, IRExpr], ...]


IRExpr: TypeAlias = IRLiteral | IRRef | IRList | IRMap

# ---------------------------------------------------------------- declarations


@attrs.frozen
class IRMemory(_Located):
    """A memory declaration with every default applied."""

    name: str
    store: str
    backend: str
    retrieval: str
    decay: str
    decay_seconds: float | None
    top_k: int
    location: str | None
    line: int = _position()
    column: int = _position()
    link: str = "none"
    """`none` (entries independent) or `sequence` (each read with the one before it)."""
    tiers: tuple[str, ...] = ()
    """The tiers of a tiered memory, fastest first (`ephemeral`, `session`,
    `persistent`); empty for a memory of one lifetime (its `store`). For a tiered
    memory `store` is the default write tier and `backend` the persistent tier's."""
    promote_after: int | None = None
    """Recalls that move an entry one tier toward persistent (tiered memories only)."""
    demote_after: str | None = None
    """Idle time, as written, that moves an entry one tier back (tiered memories only)."""
    demote_after_seconds: float | None = None
    persist_if: IRTierPolicy | None = None
    """The write policy: which entries go to the persistent tier when `with` names none."""
    min_score: float | None = None
    """The relevance floor of its recalls, 0 to 1; None: the default (relevance above 0)."""
    refresh_on_read: bool = False
    """A get or a recall that returns an entry restarts its expiry (`MemoryBackend.refresh`)."""
    history: int | str | None = None
    """The earlier versions each entry keeps: a count, "all", or None (no history)."""


@attrs.frozen
class IRTierPolicy(_Node):
    """`persist_if: { importance: high, type: [long_term] }` of a tiered memory: a write
    whose importance is at least `min_importance`, or whose record type is one of
    `types`, goes to the persistent tier (docs/language.md §9 Tiered memories)."""

    min_importance: float | None = None
    types: tuple[str, ...] = ()


@attrs.frozen
class IRDeclaration(_Located):
    """A persona, context, anchor, tool or intent: its fields as plain data."""

    kind: str
    name: str
    fields: dict[str, JSON]
    line: int = _position()
    column: int = _position()


@attrs.frozen
class IRType(_Located):
    """A `type` declaration: a numeric range, a struct, a `where` condition or an alias."""

    name: str
    kind: str  # "range" | "struct" | "where" | "alias"
    range: tuple[float, float] | None
    fields: dict[str, str]
    where: str | None
    alias: str | None
    line: int = _position()
    column: int = _position()


@attrs.frozen
class IRImport(_Located):
    """`import a.b { X, Y }`: recorded, not resolved (there is no module system yet)."""

    module: str
    names: tuple[str, ...]
    line: int = _position()
    column: int = _position()


# ---------------------------------------------------------------- statements


@attrs.frozen
class IRLet(_Located):
    """`let name = value`."""

    name: str
    value: IRExpr
    line: int = _position()
    column: int = _position()


@attrs.frozen
class IRRemember(_Located):
    """`remember(expression) -> memory_target`: the key is resolved at check time.

    `expression` is the argument as text (a name, or a literal's value); `value`
    is what the executor evaluates; `options` holds the `with { ... }` fields as
    written. What becomes the entry's metadata, besides the runtime's `scope`
    and `source`: `tags` and `importance` when given, and the `metadata:` map; for a
    record (seed 002), `type` and `related` (keys of associated entries). `expires_in`
    is the entry's own expiry as written (`3d`, `never`).
    """

    expression: str
    memory_target: str
    key: str
    options: dict[str, JSON]
    line: int = _position()
    column: int = _position()
    value: IRExpr = IRLiteral(None)
    tags: tuple[str, ...] | None = None
    importance: float | None = None
    metadata: dict[str, JSON] = attrs.field(factory=dict)
    type: str | None = None
    expires_in: str | None = None
    related: tuple[str, ...] | None = None
    tier: str | None = None
    """`with { tier: session }` of a tiered memory: the tier this write goes to."""


@attrs.frozen
class IRRecall(_Located):
    """`recall(query) from memory_source`: `top_k` and `min_score` resolved from `with`
    or the memory.

    `query` is the text as written (a string's value, or a name); `query_value`
    is evaluated at run time (a bound name's value, else its text). `filters`
    restrict by metadata: `tags` (any shared element) and each `where:` field.
    """

    query: str
    memory_source: str
    top_k: int
    alias: str | None
    options: dict[str, JSON]
    line: int = _position()
    column: int = _position()
    query_value: IRExpr = IRLiteral("")
    retrieval: str = "exact"
    filters: dict[str, JSON] = attrs.field(factory=dict)
    tiers: tuple[str, ...] | None = None
    """`with { tiers: [...] }` of a tiered memory: the tiers searched (None: all)."""
    min_score: float | None = None
    """The relevance floor, from `with { min_score: ... }` or the memory's; None: the default."""


@attrs.frozen(kw_only=True)
class IRForget(_Located):
    """`forget(key) from memory_source` or `forget from memory_source with { filter }`.

    Exactly one of `key` (an expression: a string literal, or a name whose bound
    value, a non-empty string, is the key) and `filters` (what a recall's `tags`
    and `where` would be, merged; never empty) is given. `key_text` is the key as
    written (a string's value, or the name), for messages; `options` the `with`
    fields as written.
    """

    memory_source: str
    key: IRExpr | None = None
    key_text: str | None = None
    filters: dict[str, JSON] = attrs.field(factory=dict)
    options: dict[str, JSON] = attrs.field(factory=dict)
    line: int = _position()
    column: int = _position()


@attrs.frozen
class IRStep(_Located):
    """`step Name { ... }`: a model-facing step; `output` names its result type."""

    name: str
    given: IRExpr | None
    ask: str | None
    output: str | None
    fields: dict[str, JSON]
    actions: tuple[IRStatement, ...]
    line: int = _position()
    column: int = _position()


@attrs.frozen(kw_only=True)
class IRCognitive(_Located):
    """`probe`, `reason`, `validate`, `refine`, `weave` or `use`: a model-facing operation.

    `target` is what it operates on (probe/validate/use; a validate's schema is
    `into`), `into` the result name (weave), `items` the list it takes (probe's
    aspects, weave's sources, use's arguments), `rules` a validate's `if` rules.
    Built by keyword only: each operation gives what it has, the rest is empty.
    """

    kind: str
    target: str | None = None
    into: str | None = None
    items: tuple[IRExpr, ...] = ()
    fields: dict[str, JSON] = attrs.field(factory=dict)
    rules: tuple[IRIf, ...] = ()
    line: int = _position()
    column: int = _position()


@attrs.frozen
class IRAction(_Located):
    """A bare action in an `if` branch: `refine(max_attempts: 2)`, `raise E`, `escalate`."""

    kind: str  # "call" | "raise" | "name"
    name: str
    arguments: dict[str, JSON]
    line: int = _position()
    column: int = _position()


@attrs.frozen
class IRComparison(_Node):
    """`left op right`, or a bare `left` tested for truth (`op` and `right` None)."""

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
class IRIf(_Located):
    """`if condition -> then else -> otherwise`."""

    condition: IRCondition
    then: tuple[IRStatement, ...]
    otherwise: tuple[IRStatement, ...]
    line: int = _position()
    column: int = _position()


@attrs.frozen
class IRParam(_Node):
    """A flow parameter: its name and its type as written (`Document`, `List<Party>`)."""

    name: str
    type: str | None


@attrs.frozen
class IRFlow(_Located):
    """A flow: parameters and its statements (`steps`) in source order.

    `returns` is the result type as written (`List<Summary>?`); `result_name` the
    name a `run` binds the result to for later statements: the type's base name
    (`List`), or None when the flow declares no result type.
    """

    name: str
    params: tuple[IRParam, ...]
    returns: str | None
    steps: tuple[IRStatement, ...]
    line: int = _position()
    column: int = _position()
    result_name: str | None = attrs.field(kw_only=True)


@attrs.frozen
class IRArg(_Node):
    """An argument of a `run`: positional (`name` None) or named."""

    name: str | None
    value: IRExpr


ON_FAILURE_KINDS = ("escalate", "log", "raise", "retry")
"""What `on_failure:` of a run can say."""


@attrs.frozen(kw_only=True)
class IROnFailure(_Node):
    """`on_failure:` of a run: what happens when the flow raises.

    `log`: the error is traced and the run ends quietly. `escalate`: the error
    stops the program. `retry(max_attempts: N, ...)`: the flow runs up to
    `max_attempts` times in all (default 3); `arguments` keeps every argument as
    written (`backoff: exponential`). `raise Name`: `error` names the error.
    """

    kind: str  # one of ON_FAILURE_KINDS
    max_attempts: int = 1
    error: str | None = None
    arguments: dict[str, JSON] = attrs.field(factory=dict)


@attrs.frozen
class IRRun(_Located):
    """`run Flow(args)` with its modifiers resolved (`on_failure` None when not given)."""

    flow: str
    args: tuple[IRArg, ...]
    persona: str | None
    context: str | None
    anchors: tuple[str, ...]
    on_failure: IROnFailure | None
    output_to: str | None
    effort: str | None
    line: int = _position()
    column: int = _position()


IRStatement: TypeAlias = (
    IRLet | IRRemember | IRRecall | IRForget | IRStep | IRCognitive | IRIf | IRAction | IRRun
)


@attrs.frozen(kw_only=True)
class IRProgram(_Node):
    """A checked program: its declarations by kind and its top-level statements in order."""

    ir_version: int = attrs.field(default=IR_VERSION, init=False)
    memories: tuple[IRMemory, ...] = ()
    flows: tuple[IRFlow, ...] = ()
    statements: tuple[IRStatement, ...] = ()
    personas: tuple[IRDeclaration, ...] = ()
    contexts: tuple[IRDeclaration, ...] = ()
    anchors: tuple[IRDeclaration, ...] = ()
    tools: tuple[IRDeclaration, ...] = ()
    intents: tuple[IRDeclaration, ...] = ()
    types: tuple[IRType, ...] = ()
    imports: tuple[IRImport, ...] = ()
    filename: str = "<input>"
    warnings: tuple[Diagnostic, ...] = attrs.field(default=(), eq=False)

    @property
    def runs(self) -> tuple[IRRun, ...]:
        """The top-level `run` statements, in order (they are also in `statements`)."""
        return tuple(s for s in self.statements if isinstance(s, IRRun))

    def memory(self, name: str) -> IRMemory | None:
        return next((m for m in self.memories if m.name == name), None)

    def flow(self, name: str) -> IRFlow | None:
        return next((f for f in self.flows if f.name == name), None)
