"""Source text -> the same program in AXON's one canonical layout, every comment kept.

`format_source(text, path=...)` is what `axon fmt` and the language server call. It
parses the text (a syntax error is the usual positioned `AxonSyntaxError`), lays the
parse tree out by the rules of docs/cli.md ("axon fmt"), and puts each comment back
in its place: a comment on the line of the token before it stays at the end of that
line, any other on a line of its own before the token that follows it. The layout is
a function of the parse and the comments alone, never of how the text was laid out,
so formatting twice changes nothing; the result is parsed again and must give the
same AST (positions aside) before it is returned.

The layout is a small Wadler/Prettier document: a group is printed on one line when
it fits in `WIDTH` columns and holds no comment, else broken one item per line. A
flow and the blocks inside it always break; declarations, value maps, `with { }`
options, type structs, lists and arguments break only when they do not fit.

The parse tree comes from Lark's own LALR parser with every token kept (the fast loop
of `lexer.run` builds AST nodes and keeps no tokens), told to accept the terminals
`lexer.run` accepts in every state, so both read the same tokens
(`tests/compiler/test_lexer_differential.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any, NamedTuple

import lark
from lark import Token, Tree

from axon.compiler.grammar_cache import parser_cache_file
from axon.compiler.parser import always_accepted, grammar_text, keywords, parse
from axon.errors import AxonSyntaxError

WIDTH = 100
"""Columns a line may take before a group breaks (comments aside)."""
INDENT = "  "
"""One level of indentation."""

_BOM = "\ufeff"
_NL = "\n"
_MARKS = ("\x00", "\ufdd0", "\ufdd1")
"""Characters that can mark, while printing, the space before a `//` comment ending a line
of code (`_align`): the first the text does not hold."""

# ---------------------------------------------------------------- the tree parser


class _AcceptEverywhere(lark.lark.PostLex):
    """Passes tokens through; makes the contextual lexer accept `always_accept` everywhere."""

    def __init__(self, names: frozenset[str]) -> None:
        self.always_accept = names

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        return stream


class _Grammar(NamedTuple):
    parser: lark.Lark
    ignored: re.Pattern[str]
    """The grammar's ignored terminals (white space, comments), one named group each."""
    spaces: frozenset[str]
    """Those of them that match only white space."""


@cache
def _grammar() -> _Grammar:
    grammar = grammar_text()
    # Cached as the parser's tables are (grammar_cache: a private file, or no cache).
    cache_file = parser_cache_file(grammar, variant="tree")
    tree_parser = lark.Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        keep_all_tokens=True,
        maybe_placeholders=False,
        postlex=_AcceptEverywhere(always_accepted()),
        cache=cache_file if cache_file is not None else False,
    )
    names = sorted(tree_parser.lexer_conf.ignore)
    patterns = {n: tree_parser.get_terminal(n).pattern.to_regexp() for n in names}
    ignored = re.compile("|".join(f"(?P<{n}>{p})" for n, p in patterns.items()))
    spaces = frozenset(n for n, p in patterns.items() if re.fullmatch(p, " \n"))
    return _Grammar(tree_parser, ignored, spaces)


# ---------------------------------------------------------------- comments


class _Comment(NamedTuple):
    text: str
    trailing: bool
    """On the line of the token (or comment) before it."""
    blank: bool
    """A blank line before it."""
    line: bool
    """A `//` comment: a line break must follow it."""


class _Gap(NamedTuple):
    comments: tuple[_Comment, ...]
    blank: bool
    """A blank line between the last comment (or token) and the token after the gap."""


def _gaps(text: str, tokens: list[Token], grammar: _Grammar) -> list[_Gap]:
    """What lies before each token (and, last, before the end): comments and blank lines."""
    starts = [*(t.start_pos or 0 for t in tokens), len(text)]
    ends = [1 if text.startswith(_BOM) else 0, *(t.end_pos or 0 for t in tokens)]
    gaps = []
    for n, (begin, end) in enumerate(zip(ends, starts, strict=True)):
        if text[begin:end].isspace() or begin == end:  # no comment: the common case
            gaps.append(_Gap((), text.count(_NL, begin, end) > 1))
            continue
        comments: list[_Comment] = []
        newlines = 0
        for m in grammar.ignored.finditer(text, begin, end):
            if m.lastgroup in grammar.spaces:
                newlines += m.group().count(_NL)
                continue
            body = m.group()
            line = not body.startswith("/*")
            after_something = n > 0 or bool(comments)
            comments.append(
                _Comment(
                    body.rstrip() if line else body,
                    newlines == 0 and after_something,
                    newlines > 1,
                    line,
                )
            )
            newlines = 0
        gaps.append(_Gap(tuple(comments), newlines > 1))
    return gaps


# ---------------------------------------------------------------- the document

_Sep = tuple[str, str]
"""A break between two pieces: (its text in a flat group, its text in a broken one)."""
_NONE: _Sep = ("", "")
_SPACE: _Sep = (" ", " ")
_LINE: _Sep = (" ", _NL)
_SOFT: _Sep = ("", _NL)
_HARD: _Sep = (_NL, _NL)


class _Text(NamedTuple):
    text: str
    token: int
    """The token's place in the parse (-1: a comma the layout writes itself)."""
    kind: str


class _Group:
    __slots__ = ("force", "items")

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.force = False


class _Indent(NamedTuple):
    items: list[Any]


_OPENERS = frozenset({"{", "[", "(", ".{"})
_CLOSERS = frozenset({"}", "]", ")"})
_TIGHT_AFTER = frozenset({"(", "[", ".", ".{", "..", "<"})
_TIGHT_BEFORE = frozenset({",", ")", "]", ":", ".", ".{", "..", "(", "?"})
_TYPE_BRACKETS = frozenset({"LESSTHAN", "MORETHAN"})
_BLOCKS = frozenset(
    {
        "flow_decl",
        "step_stmt",
        "reason_stmt",
        "validate_stmt",
        "refine_stmt",
        "weave_stmt",
        "branch_block",
    }
)
"""Rules whose `{ }` always holds one item per line: a flow and the blocks inside it."""
_MAPS = frozenset({"decl", "memory_decl", "map_value", "with_options", "type_struct"})
"""Rules whose `{ }` is one line when it fits (fields separated by commas), else one field
per line."""
_FIELDS = frozenset({"field", "step_field", "map_field", "type_field"})
"""Rules of the items a comma may follow in a block."""
_TIGHT = frozenset({"remember_call", "recall_call", "forget_call", "type_range"})
"""Rules whose `( )` holds one thing, never broken."""


def _space(left: _Text, right: _Text) -> _Sep:
    """The space between two tokens printed side by side."""
    if left.text in _TIGHT_AFTER and left.kind != "COMP_OP":
        return _NONE
    if right.text in _TIGHT_BEFORE or right.kind in _TYPE_BRACKETS:
        return _NONE
    if left.kind == "LESSTHAN":
        return _NONE
    return _SPACE


def _first(doc: Any) -> _Text | None:
    if isinstance(doc, _Text):
        return doc
    items = doc.items if isinstance(doc, _Group | _Indent) else doc
    if isinstance(items, list):
        for item in items:
            found = _first(item)
            if found is not None:
                return found
    return None


def _last(doc: Any) -> _Text | None:
    if isinstance(doc, _Text):
        return doc
    items = doc.items if isinstance(doc, _Group | _Indent) else doc
    if isinstance(items, list):
        for item in reversed(items):
            found = _last(item)
            if found is not None:
                return found
    return None


class _Builder:
    """Parse tree -> document."""

    def __init__(self, tokens: list[Token]) -> None:
        self.index = {id(t): n for n, t in enumerate(tokens)}

    def text(self, token: Token) -> _Text:
        return _Text(str(token), self.index[id(token)], token.type)

    def node(self, node: Tree[Token] | Token) -> Any:
        if isinstance(node, Token):
            return self.text(node)
        rule = str(node.data)
        if rule == "start":
            return self.lines([self.node(c) for c in node.children])
        if rule == "run_stmt":
            return self.run(node)
        if rule == "if_stmt":
            return self.if_else(node)
        return self.join(self.pieces(rule, node.children))

    def pieces(self, rule: str, children: list[Any]) -> list[Any]:
        """`children` as printed pieces, each bracket pair with its contents one piece."""
        pieces: list[Any] = []
        i = 0
        while i < len(children):
            child = children[i]
            if isinstance(child, Token) and str(child) in _OPENERS and rule not in _TIGHT:
                close = self.closer(children, i)
                inside = self.items(children[i + 1 : close])
                items = [self.node(c) for c in inside]
                opener, closer = self.text(child), self.text(children[close])
                if str(child) == "{" and rule in _BLOCKS:
                    fields = [isinstance(c, Tree) and c.data in _FIELDS for c in inside]
                    pieces.append(self.block(opener, items, closer, fields))
                elif str(child) == "{":
                    pieces.append(self.map(opener, items, closer))
                else:
                    pieces.append(self.bracketed(opener, items, closer))
                i = close + 1
                continue
            pieces.append(self.node(child))
            i += 1
        return pieces

    @staticmethod
    def closer(children: list[Any], opened: int) -> int:
        depth = 0
        for n in range(opened, len(children)):
            child = children[n]
            if isinstance(child, Token):
                if str(child) in _OPENERS:
                    depth += 1
                elif str(child) in _CLOSERS:
                    depth -= 1
                    if depth == 0:
                        return n
        raise AssertionError("an opening bracket without its closing one in the parse")

    @staticmethod
    def items(children: list[Any]) -> list[Any]:
        """The items between two brackets: field lists opened, commas left out."""
        out: list[Any] = []
        for child in children:
            if isinstance(child, Tree) and child.data == "field_list":
                out.extend(c for c in child.children if not _is_comma(c))
            elif not _is_comma(child):
                out.append(child)
        return out

    @staticmethod
    def join(pieces: list[Any]) -> list[Any]:
        out: list[Any] = []
        for piece in pieces:
            if out:
                left, right = _last(out[-1]), _first(piece)
                if left is not None and right is not None:
                    out.append(_space(left, right))
            out.append(piece)
        return out

    @staticmethod
    def lines(items: list[Any]) -> list[Any]:
        """`items` one a line."""
        out: list[Any] = []
        for item in items:
            if out:
                out.append(_HARD)
            out.append(item)
        return out

    def block(self, opener: _Text, items: list[Any], closer: _Text, fields: list[bool]) -> Any:
        """A flow's or statement's `{ }`: one item a line; `fields` tells which are fields
        (the only items the grammar lets a comma follow)."""
        if not items:
            return _Group([opener, _SOFT, closer])
        commas = _needs_commas(items)
        inner: list[Any] = []
        for n, item in enumerate(items):
            if n:
                inner += [(",", ",") if commas and fields[n - 1] else _NONE, _HARD]
            inner.append(item)
        return [opener, _Indent([_HARD, *inner]), _HARD, closer]

    @staticmethod
    def map(opener: _Text, items: list[Any], closer: _Text) -> Any:
        """A declaration's or value's `{ }`: `{ a: 1, b: 2 }`, or broken one field a line."""
        if not items:
            return _Group([opener, _SOFT, closer])
        comma = (",", ",") if _needs_commas(items) else (",", "")
        inner: list[Any] = [_LINE]
        for n, item in enumerate(items):
            if n:
                inner += [comma, _LINE]
            inner.append(item)
        return _Group([opener, _Indent(inner), _LINE, closer])

    @staticmethod
    def bracketed(opener: _Text, items: list[Any], closer: _Text) -> Any:
        if not items:
            return _Group([opener, _SOFT, closer])
        inner: list[Any] = [_SOFT]
        for n, item in enumerate(items):
            if n:
                inner += [_Text(",", -1, "COMMA"), _LINE]
            inner.append(item)
        inner.append(("", ","))
        return _Group([opener, _Indent(inner), _SOFT, closer])

    def if_else(self, node: Tree[Token]) -> list[Any]:
        """`if c -> a else -> b` on one line when it fits, else `else` on the next line
        (after a `{ }` branch it stays on the closing brace's line: `} else -> {`)."""
        children = node.children
        split = next(
            (n for n, c in enumerate(children) if isinstance(c, Token) and c.type == "ELSE"),
            None,
        )
        before = children[split - 1] if split is not None else None
        if split is None or (isinstance(before, Tree) and before.data == "branch_block"):
            return self.join(self.pieces("if_stmt", children))
        head = self.join(self.pieces("if_stmt", children[:split]))
        tail = self.join(self.pieces("if_stmt", children[split:]))
        return [*head, _Group([_LINE, *tail])]

    def run(self, node: Tree[Token]) -> list[Any]:
        """`run F(args)`, then its modifiers on one line when they fit, else one a line."""
        children = node.children
        split = next(n for n, c in enumerate(children) if isinstance(c, Token) and str(c) == ")")
        head = self.join(self.pieces("run_stmt", children[: split + 1]))
        modifiers = [self.node(c) for c in children[split + 1 :]]
        if not modifiers:
            return head
        tail: list[Any] = []
        for modifier in modifiers:
            tail += [_LINE, modifier]
        return [*head, _Group([_Indent(tail)])]


def _needs_commas(items: list[Any]) -> bool:
    """Whether commas must separate `items`, one field a line, in a block.

    Commas between fields are optional, but a field named like a keyword (`type:`,
    `memory:`) is read as that keyword where the parser's state allows it, and after
    a comma it never is. A block holding such a field (after its first) writes a
    comma between all of its fields; any other block broken one field a line, none.
    """
    for item in items[1:]:
        first = _first(item)
        if first is not None and first.kind == "NAME" and first.text in keywords().all:
            return True
    return False


def _is_comma(child: Any) -> bool:
    return isinstance(child, Token) and str(child) == ","


# ---------------------------------------------------------------- layout


class _Placed(NamedTuple):
    text: _Text
    before: str | int
    """What separates it from the text before: "", " ", or a line break to this indent."""
    indent: int


def _force(doc: Any, commented: list[int]) -> bool:
    """Mark each group that must break (a hard break or a comment in it); True if `doc` has one."""
    if isinstance(doc, _Text):
        return False
    if isinstance(doc, tuple) and not isinstance(doc, _Indent):
        return doc == _HARD
    items = doc.items if isinstance(doc, _Group | _Indent) else doc
    found = False
    for item in items:
        found = _force(item, commented) or found
    if isinstance(doc, _Group):
        first, last = _first(doc), _last(doc)
        if first is not None and last is not None and first.token >= 0 and last.token >= 0:
            # commented[i]: comments before tokens 0..i-1; those inside lie before first+1..last.
            # A group that opens with a line break owns the comments before its first token.
            opens = commented[first.token if _opens_with_break(doc) else first.token + 1]
            found = found or commented[last.token + 1] > opens
        doc.force = found
    return found


def _opens_with_break(doc: Any) -> bool:
    while isinstance(doc, _Group | _Indent | list):
        items = doc if isinstance(doc, list) else doc.items
        if not items:
            return False
        doc = items[0]
    return not isinstance(doc, _Text)


def _fits(doc: Any, rest: list[tuple[int, bool, Any]], width: int) -> bool:
    """Whether `doc` flat, then `rest` up to its first line break, takes at most `width`."""
    stack: list[tuple[bool, Any]] = [(True, doc)]
    rest_at = len(rest)
    while width >= 0:
        if not stack:
            if rest_at == 0:
                return True
            rest_at -= 1
            _, flat, item = rest[rest_at]
            stack.append((flat, item))
            continue
        flat, item = stack.pop()
        if isinstance(item, _Text):
            width -= len(item.text)
        elif isinstance(item, _Group):
            stack.extend((flat and not item.force, x) for x in reversed(item.items))
        elif isinstance(item, _Indent | list):
            items = item.items if isinstance(item, _Indent) else item
            stack.extend((flat, x) for x in reversed(items))
        else:
            text = item[0] if flat else item[1]
            if text == _NL:
                return True
            width -= len(text)
    return False


def _column(column: int, pending: str | int) -> int:
    """The column the next text starts at, after `pending` (a line break to an indent, or not)."""
    if isinstance(pending, int):
        return pending * len(INDENT)
    return column + len(pending)


def _layout(doc: Any) -> list[_Placed]:
    """The document's texts, each with what precedes it once every group is flat or broken."""
    placed: list[_Placed] = []
    stack: list[tuple[int, bool, Any]] = [(0, False, doc)]
    column = 0
    pending: str | int = 0
    while stack:
        indent, flat, item = stack.pop()
        if isinstance(item, _Text):
            placed.append(_Placed(item, pending, indent))
            column = _column(column, pending) + len(item.text)
            pending = ""
        elif isinstance(item, _Group):
            fits = not item.force and (flat or _fits(item, stack, WIDTH - _column(column, pending)))
            stack.extend((indent, fits, x) for x in reversed(item.items))
        elif isinstance(item, _Indent):
            stack.extend((indent + 1, flat, x) for x in reversed(item.items))
        elif isinstance(item, list):
            stack.extend((indent, flat, x) for x in reversed(item))
        else:
            text = item[0] if flat else item[1]
            if text == _NL:
                pending = indent
            elif text in ("", " "):
                if not isinstance(pending, int) and text:
                    pending = " "
            else:  # a comma the layout writes (a list broken one item per line)
                placed.append(_Placed(_Text(text, -1, "COMMA"), pending, indent))
                column = _column(column, pending) + len(text)
                pending = ""
    return placed


# ---------------------------------------------------------------- printing


def _print(placed: list[_Placed], gaps: list[_Gap], mark: str) -> str:
    """The placed tokens as text, each gap's comments and blank lines put back."""
    out: list[str] = []
    previous: _Text | None = None
    consumed = 0  # gaps[:consumed] are printed (a dropped comma's go with the next token)
    end = _Placed(_Text("", len(gaps) - 1, "$END"), 0, 0)
    for text, before, indent in [*placed, end]:
        comments: list[_Comment] = []
        blank = False
        if text.token >= 0:
            taken = gaps[consumed : text.token + 1]
            comments = [c for g in taken for c in g.comments]
            blank = any(g.blank for g in taken)
            consumed = text.token + 1
        opened = previous is None or previous.text in _OPENERS
        closing = text.text in _CLOSERS
        # Where the layout has no line break, a comment's line is a continuation line.
        comment_indent = before + closing if isinstance(before, int) else indent + 1
        inline = False
        for n, comment in enumerate(comments):
            # A comment after a `//` comment starts a line, or the `//` would swallow it.
            inline = comment.trailing and bool(out) and not (n and comments[n - 1].line)
            if inline:
                out.append((mark if comment.line else " ") + comment.text)
                continue
            if out:
                out.append(_NL * (2 if comment.blank and not (opened and n == 0) else 1))
            out.append(INDENT * comment_indent + comment.text)
        if text.kind == "$END":
            if out:
                out.append(_NL)
            break
        need_break = bool(comments) and (comments[-1].line or not inline)
        if isinstance(before, int) or need_break:
            if out:
                allowed = blank and not closing and not (opened and not comments)
                out.append(_NL * (2 if allowed else 1))
            out.append(INDENT * (before if isinstance(before, int) else indent + 1))
        elif comments:  # after a block comment on the same line
            out.append("" if text.text in _TIGHT_BEFORE else " ")
        else:
            out.append(before)
        out.append(text.text)
        previous = text
    return _align("".join(out), mark) if mark != " " else "".join(out)


def _align(text: str, mark: str) -> str:
    """`text` with the `//` comments that end consecutive lines of code in one column.

    `_print` marks each with `mark` in place of the space before it; a run of such
    lines ends at a line without one (a blank line too) or one that only closes
    brackets. Only white space moves, so the comments stay where they are and
    formatting again aligns them the same way.
    """
    lines = text.split(_NL)
    run: list[int] = []
    for n, line in enumerate([*lines, ""]):
        if mark in line:
            if line.split(mark, 1)[0].strip(" )]}"):
                run.append(n)
                continue
            lines[n] = line.replace(mark, " ", 1)  # a line that only closes: on its own
        if run:
            column = max(lines[i].index(mark) for i in run) + 1
            for i in run:
                code, comment = lines[i].split(mark, 1)
                lines[i] = code.ljust(column) + comment
            run = []
    return _NL.join(lines)


# ---------------------------------------------------------------- the front door


def format_source(text: str, *, path: str = "<input>") -> str:
    """`text` in the canonical layout, every comment kept; raises `AxonSyntaxError`.

    `path` names the text in errors. Line ends follow the text's first line (CRLF
    stays CRLF, anything else becomes LF; a lone CR ends a line), a leading byte-order
    mark is kept, no line ends in white space (but inside a `/* */` comment, kept as
    written), and the result ends with one line break (an empty program stays empty).
    """
    crlf = text.split(_NL, 1)[0].endswith("\r") and _NL in text
    bom = text.startswith(_BOM)
    body = text[1:] if bom else text
    body = re.sub(r"\r\n?", _NL, body)
    original = parse(body, path)
    grammar = _grammar()
    try:
        tree = grammar.parser.parse(body)
    except lark.exceptions.LarkError as exc:  # the fast loop accepted it: a bug of ours
        raise AssertionError(f"the formatter's parser refused what the parser took: {exc}") from exc
    tokens = list(tree.scan_values(lambda v: isinstance(v, Token)))
    gaps = _gaps(body, tokens, grammar)
    commented = [0]
    for gap in gaps:
        commented.append(commented[-1] + len(gap.comments))
    doc = _Builder(tokens).node(tree)
    _force(doc, commented)
    mark = next((m for m in _MARKS if m not in body), " ")  # " ": no aligning
    result = _print(_layout(doc), gaps, mark)
    try:
        formatted = parse(result, path)
    except AxonSyntaxError as exc:
        raise AssertionError(f"the formatter wrote a program that does not parse: {exc}") from exc
    if formatted != original:
        raise AssertionError("the formatter changed the program's meaning")
    if crlf:
        result = result.replace(_NL, "\r\n")
    return (_BOM if bom else "") + result
