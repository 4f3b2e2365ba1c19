"""AST -> IR: resolve names, apply defaults, and collect every diagnostic in one pass.

`check(program, source, env=...)` returns an `IRProgram` or raises `AxonCheckError`
holding all problems sorted by position. `env` carries what earlier inputs of the
same session declared and bound, so a REPL line is checked against everything
before it. Backend names and capabilities come from the memory registry.
The checker walks the program and fills the symbol table (`symbols`); remember,
recall and forget are checked by `check_memory_statements`, a run by `check_runs`,
memory declarations by `check_memory`: each is given the table and the `Reporter`,
never the checker.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import assert_never

from axon.compiler import ast, ir
from axon.compiler.check_memory import Reporter, check_memory
from axon.compiler.check_memory_statements import (
    CONSTANT_OPTIONS as CONSTANT_OPTIONS,
)
from axon.compiler.check_memory_statements import check_forget, check_recall, check_remember
from axon.compiler.check_runs import DEFAULT_RETRY_ATTEMPTS as DEFAULT_RETRY_ATTEMPTS
from axon.compiler.check_runs import EFFORTS as EFFORTS
from axon.compiler.check_runs import ON_FAILURE as ON_FAILURE
from axon.compiler.check_runs import check_run
from axon.compiler.check_runs import run_bindings as run_bindings
from axon.compiler.lowering import condition_text, expr, plain, text_of
from axon.compiler.names import _a, did_you_mean
from axon.compiler.symbols import IMPORTED as IMPORTED
from axon.compiler.symbols import CheckEnv as CheckEnv
from axon.compiler.symbols import Symbol as Symbol
from axon.compiler.symbols import SymbolTable
from axon.errors import AxonCheckError
from axon.memory.embeddings.availability import keyword_fallback_warning
from axon.memory.registry import BackendRegistry
from axon.memory.registry import registry as default_registry
from axon.source import Source, Span

STEP_FIELDS = ("ask", "confidence_floor", "given", "output", "probe", "reason", "use", "weave")


class Checker:
    """One pass over a program; see `check`."""

    def __init__(self, source: Source, env: CheckEnv | None, backends: BackendRegistry) -> None:
        self.source = source
        self.names = SymbolTable(env.copy() if env else CheckEnv())
        self.env = self.names.env
        self.backends = backends
        self.report = Reporter()

    # ------------------------------------------------------------ reporting
    def error(self, message: str, span: Span) -> None:
        self.report.error(message, span)

    def warn(self, message: str, span: Span) -> None:
        self.report.warn(message, span)

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
                self.names.memories[item.name] = memory
                memories.append(memory)
                if any(f.name == "tiers" for f in item.fields):
                    self.names.declares_tiers.add(item.name)
        # Then flows: a run may come before the flow it runs.
        for item in program.items:
            if isinstance(item, ast.Flow):
                self.names.flows[item.name] = self._flow(item)
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
                    flows.append(self.names.flows[item.name])
                case ast.Run():
                    statements.append(check_run(self.names, self.report, item))
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
                self.names.check_refs(value, bound, "let", stmt.span, self.report, top=top)
                bound.add(name)
                return ir.IRLet(
                    name=name, value=expr(value), line=stmt.span.line, column=stmt.span.column
                )
            case ast.Remember():
                return check_remember(self.names, self.report, stmt, bound, top=top)
            case ast.Recall():
                return check_recall(self.names, self.report, self.backends, stmt, bound)
            case ast.Forget():
                return check_forget(self.names, self.report, stmt, bound, top=top)
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
