"""Backend names -> what each backend is (class, capabilities, settings, CLI options, store
check), loaded lazily; the checker, the runtime, the CLI and `axon mcp` all ask here.

Built-in backends are registered exactly as third-party ones are: a `BackendInfo`
with a name, its aliases, an import string and the capabilities (so the checker can
answer "can 'x' persist?" without importing a database driver), plus what a backend
knows about its own store: its server `settings` (name, environment variable,
default: what `Session(pg_dsn=, pg_schema=)` give), its CLI `options` (`--pg-dsn`,
`--chroma`, ...: `axon memory` builds its store options from them) and a `store`
function that names a store to a person and says whether it exists without creating
it. Third-party backends come from the `axon.backends` entry-point group (an entry
naming a class, or a `BackendInfo`), or from `registry.register(BackendInfo(...))`.

`backend_settings(...)` turns a settings mapping plus the shortcut keywords into
per-backend settings; `BackendInfo.open(location, settings, ...)` builds a backend
from them without the caller knowing its name.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from axon.errors import AxonMemoryError
from axon.memory.backend import RETRIEVAL_MODES, Capabilities

if TYPE_CHECKING:
    from axon.memory.backend import MemoryBackend

_ALL = frozenset(RETRIEVAL_MODES)

Settings = Mapping[str, str]
"""One backend's settings by name (`{"dsn": ..., "schema": ...}`)."""


def _load(target: str) -> Any:
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


@attrs.frozen
class Setting:
    """One server setting of a backend: `name`, the environment variable read when it is
    not given (`env`), its `default`, and what it becomes: the constructor keyword
    `keyword`, or (no keyword) the location of every memory that names none (pgvector's
    `dsn`). `check` ("module:function") validates a given value (raising an AxonError)."""

    name: str
    env: str | None = None
    default: str | None = None
    keyword: str | None = None
    check: str | None = None
    help: str = ""

    def value(self, settings: Settings) -> str | None:
        """The value in effect: given, else the environment variable, else the default."""
        given = settings.get(self.name)
        if given is not None:
            return given
        return (os.environ.get(self.env) if self.env else None) or self.default


@attrs.frozen
class StoreOption:
    """A CLI option that names a backend's store (`axon memory`, export, import).

    `flag` sets the setting `setting` ("location": the store's location); with `env`, a
    flag without a value that takes it from that environment variable (`--pg`);
    `selects`: giving it chooses this backend (`--pg-schema` alone does not)."""

    flag: str
    help: str
    setting: str = "location"
    env: str | None = None
    selects: bool = True

    @property
    def param(self) -> str:
        """The Python name of the option (`--pg-dsn` -> `pg_dsn`)."""
        return self.flag.lstrip("-").replace("-", "_")


@attrs.frozen
class StorePlace:
    """A backend's store as a command finds it: `label` names it to a person (no
    password), `missing` says what "not there" means, `exists()` asks without creating
    anything (False: a read prints `missing`)."""

    label: str
    missing: str
    exists: Callable[[], bool]


@attrs.frozen
class BackendInfo:
    """One registered backend: canonical `name`, `aliases`, `target` ("module:Class").

    What the backend knows about its store: `settings` (server settings, see
    `Setting`), `options` (its CLI options, `StoreOption`), `store` ("module:function":
    `place(location, settings, memory_dir) -> StorePlace`, how a command names the
    store and checks that it exists) and `uses_memory_dir` (its default store is in
    the memory directory, so `--memory-dir` goes with its options).
    """

    name: str
    target: str
    capabilities: Capabilities | None = None
    aliases: tuple[str, ...] = ()
    description: str = ""
    settings: tuple[Setting, ...] = ()
    options: tuple[StoreOption, ...] = ()
    store: str | None = None
    uses_memory_dir: bool = True

    def load(self) -> type[MemoryBackend]:
        cls: type[MemoryBackend] = _load(self.target)
        return cls

    def resolved_capabilities(self) -> Capabilities:
        return self.capabilities if self.capabilities is not None else self.load().capabilities

    def setting(self, name: str) -> Setting | None:
        return next((s for s in self.settings if s.name == name), None)

    def default_location(self, settings: Settings) -> str | None:
        """The location of a memory that names none, when a setting gives it (pgvector's
        `dsn`, given here; its environment variable is read by the backend itself);
        None: the backend's own default, in the memory directory it is given (sqlite:
        `<memory_dir>/memory.db`, chroma: `<memory_dir>/chroma`; `place` names it)."""
        for setting in self.settings:
            if setting.keyword is None and settings.get(setting.name) is not None:
                return settings[setting.name]
        return None

    def keywords(self, settings: Settings) -> dict[str, str]:
        """The constructor keywords the given settings become (only those given)."""
        return {
            s.keyword: settings[s.name]
            for s in self.settings
            if s.keyword is not None and settings.get(s.name) is not None
        }

    def open(
        self, location: str | None, settings: Settings, **common: Any
    ) -> MemoryBackend:
        """A backend instance over `location` (else `default_location(settings)`), its
        settings as keywords; `common` are the keywords every backend takes
        (`memory_dir`, `clock`, `embedder`, `tracer`)."""
        where = location if location is not None else self.default_location(settings)
        keywords: dict[str, Any] = {**common, **self.keywords(settings)}
        return self.load()(location=where, **keywords)

    def place(
        self, location: str | None, settings: Settings, memory_dir: Path
    ) -> StorePlace:
        """The store a command would open (`store`), or, for a backend without that
        function, one named by its location that is taken to exist."""
        if self.store is None:
            shown = location or str(memory_dir)
            return StorePlace(f"{self.name} {shown}", "no such store", lambda: True)
        place: StorePlace = _load(self.store)(location, settings, memory_dir)
        return place

    def exists(self, location: str | None, settings: Settings, memory_dir: Path) -> bool:
        """Whether the store is there, asked without creating it (`place(...).exists()`)."""
        return self.place(location, settings, memory_dir).exists()


_PG_SETTINGS = (
    Setting(
        "dsn",
        env="AXON_PG_DSN",
        help="the PostgreSQL server of pgvector memories that name no location:",
    ),
    Setting(
        "schema",
        env="AXON_PG_SCHEMA",
        default="axon",
        keyword="schema",
        check="axon.memory.backends.postgres_schema:check_schema_name",
        help="the schema of every pgvector memory",
    ),
)

BUILTIN_BACKENDS: tuple[BackendInfo, ...] = (
    BackendInfo(
        "in_memory",
        "axon.memory.backends.in_memory:InMemoryBackend",
        Capabilities(persistent=False, retrieval=_ALL, history=True),
        aliases=("memory", "inmemory"),
        description="in-process dictionary with indexes; lives as long as the process",
    ),
    BackendInfo(
        "sqlite",
        "axon.memory.backends.sqlite:SQLiteBackend",
        Capabilities(persistent=True, retrieval=_ALL, history=True),
        description="one SQLite file per memory directory (WAL, FTS5, vectors beside rows)",
        store="axon.memory.backends.sqlite:store_place",
    ),
    BackendInfo(
        "vector_db",
        "axon.memory.backends.sqlite:VectorDBBackend",
        Capabilities(persistent=True, retrieval=_ALL, history=True),
        aliases=("vectordb",),
        description="the embedded persistent semantic store (SQLite file, semantic by default)",
        store="axon.memory.backends.sqlite:store_place",
    ),
    BackendInfo(
        "pgvector",
        "axon.memory.backends.postgres:PostgresBackend",
        Capabilities(persistent=True, retrieval=_ALL, shared=True, history=True),
        aliases=("postgres", "postgresql"),
        description="PostgreSQL with pgvector (HNSW) and full-text search",
        settings=_PG_SETTINGS,
        options=(
            StoreOption("--pg-dsn", "Use this PostgreSQL database instead."),
            StoreOption("--pg", "Use the PostgreSQL database in $AXON_PG_DSN.", env="AXON_PG_DSN"),
            StoreOption(
                "--pg-schema",
                "PostgreSQL schema (default $AXON_PG_SCHEMA, else axon).",
                "schema",
                selects=False,
            ),
        ),
        store="axon.memory.backends.postgres_pool:store_place",
        uses_memory_dir=False,
    ),
    BackendInfo(
        "chroma",
        "axon.memory.backends.chroma:ChromaBackend",
        Capabilities(persistent=True, retrieval=_ALL, shared=True, history=True),
        description="a Chroma collection, on a Chroma server (URL) or in a directory",
        options=(
            StoreOption(
                "--chroma",
                "Use this Chroma collection instead: a server URL (http://host:port/collection) "
                "or a directory (dir#collection; relative to the memory directory).",
            ),
        ),
        store="axon.memory.backends.chroma:store_place",
    ),
)

DEFAULT_STORE_BACKEND = "sqlite"
"""The backend of a store no option names (`axon memory` without --pg-dsn, --chroma...)."""

ENTRY_POINT_GROUP = "axon.backends"


class BackendRegistry:
    """Looks up backends by name or alias (case-insensitive)."""

    def __init__(self, infos: Iterable[BackendInfo] = BUILTIN_BACKENDS) -> None:
        self._by_name: dict[str, BackendInfo] = {}
        self._aliases: dict[str, str] = {}
        for info in infos:
            self.register(info)
        self._entry_points_loaded = False
        self._unresolved: set[str] = set()

    def register(self, info: BackendInfo) -> None:
        self._by_name[info.name] = info
        self._aliases[info.name.lower()] = info.name
        for alias in info.aliases:
            self._aliases[alias.lower()] = info.name

    def unregister(self, name: str) -> None:
        """Forget the backend registered as `name` and its aliases (a test's toy backend)."""
        info = self._by_name.pop(name)
        self._unresolved.discard(name)
        for alias in (info.name, *info.aliases):
            if self._aliases.get(alias.lower()) == name:
                del self._aliases[alias.lower()]

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        self._entry_points_loaded = True
        from importlib import metadata  # costs ~10 ms: only when a name is not built in

        for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name.lower() not in self._aliases:
                self.register(BackendInfo(ep.name, ep.value))
                self._unresolved.add(ep.name)

    def lookup(self, name: str) -> BackendInfo | None:
        """The backend registered under `name` or one of its aliases, or None. An entry
        point's target is imported when its name is first looked up (not when the
        entry points are listed): a `BackendInfo` it names replaces the placeholder."""
        canonical = self._aliases.get(name.lower())
        if canonical is None:
            self._load_entry_points()
            canonical = self._aliases.get(name.lower())
        if canonical in self._unresolved:
            self._unresolved.discard(canonical)
            placeholder = self._by_name[canonical]
            found = _entry_point_info(placeholder.name, placeholder.target)
            if found is not placeholder:
                self._by_name.pop(canonical)
                self.register(found)
                self._aliases[canonical.lower()] = found.name  # the entry point's name too
                canonical = found.name
        return self._by_name[canonical] if canonical else None

    def names(self) -> list[str]:
        """Canonical names, sorted."""
        self._load_entry_points()
        return sorted(self._by_name)

    def infos(self) -> list[BackendInfo]:
        """Every registered backend, in registration order (entry points not loaded:
        those register when a name is looked up)."""
        return list(self._by_name.values())

    def persistent_names(self) -> list[str]:
        """Canonical names of the registered backends whose capabilities say they keep
        entries across processes (declared, so no driver is imported), in order."""
        return [
            info.name
            for info in self._by_name.values()
            if info.capabilities is not None and info.capabilities.persistent
        ]

    def store_backend(self, settings: Mapping[str, Settings]) -> BackendInfo:
        """The backend of the store per-backend `settings` (`backend_settings`) point at:
        the first registered whose settings give its default location (pgvector with a
        `dsn`), else `DEFAULT_STORE_BACKEND` (what `axon mcp` serves, without a program)."""
        for info in self._by_name.values():
            if info.default_location(settings.get(info.name, {})) is not None:
                return info
        default = self.lookup(DEFAULT_STORE_BACKEND)
        assert default is not None
        return default

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


def _entry_point_info(name: str, value: str) -> BackendInfo:
    """An entry point's backend: a `BackendInfo` object it names as is, else a class."""
    try:
        found = _load(value)
    except Exception:  # reported when the backend is used (`load`: the checker says so)
        return BackendInfo(name, value)
    return found if isinstance(found, BackendInfo) else BackendInfo(name, value)


registry = BackendRegistry()
"""The process-wide registry."""


def backend_settings(
    settings: Mapping[str, Mapping[str, str]] | None = None,
    *,
    pg_dsn: str | None = None,
    pg_schema: str | None = None,
    backends: BackendRegistry | None = None,
    who: str = "Session",
) -> dict[str, dict[str, str]]:
    """Per-backend settings by canonical backend name, from `settings`
    (`{"pgvector": {"dsn": ..., "schema": ...}}`, a backend named by any alias) and the
    shortcut keywords (`pg_dsn` is pgvector's `dsn`, `pg_schema` its `schema`; a
    shortcut given with the same setting in `settings` must agree with it).

    A backend or setting that is not registered, or a value that is not a string, is
    refused naming it (`who`: the caller, for the message); a setting with a `check`
    is checked here, before any store opens.
    """
    backends = backends if backends is not None else registry
    result: dict[str, dict[str, str]] = {}
    if settings is not None and not isinstance(settings, Mapping):
        raise TypeError(f"{who}: settings must be a mapping, not {type(settings).__name__}")
    given: list[tuple[str, str, Any, str]] = []
    for backend, values in (settings or {}).items():
        if not isinstance(values, Mapping):
            raise TypeError(
                f"{who}: settings[{backend!r}] must be a mapping of setting names to "
                f"strings, not {type(values).__name__}"
            )
        for name, value in values.items():
            given.append((str(backend), str(name), value, f"settings[{backend!r}][{name!r}]"))
    shortcuts: tuple[tuple[str, str, str | None], ...] = (
        ("pg_dsn", "dsn", pg_dsn),
        ("pg_schema", "schema", pg_schema),
    )
    for keyword, name, shortcut in shortcuts:
        if shortcut is not None:
            given.append(("pgvector", name, shortcut, keyword))
    for backend, name, value, what in given:
        info = backends.lookup(backend)
        if info is None:
            raise AxonMemoryError(
                f"{who}: unknown backend {backend!r} in settings "
                f"(registered: {', '.join(backends.names())})"
            )
        setting = info.setting(name)
        if setting is None:
            known = ", ".join(s.name for s in info.settings) or "none"
            raise AxonMemoryError(
                f"{who}: backend '{info.name}' has no setting {name!r} (its settings: {known})"
            )
        if not isinstance(value, str):
            raise TypeError(f"{who}: {what} must be a str, not {type(value).__name__}")
        if setting.check is not None:
            _load(setting.check)(value)
        own = result.setdefault(info.name, {})
        if own.get(name, value) != value:  # values unsaid: a DSN may hold a password
            raise AxonMemoryError(
                f"{who}: {what} disagrees with another setting {name!r} of '{info.name}'"
            )
        own[name] = value
    return result
