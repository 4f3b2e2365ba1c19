"""A session: the state of a REPL or an embedding application, and one-shot `run`.

`Session.execute(text)` parses and checks the text against everything the
session declared and bound before, binds new memories to their backends, runs
the statements and returns the output records (docs/language.md, Output records). Declarations,
`let` bindings and memories persist across calls; `close()` closes every
backend. `clock` (Unix seconds) drives timestamps and decay everywhere.

Threads and event loops. A `Session` is synchronous and safe to share: it owns
one private event loop running on a dedicated daemon thread, and every call
(`execute`, the inspection methods, `close`) takes the session's lock and runs
its work on that loop. Calls from several threads are therefore serialised:
each one either happens and returns its result, or raises and leaves the rest
of the session as it was. Because the loop is not the caller's, a Session
works the same from inside a running event loop (a notebook, a coroutine);
the caller's thread blocks while the call runs.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, NamedTuple, TypeVar

from axon.compiler import ir
from axon.compiler.checker import CheckEnv, check, extend_env
from axon.compiler.parser import parse
from axon.errors import AxonMemoryError, AxonRuntimeError
from axon.memory.entry import Clock, MemoryEntry
from axon.memory.registry import BackendRegistry
from axon.memory.registry import registry as default_registry
from axon.runtime.executor import Executor, Record
from axon.runtime.manager import EmbedderProvider, MemoryManager, _default_embedder
from axon.runtime.model import ModelClient, OfflineModelClient
from axon.runtime.tracer import Tracer
from axon.runtime.values import Frame
from axon.source import Source, Span

T = TypeVar("T")


class RunResult(NamedTuple):
    """What `axon.run` returns: the output records and the trace events (as dicts)."""

    records: list[Record]
    events: list[dict[str, Any]]

    def __getitem__(self, index: Any) -> Any:
        """`result[0]`, `result[1]`, or by name: `result["records"]`, `result["events"]`."""
        if isinstance(index, str):
            return getattr(self, index)
        return tuple.__getitem__(self, index)


class Session:
    """Everything declared, bound and remembered so far; see the module docstring."""

    def __init__(
        self,
        memory_dir: str | os.PathLike[str] | None = None,
        clock: Clock | None = None,
        *,
        model: ModelClient | None = None,
        registry: BackendRegistry | None = None,
        embedder: EmbedderProvider | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.clock = clock
        self.tracer = tracer or Tracer(clock=clock)
        self.env = CheckEnv()
        self.frame = Frame()
        self.memory_decls: dict[str, ir.IRMemory] = {}
        self.flows: dict[str, ir.IRFlow] = {}
        self.declarations: dict[str, Any] = {}
        self.warnings: list[Any] = []
        self.memories = MemoryManager(
            registry=registry or default_registry,
            tracer=self.tracer,
            clock=clock,
            memory_dir=memory_dir,
            embedder=embedder or _default_embedder,
        )
        self.executor = Executor(
            memories=self.memories,
            model=model or OfflineModelClient(),
            tracer=self.tracer,
            declarations=self.declarations,
            flows=self.flows,
        )
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="axon-session", daemon=True
        )
        self._thread.start()
        self.closed = False

    # ------------------------------------------------------------ the API
    def check(self, text: str, filename: str = "<input>") -> ir.IRProgram:
        """Parse and check `text` against the session without running or recording it."""
        return check(parse(text, filename), Source(text, filename), env=self.env)

    def execute(self, text: str, filename: str = "<input>") -> list[Record]:
        """Check and run `text`; returns the remember/recall records it produced.

        Raises `AxonSyntaxError` / `AxonCheckError` (nothing is run or declared
        then) or `AxonRuntimeError` (statements before the failing one took effect;
        their records are on the error's `records`).
        """
        if not isinstance(text, str):
            raise TypeError(f"Session.execute: text must be a str, not {type(text).__name__}")
        with self._lock:
            self._check_open()
            source = Source(text, filename)
            program = check(parse(text, filename), source, env=self.env)
            first = len(self.executor.records)
            try:
                return self._call(self._execute(program, source))
            except AxonRuntimeError as exc:
                exc.records = self.executor.records[first:]
                raise

    async def _execute(self, program: ir.IRProgram, source: Source) -> list[Record]:
        for memory in program.memories:
            try:
                await self.memories.bind(memory)
            except AxonMemoryError as exc:  # e.g. an unreachable server, a bad location
                raise AxonRuntimeError(
                    f"cannot open memory '{memory.name}': {exc}",
                    Span(memory.line, memory.column),
                    source,
                ) from None
        extend_env(self.env, program)
        self.warnings.extend(program.warnings)
        for memory in program.memories:
            self.memory_decls[memory.name] = memory
        for flow in program.flows:
            self.flows[flow.name] = flow
        for group in (program.personas, program.contexts, program.anchors, program.tools,
                      program.intents):
            for decl in group:
                self.declarations[decl.name] = decl
        return await self.executor.run_statements(program.statements, self.frame, source)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every trace event so far, as plain dicts (`event_type`, `timestamp`, `data`, ...)."""
        return [event.to_dict() for event in self.tracer.events]

    # ------------------------------------------------------------ inspection (REPL)
    def memory_names(self) -> list[str]:
        return list(self.memory_decls)

    def describe_memories(self) -> list[dict[str, Any]]:
        """Each memory's settings and current entry count."""
        with self._lock:
            self._check_open()
            counts = self._call(self._counts())
        out = []
        for name, decl in self.memory_decls.items():
            count = counts[name]
            out.append(
                {
                    "name": name,
                    "store": decl.store,
                    "backend": decl.backend,
                    "retrieval": decl.retrieval,
                    "decay": decl.decay,
                    "top_k": decl.top_k,
                    "location": decl.location,
                    "entries": count,
                }
            )
        return out

    async def _counts(self) -> dict[str, int]:
        return {name: await self.memories.count(name) for name in self.memory_decls}

    def recent_entries(self, name: str, limit: int = 10) -> list[MemoryEntry]:
        """The newest `limit` unexpired entries of memory `name`."""
        with self._lock:
            self._check_open()
            return self._call(self.memories.entries(name, limit))

    def clear_memory(self, name: str) -> int:
        """Delete every entry of memory `name`; returns how many."""
        with self._lock:
            self._check_open()
            return self._call(self.memories.clear(name))

    def bound_names(self) -> list[str]:
        return sorted(self.frame.values)

    # ------------------------------------------------------------ lifetime
    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this session is closed")

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the session's loop and wait for it (the caller holds the lock).

        An interrupt while waiting (Ctrl-C) cancels the work and waits until it has
        stopped before propagating, so nothing keeps running behind the caller.
        """
        if threading.current_thread() is self._thread:
            work.close()
            raise RuntimeError("a Session cannot be called from inside its own operations")
        finished = threading.Event()

        async def guarded() -> T:
            try:
                return await work
            finally:
                finished.set()

        future = asyncio.run_coroutine_threadsafe(guarded(), self._loop)
        try:
            return future.result()
        except BaseException:
            if not future.done():
                future.cancel()
                finished.wait()
            raise

    def close(self) -> None:
        """Close every backend (this session's session and ephemeral entries are dropped).

        Every backend is closed even when one fails; the failure is then raised
        as an `AxonMemoryError` after the session's thread has stopped.
        """
        with self._lock:
            if self.closed:
                return
            self.closed = True
            try:
                self._call(self.memories.close())
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join()
                self._loop.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run(
    source: str,
    *,
    filename: str = "<input>",
    memory_dir: str | os.PathLike[str] | None = None,
    clock: Callable[[], float] | None = None,
    **kwargs: Any,
) -> RunResult:
    """Check and run a whole program in a fresh session; returns records and events."""
    with Session(memory_dir=memory_dir, clock=clock, **kwargs) as session:
        records = session.execute(source, filename)
        events = session.events
    return RunResult(records, events)
