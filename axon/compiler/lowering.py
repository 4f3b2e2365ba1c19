"""AST values -> IR data: the conversions the checker applies to every value it keeps.

`plain` gives JSON data (names as their text), `expr` an IR expression (names stay
references to be evaluated at run time), `text_of` the text a remember or recall
argument is reported as.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import assert_never

from axon.compiler import ast, ir
from axon.source import NO_SPAN, Span


def plain(value: ast.Value) -> ir.JSON:
    """A field value as plain JSON data (names as their text)."""
    match value:
        case ast.Literal(value=v):
            return v
        case ast.Name():
            return value.text
        case ast.Duration(text=t):
            return t
        case ast.ListValue(items=items):
            return [plain(item) for item in items]
        case ast.MapValue(fields=fields):
            return {f.name: plain(f.value) for f in fields}
        case ast.Call(callee=callee, args=args):
            return {
                "call": callee.text,
                "args": [plain(a.value) for a in args if a.name is None],
                "kwargs": {a.name: plain(a.value) for a in args if a.name is not None},
            }
        case ast.Raise(error=error):
            return {"raise": error}
        case ast.TypeRef():
            return value.text
        case _:
            assert_never(value)


def expr(value: ast.Value) -> ir.IRExpr:
    """A value as an IR expression: names stay references, constants fold to literals."""
    match value:
        case ast.Name(parts=parts):
            return ir.IRRef(parts)
        case ast.ListValue(items=items):
            converted = tuple(expr(item) for item in items)
            if all(isinstance(item, ir.IRLiteral) for item in converted):
                return ir.IRLiteral([item.value for item in converted])  # type: ignore[union-attr]
            return ir.IRList(converted)
        case ast.MapValue(fields=fields):
            entries = tuple((f.name, expr(f.value)) for f in fields)
            if all(isinstance(v, ir.IRLiteral) for _, v in entries):
                return ir.IRLiteral({k: v.value for k, v in entries})  # type: ignore[union-attr]
            return ir.IRMap(entries)
        case _:
            return ir.IRLiteral(plain(value))


def text_of(value: ast.Value) -> str:
    """The argument of remember/recall as text: a name, or a literal's value."""
    match value:
        case ast.Name():
            return value.text
        case ast.Literal(value=v) if isinstance(v, str):
            return v
        case _:
            return json.dumps(plain(value), ensure_ascii=False)


def condition_text(cond: ast.Condition) -> str:
    def operand(o: ast.Literal | ast.Name | ast.Duration) -> str:
        if isinstance(o, ast.Literal) and isinstance(o.value, str):
            return json.dumps(o.value)
        if isinstance(o, ast.Literal) and isinstance(o.value, bool):
            return "true" if o.value else "false"
        return str(plain(o))

    def comparison(c: ast.Comparison) -> str:
        if c.op is None or c.right is None:
            return operand(c.left)
        return f"{operand(c.left)} {c.op} {operand(c.right)}"

    parts = [comparison(cond.first)]
    for connective, comp in cond.rest:
        parts.append(f"{connective} {comparison(comp)}")
    return " ".join(parts)


def names_in(value: ast.Value) -> Iterable[ast.Name]:
    match value:
        case ast.Name():
            yield value
        case ast.ListValue(items=items):
            for item in items:
                yield from names_in(item)
        case _:
            return


def value_span(f: ast.Field) -> Span:
    span = getattr(f.value, "span", NO_SPAN)
    return span if isinstance(span, Span) and span.line else f.span
