"""Source text -> parse result: one loop that scans tokens and runs Lark's LALR tables.

Lark's own loop (a contextual lexer trying each terminal's regex in turn, then
`feed_token` per token, with rule callbacks looked up by `Rule` objects whose
hash and equality are Python methods) was most of the front end's time. This
module keeps Lark's grammar analysis, tables and callbacks (the transformer that
builds AST nodes) and replaces only the loop.

Everything the loop knows about tokens is derived from the grammar's terminals
(`Lark.terminals`) once per grammar, so a keyword or a token added to
`grammar/axon.lark` needs no second edit here, in `syntax_errors` or in the
REPL's completer (`grammar_words`):

- one master regular expression, assembled as Lark's lexer assembles its own:
  every terminal's pattern in Lark's order (priority, then the longest possible
  match, then the longest pattern, then the name), except the string terminals
  that another terminal's pattern also matches in full, at the same priority
  (the keywords, which NAME matches; `<` and `>`, which COMP_OP matches);
- those string terminals are decided by the LALR state, with one dictionary
  lookup, as Lark's contextual lexer decides them: a word is a keyword only where
  the state accepts that keyword (so `memory: session` inside a `context` block,
  or `use:` in a step, is a field name), and `<`/`>` are type brackets only where
  the state accepts one (elsewhere they are comparison operators);
- shifts and reductions run on plain lists, with each rule's size, callback and
  left-hand side resolved once per grammar.

Precisely: the tokens are those of Lark's contextual lexer when every state also
accepts every terminal but those decided by the state (`always_accepted`), so a
word is always scanned whole (Lark's own contextual lexer would read `memoryx`
as `memory` `x` where no name is accepted). `tests/compiler/test_lexer_differential.py`
checks this loop against stock `lark.Lark(parser="lalr")` so configured: equal
ASTs, or errors at the same position. The loop touches Lark's internals only in
`_lark_internals`, and `pyproject.toml` pins Lark to the minor version that test
passed on.

Errors are Lark's exception types (`UnexpectedCharacters`, `UnexpectedToken`),
so `syntax_errors.translate` reports them the same way, and `LexError` for the
checks this loop makes itself: the language's limits (nesting depth, digits in a
number) and the contents of string literals (escapes, control characters).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from typing import Any, NamedTuple

import attrs
import lark
from lark import Token
from lark.grammar import Terminal
from lark.lexer import PatternStr, TerminalDef

MAX_NESTING = 100
"""Brackets (`{`, `[`, `(`, type arguments `<`) open at once, at most
(docs/language.md §10 Limits)."""
MAX_NUMBER_DIGITS = 100
"""Digits in one number or duration literal, at most (docs/language.md §10 Limits)."""

ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r"}
"""The one-character escapes of string literals; `\\uXXXX` and `\\u{X...}` come on top."""
_ESCAPE = re.compile(r"\\(?:u\{([0-9A-Fa-f]{1,6})\}|u([0-9A-Fa-f]{4})|(.))", re.DOTALL)
_RAW_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_DIGITS = re.compile(r"[0-9]")


class LexError(Exception):
    """A token the grammar accepts but the language refuses; `offset` is where, in the text."""

    def __init__(self, message: str, offset: int, length: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.length = length


def _escape_value(m: re.Match[str]) -> str | None:
    """The text one escape stands for, or None when it is not an escape of the language."""
    braced, four, char = m.group(1), m.group(2), m.group(3)
    if braced is not None or four is not None:
        code = int(braced or four, 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            return None
        return chr(code)
    return ESCAPES.get(char)


def check_string(token: str, offset: int) -> None:
    """Raise `LexError` at the first unknown escape or raw control character of a literal.

    `token` is the literal with its quotes, `offset` where it starts in the text.
    """
    raw = _RAW_CONTROL.search(token)
    if raw is not None:
        code = ord(raw.group())
        raise LexError(
            f"control character U+{code:04X} in a string (write it as \\u{code:04X})",
            offset + raw.start(),
        )
    for m in _ESCAPE.finditer(token, 1, len(token) - 1):
        if _escape_value(m) is None:
            shown = m.group()
            if m.group(3) is not None and not m.group(3).isprintable():
                shown = "\\" + repr(m.group(3))[1:-1]
            if shown.startswith("\\u") and m.group(3) is None:
                problem = "is a surrogate or beyond U+10FFFF, not a character"
            elif shown.startswith("\\u"):
                problem = "needs four hex digits (\\u00e9) or braces (\\u{1F600})"
            else:
                problem = "is not an escape"
            raise LexError(
                f"'{shown}' {problem}; the escapes are \\\\ \\\" \\' \\n \\t \\r "
                "\\uXXXX \\u{X...}",
                offset + m.start(),
                len(m.group()),
            )


def unquote(token: str) -> str:
    """The text a string literal (checked by `check_string`) stands for, quotes removed."""
    body = token[1:-1]
    if "\\" not in body:
        return body
    return _ESCAPE.sub(lambda m: _escape_value(m) or "", body)


_OPENERS = frozenset({"{", "[", "(", ".{", "<"})
"""Brackets that count towards `MAX_NESTING` (the `<` of type arguments included)."""
_CLOSERS = frozenset({"}", "]", ")", ">"})
_NAME = "NAME"
"""The terminal of names (tried early: it is the most common token after white space)."""
_STRING = "STRING"
"""The terminal whose tokens `check_string` checks and `unquote` reads."""
_NUMBERS = frozenset({"NUMBER", "SIGNED_NUMBER", "DURATION"})
"""The terminals whose tokens hold at most `MAX_NUMBER_DIGITS` digits."""
_STATEMENT_RULES = ("start", "_flow_stmt")
"""Grammar rules whose first keywords start a statement (top level, in a flow)."""


_States = dict[Any, dict[str, tuple[Any, Any]]]
"""LALR states: for each state, each symbol -> (action, argument)."""


class _Internals(NamedTuple):
    states: _States
    start: Any
    end: Any
    callbacks: dict[Any, Any]
    shift: Any
    new_token: Callable[..., Token]


def _lark_internals(parser: lark.Lark) -> _Internals:
    """What the loop takes from Lark past its public API; the only place it does.

    - the LALR tables: `states[s][terminal]` is `(Shift, state)` or `(Reduce, rule)`,
      from the public interactive parser's `parser_state.parse_conf`;
    - `callbacks`, mapping each `Rule` (and each terminal with a transformer
      method) to what Lark calls on a reduction (on a shift);
    - the `Shift` action, to tell the two kinds of action apart;
    - `Token._future_new`, the constructor `Token(...)` calls after checking for a
      deprecated keyword argument: a third faster, and made for every name.

    `tests/compiler/test_lexer_differential.py` checks the loop built on these
    against Lark's own, on the Lark versions `pyproject.toml` allows.
    """
    from lark.parsers.lalr_analysis import Shift

    conf = parser.parse_interactive("").parser_state.parse_conf
    return _Internals(
        conf.states, conf.start_state, conf.end_state, conf.callbacks, Shift, Token._future_new
    )


def _regexp(parser: lark.Lark, terminal: str) -> str:
    return parser.get_terminal(terminal).pattern.to_regexp()


def _sort_key(terminal: TerminalDef) -> tuple[int, int, int, str]:
    """The order Lark's lexer tries terminals in (`lark.lexer.BasicLexer`)."""
    pattern = terminal.pattern
    return (-terminal.priority, -pattern.max_width, -len(pattern.value), terminal.name)


def _first_chars(items: Any) -> tuple[set[int] | None, bool]:
    """(the code points a match of parsed `items` can start with, or None for any; nullable)."""
    result: set[int] = set()
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            result.add(arg)
            return result, False
        if name == "IN":
            for kind, value in arg:
                if str(kind) == "LITERAL":
                    result.add(value)
                elif str(kind) == "RANGE":
                    result.update(range(value[0], value[1] + 1))
                else:  # a negated set, a category (\\w, \\s): anything, as far as we know
                    return None, False
            return result, False
        if name == "SUBPATTERN" and not arg[1] and not arg[2]:  # no inline flags
            branches, optional = [arg[3]], False
        elif name == "BRANCH":
            branches, optional = arg[1], False
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            branches, optional = [arg[2]], arg[0] == 0
        else:
            return None, False
        for branch in branches:
            first, nullable = _first_chars(branch)
            if first is None:
                return None, False
            result |= first
            optional = optional or nullable
        if not optional:
            return result, False
    return result, True


def _starts(regexp: str) -> frozenset[int] | None:
    """The code points a match of `regexp` can start with; None when that is not known.

    Read from the stdlib's regular-expression parser (`re._parser`); anything it
    does not recognise means "any character", which only keeps Lark's order.
    """
    try:
        import re._parser as sre  # type: ignore[import-not-found]

        parsed = sre.parse(regexp)
        if parsed.state.flags & ~(re.UNICODE | re.ASCII):
            return None
        first, nullable = _first_chars(parsed)
    except Exception:  # a construct this reading does not know: assume the worst
        return None
    return None if first is None or nullable else frozenset(first)


def _scan_order(terminals: list[TerminalDef], first: list[str]) -> list[TerminalDef]:
    """`terminals` (in Lark's order), those named in `first` tried first where that is safe.

    Only the order of two terminals that can start a match with the same
    character decides which of them matches; those keep Lark's order, the others
    move. White space is most of the tokens, so trying it first saves failed
    alternatives on every token without changing what any text scans to.
    """
    starts = [_starts(t.pattern.to_regexp()) for t in terminals]

    def overlap(i: int, j: int) -> bool:
        a, b = starts[i], starts[j]
        return a is None or b is None or bool(a & b)

    rank = {name: n for n, name in enumerate(first)}
    waiting = sorted(
        range(len(terminals)), key=lambda i: (rank.get(terminals[i].name, len(rank)), i)
    )
    placed: list[int] = []
    while waiting:
        ready = next(i for i in waiting if all(j in placed for j in range(i) if overlap(i, j)))
        waiting.remove(ready)
        placed.append(ready)
    return [terminals[i] for i in placed]


def _may_hold_newline(regexp: str) -> bool:
    """Whether a token of this pattern may span lines (Lark's own test, so lines count alike)."""
    return (
        "\n" in regexp
        or "\\n" in regexp
        or "\\s" in regexp
        or "[^" in regexp
        or ("(?s" in regexp and "." in regexp)
    )


def _decided_by_state(terminals: list[TerminalDef]) -> dict[str, dict[str, str]]:
    """String terminals another one matches in full: {that one: {text: string terminal}}.

    Lark's lexer (`_create_unless`) removes them from its scanner and lets the
    other terminal's match become them where the state accepts them; so does `run`.
    """
    decided: dict[str, dict[str, str]] = {}
    for regex in terminals:
        if isinstance(regex.pattern, PatternStr):
            continue
        compiled = re.compile(regex.pattern.to_regexp())
        for string in terminals:
            pattern = string.pattern
            if (
                isinstance(pattern, PatternStr)
                and string.priority == regex.priority
                and compiled.fullmatch(pattern.value)
            ):
                decided.setdefault(regex.name, {})[pattern.value] = string.name
    return decided


def always_accepted(parser: lark.Lark) -> frozenset[str]:
    """The terminals `run` recognises in every parser state: all but those decided by the state.

    Lark's contextual lexer given these as `PostLex.always_accept` produces the
    tokens `run` produces (the differential test relies on it).
    """
    return _tables(parser).always


@attrs.frozen
class GrammarWords:
    """The grammar's keywords, derived from its terminals and rules (nothing typed twice).

    `terminals` maps each keyword terminal to its word (`MEMORY` -> `memory`,
    `FOR` -> `for`); `statement` are the words that start a top-level statement,
    `flow` those that start a statement inside a flow, `other` every other keyword.
    """

    terminals: dict[str, str]
    statement: tuple[str, ...]
    flow: tuple[str, ...]
    other: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        """Every keyword of the grammar, sorted."""
        return tuple(sorted(self.terminals.values()))

    @property
    def starters(self) -> tuple[str, ...]:
        """Every keyword that starts a statement, at the top level or in a flow, sorted."""
        return tuple(sorted({*self.statement, *self.flow}))


def _first_terminals(rules: Iterable[Any], origin: str) -> set[str]:
    """The terminals a phrase of rule `origin` can start with (FIRST, over Lark's `Rule`s)."""
    by_origin: dict[str, list[list[Any]]] = {}
    for rule in rules:
        by_origin.setdefault(rule.origin.name, []).append(list(rule.expansion))
    if origin not in by_origin:
        raise LookupError(f"the grammar has no rule '{origin}'")
    first: dict[str, set[str]] = {name: set() for name in by_origin}
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, expansions in by_origin.items():
            for expansion in expansions:
                for symbol in expansion:
                    if symbol.is_term:
                        added = {symbol.name} - first[name]
                        stop = True
                    else:
                        added = first[symbol.name] - first[name]
                        stop = symbol.name not in nullable
                    if added:
                        first[name] |= added
                        changed = True
                    if stop:
                        break
                else:
                    if name not in nullable:
                        nullable.add(name)
                        changed = True
    return first[origin]


def _grammar_words(parser: lark.Lark, decided: dict[str, dict[str, str]]) -> GrammarWords:
    terminals = {
        name: word
        for words in decided.values()
        for word, name in words.items()
        if word.isidentifier()
    }
    statement, flow = (
        tuple(sorted(terminals[t] for t in _first_terminals(parser.rules, rule) if t in terminals))
        for rule in _STATEMENT_RULES
    )
    other = tuple(sorted(set(terminals.values()) - {*statement, *flow}))
    return GrammarWords(dict(sorted(terminals.items())), statement, flow, other)


_OPEN, _CLOSE, _TEXT, _DIGITS_LIMIT, _LINES = 1, 2, 4, 8, 16
"""What `run` checks on a token of a terminal, as bits: see `_checks`."""


def _checks(terminals: list[TerminalDef], ignored: frozenset[str]) -> dict[str, int]:
    """For each terminal whose tokens `run` looks at: which checks (`_OPEN`, ...) apply."""
    checks: dict[str, int] = {}
    for t in terminals:
        pattern, bits = t.pattern, 0
        if isinstance(pattern, PatternStr):
            bits |= _OPEN if pattern.value in _OPENERS else 0
            bits |= _CLOSE if pattern.value in _CLOSERS else 0
            if "\n" in pattern.value:
                raise ValueError(f"the fast loop does not implement a newline in '{t.name}'")
        elif t.name not in ignored and _may_hold_newline(pattern.to_regexp()):
            bits |= _LINES
        bits |= _TEXT if t.name == _STRING else 0
        bits |= _DIGITS_LIMIT if t.name in _NUMBERS else 0
        if bits:
            checks[t.name] = bits
    return checks


class _Tables:
    """What the loop needs from a Lark instance, derived once from its terminals and tables."""

    def __init__(self, parser: lark.Lark) -> None:
        internals = _lark_internals(parser)
        self.states, self.start, self.end = internals.states, internals.start, internals.end
        self.shift, self.new_token = internals.shift, internals.new_token
        callbacks = internals.callbacks
        self.token_callbacks = {k: v for k, v in callbacks.items() if isinstance(k, str)}
        self.rules = {
            id(rule): (len(rule.expansion), callback, rule.origin.name)
            for rule, callback in callbacks.items()
            if not isinstance(rule, str)
        }
        terminals = sorted(parser.terminals, key=_sort_key)
        if parser.lexer_conf.g_regex_flags or any(t.pattern.flags for t in terminals):
            raise ValueError("the fast loop does not implement regular-expression flags")
        self.decided = _decided_by_state(terminals)
        by_state = {name for words in self.decided.values() for name in words.values()}
        self.skip = frozenset(parser.lexer_conf.ignore)
        # Most tokens are white space, then names: tried first (`_scan_order`: why it is safe).
        ignored = sorted(self.skip, key=lambda n: not re.fullmatch(_regexp(parser, n), " "))
        scanned = _scan_order(
            [t for t in terminals if t.name not in by_state], [*ignored, _NAME]
        )
        self.always = frozenset(t.name for t in scanned)
        self.master = re.compile(
            "|".join(f"(?P<{t.name}>{t.pattern.to_regexp()})" for t in scanned)
        )
        self.keywords = self.decided.get(_NAME, {})
        missing = ({_NAME, _STRING} | _NUMBERS) - self.always
        if missing:
            raise ValueError(f"the grammar lacks the terminals {sorted(missing)} the loop checks")
        self.checks = _checks(terminals, self.skip)
        # Terminals Lark filters out of every rule's children (anonymous punctuation,
        # keywords written as strings) never reach a callback: they travel as text.
        used = [s for r in parser.rules for s in r.expansion if isinstance(s, Terminal)]
        kept = {s.name for s in used if not s.filter_out}
        self.anonymous = frozenset(s.name for s in used if s.filter_out) - kept
        self.words = _grammar_words(parser, self.decided)


@cache
def _tables(parser: lark.Lark) -> _Tables:
    return _Tables(parser)


def grammar_words(parser: lark.Lark) -> GrammarWords:
    """The keywords of `parser`'s grammar: every one, those that start statements, the rest."""
    return _tables(parser).words


def run(parser: lark.Lark, text: str) -> Any:
    """Scan `text` and parse it with `parser`'s LALR tables and callbacks; the start value."""
    tables = _tables(parser)
    states, rules, decided, skip = tables.states, tables.rules, tables.decided, tables.skip
    token_callbacks, anonymous, checks = tables.token_callbacks, tables.anonymous, tables.checks
    name, keywords, shift, end_state = _NAME, tables.keywords, tables.shift, tables.end
    state_stack: list[Any] = [tables.start]
    value_stack: list[Any] = []
    match_at = tables.master.match
    new_token = tables.new_token
    pos = line_start = 0
    if text.startswith("\ufeff"):  # a byte-order mark: skipped, and not counted as a column
        pos = line_start = 1
    line = 1
    end = len(text)
    token: Token | str | None = None
    start = column = 0
    depth = 0
    while True:
        if pos < end:
            m = match_at(text, pos)
            if m is None:
                raise lark.exceptions.UnexpectedCharacters(  # type: ignore[no-untyped-call]
                    text, pos, line, pos - line_start + 1
                )
            kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is named
            value = m.group()
            start = pos
            pos = m.end()
            if kind in skip:
                newlines = value.count("\n")
                if newlines:
                    line += newlines
                    line_start = start + value.rindex("\n") + 1
                continue
            column = start - line_start + 1
            if kind == name:  # the most common token: only a keyword to decide
                word = keywords.get(value)
                if word is not None and word in states[state_stack[-1]]:
                    kind = word
                check = 0
            else:
                words = decided.get(kind)
                if words is not None:
                    word = words.get(value)
                    if word is not None and word in states[state_stack[-1]]:
                        kind = word
                check = checks.get(kind, 0)
            # Anonymous punctuation never reaches a callback (Lark filters it out of
            # the children), so it travels as its text; a Token is made only on error.
            token = (
                value
                if kind in anonymous
                else new_token(kind, value, start, line, column, line, column + len(value), pos)
            )
            if check:
                if check & _OPEN:
                    depth += 1
                    if depth > MAX_NESTING:
                        raise LexError(
                            f"nesting too deep: more than {MAX_NESTING} brackets open at once",
                            start,
                        )
                elif check & _CLOSE:
                    if depth:
                        depth -= 1
                elif check & _TEXT:
                    check_string(value, start)
                elif (
                    check & _DIGITS_LIMIT
                    and len(value) > MAX_NUMBER_DIGITS
                    and len(_DIGITS.findall(value)) > MAX_NUMBER_DIGITS
                ):
                    raise LexError(
                        f"number too long: more than {MAX_NUMBER_DIGITS} digits "
                        f"(the limit is {MAX_NUMBER_DIGITS})",
                        start,
                        len(value),
                    )
                if check & _LINES and "\n" in value:  # a token spanning lines (a Token)
                    newline = start + value.rindex("\n")
                    line += value.count("\n")
                    line_start = newline + 1
                    if isinstance(token, Token):
                        token.end_line, token.end_column = line, pos - newline
            is_end = False
        else:
            token = Token("$END", "", end, line, end - line_start + 1)
            kind = "$END"
            is_end = True
        while True:
            state = state_stack[-1]
            action = states[state].get(kind)
            if action is None:
                if not isinstance(token, Token):
                    token = Token(kind, token, start, line, column, line, column + len(token), pos)
                expected = {s for s in states[state] if s.isupper()}
                raise lark.exceptions.UnexpectedToken(  # type: ignore[no-untyped-call]
                    token, expected
                )
            op, arg = action
            if op is shift:
                state_stack.append(arg)
                callback = token_callbacks.get(kind)
                value_stack.append(callback(token) if callback else token)
                break
            size, callback, origin = rules[id(arg)]
            if size:
                children = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                children = []
            reduced = callback(children)
            state_stack.append(states[state_stack[-1]][origin][1])
            value_stack.append(reduced)
            if is_end and state_stack[-1] == end_state:
                return value_stack[-1]


def previous_token(parser: lark.Lark, text: str, pos: int) -> str | None:
    """The text of the last token that ends at or before `pos` (for error messages)."""
    tables = _tables(parser)
    last = None
    i = 1 if text.startswith("\ufeff") else 0
    while i < pos:
        m = tables.master.match(text, i)
        if m is None or m.end() > pos:
            break
        if m.lastgroup not in tables.skip:
            last = m
        i = m.end()
    return None if last is None else last.group()


def hidden_brackets(parser: lark.Lark) -> str:
    """A regular expression for the tokens whose text may hold a bracket that is not one.

    String literals and the ignored terminals (comments, white space): what a
    search for unclosed brackets must step over (`syntax_errors`).
    """
    names = [_STRING, *sorted(_tables(parser).skip)]
    return "|".join(f"(?:{_regexp(parser, name)})" for name in names)


UNMATCHED = ""
"""The kind `scan` gives a character no terminal of the grammar matches."""


def scan(parser: lark.Lark, text: str) -> Iterator[tuple[str, int, int]]:
    """Every token of `text` as `(terminal, start, end)` offsets, without parsing it.

    For highlighting and editors, which see text that may not parse: the ignored
    terminals (white space, comments) are included, a character no terminal
    matches is one `UNMATCHED` token and scanning goes on after it, and a name
    that is a keyword somewhere in the grammar is given that keyword's terminal
    (whether it is one at that place only the parse state knows: `run` decides it).
    """
    tables = _tables(parser)
    match_at, keywords = tables.master.match, tables.keywords
    pos, end = (1 if text.startswith("\ufeff") else 0), len(text)
    while pos < end:
        m = match_at(text, pos)
        if m is None or m.end() == pos:
            yield UNMATCHED, pos, pos + 1
            pos += 1
            continue
        kind: str = m.lastgroup  # type: ignore[assignment]  # every alternative is named
        if kind == _NAME:
            kind = keywords.get(m.group(), kind)
        yield kind, pos, m.end()
        pos = m.end()


def ignored_terminals(parser: lark.Lark) -> frozenset[str]:
    """The terminals the grammar ignores (white space, comments): `scan` yields them."""
    return _tables(parser).skip
