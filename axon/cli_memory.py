"""`axon memory`: a memory store (a memory directory or a PostgreSQL schema) in, tables or JSON out.

Every subcommand opens one store: the SQLite file of a memory directory
(`--memory-dir`, else `AXON_MEMORY_DIR`, else `./.axon`, as `axon run`), or a
PostgreSQL database (`--pg-dsn DSN`, or `--pg` for `$AXON_PG_DSN`; `--pg-schema`,
else `AXON_PG_SCHEMA`, else `axon`). A memory is a scope of that store; the
owned scopes of session and ephemeral memories (`axon.memory.lifetimes`) are not
memories and are shown only by `ls --sessions`. Every subcommand works in one
namespace (`--namespace P`, else `AXON_NAMESPACE`, else the root: `Store.namespace`),
its memories' scopes being that namespace's (`Store.scope`); `namespaces` and `erase`
are in `axon.cli_namespaces`.

People get `rich` tables (wide characters align, long values are cut); `--json`
prints exactly one JSON document on stdout per command (`export` prints the JSON
Lines export format instead). Progress bars go to stderr, and only when it is a
terminal. Exit codes are `axon.cli`'s; in addition a memory or key that does not
exist, or an import file that is not an export, is exit 1 (one line on stderr).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from typing import Annotated, Any

import typer

from axon import cli_output as out
from axon.cli_history import history_cmd
from axon.cli_namespaces import erase_cmd, held, namespaces_cmd
from axon.cli_store import (
    PAGE,
    AsJson,
    Failed,
    Store,
    check_count,
    entry_data,
    json_flag,
    memory_names_of,
    missing_store,
    opened,
    progress,
    require_memory,
    run,
    say,
    say_json,
    store_command,
    store_group,
    store_of,
    table,
    terminal_width,
    when,
)
from axon.cli_transfer import export_cmd, import_cmd
from axon.cli_vectors import (
    EMBED_WAIT_HELP,
    budget_of,
    embed_now,
    embed_wait_text,
    wait_for_vectors,
)
from axon.compiler.check_options import filter_problem
from axon.compiler.names import Suggester
from axon.errors import AxonMemoryError
from axon.memory.backend import (
    RETRIEVAL_MODES,
    MemoryBackend,
    decode_cursor,
)
from axon.memory.entry import (
    Ago,
    MemoryEntry,
    NewEntry,
    encode_json,
    json_kind,
    matches_filters,
    resolved_window,
    time_bound,
    updated_window,
    window_test,
)
from axon.memory.lifetimes import OWNED_MARKER, parse_owned
from axon.memory.namespaces import ROOT, split_scope
from axon.memory.retrieval.scores import min_score_problem
from axon.memory.versions import Version
from axon.render import counted

memory_app = typer.Typer(
    name="memory",
    help="Look inside, search, export and import the memories of a store.",
    invoke_without_command=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


Tags = Annotated[
    list[str] | None,
    typer.Option("--tag", help="Only entries with this tag (repeatable: any of them)."),
]
Since = Annotated[
    str | None,
    typer.Option(
        "--since",
        help="Only entries last written at or after this: an ISO 8601 date or time "
        "(UTC without an offset), Unix seconds, or a duration before now (7d, 12h).",
    ),
]
Until = Annotated[
    str | None,
    typer.Option("--until", help="Only entries last written before this (as --since)."),
]
Wheres = Annotated[
    list[str] | None,
    typer.Option(
        "--where",
        help="Only entries whose metadata FIELD=VALUE, or FIELD>=VALUE, >, <=, <, != "
        "(repeatable: all of them; VALUE is read as JSON when it parses, else as text).",
    ),
]

SHOW_LIMIT = 20
"""How many entries `show` lists unless told (`--limit`)."""


SESSION_HINT = (
    "subcommands: ls, show MEMORY, get MEMORY KEY, search MEMORY QUERY, forget MEMORY KEY, "
    "export, import FILE, purge, stats, namespaces, erase --namespace P (axon memory --help)"
)


# ---------------------------------------------------------------------- the group


@memory_app.callback()
@store_group
def _group(
    ctx: typer.Context,
    as_json: AsJson = False,
) -> None:
    """Look inside, search, export and import the memories of a store.

    Without a subcommand: the memories of the store (as `ls`) and the subcommands.
    """
    ctx.obj["json"] = as_json  # beside the store options (`store_group`)
    if ctx.invoked_subcommand is None:
        store = store_of(ctx)
        run(lambda: _ls(store, as_json, sessions=False, hint=True))


# ---------------------------------------------------------------------- ls


@memory_app.command("ls")
@store_command
def ls_cmd(
    ctx: typer.Context,
    sessions: Annotated[
        bool, typer.Option("--sessions", help="Also list session data, marked live or dead.")
    ] = False,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """The memories of the store, with their entry counts."""
    run(lambda: _ls(store, json_flag(ctx, as_json), sessions=sessions, hint=False))


async def _ls(store: Store, as_json: bool, *, sessions: bool, hint: bool) -> None:
    rows: list[dict[str, Any]] = []
    owned: list[dict[str, Any]] = []
    elsewhere = 0  # namespaces below this one holding memories (said when it holds none)
    found = store.exists()
    if found:
        async with opened(store) as backend:
            for name in await memory_names_of(backend, store.namespace):
                rows.append({"memory": name, "entries": await backend.count(store.scope(name))})
            if not rows and not as_json:
                elsewhere = len(await held(backend, store.namespace))
            if sessions:
                for scope in await backend.scopes(store.scope(OWNED_MARKER)):
                    parsed = parse_owned(split_scope(scope)[1])
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
        data: dict[str, Any] = {"store": store.label, **_namespace_field(store), "memories": rows}
        if sessions:
            data["sessions"] = owned
        say_json(data)
        return
    if not rows:
        below = (
            f"; {counted(elsewhere, 'namespace', 'namespaces')} below "
            f"{'it' if store.namespace.is_root else store.namespace.text} "
            f"{'holds' if elsewhere == 1 else 'hold'} some: axon memory namespaces"
            f"{'' if store.namespace.is_root else ' --prefix ' + store.namespace.text}"
            if elsewhere else ""
        )
        say(f"no memories in {store.label}{_in(store)}"
            f"{'' if found else f' ({store.missing})'}{below}")
    else:
        say(
            table(
                ("memory", "entries"),
                [(r["memory"], f"{r['entries']:,}") for r in rows],
                right={1},
                flex=0,
            )
        )
    if owned:
        say("")
        say("session data (not memories; dead sessions' data is swept by the next run):")
        say(
            table(
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
        say("")
        say(SESSION_HINT)


def _in(store: Store) -> str:
    """` namespace acme/u42` after a store's label (nothing in the root)."""
    return "" if store.namespace.is_root else f" namespace {store.namespace.text}"


def _namespace_field(store: Store) -> dict[str, str]:
    """`{"namespace": "acme/u42"}` for a `--json` document (nothing in the root)."""
    return {} if store.namespace.is_root else {"namespace": store.namespace.text}


# ---------------------------------------------------------------------- show / get


@memory_app.command("show")
@store_command
def show_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory to list.")],
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many entries.")] = SHOW_LIMIT,
    after: Annotated[
        str | None,
        typer.Option("--after", help="Continue after this cursor (printed by the last page)."),
    ] = None,
    tag: Tags = None,
    where: Wheres = None,
    since: Since = None,
    until: Until = None,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """The newest entries of MEMORY, newest first, a page at a time (--after CURSOR);
    with --tag/--where only those whose metadata matches, with --since/--until only
    those last written in that window."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        check_count(limit, "--limit")
        filters = _filters(tag or [], where or [])
        window = _window(since, until)
        if after is not None:
            try:  # a cursor is checked here, so a bad one is exit 1, not a failed read (3)
                decode_cursor(after, oldest_first=False, scope=memory)
            except AxonMemoryError as exc:
                raise Failed(f"error: {exc}", out.EXIT_CHECK) from None
        if not store.exists():
            raise missing_store(store, memory)
        async with opened(store) as backend:
            await require_memory(backend, store, memory)
            scope = store.scope(memory)
            total = await backend.count(scope)
            now = backend.clock()
            if window:
                filters = {**(filters or {}), **(resolved_window(window, now) or {})}
            writer = _ShowWriter(memory, total, now, wants_json, filtered=filters is not None)
            cursor, left = after, limit
            while True:  # a page at a time, printed as it comes: memory stays flat
                entries, cursor = await _show_page(backend, scope, left, cursor, filters)
                writer.page(entries)
                left -= len(entries)
                if cursor is None or left <= 0:
                    break
                out.flush()
            again = ["axon", "memory", "show", memory, *store.options()]
            if limit != SHOW_LIMIT:
                again += ["--limit", str(limit)]
            for item in tag or []:
                again += ["--tag", item]
            for item in where or []:
                again += ["--where", item]
            for option, bound in (("--since", since), ("--until", until)):
                if bound is not None:
                    again += [option, bound]
            writer.end(cursor, again)

    run(body)


async def _show_page(
    backend: MemoryBackend,
    memory: str,
    left: int,
    after: str | None,
    filters: dict[str, Any] | None,
) -> tuple[list[MemoryEntry], str | None]:
    """Up to `left` entries of `memory` after the cursor `after` (those matching `filters`)
    and the cursor after the last entry read.

    Without filters one read of `min(left, PAGE)` entries. With filters a read of `PAGE`
    entries, filtered; when more than `left` match, the page is read again up to the
    `left`-th match, so the cursor continues right after the last entry shown.
    """
    if filters is None:
        page = await backend.list_page(memory, limit=min(left, PAGE), after=after)
        return page.entries, page.cursor
    page = await backend.list_page(memory, limit=PAGE, after=after)
    inside = window_test(filters)
    hits = [
        i for i, e in enumerate(page.entries)
        if inside(e.timestamp) and matches_filters(e.metadata, filters)
    ]
    if len(hits) > left:
        page = await backend.list_page(memory, limit=hits[left - 1] + 1, after=after)
    matching = [
        e for e in page.entries if inside(e.timestamp) and matches_filters(e.metadata, filters)
    ]
    return matching[:left], page.cursor


class _ShowWriter:
    """`show`'s output, written a page of entries at a time: a table whose first page sets
    the columns (`render.TableWriter`), or one JSON document (`{"memory", "count",
    "entries", "next"}`, the same text `say_json` would print whole)."""

    def __init__(
        self, memory: str, total: int, now: float, as_json: bool, *, filtered: bool
    ) -> None:
        from axon.render import ENTRY_COLUMNS, ENTRY_HEADERS, TableWriter

        self.memory, self.total, self.now, self.as_json = memory, total, now, as_json
        self.filtered = filtered
        self.shown = 0
        self.table = TableWriter(ENTRY_HEADERS, width=terminal_width(), **ENTRY_COLUMNS)

    def page(self, entries: list[MemoryEntry]) -> None:
        from axon.render import entry_rows, terminal_json

        first = self.shown == 0
        self.shown += len(entries)
        if not self.as_json:
            if first or entries:
                say(self.table.page(entry_rows(entries, self.now)))
            return
        items = ", ".join(terminal_json(entry_data(e)) for e in entries)
        if first:  # one line in all, as `say_json` prints it: pages end without a newline
            head = terminal_json({"memory": self.memory, "count": self.total})[:-1]
            out.write(f"{head}, \"entries\": [{items}")
        elif items:
            out.write(f", {items}")

    def end(self, cursor: str | None, command: list[str]) -> None:
        """The end of the output; on a table, when there is more, the command that shows
        the next page (`command`: this one's words without `--after`), quoted to paste."""
        import shlex

        from axon.render import terminal_json

        if self.as_json:
            out.out(f"], \"next\": {terminal_json(cursor)}}}")
        elif cursor is not None:
            shown = (
                f"{self.shown:,} matching shown" if self.filtered
                else f"{self.shown:,} of {self.total:,} entries"
            )
            say(f"({shown}; next page: {shlex.join([*command, '--after', cursor])})")


@memory_app.command("get")
@store_command
def get_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory.")],
    key: Annotated[str, typer.Argument(help="The key of the entry.")],
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """One entry of MEMORY by its KEY (exit 1 when there is none)."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        if not store.exists():
            raise missing_store(store, memory)
        async with opened(store) as backend:
            await require_memory(backend, store, memory)
            entry = await backend.get(key, store.scope(memory))
        if entry is None:
            raise Failed(f"error: no key '{key}' in memory '{memory}'", out.EXIT_CHECK)
        if wants_json:
            say_json({"memory": memory, **entry_data(entry)})
            return
        from axon.render import importance_text, record_type

        value = entry.value if isinstance(entry.value, str) else encode_json(entry.value)
        meta = {k: v for k, v in entry.metadata.items() if k != "scope"}
        rows = [
            ("key", entry.key),
            ("value", value),
            ("value type", json_kind(entry.value).split(" ", 1)[-1]),
            ("type", record_type(meta) or "(none)"),
            ("importance", importance_text(meta.get("importance")) or "(none)"),
            ("metadata", encode_json(meta)),
            ("created", when(entry.created_at)),
            ("updated", when(entry.updated_at)),
            ("expires", when(entry.expires_at) or "never"),
        ]
        say(table(("field", "value"), rows, flex=1))

    run(body)


# ---------------------------------------------------------------------- update


@memory_app.command("update")
@store_command
def update_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory.")],
    key: Annotated[str, typer.Argument(help="The key of the entry to change.")],
    value: Annotated[
        str | None, typer.Option("--value", help="The new value (stored as text).")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="The entry's tags (repeatable; replaces its tags)."),
    ] = None,
    importance: Annotated[
        str | None,
        typer.Option("--importance", help="0 to 1, or low, normal, high, critical."),
    ] = None,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """Change KEY of MEMORY only in what is given (--value, --tag, --importance): its
    created_at and all else stay, updated_at is now (exit 1 when there is no such key)."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        from axon.errors import AxonError
        from axon.runtime.handle import update_args
        from axon.runtime.memory import UNCHANGED, changed_metadata

        level: Any = importance
        if importance is not None:
            try:
                level = float(importance)
            except ValueError:
                level = importance  # a level's name, checked as the handle checks it
        try:
            checked, change = update_args(
                memory, key, UNCHANGED if value is None else value, None, tag, level,
                None, UNCHANGED,
            )
        except (TypeError, AxonError) as exc:
            message = str(exc).replace(f"{memory}.update: ", "", 1)
            if "give at least one of" in message:
                message = "update needs --value, --tag or --importance"
            raise Failed(f"error: {message}", out.EXIT_USAGE) from None
        if not store.exists():
            raise missing_store(store, memory)

        def build(old: MemoryEntry) -> NewEntry:
            stored = old.value if change.value is UNCHANGED else change.value
            meta = changed_metadata(old.metadata, change)
            return NewEntry(checked, stored, meta, old.expires_at)

        async with opened(store) as backend:
            await require_memory(backend, store, memory)
            entry = await backend.update(checked, store.scope(memory), build)
            if entry is not None:  # kept as the memory's history says (its last version's)
                await backend.record_as_before(store.scope(memory), [Version.of(entry, "update")])
        if entry is None:
            raise Failed(f"error: no key '{key}' in memory '{memory}'", out.EXIT_CHECK)
        if wants_json:
            say_json({"memory": memory, **entry_data(entry)})
        else:
            say(f"updated {key} in {memory}")

    run(body)


# ---------------------------------------------------------------------- search


@memory_app.command("search")
@store_command
def search_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory to search.")],
    query: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="How many results.")] = 5,
    retrieval: Annotated[
        str | None,
        typer.Option(
            "--retrieval",
            help="exact, keyword, semantic or hybrid (default: the best the store's backend "
            "and the installed embedding model allow).",
        ),
    ] = None,
    min_score: Annotated[
        float | None,
        typer.Option(
            "--min-score",
            help="Relevance floor from 0 to 1 (0: the TOP_K nearest whatever they score).",
        ),
    ] = None,
    tag: Tags = None,
    where: Wheres = None,
    since: Since = None,
    until: Until = None,
    embed_wait: Annotated[
        str | None, typer.Option("--embed-wait", metavar="SECONDS|all", help=EMBED_WAIT_HELP)
    ] = None,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """Recall from MEMORY: the best TOP_K entries for QUERY (with --tag/--where only among
    those whose metadata matches, with --since/--until among those last written then)."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        check_count(top_k, "--top-k")
        if min_score is not None and min_score_problem(min_score) is not None:
            raise Failed(
                f"error: --min-score must be a number from 0 to 1, not {min_score:g}",
                out.EXIT_USAGE,
            )
        filters = _filters(tag or [], where or [])
        window = _window(since, until)  # an Ago bound: the backend's now (`resolved_window`)
        if window:
            filters = {**(filters or {}), **window}
        budget = budget_of(embed_wait_text(embed_wait))
        if retrieval is not None and retrieval not in RETRIEVAL_MODES:
            close = Suggester(RETRIEVAL_MODES).closest(retrieval)
            hint = f"; did you mean '{close}'?" if close else ""
            raise Failed(
                f"error: --retrieval takes {', '.join(RETRIEVAL_MODES)}, not '{retrieval}'{hint}",
                out.EXIT_USAGE,
            )
        if not store.exists():
            raise missing_store(store, memory)
        mode = retrieval or _default_retrieval(store)
        semantic = mode in ("semantic", "hybrid")
        async with opened(store, embedder=semantic) as backend:
            await require_memory(backend, store, memory)
            if semantic and backend.embedder is None and retrieval is None:
                mode = "keyword"  # no model: the best left, as a recall of the memory would
            elif semantic and backend.embedder is None:
                from axon.memory.embeddings.availability import keyword_fallback_warning

                out.err(
                    "warning: "
                    + (keyword_fallback_warning(memory, mode) or "no embedding model")
                    + " (searching with keyword retrieval)"
                )
                mode = "keyword"
            pending = 0
            if mode in ("semantic", "hybrid"):  # progress on a terminal; --embed-wait bounds it
                pending = await wait_for_vectors(
                    backend, store.scope(memory), budget, name=store.named(memory)
                )
            found = await backend.retrieve_counted(
                query, top_k, store.scope(memory), mode=mode, filters=filters,
                min_score=min_score,
            )
        results = found.entries
        if wants_json:
            say_json(
                {
                    "memory": memory,
                    "query": query,
                    "retrieval": mode,
                    "below_floor": found.below_floor,
                    **({"pending_vectors": pending} if pending else {}),
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
        from axon.render import below_floor_line, pending_line, recall_table

        record = {"results": [{"key": r.key, "score": r.score, "value": r.value} for r in results]}
        say(f"{len(results)} result{'s' if len(results) != 1 else ''} ({mode})")
        if results:
            say(recall_table(record, terminal_width()))
        note = below_floor_line(found.below_floor)
        if note:
            say(note)
        note = pending_line(pending)
        if note:
            say(note)

    run(body)


def _default_retrieval(store: Store) -> str:
    """The retrieval `search` uses unless told: the store does not record how a memory was
    declared, so the best its backend answers (`Capabilities.best_natural_language_mode`:
    what a declaration without `retrieval:` gets), or `keyword` when that needs an
    embedding model and none is installed (`semantic_unavailable_reason`)."""
    from axon.memory.embeddings.availability import semantic_unavailable_reason
    from axon.memory.registry import registry

    info = registry.lookup(store.backend_name)
    best = info.resolved_capabilities().best_natural_language_mode if info else "keyword"
    if best in ("semantic", "hybrid") and semantic_unavailable_reason() is not None:
        return "keyword"
    return best


# ---------------------------------------------------------------------- embed


@memory_app.command("embed")
@store_command
def embed_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory to embed.")],
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """Compute MEMORY's missing vectors now (a warm-up), with a progress bar.

    Remembers never wait for the model: vectors are computed in the background and
    by recalls. This computes every vector still missing for the current model, so
    the next semantic or hybrid recall has nothing to wait for.
    """
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        if not store.exists():
            raise missing_store(store, memory)
        async with opened(store, embedder=True) as backend:
            await require_memory(backend, store, memory)
            if backend.embedder is None:
                from axon.memory.embeddings.availability import keyword_fallback_warning

                raise Failed(
                    "error: "
                    + (keyword_fallback_warning(memory, "semantic") or "no embedding model"),
                    out.EXIT_RUNTIME,
                )
            model = backend.embedder.model_id
            computed = await embed_now(backend, store.scope(memory), name=store.named(memory))
        if wants_json:
            say_json({"op": "embed", "memory": memory, "model": model, "embedded": computed})
            return
        say(f"embedded {computed:,} entr{'y' if computed == 1 else 'ies'} of {memory} ({model})")

    again = shlex.join(["axon", "memory", "embed", memory, *store.options()])
    run(body, interrupted=f"interrupted: the vectors computed so far are saved; {again} "
                          "computes the rest")


# ---------------------------------------------------------------------- forget


@memory_app.command("forget")
@store_command
def forget_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory.")],
    key: Annotated[str | None, typer.Argument(help="The key to delete.")] = None,
    tag: Tags = None,
    where: Wheres = None,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes", "-y", help="Delete what --tag/--where match without asking."
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="List what --tag/--where would delete; delete nothing."),
    ] = False,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """Delete KEY from MEMORY, or every entry matching --tag / --where (asked first on a
    terminal; --yes to delete without asking, --dry-run to list them)."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        filters = _filters(tag or [], where or [])
        if (key is None) == (filters is None):
            raise Failed(
                "error: forget takes a KEY or --tag/--where filters (one of the two)",
                out.EXIT_USAGE,
            )
        if key is not None and dry_run:
            raise Failed("error: --dry-run goes with --tag/--where, not a KEY", out.EXIT_USAGE)
        asking = filters is not None and not yes and not dry_run
        if asking and not sys.stdin.isatty():
            raise Failed(
                "error: forget --tag/--where asks before deleting, and stdin is not a "
                "terminal: pass --yes to delete without asking (--dry-run lists what "
                "would go)",
                out.EXIT_USAGE,
            )
        if not store.exists():
            raise missing_store(store, memory)
        from axon.runtime.associations import delete_entry  # also unlinks associations

        async with opened(store) as backend:
            await require_memory(backend, store, memory)
            scope = store.scope(memory)
            if key is not None:
                if not await delete_entry(backend, key, scope):
                    raise Failed(f"error: no key '{key}' in memory '{memory}'", out.EXIT_CHECK)
                deleted = 1
                gone = [key]
            else:
                doomed = await _matching_keys(backend, scope, filters)
                if dry_run:
                    _would_forget(memory, filters, doomed, wants_json)
                    return
                if asking and doomed and not _confirm(memory, filters, len(doomed)):
                    say("nothing forgotten")
                    return
                gone = [k for k in doomed if await delete_entry(backend, k, scope)]
                deleted = len(gone)
            now = backend.clock()  # a forget version, as the memory's history says
            await backend.record_as_before(scope, [Version.forget(k, now) for k in gone])
            from axon.runtime.tiers import count_persisted  # a tiered memory's counters

            await count_persisted(backend, memory, "forgets", deleted, store.namespace)
        if wants_json:  # the shape of the forget statement's record (docs/language.md)
            what: dict[str, Any] = {"key": key} if key is not None else {"filter": filters}
            say_json({"op": "forget", "memory": memory, **what, "deleted": deleted})
        else:
            say(f"forgot {deleted} entr{'y' if deleted == 1 else 'ies'} from {memory}")

    run(body)


def _would_forget(
    memory: str, filters: dict[str, Any] | None, keys: list[str], as_json: bool
) -> None:
    """`forget --dry-run`: the keys that would be deleted, nothing deleted."""
    if as_json:
        say_json(
            {"op": "forget", "memory": memory, "filter": filters, "dry_run": True,
             "deleted": 0, "would_delete": keys}
        )
        return
    say(f"would forget {len(keys)} entr{'y' if len(keys) == 1 else 'ies'} from {memory} "
        "(--dry-run: nothing deleted)")
    for key in keys:
        say(f"  {key}")


def _confirm(memory: str, filters: dict[str, Any] | None, count: int) -> bool:
    """Ask on the terminal (prompt on stderr) whether to delete `count` entries."""
    from axon.render import shorten, visible

    entries = f"{count} entr{'y' if count == 1 else 'ies'}"
    matching = shorten(json.dumps(filters, ensure_ascii=False), 60)
    try:
        return typer.confirm(
            visible(f"delete {entries} of {memory} matching {matching}?"), err=True
        )
    except typer.Abort:  # Ctrl-D or Ctrl-C at the question: nothing deleted
        return False


_CLI_OPERATORS = {">": "gt", "<": "lt", ">=": "gte", "<=": "lte", "!=": "ne"}
"""`--where` comparisons: `n>=3` is `{"n": {"gte": 3}}` (docs/cli.md)."""


def _window(since: str | None, until: str | None) -> dict[str, Any]:
    """`--since` / `--until` -> the window filter (`entry.updated_window`); a bad bound
    is exit 2 saying what is accepted. Unix seconds may be given as a number."""
    bounds: list[float | Ago | None] = []
    for option, text in (("--since", since), ("--until", until)):
        if text is None:
            bounds.append(None)
            continue
        try:
            value: Any = float(text)
        except ValueError:
            value = text
        try:
            bounds.append(time_bound(value, option))
        except ValueError as exc:
            raise Failed(f"error: {exc}", out.EXIT_USAGE) from None
    low, high = bounds
    if isinstance(low, float) and isinstance(high, float) and low >= high:
        raise Failed("error: --since must be before --until", out.EXIT_USAGE)
    return updated_window(low, high)


def _where_item(item: str) -> tuple[str, str | None, str]:
    """`FIELD=VALUE`, `FIELD>=VALUE`, `FIELD<=VALUE`, `FIELD!=VALUE` (split at the first
    `=`), else `FIELD>VALUE`, `FIELD<VALUE` (at the first `>` or `<`): the field, the
    operator (None: equality) and the value's text."""
    field, sep, text = item.partition("=")
    if sep:
        if field[-1:] in ("<", ">", "!"):
            return field[:-1], _CLI_OPERATORS[field[-1] + "="], text
        return field, None, text
    at = min((i for i in (item.find("<"), item.find(">")) if i >= 0), default=-1)
    if at < 0:
        return "", None, ""
    return item[:at], _CLI_OPERATORS[item[at]], item[at + 1 :]


def _filters(tags: list[str], where: list[str]) -> dict[str, Any] | None:
    """`--tag`/`--where` as recall filters (`matches_filters`): tags match when an entry
    has any of them; each `FIELD=VALUE` (or `FIELD>=VALUE`, `>`, `<=`, `<`, `!=`: an
    operator map) must hold (VALUE read as JSON when it parses, else as text); a field
    is given once, or once per operator. An operator map is checked by the checker's
    rules (`filter_problem`)."""
    filters: dict[str, Any] = {}
    if tags:
        filters["tags"] = list(tags)
    for item in where:
        field, op, text = _where_item(item)
        if not field:
            raise Failed(
                f"error: --where takes FIELD=VALUE (or FIELD>=VALUE, >, <=, <, !=), "
                f"not '{item}'",
                out.EXIT_USAGE,
            )
        try:
            value: Any = json.loads(text)
        except ValueError:
            value = text
        if op is not None:
            value = {op: value}
        held = filters.pop(field, None)
        if held is not None:
            merged = isinstance(held, dict) and isinstance(value, dict)
            if not merged or set(held) & set(value):
                filters[field] = held
                raise Failed(
                    f"error: --where {field}{'' if op else '='} names a field twice (one value "
                    "a field, or one of each operator; --tag is the field tags)",
                    out.EXIT_USAGE,
                )
            value = {**held, **value}
        problem = filter_problem(field, value, {}) if isinstance(value, dict) else None
        if problem is not None:
            raise Failed(f"error: --where '{item}': {problem}", out.EXIT_USAGE)
        filters[field] = value
    return filters or None


async def _matching_keys(
    backend: MemoryBackend, memory: str, filters: dict[str, Any] | None
) -> list[str]:
    """Keys of the entries of `memory` whose metadata matches (the backend filters: SQLite
    and PostgreSQL in their query)."""
    return [entry.key for entry in await backend.list_matching(memory, filters)]


# ---------------------------------------------------------------------- export / import

memory_app.command("export")(store_command(export_cmd))
memory_app.command("import")(store_command(import_cmd))
memory_app.command("history")(store_command(history_cmd))


# ---------------------------------------------------------------------- namespaces / erase

memory_app.command("namespaces")(store_command(namespaces_cmd))
memory_app.command("erase")(store_command(erase_cmd))


# ---------------------------------------------------------------------- purge / stats


@memory_app.command("purge")
@store_command
def purge_cmd(
    ctx: typer.Context,
    history: Annotated[
        bool,
        typer.Option(
            "--history",
            help="Also delete every version the store's memories keep (their history) "
            "in this namespace and those below it.",
        ),
    ] = False,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """Delete every expired entry of the store now; print how many (per memory).
    With --history, delete the history (versions) too; the entries stay."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        from axon.memory.transfer import shown_name

        by_memory: dict[str, int] = {}

        def listen(count: int, by_scope: Any) -> None:
            for scope, removed in (by_scope or {None: count}).items():
                space, base = split_scope(scope) if scope else (ROOT, scope)
                owned = parse_owned(base)
                name = f"{owned.memory} ({owned.lifetime} data)" if owned else base or "(unscoped)"
                name = shown_name(space, name)
                by_memory[name] = by_memory.get(name, 0) + removed

        versions: int | None = None
        if store.exists():
            async with opened(store) as backend:
                backend.set_purge_listener(listen)  # also told of the purge on open
                await backend.purge_expired()
                if history and backend.capabilities.history:
                    space = store.namespace
                    versions = await backend.purge_history(
                        None if space.is_root else space.scope_prefix, prefix=not space.is_root
                    )
        total = sum(by_memory.values())
        if wants_json:
            extra = {} if versions is None else {"versions": versions}
            say_json({"op": "purge", "purged": total, "memories": by_memory, **extra})
            return
        say(f"purged {total:,} expired entr{'y' if total == 1 else 'ies'}")
        if versions is not None:
            say(f"purged {versions:,} version{'' if versions == 1 else 's'} of history")
        if by_memory:
            rows = [(name, f"{count:,}") for name, count in sorted(by_memory.items())]
            say(table(("memory", "purged"), rows, right={1}, flex=0))

    run(body)


@memory_app.command("stats")
@store_command
def stats_cmd(
    ctx: typer.Context,
    memories: Annotated[
        list[str] | None, typer.Argument(help="The memories (default: all).")
    ] = None,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """Per memory: entries, oldest and newest entry, how many expire, bytes of values;
    and, for a tiered memory, its persistent tier's counters (stores, recalls, forgets,
    promotions, demotions), which survive restarts."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        stats: list[dict[str, Any]] = []
        if store.exists():
            async with opened(store) as backend:
                from axon.runtime.tiers import STATS_SCOPE_PREFIX

                # a tiered memory's counters outlive its entries: it is still a memory
                counted = [
                    split_scope(scope)[1].removeprefix(STATS_SCOPE_PREFIX)
                    for scope in await backend.scopes(store.scope(STATS_SCOPE_PREFIX))
                ]
                names = list(memories or []) or sorted(
                    {*await memory_names_of(backend, store.namespace), *counted}
                )
                for name in names:
                    if name not in counted:
                        await require_memory(backend, store, name)
                total = sum([await backend.count(store.scope(name)) for name in names])
                with progress("reading", total) as advance:
                    done = 0
                    for name in names:
                        item = await _memory_stats(
                            backend, store, name, _offset(advance, done)
                        )
                        done += item["entries"]
                        stats.append(item)
        elif memories:
            raise missing_store(store, memories[0])
        if wants_json:
            say_json({"store": store.label, **_namespace_field(store), "memories": stats})
            return
        if not stats:
            say(f"no memories in {store.label}{_in(store)}")
            return
        rows = [
            (
                s["memory"],
                f"{s['entries']:,}",
                when(s["oldest"]),
                when(s["newest"]),
                f"{s['expiring']:,}",
                f"{s['bytes']:,}",
            )
            for s in stats
        ]
        headers = ("memory", "entries", "oldest", "newest", "expiring", "bytes")
        say(table(headers, rows, right={1, 4, 5}, flex=0))
        tiered = [s for s in stats if s.get("tiers")]
        if tiered:
            from axon.runtime.tiers import COUNTERS

            counter_rows = [
                (s["memory"], tier, *(f"{c[name]:,}" for name in COUNTERS))
                for s in tiered
                for tier, c in s["tiers"].items()
            ]
            say(
                table(
                    ("memory", "tier", *COUNTERS),
                    counter_rows,
                    right=set(range(2, 2 + len(COUNTERS))),
                    flex=0,
                )
            )

    run(body)


def _offset(advance: Callable[[int], None], base: int) -> Callable[[int], None]:
    return lambda done: advance(base + done)


async def _memory_stats(
    backend: MemoryBackend, store: Store, name: str, advance: Callable[[int], None]
) -> dict[str, Any]:
    """One pass over a memory of the store's namespace, a page at a time: counts, time
    range, expiring, value bytes."""
    oldest: float | None = None
    newest: float | None = None
    count = expiring = size = 0
    cursor = None
    while True:
        page = await backend.list_page(store.scope(name), limit=PAGE, after=cursor)
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
    if await backend.get(STATS_KEY, scope=stats_scope(name, store.namespace)) is not None:
        item["tiers"] = {
            "persistent": await read_persisted_stats(backend, name, store.namespace)
        }
    return item
