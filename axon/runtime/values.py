"""Bindings and evaluation: IR expressions and conditions -> Python values in a `Frame`.

A `Frame` maps names to values and remembers where each value came from (the
step that produced it, or a recall), which becomes the `source` metadata of a
remember and decides how a value is shown to a model.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import attrs

from axon.compiler import ir

_MISSING = object()

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    ">": operator.gt,
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}


class Unbound(LookupError):
    """A name was read that nothing bound; `name` is its dotted text, `why` (for a
    dotted name whose root is bound) what its value lacks."""

    def __init__(self, name: str, why: str | None = None) -> None:
        super().__init__(name)
        self.name = name
        self.why = why


@attrs.define
class Frame:
    """Names bound in a flow (or at top level), falling back to `parent`."""

    values: dict[str, Any] = attrs.field(factory=dict)
    sources: dict[str, str] = attrs.field(factory=dict)
    parent: Frame | None = None

    def bind(self, name: str, value: Any, source: str | None = None) -> None:
        self.values[name] = value
        if source is not None:
            self.sources[name] = source
        else:
            self.sources.pop(name, None)

    def lookup(self, name: str) -> Any:
        frame: Frame | None = self
        while frame is not None:
            if name in frame.values:
                return frame.values[name]
            frame = frame.parent
        return _MISSING

    def source_of(self, name: str) -> str | None:
        frame: Frame | None = self
        while frame is not None:
            if name in frame.values:
                return frame.sources.get(name)
            frame = frame.parent
        return None

    def child(self) -> Frame:
        return Frame(parent=self)


def _attribute(value: Any, part: str, text: str) -> Any:
    """`value.part`: a dict key, or `output` of a step result (the result itself)."""
    if isinstance(value, dict) and part in value:
        return value[part]
    if part == "output":
        return value
    if isinstance(value, dict):
        fields = ", ".join(sorted(str(name) for name in value)) or "none"
        raise Unbound(text, f"it has no field '{part}' (its fields: {fields})")
    raise Unbound(text, f"its value is a {type(value).__name__}, which has no field '{part}'")


def resolve_ref(ref: ir.IRRef, frame: Frame) -> Any:
    """The value of a (dotted) name; raises `Unbound` if its root is not bound."""
    value = frame.lookup(ref.path[0])
    if value is _MISSING:
        raise Unbound(ref.text)
    for part in ref.path[1:]:
        value = _attribute(value, part, ref.text)
    return value


def evaluate(value: ir.IRExpr, frame: Frame) -> Any:
    """The Python value of an expression; names must be bound (`Unbound` otherwise)."""
    match value:
        case ir.IRLiteral(value=v):
            return v
        case ir.IRRef():
            return resolve_ref(value, frame)
        case ir.IRList(items=items):
            return [evaluate(item, frame) for item in items]
        case ir.IRMap(entries=entries):
            return {k: evaluate(v, frame) for k, v in entries}
    raise TypeError(f"not an expression: {value!r}")


def evaluate_or_text(value: ir.IRExpr, frame: Frame) -> Any:
    """Like `evaluate`, but an unbound name stands for its own text (run args, queries)."""
    if isinstance(value, ir.IRRef):
        try:
            return resolve_ref(value, frame)
        except Unbound:
            return value.text
    return evaluate(value, frame)


def _operand(value: ir.IRExpr | None, frame: Frame) -> Any:
    if value is None:
        return None
    if isinstance(value, ir.IRRef):
        try:
            return resolve_ref(value, frame)
        except Unbound:
            return None
    return evaluate(value, frame)


def _comparison(comp: ir.IRComparison, frame: Frame) -> bool:
    left = _operand(comp.left, frame)
    if comp.op is None:
        return bool(left)
    right = _operand(comp.right, frame)
    try:
        return bool(_COMPARE[comp.op](left, right))
    except TypeError:
        return False


def condition_holds(cond: ir.IRCondition, frame: Frame) -> bool:
    """Evaluate `a op b (and|or c op d)*` left to right; unbound names are None (false)."""
    result = _comparison(cond.first, frame)
    for connective, comp in cond.rest:
        if connective == "and":
            result = result and _comparison(comp, frame)
        else:
            result = result or _comparison(comp, frame)
    return result
