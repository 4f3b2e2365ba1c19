"""A `run` statement (AST) -> its IR, with every diagnostic: the flow it names, its
arguments against the flow's parameters, the kinds of `as`, `within` and
`constrained_by`, and its options (`on_failure`, `output_to`, `effort`).

A run is checked against flows rather than memories and has options of its own.
`check_run` takes its collaborators: the symbol table (`symbols.SymbolTable`: declared
names, checked flows, bound names) and the `Reporter` its diagnostics go to;
`run_bindings` is what a run binds for later statements.
"""

from __future__ import annotations

import json

from axon.compiler import ast, ir
from axon.compiler.check_memory import Reporter
from axon.compiler.lowering import expr, plain, value_span
from axon.compiler.names import _a, did_you_mean
from axon.compiler.symbols import SymbolTable

EFFORTS = ("high", "low", "max", "medium")
ON_FAILURE = ir.ON_FAILURE_KINDS
DEFAULT_RETRY_ATTEMPTS = 3
"""Runs of a flow in all under `on_failure: retry(...)` without `max_attempts`."""


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


def check_run(names: SymbolTable, report: Reporter, run: ast.Run) -> ir.IRRun:
    flow_name = run.flow.text
    flow_node = _run_target(names, report, run)
    names.expect_kind(run.persona, "persona", "as", run.persona_span, report)
    names.expect_kind(run.context, "context", "within", run.context_span, report)
    for anchor, span in zip(run.anchors, run.anchor_spans, strict=False):
        names.expect_kind(anchor, "anchor", "constrained_by", span, report)
    if flow_node is not None:
        _check_args(report, run, flow_node)
    on_failure: ir.IROnFailure | None = None
    output_to = effort = None
    for f in run.options:
        if f.name == "on_failure":
            on_failure = _on_failure(report, f)
        elif f.name == "output_to":
            output_to = _output_to(report, f)
        elif f.name == "effort":
            effort = _effort(report, f)
    # A run binds the flow's result (and its steps' outputs) for later statements.
    names.env.bound.add(flow_name)
    if flow_node is not None:
        names.env.bound |= run_bindings(flow_node)
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


def _run_target(names: SymbolTable, report: Reporter, run: ast.Run) -> ir.IRFlow | None:
    """The flow a run names (checked here or by an earlier input), or None with an error."""
    flow_name = run.flow.text
    symbol = names.env.symbols.get(flow_name)
    if symbol is None:
        report.error(
            f"Undefined flow '{flow_name}'{names.suggest(flow_name, 'flow')}", run.flow.span
        )
        return None
    if symbol.kind != "flow":
        report.error(
            f"'run' expects a flow, but '{flow_name}' is {_a(symbol.kind)}", run.flow.span
        )
        return None
    flow_node = names.flows.get(flow_name)
    if flow_node is None and isinstance(symbol.node, ir.IRFlow):
        flow_node = symbol.node
    return flow_node


def _check_args(report: Reporter, run: ast.Run, flow: ir.IRFlow) -> None:
    """A run passes one argument per parameter of the flow (positional ones in order,
    named ones by their names): too many, an unknown name, or a parameter left
    without a value (it would be unbound when the flow reads it) is an error."""
    params = flow.params
    given = len(run.args)
    takes = f"Flow '{flow.name}' takes {len(params)} argument{'' if len(params) == 1 else 's'}"
    if given > len(params):
        report.error(f"{takes} but {given} were given", run.flow.span)
        return
    names = {p.name for p in params}
    filled = {p.name for p, arg in zip(params, run.args, strict=False) if arg.name is None}
    unknown = False  # an unknown name is its own error: no "missing" beside it
    for arg in run.args:
        if arg.name is None:
            continue
        if arg.name not in names:
            unknown = True
            report.error(
                f"Flow '{flow.name}' has no parameter '{arg.name}'{did_you_mean(arg.name, names)}",
                arg.span,
            )
        filled.add(arg.name)
    missing = [p.name for p in params if p.name not in filled]
    if missing and not unknown:
        report.error(
            f"{takes} but {given} {'was' if given == 1 else 'were'} given "
            f"(missing {', '.join(repr(name) for name in missing)})",
            run.flow.span,
        )


def _on_failure(report: Reporter, f: ast.Field) -> ir.IROnFailure | None:
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
            report.error(
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
                report.error(
                    "max_attempts of on_failure retry must be a positive integer, "
                    f"got {json.dumps(plain(given))}",
                    arg.span if arg.span.line else value_span(f),
                )
    return ir.IROnFailure(kind="retry", max_attempts=attempts, arguments=arguments)


def _output_to(report: Reporter, f: ast.Field) -> str | None:
    value = plain(f.value)
    if isinstance(value, str):
        return value
    report.error("output_to must be a string (a file name)", value_span(f))
    return None


def _effort(report: Reporter, f: ast.Field) -> str | None:
    value = plain(f.value)
    if isinstance(value, str) and value in EFFORTS:
        return value
    report.error(f"Invalid effort {json.dumps(value)}. Valid: {', '.join(EFFORTS)}", value_span(f))
    return None
