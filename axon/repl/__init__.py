"""`axon repl`: keyboard or piped input -> a running AXON session, with results printed.

`main(file, memory_dir)` opens one `Session` and, when stdin is a terminal,
runs the prompt_toolkit loop (`axon.repl.prompt`); otherwise it reads all of
stdin and runs it statement by statement (`Console.run_script`), exiting 1 if
any input failed. Both go through one `Console` (`axon.repl.console`), which
executes inputs and dot commands and prints what happened. At a terminal the
banner lists the memories the store holds that the session has not declared
(`.declare NAME`, `axon.repl.stored`). Every backend is closed on the way out,
whatever the way out is.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from axon.errors import AxonError
from axon.redaction import redact_secrets
from axon.render import visible
from axon.repl.console import Console, needs_more, split_inputs

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

    from axon.memory.namespaces import Namespace

__all__ = ["Console", "main", "needs_more", "split_inputs"]


def main(
    file: Path | None = None,
    memory_dir: Path | None = None,
    *,
    namespace: Namespace | str | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    interactive: bool | None = None,
    prompt_input: Input | None = None,
    prompt_output: Output | None = None,
) -> int:
    """Run the REPL; returns the exit code (piped mode: 1 when any input failed).

    `FILE` preloads a program's declarations (its statements are skipped and
    listed; `.load FILE` runs them). `namespace` is the session's (`axon.Session`).
    A missing or unreadable FILE exits 1 before anything starts. The keyword
    arguments replace the standard streams and the terminal (tests drive the
    interactive loop through a pipe).
    """
    from axon.cli_vectors import wait_progress
    from axon.runtime.session import Session

    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    if interactive is None:
        interactive = stdin.isatty()
    if file is not None and not file.is_file():
        reason = "is a directory, not an .axon file" if file.is_dir() else "no such file"
        stderr.write(f"{file}: error: {reason}\n")
        return 1
    session = Session(memory_dir=memory_dir, namespace=namespace)
    session.memories.wait_progress = wait_progress  # a recall's wait is never silent
    code = 1
    try:
        console = Console(session, stdout, stderr)
        if interactive:
            code = _interactive(console, file, prompt_input, prompt_output)
        else:
            if file is not None:
                console.preload(file)
            code = console.run_script(stdin.read())
    finally:
        try:
            session.close()
        except AxonError as exc:  # e.g. a backend that failed to close
            stderr.write(visible(redact_secrets(f"error: {exc}")) + "\n")
            code = code or 1
    return code


def _interactive(
    console: Console, file: Path | None, prompt_input: Input | None, prompt_output: Output | None
) -> int:
    from axon import __version__
    from axon.repl.prompt import (
        confirm_with,
        history_path,
        make_prompt_session,
        open_history,
        run_interactive,
    )

    prompt_session = make_prompt_session(
        console, history=open_history(history_path()), input=prompt_input, output=prompt_output
    )
    console.confirm = confirm_with(prompt_session)
    memory_dir = console.session.memories.memory_dir
    console.print_line(
        f"AXON {__version__} — persistent memories in {memory_dir}. "
        ".help for commands, Ctrl-D to leave.",
        "dim",
    )
    stored = console.stored_line()  # what a program left in the store, not yet declared
    if stored:
        console.print_line(stored, "dim")
    if file is not None:
        console.preload(file)
    return run_interactive(console, prompt_session)
