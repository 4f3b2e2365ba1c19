"""Keystrokes at a terminal -> complete inputs for a `Console` (the prompt_toolkit front end).

Enter submits the input when it is complete and otherwise opens a continuation
line (`...> `), indented by the open braces; Enter on an empty continuation
line submits anyway so the parser's error is shown. Ctrl-C cancels the
current input, Ctrl-D leaves. History lives in `~/.axon_history` (or
`$AXON_HISTORY_FILE`; mode 0600, DSN passwords saved as `***`), Tab
completes through `AxonCompleter`, and what is typed is coloured by the `axon`
Pygments lexer (`highlight.AxonReplLexer`: dot commands are not AXON source).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.lexers import PygmentsLexer
from prompt_toolkit.output import Output

from axon.files import replacing
from axon.highlight import AxonReplLexer
from axon.redaction import redact_secrets
from axon.repl.complete import AxonCompleter
from axon.repl.console import Console, needs_more

PROMPT = "axon> "
CONTINUATION = "...> ".rjust(len(PROMPT))
HISTORY_ENV = "AXON_HISTORY_FILE"
INDENT = "  "


def history_path() -> Path:
    """`$AXON_HISTORY_FILE` if set, else `~/.axon_history`."""
    return Path(os.environ.get(HISTORY_ENV) or Path.home() / ".axon_history").expanduser()


class PrivateFileHistory(FileHistory):
    """A `FileHistory` kept private: mode 0600, connection-string passwords never saved.

    What is typed is kept as it is for this session's Up arrow; only the copy
    written to the file has its DSN passwords replaced by `***`.
    """

    def store_string(self, string: str) -> None:
        super().store_string(redact_secrets(string))


def open_history(path: Path | None = None) -> History:
    """A private file history at `path` (default `history_path()`), in memory if unwritable.

    The file is created with mode 0600; an existing one is set to 0600 and any
    password an older version saved in it is redacted in place.
    """
    path = path or history_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        os.chmod(path, 0o600)
        _redact_file(path)
    except OSError:
        return InMemoryHistory()
    return PrivateFileHistory(str(path))


def _redact_file(path: Path) -> None:
    """Rewrite `path` (atomically, mode 0600) when it holds a connection-string password."""
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    clean = redact_secrets(text)
    if clean == text:
        return
    with replacing(path, binary=True) as handle:  # keeps the file's mode (0600)
        handle.write(clean.encode("utf-8", errors="surrogateescape"))


def _depth(text: str) -> int:
    """How many `{` are open at the end of `text` (ignores braces in strings; good enough)."""
    depth = 0
    in_string: str | None = None
    for char in text:
        if in_string:
            if char == in_string:
                in_string = None
        elif char in "\"'":
            in_string = char
        elif char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
    return depth


def key_bindings() -> KeyBindings:
    """Enter: submit complete input, else continue on a new (indented) line; `}` dedents."""
    bindings = KeyBindings()

    @bindings.add("enter")
    def _enter(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        document = buffer.document
        text = document.text
        blank_continuation = "\n" in text and not document.current_line.strip()
        if document.is_cursor_at_the_end and not blank_continuation and needs_more(text):
            buffer.insert_text("\n" + INDENT * _depth(text))
        elif not document.is_cursor_at_the_end and needs_more(text):
            buffer.insert_text("\n")
        else:
            buffer.validate_and_handle()

    @bindings.add("}")
    def _close(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        line = buffer.document.current_line_before_cursor
        if line and not line.strip():
            buffer.delete_before_cursor(min(len(INDENT), len(line)))
        buffer.insert_text("}")

    return bindings


def _continuation(width: int, line_number: int, is_soft_wrap: int) -> StyleAndTextTuples:
    return [("class:continuation", CONTINUATION)]


def make_prompt_session(
    console: Console,
    *,
    history: History | None = None,
    input: Input | None = None,
    output: Output | None = None,
) -> PromptSession[str]:
    """The prompt_toolkit session of the interactive REPL (tests pass a pipe input)."""
    return PromptSession(
        PROMPT,
        multiline=True,
        key_bindings=key_bindings(),
        prompt_continuation=_continuation,
        completer=AxonCompleter(console.session),
        lexer=PygmentsLexer(AxonReplLexer),
        complete_while_typing=False,
        auto_suggest=AutoSuggestFromHistory(),
        history=history if history is not None else InMemoryHistory(),
        input=input,
        output=output,
        enable_history_search=False,
    )


def confirm_with(prompt_session: PromptSession[str]) -> Callable[[str], bool]:
    """A yes/no question asked on the same terminal (the answer is not kept in history)."""

    def confirm(question: str) -> bool:
        asker: PromptSession[str] = PromptSession(
            input=prompt_session.input, output=prompt_session.output
        )
        try:
            answer = asker.prompt(f"{question} [y/N] ")
        except (KeyboardInterrupt, EOFError):
            return False
        return answer.strip().lower() in ("y", "yes")

    return confirm


def run_interactive(console: Console, prompt_session: PromptSession[str]) -> int:
    """Read, run, print until `.quit` or Ctrl-D; Ctrl-C drops the current input. Returns 0."""
    while not console.done:
        try:
            text = prompt_session.prompt()
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        try:
            console.run_input(text)
        except KeyboardInterrupt:
            console.err.write("interrupted\n")
    return 0
