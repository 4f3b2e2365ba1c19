"""Backend names -> backend classes, loaded lazily; the checker and executor both ask here.

Built-in backends are registered exactly as third-party ones are: a name, its
aliases, an import string and the capabilities (so the checker can answer
"can 'x' persist?" without importing a database driver). Third-party backends
come from the `axon.backends` entry-point group; their capabilities are read
from the class when first needed.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from axon.memory.backend import RETRIEVAL_MODES, Capabilities

if TYPE_CHECKING:
    from axon.memory.backend import MemoryBackend

_ALL = frozenset(RETRIEVAL_MODES)


@attrs.frozen
class BackendInfo:
    """One registered backend: canonical `name`, `aliases`, `target` ("module:Class")."""

    name: str
    target: str
    capabilities: Capabilities | None = None
    aliases: tuple[str, ...] = ()
    description: str = ""

    def load(self) -> type[MemoryBackend]:
        module_name, _, attr = self.target.partition(":")
        module = importlib.import_module(module_name)
        cls: type[MemoryBackend] = getattr(module, attr)
        return cls

    def resolved_capabilities(self) -> Capabilities:
        return self.capabilities if self.capabilities is not None else self.load().capabilities


BUILTIN_BACKENDS: tuple[BackendInfo, ...] = (
    BackendInfo(
        "in_memory",
        "axon.memory.backends.in_memory:InMemoryBackend",
        Capabilities(persistent=False, retrieval=_ALL),
        aliases=("memory", "inmemory"),
        description="in-process dictionary with indexes; lives as long as the process",
    ),
    BackendInfo(
        "sqlite",
        "axon.memory.backends.sqlite:SQLiteBackend",
        Capabilities(persistent=True, retrieval=_ALL),
        description="one SQLite file per memory directory (WAL, FTS5, vectors beside rows)",
    ),
    BackendInfo(
        "vector_db",
        "axon.memory.backends.sqlite:VectorDBBackend",
        Capabilities(persistent=True, retrieval=_ALL),
        aliases=("vectordb",),
        description="the embedded persistent semantic store (SQLite file, semantic by default)",
    ),
    BackendInfo(
        "pgvector",
        "axon.memory.backends.postgres:PostgresBackend",
        Capabilities(persistent=True, retrieval=_ALL, shared=True),
        aliases=("postgres", "postgresql"),
        description="PostgreSQL with pgvector (HNSW) and full-text search",
    ),
    BackendInfo(
        "chroma",
        "axon.memory.backends.chroma:ChromaBackend",
        Capabilities(persistent=True, retrieval=_ALL, shared=True),
        description="a Chroma collection, on a Chroma server (URL) or in a directory",
    ),
)

ENTRY_POINT_GROUP = "axon.backends"


class BackendRegistry:
    """Looks up backends by name or alias (case-insensitive)."""

    def __init__(self, infos: Iterable[BackendInfo] = BUILTIN_BACKENDS) -> None:
        self._by_name: dict[str, BackendInfo] = {}
        self._aliases: dict[str, str] = {}
        for info in infos:
            self.register(info)
        self._entry_points_loaded = False

    def register(self, info: BackendInfo) -> None:
        self._by_name[info.name] = info
        self._aliases[info.name.lower()] = info.name
        for alias in info.aliases:
            self._aliases[alias.lower()] = info.name

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        from importlib import metadata  # costs ~10 ms: only when a name is not built in

        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name.lower() not in self._aliases:
                self.register(BackendInfo(ep.name, ep.value))

    def lookup(self, name: str) -> BackendInfo | None:
        """The backend registered under `name` or one of its aliases, or None."""
        canonical = self._aliases.get(name.lower())
        if canonical is None:
            self._load_entry_points()
            canonical = self._aliases.get(name.lower())
        return self._by_name[canonical] if canonical else None

    def names(self) -> list[str]:
        """Canonical names, sorted."""
        self._load_entry_points()
        return sorted(self._by_name)

    def all_names(self) -> list[str]:
        """Canonical names and aliases, sorted (for suggestions)."""
        self._load_entry_points()
        return sorted(set(self._aliases))

    def create(self, name: str, **kwargs: Any) -> MemoryBackend:
        """Build an instance of the backend registered as `name`."""
        info = self.lookup(name)
        if info is None:
            raise KeyError(name)
        return info.load()(**kwargs)


registry = BackendRegistry()
"""The process-wide registry."""
