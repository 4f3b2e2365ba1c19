"""`axon memory`: a memory store (a memory directory or a PostgreSQL schema) in, tables or JSON out.

Every subcommand opens one store: the SQLite file of a memory directory
(`--memory-dir`, else `AXON_MEMORY_DIR`, else `./.axon`, as `axon run`), or a
PostgreSQL database (`--pg-dsn DSN`, or `--pg` for `$AXON_PG_DSN`; `--pg-schema`,
else `AXON_PG_SCHEMA`, else `axon`). A memory is a scope of that store; the
owned scopes of session and ephemeral memories (`axon.memory.lifetimes`) are not
memories and are shown only by `ls --sessions`.

People get `rich` tables (wide characters align, long values are cut); `--json`
prints exactly one JSON document on stdout per command (`export` prints the JSON
Lines export format instead). Progress bars go to stderr, and only when it is a
terminal. Exit codes are `axon.cli`'s; in addition a memory or key that does not
exist, or an import file that is not an export, is exit 1 (one line on stderr).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import os
import shutil
import sys
from collections.abc import Callable, Coroutine, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from axon import cli_output as out
from axon.errors import AxonError, AxonMemoryError
from axon.memory.backend import (
    MAX_TOP_K,
    RETRIEVAL_MODES,
    MemoryBackend,
    decode_cursor,
    resolve_memory_dir,
)
from axon.memory.entry import MemoryEntry, encode_json
from axon.memory.lifetimes import OWNED_MARKER, is_reserved, parse_owned
from axon.redaction import redact_secrets

T = TypeVar("T")

memory_app = typer.Typer(
    name="memory",
    help="Look inside, search, export and import the memories of a store.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PAGE = 2000
"""Entries read per page by the commands that walk a whole memory (stats, forget --tag)."""

SESSION_HINT = (
    "subcommands: ls, show MEMORY, get MEMORY KEY, search MEMORY QUERY, forget MEMORY KEY, "
    "export, import FILE, purge, stats (axon memory --help)"
)

MemoryDir = Annotated[
    Path | None,
    typer.Option(
        "--memory-dir", help="The memory directory (default $AXON_MEMORY_DIR, else ./.axon)."
    ),
]
PgDsn = Annotated[
    str | None, typer.Option("--pg-dsn", help="Use this PostgreSQL database instead.")
]
UsePg = Annotated[
    bool, typer.Option("--pg", help="Use the PostgreSQL database in $AXON_PG_DSN.")
]
PgSchema = Annotated[
    str | None,
    typer.Option("--pg-schema", help="PostgreSQL schema (default $AXON_PG_SCHEMA, else axon)."),
]
AsJson = Annotated[
    bool, typer.Option("--json", help="Print one JSON document (for scripts), not a table.")
]


class _Fail(Exception):
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
    ) -> None:
        if (pg_dsn or use_pg) and memory_dir is not None:
            raise _Fail("error: give --memory-dir or --pg-dsn/--pg, not both", out.EXIT_USAGE)
        if use_pg and not pg_dsn:
            pg_dsn = os.environ.get("AXON_PG_DSN") or None
            if pg_dsn is None:
                raise _Fail("error: --pg needs AXON_PG_DSN to be set", out.EXIT_USAGE)
        self.pg_dsn = pg_dsn
        self.pg_schema = pg_schema
        if pg_dsn is None:
            self.memory_dir: Path | None = resolve_memory_dir(memory_dir)
            if self.memory_dir.exists() and not self.memory_dir.is_dir():
                raise _Fail(
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
    def label(self) -> str:
        if self.memory_dir is not None:
            return str(self.memory_dir)
        return redact_secrets(self.pg_dsn or "") + f" (schema {self.schema})"

    @property
    def missing(self) -> str:
        """Why `exists()` said no, for the one line a read prints."""
        if self.memory_dir is not None:
            return "no memory directory store there"
        return "no AXON store in that schema"

    def exists(self) -> bool:
        """False for a memory directory without a store file, or a PostgreSQL schema without
        AXON's tables: a read creates nothing to find out (opening the PostgreSQL backend
        would create the schema and migrate it)."""
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

    def open(self, *, embedder: bool = False) -> MemoryBackend:
        """A backend over the store (the embedding model attached when asked)."""
        from axon.memory.registry import registry

        model = _embedder() if embedder else None
        if self.pg_dsn is not None:
            return registry.create(
                "pgvector", location=self.pg_dsn, schema=self.pg_schema, embedder=model
            )
        return registry.create("sqlite", memory_dir=self.memory_dir, embedder=model)


def _embedder() -> Any:
    """The embedding model `axon run` would use, or None (semantic recall then runs keyword)."""
    from axon.memory.embeddings.default import default_embedder
    from axon.memory.embeddings.errors import EmbedderUnavailableError

    try:
        return default_embedder()
    except EmbedderUnavailableError as exc:
        raise _Fail(f"error: {exc}", out.EXIT_RUNTIME) from None


# ---------------------------------------------------------------------- plumbing


def _store(ctx: typer.Context, *options: Any) -> Store:
    """The store named by the subcommand's options, else by those given to `axon memory`."""
    memory_dir, pg_dsn, use_pg, pg_schema = options
    group: dict[str, Any] = ctx.obj or {}
    try:
        return Store(
            memory_dir if memory_dir is not None else group.get("memory_dir"),
            pg_dsn if pg_dsn is not None else group.get("pg_dsn"),
            use_pg or bool(group.get("use_pg")),
            pg_schema if pg_schema is not None else group.get("pg_schema"),
        )
    except _Fail as fail:  # before `_run`: one line and the exit code here too
        out.err(str(fail))
        raise typer.Exit(fail.code) from None


def _run(command: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run one command: errors become one line and an exit code, never a traceback."""
    import asyncio  # here, not at the top: `axon check` imports this module (~20 ms)

    out.configure_logging(False)
    code = 0
    try:
        asyncio.run(command())
        out.flush()
    except _Fail as fail:
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
        out.err("interrupted")
        code = 130
    except Exception as exc:
        out.internal(exc)
    if code:
        raise typer.Exit(code)


@contextlib.asynccontextmanager
async def _opened(store: Store, *, embedder: bool = False) -> Any:
    backend = store.open(embedder=embedder)
    try:
        yield backend
    finally:
        await backend.close()


def _print(text: str) -> None:
    for line in text.split("\n"):
        out.out(line)


def _print_json(data: Any) -> None:
    out.out(json.dumps(data, ensure_ascii=False, default=str))


def _width() -> int:
    return max(40, shutil.get_terminal_size((100, 24)).columns)


@contextlib.contextmanager
def _progress(description: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr while the block runs (a no-op unless stderr is a terminal)."""
    if not sys.stderr.isatty():
        yield lambda done: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda done: bar.update(task, completed=done)


async def _memories(backend: MemoryBackend) -> list[str]:
    from axon.memory.transfer import memory_names

    return await memory_names(backend)


async def _require_memory(backend: MemoryBackend, store: Store, name: str) -> None:
    """Exit 1 with a suggestion unless `name` is a memory of the store."""
    if name.startswith(OWNED_MARKER):
        raise _Fail(f"error: '{name}' is session data, not a memory", out.EXIT_CHECK)
    if await backend.count(name):
        return
    names = await _memories(backend)
    hint = difflib.get_close_matches(name, names, n=1)
    if hint:
        suggestion = f"; did you mean '{hint[0]}'?"
    elif names:
        suggestion = f" (memories: {', '.join(names[:10])})"
    else:
        suggestion = " (the store holds no memories)"
    raise _Fail(f"error: no memory '{name}' in {store.label}{suggestion}", out.EXIT_CHECK)


def _missing_store(store: Store, name: str | None = None) -> _Fail:
    what = f"no memory '{name}' in {store.label}" if name else f"nothing stored in {store.label}"
    return _Fail(f"error: {what} ({store.missing})", out.EXIT_CHECK)


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


def _when(timestamp: float | None) -> str:
    """Local time of a timestamp; one past what the platform converts reads `far future`."""
    from axon.render import clock_text

    return "" if timestamp is None else clock_text(timestamp)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], **options: Any) -> str:
    from axon.render import text_table

    return text_table(headers, rows, width=_width(), **options)


def _positive(value: int | None, option: str) -> None:
    """A count option (`--limit`, `--top-k`): from 1 to `MAX_TOP_K`, the bound of a
    program's `top_k` (a bigger one would overflow the SQL `LIMIT` it becomes)."""
    if value is not None and value < 1:
        raise _Fail(f"error: {option} must be at least 1, not {value}", out.EXIT_USAGE)
    if value is not None and value > MAX_TOP_K:
        raise _Fail(f"error: {option} must be at most {MAX_TOP_K:,}, not {value}", out.EXIT_USAGE)


# ---------------------------------------------------------------------- the group


@memory_app.callback()
def _group(
    ctx: typer.Context,
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """Look inside, search, export and import the memories of a store.

    Without a subcommand: the memories of the store (as `ls`) and the subcommands.
    """
    ctx.obj = {
        "memory_dir": memory_dir, "pg_dsn": pg_dsn, "use_pg": use_pg, "pg_schema": pg_schema,
        "json": as_json,
    }
    if ctx.invoked_subcommand is None:
        store = _store(ctx, None, None, False, None)
        _run(lambda: _ls(store, as_json, sessions=False, hint=True))


def _json_flag(ctx: typer.Context, as_json: bool) -> bool:
    return as_json or bool((ctx.obj or {}).get("json"))


# ---------------------------------------------------------------------- ls


@memory_app.command("ls")
def ls_cmd(
    ctx: typer.Context,
    sessions: Annotated[
        bool, typer.Option("--sessions", help="Also list session data, marked live or dead.")
    ] = False,
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """The memories of the store, with their entry counts."""
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    _run(lambda: _ls(store, _json_flag(ctx, as_json), sessions=sessions, hint=False))


async def _ls(store: Store, as_json: bool, *, sessions: bool, hint: bool) -> None:
    rows: list[dict[str, Any]] = []
    owned: list[dict[str, Any]] = []
    found = store.exists()
    if found:
        async with _opened(store) as backend:
            for name in await _memories(backend):
                rows.append({"memory": name, "entries": await backend.count(name)})
            if sessions:
                for scope in await backend.scopes(OWNED_MARKER):
                    parsed = parse_owned(scope)
                    count = await backend.count(scope)
                    if parsed is None or not count:
                        continue
                    owned.append(
                        {
                            "memory": parsed.memory,
                            "lifetime": parsed.lifetime,
                            "entries": count,
                            "owner": f"pid {parsed.owner.pid} on {parsed.owner.host}",
                            "state": "live" if parsed.owner.alive() else "dead",
                        }
                    )
    if as_json:
        data: dict[str, Any] = {"store": store.label, "memories": rows}
        if sessions:
            data["sessions"] = owned
        _print_json(data)
        return
    if not rows:
        _print(f"no memories in {store.label}{'' if found else f' ({store.missing})'}")
    else:
        _print(
            _table(
                ("memory", "entries"),
                [(r["memory"], f"{r['entries']:,}") for r in rows],
                right={1},
                flex=0,
            )
        )
    if owned:
        _print("")
        _print("session data (not memories; dead sessions' data is swept by the next run):")
        _print(
            _table(
                ("memory", "lifetime", "entries", "owner", "state"),
                [
                    (o["memory"], o["lifetime"], f"{o['entries']:,}", o["owner"], o["state"])
                    for o in owned
                ],
                right={2},
                flex=3,
            )
        )
    if hint:
        _print("")
        _print(SESSION_HINT)


# ---------------------------------------------------------------------- show / get


@memory_app.command("show")
def show_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory to list.")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many entries.")] = 20,
    after: Annotated[
        str | None,
        typer.Option("--after", help="Continue after this cursor (printed by the last page)."),
    ] = None,
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """The newest entries of MEMORY, newest first, a page at a time (--after CURSOR)."""
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    wants_json = _json_flag(ctx, as_json)

    async def body() -> None:
        _positive(limit, "--limit")
        if after is not None:
            try:  # a cursor is checked here, so a bad one is exit 1, not a failed read (3)
                decode_cursor(after, oldest_first=False, scope=memory)
            except AxonMemoryError as exc:
                raise _Fail(f"error: {exc}", out.EXIT_CHECK) from None
        if not store.exists():
            raise _missing_store(store, memory)
        async with _opened(store) as backend:
            await _require_memory(backend, store, memory)
            total = await backend.count(memory)
            page = await backend.list_page(memory, limit=limit, after=after)
            entries = page.entries
            now = backend.clock()
        if wants_json:
            _print_json(
                {
                    "memory": memory,
                    "count": total,
                    "entries": [entry_data(e) for e in entries],
                    "next": page.cursor,
                }
            )
            return
        from axon.render import entries_table

        _print(entries_table(entries, now, _width()))
        if page.cursor is not None:
            _print(
                f"({len(entries)} of {total:,} entries; next page: "
                f"axon memory show {memory} --after {page.cursor})"
            )

    _run(body)


@memory_app.command("get")
def get_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory.")],
    key: Annotated[str, typer.Argument(help="The key of the entry.")],
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """One entry of MEMORY by its KEY (exit 1 when there is none)."""
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    wants_json = _json_flag(ctx, as_json)

    async def body() -> None:
        if not store.exists():
            raise _missing_store(store, memory)
        async with _opened(store) as backend:
            await _require_memory(backend, store, memory)
            entry = await backend.get(key, memory)
        if entry is None:
            raise _Fail(f"error: no key '{key}' in memory '{memory}'", out.EXIT_CHECK)
        if wants_json:
            _print_json({"memory": memory, **entry_data(entry)})
            return
        value = entry.value if isinstance(entry.value, str) else encode_json(entry.value)
        meta = {k: v for k, v in entry.metadata.items() if k != "scope"}
        rows = [
            ("key", entry.key),
            ("value", value),
            ("type", type(entry.value).__name__),
            ("metadata", encode_json(meta)),
            ("created", _when(entry.timestamp)),
            ("expires", _when(entry.expires_at) or "never"),
        ]
        _print(_table(("field", "value"), rows, flex=1))

    _run(body)


# ---------------------------------------------------------------------- search


@memory_app.command("search")
def search_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory to search.")],
    query: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many results.")] = 5,
    retrieval: Annotated[
        str, typer.Option("--retrieval", help="exact, keyword, semantic or hybrid.")
    ] = "keyword",
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """Recall from MEMORY: the best TOP_K entries for QUERY (default keyword retrieval)."""
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    wants_json = _json_flag(ctx, as_json)

    async def body() -> None:
        _positive(top_k, "--top-k")
        if retrieval not in RETRIEVAL_MODES:
            close = difflib.get_close_matches(retrieval, RETRIEVAL_MODES, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise _Fail(
                f"error: --retrieval takes {', '.join(RETRIEVAL_MODES)}, not '{retrieval}'{hint}",
                out.EXIT_USAGE,
            )
        if not store.exists():
            raise _missing_store(store, memory)
        semantic = retrieval in ("semantic", "hybrid")
        async with _opened(store, embedder=semantic) as backend:
            await _require_memory(backend, store, memory)
            mode = retrieval
            if semantic and backend.embedder is None:
                from axon.memory.embeddings.availability import keyword_fallback_warning

                out.err(
                    "warning: "
                    + (keyword_fallback_warning(memory, retrieval) or "no embedding model")
                    + " (searching with keyword retrieval)"
                )
                mode = "keyword"
            if mode in ("semantic", "hybrid"):
                await _embed_with_progress(backend, memory)
            results = await backend.retrieve(query, top_k, memory, mode=mode)
        if wants_json:
            _print_json(
                {
                    "memory": memory,
                    "query": query,
                    "retrieval": mode,
                    "results": [
                        {
                            **entry_data(r),
                            "score": r.score,
                            **({"signals": r.signals} if r.signals else {}),
                        }
                        for r in results
                    ],
                }
            )
            return
        from axon.render import recall_table

        record = {"results": [{"key": r.key, "score": r.score, "value": r.value} for r in results]}
        _print(f"{len(results)} result{'s' if len(results) != 1 else ''} ({mode})")
        if results:
            _print(recall_table(record, _width()))

    _run(body)


async def _embed_with_progress(backend: MemoryBackend, memory: str) -> None:
    """Compute missing vectors first, with a progress bar when there are many."""
    if not sys.stderr.isatty():
        return  # the recall embeds what it needs by itself
    total = await backend.count(memory)
    with _progress(f"embedding {memory}", total) as advance:
        await backend.ensure_vectors(memory, progress=advance)


# ---------------------------------------------------------------------- embed


@memory_app.command("embed")
def embed_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory to embed.")],
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """Compute MEMORY's missing vectors now (a warm-up), with a progress bar.

    Remembers never wait for the model: vectors are computed in the background and
    by recalls. This computes every vector still missing for the current model, so
    the next semantic or hybrid recall has nothing to wait for.
    """
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    wants_json = _json_flag(ctx, as_json)

    async def body() -> None:
        if not store.exists():
            raise _missing_store(store, memory)
        async with _opened(store, embedder=True) as backend:
            await _require_memory(backend, store, memory)
            if backend.embedder is None:
                from axon.memory.embeddings.availability import keyword_fallback_warning

                raise _Fail(
                    "error: "
                    + (keyword_fallback_warning(memory, "semantic") or "no embedding model"),
                    out.EXIT_RUNTIME,
                )
            model = backend.embedder.model_id
            total = len(await backend._pending_texts(memory, model))
            with _progress(f"embedding {memory}", total) as advance:
                computed = await backend.ensure_vectors(memory, progress=advance)
        if wants_json:
            _print_json({"op": "embed", "memory": memory, "model": model, "embedded": computed})
            return
        _print(f"embedded {computed:,} entr{'y' if computed == 1 else 'ies'} of {memory} ({model})")

    _run(body)


# ---------------------------------------------------------------------- forget


@memory_app.command("forget")
def forget_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory.")],
    key: Annotated[str | None, typer.Argument(help="The key to delete.")] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Delete the entries with this tag.")
    ] = None,
    where: Annotated[
        list[str] | None,
        typer.Option("--where", help="Delete the entries whose metadata FIELD=VALUE."),
    ] = None,
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """Delete KEY from MEMORY, or every entry matching --tag / --where."""
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    wants_json = _json_flag(ctx, as_json)

    async def body() -> None:
        filters = _filters(tag or [], where or [])
        if (key is None) == (filters is None):
            raise _Fail(
                "error: forget takes a KEY or --tag/--where filters (one of the two)",
                out.EXIT_USAGE,
            )
        if not store.exists():
            raise _missing_store(store, memory)
        from axon.runtime.associations import delete_entry  # also unlinks associations

        async with _opened(store) as backend:
            await _require_memory(backend, store, memory)
            if key is not None:
                if not await delete_entry(backend, key, memory):
                    raise _Fail(f"error: no key '{key}' in memory '{memory}'", out.EXIT_CHECK)
                deleted = 1
            else:
                doomed = await _matching_keys(backend, memory, filters)
                deleted = sum([await delete_entry(backend, k, memory) for k in doomed])
            from axon.runtime.tiers import count_persisted  # a tiered memory's counters

            await count_persisted(backend, memory, "forgets", deleted)
        if wants_json:  # the shape of the forget statement's record (docs/language.md)
            what: dict[str, Any] = {"key": key} if key is not None else {"filter": filters}
            _print_json({"op": "forget", "memory": memory, **what, "deleted": deleted})
        else:
            _print(f"forgot {deleted} entr{'y' if deleted == 1 else 'ies'} from {memory}")

    _run(body)


def _filters(tags: list[str], where: list[str]) -> dict[str, Any] | None:
    """`--tag`/`--where` as recall filters (a JSON value after '=' is parsed as JSON)."""
    filters: dict[str, Any] = {}
    if tags:
        filters["tags"] = list(tags)
    for item in where:
        field, sep, text = item.partition("=")
        if not sep or not field:
            raise _Fail(f"error: --where takes FIELD=VALUE, not '{item}'", out.EXIT_USAGE)
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        filters[field] = value
    return filters or None


async def _matching_keys(
    backend: MemoryBackend, memory: str, filters: dict[str, Any] | None
) -> list[str]:
    """Keys of the entries of `memory` whose metadata matches (the backend filters: SQLite
    and PostgreSQL in their query)."""
    return [entry.key for entry in await backend.list_matching(memory, filters)]


# ---------------------------------------------------------------------- export / import


@memory_app.command("export")
def export_cmd(
    ctx: typer.Context,
    memories: Annotated[
        list[str] | None, typer.Argument(help="The memories to export (default: all).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to FILE (else stdout).")
    ] = None,
    with_vectors: Annotated[
        bool,
        typer.Option(
            "--with-vectors", help="Also write each entry's stored vector (with its model)."
        ),
    ] = False,
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """Write memories in the JSON Lines export format (docs/cli.md), oldest entry first."""
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    wants_json = _json_flag(ctx, as_json)

    async def body() -> None:
        from axon.memory.transfer import export_memories, export_total

        if output is not None:
            _check_output(output)
        if not store.exists():
            if memories:
                raise _missing_store(store, memories[0])
            raise _missing_store(store)
        async with _opened(store, embedder=with_vectors) as backend:
            names = list(memories or []) or await _memories(backend)
            for name in names:
                await _require_memory(backend, store, name)
            total = await export_total(backend, names)
            with _progress("exporting", total) as advance:
                if output is None:
                    report = await export_memories(
                        backend, _Stdout(), names, progress=advance, with_vectors=with_vectors
                    )
                else:
                    report = await _export_file(backend, output, names, advance, with_vectors)
        if output is not None:
            if wants_json:
                _print_json({"op": "export", "file": str(output), **report.to_dict()})
            else:
                vectors = f" (with {report.vectors_kept:,} vectors)" if with_vectors else ""
                _print(
                    f"exported {report.entries:,} entries of {len(names)} memories to "
                    f"{output}{vectors}"
                )

    _run(body)


def _check_output(path: Path) -> None:
    """Exit 1 before anything is read when `-o FILE` could not be written."""
    parent = path.parent if str(path.parent) else Path(".")
    problem = None
    if path.is_dir():
        problem = "is a directory"
    elif not parent.is_dir():
        problem = f"directory {parent} does not exist"
    elif not os.access(parent, os.W_OK | os.X_OK):
        problem = f"directory {parent} is not writable"
    if problem:
        raise _Fail(f"{path}: error: cannot write the export: {problem}", out.EXIT_CHECK)


async def _export_file(
    backend: MemoryBackend,
    path: Path,
    names: list[str],
    advance: Callable[[int], None],
    with_vectors: bool = False,
) -> Any:
    """Export into a temporary file renamed over `path`: whole or not at all."""
    import tempfile

    from axon.memory.transfer import export_memories

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        message = f"{path}: error: cannot write the export ({exc.strerror})"
        raise _Fail(message, out.EXIT_CHECK) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            report = await export_memories(
                backend, handle, names, progress=advance, with_vectors=with_vectors
            )
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _Fail(
            f"{path}: error: cannot write the export ({exc.strerror or exc})", out.EXIT_CHECK
        ) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return report


class _Stdout(io.TextIOBase):
    """stdout for the export: a closed pipe or a full disk become `out.OutputFailed`."""

    def write(self, text: str) -> int:
        try:
            sys.stdout.write(text)
        except BrokenPipeError:
            raise out.OutputFailed(None) from None
        except OSError as exc:
            raise out.OutputFailed(exc) from None
        return len(text)


@memory_app.command("import")
def import_cmd(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="An export file ('-' for stdin).")],
    into: Annotated[
        str | None, typer.Option("--into", help="Put every entry into this memory.")
    ] = None,
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """Store the entries of an export FILE (importing the same file twice adds nothing)."""
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    wants_json = _json_flag(ctx, as_json)

    async def body() -> None:
        from axon.memory.transfer import import_memories, read_lines

        if into is not None and (not into or is_reserved(into)):  # a bad option value: 2
            raise _Fail(
                f"error: --into {into!r} is not a memory name that can be imported into",
                out.EXIT_USAGE,
            )
        with _open_input(file) as (handle, size):
            source = "<stdin>" if str(file) == "-" else str(file)
            # With the model attached, vectors of that model in the file are kept; a
            # model that cannot run here only means every vector is dropped.
            try:
                _embedder()
                wants_model = True
            except _Fail:
                wants_model = False
            async with _opened(store, embedder=wants_model) as backend:
                with _progress("importing", size) as advance:
                    lines = read_lines(handle, source)
                    tell = _byte_progress(handle, advance) if size else None
                    report = await import_memories(
                        backend, lines, source=source, into=into,
                        progress=tell,
                    )
        if wants_json:
            _print_json({"op": "import", "file": source, **report.to_dict()})
        else:
            skipped = (
                f" ({report.skipped_expired:,} already expired, skipped)"
                if report.skipped_expired
                else ""
            )
            vectors = ""
            if report.vectors_kept or report.vectors_dropped:
                vectors = f"; {report.vectors_kept:,} vectors kept"
                if report.vectors_dropped:
                    vectors += (
                        f", {report.vectors_dropped:,} of another model dropped "
                        "(those entries are embedded again)"
                    )
            _print(
                f"imported {report.entries:,} entries into "
                f"{len(report.memories)} memor{'y' if len(report.memories) == 1 else 'ies'}"
                f"{skipped}{vectors}"
            )

    _run(body)


def _byte_progress(handle: Any, advance: Callable[[int], None]) -> Callable[[int], None]:
    """Progress of an import in bytes read (the file's size is known, its entry count is not)."""

    def tell(_: int) -> None:
        with contextlib.suppress(OSError, ValueError):
            advance(handle.buffer.tell())

    return tell


@contextlib.contextmanager
def _open_input(path: Path) -> Iterator[tuple[Any, int | None]]:
    if str(path) == "-":
        yield sys.stdin, None
        return
    try:
        handle = open(path, encoding="utf-8", newline="")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise _Fail(f"{path}: error: no such file", out.EXIT_CHECK) from None
    except IsADirectoryError:
        raise _Fail(f"{path}: error: is a directory, not an export file", out.EXIT_CHECK) from None
    except OSError as exc:
        raise _Fail(f"{path}: error: cannot read ({exc.strerror})", out.EXIT_CHECK) from None
    with handle:
        yield handle, os.fstat(handle.fileno()).st_size


# ---------------------------------------------------------------------- purge / stats


@memory_app.command("purge")
def purge_cmd(
    ctx: typer.Context,
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """Delete every expired entry of the store now; print how many (per memory)."""
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    wants_json = _json_flag(ctx, as_json)

    async def body() -> None:
        by_memory: dict[str, int] = {}

        def listen(count: int, by_scope: Any) -> None:
            for scope, removed in (by_scope or {None: count}).items():
                owned = parse_owned(scope)
                name = (
                    f"{owned.memory} ({owned.lifetime} data)" if owned else scope or "(unscoped)"
                )
                by_memory[name] = by_memory.get(name, 0) + removed

        if store.exists():
            async with _opened(store) as backend:
                backend.set_purge_listener(listen)  # also told of the purge on open
                await backend.purge_expired()
        total = sum(by_memory.values())
        if wants_json:
            _print_json({"op": "purge", "purged": total, "memories": by_memory})
            return
        _print(f"purged {total:,} expired entr{'y' if total == 1 else 'ies'}")
        if by_memory:
            rows = [(name, f"{count:,}") for name, count in sorted(by_memory.items())]
            _print(_table(("memory", "purged"), rows, right={1}, flex=0))

    _run(body)


@memory_app.command("stats")
def stats_cmd(
    ctx: typer.Context,
    memories: Annotated[
        list[str] | None, typer.Argument(help="The memories (default: all).")
    ] = None,
    memory_dir: MemoryDir = None,
    pg_dsn: PgDsn = None,
    use_pg: UsePg = False,
    pg_schema: PgSchema = None,
    as_json: AsJson = False,
) -> None:
    """Per memory: entries, oldest and newest entry, how many expire, bytes of values;
    and, for a tiered memory, its persistent tier's counters (stores, recalls, forgets,
    promotions, demotions), which survive restarts."""
    store = _store(ctx, memory_dir, pg_dsn, use_pg, pg_schema)
    wants_json = _json_flag(ctx, as_json)

    async def body() -> None:
        stats: list[dict[str, Any]] = []
        if store.exists():
            async with _opened(store) as backend:
                names = list(memories or []) or await _memories(backend)
                for name in names:
                    await _require_memory(backend, store, name)
                total = sum([await backend.count(name) for name in names])
                with _progress("reading", total) as advance:
                    done = 0
                    for name in names:
                        item = await _memory_stats(backend, name, _offset(advance, done))
                        done += item["entries"]
                        stats.append(item)
        elif memories:
            raise _missing_store(store, memories[0])
        if wants_json:
            _print_json({"store": store.label, "memories": stats})
            return
        if not stats:
            _print(f"no memories in {store.label}")
            return
        rows = [
            (
                s["memory"], f"{s['entries']:,}", _when(s["oldest"]), _when(s["newest"]),
                f"{s['expiring']:,}", f"{s['bytes']:,}",
            )
            for s in stats
        ]
        headers = ("memory", "entries", "oldest", "newest", "expiring", "bytes")
        _print(_table(headers, rows, right={1, 4, 5}, flex=0))
        tiered = [s for s in stats if s.get("tiers")]
        if tiered:
            from axon.runtime.tiers import COUNTERS

            counter_rows = [
                (s["memory"], tier, *(f"{c[name]:,}" for name in COUNTERS))
                for s in tiered
                for tier, c in s["tiers"].items()
            ]
            _print(
                _table(("memory", "tier", *COUNTERS), counter_rows,
                       right=set(range(2, 2 + len(COUNTERS))), flex=0)
            )

    _run(body)


def _offset(advance: Callable[[int], None], base: int) -> Callable[[int], None]:
    return lambda done: advance(base + done)


async def _memory_stats(
    backend: MemoryBackend, name: str, advance: Callable[[int], None]
) -> dict[str, Any]:
    """One pass over a memory, a page at a time: counts, time range, expiring, value bytes."""
    oldest: float | None = None
    newest: float | None = None
    count = expiring = size = 0
    cursor = None
    while True:
        page = await backend.list_page(name, limit=PAGE, after=cursor)
        for entry in page.entries:
            count += 1
            newest = entry.timestamp if newest is None else max(newest, entry.timestamp)
            oldest = entry.timestamp if oldest is None else min(oldest, entry.timestamp)
            expiring += entry.expires_at is not None
            size += len(encode_json(entry.value).encode("utf-8"))
        advance(count)
        if page.cursor is None:
            break
        cursor = page.cursor
    from axon.runtime.tiers import STATS_KEY, read_persisted_stats, stats_scope

    item: dict[str, Any] = {
        "memory": name,
        "entries": count,
        "oldest": oldest,
        "newest": newest,
        "expiring": expiring,
        "bytes": size,
    }
    if await backend.get(STATS_KEY, scope=stats_scope(name)) is not None:
        item["tiers"] = {"persistent": await read_persisted_stats(backend, name)}
    return item
