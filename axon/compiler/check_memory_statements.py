"""Remember, recall and forget statements (AST) -> their IR, with every diagnostic: the
memory each names, its `with { ... }` options, tiers, retrieval mode and key.

The checker walks statements and keeps the names in scope; these are the three
statements that reach a memory, checked against the memory declarations (`check_memory`)
and the options rules (`check_options`). Each function takes its collaborators: the
symbol table (`symbols.SymbolTable`: declared memories, bound names, suggestions), the
`Reporter` its diagnostics go to and, for a recall's mode, the backend registry.
"""

from __future__ import annotations

import json

from axon.compiler import ast, ir
from axon.compiler.check_memory import DEFAULT_TOP_K, Reporter
from axon.compiler.check_options import (
    forget_options,
    key_problem,
    recall_options,
    remember_options,
    tier_membership_problem,
)
from axon.compiler.lowering import expr, names_in, plain, text_of, value_span
from axon.compiler.names import _a, key_for_literal, key_for_name
from axon.compiler.symbols import SymbolTable
from axon.memory.registry import BackendRegistry
from axon.source import NO_SPAN, Span

CONSTANT_OPTIONS = frozenset({"key", "tags", "metadata", "where", "related"})
"""`with` options whose values are data (a key, tags, metadata, a filter, keys), where
a name bound in the program would otherwise be read as its own text."""


def _written(options: ast.MapValue | None) -> dict[str, ir.JSON]:
    """A `with { ... }` as written, as plain data (the first of a duplicated name wins)."""
    out: dict[str, ir.JSON] = {}
    for f in options.fields if options else ():
        out.setdefault(f.name, plain(f.value))
    return out


def _memory_ref(
    names: SymbolTable,
    report: Reporter,
    op: str,
    role: str,
    name: str,
    span: Span,
    bound: set[str],
) -> ir.IRMemory | None:
    symbol = names.env.symbols.get(name)
    if symbol is None and name in bound:  # a let, a flow parameter or a step
        report.error(
            f"'{op}' {role} '{name}' is a bound name (a value), not a memory store"
            f"{names.suggest(name, 'memory')}",
            span,
        )
        return None
    if symbol is None:
        report.error(f"Undefined memory '{name}'{names.suggest(name, 'memory')}", span)
        return None
    if symbol.kind != "memory":
        report.error(
            f"'{op}' {role} '{name}' is {_a(symbol.kind)}, not a memory store",
            span,
        )
        return None
    memory = names.memories.get(name)
    if memory is None and isinstance(symbol.node, ir.IRMemory):
        memory = symbol.node
    return memory


def _check_constant_options(
    report: Reporter, options: ast.MapValue | None, bound: set[str]
) -> None:
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
            [g.value for g in f.value.fields] if isinstance(f.value, ast.MapValue) else [f.value]
        )
        values += [  # a `where` operator map: { n: { gte: t } }
            g.value for m in values if isinstance(m, ast.MapValue) for g in m.fields
        ]
        for value in values:
            for name in names_in(value):
                if name.parts[0] not in bound:
                    continue
                report.error(
                    f"'{name.text}' is a bound name, but the values of `with {{ {f.name}: "
                    f"... }}` are constants written in the program: a bare word there is "
                    f"its own text, not the value of '{name.text}'; write \"{name.text}\" "
                    f"for the text",
                    name.span if name.span != NO_SPAN else f.span,
                )


def check_remember(
    names: SymbolTable, report: Reporter, stmt: ast.Remember, bound: set[str], *, top: bool
) -> ir.IRRemember:
    memory = _memory_ref(
        names, report, "remember", "target", stmt.target, stmt.target_span, bound
    )
    names.check_refs(stmt.value, bound, "remember", stmt.span, report, top=top)
    _check_constant_options(report, stmt.options, bound)
    checked = remember_options(stmt.options, report)
    if memory is not None and checked.tier is not None and checked.tier_field is not None:
        _check_tiers(names, report, memory, checked.tier, checked.tier_field)
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


def _check_tiers(
    names: SymbolTable,
    report: Reporter,
    memory: ir.IRMemory,
    asked: str | tuple[str, ...],
    f: ast.Field,
) -> None:
    """`with { tier: ... }` / `with { tiers: [...] }` name tiers the memory has."""
    if not memory.tiers and memory.name in names.declares_tiers:
        return  # its `tiers:` is wrong, and that error is already reported
    problem = tier_membership_problem(
        memory.name, memory.tiers, asked if isinstance(asked, str) else list(asked)
    )
    if problem is not None:
        report.error(problem, value_span(f))


def check_recall(
    names: SymbolTable,
    report: Reporter,
    backends: BackendRegistry,
    stmt: ast.Recall,
    bound: set[str],
) -> ir.IRRecall:
    memory = _memory_ref(names, report, "recall", "source", stmt.source, stmt.source_span, bound)
    _check_constant_options(report, stmt.options, bound)
    checked = recall_options(stmt.options, report)
    top_k = checked.top_k or (memory.top_k if memory else DEFAULT_TOP_K)
    retrieval = memory.retrieval if memory else "exact"
    if checked.retrieval is not None and checked.retrieval_field is not None:
        retrieval = checked.retrieval
        _check_mode(backends, report, memory, retrieval, value_span(checked.retrieval_field))
    if memory is not None and checked.tiers is not None and checked.tiers_field is not None:
        _check_tiers(names, report, memory, checked.tiers, checked.tiers_field)
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
        min_score=checked.min_score if checked.min_score is not None else (
            memory.min_score if memory else None
        ),
    )


def check_forget(
    names: SymbolTable, report: Reporter, stmt: ast.Forget, bound: set[str], *, top: bool
) -> ir.IRForget:
    """A key (a non-empty string literal, or a name bound to one) or a filter, never both.

    Neither is an error: there is no statement that deletes every entry.
    """
    _memory_ref(names, report, "forget", "source", stmt.source, stmt.source_span, bound)
    filters: dict[str, ir.JSON] = {}
    key = stmt.key
    if key is not None:
        _forget_key(names, report, key, stmt, bound, top=top)
        if stmt.options is not None:
            report.error(
                f"forget takes a key or a filter, not both: forget(KEY) from {stmt.source} "
                f"deletes one entry, forget from {stmt.source} with {{ ... }} every entry "
                "the filter matches",
                stmt.options.span,
            )
    elif stmt.options is None or not stmt.options.fields:
        report.error(
            f'forget from {stmt.source} needs a key or a filter: forget("key") from '
            f"{stmt.source}, or forget from {stmt.source} with {{ tags: [...] }} "
            f"(or where: {{ field: value }}); there is no statement that deletes every entry",
            stmt.options.span if stmt.options is not None else stmt.span,
        )
    else:
        _check_constant_options(report, stmt.options, bound)
        filters = forget_options(stmt.options, report).filters
    return ir.IRForget(
        memory_source=stmt.source,
        key=expr(key) if key is not None else None,
        key_text=text_of(key) if key is not None else None,
        filters=filters,
        options=_written(stmt.options),
        line=stmt.span.line,
        column=stmt.span.column,
    )


def _forget_key(
    names: SymbolTable,
    report: Reporter,
    key: ast.Value,
    stmt: ast.Forget,
    bound: set[str],
    *,
    top: bool,
) -> None:
    span = key.span if key.span.line else stmt.span
    if isinstance(key, ast.Name):
        names.check_refs(key, bound, "forget", stmt.span, report, top=top)
    elif isinstance(key, ast.Literal) and isinstance(key.value, str):
        if problem := key_problem(key.value, " of forget"):
            report.error(problem, span)
    else:
        report.error(
            f"The key of forget must be a string or a name bound to one, got "
            f"{json.dumps(plain(key))}; to forget by metadata write forget from "
            f"{stmt.source} with {{ where: {{ field: value }} }}",
            span,
        )


def _check_mode(
    backends: BackendRegistry,
    report: Reporter,
    memory: ir.IRMemory | None,
    mode: str,
    span: Span,
) -> None:
    if memory is None:
        return
    info = backends.lookup(memory.backend)
    if info is None:
        return
    caps = info.resolved_capabilities()
    if mode not in caps.retrieval:
        report.error(
            f"Backend '{memory.backend}' of memory '{memory.name}' cannot do {mode} retrieval",
            span,
        )
