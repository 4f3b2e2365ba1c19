"""A REPL session's memory directory -> the memories its store holds, and the declaration of one.

A second `axon repl --memory-dir D` starts with nothing declared, although D's store
may hold memories a program wrote there. The store keeps entries under each memory's
name, not the declaration that wrote them, so what the REPL can offer is what the
store knows: the name, the entry count, and that it lives in D's SQLite file.
`.declare NAME` (`declaration`) declares such a memory as `memory NAME { store:
persistent backend: sqlite }`, the store's settings, with the rest defaulted as in
any declaration that does not say (retrieval: the backend's best).
"""

from __future__ import annotations

from pathlib import Path

from axon.compiler.parser import is_name


async def stored_memories(memory_dir: Path) -> dict[str, int]:
    """The memories the store of `memory_dir` holds and their entry counts ({} when there
    is no store file there: nothing is created to find out)."""
    from axon.memory.backends.sqlite import DB_FILENAME
    from axon.memory.registry import registry
    from axon.memory.transfer import memory_names

    if not (memory_dir / DB_FILENAME).is_file():
        return {}
    backend = registry.create("sqlite", memory_dir=memory_dir)
    try:
        return {name: await backend.count(name) for name in await memory_names(backend)}
    finally:
        await backend.close()


def declaration(name: str) -> str | None:
    """The declaration `.declare NAME` runs, or None when `name` is not a name a program
    could declare (the store holds it under a name the grammar does not take)."""
    if not is_name(name):
        return None
    return f"memory {name} {{ store: persistent backend: sqlite }}"
