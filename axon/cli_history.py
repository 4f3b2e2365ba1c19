"""`axon memory history MEMORY KEY`: the versions a `history:` memory keeps of one entry.

Newest first, as `MemoryHandle.history` returns them (docs/language.md §5.3): the
operation (`remember`, `update`, `forget`), when, the value, type, importance, tags
and expiry of each. A key with no recorded version is exit 1 with a word on why (a
memory keeps history only when declared with `history:`). Registered on the `axon
memory` group by `axon.cli_memory`.
"""

from __future__ import annotations

from typing import Annotated, Any

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
    when,
)
from axon.memory.entry import encode_json
from axon.memory.versions import Version


def history_cmd(
    ctx: typer.Context,
    memory: Annotated[str, typer.Argument(help="The memory.")],
    key: Annotated[str, typer.Argument(help="The key of the entry.")],
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """The versions MEMORY keeps of KEY, newest first (a memory declared with
    history: N or history: all keeps them; exit 1 when there are none)."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        if not store.exists():
            raise missing_store(store, memory)
        async with opened(store) as backend:
            if not backend.capabilities.history:
                raise Failed(
                    f"error: the {backend.name} backend keeps no history", out.EXIT_CHECK
                )
            versions = await backend.history(key, store.scope(memory))
        if not versions:
            raise Failed(
                f"error: no history of key '{key}' in memory '{memory}' (a memory keeps "
                "versions when declared with history: N or history: all)",
                out.EXIT_CHECK,
            )
        if wants_json:
            say_json({"memory": memory, "key": key, "versions": [_data(v) for v in versions]})
            return
        say(table(("op", "updated", "value", "type", "importance", "tags", "expires"),
                  [_row(v) for v in versions], flex=2))

    run(body)


def _data(version: Version) -> dict[str, Any]:
    data = version.to_dict()
    data["metadata"] = {k: v for k, v in version.metadata.items() if k != "scope"}
    return data


def _row(version: Version) -> tuple[str, ...]:
    from axon.render import importance_text, record_type

    if version.op == "forget":
        return ("forget", when(version.updated_at), "(forgotten)", "", "", "", "")
    value = version.value if isinstance(version.value, str) else encode_json(version.value)
    meta = version.metadata
    tags = meta.get("tags")
    return (
        version.op,
        when(version.updated_at),
        value,
        record_type(meta) or "",
        importance_text(meta.get("importance")) or "",
        ", ".join(str(t) for t in tags) if isinstance(tags, list) else "",
        when(version.expires_at) or "never",
    )
