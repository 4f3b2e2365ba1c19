"""One REPL input (AXON source or a dot command) -> its effect on a `Session` and printed output.

`Console` is the part of the REPL that knows nothing about terminals, like
`code.InteractiveConsole`: `needs_more(text)` says whether the parser stopped
at the end of the text (so the input continues on the next line),
`run_input(text)` executes one complete input, and `run_script(text)` feeds
piped input statement by statement. The interactive front end
(`axon.repl.prompt`) and the piped mode share it, so both print the same
things: remember confirmations, recall tables, diagnostics with a caret. Everything it
prints may hold stored text, so all of it goes through `render.visible` (control
characters as escapes) and none of it is read as rich markup.
"""

from __future__ import annotations

import os
import re
import time
import traceback
from collections.abc import Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TextIO, TypeVar

from rich.console import Console as RichConsole
from rich.markup import escape

from axon import render
from axon.compiler import ast
from axon.compiler.names import Suggester, did_you_mean
from axon.compiler.parser import parse
from axon.errors import AxonCheckError, AxonError, AxonMemoryError, AxonSyntaxError, Diagnostic
from axon.files import replacing
from axon.memory.backend import MAX_TOP_K
from axon.redaction import redact_secrets
from axon.runtime.session import Session
from axon.runtime.tracer import TraceEvent
from axon.source import Source, Span

T = TypeVar("T")

COMMANDS: dict[str, str] = {
    ".help": "show this help",
    ".memories": "list memories: store, backend, retrieval, decay, entry count; and those "
    "the store holds that this session has not declared",
    ".declare": ".declare NAME: declare a memory the store holds, with the store's settings "
    "(persistent, sqlite)",
    ".show": ".show NAME [N]: the N newest entries of memory NAME (default 10)",
    ".stats": ".stats [NAME...]: per tier stores, recalls, forgets, promotions, demotions",
    ".clear": ".clear NAME: delete every entry of memory NAME",
    ".update": ".update NAME KEY VALUE: change the value of an entry of NAME (VALUE read as "
    "JSON when it parses, else as text); the rest of the entry stays",
    ".history": ".history NAME KEY: the versions memory NAME keeps of KEY, newest first "
    "(a memory declared with history: N)",
    ".trace": ".trace on|off: print trace events as they happen",
    ".load": ".load FILE: run a whole program (declarations and statements)",
    ".export": ".export [--with-vectors] [NAME...] FILE: write memories (default: all) to an "
    "export file (with their stored vectors)",
    ".import": ".import FILE: store the entries of an export file in declared memories",
    ".quit": "leave (so do .exit and Ctrl-D)",
    ".exit": "leave",
}
"""Dot commands and their one-line help, in `.help` order."""

_STATEMENTS = (ast.Run, ast.Let, ast.Remember, ast.Recall, ast.Forget)
_DEFAULT_SHOW = 10


def _show_count(text: str) -> int | None:
    """N of `.show NAME N`: ASCII digits from 1 to `MAX_TOP_K` (a larger count overflows
    the SQL LIMIT; `str.isdigit` also takes '²', which `int` refuses)."""
    if not (text.isascii() and text.isdigit()):
        return None
    count = int(text)
    return count if 1 <= count <= MAX_TOP_K else None


def needs_more(text: str) -> bool:
    """True when `text` stopped too early (inside `{ ... }`, after `->`, ...).

    Like `code.compile_command` returning None: the input should continue on the
    next line. Dot commands and blank text never need more.
    """
    if not text.strip() or text.lstrip().startswith("."):
        return False
    try:
        parse(text, "<repl>")
    except AxonSyntaxError as exc:
        return exc.incomplete
    return False


class Console:
    """Runs REPL inputs against `session`, printing results to `out` and errors to `err`.

    `confirm(question) -> bool` is asked before `.clear` empties a memory; with
    None (piped mode) nothing is asked. `failures` counts inputs that failed;
    `done` becomes True after `.quit`.
    """

    def __init__(
        self,
        session: Session,
        out: TextIO,
        err: TextIO,
        *,
        confirm: Callable[[str], bool] | None = None,
        color: bool | None = None,
        width: int | None = None,
    ) -> None:
        self.session = session
        self.out = out
        self.err = err
        self.confirm = confirm
        self.inputs = 0
        self.failures = 0
        self.done = False
        self.trace = False
        force = None if color is None else color
        self.rich = RichConsole(
            file=out,
            force_terminal=force,
            no_color=color is False,
            highlight=False,
            width=width,
            soft_wrap=True,  # messages are never broken; only tables fit the width
        )
        self._fixed_width = width
        session.tracer.subscribe(self._on_event)

    # ------------------------------------------------------------ output helpers
    @property
    def width(self) -> int:
        """Tables fit this many columns: the terminal's width, else 100."""
        if self._fixed_width:
            return self._fixed_width
        return self.rich.width if self.rich.is_terminal else 100

    def _say(self, text: str) -> None:
        self.out.write(render.visible(text) + "\n")
        self.out.flush()

    def print_line(self, text: str, style: str) -> None:
        """One styled line: `visible`, and escaped so that rich reads no markup in it."""
        self.rich.print(escape(render.visible(text)), style=style)

    def _error(self, text: str) -> None:
        self.err.write(render.visible(redact_secrets(text)) + "\n")
        self.err.flush()

    def _fail(self, text: str) -> bool:
        self._error(text)
        self.failures += 1
        return False

    def _on_event(self, event: TraceEvent) -> None:
        if self.trace:
            for i, line in enumerate(render.format_event(event.to_dict()).splitlines()):
                self._say(("trace: " if i == 0 else "       ") + line)

    # ------------------------------------------------------------ inputs
    def run_input(self, text: str) -> bool:
        """Run one complete input (source or a dot command); False when it failed."""
        stripped = text.strip()
        if not stripped:
            return True
        if stripped.startswith("."):
            return self.run_command(stripped)
        self.inputs += 1
        return self.run_source(text, f"<repl:{self.inputs}>")

    def run_command(self, line: str) -> bool:
        """`command(line)`, with a failing backend reported instead of ending the REPL."""
        try:
            return self.command(line)
        except AxonMemoryError as exc:  # (an AxonError: it must come first)
            return self._fail(f"error: {exc}")
        except AxonError as exc:
            return self._fail(self.render_error(exc))
        except KeyboardInterrupt:
            return self._fail("interrupted")
        except Exception as exc:  # a bug in AXON or a backend: keep the session
            return self._fail(_internal(exc))

    def run_source(self, text: str, filename: str, *, line_offset: int = 0) -> bool:
        """Check and run `text` in the session; print records, warnings and errors.

        `line_offset` is how many lines of the input came before `text` (piped mode
        reports lines of the whole of stdin, not of one statement). The text runs
        behind that many empty lines, so every position is a line of stdin: the
        caret's, those inside messages ("'{' opened at line 3"), and those of errors
        that come later from this text (a flow declared here, run later).
        """
        known = set(self.session.memory_names())
        warned = len(self.session.warnings)
        text = "\n" * line_offset + text
        source = Source(text, filename)
        try:
            records = self.session.execute(text, filename)
        except AxonError as exc:
            self._fail(self.render_error(exc))
            self._note_stored(_undefined_memories(exc))
            return False
        except KeyboardInterrupt:
            return self._fail("interrupted")
        except Exception as exc:  # a bug in AXON: say so briefly and keep the session
            return self._fail(_internal(exc))
        for warning in self.session.warnings[warned:]:
            self._error(self._render(warning, source))
        for name in self.session.memory_names():
            if name not in known:
                self._announce_memory(name)
        for record in records:
            self.print_record(record)
        return True

    def render_error(self, exc: AxonError) -> str:
        """The diagnostic(s) of `exc`, with line numbers shifted in piped mode."""
        if isinstance(exc, AxonMemoryError):  # no position: its text names memory and key
            return f"error: {exc}"
        if isinstance(exc, AxonCheckError):
            diagnostics = exc.diagnostics
        else:
            diagnostics = [Diagnostic(exc.message, exc.span)]
        return "\n".join(self._render(d, exc.source) for d in diagnostics)

    def _render(self, diagnostic: Diagnostic, source: Source | None) -> str:
        return diagnostic.render(source)

    def _announce_memory(self, name: str) -> None:
        for memory in self.session.describe_memories():
            if memory["name"] != name:
                continue
            line = (
                f"memory {name}: {memory['store']}, {memory['backend']}, "
                f"{memory['retrieval']}, decay {memory['decay']}"
            )
            if memory["store"] == "persistent":
                line += f", {_entries(memory['entries'])}"
            self.print_line(line, "dim")

    def print_record(self, record: Mapping[str, Any]) -> None:
        """A remember as one line with its key; a recall as a heading and a table."""
        if record.get("op") == "remember":
            self.print_line(render.remember_line(record), "green")
        elif record.get("op") == "recall":
            self.print_line(render.recall_heading(record), "bold")
            if record.get("results"):
                self._say(render.recall_table(record, self.width))
            note = render.below_floor_line(record.get("below_floor"))
            if note:
                self.print_line(note, "dim")
        elif record.get("op") == "forget":
            self.print_line(render.forget_line(record), "green")
        else:
            self._say(render.format_record(record))

    # ------------------------------------------------------------ piped mode
    def run_script(self, text: str, filename: str = "<stdin>") -> int:
        """Run piped input statement by statement; 0 when every input succeeded, else 1.

        Lines accumulate until they parse as complete input (blank lines inside a
        block are kept, unlike the interactive prompt); each complete chunk is
        run at once and its errors name lines of the whole input. Errors are
        printed and the script goes on.
        """
        for start, chunk in split_inputs(text):
            if self.done:
                break
            stripped = chunk.strip()
            if stripped.startswith("."):
                self.run_command(stripped)
            else:
                self.inputs += 1
                self.run_source(chunk, filename, line_offset=start - 1)
        return 1 if self.failures else 0

    # ------------------------------------------------------------ files
    def preload(self, path: Path) -> bool:
        """Load the declarations of the program in `path`; its statements are skipped.

        Statements (`run`, `let`, `remember`, `recall`, `forget`) are blanked out in place,
        so positions in errors are those of the file. `.load FILE` runs everything.
        """
        text = self._read(path)
        if text is None:
            return False
        try:
            declarations, skipped = declarations_only(text, str(path))
        except AxonSyntaxError as exc:
            return self._fail(self._syntax_error_in_file(path, exc))
        except AxonError as exc:
            return self._fail(self.render_error(exc))
        if not self.run_source(declarations, str(path)):
            return False
        summary = f"loaded the declarations of {path}"
        memories = self.session.memory_names()
        if memories:
            summary += f" (memories: {', '.join(memories)})"
        self.print_line(summary, "dim")
        if skipped:
            lines = ", ".join(str(line) for line in skipped)
            self.print_line(
                f"skipped {len(skipped)} top-level statement{'s' if len(skipped) != 1 else ''}"
                f" (line{'s' if len(skipped) != 1 else ''} {lines}); "
                f".load {path} runs the whole program",
                "dim",
            )
        return True

    def load(self, path: Path) -> bool:
        """Run the whole program in `path` (declarations and statements)."""
        text = self._read(path)
        if text is None:
            return False
        if path.suffix != ".axon":
            try:
                parse(text, str(path))
            except AxonSyntaxError as exc:
                return self._fail(self._syntax_error_in_file(path, exc))
        return self.run_source(text, str(path))

    def _syntax_error_in_file(self, path: Path, exc: AxonSyntaxError) -> str:
        """The diagnostic, or for a file not named `.axon` one line that echoes none of it.

        `.load ~/.pgpass` must not print the file's first line: a file that is
        not named like a program and does not parse is reported by position only.
        """
        if path.suffix == ".axon":
            return self.render_error(exc)
        return (
            f"{path}:{exc.line}:{exc.column}: error: not an AXON program "
            f"(a syntax error at line {exc.line}, column {exc.column}; "
            "AXON programs are .axon files)"
        )

    def _read(self, path: Path) -> str | None:
        """A program file as `axon check` reads it (`read_source`: bounded in size; a bad
        byte named by line and column, its line shown with a caret in an .axon file)."""
        from axon.source import SourceError, read_source

        try:
            return read_source(path)
        except SourceError as exc:
            if path.suffix != ".axon":  # not a program (a .pgpass?): echo none of its text
                exc.text = ""
            self._fail(str(exc))
        return None

    # ------------------------------------------------------------ the store's memories
    def stored_undeclared(self) -> dict[str, int]:
        """The memories the session's store (its memory directory) holds that this session
        has not declared, with their entry counts."""
        from axon.repl.stored import stored_memories

        stored = self._in_session(stored_memories(self.session.memories.memory_dir))
        declared = set(self.session.memory_names())
        return {name: count for name, count in stored.items() if name not in declared}

    def stored_line(self) -> str | None:
        """`the store holds 2 memories not declared in this session: Notes (3 entries),
        ...; .declare NAME declares one`, or None when there are none."""
        stored = self.stored_undeclared()
        if not stored:
            return None
        shown = ", ".join(f"{name} ({_entries(count)})" for name, count in stored.items())
        return (
            f"the store holds {render.counted(len(stored), 'memory', 'memories')} not "
            f"declared in this session: {shown}; .declare NAME declares one"
        )

    def _note_stored(self, names: list[str]) -> None:
        """After an error naming undeclared memories: say which ones the store holds."""
        if not names:
            return
        try:
            stored = self.stored_undeclared()
        except AxonError:  # a store that cannot be read now: the error said enough
            return
        for name in names:
            if name in stored:
                self._error(
                    f"note: the store holds a memory '{name}' ({_entries(stored[name])}) "
                    f"not declared in this session: .declare {name} declares it"
                )

    def declare_stored(self, name: str) -> bool:
        """`.declare NAME`: declare a memory the store holds with the store's settings
        (`axon.repl.stored.declaration`); announced like any declaration."""
        from axon.repl.stored import declaration

        if name in self.session.memory_names():
            return self._fail(f"error: memory '{name}' is already declared in this session")
        stored = self.stored_undeclared()
        if name not in stored:
            close = Suggester(stored).closest(name)
            hint = f" (did you mean '{close}'?)" if close else ""
            held = f"; it holds: {', '.join(stored)}" if stored and not close else ""
            where = self.session.memories.memory_dir
            return self._fail(f"error: the store in {where} holds no memory '{name}'{hint}{held}")
        text = declaration(name)
        if text is None:
            return self._fail(
                f"error: '{name}' is not a name a program can declare a memory as "
                "(axon memory export/import --into copies it under another name)"
            )
        return self.run_source(text, "<.declare>")

    # ------------------------------------------------------------ dot commands
    def command(self, line: str) -> bool:
        """Run one dot command; False when it failed (unknown command, bad argument)."""
        word, *args = line.split()
        match word, args:
            case ".help", []:
                self.help()
            case ((".quit" | ".exit"), []):
                self.done = True
            case ".memories", []:
                return self.show_memories()
            case ".show", [name]:
                return self.show(name, _DEFAULT_SHOW)
            case ".show", [name, count] if _show_count(count) is not None:
                return self.show(name, int(count))
            case ".show", [_, count] if _show_count(count) is None and count.isdecimal():
                return self._fail(
                    f"error: usage: .show NAME [N]  (N a positive number, "
                    f"at most {MAX_TOP_K:,})"
                )
            case ".show", _:
                return self._fail("error: usage: .show NAME [N]  (N a positive number)")
            case ".stats", names:
                return self.show_stats(names)
            case ".declare", [name]:
                return self.declare_stored(name)
            case ".declare", _:
                return self._fail("error: usage: .declare NAME")
            case ".update", [name, key, _, *_]:
                return self.update(name, key, line.split(None, 3)[3])
            case ".update", _:
                return self._fail("error: usage: .update NAME KEY VALUE")
            case ".history", [name, key]:
                return self.history(name, key)
            case ".history", _:
                return self._fail("error: usage: .history NAME KEY")
            case ".clear", [name]:
                return self.clear(name)
            case ".clear", _:
                return self._fail("error: usage: .clear NAME")
            case ".trace", []:
                self._say(f"trace is {'on' if self.trace else 'off'}")
            case ".trace", [("on" | "off") as state]:
                self.trace = state == "on"
                self._say(f"trace {state}")
            case ".trace", _:
                return self._fail("error: usage: .trace on|off")
            case (".load" | ".export" | ".import"), _ if "\x00" in line:
                return self._fail(f"error: {word}: a file name cannot contain a NUL character")
            case ".load", [_, *_]:
                return self.load(Path(os.path.expanduser(line.split(None, 1)[1].strip())))
            case ".load", []:
                return self._fail("error: usage: .load FILE")
            case ".export", ["--with-vectors", *names, target]:
                return self.export(names, Path(os.path.expanduser(target)), with_vectors=True)
            case ".export", [*names, target] if target != "--with-vectors":
                return self.export(names, Path(os.path.expanduser(target)))
            case ".export", _:
                return self._fail("error: usage: .export [--with-vectors] [NAME...] FILE")
            case ".import", [target]:
                return self.import_file(Path(os.path.expanduser(target)))
            case ".import", _:
                return self._fail("error: usage: .import FILE")
            case ((".help" | ".quit" | ".exit" | ".memories"), _):
                return self._fail(f"error: {word} takes no arguments")
            case _:
                hint = did_you_mean(word, COMMANDS)
                return self._fail(f"error: unknown command '{word}'{hint}; .help lists them")
        return True

    def help(self) -> None:
        lines = [
            "Type AXON declarations and statements; memories and `let` bindings persist.",
            "An unfinished block continues on the next line; an empty line ends it.",
            "",
        ]
        width = max(len(name) for name in COMMANDS)
        lines += [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
        lines += ["", "Tab completes keywords, memory fields and values, and memory names."]
        self._say("\n".join(lines))

    def show_memories(self) -> bool:
        memories = self.session.describe_memories()
        stored = self.stored_undeclared()
        if not memories:
            self._say("no memories declared yet (memory Notes { store: session })")
        else:
            self._say(render.memories_table(memories, self.width))
        if stored:
            self._say("")
            self._say("in the store, not declared in this session (.declare NAME declares one):")
            rows = [(name, f"{count:,}") for name, count in stored.items()]
            self._say(render.text_table(("memory", "entries"), rows, right={1}, width=self.width))
        return True

    def show_stats(self, names: list[str]) -> bool:
        """`.stats [NAME...]`: the counters of each memory (default: every declared one),
        a row per tier (`MemoryHandle.stats`)."""
        from axon.render import text_table
        from axon.runtime.tiers import COUNTERS

        for name in names:
            if not self._known_memory(name):
                return False
        chosen = names or self.session.memory_names()
        if not chosen:
            self._say("no memories declared yet (memory Notes { store: session })")
            return True
        rows = [
            (name, tier, *(f"{counts[c]:,}" for c in COUNTERS))
            for name in chosen
            for tier, counts in self.session.memory(name).stats().items()
        ]
        self._say(
            text_table(
                ("memory", "tier", *COUNTERS),
                rows,
                width=self.width,
                right=set(range(2, 2 + len(COUNTERS))),
                flex=0,
            )
        )
        return True

    def _known_memory(self, name: str) -> bool:
        names = self.session.memory_names()
        if name in names:
            return True
        close = Suggester(names).closest(name)
        hint = f" (did you mean '{close}'?)" if close else ""
        known = f"; declared: {', '.join(names)}" if names and not close else ""
        self._fail(f"error: no memory named '{name}'{hint}{known}")
        self._note_stored([name])
        return False

    def _count(self, name: str) -> int:
        counts = {m["name"]: m["entries"] for m in self.session.describe_memories()}
        return int(counts[name])

    def show(self, name: str, limit: int) -> bool:
        if not self._known_memory(name):
            return False
        entries = self.session.recent_entries(name, limit)
        total = self._count(name)
        if not entries:
            self._say(f"{name} is empty")
            return True
        self._say(f"{name}: {len(entries)} of {_entries(total)}, newest first")
        now = self.session.clock() if self.session.clock else time.time()
        self._say(render.entries_table(entries, now, self.width))
        return True

    def _in_session(self, work: Coroutine[Any, Any, T]) -> T:
        """Run transfer work on the session's loop, where its backends live, serialised
        with every other operation (`Session.run_on_loop`)."""
        return self.session.run_on_loop(work)

    def export(self, names: list[str], path: Path, *, with_vectors: bool = False) -> bool:
        """`.export [--with-vectors] [NAME...] FILE`: the memories (default: every declared
        one) to FILE, with their stored vectors when asked."""
        from axon.memory.transfer import TransferReport, export_entries

        for name in names:
            if not self._known_memory(name):
                return False
        chosen = names or self.session.memory_names()
        if not chosen:
            return self._fail("error: no memories declared yet: nothing to export")

        async def export(handle: IO[Any]) -> TransferReport:
            sources = [  # every store of each memory (each tier), each key once
                (name, backend, scope)
                for name in chosen
                for backend, scope in await self.session.memories[name].sources()
            ]
            return await export_entries(
                handle, sources, with_vectors=with_vectors, base=self.session.namespace
            )

        try:
            with replacing(path) as handle:
                report = self._in_session(export(handle))
        except OSError as exc:
            return self._fail(f"{path}: error: cannot write the export ({exc.strerror or exc})")
        except AxonError as exc:
            return self._fail(f"error: {exc}")
        memories = render.counted(len(chosen), "memory", "memories")
        self._say(f"exported {_entries(report.entries)} of {memories} to {path}")
        return True

    def import_file(self, path: Path) -> bool:
        """`.import FILE`: each entry into the declared memory it names (else an error).

        Each entry goes where the memory places it (`Memory.place`): in a tiered memory a
        key lives in one tier, so an entry whose key a tier already holds replaces it
        there; a new key goes to the tier a remember would write (its `persist_if`
        policy, else the memory's `store:`).

        Namespaces as `axon memory import --namespace` places them: in a session of
        namespace P, the exported namespace lands at P and a line below it below P
        (acme/u42/work exported from acme/u42 lands at P/work); in the root, each line
        in the namespace it names. So two users' entries never merge into one.
        """
        from axon.compiler.check_options import key_problem
        from axon.memory.backend import MemoryBackend
        from axon.memory.entry import NewEntry
        from axon.memory.namespaces import Namespace
        from axon.memory.transfer import (
            import_entries,
            placed_namespace,
            read_lines,
            split_shown,
        )

        names = self.session.memory_names()
        # this file's keys, by namespace and memory
        placed: dict[tuple[Namespace, str, str], tuple[MemoryBackend, str]] = {}

        async def route(name: str, item: NewEntry) -> tuple[MemoryBackend, str]:
            problem = key_problem(item.key, "")  # what a program or handle could name
            if problem is not None:
                raise AxonMemoryError(problem, memory=name, key=item.key)
            if name not in names:
                hint = did_you_mean(name, names)
                raise AxonMemoryError(
                    f"memory '{name}' is not declared in this session{hint}; declare it first"
                )
            space = placed_namespace(name, item)
            place = placed.get((space, name, item.key))
            if place is None:  # where the key lives, else where a remember would write it
                memory = await self.session.memories.in_namespace(name, space)
                place = await memory.place(item.key, item.metadata or {})
                placed[(space, name, item.key)] = place
            return place

        here = self.session.namespace
        try:
            with open(path, encoding="utf-8", newline="") as handle:
                report = self._in_session(
                    import_entries(
                        read_lines(handle, str(path)), route, source=str(path),
                        namespace=None if here.is_root else here,
                    )
                )
        except FileNotFoundError:
            return self._fail(f"{path}: error: no such file")
        except IsADirectoryError:
            return self._fail(f"{path}: error: is a directory, not an export file")
        except OSError as exc:
            return self._fail(f"{path}: error: cannot read ({exc.strerror or exc})")
        except AxonError as exc:
            text = str(exc)
            return self._fail(text if text.startswith(f"{path}:") else f"error: {text}")
        skipped = f" ({report.skipped_expired} already expired)" if report.skipped_expired else ""
        self._say(
            f"imported {_entries(report.entries)} into "
            f"{render.counted(len(report.memories), 'memory', 'memories')}{skipped}"
        )
        for shown in report.memories:  # their vectors: in the background, as after remembers
            space, name = split_shown(shown)
            try:
                memory = self._in_session(self.session.memories.in_namespace(name, space))
                pending = self._in_session(memory.resume_vectors())
            except AxonError as exc:
                return self._fail(f"error: {exc}")
            if pending:
                self.print_line(
                    f"computing {render.counted(pending, 'vector', 'vectors')} of {shown} in "
                    "the background (a semantic or hybrid recall waits for them, showing "
                    "progress)",
                    "dim",
                )
        return True

    def update(self, name: str, key: str, text: str) -> bool:
        """`.update NAME KEY VALUE`: `handle.update(key, value=...)` (docs/language.md
        §5.2); the value is `text` read as JSON when it parses, else the text itself."""
        import json

        if not self._known_memory(name):
            return False
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        try:
            self.session.memory(name).update(key, value=value)
        except TypeError as exc:  # a value no memory stores (JSON gives none such)
            return self._fail(f"error: {exc}")
        self._say(f"updated {key} in {name}")
        return True

    def history(self, name: str, key: str) -> bool:
        """`.history NAME KEY`: `handle.history(key)` (docs/language.md §5.3), one line per
        version, newest first: the op, when, and the value (`(forgotten)` for a forget)."""
        import json

        if not self._known_memory(name):
            return False
        versions = self.session.memory(name).history(key)
        if not versions:
            self._say(f"no history of {key} in {name}")
            return True
        for version in versions:
            value = version.value if isinstance(version.value, str) else json.dumps(version.value)
            shown = "(forgotten)" if version.op == "forget" else value
            self._say(f"{version.op:<8}  {render.clock_text(version.updated_at)}  {shown}")
        return True

    def clear(self, name: str) -> bool:
        if not self._known_memory(name):
            return False
        if self.confirm is not None:
            count = self._count(name)
            if count and not self.confirm(f"delete {_entries(count)} of {name}?"):
                self._say("nothing cleared")
                return True
        removed = self.session.clear_memory(name)
        self._say(f"cleared {name}: {_entries(removed)} removed")
        return True


# ---------------------------------------------------------------- helpers


def split_inputs(text: str) -> Iterator[tuple[int, str]]:
    """Piped text -> (first line number, complete input) pairs, like typing it line by line.

    A dot command is one line. Source lines accumulate until the parser no
    longer stops at their end; what is left at the end of the text is yielded
    as it is (running it reports the unexpected end of input).
    """
    buffer: list[str] = []
    start = 1
    for number, line in enumerate(text.splitlines(), 1):
        if not buffer:
            if not line.strip():
                continue
            if line.lstrip().startswith("."):
                yield number, line
                continue
            start = number
        buffer.append(line)
        chunk = "\n".join(buffer)
        if not needs_more(chunk):
            if chunk.strip():
                yield start, chunk
            buffer = []
    if buffer and "\n".join(buffer).strip():
        yield start, "\n".join(buffer)


def declarations_only(text: str, filename: str) -> tuple[str, list[int]]:
    """`text` with its top-level statements blanked out, and their line numbers.

    Each statement is replaced (up to the next item) by spaces, keeping line
    breaks, so every remaining declaration keeps its line and column.
    Raises `AxonSyntaxError` when the text does not parse.
    """
    program = parse(text, filename)
    starts = _line_starts(text)

    def offset(span: Span) -> int:
        return starts[span.line - 1] + span.column - 1

    chars = list(text)
    skipped: list[int] = []
    items = program.items
    for i, item in enumerate(items):
        if not isinstance(item, _STATEMENTS):
            continue
        begin = offset(item.span)
        end = offset(items[i + 1].span) if i + 1 < len(items) else len(text)
        for j in range(begin, end):
            if chars[j] not in "\r\n":
                chars[j] = " "
        skipped.append(item.span.line)
    return "".join(chars), skipped


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, char in enumerate(text):
        if char == "\n":
            starts.append(i + 1)
    return starts


_UNDEFINED = re.compile(r"Undefined memory '([^']+)'")


def _undefined_memories(exc: AxonError) -> list[str]:
    """The memory names an error says are undefined (the checker's 'Undefined memory')."""
    if not isinstance(exc, AxonCheckError):
        return []
    return [m.group(1) for d in exc.diagnostics for m in _UNDEFINED.finditer(d.message)]


def _entries(count: int) -> str:
    return render.counted(count, "entry", "entries")


def _internal(exc: BaseException) -> str:
    if os.environ.get("AXON_DEBUG"):
        return "".join(traceback.format_exception(exc)).rstrip()
    return (
        f"internal error: {type(exc).__name__}: {exc}\n"
        "This is a bug in AXON, not in your input. Set AXON_DEBUG=1 to see the traceback."
    )
