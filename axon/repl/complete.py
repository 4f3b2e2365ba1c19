"""The text before the cursor -> completion candidates (a prompt_toolkit `Completer`).

Completes dot commands, keywords, memory fields (`store`, `backend`, ...)
inside `memory NAME { ... }`, their values (`persistent`, registered backend
names, `hybrid`, durations like `7d`), `with { ... }` options, and names the
session knows: declared memories after `->`, `from` (recall, forget), `in`, `.show`,
`.update`, `.history` and `.clear`, flows after `run`, and `let` bindings elsewhere. It
reads the text with a few regular expressions, not the parser, because the text being typed
is usually incomplete.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document

from axon.compiler.check_memory import LINK_KINDS, MEMORY_FIELDS, STORE_TYPES
from axon.compiler.check_options import FORGET_OPTIONS, RECALL_OPTIONS, REMEMBER_OPTIONS
from axon.compiler.parser import keywords
from axon.memory.backend import RETRIEVAL_MODES
from axon.memory.registry import registry
from axon.repl.console import COMMANDS
from axon.runtime.session import Session

_WORDS = keywords()
STATEMENT_KEYWORDS = _WORDS.statement
"""Keywords that start a top-level statement (from the grammar)."""
FLOW_KEYWORDS = _WORDS.flow
"""Keywords that start a statement inside a flow (from the grammar)."""
OTHER_KEYWORDS = _WORDS.other
"""Every other keyword of the grammar."""
FIELD_VALUES: dict[str, tuple[str, ...]] = {
    "store": STORE_TYPES,
    "retrieval": tuple(sorted(RETRIEVAL_MODES)),
    "decay": ("none", "never", "daily", "weekly", "1h", "1d", "7d", "30d"),
    "top_k": ("3", "5", "10"),
    "link": LINK_KINDS,
    "refresh_on_read": ("true", "false"),
    "history": ("5", "all"),
}
OPTION_FIELDS = {
    "remember": REMEMBER_OPTIONS,
    "recall": RECALL_OPTIONS,
    "forget": FORGET_OPTIONS,
}
"""What `with { ... }` accepts on each statement (the checker's lists)."""

_WORD = re.compile(r"\w*$")
_MEMORY_TARGET = re.compile(r"(?:\bremember\b[^\n]*->|\bfrom|\bin)\s+\w*$")
_RUN_TARGET = re.compile(r"\brun\s+\w*$")
_FIELD_VALUE = re.compile(r"(\w+)\s*:\s*(\S*)$")
_FIELD_NAME = re.compile(r"(?:^|[\s,{])\w*$")
_USED_FIELD = re.compile(r"(\w+)\s*:")


class AxonCompleter(Completer):
    """Completes REPL input against what `session` has declared so far."""

    def __init__(self, session: Session, backend_names: Callable[[], list[str]] | None = None):
        self.session = session
        self._backend_names = backend_names or registry.names
        self._paths = PathCompleter(
            expanduser=True,
            file_filter=lambda name: name.endswith(".axon") or "." not in name.rsplit("/", 1)[-1],
        )

    # ------------------------------------------------------------ names the session knows
    def memory_names(self, text: str = "") -> list[str]:
        """Declared memories, plus those declared in the text being typed."""
        names = list(self.session.memory_names())
        for name in re.findall(r"\bmemory\s+([A-Za-z_]\w*)", text):
            if name not in names:
                names.append(name)
        return names

    def flow_names(self, text: str = "") -> list[str]:
        names = list(self.session.flows)
        names += [n for n in re.findall(r"\bflow\s+([A-Za-z_]\w*)", text) if n not in names]
        return names

    # ------------------------------------------------------------ the Completer API
    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterator[Completion]:
        before = document.text_before_cursor
        match = _WORD.search(before)
        word = match.group(0) if match else ""
        if before.lstrip().startswith(".") and "\n" not in before:
            yield from self._dot_command(before.lstrip())
            return
        yield from _matching(self._candidates(before, word, document.text), word)

    def _dot_command(self, line: str) -> Iterator[Completion]:
        if re.fullmatch(r"\.\w*", line):
            for name, text in COMMANDS.items():
                if name.startswith(line):
                    yield Completion(name, -len(line), display_meta=text.split(": ")[-1])
            return
        word = _WORD.search(line)
        typed = word.group(0) if word else ""
        if re.fullmatch(r"\.(show|clear|update|history|(export|stats)(\s+\w+)*)\s+\w*", line):
            yield from _matching([(n, "memory") for n in self.memory_names()], typed)
        elif re.fullmatch(r"\.trace\s+\w*", line):
            yield from _matching([("on", ""), ("off", "")], typed)
        elif m := re.fullmatch(r"\.(?:load|import)\s+(.*)", line):
            yield from self._paths.get_completions(Document(m.group(1)), CompleteEvent())

    def _candidates(self, before: str, word: str, text: str) -> list[tuple[str, str]]:
        """(candidate, meta) pairs for the position at the end of `before`."""
        if _MEMORY_TARGET.search(before):
            return [(n, "memory") for n in self.memory_names(text)]
        if _RUN_TARGET.search(before):
            return [(n, "flow") for n in self.flow_names(text)]
        block = _open_block(before)
        if block is not None:
            head, body = before[:block], before[block + 1 :]
            if re.search(r"\bmemory\s+\w+\s*$", head):
                return self._in_fields(body, MEMORY_FIELDS, "memory field")
            if re.search(r"\bwith\s*$", head):
                statement = re.findall(r"\b(remember|recall|forget)\b", head)
                fields = OPTION_FIELDS[statement[-1]] if statement else ()
                return self._in_fields(body, fields, "option")
            if re.search(r"\bflow\s+\w+\s*\([^)]*\)\s*(->\s*[\w<>?, ]+)?\s*$", head) or re.search(
                r"->\s*$|\belse\s*->\s*$", head
            ):
                return self._statement_start(body, FLOW_KEYWORDS)
        return self._statement_start(before, STATEMENT_KEYWORDS)

    def _in_fields(
        self, body: str, fields: Iterable[str], meta: str
    ) -> list[tuple[str, str]]:
        value = _FIELD_VALUE.search(body)
        if value:
            field = value.group(1)
            if field == "backend":
                return [(n, "backend") for n in self._backend_names()]
            return [(v, field) for v in FIELD_VALUES.get(field, ())]
        if _FIELD_NAME.search(body):
            used = set(_USED_FIELD.findall(body))
            return [(f"{f}: ", meta) for f in fields if f not in used]
        return []

    def _statement_start(self, before: str, keywords: Iterable[str]) -> list[tuple[str, str]]:
        line = before.rsplit("\n", 1)[-1]
        if re.fullmatch(r"\s*\w*", line):
            return [(k, "keyword") for k in keywords]
        names = [(n, "memory") for n in self.memory_names(before)]
        names += [(n, "variable") for n in self.session.bound_names()]
        return names + [(k, "keyword") for k in OTHER_KEYWORDS]


def _matching(candidates: Iterable[tuple[str, str]], word: str) -> Iterator[Completion]:
    seen: set[str] = set()
    for text, meta in candidates:
        if text in seen or not text.startswith(word) or text == word:
            continue
        seen.add(text)
        # a field name completes with its colon ("store: "), shown without it
        yield Completion(text, -len(word), display=text.rstrip(": "), display_meta=meta)


def _open_block(text: str) -> int | None:
    """Where the innermost `{` still open at the end of `text` is (skips strings, comments)."""
    stack: list[int] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in "\"'":
            end = text.find(char, i + 1)
            while end != -1 and text[end - 1] == "\\":
                end = text.find(char, end + 1)
            if end == -1:
                return stack[-1] if stack else None
            i = end + 1
            continue
        if text.startswith("//", i):
            newline = text.find("\n", i)
            i = n if newline == -1 else newline + 1
            continue
        if text.startswith("/*", i):
            close = text.find("*/", i + 2)
            i = n if close == -1 else close + 2
            continue
        if char == "{":
            stack.append(i)
        elif char == "}" and stack:
            stack.pop()
        i += 1
    return stack[-1] if stack else None
