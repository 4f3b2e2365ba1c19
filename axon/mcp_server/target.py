"""Which memory `axon mcp` serves: the default `AgentMemory`, or one a program declares.

`open_tool(...)` opens an `AsyncSession` (with `axon run`'s choices: the memory
directory, the PostgreSQL DSN), declares the memory and returns the `MemoryTool`
over it. Without `--program` that is `default_declaration` (on the backend the
registry picks for the store: sqlite, or pgvector with `--pg-dsn`); with one, the
program is checked and its declarations bound, and none of its statements run. A
problem is a `SetupError`: its message is what the command prints (diagnostics with
file:line:col and a caret), its code the exit code.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from axon.compiler.names import did_you_mean
from axon.errors import AxonCheckError, AxonError, AxonRuntimeError
from axon.mcp_server.tool import KEPT_HISTORY, MemoryTool
from axon.memory.namespaces import Namespace
from axon.memory.registry import backend_settings, registry
from axon.runtime.session import AsyncSession

DEFAULT_MEMORY = "AgentMemory"

EXIT_CHECK, EXIT_USAGE, EXIT_RUNTIME = 1, 2, 3


def default_declaration(
    pg_dsn: str | None = None, settings: Mapping[str, Mapping[str, str]] | None = None
) -> str:
    """The memory served without `--program`: what a program declares to share it. Its
    backend is the registry's for the store the settings name (`store_backend`: pgvector
    with a DSN), else the default store's (sqlite)."""
    chosen = registry.store_backend(backend_settings(settings, pg_dsn=pg_dsn, who="axon mcp"))
    return f"memory {DEFAULT_MEMORY} {{ store: persistent backend: {chosen.name} }}"


class SetupError(Exception):
    """`axon mcp` cannot start: `str(self)` is the message, `code` the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _choose(declared: list[str], memory: str | None, program: Path) -> str:
    if memory is not None:
        if memory in declared:
            return memory
        raise SetupError(
            f"error: --memory {memory}: {program} declares no memory '{memory}'"
            f"{did_you_mean(memory, declared)} (declared: {', '.join(declared) or 'none'})",
            EXIT_USAGE,
        )
    if DEFAULT_MEMORY in declared:
        return DEFAULT_MEMORY
    if len(declared) == 1:
        return declared[0]
    if not declared:
        raise SetupError(f"error: {program} declares no memory to serve", EXIT_USAGE)
    raise SetupError(
        f"error: {program} declares several memories; choose one with --memory NAME "
        f"(declared: {', '.join(declared)})",
        EXIT_USAGE,
    )


async def open_tool(
    *,
    memory_dir: Path | None = None,
    pg_dsn: str | None = None,
    program: Path | None = None,
    program_text: str | None = None,
    memory: str | None = None,
    warn: Any = None,
    namespace: Namespace | str | None = None,
) -> MemoryTool:
    """The `memory` tool over the chosen memory, its session open (close it with
    `tool.session.close()`). `program_text` is the text of `program` (read by the
    caller); `warn(text)` receives warnings (the program's, a session memory's).

    The session is in `namespace` (None: `AXON_NAMESPACE`, else the root), and so is
    everything the tool reads and writes: the tool's handle is the session's, and no
    argument of the tool names a namespace (`tool.INPUT_SCHEMA`)."""
    if memory is not None and program is None:
        raise SetupError("error: --memory NAME needs --program FILE (the program "
                         "that declares it)", EXIT_USAGE)
    try:
        session = AsyncSession(
            memory_dir=memory_dir, pg_dsn=pg_dsn, history=KEPT_HISTORY, namespace=namespace
        )
    except AxonError as exc:  # a bad namespace: refused before anything is opened
        raise SetupError(f"error: {exc}", EXIT_USAGE) from None
    try:
        return await _open(session, pg_dsn, program, program_text, memory, warn)
    except BaseException:
        with contextlib.suppress(AxonError):
            await session.close()
        raise


async def _open(
    session: AsyncSession,
    pg_dsn: str | None,
    program: Path | None,
    program_text: str | None,
    memory: str | None,
    warn: Any,
) -> MemoryTool:
    try:
        if program is None:
            await session.declare(default_declaration(pg_dsn), "<axon mcp>")
            name = DEFAULT_MEMORY
        else:
            assert program_text is not None
            checked = await session.declare(program_text, str(program))
            if warn is not None:
                from axon.source import Source

                for warning in checked.warnings:
                    warn(warning.render(Source(program_text, str(program))))
            name = _choose([m.name for m in checked.memories], memory, program)
    except AxonCheckError as exc:
        raise SetupError(str(exc), EXIT_CHECK) from None
    except AxonRuntimeError as exc:
        raise SetupError(str(exc), EXIT_RUNTIME) from None
    except AxonError as exc:  # a syntax error
        raise SetupError(str(exc), EXIT_CHECK) from None
    decl = session.sync.memory_decls[name]
    if decl.store == "ephemeral":
        raise SetupError(
            f"error: memory '{name}' is ephemeral: its entries end with each call, so an "
            "agent could never read what it wrote; serve a persistent or session memory",
            EXIT_USAGE,
        )
    if decl.store == "session" and warn is not None:
        warn(f"warning: memory '{name}' is a session memory: its entries last only "
             "while this server runs")
    handle = session.memory(name)
    try:
        await handle.count()  # opens the store now: a bad one fails here, not on a call
    except AxonError as exc:
        raise SetupError(f"error: cannot open memory '{name}': {exc}", EXIT_RUNTIME) from None
    backend = session.sync.memories[name].backend
    path = getattr(backend, "path", None)
    store_file = path if isinstance(path, Path) and os.path.isfile(path) else None
    return MemoryTool(session, name, store_file)
