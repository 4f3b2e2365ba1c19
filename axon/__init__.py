"""AXON memory: parse, check and run AXON programs with real, persistent, decaying memory.

The public API (docs/language.md, Python API):

- `parse(source, filename=...)` -> `ast.Program`
- `compile(source, filename=...)` -> `IRProgram`
- `run(source, filename=..., memory_dir=None, clock=None)` -> `RunResult` (records, events)
- `Session(memory_dir=None, clock=None)`: `execute(source)`, `events`, `close()`
- errors: `AxonError` (base: `line`, `column`, `message`), `AxonSyntaxError`,
  `AxonCheckError` (`diagnostics`), `AxonRuntimeError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from axon.errors import (
    AxonCheckError,
    AxonError,
    AxonMemoryError,
    AxonRuntimeError,
    AxonSyntaxError,
    Diagnostic,
)

if TYPE_CHECKING:
    from axon.compiler.ast import Program
    from axon.compiler.ir import IRProgram
    from axon.runtime.session import RunResult, Session

__all__ = [
    "AxonCheckError",
    "AxonError",
    "AxonMemoryError",
    "AxonRuntimeError",
    "AxonSyntaxError",
    "Diagnostic",
    "Session",
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


def __getattr__(name: str) -> Any:
    if name == "Session":
        from axon.runtime.session import Session

        return Session
    raise AttributeError(f"module 'axon' has no attribute {name!r}")
