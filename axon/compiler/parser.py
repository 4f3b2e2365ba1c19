"""Source text -> AST: the Lark LALR parser with an inline transformer (no parse tree).

`parse(source, filename=...)` returns an `ast.Program` or raises `AxonSyntaxError`
(and nothing else, whatever the text). The grammar is loaded once and cached;
callbacks build AST nodes directly as the parser reduces, which is what makes
the front end fast.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import lark
from lark import Token

from axon.compiler import ast, lexer
from axon.compiler.grammar_cache import parser_cache_file
from axon.compiler.syntax_errors import translate
from axon.errors import AxonSyntaxError
from axon.source import MAX_SOURCE_BYTES, Source, Span, position_of, utf8_length

GRAMMAR_PATH = Path(__file__).resolve().parent.parent / "grammar" / "axon.lark"
"""The grammar, shipped as package data (`axon/grammar/axon.lark`)."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def _span(tok: Token) -> Span:
    return Span(tok.line or 0, tok.column or 0, tok.end_line, tok.end_column)


def _start(node: Any) -> Span:
    """The span of a token or node (nodes without one report nothing)."""
    if isinstance(node, Token):
        return _span(node)
    span = getattr(node, "span", None)
    return span if isinstance(span, Span) else Span(0, 0)


def _to(first: Span, last: Any) -> Span:
    """A span from the start of `first` to the end of `last`."""
    end = _start(last)
    end_line = end.end_line if end.end_line is not None else end.line
    end_col = end.end_column if end.end_column is not None else end.column
    return Span(first.line, first.column, end_line, end_col)


def _args(children: list[Any]) -> tuple[ast.Arg, ...]:
    return tuple(c for c in children if isinstance(c, ast.Arg))


class _Builder(lark.Transformer[Token, Any]):
    """Callbacks run by the LALR parser on each reduction; each returns an AST node."""

    # ------------------------------------------------------------ values
    def string(self, c: list[Token]) -> ast.Literal:
        return ast.Literal(lexer.unquote(str(c[0])), span=_span(c[0]))

    def number(self, c: list[Token]) -> ast.Literal:
        text = str(c[0])
        value: int | float = float(text) if "." in text else int(text)
        return ast.Literal(value, span=_span(c[0]))

    def duration(self, c: list[Token]) -> ast.Duration:
        return ast.Duration(str(c[0]), span=_span(c[0]))

    def true(self, c: list[Token]) -> ast.Literal:
        return ast.Literal(True, span=_span(c[0]))

    def false(self, c: list[Token]) -> ast.Literal:
        return ast.Literal(False, span=_span(c[0]))

    def dotted_name(self, c: list[Token]) -> ast.Name:
        return ast.Name(tuple(str(t) for t in c), span=_to(_span(c[0]), c[-1]))

    def list_value(self, c: list[Any]) -> ast.ListValue:
        items = tuple(x for x in c if x is not None)
        return ast.ListValue(items, span=_start(items[0]) if items else Span(0, 0))

    def field_list(self, c: list[ast.Field]) -> tuple[ast.Field, ...]:
        return tuple(c)

    def field(self, c: list[Any]) -> ast.Field:
        return ast.Field(str(c[0]), c[1], span=_span(c[0]))

    step_field = field

    def map_field(self, c: list[Any]) -> ast.Field:
        name = lexer.unquote(str(c[0])) if c[0].type == "STRING" else str(c[0])
        return ast.Field(name, c[1], span=_span(c[0]))

    def map_value(self, c: list[Any]) -> ast.MapValue:
        fields = tuple(c)
        return ast.MapValue(fields, span=fields[0].span if fields else Span(0, 0))

    def raise_value(self, c: list[Token]) -> ast.Raise:
        return ast.Raise(str(c[1]), span=_span(c[0]))

    def call_value(self, c: list[Any]) -> ast.Call:
        callee: ast.Name = c[0]
        return ast.Call(callee, _args(c[1:]), span=callee.span)

    def keyword_arg(self, c: list[Any]) -> ast.Arg:
        return ast.Arg(str(c[0]), c[1], span=_span(c[0]))

    def positional_arg(self, c: list[Any]) -> ast.Arg:
        return ast.Arg(None, c[0], span=_start(c[0]))

    def type_value(self, c: list[Any]) -> ast.TypeRef:
        optional = isinstance(c[-1], Token) and c[-1].type == "OPTIONAL"
        if isinstance(c[0], ast.Name):
            return ast.TypeRef(c[0].text, (), optional, span=c[0].span)
        args = tuple(x for x in c[1:] if isinstance(x, ast.TypeRef))
        return ast.TypeRef(str(c[0]), args, optional, span=_span(c[0]))

    type_ref = type_value

    # ------------------------------------------------------------ conditions
    def comparison(self, c: list[Any]) -> ast.Comparison:
        if len(c) == 1:
            return ast.Comparison(c[0], span=_start(c[0]))
        return ast.Comparison(c[0], str(c[1]), c[2], span=_start(c[0]))

    def condition(self, c: list[Any]) -> ast.Condition:
        rest = tuple((str(c[i]), c[i + 1]) for i in range(1, len(c), 2))
        return ast.Condition(c[0], rest, span=c[0].span)

    # ------------------------------------------------------------ declarations
    def start(self, c: list[Any]) -> list[Any]:
        return c

    def import_names(self, c: list[Token]) -> tuple[str, ...]:
        return tuple(str(t) for t in c)

    def import_decl(self, c: list[Any]) -> ast.Import:
        names: tuple[str, ...] = c[2] if len(c) > 2 and c[2] is not None else ()
        return ast.Import(c[1].parts, names, span=_span(c[0]))

    def decl(self, c: list[Any]) -> ast.Declaration:
        return ast.Declaration(
            str(c[0]), str(c[1]), c[2], name_span=_span(c[1]), span=_span(c[0])
        )

    memory_decl = decl

    def range_bound(self, c: list[Token]) -> float:
        return float(str(c[0]))

    def type_range(self, c: list[Any]) -> ast.TypeDecl:
        return ast.TypeDecl(
            str(c[1]), range=(c[2], c[3]), name_span=_span(c[1]), span=_span(c[0])
        )

    def type_struct(self, c: list[Any]) -> ast.TypeDecl:
        fields = tuple(x for x in c[2:] if isinstance(x, ast.TypeField))
        return ast.TypeDecl(str(c[1]), fields=fields, name_span=_span(c[1]), span=_span(c[0]))

    def type_where(self, c: list[Any]) -> ast.TypeDecl:
        return ast.TypeDecl(str(c[1]), where=c[3], name_span=_span(c[1]), span=_span(c[0]))

    def type_alias(self, c: list[Any]) -> ast.TypeDecl:
        return ast.TypeDecl(str(c[1]), alias=c[2], name_span=_span(c[1]), span=_span(c[0]))

    def type_field(self, c: list[Any]) -> ast.TypeField:
        return ast.TypeField(str(c[0]), c[1], span=_span(c[0]))

    def param(self, c: list[Any]) -> ast.Param:
        return ast.Param(str(c[0]), c[1] if len(c) > 1 else None, span=_span(c[0]))

    def flow_decl(self, c: list[Any]) -> ast.Flow:
        params = tuple(x for x in c[2:] if isinstance(x, ast.Param))
        returns = next((x for x in c[2:] if isinstance(x, ast.TypeRef)), None)
        body = tuple(
            x for x in c[2:] if x is not None and not isinstance(x, ast.Param | ast.TypeRef)
        )
        return ast.Flow(
            str(c[1]), params, returns, body, name_span=_span(c[1]), span=_span(c[0])
        )

    # ------------------------------------------------------------ flow statements
    def step_stmt(self, c: list[Any]) -> ast.Step:
        fields = tuple(x for x in c[2:] if isinstance(x, ast.Field))
        actions = tuple(x for x in c[2:] if not isinstance(x, ast.Field))
        return ast.Step(str(c[1]), fields, actions, span=_span(c[0]))

    def probe_stmt(self, c: list[Any]) -> ast.Probe:
        return ast.Probe(c[1], c[2], span=_span(c[0]))

    def reason_stmt(self, c: list[Any]) -> ast.Reason:
        about = c[1] if isinstance(c[1], ast.Name) else None
        return ast.Reason(about, c[-1], span=_span(c[0]))

    def validate_stmt(self, c: list[Any]) -> ast.Validate:
        fields = tuple(x for x in c[3:] if isinstance(x, ast.Field))
        rules = tuple(x for x in c[3:] if isinstance(x, ast.If))
        return ast.Validate(c[1], c[2], fields, rules, span=_span(c[0]))

    def refine_stmt(self, c: list[Any]) -> ast.Refine:
        return ast.Refine(c[1], span=_span(c[0]))

    def weave_stmt(self, c: list[Any]) -> ast.Weave:
        fields: tuple[ast.Field, ...] = c[3] if len(c) > 3 else ()
        return ast.Weave(c[1], c[2], fields, span=_span(c[0]))

    def use_stmt(self, c: list[Any]) -> ast.Use:
        return ast.Use(c[1], _args(c[2:]), span=_span(c[0]))

    def refine_call(self, c: list[Any]) -> ast.Action:
        span = _span(c[0])
        call = ast.Call(ast.Name(("refine",), span=span), _args(c[1:]), span=span)
        return ast.Action(call, span=span)

    def branch_block(self, c: list[Any]) -> tuple[Any, ...]:
        return tuple(c)

    def branch_stmt(self, c: list[Any]) -> Any:
        node = c[0]
        if isinstance(node, ast.Call | ast.Raise | ast.Name):
            return ast.Action(node, span=node.span)
        return node

    def if_stmt(self, c: list[Any]) -> ast.If:
        def block(x: Any) -> tuple[Any, ...]:
            return x if isinstance(x, tuple) else (x,)

        otherwise = block(c[4]) if len(c) > 4 else ()
        return ast.If(c[1], block(c[2]), otherwise, span=_span(c[0]))

    # ------------------------------------------------------------ memory statements
    def let_stmt(self, c: list[Any]) -> ast.Let:
        return ast.Let(str(c[1]), c[2], span=_span(c[0]))

    def with_options(self, c: list[Any]) -> ast.MapValue:
        return ast.MapValue(c[1], span=_span(c[0]))

    def alias(self, c: list[Token]) -> Token:
        return c[0]

    def remember_call(self, c: list[Any]) -> ast.Remember:
        options = c[3] if len(c) > 3 else None
        return ast.Remember(c[1], str(c[2]), options, target_span=_span(c[2]), span=_span(c[0]))

    remember_prep = remember_call

    def recall_call(self, c: list[Any]) -> ast.Recall:
        options = next((x for x in c[3:] if isinstance(x, ast.MapValue)), None)
        alias = next((str(x) for x in c[3:] if isinstance(x, Token)), None)
        return ast.Recall(
            c[1], str(c[2]), options, alias, source_span=_span(c[2]), span=_span(c[0])
        )

    recall_prep = recall_call

    def forget_call(self, c: list[Any]) -> ast.Forget:
        options = c[3] if len(c) > 3 else None
        return ast.Forget(
            c[1], str(c[2]), options, source_span=_span(c[2]), span=_span(c[0])
        )

    forget_prep = forget_call

    def forget_filter(self, c: list[Any]) -> ast.Forget:
        options = c[2] if len(c) > 2 else None
        return ast.Forget(None, str(c[1]), options, source_span=_span(c[1]), span=_span(c[0]))

    # ------------------------------------------------------------ run
    def run_as(self, c: list[Token]) -> tuple[str, Token]:
        return ("as", c[0])

    def run_within(self, c: list[Token]) -> tuple[str, Token]:
        return ("within", c[0])

    def run_constrained(self, c: list[Any]) -> tuple[str, list[Token]]:
        return ("constrained_by", [t for t in c if t is not None])

    def run_field(self, c: list[Any]) -> ast.Field:
        return ast.Field(str(c[0]), c[1], span=_span(c[0]))

    def run_stmt(self, c: list[Any]) -> ast.Run:
        persona = context = None
        persona_span = context_span = Span(0, 0)
        anchors: list[Token] = []
        options: list[ast.Field] = []
        for item in c[2:]:
            if isinstance(item, ast.Field):
                options.append(item)
            elif isinstance(item, tuple) and item[0] == "as":
                persona, persona_span = str(item[1]), _span(item[1])
            elif isinstance(item, tuple) and item[0] == "within":
                context, context_span = str(item[1]), _span(item[1])
            elif isinstance(item, tuple) and item[0] == "constrained_by":
                anchors.extend(item[1])
        return ast.Run(
            c[1],
            _args(c[2:]),
            persona,
            context,
            tuple(str(t) for t in anchors),
            tuple(options),
            persona_span=persona_span,
            context_span=context_span,
            anchor_spans=tuple(_span(t) for t in anchors),
            span=_span(c[0]),
        )


def grammar_text() -> str:
    """The text of `grammar/axon.lark`, read from the installed package."""
    return GRAMMAR_PATH.read_text(encoding="utf-8")


@cache
def _parser() -> lark.Lark:
    grammar = grammar_text()
    # Never `cache=True`: Lark would unpickle a predictable file in the shared temporary
    # directory (grammar_cache explains); a private per-user file, or no cache.
    cache_file = parser_cache_file(grammar)
    return lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",  # for Lark's own analysis; `lexer.run` scans the text
        transformer=_Builder(),
        maybe_placeholders=True,
        cache=cache_file if cache_file is not None else False,
    )


def is_name(text: str) -> bool:
    """Whether `text` is one whole name of the grammar (its `NAME` terminal): what a
    program can declare a memory (or flow, or field) as."""
    return _name_pattern().fullmatch(text) is not None


@cache
def _name_pattern() -> re.Pattern[str]:
    return re.compile(_parser().get_terminal("NAME").pattern.to_regexp())


def always_accepted() -> frozenset[str]:
    """The terminals `parse` reads in every parser state (`lexer.always_accepted`): what
    another Lark parser of the grammar must accept everywhere to read the same tokens."""
    return lexer.always_accepted(_parser())


def keywords() -> lexer.GrammarWords:
    """The grammar's keywords (all, statement starters, the rest), for messages and completion."""
    return lexer.grammar_words(_parser())


def tokens(text: str) -> Iterator[tuple[str, int, int]]:
    """Every token of `text`, parsed or not: `(terminal, start, end)` (`lexer.scan`).

    White space and comments are included (`ignored_terminals`), and a character no
    terminal matches is a `lexer.UNMATCHED` token; for highlighting and editors.
    """
    return lexer.scan(_parser(), text)


def ignored_terminals() -> frozenset[str]:
    """The terminals `tokens` yields that the parser skips: white space and comments."""
    return lexer.ignored_terminals(_parser())


def parse(text: str, filename: str = "<input>") -> ast.Program:
    """Parse AXON source text into an `ast.Program`.

    Raises `AxonSyntaxError` with the position, a message in words and, when the
    text simply ended too early, `incomplete=True` (the REPL continues then).
    """
    source = Source(text, filename)
    _check_text(source)
    try:
        items: list[ast.TopLevel] = lexer.run(_parser(), text)
    except lexer.LexError as exc:
        line, column = position_of(text, exc.offset)
        raise AxonSyntaxError(
            exc.message, Span(line, column, line, column + exc.length), source
        ) from None
    except lark.exceptions.VisitError as exc:  # a callback failed: report where
        raise AxonSyntaxError(f"invalid syntax: {exc.orig_exc}", Span(0, 0), source) from None
    except lark.exceptions.LarkError as exc:
        raise translate(exc, source, _parser()) from None
    return ast.Program(tuple(items), filename, span=Span(1, 1))


def _check_text(source: Source) -> None:
    """Refuse text no program may be: over the size limit, or holding a lone surrogate.

    A lone surrogate (text decoded with `surrogateescape`, or built in Python) is
    not a character: it could be neither stored as UTF-8 nor printed.
    """
    text = source.text
    if not isinstance(text, str):
        raise AxonSyntaxError(
            f"source must be text (str), not {type(text).__name__}", Span(1, 1), source
        )
    size = utf8_length(text)
    if size > MAX_SOURCE_BYTES:
        raise AxonSyntaxError(
            f"source too large: {size:,} bytes of UTF-8 (the limit is "
            f"{MAX_SOURCE_BYTES:,} bytes, 10 MB)",
            Span(1, 1),
            source,
        )
    bad = _SURROGATE.search(text)
    if bad is not None:
        line, column = position_of(text, bad.start())
        raise AxonSyntaxError(
            f"invalid character U+{ord(bad.group()):04X} (a lone surrogate, not text; "
            "is the file UTF-8?)",
            Span(line, column, line, column + 1),
            source,
        )
