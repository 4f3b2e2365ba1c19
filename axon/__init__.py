"""AXON memory: parse, check and run AXON programs with real, persistent, decaying memory.

The public API (docs/language.md §13 Python API):

- `parse(source, filename=...)` -> `ast.Program`
- `compile(source, filename=...)` -> `IRProgram`
- `run(source, filename=..., memory_dir=None, clock=None)` -> `RunResult` (records, events)
- `Session(memory_dir=None, clock=None, *, pg_dsn=None, model=None, embedder=None)`:
  `execute(source)`, `memory(name)` (a `MemoryHandle`: Python values in and out),
  `events`, `records`, `close()`; `AsyncSession`, the same as coroutines
  (docs/language.md §13.3 `axon.AsyncSession`)
- `Namespace`: a checked namespace ("acme/u42"; docs/language.md §14 Namespaces)
- `Entry`, `Result` and `Results`: what a handle's get/list and recall return
  (`Results` is a list with `below_floor`); `Version`: what `history` returns
- the interfaces to plug in: `ModelClient` (with `ModelRequest`, `OfflineModelClient`)
  and `Embedder`
- `axon.agent`: seed 001's agent-loop protocol (`AxonMemory` over a session or
  handle, `InMemoryMemory`, `MemoryRecord`, `format_recalled`; docs/agents.md)
- errors: `AxonError` (base: `line`, `column`, `message`), `AxonSyntaxError`,
  `AxonCheckError` (`diagnostics`), `AxonRuntimeError`, `AxonMemoryError`,
  `AxonSessionError` (a closed session, a call from inside its own operation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from axon.errors import (
    AxonCheckError,
    AxonError,
    AxonMemoryError,
    AxonRuntimeError,
    AxonSessionError,
    AxonSyntaxError,
    Diagnostic,
)

if TYPE_CHECKING:
    from axon.compiler.ast import Program
    from axon.compiler.ir import IRProgram
    from axon.memory.embeddings.base import Embedder
    from axon.memory.namespaces import Namespace
    from axon.memory.versions import Version
    from axon.runtime.handle import AsyncMemoryHandle, Entry, MemoryHandle, Result, Results
    from axon.runtime.model import ModelClient, ModelRequest, OfflineModelClient
    from axon.runtime.session import AsyncSession, RunResult, Session

__all__ = [
    "AsyncMemoryHandle",
    "AsyncSession",
    "AxonCheckError",
    "AxonError",
    "AxonMemoryError",
    "AxonRuntimeError",
    "AxonSessionError",
    "AxonSyntaxError",
    "Diagnostic",
    "Embedder",
    "Entry",
    "MemoryHandle",
    "ModelClient",
    "ModelRequest",
    "Namespace",
    "OfflineModelClient",
    "Result",
    "Results",
    "Session",
    "Version",
    "compile",
    "parse",
    "run",
]

__version__ = "0.1.0"


def parse(source: str, filename: str = "<input>") -> Program:
    """Parse AXON text into its AST; raises `AxonSyntaxError`."""
    from axon.compiler.parser import parse as _parse

    return _parse(source, filename)


def compile(source: str, filename: str = "<input>") -> IRProgram:
    """Parse and check AXON text into IR; raises `AxonSyntaxError` or `AxonCheckError`."""
    from axon.compiler.checker import check
    from axon.source import Source

    return check(parse(source, filename), Source(source, filename))


def run(
    source: str,
    filename: str = "<input>",
    memory_dir: Any = None,
    clock: Any = None,
) -> RunResult:
    """Check and run a whole program once; returns its output records and trace events."""
    from axon.runtime.session import run as _run

    return _run(source, filename=filename, memory_dir=memory_dir, clock=clock)


_LAZY = {
    "AsyncMemoryHandle": "axon.runtime.handle",
    "AsyncSession": "axon.runtime.session",
    "Embedder": "axon.memory.embeddings.base",
    "Entry": "axon.runtime.handle",
    "MemoryHandle": "axon.runtime.handle",
    "ModelClient": "axon.runtime.model",
    "ModelRequest": "axon.runtime.model",
    "Namespace": "axon.memory.namespaces",
    "OfflineModelClient": "axon.runtime.model",
    "Result": "axon.runtime.handle",
    "Results": "axon.runtime.handle",
    "Session": "axon.runtime.session",
    "Version": "axon.memory.versions",
}
"""Names imported on first use, so `import axon` (and `axon.parse`) stays cheap."""


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'axon' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(home), name)
