"""Fixtures for the memory engine: one backend factory per built-in backend.

`backend` is parametrized over every built-in backend, so each is put through the
whole conformance suite (a plugin runs the same suite from its own package with
`axon.testing`). Each factory
receives a `BackendEnv` (a temporary directory, a controllable clock, a small
deterministic embedder) and returns a fresh, empty backend. `FakeClock` and
`BackendEnv` live in `axon.testing`, the kit backend packages test with.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.registry import registry
from axon.testing import BackendEnv, BackendFactory, FakeClock
from tests.conftest import require_extra, unavailable

__all__ = ["BackendEnv", "BackendFactory", "FakeClock"]  # re-exported for other tests

BACKEND_FACTORIES: dict[str, BackendFactory] = {}
"""Filled below, one entry per built-in backend; a test fails if one is missing."""


def _in_memory(env: BackendEnv) -> MemoryBackend:
    return registry.create("in_memory", clock=env.clock, embedder=env.embedder)


BACKEND_FACTORIES["in_memory"] = _in_memory


def _sqlite(env: BackendEnv) -> MemoryBackend:
    return registry.create(
        "sqlite", memory_dir=env.tmp_path / "sqlite", clock=env.clock, embedder=env.embedder
    )


def _vector_db(env: BackendEnv) -> MemoryBackend:
    return registry.create(
        "vector_db", memory_dir=env.tmp_path / "vector_db", clock=env.clock, embedder=env.embedder
    )


BACKEND_FACTORIES["sqlite"] = _sqlite
BACKEND_FACTORIES["vector_db"] = _vector_db


# ---------------------------------------------------------------------- PostgreSQL (scripts/pg)

_PG_SESSION = secrets.token_hex(4)
_pg_checked: list[str | None] = []  # [None] when reachable, [reason] when not
PG_TEST_SCHEMAS: set[str] = set()
"""Schemas made for tests in this session; dropped when the session ends."""


def pg_dsn_or_skip() -> str:
    """The test server's DSN (`AXON_PG_DSN`, set by scripts/test from `scripts/pg env`).

    Without psycopg installed or a reachable server the test is skipped with the
    reason, or fails when `CI=true`: in CI the PostgreSQL tests must run.
    """
    require_extra("psycopg", "psycopg_pool")
    dsn = os.environ.get("AXON_PG_DSN", "")
    if not _pg_checked:
        reason = None
        if not dsn:
            reason = "AXON_PG_DSN is not set (scripts/test starts a server with scripts/pg)"
        else:
            try:
                import psycopg

                with psycopg.connect(dsn, connect_timeout=5) as conn:
                    conn.execute("SELECT 1")
            except Exception as exc:
                name = type(exc).__name__
                reason = f"the PostgreSQL server in AXON_PG_DSN is unreachable ({name})"
        _pg_checked.append(reason)
    reason = _pg_checked[0]
    if reason is not None:
        unavailable(reason)
    return dsn


def pg_test_schema(tmp_path: Path) -> str:
    """A schema private to one test (the same for the same `tmp_path`, so reopening works)."""
    digest = hashlib.sha1(str(tmp_path).encode()).hexdigest()[:12]
    schema = f"axon_t_{_PG_SESSION}_{digest}"
    PG_TEST_SCHEMAS.add(schema)
    return schema


def _pgvector(env: BackendEnv) -> MemoryBackend:
    return registry.create(
        "pgvector",
        location=pg_dsn_or_skip(),
        schema=pg_test_schema(env.tmp_path),
        pool_size=2,
        clock=env.clock,
        embedder=env.embedder,
    )


BACKEND_FACTORIES["pgvector"] = _pgvector


@pytest.fixture
def pg_dsn() -> str:
    """The PostgreSQL test server's DSN; skips (fails in CI) when there is none."""
    return pg_dsn_or_skip()


@pytest.fixture(scope="session", autouse=True)
def _drop_pg_test_schemas() -> Iterator[None]:
    yield
    if PG_TEST_SCHEMAS and _pg_checked == [None]:
        import psycopg

        with psycopg.connect(os.environ["AXON_PG_DSN"], autocommit=True) as conn:
            for schema in sorted(PG_TEST_SCHEMAS):
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


# ---------------------------------------------------------------------- Chroma (scripts/chroma)

_chroma_checked: list[str | None] = []  # [None] when reachable, [reason] when not
CHROMA_TEST_COLLECTIONS: set[str] = set()
"""Collections made for tests in this session (with their vector collections): deleted at
the end."""


def chroma_url_or_skip() -> str:
    """The test server's URL (`AXON_CHROMA_URL`, set by scripts/test from `scripts/chroma env`).

    Without chromadb installed or a reachable server the test is skipped with the
    reason, or fails when `CI=true`: in CI the Chroma tests must run.
    """
    require_extra("chromadb")
    url = os.environ.get("AXON_CHROMA_URL", "")
    if not _chroma_checked:
        reason = None
        if not url:
            reason = "AXON_CHROMA_URL is not set (scripts/test starts a server with scripts/chroma)"
        else:
            import urllib.request
            from urllib.parse import urlsplit

            parts = urlsplit(url)
            try:
                with urllib.request.urlopen(
                    f"{parts.scheme}://{parts.netloc}/api/v2/heartbeat", timeout=5
                ):
                    pass
            except Exception as exc:
                reason = f"the Chroma server in AXON_CHROMA_URL is unreachable ({exc})"
        _chroma_checked.append(reason)
    reason = _chroma_checked[0]
    if reason is not None:
        unavailable(reason)
    return url


def chroma_test_url(tmp_path: Path) -> str:
    """A URL naming a collection private to one test (the same for the same `tmp_path`)."""
    from urllib.parse import urlsplit

    parts = urlsplit(chroma_url_or_skip())
    digest = hashlib.sha1(str(tmp_path).encode()).hexdigest()[:12]
    name = f"axon-t-{_PG_SESSION}-{digest}"
    CHROMA_TEST_COLLECTIONS.add(name)
    return f"{parts.scheme}://{parts.netloc}/{name}"


def _chroma(env: BackendEnv) -> MemoryBackend:
    return registry.create(
        "chroma", location=chroma_test_url(env.tmp_path), clock=env.clock, embedder=env.embedder
    )


BACKEND_FACTORIES["chroma"] = _chroma


@pytest.fixture
def chroma_url() -> str:
    """The Chroma test server's URL (no collection); skips (fails in CI) when there is none."""
    return chroma_url_or_skip()


@pytest.fixture(scope="session", autouse=True)
def _drop_chroma_test_collections() -> Iterator[None]:
    yield
    if CHROMA_TEST_COLLECTIONS and _chroma_checked == [None]:
        from urllib.parse import urlsplit

        import chromadb
        from chromadb.config import Settings

        parts = urlsplit(os.environ["AXON_CHROMA_URL"])
        client = chromadb.HttpClient(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 8000,
            settings=Settings(anonymized_telemetry=False),
        )
        for collection in client.list_collections():
            name = collection if isinstance(collection, str) else collection.name
            if any(name == c or name.startswith(f"{c}-") for c in CHROMA_TEST_COLLECTIONS):
                client.delete_collection(name)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=sorted(BACKEND_FACTORIES))
async def backend(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> AsyncIterator[MemoryBackend]:
    env = BackendEnv(tmp_path, clock, HashingEmbedder())
    instance = BACKEND_FACTORIES[request.param](env)
    try:
        yield instance
    finally:
        await instance.close()


def load_postgres_dump(name: str, dsn: str, schema: str) -> None:
    """Restore tests/memory/fixtures/NAME (a dump of schema `axon_fixture`, holding COPY
    blocks) into `schema` with psql."""
    dump = (Path(__file__).parent / "fixtures" / name).read_text(encoding="utf-8")
    text = dump.replace("axon_fixture", schema)
    psql = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"
    subprocess.run(
        [psql, "-v", "ON_ERROR_STOP=1", "-q", "-X", dsn],
        input=text, text=True, check=True, capture_output=True,
    )
