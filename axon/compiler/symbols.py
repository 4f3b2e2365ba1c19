"""Declarations and bindings -> the checker's symbol table: what each name is, where it
was declared, and the diagnostics for a name used as what it is not.

The checker fills a `SymbolTable` as it walks a program (declared names in `env`,
checked memories and flows by name); the statement checks (`check_memory_statements`,
`check_runs`) read it and report through the same `Reporter`. `CheckEnv` is what a
session keeps between inputs, so a REPL line sees the names declared before it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeAlias

import attrs

from axon.compiler import ast, ir
from axon.compiler.check_memory import Reporter
from axon.compiler.lowering import names_in
from axon.compiler.names import Suggester, _a
from axon.source import NO_SPAN, Span

SymbolNode: TypeAlias = (
    ast.Declaration
    | ast.TypeDecl
    | ast.Flow
    | ir.IRMemory
    | ir.IRFlow
    | ir.IRDeclaration
    | ir.IRType
    | None
)


IMPORTED = "imported name"
"""The kind of a name brought in by `import a.b.{X}`: the module is not read, so the
name stands for a persona, context, anchor or tool declared elsewhere, and a
reference that needs one of those accepts it (a memory or a flow must be here)."""


@attrs.frozen
class Symbol:
    """A declared name: what kind of thing it is and where it was declared."""

    kind: str
    name: str
    line: int
    column: int
    node: SymbolNode = attrs.field(default=None, eq=False)
    """The declaration: its AST while its input is checked, its IR once checked."""


@attrs.define
class CheckEnv:
    """What earlier inputs of a session declared (`symbols`) and bound (`bound`)."""

    symbols: dict[str, Symbol] = attrs.field(factory=dict)
    bound: set[str] = attrs.field(factory=set)

    def copy(self) -> CheckEnv:
        return CheckEnv(dict(self.symbols), set(self.bound))


class SymbolTable:
    """The names of one check: declared (`env`), checked memories and flows, and the
    suggestions for a misspelt one."""

    def __init__(self, env: CheckEnv) -> None:
        self.env = env
        self.memories: dict[str, ir.IRMemory] = {}
        self.flows: dict[str, ir.IRFlow] = {}
        self.declares_tiers: set[str] = set()
        """Memories whose declaration names `tiers:` (their IR has none when it was wrong:
        that error is reported once, at the declaration, not again at every use)."""
        self._suggesters: dict[str, Suggester] = {}
        self._bound_names = Suggester()

    def suggest(self, name: str, kind: str) -> str:
        """` (did you mean 'x'?)` among the declared names of one kind (fixed once declared)."""
        suggester = self._suggesters.get(kind)
        if suggester is None:
            suggester = Suggester(s.name for s in self.env.symbols.values() if s.kind == kind)
            self._suggesters[kind] = suggester
        return suggester.did_you_mean(name)

    def suggest_bound(self, name: str, bound: set[str]) -> str:
        """` (did you mean 'x'?)` among the names bound here (one index for every scope)."""
        self._bound_names.update(bound)
        return self._bound_names.did_you_mean(name, bound)

    def expect_kind(
        self, name: str | None, kind: str, keyword: str, span: Span, report: Reporter
    ) -> None:
        """`name` (when given) must be declared as a `kind` (or imported)."""
        if name is None:
            return
        symbol = self.env.symbols.get(name)
        if symbol is None:
            report.error(f"Undefined {kind} '{name}'{self.suggest(name, kind)}", span)
        elif symbol.kind != kind and symbol.kind != IMPORTED:
            report.error(
                f"'{keyword}' expects {_a(kind)}, but '{name}' is {_a(symbol.kind)}", span
            )

    def check_refs(
        self,
        value: ast.Value,
        bound: set[str],
        op: str,
        span: Span,
        report: Reporter,
        *,
        top: bool,
    ) -> None:
        """Names a statement reads must be bound; an error at top level, a warning in flows.

        A value is also never a duration-like word (`3d`, `1e3`, `7x`, `0x10`): the lexer
        reads those as durations, which only fields and options such as `decay:` and
        `expires_in:` take, so as a value each is an error at the word rather than its
        text stored in silence.
        """
        for word in _durations_in(value):
            report.error(
                f"'{word.text}' is not a value: a number is written 42, 0.85 or -4.5, a "
                f'text in quotes ("{word.text}"); durations such as 3d are for decay: and '
                "expires_in:",
                word.span if word.span != NO_SPAN else span,
            )
        for name in names_in(value):
            root = name.parts[0]
            if root in bound:
                continue
            message = (
                f"Unbound name '{name.text}' in {op}: bind it first "
                f'(let, a step, a recall ... as) or write a literal such as "{name.text}"'
                f"{self.suggest_bound(root, bound)}"
            )
            if top:
                report.error(message, name.span if name.span != NO_SPAN else span)
            else:
                report.warn(message, name.span if name.span != NO_SPAN else span)


def _durations_in(value: ast.Value) -> Iterator[ast.Duration]:
    """The duration words of a value, in lists and maps too."""
    match value:
        case ast.Duration():
            yield value
        case ast.ListValue(items=items):
            for item in items:
                yield from _durations_in(item)
        case ast.MapValue(fields=fields):
            for f in fields:
                yield from _durations_in(f.value)
        case _:
            return
