"""A store (memory directory, PostgreSQL schema or Chroma collection) in, the plain data of
every Studio page and API route out.

`StudioData` reads through the public Python API: one `axon.Session` over the store, each
memory the store holds declared in it (`memory NAME { store: persistent backend: ... }`,
the rest defaulted) and read through its `MemoryHandle` (`count`, `page`, `get`,
`recall`, `stats`, `remember`, `delete`). Every method returns JSON-ready dicts, so the
HTML pages and the `/api/` routes serve the same data. Changes go through the handles
too, so the session traces them like any program's (`session.events`).

Three things the public API does not offer yet are worked around here (each in one
function, named in its docstring): the names of the memories a store holds
(`_stored_names`), purging expired entries (`purge`), and a memory's size in bytes and
entries expiring soon (`Summaries`, a background walk of `handle.page`).
Namespaces and entry versions do not exist yet: `overview` groups memories under one
namespace (`None`) and `entry` returns `versions: []`, where they will go.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from axon.errors import AxonError, AxonMemoryError

EXPIRING_SOON = 24 * 3600.0
"""An entry expiring within this many seconds counts as expiring soon (overview)."""

NAMES_TTL = 2.0
"""Seconds the list of the store's memories is reused before it is read again."""

PAGE_SIZE = 50
"""Entries per memory page (`limit` may ask for 1 to `MAX_PAGE`)."""

MAX_PAGE = 500

SUMMARY_PAGE = 2000
"""Entries read per page by the background walk that sums bytes and expiring entries."""

HISTORY = 1000
"""Trace events of its own a Studio session keeps (its changes and recalls), newest."""

EXCERPT = 120
"""Characters of a value shown in a table cell."""


class StudioError(AxonMemoryError):
    """A request Studio refuses: a bad filter or option (400)."""


class NotFound(StudioError):
    """A memory, entry or trace that is not there (404)."""


def value_json(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


def excerpt(value: Any, length: int = EXCERPT) -> str:
    text = value if isinstance(value, str) else value_json(value)
    text = " ".join(text.split())
    return text if len(text) <= length else text[: length - 1] + "…"


def iso(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    try:
        moment = datetime.datetime.fromtimestamp(timestamp, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return "far future"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str, what: str) -> float | None:
    """A filter time: empty (none), Unix seconds, or an ISO 8601 date or time (UTC unless
    it says otherwise)."""
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise StudioError(
            f"{what}: '{text}' is not a time (2026-12-05, 2026-12-05T10:00 or Unix seconds)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _entry_row(entry: Any) -> dict[str, Any]:
    metadata = entry.metadata
    tags = metadata.get("tags")
    return {
        "key": entry.key,
        "excerpt": excerpt(entry.value),
        "type": entry.type,
        "importance": entry.importance,
        "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
        "tier": entry.tier,
        "created_at": entry.created_at,
        "expires_at": entry.expires_at,
    }


def _free_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """What `remember(metadata=...)` takes back: every field but the reserved ones."""
    reserved = {"scope", "source", "tags", "importance", "type", "related", "tier"}
    return {k: v for k, v in metadata.items() if k not in reserved}


class Summaries:
    """Per memory: bytes of its values' JSON and entries expiring soon, computed by a
    background walk of `handle.page` (the public API has no aggregate for them; a walk of
    100,000 entries takes longer than a page may), cached until the entry count changes
    or Studio changes the memory."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._lock = threading.Lock()
        self._done: dict[str, tuple[int, dict[str, int]]] = {}
        self._running: set[str] = set()
        self._clock = clock


    def get(self, name: str, count: int, handle: Any) -> dict[str, int] | None:
        with self._lock:
            known = self._done.get(name)
            if known is not None and known[0] == count:
                return known[1]
            if name not in self._running:
                self._running.add(name)
                threading.Thread(
                    target=self._walk, args=(name, count, handle), daemon=True,
                    name=f"axon-studio-summary-{name}",
                ).start()
            return None

    def forget(self, name: str) -> None:
        with self._lock:
            self._done.pop(name, None)

    def wait(self, timeout: float = 30.0) -> None:
        """Block until no walk runs (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._running:
                    return
            time.sleep(0.01)

    def _walk(self, name: str, count: int, handle: Any) -> None:
        total = soon = 0
        try:
            horizon = self._clock() + EXPIRING_SOON
            after = None
            while True:
                page = handle.page(limit=SUMMARY_PAGE, after=after)
                for entry in page.entries:
                    total += len(value_json(entry.value).encode())
                    if entry.expires_at is not None and entry.expires_at <= horizon:
                        soon += 1
                if page.next is None:
                    break
                after = page.next
            with self._lock:
                self._done[name] = (count, {"bytes": total, "expiring_soon": soon})
        except AxonError:
            pass  # the memory went away or the store closed: the overview says '…'
        finally:
            with self._lock:
                self._running.discard(name)


class StudioData:
    """The store Studio shows; see the module docstring."""

    def __init__(
        self,
        *,
        backend: str = "sqlite",
        location: str | None = None,
        settings: Mapping[str, str] | None = None,
        memory_dir: Path | None = None,
        label: str | None = None,
        open_backend: Callable[[], Any] | None = None,
        exists: Callable[[], bool] | None = None,
        embedder: Any = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """The store: `backend` (a registry name), its `location` and `settings` (as
        `axon memory` names them: `Store.location`, `Store.settings`), the memory
        directory; `open_backend` opens the store's backend and `exists` says whether it
        is there (else the registry's backend is created from the same arguments)."""
        from axon import Session
        from axon.memory.backend import resolve_memory_dir
        from axon.runtime.tracer import Tracer

        self.backend = backend
        self.location = location
        self.settings = dict(settings or {})
        self.memory_dir = resolve_memory_dir(memory_dir)
        self._label = label
        self._open_backend = open_backend
        self._exists = exists
        self.clock = clock or time.time
        self.session = Session(
            memory_dir=self.memory_dir,
            backend_settings={backend: self._session_settings(backend, location)},
            embedder=embedder,
            clock=clock,
            tracer=Tracer(clock=clock, keep=HISTORY),
        )
        self.summaries = Summaries(self.clock)
        self._names: list[str] = []
        self._names_at = -NAMES_TTL
        self._lock = threading.Lock()

    def _session_settings(self, backend: str, location: str | None) -> dict[str, str]:
        """The store's settings as the Session takes them: the chosen location is the
        backend's location setting (pgvector's `dsn`) when it has one."""
        from axon.memory.registry import registry

        settings = {name: value for name, value in self.settings.items() if value is not None}
        info = registry.lookup(backend)
        if info is not None and location is not None:
            for setting in info.settings:
                if setting.keyword is None:  # the setting that names the location
                    settings.setdefault(setting.name, location)
        return settings
    def close(self) -> None:
        self.session.close()

    # ------------------------------------------------------------ the store's memories
    def _stored_names(self) -> list[str]:
        """The memories the store holds. Workaround: no public call lists them, so the
        store's backend is opened and asked (`axon.memory.transfer.memory_names`, what
        `axon memory ls` reads); a store that is not there holds none (nothing is created
        to find out)."""
        from axon.memory.transfer import memory_names

        if self._exists is not None:
            if not self._exists():
                return []
        elif self.backend == "sqlite":
            from axon.memory.backends.sqlite import DB_FILENAME

            if not (self.memory_dir / DB_FILENAME).is_file():
                return []

        async def read() -> list[str]:
            backend = self._open()
            try:
                return list(await memory_names(backend))
            finally:
                await backend.close()

        return asyncio.run(read())

    def _open(self) -> Any:
        if self._open_backend is not None:
            return self._open_backend()
        from axon.memory.registry import registry

        args: dict[str, Any] = {"memory_dir": self.memory_dir}
        if self.location is not None:
            args["location"] = self.location
        if self.backend == "pgvector":
            args = {"location": self.location, "schema": self.settings.get("schema")}
        return registry.create(self.backend, **args)

    def names(self) -> list[str]:
        """The memories of the store that a program can name, declared in the session."""
        from axon.compiler.parser import is_name

        with self._lock:
            now = time.monotonic()
            if now - self._names_at < NAMES_TTL:
                return list(self._names)
            names = [n for n in self._stored_names() if is_name(n)]
            for name in names:
                if name not in self.session.memory_names():
                    self.session.execute(self._declaration(name))
            self._names, self._names_at = sorted(names), now
            return list(self._names)

    def _declaration(self, name: str) -> str:
        """`memory NAME { ... }` on the store: its backend, and its location unless the
        session gives it (a memory directory's SQLite file, the session's PostgreSQL)."""
        where = ""
        if self.location is not None and self.backend not in ("sqlite", "pgvector"):
            where = f" location: {json.dumps(self.location)}"
        return f"memory {name} {{ store: persistent backend: {self.backend}{where} }}"

    def handle(self, name: str) -> Any:
        if name not in self.names():
            from axon.compiler.names import did_you_mean

            raise NotFound(
                f"no such memory in this store{did_you_mean(name, self._names)}",
                memory=name,
            )
        return self.session.memory(name)

    def refreshed(self) -> None:
        with self._lock:
            self._names_at = -NAMES_TTL

    # ------------------------------------------------------------ pages
    def overview(self) -> dict[str, Any]:
        """Every memory with its entry count, tiers, bytes and expiring entries (None
        while the background walk runs). Namespaces do not exist yet: one group, `None`;
        a store with namespaces will give one group each."""
        memories = []
        for name in self.names():
            handle = self.session.memory(name)
            count = handle.count()
            summary = self.summaries.get(name, count, handle)
            memories.append({
                "name": name,
                "entries": count,
                "tiers": sorted(handle.stats()),
                "bytes": None if summary is None else summary["bytes"],
                "expiring_soon": None if summary is None else summary["expiring_soon"],
            })
        return {
            "store": self.label(),
            "namespaces": [{"name": None, "memories": memories}],
            "expiring_within_seconds": EXPIRING_SOON,
        }

    def label(self) -> str:
        from axon.redaction import redact_secrets

        if self._label is not None:
            return self._label
        if self.location is not None:
            return f"{self.backend} {redact_secrets(self.location)}"
        return str(self.memory_dir)

    def entries(self, name: str, query: Mapping[str, str]) -> dict[str, Any]:
        """One keyset page of a memory's entries, newest first (`handle.page`), with the
        filters of `query`: `tag` (repeatable as `tag=a,b`), `type`, `min_importance`,
        `where` (`FIELD=VALUE`, VALUE JSON when it parses), `since`/`until` (times; applied
        to the page read: `handle.page` has no time filter), `after` (the cursor), `limit`."""
        handle = self.handle(name)
        tags = [t.strip() for t in query.get("tag", "").split(",") if t.strip()] or None
        where = _where(query.get("where", ""))
        kind = query.get("type", "").strip() or None
        importance = _number(query.get("min_importance", ""), "min_importance")
        since = parse_time(query.get("since", ""), "since")
        until = parse_time(query.get("until", ""), "until")
        limit = int(_number(query.get("limit", ""), "limit") or PAGE_SIZE)
        if not 1 <= limit <= MAX_PAGE:
            raise StudioError(f"limit must be from 1 to {MAX_PAGE}, not {limit}", memory=name)
        after = query.get("after", "").strip() or None
        page = handle.page(
            limit=limit, after=after, tags=tags, where=where, type=kind, min_importance=importance
        )
        rows = [
            _entry_row(e) for e in page.entries
            if (since is None or e.created_at >= since) and (until is None or e.created_at <= until)
        ]
        return {"memory": name, "entries": rows, "next": page.next, "now": self.clock()}

    def entry(self, name: str, key: str) -> dict[str, Any]:
        """One entry (`handle.get`): value, metadata, tier, times, associated entries.
        `versions` is empty until entries keep their history."""
        found = self.handle(name).get(key)
        if found is None:
            raise NotFound("no such entry", memory=name, key=key)
        row = _entry_row(found)
        row.update({
            "memory": name,
            "value": found.value,
            "metadata": {k: v for k, v in found.metadata.items() if k != "scope"},
            "associated": [
                {"key": a.key, "excerpt": excerpt(a.value)} for a in found.associated
            ],
            "versions": [],
            "now": self.clock(),
        })
        return row

    def search(self, name: str, query: Mapping[str, str]) -> dict[str, Any]:
        """A recall (`handle.recall`, no record kept): each result's score and the share
        of each signal (`Result.signals`, for fused modes) of its score."""
        from axon.memory.backend import RETRIEVAL_MODES

        handle = self.handle(name)
        text = query.get("q", "")
        mode = query.get("mode", "").strip() or None
        if mode is not None and mode not in RETRIEVAL_MODES:
            raise StudioError(
                f"mode must be one of {', '.join(RETRIEVAL_MODES)}, not '{mode}'", memory=name
            )
        top_k = _number(query.get("top_k", ""), "top_k")
        min_score = _number(query.get("min_score", ""), "min_score")
        data: dict[str, Any] = {"memory": name, "query": text, "mode": mode, "results": [],
                                "below_floor": 0}
        if not text.strip():
            return data
        results = handle.recall(
            text, top_k=None if top_k is None else int(top_k), retrieval=mode,
            min_score=min_score, keep_record=False,
        )
        data["below_floor"] = results.below_floor
        for result in results:
            data["results"].append({
                "key": result.key,
                "excerpt": excerpt(result.value),
                "score": result.score,
                "signals": signal_shares(result.signals),
                "factors": signal_factors(result.signals),
                "tier": result.tier,
            })
        return data

    def stats(self) -> dict[str, Any]:
        """Per memory and tier: stores, recalls, forgets, promotions, demotions."""
        return {
            "memories": [
                {"name": name, "tiers": self.session.memory(name).stats()}
                for name in self.names()
            ]
        }

    def events(self) -> list[dict[str, Any]]:
        """This Studio session's own trace events (the changes it made, its recalls)."""
        return self.session.events

    # ------------------------------------------------------------ changes (--write)
    def forget(self, name: str, key: str) -> bool:
        done: bool = self.handle(name).delete(key)
        self.summaries.forget(name)
        return done

    def update(
        self, name: str, key: str, *, value: str | None, tags: str | None,
        importance: str | None,
    ) -> None:
        """Store the entry again with a new value (JSON, else text), tags (comma-separated)
        or importance, keeping its other fields and its expiry."""
        handle = self.handle(name)
        found = handle.get(key)
        if found is None:
            raise NotFound("no such entry", memory=name, key=key)
        new_value = found.value if value is None else _json_or_text(value)
        metadata = found.metadata
        new_tags = (
            [t.strip() for t in tags.split(",") if t.strip()] if tags is not None
            else metadata.get("tags")
        )
        new_importance = (
            _number(importance, "importance") if importance is not None and importance.strip()
            else found.importance
        )
        expires_in = None
        if found.expires_at is not None:
            expires_in = max(found.expires_at - self.clock(), 0.001)
        related = metadata.get("related")
        handle.remember(
            new_value, key=key, tags=new_tags, importance=new_importance,
            metadata=_free_metadata(metadata) or None, type=found.type,
            expires_in=expires_in,
            related=related if isinstance(related, list) and related else None,
            tier=found.tier,
        )
        self.summaries.forget(name)

    def purge(self) -> int:
        """Delete the store's expired entries now (every memory's, as `axon memory purge`);
        returns how many. Workaround: a handle has no purge, so the store's backend is
        opened and purged, and its report becomes the session's `memory_expire` events
        (one per memory, as a session's own sweeps are traced)."""
        from axon.trace import TraceEventType

        tracer = self.session.tracer

        def report(count: int, by_scope: Mapping[str | None, int] | None) -> None:
            for scope, removed in (by_scope or {None: count}).items():
                data: dict[str, Any] = {"backend": self.backend, "count": removed}
                if scope is not None:
                    data["memory"] = scope
                tracer.emit(TraceEventType.MEMORY_EXPIRE, data=data)

        async def purge() -> int:
            backend = self._open()
            try:
                backend.set_purge_listener(report)
                return int(await backend.purge_expired())
            finally:
                await backend.close()

        count = asyncio.run(purge())
        for name in self._names:
            self.summaries.forget(name)
        return count


FACTORS = ("importance",)
"""Signals that are not a part of the score but a factor the parts were multiplied by
(docs/language.md, hybrid retrieval): shown beside the bar, not in it."""


def signal_shares(signals: Mapping[str, float] | None) -> list[dict[str, Any]]:
    """Each additive signal's part of a fused score: its value and its share of their sum
    (a factor such as `importance` is left to `signal_factors`)."""
    if not signals:
        return []
    values = {
        k: float(v) for k, v in signals.items()
        if k not in FACTORS and isinstance(v, int | float) and v > 0
    }
    total = sum(values.values())
    return [
        {"signal": k, "value": round(v, 6), "share": round(v / total, 6) if total else 0.0}
        for k, v in values.items()
    ]


def signal_factors(signals: Mapping[str, float] | None) -> dict[str, float]:
    """The factors among a result's signals (`importance`: what its parts were multiplied by)."""
    return {
        k: round(float(v), 6) for k, v in (signals or {}).items()
        if k in FACTORS and isinstance(v, int | float)
    }


def _number(text: str, what: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        number = float(text)
    except ValueError:
        raise StudioError(f"{what} must be a number, not '{text}'") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise StudioError(f"{what} must be a finite number, not '{text}'")
    return number


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _where(text: str) -> dict[str, Any] | None:
    """Metadata filters: `FIELD=VALUE` pairs, one per line or separated by `;` (VALUE is
    JSON when it parses, else text)."""
    pairs: dict[str, Any] = {}
    for part in text.replace("\n", ";").split(";"):
        if not part.strip():
            continue
        field, sep, value = part.partition("=")
        if not sep or not field.strip():
            raise StudioError(f"metadata filter '{part.strip()}' is not FIELD=VALUE")
        pairs[field.strip()] = _json_or_text(value.strip())
    return pairs or None

