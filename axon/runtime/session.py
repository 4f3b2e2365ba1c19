"""A session: the state of a REPL or an embedding application, and one-shot `run`.

`Session.execute(text)` parses and checks the text against everything the
session declared and bound before, binds new memories to their backends, runs
the statements and returns the output records (docs/language.md §11 Output records). Declarations,
`let` bindings and memories persist across calls; `close()` closes every
backend. `clock` (Unix seconds) drives timestamps and decay everywhere.

Threads and event loops. A `Session` is synchronous and safe to share: it owns
one private event loop running on a dedicated daemon thread, and every call
(`execute`, the inspection methods, `close`) takes the session's lock and runs
its work on that loop. Calls from several threads are therefore serialised:
each one either happens and returns its result, or raises and leaves the rest
of the session as it was. Because the loop is not the caller's, a Session
works the same from inside a running event loop (a notebook, a coroutine);
the caller's thread blocks while the call runs. `AsyncSession` is the same
session for async code: its calls never block the caller's event loop.

Python values. `session.memory("Notes")` returns a `MemoryHandle`
(`axon.runtime.handle`): remember, recall, get, delete, list and count with
Python values and the statements' semantics.

Choices. `Session(memory_dir=..., pg_dsn=..., model=..., embedder=...)` takes
every choice the CLI takes: where embedded stores live (else `AXON_MEMORY_DIR`,
else `./.axon`), the PostgreSQL server of `pgvector` memories that name no
`location:` (else `AXON_PG_DSN`) and their schema (`pg_schema=`, the CLI's
`--pg-schema`; else `AXON_PG_SCHEMA`, else `axon`), the model client of LLM-facing steps (a
`ModelClient`; default: the offline deterministic one) and the embedding model
of semantic and hybrid memories (an `Embedder`, or a zero-argument callable
returning one or None; default: the best model this machine can run).
`embed_wait` bounds how long a semantic or hybrid recall waits for vectors still
computed in the background (seconds, 0, or "all"): by default recall statements
wait for all and handle recalls `manager.DEFAULT_EMBED_WAIT` (0.5 s).
`history` bounds what the session keeps of its past: the newest `DEFAULT_HISTORY`
(1,000) output records and as many trace events by default, None for all (`axon.run`
and `axon run`, which report one whole program).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import contextlib
import functools
import inspect
import os
import sys
import threading
import types
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, Concatenate, Generic, NamedTuple, ParamSpec, TypeVar, overload

import attrs

from axon.compiler import ir
from axon.compiler.checker import CheckEnv, check, extend_env
from axon.compiler.names import did_you_mean
from axon.compiler.parser import parse
from axon.errors import AxonMemoryError, AxonRuntimeError, AxonSessionError
from axon.memory.embeddings.base import Embedder
from axon.memory.entry import Clock, MemoryEntry
from axon.memory.namespaces import Namespace
from axon.memory.registry import BackendRegistry
from axon.memory.registry import backend_settings as per_backend_settings
from axon.memory.registry import registry as default_registry
from axon.runtime.executor import Executor
from axon.runtime.handle import AsyncMemoryHandle, MemoryHandle, OperationRunner, Work
from axon.runtime.manager import EmbedderProvider, Memories, MemoryManager
from axon.runtime.model import ModelClient, OfflineModelClient
from axon.runtime.records import Record
from axon.runtime.tracer import Tracer
from axon.runtime.values import Frame
from axon.runtime.vectors import default_embedder
from axon.source import Source, Span
from axon.trace import checked_keep

T = TypeVar("T")
P = ParamSpec("P")
S = TypeVar("S")

DEFAULT_HISTORY = 1_000
"""How many output records, and how many trace events, a `Session` keeps by default (the
newest of each: `Session(history=N)`, None keeps all). A long-lived session (a service,
an agent, the REPL) would otherwise grow by every operation it ever ran."""

_OPEN_SESSIONS: weakref.WeakSet[Session] = weakref.WeakSet()
EXIT_CLOSE_WAIT = 5.0
"""Seconds the exit hook waits for a call in flight before leaving a session open."""
_REENTRANT = (
    "a Session cannot be called from inside its own operations (a model client's "
    "complete() or an embed() progress callback calling back into the session that "
    "is running it)"
)


@atexit.register
def _close_open_sessions() -> None:
    """Close, at interpreter exit, every `Session` its program left open.

    A script that never calls `close()` (or leaves its `with` block by `sys.exit`
    from a thread) still ends its session the documented way: session and
    ephemeral entries are dropped, the background vector worker stops after the
    batch in flight, and every backend is closed, instead of the interpreter
    killing the session's daemon thread mid-write and printing asyncio's "Task
    was destroyed" warning. atexit runs before daemon threads are stopped, so the
    session's loop is still alive here. A failure is one line on stderr: the
    process is ending and has no caller left to raise to.
    """
    for session in list(_OPEN_SESSIONS):
        # A call still running on another thread holds the lock; waiting for it
        # forever would hang the exit, so it gets a bounded grace period.
        if not session._lock.acquire(timeout=EXIT_CLOSE_WAIT):
            print(
                "axon: a Session left open at exit was busy in another thread; "
                "not closed (its session entries are swept by the next process)",
                file=sys.stderr,
            )
            continue
        try:
            session._close_holding_lock()
        except Exception as exc:  # the process is exiting: report, do not raise
            print(f"axon: closing a Session left open at exit failed: {exc}", file=sys.stderr)
        finally:
            session._lock.release()


class RunResult(NamedTuple):
    """What `axon.run` returns: the output records and the trace events (as dicts)."""

    records: list[Record]
    events: list[dict[str, Any]]

    def __getitem__(self, index: Any) -> Any:
        """`result[0]`, `result[1]`, or by name: `result["records"]`, `result["events"]`."""
        if isinstance(index, str):
            return getattr(self, index)
        return tuple.__getitem__(self, index)


MAX_CLOCK_SECONDS = 253_402_300_799.0
"""The latest time a clock may return: 9999-12-31T23:59:59 UTC, in Unix seconds."""


def checked_clock(clock: Any) -> Clock:
    """`clock` (a `Session(clock=...)`) wrapped so every time it returns is checked.

    A clock must be a zero-argument callable; that is checked now. What it returns
    can only be checked when it is called: a finite int or float from 0 to
    `MAX_CLOCK_SECONDS` (not a bool), else an `AxonMemoryError` naming the clock and
    the value, raised before anything is written with that time (a NaN or an
    infinite timestamp, or one past SQLite's integers, would otherwise be stored or
    fail deep in a backend as an internal error).
    """
    if not callable(clock):
        raise TypeError(
            "Session: clock must be a zero-argument callable returning Unix seconds "
            f"(such as time.time), not {type(clock).__name__}"
        )
    name = getattr(clock, "__qualname__", None) or type(clock).__name__

    def now() -> float:
        value = clock()
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not 0 <= value <= MAX_CLOCK_SECONDS  # NaN fails this too
        ):
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            raise AxonMemoryError(
                f"the session's clock {name!r} returned {shown} "
                f"({type(value).__name__}): a clock must return Unix seconds, a finite "
                f"number from 0 to {MAX_CLOCK_SECONDS:,.0f} (year 9999)"
            )
        return value

    return now


class Session:
    """Everything declared, bound and remembered so far; see the module docstring."""

    def __init__(
        self,
        memory_dir: str | os.PathLike[str] | None = None,
        clock: Clock | None = None,
        *,
        model: ModelClient | None = None,
        registry: BackendRegistry | None = None,
        embedder: Embedder | EmbedderProvider | None = None,
        tracer: Tracer | None = None,
        pg_dsn: str | None = None,
        embed_wait: float | str | None = None,
        pg_schema: str | None = None,
        history: int | None = DEFAULT_HISTORY,
        namespace: Namespace | str | Sequence[str] | None = None,
        backend_settings: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        # Checked first: a bad namespace is refused before anything is opened or written.
        space = Namespace.from_env() if namespace is None else Namespace.of(namespace)
        try:
            keep = checked_keep(history, "history", "Session")
        except ValueError as exc:  # a TypeError (not an int) is raised as it is
            raise AxonMemoryError(str(exc)) from None
        # Each backend's server settings (pgvector's `dsn` and `schema`), checked by the
        # registry's own rules; `pg_dsn=` / `pg_schema=` are shortcuts for pgvector's.
        settings = per_backend_settings(
            backend_settings,
            pg_dsn=pg_dsn or None,
            pg_schema=pg_schema,
            backends=registry or default_registry,
            who="Session",
        )
        if memory_dir is not None and not isinstance(memory_dir, str | os.PathLike):
            raise TypeError(
                "Session: memory_dir must be a str or a path (os.PathLike), "
                f"not {type(memory_dir).__name__}"
            )
        if memory_dir is not None and "\x00" in os.fspath(memory_dir):
            raise AxonMemoryError(  # else a raw ValueError when the first store opens
                f"Session: memory_dir {str(memory_dir)!r} contains a NUL character"
            )
        clock = None if clock is None else checked_clock(clock)
        if model is not None and not isinstance(model, ModelClient):
            raise TypeError(
                "Session: model must be a ModelClient (a `name` and a "
                f"`complete(request) -> str` method), not {type(model).__name__}"
            )
        self.clock = clock
        self.tracer = tracer or Tracer(clock=clock, keep=keep)
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
            embedder=_embedder_provider(embedder),
            settings=settings,
            embed_wait=embed_wait,
            namespace=space,
        )
        self.executor = Executor(
            memories=self.memories,
            model=model or OfflineModelClient(),
            tracer=self.tracer,
            declarations=self.declarations,
            flows=self.flows,
            keep_records=keep,
        )
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="axon-session", daemon=True
        )
        self._thread.start()
        self.closed = False
        _OPEN_SESSIONS.add(self)

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
        with self._locked():
            self._check_open()
            source = Source(text, filename)
            program = check(parse(text, filename), source, env=self.env)
            self.executor.run_records = []
            try:
                return self._call(self._execute(program, source))
            except AxonRuntimeError as exc:
                exc.records = list(self.executor.run_records)
                raise

    def declare(self, text: str, filename: str = "<input>") -> ir.IRProgram:
        """Check `text` and bind its declarations (memories, flows, ...) without running
        any of its statements (`axon mcp --program`); raises as `execute` does."""
        if not isinstance(text, str):
            raise TypeError(f"Session.declare: text must be a str, not {type(text).__name__}")
        with self._locked():
            self._check_open()
            source = Source(text, filename)
            program = check(parse(text, filename), source, env=self.env)
            self._call(self._execute(attrs.evolve(program, statements=()), source))
            return program

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
        """The trace events so far (the newest `history`), as plain dicts (`event_type`,
        `timestamp`, `data`, ...)."""
        return [event.to_dict() for event in list(self.tracer.events)]

    @property
    def records(self) -> list[Record]:
        """The output records so far (statements' and handles'; the newest `history`), in
        the order they ran."""
        return list(self.executor.records)

    # ------------------------------------------------------------ Python values
    @property
    def namespace(self) -> Namespace:
        """The session's namespace (`namespace=`, else `AXON_NAMESPACE`, else the root)."""
        return self.memories.namespace

    def memory(
        self, name: str, *, namespace: Namespace | str | Sequence[str] | None = None
    ) -> MemoryHandle:
        """The handle of the declared memory `name` (`axon.runtime.handle.MemoryHandle`),
        in `namespace` (default: the session's).

        Raises `AxonMemoryError` (a `ValueError`) when no memory of that name was
        declared in this session, with the closest declared name, or for a bad namespace.
        """
        self._require_memory(name)
        space = self.namespace if namespace is None else Namespace.of(namespace)
        return MemoryHandle(self, name, self._runner(space), space)

    def _runner(self, space: Namespace) -> OperationRunner:
        if space == self.namespace:
            return self._operation

        def run(name: str, work: Work[T]) -> Awaitable[T]:
            return self._operation(name, work, space)

        return run

    def namespaces(
        self, prefix: Namespace | str | Sequence[str] | None = None
    ) -> list[tuple[str, ...]]:
        """The namespaces that hold entries in the stores this session opened, at any
        depth under `prefix` (itself included), sorted; `()` is the root (listed when it
        holds entries and no prefix is given)."""
        space = Namespace.of(prefix, what="prefix")
        with self._locked():
            self._check_open()
            return self._call(self.memories.namespaces(space))

    def erase(self, namespace: Namespace | str | Sequence[str]) -> int:
        """Delete every entry of every memory in `namespace` and below it, in every store
        this session opened (all tiers, vectors, text indexes, stats, associations);
        returns how many. On SQLite none of the erased text is left in the memory
        directory's files when it returns (docs/language.md §14)."""
        space = Namespace.of(namespace)
        with self._locked():
            self._check_open()
            return self._call(self.memories.erase(space))

    def _require_memory(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"memory(): the name must be a str, not {type(name).__name__}")
        if name in self.memory_decls:
            return
        declared = ", ".join(self.memory_decls) or "none yet"
        raise AxonMemoryError(
            f"memory '{name}' is not declared in this session"
            f"{did_you_mean(name, self.memory_decls)}; declare it first, e.g. "
            f"session.execute('memory {name} {{ store: persistent backend: sqlite }}') "
            f"(declared: {declared})",
            memory=name,
        )

    def _memory_call(self, name: str, work: Work[T], space: Namespace | None = None) -> T:
        """Run one handle operation's work on the session's loop, under its lock (for
        `AsyncSession`, whose dispatcher thread calls it), in namespace `space`."""
        return self.run_on_loop(self._operation(name, work, space))

    async def _operation(self, name: str, work: Work[T], space: Namespace | None = None) -> T:
        """One handle operation's work as one input, on the session's loop (the lock held),
        in namespace `space` (None: the session's).

        The memory must (still) be declared. Like one `execute`, the call is one
        lifetime: its ephemeral writes are dropped when it returns.
        """
        self._require_memory(name)
        memories: Memories = self.memories
        if space is not None and space != self.namespace:
            await self.memories.in_namespace(name, space)
            memories = self.memories.view(space)
        self.memories.push_lifetime()
        try:
            return await work(memories, self.executor.records)
        finally:
            await self.memories.pop_lifetime()

    # ------------------------------------------------------------ inspection (REPL)
    def memory_names(self) -> list[str]:
        return list(self.memory_decls)

    def describe_memories(self) -> list[dict[str, Any]]:
        """Each memory's settings and current entry count."""
        with self._locked():
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
        return {name: await self.memories[name].count() for name in self.memory_decls}

    def recent_entries(self, name: str, limit: int = 10) -> list[MemoryEntry]:
        """The newest `limit` unexpired entries of memory `name`."""
        with self._locked():
            self._check_open()
            return self._call(self.memories[name].entries(limit))

    def clear_memory(self, name: str) -> int:
        """Delete every entry of memory `name`; returns how many."""
        with self._locked():
            self._check_open()
            return self._call(self.memories[name].clear())

    def bound_names(self) -> list[str]:
        return sorted(self.frame.values)

    def run_on_loop(self, work: Coroutine[Any, Any, T]) -> T:
        """Run the coroutine `work` on the session's loop, where its backends live, and
        return its result (or raise its error).

        The call takes the session's lock like every other one, so `work` is serialised
        with them (a `MemoryHandle` runs its operations this way; the REPL its imports
        and exports); an interrupt while waiting cancels it, as for `execute`. On a
        closed session, or from inside the session's own operations, it is refused with
        an `AxonSessionError` and `work` is closed without running.
        """
        started = False
        try:
            with self._locked():
                self._check_open()
                started = True
                return self._call(work)
        finally:
            if not started:
                work.close()

    # ------------------------------------------------------------ lifetime
    def _check_open(self) -> None:
        if self.closed:
            raise AxonSessionError("this session is closed")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The session's lock, held for one public call.

        A call from the session's own thread (a model client's `complete` calling back
        into the session) would wait forever for the lock its caller holds: it is
        refused before taking the lock.
        """
        if threading.current_thread() is self._thread:
            raise AxonSessionError(_REENTRANT)
        with self._lock:
            yield

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the session's loop and wait for it (the caller holds the lock).

        An interrupt while waiting (Ctrl-C) cancels the work and waits until it has
        stopped before propagating, so nothing keeps running behind the caller.
        """
        if threading.current_thread() is self._thread:
            work.close()
            raise AxonSessionError(_REENTRANT)
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
        with self._locked():
            self._close_holding_lock()

    def _close_holding_lock(self) -> None:
        if self.closed:
            return
        self.closed = True
        _OPEN_SESSIONS.discard(self)
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


def _embedder_provider(embedder: Embedder | EmbedderProvider | None) -> EmbedderProvider:
    """`Session(embedder=...)` as the provider the memory manager calls once, lazily."""
    if embedder is None:
        return default_embedder
    if isinstance(embedder, Embedder):
        chosen = embedder
        return lambda: chosen
    if callable(embedder):
        return embedder
    raise TypeError(
        "Session: embedder must be an Embedder (model_id, dim, embed_passages, "
        "embed_query) or a zero-argument callable returning one, not "
        f"{type(embedder).__name__}"
    )


def _arguments_of(
    init: Callable[Concatenate[Any, P], None],
) -> Callable[[Callable[Concatenate[S, ...], None]], Callable[Concatenate[S, P], None]]:
    """Give the `__init__` it decorates the parameters of `init`, to type checkers and to
    `inspect.signature`/`help()`: `AsyncSession` takes the arguments of `Session`, written
    once (the decorated `__init__` passes them on as `*args, **kwargs`)."""

    def decorate(
        function: Callable[Concatenate[S, ...], None],
    ) -> Callable[Concatenate[S, P], None]:
        function.__signature__ = inspect.signature(init)  # type: ignore[attr-defined]
        return function

    return decorate


class _Queued(Generic[P, T]):
    """An `AsyncSession` method: the `Session` method `method`, queued for the dispatcher
    thread (`AsyncSession._run`) and awaited.

    A descriptor, so that a type checker sees the method's own parameters and a
    coroutine of its result; the coroutine function it binds wraps `method`
    (`functools.update_wrapper`), so `help()` and `inspect.signature` show the
    method's signature and docstring, written once on `Session`.
    """

    def __init__(self, method: Callable[Concatenate[Session, P], T]) -> None:
        async def queued(session: AsyncSession, /, *args: P.args, **kwargs: P.kwargs) -> T:
            return await session._run(method, session.sync, *args, **kwargs)

        functools.update_wrapper(queued, method)
        self.function: Callable[Concatenate[AsyncSession, P], Coroutine[Any, Any, T]] = queued

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.function.__qualname__ = f"{owner.__qualname__}.{name}"

    @overload
    def __get__(
        self, session: None, owner: type[Any]
    ) -> Callable[Concatenate[AsyncSession, P], Coroutine[Any, Any, T]]: ...

    @overload
    def __get__(
        self, session: AsyncSession, owner: type[Any]
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(
        self, session: AsyncSession | None, owner: type[Any]
    ) -> Callable[..., Coroutine[Any, Any, T]]:
        if session is None:
            return self.function
        return types.MethodType(self.function, session)


_Call = tuple[Callable[[], Any], "asyncio.Future[Any]", asyncio.AbstractEventLoop]
"""A queued `AsyncSession` call: the work, the future awaiting it, that future's loop."""

_Finished = tuple["asyncio.Future[Any]", bool, Any]
"""A finished call: its future, whether it returned (else raised), the result or error."""


class AsyncSession:
    """A `Session` for async code: `execute` and the handle methods are coroutines.

    ```python
    async with axon.AsyncSession(memory_dir="mem") as session:
        await session.execute('memory Notes { store: persistent backend: sqlite }')
        notes = session.memory("Notes")          # a plain call
        key = await notes.remember({"text": "hello"})
        results = await notes.recall("hello")
    ```

    The design: one synchronous core, run off the caller's event loop. The
    `Session` inside runs every operation on its own event loop in its own
    thread (database, file and model work happen there). This class queues each
    call for one private dispatcher thread (a single-worker pool, not the loop's
    default executor) which takes the session's lock and waits for the core; the
    coroutine awaits a plain future of its own loop. So the caller's loop never
    blocks, concurrent calls (`asyncio.gather`) run one at a time in the order
    they were made, and the application's default executor is left alone.
    Cancelling a coroutine before its turn drops the call (nothing happens); once
    its turn came, the call runs to its end (it happened) and only the result is
    discarded.

    What the caller's loop does per call is kept small, because that is what
    stalls it (measured: benchmarks/async_session.py, docs/performance.md): a
    call appends to the queue (no executor future, no thread wake-up per call);
    the dispatcher is woken once per burst, by a callback that runs after the
    loop's other ready callbacks (so the 1,000 first steps of a `gather` run
    before the dispatcher competes with them for the GIL); results come back in
    batches, one loop wake-up for all those finished since the last one.

    Takes the arguments of `Session`. `sync` is the synchronous session inside
    (calls on it from other threads are serialised with these). `execute`,
    `declare` and `check` are `Session`'s, queued; the handle's methods are
    `AsyncMemoryHandle`'s.
    """

    @_arguments_of(Session.__init__)
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sync = Session(*args, **kwargs)
        self._dispatcher = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="axon-async-session"
        )
        self._shut_down = False
        self._queue_lock = threading.Lock()
        self._queue: collections.deque[_Call] = collections.deque()
        self._draining = False  # a drain is scheduled or running
        self._finished: dict[asyncio.AbstractEventLoop, list[_Finished]] = {}

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._shut_down:
            raise AxonSessionError("this session is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._queue_lock:
            self._queue.append((functools.partial(fn, *args, **kwargs), future, loop))
            kick = not self._draining
            self._draining = True
        if kick:
            loop.call_soon(self._kick)
        return await future

    def _kick(self) -> None:
        """Start the dispatcher on the queue (on the loop, after its ready callbacks)."""
        try:
            self._dispatcher.submit(self._drain)
        except RuntimeError:  # shut down meanwhile: fail what is queued
            self._drain(refuse=True)

    def _drain(self, refuse: bool = False) -> None:
        """Dispatcher thread: run the queued calls in order until the queue is empty."""
        while True:
            with self._queue_lock:
                if not self._queue:
                    self._draining = False
                    return
                call, future, loop = self._queue.popleft()
            if future.cancelled():  # cancelled before its turn: it never happens
                continue
            outcome: _Finished
            if refuse:
                outcome = (future, False, AxonSessionError("this session is closed"))
            else:
                try:
                    outcome = (future, True, call())
                except BaseException as exc:  # delivered to the awaiting coroutine
                    outcome = (future, False, exc)
            self._finish(loop, outcome)

    def _finish(self, loop: asyncio.AbstractEventLoop, outcome: _Finished) -> None:
        """Hand a result to its loop: one wake-up for every result since the last one."""
        with self._queue_lock:
            waiting = self._finished.get(loop)
            if waiting is not None:
                waiting.append(outcome)
                return
            self._finished[loop] = [outcome]
        try:
            loop.call_soon_threadsafe(self._deliver, loop)
        except RuntimeError:  # that loop is closed: nobody awaits these any more
            with self._queue_lock:
                self._finished.pop(loop, None)

    def _deliver(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._queue_lock:
            outcomes = self._finished.pop(loop, [])
        for future, ok, value in outcomes:
            if future.cancelled():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    execute = _Queued(Session.execute)
    declare = _Queued(Session.declare)
    check = _Queued(Session.check)  # parsing and checking a large text takes time

    def memory(
        self, name: str, *, namespace: Namespace | str | Sequence[str] | None = None
    ) -> AsyncMemoryHandle:
        """The async handle of the declared memory `name` (its methods are coroutines), in
        `namespace` (default: the session's)."""
        self.sync._require_memory(name)
        space = self.sync.namespace if namespace is None else Namespace.of(namespace)

        def run(name: str, work: Work[T]) -> Awaitable[T]:
            return self._run(self.sync._memory_call, name, work, space)

        return AsyncMemoryHandle(run, name, space)

    @property
    def namespace(self) -> Namespace:
        """The session's namespace (`Session.namespace`)."""
        return self.sync.namespace

    async def namespaces(
        self, prefix: Namespace | str | Sequence[str] | None = None
    ) -> list[tuple[str, ...]]:
        """`Session.namespaces`, off the loop."""
        return await self._run(self.sync.namespaces, prefix)

    async def erase(self, namespace: Namespace | str | Sequence[str]) -> int:
        """`Session.erase`, off the loop."""
        return await self._run(self.sync.erase, namespace)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Every trace event so far, as plain dicts (see `Session.events`)."""
        return self.sync.events

    @property
    def records(self) -> list[Record]:
        """Every output record so far (see `Session.records`)."""
        return self.sync.records

    @property
    def closed(self) -> bool:
        return self.sync.closed

    async def close(self) -> None:
        """`Session.close`, off the loop; then the dispatcher thread ends. Idempotent."""
        if self._shut_down:
            return
        try:
            await self._run(self.sync.close)
        finally:
            self._shut_down = True
            self._dispatcher.shutdown(wait=False)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def run(
    source: str,
    *,
    filename: str = "<input>",
    memory_dir: str | os.PathLike[str] | None = None,
    clock: Callable[[], float] | None = None,
    **kwargs: Any,
) -> RunResult:
    """Check and run a whole program in a fresh session; returns records and events (all
    of them: `history` is None unless given)."""
    kwargs.setdefault("history", None)
    with Session(memory_dir=memory_dir, clock=clock, **kwargs) as session:
        records = session.execute(source, filename)
        events = session.events
    return RunResult(records, events)
