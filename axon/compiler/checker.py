"""AST -> IR: resolve names, apply defaults, and collect every diagnostic in one pass.

`check(program, source, env=...)` returns an `IRProgram` or raises `AxonCheckError`
holding all problems sorted by position. `env` carries what earlier inputs of the
same session declared and bound, so a REPL line is checked against everything
before it. Backend names and capabilities come from the memory registry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TypeAlias, assert_never

import attrs

from axon.compiler import ast, ir
from axon.compiler.check_memory import DEFAULT_TOP_K, Reporter, check_memory
from axon.compiler.check_options import (
    forget_options,
    key_problem,
    recall_options,
    remember_options,
    tier_membership_problem,
)
from axon.compiler.lowering import condition_text, expr, names_in, plain, text_of, value_span
from axon.compiler.names import Suggester, did_you_mean, key_for_literal, key_for_name
from axon.errors import AxonCheckError
from axon.memory.embeddings.availability import keyword_fallback_warning
from axon.memory.registry import BackendRegistry
from axon.memory.registry import registry as default_registry
from axon.source import NO_SPAN, Source, Span

CONSTANT_OPTIONS = frozenset({"key", "tags", "metadata", "where", "related"})
"""`with` options whose values are data (a key, tags, metadata, a filter, keys), where
a name bound in the program would otherwise be read as its own text."""

STEP_FIELDS = ("ask", "confidence_floor", "given", "output", "probe", "reason", "use", "weave")
EFFORTS = ("high", "low", "max", "medium")
ON_FAILURE = ir.ON_FAILURE_KINDS
DEFAULT_RETRY_ATTEMPTS = 3
"""Runs of a flow in all under `on_failure: retry(...)` without `max_attempts`."""


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


class Checker:
    """One pass over a program; see `check`."""

    def __init__(self, source: Source, env: CheckEnv | None, backends: BackendRegistry) -> None:
        self.source = source
        self.env = env.copy() if env else CheckEnv()
        self.backends = backends
        self.report = Reporter()
        self.memories: dict[str, ir.IRMemory] = {}
        # Memories whose declaration names `tiers:` (their IR has none when it was wrong:
        # that error is reported once, at the declaration, not again at every use).
        self._declares_tiers: set[str] = set()
        self.flows: dict[str, ir.IRFlow] = {}
        self._suggesters: dict[str, Suggester] = {}
        self._bound_names = Suggester()

    # ------------------------------------------------------------ reporting
    def error(self, message: str, span: Span) -> None:
        self.report.error(message, span)

    def warn(self, message: str, span: Span) -> None:
        self.report.warn(message, span)

    def _suggest(self, name: str, kind: str) -> str:
        """` (did you mean 'x'?)` among the declared names of one kind (fixed once declared)."""
        suggester = self._suggesters.get(kind)
        if suggester is None:
            suggester = Suggester(s.name for s in self.env.symbols.values() if s.kind == kind)
            self._suggesters[kind] = suggester
        return suggester.did_you_mean(name)

    # ------------------------------------------------------------ entry point
    def check(self, program: ast.Program) -> ir.IRProgram:
        self._declare(program.items)
        memories: list[ir.IRMemory] = []
        flows: list[ir.IRFlow] = []
        statements: list[ir.IRStatement] = []
        decls: dict[str, list[ir.IRDeclaration]] = {
            k: [] for k in ("persona", "context", "anchor", "tool", "intent")
        }
        types: list[ir.IRType] = []
        imports: list[ir.IRImport] = []
        # Memories first: flows and statements need their resolved settings.
        for item in program.items:
            if isinstance(item, ast.Declaration) and item.kind == "memory":
                memory = check_memory(item, self.backends, self.report)
                if fallback := keyword_fallback_warning(memory.name, memory.retrieval):
                    self.report.warn(fallback, item.span)
                self.memories[item.name] = memory
                memories.append(memory)
                if any(f.name == "tiers" for f in item.fields):
                    self._declares_tiers.add(item.name)
        # Then flows: a run may come before the flow it runs.
        for item in program.items:
            if isinstance(item, ast.Flow):
                self.flows[item.name] = self._flow(item)
        for item in program.items:
            match item:
                case ast.Declaration(kind="memory"):
                    pass
                case ast.Declaration():
                    decls[item.kind].append(
                        ir.IRDeclaration(
                            kind=item.kind,
                            name=item.name,
                            fields={f.name: plain(f.value) for f in item.fields},
                            line=item.span.line,
                            column=item.span.column,
                        )
                    )
                case ast.TypeDecl():
                    types.append(self._type(item))
                case ast.Import():
                    imports.append(
                        ir.IRImport(
                            module=".".join(item.module),
                            names=item.names,
                            line=item.span.line,
                            column=item.span.column,
                        )
                    )
                case ast.Flow():
                    flows.append(self.flows[item.name])
                case ast.Run():
                    statements.append(self._run(item))
                case ast.Let() | ast.Remember() | ast.Recall() | ast.Forget():
                    statements.extend(self._statements([item], self.env.bound, top=True))
                case _:
                    assert_never(item)
        if self.report.errors:
            raise AxonCheckError(self.report.errors, self.source)
        return ir.IRProgram(
            memories=tuple(memories),
            flows=tuple(flows),
            statements=tuple(statements),
            personas=tuple(decls["persona"]),
            contexts=tuple(decls["context"]),
            anchors=tuple(decls["anchor"]),
            tools=tuple(decls["tool"]),
            intents=tuple(decls["intent"]),
            types=tuple(types),
            imports=tuple(imports),
            filename=self.source.filename,
            warnings=tuple(sorted(self.report.warnings, key=lambda d: (d.line, d.column))),
        )

    # ------------------------------------------------------------ declarations
    def _declare(self, items: Iterable[ast.TopLevel]) -> None:
        for item in items:
            match item:
                case ast.Declaration(kind=kind, name=name):
                    pass
                case ast.TypeDecl(name=name):
                    kind = "type"
                case ast.Flow(name=name):
                    kind = "flow"
                case ast.Import(names=names):
                    for name in names:  # opaque: the module is not read (see `IMPORTED`)
                        if name not in self.env.symbols:
                            self.env.symbols[name] = Symbol(
                                IMPORTED, name, item.span.line, item.span.column
                            )
                    continue
                case _:
                    continue
            first = self.env.symbols.get(name)
            if first is not None and first.kind == IMPORTED:
                pass  # a declaration here names the thing itself: it replaces the import
            elif first is not None:
                self.error(
                    f"Duplicate declaration: '{name}' already defined as {first.kind} "
                    f"(first defined at line {first.line})",
                    item.span,
                )
                continue
            self.env.symbols[name] = Symbol(kind, name, item.span.line, item.span.column, node=item)

    def _type(self, decl: ast.TypeDecl) -> ir.IRType:
        if decl.range is not None:
            lo, hi = decl.range
            if lo > hi:
                self.error(
                    f"Empty range in type '{decl.name}': {lo} is greater than {hi}", decl.name_span
                )
            kind = "range"
        elif decl.where is not None:
            kind = "where"
        elif decl.alias is not None:
            kind = "alias"
        else:
            kind = "struct"
        seen: set[str] = set()
        for tf in decl.fields:
            if tf.name in seen:
                self.error(f"Duplicate field '{tf.name}' in type '{decl.name}'", tf.span)
            seen.add(tf.name)
        return ir.IRType(
            name=decl.name,
            kind=kind,
            range=decl.range,
            fields={tf.name: tf.type.text for tf in decl.fields},
            where=condition_text(decl.where) if decl.where else None,
            alias=decl.alias.text if decl.alias else None,
            line=decl.span.line,
            column=decl.span.column,
        )

    # ------------------------------------------------------------ flows and statements
    def _flow(self, flow: ast.Flow) -> ir.IRFlow:
        bound = set(self.env.bound) | {p.name for p in flow.params}
        seen: set[str] = set()
        for p in flow.params:
            if p.name in seen:
                self.error(f"Duplicate parameter '{p.name}' in flow '{flow.name}'", p.span)
            seen.add(p.name)
        steps = self._statements(flow.body, bound, top=False)
        first_step: dict[str, ast.Step] = {}
        for stmt in flow.body:
            if not isinstance(stmt, ast.Step):
                continue
            if stmt.name in first_step:  # every repeat, at the repeat
                line = first_step[stmt.name].span.line
                self.error(
                    f"Duplicate step '{stmt.name}' in flow '{flow.name}' "
                    f"(first defined at line {line})",
                    stmt.span,
                )
            else:
                first_step[stmt.name] = stmt
        return ir.IRFlow(
            name=flow.name,
            params=tuple(
                ir.IRParam(name=p.name, type=p.type.text if p.type else None) for p in flow.params
            ),
            returns=flow.returns.text if flow.returns else None,
            result_name=flow.returns.name if flow.returns else None,
            steps=steps,
            line=flow.span.line,
            column=flow.span.column,
        )

    def _statements(
        self, stmts: Iterable[ast.Statement], bound: set[str], *, top: bool
    ) -> tuple[ir.IRStatement, ...]:
        out: list[ir.IRStatement] = []
        for stmt in stmts:
            out.append(self._statement(stmt, bound, top=top))
        return tuple(out)

    def _statement(self, stmt: ast.Statement, bound: set[str], *, top: bool) -> ir.IRStatement:
        match stmt:
            case ast.Let(name=name, value=value):
                self._check_refs(value, bound, "let", stmt.span, top=top)
                bound.add(name)
                return ir.IRLet(
                    name=name, value=expr(value), line=stmt.span.line, column=stmt.span.column
                )
            case ast.Remember():
                return self._remember(stmt, bound, top=top)
            case ast.Recall():
                return self._recall(stmt, bound)
            case ast.Forget():
                return self._forget(stmt, bound, top=top)
            case ast.Step():
                return self._step(stmt, bound, top=top)
            case (
                ast.Probe() | ast.Reason() | ast.Validate() | ast.Refine() | ast.Weave() | ast.Use()
            ):
                return self._cognitive(stmt, bound, top=top)
            case ast.If():
                return self._if(stmt, bound, top=top)
            case ast.Action(value=value):
                return self._action(value, stmt.span)
            case _:
                assert_never(stmt)

    def _cognitive(
        self,
        stmt: ast.Probe | ast.Reason | ast.Validate | ast.Refine | ast.Weave | ast.Use,
        bound: set[str],
        *,
        top: bool,
    ) -> ir.IRCognitive:
        """A model-facing operation: what each kind operates on, takes and binds."""
        line, column = stmt.span.line, stmt.span.column
        match stmt:
            case ast.Probe(target=target, items=items):
                return ir.IRCognitive(
                    kind="probe",
                    target=target.text,
                    items=tuple(expr(i) for i in items.items),
                    line=line,
                    column=column,
                )
            case ast.Reason(about=about, fields=fields):
                return ir.IRCognitive(
                    kind="reason",
                    target=about.text if about else None,
                    fields=_plain_fields(fields),
                    line=line,
                    column=column,
                )
            case ast.Validate(target=target, schema=schema, fields=fields, rules=rules):
                return ir.IRCognitive(
                    kind="validate",
                    target=target.text,
                    into=schema.text,
                    fields=_plain_fields(fields),
                    rules=tuple(self._if(rule, bound, top=top) for rule in rules),
                    line=line,
                    column=column,
                )
            case ast.Refine(fields=fields):
                return ir.IRCognitive(
                    kind="refine", fields=_plain_fields(fields), line=line, column=column
                )
            case ast.Weave(sources=sources, target=target, fields=fields):
                bound.add(target.text)
                return ir.IRCognitive(
                    kind="weave",
                    into=target.text,
                    items=tuple(expr(i) for i in sources.items),
                    fields=_plain_fields(fields),
                    line=line,
                    column=column,
                )
            case ast.Use(tool=tool, args=args):
                self._check_tool(tool, stmt.span)
                return ir.IRCognitive(
                    kind="use",
                    target=tool.text,
                    items=tuple(expr(a.value) for a in args if a.name is None),
                    fields={a.name: plain(a.value) for a in args if a.name is not None},
                    line=line,
                    column=column,
                )
            case _:
                assert_never(stmt)

    def _action(self, value: ast.Call | ast.Raise | ast.Name, span: Span) -> ir.IRAction:
        line, column = span.line, span.column
        match value:
            case ast.Call(callee=callee, args=call_args):
                args = {a.name: plain(a.value) for a in call_args if a.name is not None}
                if positional := [plain(a.value) for a in call_args if a.name is None]:
                    args["args"] = positional
                return ir.IRAction(
                    kind="call", name=callee.text, arguments=args, line=line, column=column
                )
            case ast.Raise(error=error):
                return ir.IRAction(kind="raise", name=error, arguments={}, line=line, column=column)
            case ast.Name():
                return ir.IRAction(
                    kind="name", name=value.text, arguments={}, line=line, column=column
                )
            case _:
                assert_never(value)

    def _if(self, stmt: ast.If, bound: set[str], *, top: bool) -> ir.IRIf:
        cond = stmt.condition

        def comparison(c: ast.Comparison) -> ir.IRComparison:
            return ir.IRComparison(
                left=expr(c.left), op=c.op, right=expr(c.right) if c.right is not None else None
            )

        condition = ir.IRCondition(
            text=condition_text(cond),
            first=comparison(cond.first),
            rest=tuple((conn, comparison(c)) for conn, c in cond.rest),
        )
        then_bound = set(bound)
        else_bound = set(bound)
        then = self._statements(stmt.then, then_bound, top=top)
        otherwise = self._statements(stmt.otherwise, else_bound, top=top)
        bound |= then_bound | else_bound
        return ir.IRIf(
            condition=condition,
            then=then,
            otherwise=otherwise,
            line=stmt.span.line,
            column=stmt.span.column,
        )

    def _step(self, step: ast.Step, bound: set[str], *, top: bool) -> ir.IRStep:
        fields: dict[str, ir.JSON] = {}
        given: ir.IRExpr | None = None
        ask = output = None
        for f in step.fields:
            if f.name in fields:
                self.error(f"Duplicate field '{f.name}' in step '{step.name}'", f.span)
                continue
            if f.name not in STEP_FIELDS:
                self.warn(
                    f"Unknown field '{f.name}' in step '{step.name}'"
                    f"{did_you_mean(f.name, STEP_FIELDS)}",
                    f.span,
                )
            fields[f.name] = plain(f.value)
            if f.name == "given":
                given = expr(f.value)
            elif f.name == "ask":
                ask = text_of(f.value)
            elif f.name == "output":
                output = text_of(f.value)
            elif f.name == "use" and isinstance(f.value, ast.Call):
                self._check_tool(f.value.callee, f.span)
        actions = self._statements(step.actions, bound, top=top)
        bound.add(step.name)
        if output:
            bound.add(output)
        return ir.IRStep(
            name=step.name,
            given=given,
            ask=ask,
            output=output,
            fields=fields,
            actions=actions,
            line=step.span.line,
            column=step.span.column,
        )

    def _check_tool(self, tool: ast.Name, span: Span) -> None:
        symbol = self.env.symbols.get(tool.parts[0])
        if symbol is not None and symbol.kind not in ("tool", IMPORTED):
            self.error(f"'use' expects a tool, but '{tool.text}' is {_a(symbol.kind)}", span)

    def _memory_ref(
        self, op: str, role: str, name: str, span: Span, bound: set[str]
    ) -> ir.IRMemory | None:
        symbol = self.env.symbols.get(name)
        if symbol is None and name in bound:  # a let, a flow parameter or a step
            self.error(
                f"'{op}' {role} '{name}' is a bound name (a value), not a memory store"
                f"{self._suggest(name, 'memory')}",
                span,
            )
            return None
        if symbol is None:
            self.error(f"Undefined memory '{name}'{self._suggest(name, 'memory')}", span)
            return None
        if symbol.kind != "memory":
            self.error(
                f"'{op}' {role} '{name}' is {_a(symbol.kind)}, not a memory store",
                span,
            )
            return None
        memory = self.memories.get(name)
        if memory is None and isinstance(symbol.node, ir.IRMemory):
            memory = symbol.node
        return memory

    def _check_constant_options(self, options: ast.MapValue | None, bound: set[str]) -> None:
        """A bound name where a `with` option takes a constant is an error, never its text.

        `with { key: k }`, `metadata: { who: t }`, `where: { speaker: t }`, `tags: [t]`
        and `related: [k]` take their values as written: a bare word is the text of
        the word (`retrieval: semantic`, `tier: session`), so a flow parameter or a
        `let` name there would silently store or match the name itself. Names bound
        where the statement runs are refused instead, at the name.
        """
        if options is None:
            return
        for f in options.fields:
            if f.name not in CONSTANT_OPTIONS:
                continue
            values = (
                [g.value for g in f.value.fields]
                if isinstance(f.value, ast.MapValue)
                else [f.value]
            )
            for value in values:
                for name in names_in(value):
                    if name.parts[0] not in bound:
                        continue
                    self.error(
                        f"'{name.text}' is a bound name, but the values of `with {{ {f.name}: "
                        f"... }}` are constants written in the program: a bare word there is "
                        f"its own text, not the value of '{name.text}'; write \"{name.text}\" "
                        f"for the text",
                        name.span if name.span != NO_SPAN else f.span,
                    )

    def _remember(self, stmt: ast.Remember, bound: set[str], *, top: bool) -> ir.IRRemember:
        memory = self._memory_ref("remember", "target", stmt.target, stmt.target_span, bound)
        self._check_refs(stmt.value, bound, "remember", stmt.span, top=top)
        self._check_constant_options(stmt.options, bound)
        checked = remember_options(stmt.options, self.report)
        if memory is not None and checked.tier is not None and checked.tier_field is not None:
            self._check_tiers(memory, checked.tier, checked.tier_field)
        key = checked.key
        if key is None:
            if isinstance(stmt.value, ast.Name):
                key = key_for_name(stmt.value.parts)
            else:
                key = key_for_literal(plain(stmt.value))
        return ir.IRRemember(
            expression=text_of(stmt.value),
            memory_target=stmt.target,
            key=key,
            options=_written(stmt.options),
            line=stmt.span.line,
            column=stmt.span.column,
            value=expr(stmt.value),
            tags=checked.tags,
            importance=checked.importance,
            metadata=checked.metadata,
            type=checked.type,
            expires_in=checked.expires_in,
            related=checked.related,
            tier=checked.tier,
        )

    def _check_tiers(self, memory: ir.IRMemory, asked: str | tuple[str, ...], f: ast.Field) -> None:
        """`with { tier: ... }` / `with { tiers: [...] }` name tiers the memory has."""
        if not memory.tiers and memory.name in self._declares_tiers:
            return  # its `tiers:` is wrong, and that error is already reported
        problem = tier_membership_problem(
            memory.name, memory.tiers, asked if isinstance(asked, str) else list(asked)
        )
        if problem is not None:
            self.error(problem, value_span(f))

    def _recall(self, stmt: ast.Recall, bound: set[str]) -> ir.IRRecall:
        memory = self._memory_ref("recall", "source", stmt.source, stmt.source_span, bound)
        self._check_constant_options(stmt.options, bound)
        checked = recall_options(stmt.options, self.report)
        top_k = checked.top_k or (memory.top_k if memory else DEFAULT_TOP_K)
        retrieval = memory.retrieval if memory else "exact"
        if checked.retrieval is not None and checked.retrieval_field is not None:
            retrieval = checked.retrieval
            self._check_mode(memory, retrieval, value_span(checked.retrieval_field))
        if memory is not None and checked.tiers is not None and checked.tiers_field is not None:
            self._check_tiers(memory, checked.tiers, checked.tiers_field)
        bound.add(stmt.alias or stmt.source)
        return ir.IRRecall(
            query=text_of(stmt.query),
            memory_source=stmt.source,
            top_k=top_k,
            alias=stmt.alias,
            options=_written(stmt.options),
            line=stmt.span.line,
            column=stmt.span.column,
            query_value=expr(stmt.query),
            retrieval=retrieval,
            filters=checked.filters,
            tiers=checked.tiers,
        )

    def _forget(self, stmt: ast.Forget, bound: set[str], *, top: bool) -> ir.IRForget:
        """A key (a non-empty string literal, or a name bound to one) or a filter, never both.

        Neither is an error: there is no statement that deletes every entry.
        """
        self._memory_ref("forget", "source", stmt.source, stmt.source_span, bound)
        filters: dict[str, ir.JSON] = {}
        key = stmt.key
        if key is not None:
            self._forget_key(key, stmt, bound, top=top)
            if stmt.options is not None:
                self.error(
                    f"forget takes a key or a filter, not both: forget(KEY) from {stmt.source} "
                    f"deletes one entry, forget from {stmt.source} with {{ ... }} every entry "
                    "the filter matches",
                    stmt.options.span,
                )
        elif stmt.options is None or not stmt.options.fields:
            self.error(
                f'forget from {stmt.source} needs a key or a filter: forget("key") from '
                f"{stmt.source}, or forget from {stmt.source} with {{ tags: [...] }} "
                f"(or where: {{ field: value }}); there is no statement that deletes every entry",
                stmt.options.span if stmt.options is not None else stmt.span,
            )
        else:
            self._check_constant_options(stmt.options, bound)
            filters = forget_options(stmt.options, self.report).filters
        return ir.IRForget(
            memory_source=stmt.source,
            key=expr(key) if key is not None else None,
            key_text=text_of(key) if key is not None else None,
            filters=filters,
            options=_written(stmt.options),
            line=stmt.span.line,
            column=stmt.span.column,
        )

    def _forget_key(self, key: ast.Value, stmt: ast.Forget, bound: set[str], *, top: bool) -> None:
        span = key.span if key.span.line else stmt.span
        if isinstance(key, ast.Name):
            self._check_refs(key, bound, "forget", stmt.span, top=top)
        elif isinstance(key, ast.Literal) and isinstance(key.value, str):
            if problem := key_problem(key.value, " of forget"):
                self.error(problem, span)
        else:
            self.error(
                f"The key of forget must be a string or a name bound to one, got "
                f"{json.dumps(plain(key))}; to forget by metadata write forget from "
                f"{stmt.source} with {{ where: {{ field: value }} }}",
                span,
            )

    def _check_mode(self, memory: ir.IRMemory | None, mode: str, span: Span) -> None:
        if memory is None:
            return
        info = self.backends.lookup(memory.backend)
        if info is None:
            return
        caps = info.resolved_capabilities()
        if mode not in caps.retrieval:
            self.error(
                f"Backend '{memory.backend}' of memory '{memory.name}' cannot do {mode} retrieval",
                span,
            )

    def _check_refs(
        self, value: ast.Value, bound: set[str], op: str, span: Span, *, top: bool
    ) -> None:
        """Names a statement reads must be bound; an error at top level, a warning in flows.

        A value is also never a duration-like word (`3d`, `1e3`, `7x`, `0x10`): the lexer
        reads those as durations, which only fields and options such as `decay:` and
        `expires_in:` take, so as a value each is an error at the word rather than its
        text stored in silence.
        """
        for word in _durations_in(value):
            self.error(
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
                f"{self._suggest_bound(root, bound)}"
            )
            if top:
                self.error(message, name.span if name.span != NO_SPAN else span)
            else:
                self.warn(message, name.span if name.span != NO_SPAN else span)

    def _suggest_bound(self, name: str, bound: set[str]) -> str:
        """` (did you mean 'x'?)` among the names bound here (one index for every scope)."""
        self._bound_names.update(bound)
        return self._bound_names.did_you_mean(name, bound)

    def _run(self, run: ast.Run) -> ir.IRRun:
        flow_name = run.flow.text
        flow_node = self._run_target(run)
        self._expect_kind(run.persona, "persona", "as", run.persona_span)
        self._expect_kind(run.context, "context", "within", run.context_span)
        for anchor, span in zip(run.anchors, run.anchor_spans, strict=False):
            self._expect_kind(anchor, "anchor", "constrained_by", span)
        if flow_node is not None:
            self._check_args(run, flow_node)
        on_failure: ir.IROnFailure | None = None
        output_to = effort = None
        for f in run.options:
            if f.name == "on_failure":
                on_failure = self._on_failure(f)
            elif f.name == "output_to":
                output_to = self._output_to(f)
            elif f.name == "effort":
                effort = self._effort(f)
        # A run binds the flow's result (and its steps' outputs) for later statements.
        self.env.bound.add(flow_name)
        if flow_node is not None:
            self.env.bound |= run_bindings(flow_node)
        return ir.IRRun(
            flow=flow_name,
            args=tuple(ir.IRArg(name=a.name, value=expr(a.value)) for a in run.args),
            persona=run.persona,
            context=run.context,
            anchors=run.anchors,
            on_failure=on_failure,
            output_to=output_to,
            effort=effort,
            line=run.span.line,
            column=run.span.column,
        )

    def _run_target(self, run: ast.Run) -> ir.IRFlow | None:
        """The flow a run names (checked here or by an earlier input), or None with an error."""
        flow_name = run.flow.text
        symbol = self.env.symbols.get(flow_name)
        if symbol is None:
            self.error(
                f"Undefined flow '{flow_name}'{self._suggest(flow_name, 'flow')}", run.flow.span
            )
            return None
        if symbol.kind != "flow":
            self.error(
                f"'run' expects a flow, but '{flow_name}' is {_a(symbol.kind)}", run.flow.span
            )
            return None
        flow_node = self.flows.get(flow_name)
        if flow_node is None and isinstance(symbol.node, ir.IRFlow):
            flow_node = symbol.node
        return flow_node

    def _check_args(self, run: ast.Run, flow: ir.IRFlow) -> None:
        """A run passes one argument per parameter of the flow (positional ones in order,
        named ones by their names): too many, an unknown name, or a parameter left
        without a value (it would be unbound when the flow reads it) is an error."""
        params = flow.params
        given = len(run.args)
        takes = f"Flow '{flow.name}' takes {len(params)} argument{'' if len(params) == 1 else 's'}"
        if given > len(params):
            self.error(f"{takes} but {given} were given", run.flow.span)
            return
        names = {p.name for p in params}
        filled = {p.name for p, arg in zip(params, run.args, strict=False) if arg.name is None}
        unknown = False  # an unknown name is its own error: no "missing" beside it
        for arg in run.args:
            if arg.name is None:
                continue
            if arg.name not in names:
                unknown = True
                self.error(
                    f"Flow '{flow.name}' has no parameter '{arg.name}'"
                    f"{did_you_mean(arg.name, names)}",
                    arg.span,
                )
            filled.add(arg.name)
        missing = [p.name for p in params if p.name not in filled]
        if missing and not unknown:
            self.error(
                f"{takes} but {given} {'was' if given == 1 else 'were'} given "
                f"(missing {', '.join(repr(name) for name in missing)})",
                run.flow.span,
            )

    def _on_failure(self, f: ast.Field) -> ir.IROnFailure | None:
        """`on_failure: log | escalate | retry(...) | raise Name`, or None with an error."""
        value = plain(f.value)
        match f.value:
            case ast.Call(callee=callee, args=args) if callee.text in ON_FAILURE:
                kind = callee.text
            case ast.Raise(error=error):
                return ir.IROnFailure(kind="raise", error=error)
            case _ if isinstance(value, str) and value in ON_FAILURE:
                kind, args = value, ()
            case _:
                self.error(
                    f"Invalid on_failure {json.dumps(value)}. "
                    "Valid: log, escalate, retry(...), raise ErrorName",
                    value_span(f),
                )
                return None
        arguments: dict[str, ir.JSON] = {a.name: plain(a.value) for a in args if a.name is not None}
        if positional := [plain(a.value) for a in args if a.name is None]:
            arguments["args"] = positional
        if kind != "retry":
            return ir.IROnFailure(kind=kind, arguments=arguments)
        attempts = DEFAULT_RETRY_ATTEMPTS
        for arg in args:
            if arg.name == "max_attempts":
                given = arg.value
                if (
                    isinstance(given, ast.Literal)
                    and isinstance(given.value, int)
                    and not isinstance(given.value, bool)
                    and given.value >= 1
                ):
                    attempts = given.value
                else:
                    self.error(
                        "max_attempts of on_failure retry must be a positive integer, "
                        f"got {json.dumps(plain(given))}",
                        arg.span if arg.span.line else value_span(f),
                    )
        return ir.IROnFailure(kind="retry", max_attempts=attempts, arguments=arguments)

    def _output_to(self, f: ast.Field) -> str | None:
        value = plain(f.value)
        if isinstance(value, str):
            return value
        self.error("output_to must be a string (a file name)", value_span(f))
        return None

    def _effort(self, f: ast.Field) -> str | None:
        value = plain(f.value)
        if isinstance(value, str) and value in EFFORTS:
            return value
        self.error(
            f"Invalid effort {json.dumps(value)}. Valid: {', '.join(EFFORTS)}", value_span(f)
        )
        return None

    def _expect_kind(self, name: str | None, kind: str, keyword: str, span: Span) -> None:
        if name is None:
            return
        symbol = self.env.symbols.get(name)
        if symbol is None:
            self.error(f"Undefined {kind} '{name}'{self._suggest(name, kind)}", span)
        elif symbol.kind != kind and symbol.kind != IMPORTED:
            self.error(f"'{keyword}' expects {_a(kind)}, but '{name}' is {_a(symbol.kind)}", span)


def _written(options: ast.MapValue | None) -> dict[str, ir.JSON]:
    """A `with { ... }` as written, as plain data (the first of a duplicated name wins)."""
    out: dict[str, ir.JSON] = {}
    for f in options.fields if options else ():
        out.setdefault(f.name, plain(f.value))
    return out


def _plain_fields(fields: Iterable[ast.Field]) -> dict[str, ir.JSON]:
    """Fields as plain data by name (the last of a duplicated name wins)."""
    return {f.name: plain(f.value) for f in fields}


def check(
    program: ast.Program,
    source: Source,
    *,
    env: CheckEnv | None = None,
    backends: BackendRegistry | None = None,
) -> ir.IRProgram:
    """Check a parsed program and return its IR; raises `AxonCheckError` with every problem.

    With `env`, names declared and bound by earlier inputs are known, and
    redeclaring one is a duplicate. `env` itself is not modified; use
    `extend_env` after a successful check.
    """
    return Checker(source, env, backends or default_registry).check(program)


def run_bindings(flow: ir.IRFlow) -> set[str]:
    """Names a `run` of `flow` binds for later statements: its return type, steps, outputs."""
    names = {flow.name}
    if flow.result_name:
        names.add(flow.result_name)
    for step in flow.steps:
        if isinstance(step, ir.IRStep):
            names.add(step.name)
            if step.output:
                names.add(step.output)
        elif isinstance(step, ir.IRCognitive) and step.into:
            names.add(step.into)
    return names


def extend_env(env: CheckEnv, program: ir.IRProgram) -> None:
    """Record what a checked program declares and binds into a session's `env`."""
    for memory in program.memories:
        env.symbols[memory.name] = Symbol("memory", memory.name, memory.line, memory.column, memory)
    for flow in program.flows:
        env.symbols[flow.name] = Symbol("flow", flow.name, flow.line, flow.column, flow)
    for group in (
        program.personas,
        program.contexts,
        program.anchors,
        program.tools,
        program.intents,
    ):
        for decl in group:
            env.symbols[decl.name] = Symbol(decl.kind, decl.name, decl.line, decl.column, decl)
    for t in program.types:
        env.symbols[t.name] = Symbol("type", t.name, t.line, t.column, t)
    for stmt in program.statements:
        match stmt:
            case ir.IRLet(name=name):
                env.bound.add(name)
            case ir.IRRecall(alias=alias, memory_source=source_name):
                env.bound.add(alias or source_name)
            case ir.IRRun(flow=flow_name):
                env.bound.add(flow_name)
                symbol = env.symbols.get(flow_name)
                if symbol is not None and isinstance(symbol.node, ir.IRFlow):
                    env.bound |= run_bindings(symbol.node)
            case _:
                pass


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


def _a(kind: str) -> str:
    """`kind` with its indefinite article: "a flow", "an imported name", "an intent"."""
    return f"{'an' if kind[:1] in ('a', 'e', 'i', 'o', 'u') else 'a'} {kind}"
