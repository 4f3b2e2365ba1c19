"""Where a `backend: chroma` memory lives, and a connection to it that survives restarts.

`location:` is either a Chroma server URL whose path names the collection
(`http://127.0.0.1:8000/axon`; https too; no path: collection `axon`), or a
directory for Chroma's embedded `PersistentClient` (relative paths are resolved
against the memory directory; `dir#name` picks the collection). `env:VAR` reads
either from an environment variable. Without a location, `$AXON_CHROMA_URL` is
used when set, else `<memory dir>/chroma`.

`chromadb` is imported here only, on first use (it takes about two seconds), and
never with an embedding function: every collection is opened with
`embedding_function=None` and every write passes its vectors, so Chroma's default
model (which it would download) is never built.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import attrs

from axon.errors import AxonMemoryError, extra_hint
from axon.files import create_private, private_directory
from axon.memory.backend import expand_location, resolve_memory_dir

URL_ENV = "AXON_CHROMA_URL"
"""The server (and collection) a chroma memory without `location:` uses, when set."""

DEFAULT_COLLECTION = "axon"
EXTRA_HINT = extra_hint("chroma")

_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,40}[a-zA-Z0-9]$")
_T = TypeVar("_T")

HNSW_EF_SEARCH = 200
"""Candidates HNSW keeps while searching (Chroma's default is 100): near-exact results."""


def import_chromadb() -> Any:
    """The `chromadb` module, or a clear error naming the extra that installs it."""
    try:
        import chromadb
    except ImportError:
        raise AxonMemoryError(
            f"backend 'chroma' needs the chromadb package: {EXTRA_HINT}"
        ) from None
    return chromadb


@attrs.frozen
class ChromaTarget:
    """A parsed location: a server (`host`, `port`, `ssl`) or a `path`, and a collection."""

    location: str
    collection: str
    host: str | None = None
    port: int | None = None
    ssl: bool = False
    path: Path | None = None

    @property
    def shown(self) -> str:
        """The location as messages show it (a URL, or the directory and collection)."""
        if self.path is not None:
            return f"{self.path}#{self.collection}"
        scheme = "https" if self.ssl else "http"
        return f"{scheme}://{self.host}:{self.port}/{self.collection}"


def _bad(location: str, why: str) -> AxonMemoryError:
    return AxonMemoryError(
        f"chroma location '{location}' is not usable: {why} (write a server URL with a "
        "collection, like 'http://127.0.0.1:8000/axon', or a directory)"
    )


def _collection_name(location: str, name: str) -> str:
    if not _NAME.match(name):
        raise _bad(
            location,
            f"collection name '{name}' must be 3 to 42 letters, digits, '.', '_' or '-', "
            "starting and ending with a letter or digit",
        )
    return name


def parse_location(location: str | None, memory_dir: str | Path | None) -> ChromaTarget:
    """The server or directory and the collection named by `location` (see the module)."""
    if location is None:
        location = os.environ.get(URL_ENV) or None
    if location is None:
        path = resolve_memory_dir(memory_dir) / "chroma"
        return ChromaTarget(str(path), DEFAULT_COLLECTION, path=path)
    written = location
    location = expand_location(location, "a Chroma server URL or a directory").strip()
    if not location:
        raise _bad(written, "it is empty")
    if "://" in location:
        parts = urlsplit(location)
        if parts.scheme not in ("http", "https"):
            raise _bad(written, f"scheme '{parts.scheme}' is not http or https")
        try:
            port = parts.port
        except ValueError:
            raise _bad(written, "its port is not a number from 0 to 65535") from None
        if not parts.hostname:
            raise _bad(written, "it names no host")
        if parts.query or parts.fragment:
            raise _bad(written, "it has a query or fragment; only the path names the collection")
        name = parts.path.strip("/") or DEFAULT_COLLECTION
        if "/" in name:
            raise _bad(written, "its path must be one collection name")
        return ChromaTarget(
            written,
            _collection_name(written, name),
            host=parts.hostname,
            port=port or (443 if parts.scheme == "https" else 8000),
            ssl=parts.scheme == "https",
        )
    directory, _, name = location.partition("#")
    path = Path(directory).expanduser()
    if not path.is_absolute() and memory_dir is not None:
        path = Path(memory_dir).expanduser() / path
    if path.exists() and not path.is_dir():
        raise _bad(written, f"{path} exists and is not a directory")
    return ChromaTarget(written, _collection_name(written, name or DEFAULT_COLLECTION), path=path)


_UNREACHABLE = (
    "could not connect",  # chromadb's client, when its first request fails
    "connection refused",
    "bad gateway",  # a proxy in front of a restarting server (chromadb raises its body)
    "service unavailable",
    "gateway timeout",
    "gateway time-out",
)
"""What the text of an error that is not Chroma's own says when the server is not
there. Each has a space, so no collection name or record id (which never hold one)
can match: a bare "503" matched `notes-2503` and every test collection whose random
name held those digits, so looking up a missing collection (a first semantic recall)
waited 15 s and then reported the server as unreachable."""


def _retryable(exc: BaseException) -> bool:
    """Whether `exc` says the server could not be reached (restarting, gone, overloaded).

    An error of Chroma's own type (`ChromaError`: not found, bad argument, ...) is an
    answer from a running server and never retried, whatever its message names.
    """
    import httpx

    if isinstance(exc, httpx.TransportError):
        return True
    from chromadb.errors import ChromaError

    if isinstance(exc, ChromaError):
        return False
    text = str(exc).lower()
    return any(marker in text for marker in _UNREACHABLE)


def _gone(exc: BaseException) -> bool:
    """Whether `exc` says a collection no longer exists (deleted by another client)."""
    return type(exc).__name__ == "NotFoundError" or "does not exist" in str(exc)


LOCK_FILE = "axon.lock"
"""The file in an embedded Chroma directory that the process using it holds locked."""

_held: dict[Path, tuple[int, int]] = {}
"""Directories this process holds: resolved path -> (lock file descriptor, users)."""
_held_guard = threading.Lock()


def lock_directory(path: Path, shown: str) -> None:
    """Hold `path` (an embedded Chroma directory) for this process, or refuse clearly.

    Chroma's `PersistentClient` serves one process at a time: a second process on the
    same directory failed mid-run ("Internal error: Error finding id") or read stale
    data. So the first opener takes an exclusive `fcntl.flock` on `LOCK_FILE` (its
    pid written inside), which the system releases when the process ends however it
    ends, and `unlock_directory` when the last connection of this process closes
    (several memories of one process may share a directory). A second process gets
    an error naming the directory and the holder's pid at open, before any work.
    """
    import fcntl

    key = path.resolve()
    with _held_guard:
        held = _held.get(key)
        if held is not None:
            _held[key] = (held[0], held[1] + 1)
            return
        try:
            create_private(key / LOCK_FILE)
            fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise _bad(shown, f"cannot create its lock file {key / LOCK_FILE}: {exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise AxonMemoryError(
                f"the Chroma directory {shown} is in use by another process (pid {holder}): "
                "embedded Chroma serves one process at a time; share it through a Chroma "
                "server (location: 'http://host:port/collection') instead"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        _held[key] = (fd, 1)


def unlock_directory(path: Path) -> None:
    """Release one hold of `lock_directory` on `path`; the last one unlocks the file."""
    key = path.resolve()
    with _held_guard:
        held = _held.get(key)
        if held is None:
            return
        fd, users = held
        if users > 1:
            _held[key] = (fd, users - 1)
            return
        del _held[key]
        os.close(fd)  # closing the only descriptor releases the flock


class ChromaConnection:
    """A Chroma client for one target, opened on first use and reopened after failures.

    `run(fn)` calls `fn(client)`; when the server cannot be reached (a restart) it
    waits and tries again, for up to `timeout` seconds, then raises an
    `AxonMemoryError` naming the location. Every operation of the backend is
    idempotent (upserts by id, deletes, reads), so running one again is safe.
    """

    def __init__(self, target: ChromaTarget, *, timeout: float) -> None:
        self.target = target
        self.timeout = timeout
        # chromadb's client and collections (typed `Any`: chromadb's own annotations
        # are narrower than what it accepts, and it is imported lazily).
        self._client: Any = None
        self._collections: dict[str, Any] = {}
        self._batch_limit: int | None = None
        self._locked = False  # holds `lock_directory` on an embedded directory

    def batch_limit(self) -> int:
        """The most records the server takes in one write (asked once)."""
        if self._batch_limit is None:
            self._batch_limit = int(self._open().get_max_batch_size())
        return self._batch_limit

    def _open(self) -> Any:
        if self._client is None:
            chromadb = import_chromadb()
            from chromadb.config import Settings

            settings = Settings(anonymized_telemetry=False, allow_reset=False)
            target = self.target
            if target.path is not None:
                try:
                    private_directory(target.path)  # 0700 when created here
                except OSError as exc:
                    raise _bad(target.location, f"cannot create {target.path}: {exc}") from None
                if not self._locked:
                    lock_directory(target.path, target.shown)
                    self._locked = True
                self._client = chromadb.PersistentClient(path=str(target.path), settings=settings)
            else:
                self._client = chromadb.HttpClient(
                    host=target.host, port=target.port, ssl=target.ssl, settings=settings
                )
        return self._client

    def collection(self, name: str, *, create: bool = True) -> Any:
        """The collection `name` (cosine space, no embedding function), made if `create`;
        else None when the server says it does not exist (any other error is raised)."""
        found = self._collections.get(name)
        if found is None:
            client = self._open()
            if create:
                found = client.get_or_create_collection(
                    name,
                    embedding_function=None,
                    configuration={"hnsw": {"space": "cosine", "ef_search": HNSW_EF_SEARCH}},
                )
            else:
                try:
                    found = client.get_collection(name, embedding_function=None)
                except Exception as exc:
                    if _gone(exc) and not _retryable(exc):
                        return None
                    raise  # unreachable (`run` retries) or failing: not "no collection"
            self._collections[name] = found
        return found

    def forget(self, name: str | None = None) -> None:
        """Drop cached collection handles (all when `name` is None), after a delete."""
        if name is None:
            self._collections.clear()
        else:
            self._collections.pop(name, None)

    def run(self, fn: Callable[[ChromaConnection], _T]) -> _T:
        deadline = time.monotonic() + self.timeout
        delay = 0.05
        reopened = False
        while True:
            try:
                return fn(self)
            except AxonMemoryError:
                raise
            except Exception as exc:
                if not reopened and _gone(exc):
                    # Another client deleted a collection this one had open: look again.
                    reopened = True
                    self._collections.clear()
                    continue
                if not _retryable(exc):
                    if type(exc).__module__.startswith("chromadb"):
                        raise AxonMemoryError(
                            f"Chroma at {self.target.shown} refused the operation: {exc}"
                        ) from None
                    raise
                if time.monotonic() + delay > deadline:
                    raise AxonMemoryError(
                        f"cannot reach the Chroma server at {self.target.shown} "
                        f"({type(exc).__name__}: {str(exc)[:200]}); is it running?"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                if self.target.path is None:
                    self._collections.clear()

    def close(self) -> None:
        self._collections.clear()
        self._client = None
        if self._locked and self.target.path is not None:
            self._locked = False
            unlock_directory(self.target.path)
