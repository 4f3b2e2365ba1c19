"""Connections to one PostgreSQL database: a DSN in, a pool that runs retried transactions out.

`Connector.run(body)` hands `body` a pooled connection inside one transaction
(or none, for reads and single statements) and copes with what a server does to
connections: a restart or failover breaks them (the pool is checked and `body`
runs once more; a pool that cannot reconnect in time is replaced), deadlocks
between concurrent writers abort a transaction (it is retried). The pool is
opened, and the schema migrated, on first use, after one direct connection that
reports the server's own reason when it cannot be reached. Every error becomes
an `AxonMemoryError` naming `user@host:port/db`, never the password.

Also here: `VectorParam`, which sends a float32 vector to pgvector in its binary
format, the per-connection settings of HNSW search, and `store_place`: whether a
schema holds an AXON store, asked on one short connection (the registry's `store`).
"""

from __future__ import annotations

import functools
import os
import struct
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from axon.errors import AxonMemoryError
from axon.memory.backends.postgres_schema import (
    DEFAULT_SCHEMA,
    SCHEMA_ENV,
    check_schema_name,
    describe_dsn,
    install_hint,
    migrate,
    parse_dsn,
    quote_ident,
    redact,
    resolve_dsn,
)
from axon.memory.registry import StorePlace

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

T = TypeVar("T")

DEADLOCK_RETRIES = 5

HNSW_EF_SEARCH = 100
"""`hnsw.ef_search` for recall (raised to the number of candidates wanted when larger)."""


def import_driver() -> None:
    """Fail with an install hint when psycopg or psycopg-pool is missing."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise AxonMemoryError(
            f"backend 'pgvector' needs psycopg 3 and psycopg-pool: {install_hint()}"
        ) from None


class VectorParam:
    """A query parameter holding one float32 vector, sent in pgvector's binary format."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = np.asarray(array, dtype=">f4").reshape(-1)

    def binary(self) -> bytes:
        return struct.pack(">HH", self.array.shape[0], 0) + self.array.tobytes()


@functools.cache
def _vector_dumper() -> type[Any]:
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class VectorDumper(Dumper):
        format = Format.BINARY
        oid = 0  # unknown: the server takes the type from the `::vector` cast

        def dump(self, obj: Any) -> bytes:
            data: bytes = obj.binary()
            return data

    return VectorDumper


def configure_connection(conn: Connection[Any]) -> None:
    """Prepare a new pool connection: `VectorParam` dumper and the HNSW search settings."""
    conn.adapters.register_dumper(VectorParam, _vector_dumper())
    conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, false), "
        "set_config('hnsw.iterative_scan', 'strict_order', false)",
        (str(HNSW_EF_SEARCH),),
    )


class Connector:
    """The pool of one database and schema; `check_open` raises when the owner is closed."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str,
        pool_size: int,
        timeout: float,
        check_open: Callable[[], None],
    ) -> None:
        self._dsn = dsn
        self._params = parse_dsn(dsn)
        self.target = describe_dsn(self._params)
        self.schema = schema
        self._pool_size = pool_size
        self._timeout = timeout
        self._check_open = check_open
        self._pool: ConnectionPool[Any] | None = None
        self._lock = threading.Lock()

    def error(self, what: str, exc: BaseException) -> AxonMemoryError:
        """An `AxonMemoryError` naming the server (never the password) and the cause."""
        detail = redact(str(exc).strip() or type(exc).__name__, self._params)
        return AxonMemoryError(f"PostgreSQL at {self.target}: {what}: {detail}")

    def _open(self) -> ConnectionPool[Any]:
        """The pool, opened (and the schema migrated) on first use."""
        pool = self._pool
        if pool is not None:
            return pool
        with self._lock:
            if self._pool is not None:
                return self._pool
            self._check_open()
            import psycopg
            from psycopg_pool import ConnectionPool, PoolTimeout

            connect_timeout = max(1, int(self._timeout))
            try:
                with psycopg.connect(
                    self._dsn, autocommit=True, connect_timeout=connect_timeout
                ) as conn:
                    migrate(conn, self.schema)
            except psycopg.Error as exc:
                raise self.error("cannot connect or set up the schema", exc) from None
            pool = ConnectionPool(
                self._dsn,
                min_size=1,
                max_size=self._pool_size,
                kwargs={"autocommit": True, "connect_timeout": connect_timeout},
                configure=configure_connection,
                timeout=self._timeout,
                open=False,
                name=f"axon-pgvector-{self.schema}",
            )
            try:
                pool.open(wait=True, timeout=self._timeout)
            except PoolTimeout as exc:
                pool.close()
                raise self.error("no connection within the timeout", exc) from None
            self._pool = pool
            return pool

    def run(self, body: Callable[[Connection[Any]], T], *, atomic: bool = True) -> T:
        """Run `body` in one transaction; retry on a dropped connection or a deadlock.

        `atomic=False` runs it without an explicit transaction (each statement
        commits on its own), saving the BEGIN/COMMIT round trips of reads and
        single-statement writes.

        A connection broken by a server restart is detected by the failed statement;
        the pool is then checked (broken idle connections are replaced) and `body`
        runs once more. When the pool has no connection to give within the timeout
        (its reconnection attempts back off), it is replaced by a new pool, whose
        opening connects directly and so reports the server's own reason if it is
        still unreachable. `body` must therefore be idempotent, which every
        operation of this backend is.
        """
        import psycopg
        from psycopg import errors
        from psycopg_pool import PoolTimeout

        reconnected = False
        deadlocks = 0
        while True:
            pool = self._open()
            try:
                with pool.connection() as conn:
                    try:
                        if not atomic:
                            return body(conn)
                        with conn.transaction():
                            return body(conn)
                    except psycopg.OperationalError as exc:
                        if not conn.broken:
                            raise
                        raise _Broken(exc) from None
            except _Broken as broken:
                if reconnected:
                    raise self.error("the connection was lost twice", broken.cause) from None
                reconnected = True
                pool.check()
            except (errors.DeadlockDetected, errors.SerializationFailure) as exc:
                deadlocks += 1
                if deadlocks > DEADLOCK_RETRIES:
                    raise self.error("gave up after repeated deadlocks", exc) from None
            except PoolTimeout as exc:
                if reconnected:
                    raise self.error(
                        f"no connection available within {self._timeout:g} s "
                        "(is the server running and reachable?)",
                        exc,
                    ) from None
                reconnected = True
                self._discard_pool(pool)
            except psycopg.OperationalError as exc:
                raise self.error("operation failed", exc) from None
            except psycopg.Error as exc:
                raise self.error("query failed", exc) from None

    def _discard_pool(self, pool: ConnectionPool[Any]) -> None:
        """Drop `pool` (if it is still ours): the next operation opens a new one."""
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.close(timeout=1.0)

    def close(self) -> None:
        """Close the pool (a later `run` would open a new one; the backend prevents that)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


class _Broken(Exception):
    """Internal: the connection broke under a statement (server restart, network)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def store_place(
    location: str | None, settings: Mapping[str, str], memory_dir: Path
) -> StorePlace:
    """The schema a command opens (the registry's `store` of pgvector): named by its DSN
    (password redacted) and schema; there when it holds AXON's `meta` table (the first
    thing a migration makes), asked on one short connection without creating anything
    (opening the backend would create the schema and migrate it). A connection that
    fails raises the error opening would give."""
    from axon.redaction import redact_secrets

    dsn = resolve_dsn(location)
    schema = settings.get("schema") or os.environ.get(SCHEMA_ENV) or DEFAULT_SCHEMA

    def exists() -> bool:
        checked = check_schema_name(schema)
        import_driver()
        import psycopg

        params = parse_dsn(dsn)
        try:
            timeout = max(1, int(float(params.get("connect_timeout") or 15)))
        except ValueError:
            timeout = 15  # the backend refuses it with its own message when opened
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=timeout) as conn:
                row = conn.execute(
                    "SELECT to_regclass(%s)", [f"{quote_ident(checked)}.meta"]
                ).fetchone()
        except psycopg.Error as exc:
            detail = redact(str(exc).strip() or type(exc).__name__, params)
            raise AxonMemoryError(  # exit 3 on one line, as the backend's own error
                f"PostgreSQL at {describe_dsn(params)}: cannot connect: {detail}"
            ) from None
        return row is not None and row[0] is not None

    label = redact_secrets(dsn) + f" (schema {schema})"
    return StorePlace(label, "no AXON store in that schema", exists)
