"""Program text -> what an editor asks about it: problems, declared names and their uses.

`analyse(text)` parses and checks the text (the same parser and checker as
`axon check`, so the problems are its diagnostics, warnings included) and indexes
it from its tokens (`parser.tokens`), which exist whether or not the text parses:
a half-typed program still has its declarations, references and completions.
Everything here is in character offsets into the text; `documents` turns them into
an editor's lines and UTF-16 columns, and `server` speaks the protocol.

Names: AXON's declarations (memories, flows, personas, contexts, anchors, tools,
intents, types) share one flat namespace, so a use of a declared name is any name
token spelled the same that is not a field name (`name:`), a step's name or a
step's output (`Search.output`): steps are named inside their flow.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator
from functools import cache

import attrs

from axon.compiler import ast
from axon.compiler.check_memory import FIELD_MEANINGS, LINK_KINDS, MEMORY_FIELDS, STORE_TYPES
from axon.compiler.check_options import (
    FORGET_OPTIONS,
    OPTION_MEANINGS,
    RECALL_OPTIONS,
    REMEMBER_OPTIONS,
    TIER_NAMES,
)
from axon.compiler.checker import Checker
from axon.compiler.lexer import UNMATCHED
from axon.compiler.parser import is_name, keywords, parse
from axon.errors import AxonCheckError, AxonSyntaxError, Diagnostic
from axon.lsp.chunks import ChunkedParser, Token, scan
from axon.memory.backend import RETRIEVAL_MODES
from axon.memory.entry import RECORD_TYPES
from axon.memory.registry import BackendRegistry
from axon.memory.registry import registry as default_registry
from axon.source import Source, Span

DECLARATION_KINDS = ("memory", "flow", "persona", "context", "anchor", "tool", "intent", "type")
"""The keywords that declare a name, in the order document symbols list kinds."""

STATEMENTS = ("remember", "recall", "forget")
"""The statements whose `with { ... }` takes options."""

OPTIONS: dict[str, tuple[str, ...]] = {
    "remember": REMEMBER_OPTIONS,
    "recall": RECALL_OPTIONS,
    "forget": FORGET_OPTIONS,
}
"""What `with { ... }` accepts on each statement (the checker's lists)."""

_SUGGESTION = re.compile(r"'([^']*)'.*?\(did you mean '([^']*)'\?\)", re.DOTALL)
_OPENERS = frozenset({"{", "(", "[", ".{"})
_CLOSERS = frozenset({"}", ")", "]"})
_WORD_BEFORE = re.compile(r"[A-Za-z0-9_]*\Z")
MAX_HOVER_LINES = 30
"""A declaration longer than this is shown cut in a hover."""


@attrs.frozen
class Declared:
    """A declared name: its kind, the offsets of its name and of the whole declaration."""

    name: str
    kind: str
    name_start: int
    name_end: int
    start: int
    end: int


@attrs.frozen
class Problem:
    """A diagnostic in offsets; `fix` is the replacement a "did you mean" offers, with the
    offsets of the text it replaces."""

    message: str
    severity: str
    start: int
    end: int
    fix: tuple[int, int, str] | None = None


@attrs.frozen
class Completion:
    """One completion candidate: the text, what it is, and a line about it."""

    label: str
    kind: str  # "memory" | "flow" | "field" | "value" | "option" | "keyword"
    detail: str = ""


class RenameError(Exception):
    """A rename that cannot be done: says why, in words."""


@attrs.define
class Analysis:
    """One version of a document, parsed, checked and indexed."""

    text: str
    tokens: list[Token]
    declarations: dict[str, Declared]
    uses: dict[str, list[tuple[int, int]]]
    problems: list[Problem]
    _ends: list[int] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        self._ends = [t.end for t in self.tokens]

    # ------------------------------------------------------------ looking up
    def token_index_at(self, offset: int) -> int | None:
        """The index of the token holding `offset` (or ending at it), if any."""
        i = bisect.bisect_left(self._ends, offset)
        for j in (i, i - 1):
            if 0 <= j < len(self.tokens) and self.tokens[j].start <= offset <= self.tokens[j].end:
                return j
        return None

    def word_at(self, offset: int) -> tuple[str, int, int] | None:
        """The name token under `offset`: its text and offsets."""
        i = self.token_index_at(offset)
        if i is None or self.tokens[i].kind in (UNMATCHED, "STRING"):
            return None
        token = self.tokens[i]
        value = self.text[token.start : token.end]
        return (value, token.start, token.end) if value.isidentifier() else None

    def declaration_at(self, offset: int) -> Declared | None:
        """The declaration of the name under `offset` (a use or the declaration itself)."""
        word = self.word_at(offset)
        if word is None:
            return None
        declared = self.declarations.get(word[0])
        if declared is None:
            return None
        if (word[1], word[2]) in self.uses.get(word[0], ()):
            return declared
        return None

    def declaration_text(self, declared: Declared) -> str:
        return self.text[declared.start : declared.end]

    def block_at(self, offset: int) -> str | None:
        """What the innermost `{ ... }` around `offset` is: "memory", a statement's
        "remember"/"recall"/"forget" (its `with`), "other", or None at the top level."""
        stack: list[str] = []
        for i, token in enumerate(self.tokens):
            if token.start >= offset:
                break
            word = self.text[token.start : token.end]
            if word == "{":
                stack.append(self._block_kind(i))
            elif word == ".{":
                stack.append("other")
            elif word == "}" and stack:
                stack.pop()
        return stack[-1] if stack else None

    def _block_kind(self, i: int) -> str:
        words = [self._word(j) for j in (i - 2, i - 1)]
        if words[0] == "memory" and self.tokens[i - 1].kind == "NAME":
            return "memory"
        if words[1] == "with":
            for j in range(i - 1, -1, -1):
                word = self._word(j)
                if word in STATEMENTS:
                    return word
                if word in ("{", "}", ".{"):
                    break
        return "other"

    def _word(self, i: int) -> str:
        if i < 0:
            return ""
        token = self.tokens[i]
        return self.text[token.start : token.end]


def analyse(
    text: str,
    filename: str = "<input>",
    backends: BackendRegistry | None = None,
    parser: ChunkedParser | None = None,
) -> Analysis:
    """Parse, check and index `text`; never raises for anything the text holds.

    `parser`, kept from one version of a document to the next, parses again only
    the items an edit touched (`chunks`); without it the whole text is parsed.
    """
    toks = parser.tokens(text) if parser else scan(text)
    declarations, uses = _index(text, toks)
    analysis = Analysis(text, toks, declarations, uses, [])
    analysis.problems = _problems(
        analysis, filename, backends or default_registry, parser.parse if parser else parse
    )
    return analysis


@cache
def _kinds() -> tuple[dict[str, str], frozenset[str], frozenset[str]]:
    """Statement keywords by terminal, and the terminals of opening and closing brackets."""
    words = keywords()
    statements = {t: w for t, w in words.terminals.items() if w in words.statement}
    brackets = {text: kind for kind, _, _, text in _bracket_tokens()}
    return (
        statements,
        frozenset(brackets[b] for b in _OPENERS),
        frozenset(brackets[b] for b in _CLOSERS),
    )


def _bracket_tokens() -> Iterator[tuple[str, int, int, str]]:
    sample = " ".join([*_OPENERS, *_CLOSERS])
    for kind, start, end in scan(sample):
        yield kind, start, end, sample[start:end]


def _index(
    text: str, toks: list[Token]
) -> tuple[dict[str, Declared], dict[str, list[tuple[int, int]]]]:
    statements, openers, closers = _kinds()
    depth = 0
    open_decl: tuple[str, str, int, int, int] | None = None  # name, kind, name offsets, start
    declarations: dict[str, Declared] = {}
    last_end = 0

    def close(end: int) -> None:
        nonlocal open_decl
        if open_decl is not None:
            name, kind, name_start, name_end, start = open_decl
            declarations.setdefault(name, Declared(name, kind, name_start, name_end, start, end))
            open_decl = None

    for i, (kind, start, end) in enumerate(toks):
        if kind in openers:
            depth += 1
        elif kind in closers:
            depth -= 1 if depth else 0
        elif depth == 0 and kind in statements:
            close(last_end)
            word = statements[kind]
            following = toks[i + 1] if i + 1 < len(toks) else None
            if word in DECLARATION_KINDS and following is not None and following.kind == "NAME":
                name = text[following.start : following.end]
                open_decl = (name, word, following.start, following.end, start)
        last_end = end
    close(last_end)
    uses: dict[str, list[tuple[int, int]]] = {}
    for i, token in enumerate(toks):
        if token.kind != "NAME":
            continue
        name = text[token.start : token.end]
        if name not in declarations:
            continue
        if i + 1 < len(toks) and toks[i + 1].kind == "COLON":
            continue  # a field name
        if (i and toks[i - 1].kind == "DOT") or (i + 1 < len(toks) and toks[i + 1].kind == "DOT"):
            continue  # a step's output (Search.output): steps are named inside their flow
        if i and text[toks[i - 1].start : toks[i - 1].end] == "step":
            continue  # a step of the same name
        uses.setdefault(name, []).append((token.start, token.end))
    return declarations, uses


# ------------------------------------------------------------------ problems
def offset_of(text: str, line: int, column: int) -> int:
    """The offset of a 1-based line and column (as `Span` counts them) in `text`."""
    start = 0
    for _ in range(line - 1):
        found = text.find("\n", start)
        if found < 0:
            return len(text)
        start = found + 1
    if line == 1 and text.startswith("\ufeff"):
        start = 1  # a byte-order mark takes no column
    return min(start + max(column, 1) - 1, len(text))


def _problems(
    analysis: Analysis,
    filename: str,
    backends: BackendRegistry,
    parse_text: Callable[[str, str], ast.Program],
) -> list[Problem]:
    text = analysis.text
    source = Source(text, filename)
    diagnostics: list[Diagnostic]
    try:
        program = parse_text(text, filename)
    except AxonSyntaxError as exc:
        diagnostics = [Diagnostic(exc.message, exc.span)]
    else:
        checker = Checker(source, None, backends)
        try:
            checker.check(program)
            diagnostics = []
        except AxonCheckError as exc:
            diagnostics = list(exc.diagnostics)
        except Exception as exc:  # a bug of ours: said, not raised into the editor
            diagnostics = [
                Diagnostic(f"internal error in the checker: {type(exc).__name__}: {exc}")
            ]
        diagnostics += checker.report.warnings
    return sorted(
        (_problem(analysis, d) for d in diagnostics), key=lambda p: (p.start, p.end)
    )


def _problem(analysis: Analysis, diagnostic: Diagnostic) -> Problem:
    span: Span = diagnostic.span
    text = analysis.text
    if span.line <= 0:
        start = end = 0
    else:
        start = offset_of(text, span.line, span.column)
        if span.end_line is not None and span.end_column is not None:
            end = max(start, offset_of(text, span.end_line, span.end_column))
        else:
            i = analysis.token_index_at(start)
            token = analysis.tokens[i] if i is not None else None
            end = token.end if token is not None and token.start == start else start
        if end == start and start < len(text) and text[start] != "\n":
            end = start + 1
    fix = _fix(text, diagnostic, start, end)
    return Problem(diagnostic.message, diagnostic.severity, start, end, fix)


def _fix(text: str, diagnostic: Diagnostic, start: int, end: int) -> tuple[int, int, str] | None:
    """The "did you mean" replacement: the quoted wrong name, found in the problem's text."""
    m = _SUGGESTION.search(diagnostic.message)
    if m is None:
        return None
    wrong, right = m.group(1), m.group(2)
    if not wrong:
        return None
    for found in re.finditer(re.escape(wrong), text[start : max(end, start + len(wrong))]):
        at = start + found.start()
        before = text[at - 1] if at else " "
        after = text[at + len(wrong)] if at + len(wrong) < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return at, at + len(wrong), right
    return None


# ------------------------------------------------------------------ completion
def field_values(backends: BackendRegistry | None = None) -> dict[str, tuple[str, ...]]:
    """The words a field's value may be, by field (the checker's tables and the registry)."""
    return {
        "store": STORE_TYPES,
        "backend": tuple((backends or default_registry).names()),
        "retrieval": tuple(RETRIEVAL_MODES),
        "link": LINK_KINDS,
        "refresh_on_read": ("true", "false"),
        "history": ("5", "all"),
        "type": tuple(RECORD_TYPES),
        "tier": TIER_NAMES,
    }


def completions(
    analysis: Analysis, offset: int, backends: BackendRegistry | None = None
) -> list[Completion]:
    """What may be written at `offset`, from the text around it (which need not parse)."""
    text = analysis.text
    prefix = _WORD_BEFORE.search(text, 0, offset)
    word_start = prefix.start() if prefix else offset
    i = bisect.bisect_right(analysis._ends, word_start) - 1
    previous = analysis._word(i) if i >= 0 else ""
    previous_kind = analysis.tokens[i].kind if i >= 0 else ""
    if previous == "->" and _top_level_statement(analysis, i, word_start) == "flow":
        return _names(analysis, "type")  # a flow's result type: `flow F(x: T) -> Summary`
    if previous in ("->", "from"):
        return _names(analysis, "memory")
    if previous == "run":
        return _names(analysis, "flow")
    block = analysis.block_at(word_start)
    if previous_kind == "COLON" and i >= 1:
        field = analysis._word(i - 1)
        values = field_values(backends).get(field)
        if values is not None and block in ("memory", *STATEMENTS):
            return [Completion(v, "value", f"{field}: {v}") for v in values]
        return []
    if block == "memory":
        return [Completion(f, "field", FIELD_MEANINGS[f]) for f in MEMORY_FIELDS]
    if block in OPTIONS:
        return [Completion(o, "option", OPTION_MEANINGS[o]) for o in OPTIONS[block]]
    if block is None:
        return [Completion(w, "keyword") for w in keywords().statement]
    return []


def _top_level_statement(analysis: Analysis, i: int, offset: int) -> str | None:
    """The keyword of the top-level statement token `i` is in (None inside a block)."""
    if analysis.block_at(offset) is not None:
        return None
    statements = _kinds()[0]
    for j in range(i, -1, -1):
        word = statements.get(analysis.tokens[j].kind)
        if word is not None:
            return word
    return None


def _names(analysis: Analysis, kind: str) -> list[Completion]:
    return [
        Completion(d.name, kind, _first_line(analysis.declaration_text(d)))
        for d in analysis.declarations.values()
        if d.kind == kind
    ]


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0].strip()


# ------------------------------------------------------------------ hover
def hover(analysis: Analysis, offset: int) -> tuple[str, int, int] | None:
    """Markdown about the name under `offset`, with the offsets it is about.

    A declared name shows its declaration; a memory field or a `with` option its
    one-line meaning (`check_memory.FIELD_MEANINGS`, `check_options.OPTION_MEANINGS`).
    """
    word = analysis.word_at(offset)
    if word is None:
        return None
    name, start, end = word
    declared = analysis.declaration_at(offset)
    if declared is not None:
        lines = analysis.declaration_text(declared).split("\n")
        if len(lines) > MAX_HOVER_LINES:
            lines = [*lines[:MAX_HOVER_LINES], "..."]
        body = "\n".join(lines)
        return f"({declared.kind}) **{name}**\n\n```axon\n{body}\n```", start, end
    i = analysis.token_index_at(offset)
    if i is None or i + 1 >= len(analysis.tokens) or analysis.tokens[i + 1].kind != "COLON":
        return None
    block = analysis.block_at(start)
    if block == "memory" and name in FIELD_MEANINGS:
        return f"`{name}` (memory field): {FIELD_MEANINGS[name]}", start, end
    if block in OPTIONS and name in OPTIONS[block]:
        return f"`{name}` ({block} option): {OPTION_MEANINGS[name]}", start, end
    return None


# ------------------------------------------------------------------ names
def references(
    analysis: Analysis, offset: int, include_declaration: bool = True
) -> list[tuple[int, int]]:
    """Every use of the declared name under `offset` (its declaration first, if asked)."""
    declared = analysis.declaration_at(offset)
    if declared is None:
        return []
    spans = analysis.uses.get(declared.name, [])
    own = (declared.name_start, declared.name_end)
    rest = [s for s in spans if s != own]
    return [own, *rest] if include_declaration else rest


def rename(analysis: Analysis, offset: int, new_name: str) -> list[tuple[int, int]]:
    """The spans to replace by `new_name` to rename the declared name under `offset`.

    Raises `RenameError` when there is no declared name there, or `new_name` is not
    a name, is a keyword, or is declared already.
    """
    declared = analysis.declaration_at(offset)
    if declared is None:
        raise RenameError("no declared name here to rename")
    if not is_name(new_name):
        raise RenameError(f"'{new_name}' is not a name (letters, digits, '_'; not a digit first)")
    if new_name in keywords().all:
        raise RenameError(f"'{new_name}' is a keyword")
    if new_name != declared.name and new_name in analysis.declarations:
        other = analysis.declarations[new_name]
        raise RenameError(f"'{new_name}' is already declared ({other.kind})")
    return references(analysis, offset)


def symbols(analysis: Analysis) -> Iterable[Declared]:
    """The declarations, in the order they are written."""
    return sorted(analysis.declarations.values(), key=lambda d: d.start)
