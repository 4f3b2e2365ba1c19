"""`axon memory namespaces` and `erase`: a store's namespaces in, a listing or an erasure out.

`namespaces` lists the namespaces under a prefix that hold entries of memories, with
how many memories and entries each holds; `erase --namespace P` deletes everything of
P and of every namespace below it through `MemoryBackend.erase` (which makes a SQLite
store forget the erased bytes), after asking, or lists what would go (`--dry-run`).
Registered on the `axon memory` group by `axon.cli_memory`.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from axon import cli_output as out
from axon.cli_store import (
    AsJson,
    Failed,
    Store,
    json_flag,
    missing_store,
    opened,
    run,
    say,
    say_json,
    table,
)
from axon.errors import AxonError
from axon.memory.backend import MemoryBackend
from axon.memory.lifetimes import is_reserved
from axon.memory.namespaces import Namespace, split_scope
from axon.render import counted

ROOT_SHOWN = "(root)"
"""How a table shows the root namespace (`--json` writes "")."""


async def held(backend: MemoryBackend, prefix: Namespace) -> dict[Namespace, dict[str, int]]:
    """The memories with entries in `prefix` and every namespace below it: namespace ->
    memory -> entries, sorted. Session data and a tiered memory's counters are not
    memories (`lifetimes.is_reserved`), so a namespace holding only those is left out."""
    found: dict[Namespace, dict[str, int]] = {}
    for scope in await backend.scopes(prefix.scope_prefix):
        space, name = split_scope(scope)
        if is_reserved(name):
            continue
        count = await backend.count(scope)
        if count:
            found.setdefault(space, {})[name] = count
    return dict(sorted(found.items()))


def namespaces_cmd(
    ctx: typer.Context,
    prefix: Annotated[
        str | None,
        typer.Option(
            "--prefix",
            metavar="P",
            help="Only P and the namespaces below it (default: the --namespace, else all).",
        ),
    ] = None,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """The namespaces that hold entries, at any depth under --prefix, with how many
    memories and entries each holds."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        try:
            under = store.namespace if prefix is None else Namespace.of(prefix, what="--prefix")
        except AxonError as exc:
            raise Failed(f"error: {exc}", out.EXIT_USAGE) from None
        rows: dict[Namespace, dict[str, int]] = {}
        if store.exists():
            async with opened(store) as backend:
                rows = await held(backend, under)
        if wants_json:
            say_json(
                {
                    "store": store.label,
                    "prefix": under.text,
                    "namespaces": [
                        {
                            "namespace": space.text,
                            "memories": len(memories),
                            "entries": sum(memories.values()),
                        }
                        for space, memories in rows.items()
                    ],
                }
            )
            return
        if not rows:
            below = "" if under.is_root else f" under {under.text}"
            missing = "" if store.exists() else f" ({store.missing})"
            say(f"no namespaces{below} in {store.label}{missing}")
            return
        say(
            table(
                ("namespace", "memories", "entries"),
                [
                    (space.text or ROOT_SHOWN, f"{len(m):,}", f"{sum(m.values()):,}")
                    for space, m in rows.items()
                ],
                right={1, 2},
                flex=0,
            )
        )

    run(body)


def erase_cmd(
    ctx: typer.Context,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Erase without asking.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be erased; erase nothing.")
    ] = False,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """Delete every entry of every memory in --namespace P and every namespace below it
    (all tiers, vectors, text indexes, associations, counters), asked first on a
    terminal; on SQLite none of the erased text is left in the store's files."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        space = store.namespace
        if not store.given.get("namespace") or space.is_root:
            raise Failed(
                "error: erase needs --namespace P, a namespace of at least one label "
                "(AXON_NAMESPACE is not enough: an erasure names what it erases)",
                out.EXIT_USAGE,
            )
        asking = not yes and not dry_run
        if asking and not sys.stdin.isatty():
            raise Failed(
                "error: erase asks before deleting, and stdin is not a terminal: pass "
                "--yes to erase without asking (--dry-run says what would go)",
                out.EXIT_USAGE,
            )
        if not store.exists():
            raise missing_store(store)
        async with opened(store) as backend:
            doomed = await held(backend, space)
            total = sum(sum(memories.values()) for memories in doomed.values())
            if dry_run:
                _would_erase(space, doomed, total, wants_json)
                return
            if asking and not _confirm(space, doomed, total):
                say("nothing erased")
                return
            erased = await backend.erase(space.scope_prefix)
        from axon.runtime.tiers import STATS_SCOPE_PREFIX

        deleted = sum(
            count for scope, count in erased.items()
            if not split_scope(scope)[1].startswith(STATS_SCOPE_PREFIX)
        )
        if wants_json:
            say_json(
                {"op": "erase", "namespace": space.text, "erased": deleted,
                 "namespaces": [s.text for s in doomed]}
            )
            return
        say(
            f"erased {counted(deleted, 'entry', 'entries')} of namespace {space.text} and "
            f"below ({counted(len(doomed), 'namespace', 'namespaces')} held memories)"
        )

    run(body)


def _would_erase(
    space: Namespace, doomed: dict[Namespace, dict[str, int]], total: int, as_json: bool
) -> None:
    """`erase --dry-run`: the namespaces, memories and entry counts that would go."""
    if as_json:
        say_json(
            {
                "op": "erase",
                "namespace": space.text,
                "dry_run": True,
                "erased": 0,
                "would_erase": total,
                "namespaces": [
                    {"namespace": s.text, "memories": dict(m)} for s, m in doomed.items()
                ],
            }
        )
        return
    say(
        f"would erase {counted(total, 'entry', 'entries')} of namespace {space.text} and "
        "below (--dry-run: nothing erased)"
    )
    rows = [(s.text, name, f"{count:,}") for s, m in doomed.items() for name, count in m.items()]
    if rows:
        say(table(("namespace", "memory", "entries"), rows, right={2}, flex=0))


def _confirm(space: Namespace, doomed: dict[Namespace, dict[str, int]], total: int) -> bool:
    """Ask on the terminal (prompt on stderr) whether to erase."""
    from axon.render import visible

    spaces = counted(len(doomed), "namespace", "namespaces")
    question = (
        f"erase {counted(total, 'entry', 'entries')} in {spaces} under {space.text} "
        "(this cannot be undone)?"
    )
    try:
        return typer.confirm(visible(question), err=True)
    except typer.Abort:  # Ctrl-D or Ctrl-C at the question: nothing erased
        return False
