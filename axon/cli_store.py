"""Where an `axon memory` command works, and how it fails: the store, its options, the plumbing.

`Store` is the memory directory, PostgreSQL schema or Chroma collection a subcommand
opens (`--memory-dir`, `--pg-dsn`/`--pg`, `--pg-schema`, `--chroma`, given to the
subcommand or to `axon memory`). `run`
runs a command's body so that every failure is one line on stderr and an exit code
(`Failed` for the command's own refusals, `axon.cli_output`'s codes otherwise),
never a traceback. The small printers (`say`, `say_json`, `table`, `progress`) write
through `axon.cli_output`, as every `axon` command does. The subcommands themselves
are in `axon.cli_memory` (reading and forgetting) and `axon.cli_transfer` (export and
import).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from axon import cli_output as out
from axon.compiler.names import Suggester
from axon.errors import AxonError, AxonMemoryError
from axon.memory.backend import (
    MAX_TOP_K,
    MemoryBackend,
    resolve_memory_dir,
)
from axon.memory.entry import MemoryEntry
from axon.memory.lifetimes import OWNED_MARKER
from axon.redaction import redact_secrets
from axon.render import terminal_json, visible

T = TypeVar("T")

PAGE = 2000
"""Entries read per page by the commands that walk a whole memory (stats, forget --tag)."""


MemoryDir = Annotated[
    Path | None,
    typer.Option(
        "--memory-dir", help="The memory directory (default $AXON_MEMORY_DIR, else ./.axon)."
    ),
]
PgDsn = Annotated[
    str | None, typer.Option("--pg-dsn", help="Use this PostgreSQL database instead.")
]
UsePg = Annotated[bool, typer.Option("--pg", help="Use the PostgreSQL database in $AXON_PG_DSN.")]
PgSchema = Annotated[
    str | None,
    typer.Option("--pg-schema", help="PostgreSQL schema (default $AXON_PG_SCHEMA, else axon)."),
]
ChromaLocation = Annotated[
    str | None,
    typer.Option(
        "--chroma",
        help="Use this Chroma collection instead: a server URL (http://host:port/collection) "
        "or a directory (dir#collection; relative to the memory directory).",
    ),
]
AsJson = Annotated[
    bool, typer.Option("--json", help="Print one JSON document (for scripts), not a table.")
]


class Failed(Exception):
    """A user-facing failure: one line for stderr and the exit code."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Store:
    """Where a command works: which backend, how to name it to a person."""

    def __init__(
        self,
        memory_dir: Path | None,
        pg_dsn: str | None,
        use_pg: bool,
        pg_schema: str | None,
        chroma: str | None = None,
    ) -> None:
        self.given = (memory_dir, pg_dsn, use_pg, pg_schema, chroma)
        if (pg_dsn or use_pg) and memory_dir is not None:
            raise Failed("error: give --memory-dir or --pg-dsn/--pg, not both", out.EXIT_USAGE)
        if (pg_dsn or use_pg) and chroma:
            raise Failed("error: give --chroma or --pg-dsn/--pg, not both", out.EXIT_USAGE)
        self.chroma = chroma or None
        self.chroma_target: Any = None
        if self.chroma is not None:
            from axon.memory.backends.chroma_client import parse_location

            # A relative directory is in the memory directory, as in a declaration.
            self.chroma_target = parse_location(self.chroma, resolve_memory_dir(memory_dir))
        if use_pg and not pg_dsn:
            pg_dsn = os.environ.get("AXON_PG_DSN") or None
            if pg_dsn is None:
                raise Failed("error: --pg needs AXON_PG_DSN to be set", out.EXIT_USAGE)
        self.pg_dsn = pg_dsn
        self.pg_schema = pg_schema
        if pg_dsn is None:
            self.memory_dir: Path | None = resolve_memory_dir(memory_dir)
            if self.memory_dir.exists() and not self.memory_dir.is_dir():
                raise Failed(
                    f"error: the memory directory {self.memory_dir} is a file, not a directory",
                    out.EXIT_USAGE,
                )
        else:
            self.memory_dir = None

    @property
    def schema(self) -> str:
        """The PostgreSQL schema the backend will use: `--pg-schema`, else `AXON_PG_SCHEMA`,
        else `axon` (what `PostgresBackend` picks)."""
        from axon.memory.backends.postgres_schema import DEFAULT_SCHEMA, SCHEMA_ENV

        return self.pg_schema or os.environ.get(SCHEMA_ENV) or DEFAULT_SCHEMA

    @property
    def backend_name(self) -> str:
        """The registry name of the backend `open` creates."""
        if self.chroma is not None:
            return "chroma"
        return "sqlite" if self.pg_dsn is None else "pgvector"

    def options(self) -> list[str]:
        """The command-line options that name this store again, as they were given (for a
        hint a person pastes: `--memory-dir D`, `--pg`, `--pg-dsn DSN`, `--pg-schema S`,
        `--chroma LOCATION`). A DSN holding a password is written `--pg` when it is
        `$AXON_PG_DSN`, else with the password as `***` (it is never printed)."""
        memory_dir, pg_dsn, use_pg, pg_schema, chroma = self.given
        words: list[str] = []
        if memory_dir is not None:
            words += ["--memory-dir", str(memory_dir)]
        if use_pg or (pg_dsn and pg_dsn == os.environ.get("AXON_PG_DSN")
                      and redact_secrets(pg_dsn) != pg_dsn):
            words.append("--pg")
        elif pg_dsn:
            words += ["--pg-dsn", redact_secrets(pg_dsn)]
        if pg_schema is not None:
            words += ["--pg-schema", pg_schema]
        if chroma:
            words += ["--chroma", chroma]
        return words

    @property
    def label(self) -> str:
        if self.chroma_target is not None:
            return f"Chroma {self.chroma_target.shown}"
        if self.memory_dir is not None:
            return str(self.memory_dir)
        return redact_secrets(self.pg_dsn or "") + f" (schema {self.schema})"

    @property
    def missing(self) -> str:
        """Why `exists()` said no, for the one line a read prints."""
        if self.chroma_target is not None:
            return "no such collection there"
        if self.memory_dir is not None:
            return "no memory directory store there"
        return "no AXON store in that schema"

    def exists(self) -> bool:
        """False for a memory directory without a store file, or a PostgreSQL schema without
        AXON's tables: a read creates nothing to find out (opening the PostgreSQL backend
        would create the schema and migrate it)."""
        if self.chroma_target is not None:
            return self._chroma_collection_exists()
        if self.memory_dir is None:
            return self._pg_store_exists()
        from axon.memory.backends.sqlite import DB_FILENAME

        return (self.memory_dir / DB_FILENAME).is_file()

    def _pg_store_exists(self) -> bool:
        """Whether the schema holds AXON's `meta` table (the first thing a migration makes),
        asked on one short connection; one that fails is the error opening would give."""
        from axon.memory.backends.postgres_pool import import_driver
        from axon.memory.backends.postgres_schema import (
            check_schema_name,
            describe_dsn,
            parse_dsn,
            quote_ident,
            redact,
        )

        schema = check_schema_name(self.schema)
        import_driver()
        import psycopg

        dsn = self.pg_dsn or ""
        params = parse_dsn(dsn)
        try:
            timeout = max(1, int(float(params.get("connect_timeout") or 15)))
        except ValueError:
            timeout = 15  # the backend refuses it with its own message when opened
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=timeout) as conn:
                row = conn.execute(
                    "SELECT to_regclass(%s)", [f"{quote_ident(schema)}.meta"]
                ).fetchone()
        except psycopg.Error as exc:
            detail = redact(str(exc).strip() or type(exc).__name__, params)
            raise AxonMemoryError(  # exit 3 on one line, as the backend's own error
                f"PostgreSQL at {describe_dsn(params)}: cannot connect: {detail}"
            ) from None
        return row is not None and row[0] is not None

    def _chroma_collection_exists(self) -> bool:
        """Whether the Chroma collection is there (a missing directory is not created)."""
        from axon.memory.backends.chroma import DEFAULT_CONNECT_TIMEOUT
        from axon.memory.backends.chroma_client import ChromaConnection, import_chromadb

        target = self.chroma_target
        if target.path is not None and not (target.path / "chroma.sqlite3").is_file():
            return False
        import_chromadb()
        db = ChromaConnection(target, timeout=DEFAULT_CONNECT_TIMEOUT)
        try:
            return db.run(lambda c: c.collection(target.collection, create=False)) is not None
        finally:
            db.close()

    def open(self, *, embedder: bool = False) -> MemoryBackend:
        """A backend over the store (the embedding model attached when asked)."""
        from axon.memory.registry import registry

        model = embedder_or_fail() if embedder else None
        if self.chroma is not None:
            return registry.create(
                "chroma", location=self.chroma, memory_dir=self.memory_dir, embedder=model
            )
        if self.pg_dsn is not None:
            return registry.create(
                "pgvector", location=self.pg_dsn, schema=self.pg_schema, embedder=model
            )
        return registry.create("sqlite", memory_dir=self.memory_dir, embedder=model)


def embedder_or_fail() -> Any:
    """The embedding model `axon run` would use, or None (semantic recall then runs keyword)."""
    from axon.memory.embeddings.default import default_embedder
    from axon.memory.embeddings.errors import EmbedderUnavailableError

    try:
        return default_embedder()
    except EmbedderUnavailableError as exc:
        raise Failed(f"error: {exc}", out.EXIT_RUNTIME) from None


# ---------------------------------------------------------------------- plumbing


def store_of(ctx: typer.Context, *options: Any) -> Store:
    """The store named by the subcommand's options, else by those given to `axon memory`."""
    memory_dir, pg_dsn, use_pg, pg_schema, chroma = options
    group: dict[str, Any] = ctx.obj or {}
    try:
        return Store(
            memory_dir if memory_dir is not None else group.get("memory_dir"),
            pg_dsn if pg_dsn is not None else group.get("pg_dsn"),
            use_pg or bool(group.get("use_pg")),
            pg_schema if pg_schema is not None else group.get("pg_schema"),
            chroma if chroma is not None else group.get("chroma"),
        )
    except Failed as fail:  # before `run`: one line and the exit code here too
        out.err(str(fail))
        raise typer.Exit(fail.code) from None
    except AxonError as exc:  # a bad --chroma location
        out.err(f"error: {exc}")
        raise typer.Exit(out.EXIT_USAGE) from None


def run(
    command: Callable[[], Coroutine[Any, Any, None]], *, interrupted: str = "interrupted"
) -> None:
    """Run one command: errors become one line and an exit code, never a traceback.

    Ctrl-C cancels the command (asyncio's first-interrupt handling: its awaits unwind,
    its backends close) and prints `interrupted`, exit 130."""
    import asyncio  # here, not at the top: `axon check` imports this module (~20 ms)

    out.configure_logging(False)
    code = 0
    try:
        asyncio.run(command())
        out.flush()
    except Failed as fail:
        out.err(str(fail))
        code = fail.code
    except out.OutputFailed as failure:
        code = out.output_failed(failure)
    except AxonError as exc:
        from axon.memory.transfer import TransferError

        message = " ".join(str(exc).split())  # one line (a driver's message may hold several)
        out.err(message if isinstance(exc, TransferError) else f"error: {message}")
        code = out.EXIT_CHECK if isinstance(exc, TransferError) else out.EXIT_RUNTIME
    except KeyboardInterrupt:
        out.err(interrupted)
        code = out.EXIT_INTERRUPTED
    except Exception as exc:
        out.internal(exc)
    if code:
        raise typer.Exit(code)


@contextlib.asynccontextmanager
async def opened(store: Store, *, embedder: bool = False) -> Any:
    backend = store.open(embedder=embedder)
    try:
        yield backend
    finally:
        await backend.close()


def say(text: str) -> None:
    for line in text.split("\n"):
        out.out(line)


def say_json(data: Any) -> None:
    out.out(terminal_json(data))


def terminal_width() -> int:
    return max(40, shutil.get_terminal_size((100, 24)).columns)


@contextlib.contextmanager
def progress(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr while the block runs (a no-op unless stderr is a terminal).

    `description` may name a stored memory: it is shown `visible`, never read as markup.
    """
    if not sys.stderr.isatty():
        yield lambda done: None
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(escape(visible(description)), total=total)
        yield lambda done: bar.update(task, completed=done)


async def memory_names_of(backend: MemoryBackend) -> list[str]:
    from axon.memory.transfer import memory_names

    return await memory_names(backend)


async def require_memory(backend: MemoryBackend, store: Store, name: str) -> None:
    """Exit 1 with a suggestion unless `name` is a memory of the store."""
    if name.startswith(OWNED_MARKER):
        raise Failed(f"error: '{name}' is session data, not a memory", out.EXIT_CHECK)
    if await backend.count(name):
        return
    names = await memory_names_of(backend)
    hint = Suggester(names).closest(name)  # the checker's rule: close, or the same but case
    if hint:
        suggestion = f"; did you mean '{hint}'?"
    elif names:
        suggestion = f" (memories: {', '.join(names[:10])})"
    else:
        suggestion = " (the store holds no memories)"
    raise Failed(f"error: no memory '{name}' in {store.label}{suggestion}", out.EXIT_CHECK)


def missing_store(store: Store, name: str | None = None) -> Failed:
    what = f"no memory '{name}' in {store.label}" if name else f"nothing stored in {store.label}"
    return Failed(f"error: {what} ({store.missing})", out.EXIT_CHECK)


def entry_data(entry: MemoryEntry) -> dict[str, Any]:
    """One entry as `--json` prints it: key, value, metadata (without scope), times."""
    data: dict[str, Any] = {
        "key": entry.key,
        "value": entry.value,
        "metadata": {k: v for k, v in entry.metadata.items() if k != "scope"},
        "created_at": entry.timestamp,
        "expires_at": entry.expires_at,
    }
    return data


def when(timestamp: float | None) -> str:
    """Local time of a timestamp; one past what the platform converts reads `far future`."""
    from axon.render import clock_text

    return "" if timestamp is None else clock_text(timestamp)


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], **options: Any) -> str:
    from axon.render import text_table

    return text_table(headers, rows, width=terminal_width(), **options)


def check_count(value: int | None, option: str) -> None:
    """A count option (`--limit`, `--top-k`): from 1 to `MAX_TOP_K`, the bound of a
    program's `top_k` (a bigger one would overflow the SQL `LIMIT` it becomes)."""
    if value is not None and value < 1:
        raise Failed(f"error: {option} must be at least 1, not {value}", out.EXIT_USAGE)
    if value is not None and value > MAX_TOP_K:
        raise Failed(f"error: {option} must be at most {MAX_TOP_K:,}, not {value}", out.EXIT_USAGE)


def json_flag(ctx: typer.Context, as_json: bool) -> bool:
    return as_json or bool((ctx.obj or {}).get("json"))
