"""A toy persistent backend (entries in, a JSON Lines log in a directory out): everything a
new backend needs to be first-class, in this one file plus its registry entry (`TOY`).

`ToyBackend` is the in-memory backend whose writes (stores, deletes, clears) are also
appended to `<location>/toy.jsonl` and replayed when a backend opens the directory
again, so a second process sees what the first wrote. `TOY` is its `BackendInfo`:
capabilities (persistent, every retrieval), its CLI option `--toy DIR` and its store
function `store_place` (how `axon memory` names the directory and whether it exists).
Register it with `registry.register(TOY)` (`tests/memory/test_toy_backend.py`).
"""

from __future__ import annotations

import json
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

from axon.memory.backend import RETRIEVAL_MODES, Capabilities, resolve_memory_dir
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.entry import MemoryEntry
from axon.memory.registry import BackendInfo, StoreOption, StorePlace

LOG = "toy.jsonl"


def toy_directory(location: str | None, memory_dir: str | Path | None) -> Path:
    """`location` (relative to the memory directory), else `<memory_dir>/toy`."""
    base = resolve_memory_dir(memory_dir)
    return base / (location or "toy")


def _now(step: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine of the in-memory backend that never waits (its writes)."""
    try:
        step.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the in-memory backend waited")


class ToyBackend(InMemoryBackend):
    """The in-memory backend, with its writes kept in a JSON Lines log."""

    capabilities = Capabilities(persistent=True, retrieval=frozenset(RETRIEVAL_MODES))

    def __init__(self, tracer: Any = None, **options: Any) -> None:
        super().__init__(tracer, **options)
        self.directory = toy_directory(options.get("location"), options.get("memory_dir"))
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log = self.directory / LOG
        if self.log.is_file():
            for line in self.log.read_text(encoding="utf-8").splitlines():
                self._replay(json.loads(line))

    def _replay(self, record: dict[str, Any]) -> None:
        if record["op"] == "put":
            entry = MemoryEntry(
                record["key"], record["value"], record["metadata"],
                timestamp=record["timestamp"], expires_at=record["expires_at"],
            )
            _now(super()._put([entry]))
        elif record["op"] == "delete":
            _now(super()._delete(record["key"], record["scope"]))
        else:
            _now(super()._clear(record["scope"]))

    def _append(self, records: Sequence[dict[str, Any]]) -> None:
        with self.log.open("a", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record) + "\n")

    async def _put(self, entries: Sequence[MemoryEntry]) -> None:
        await super()._put(entries)
        self._append([
            {"op": "put", "key": e.key, "value": e.value, "metadata": e.metadata,
             "timestamp": e.timestamp, "expires_at": e.expires_at}
            for e in entries
        ])

    async def _delete(self, key: str, scope: str | None) -> bool:
        found = await super()._delete(key, scope)
        self._append([{"op": "delete", "key": key, "scope": scope}])
        return found

    async def _clear(self, scope: str | None) -> int:
        removed = await super()._clear(scope)
        self._append([{"op": "clear", "scope": scope}])
        return removed


def store_place(location: str | None, settings: Mapping[str, str], memory_dir: Path) -> StorePlace:
    """The toy directory a command opens, there when its log is."""
    directory = toy_directory(location, memory_dir)
    return StorePlace(f"toy {directory}", "no toy log there", (directory / LOG).is_file)


TOY = BackendInfo(
    "toy",
    "tests.helpers.toy_backend:ToyBackend",
    Capabilities(persistent=True, retrieval=frozenset(RETRIEVAL_MODES)),
    description="a toy: the in-memory backend with a JSON Lines log in a directory",
    options=(StoreOption("--toy", "Use this toy store directory instead."),),
    store="tests.helpers.toy_backend:store_place",
)
"""The toy's registry entry: all the registry needs to know of it."""
