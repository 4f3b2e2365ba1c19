"""Server restarts under the PostgreSQL backend: transparent reconnect, clear errors, no lost write.

These tests restart a server, so they use a private throw-away cluster (initdb in
/var/tmp, its own port and socket directory) rather than the shared test server:
other tests keep running undisturbed. They need the PostgreSQL 15 binaries and
pgvector that `scripts/pg start` installs, and psycopg; without them they skip (CI: fail).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from axon.errors import AxonMemoryError
from axon.memory.backends.postgres import PostgresBackend
from tests.conftest import require_extra, unavailable

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _missing() -> str | None:
    if not (PG_BIN / "initdb").exists():
        return f"no PostgreSQL 15 binaries in {PG_BIN} (scripts/pg start installs them)"
    try:
        share = subprocess.run(
            [str(PG_BIN / "pg_config"), "--sharedir"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "pg_config of PostgreSQL 15 does not run"
    if not Path(share, "extension", "vector.control").exists():
        return "pgvector is not installed for PostgreSQL 15 (scripts/pg start builds it)"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PrivateCluster:
    """A PostgreSQL cluster of its own, run as the `postgres` user when we are root."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="axon-pgtest-", dir="/var/tmp"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.dsn = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")

    def _run(self, *args: str) -> None:
        command = [*args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, cwd="/", timeout=120)

    def init(self) -> None:
        self._run(
            str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
            "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync",
        )  # fmt: skip
        settings = (
            f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
            f"unix_socket_directories = '{self.root}'\nfsync = off\nshared_buffers = 32MB\n"
        )
        conf = self.data / "postgresql.conf"
        conf.write_text(conf.read_text() + settings)

    def pg_ctl(self, action: str) -> None:
        self._run(
            str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-m", "fast",
            "-w", "-t", "60", action,
        )  # fmt: skip

    def running(self) -> bool:
        try:
            self._run(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "status")
        except subprocess.CalledProcessError:
            return False
        return True

    def destroy(self) -> None:
        if self.running():
            self.pg_ctl("stop")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivateCluster]:
    require_extra("psycopg", "psycopg_pool")
    reason = _missing()
    if reason is not None:
        unavailable(reason)
    instance = PrivateCluster()
    try:
        instance.init()
        instance.pg_ctl("start")
        yield instance
    finally:
        instance.destroy()


@pytest.fixture
def server(cluster: PrivateCluster) -> PrivateCluster:
    if not cluster.running():
        cluster.pg_ctl("start")
    return cluster


async def test_restart_between_operations_is_transparent(server: PrivateCluster) -> None:
    backend = PostgresBackend(location=server.dsn, schema="restart_a", pool_size=3)
    await backend.store("before", "acknowledged before the restart", {"scope": "S"})
    assert await backend.count("S") == 1
    server.pg_ctl("restart")
    await backend.store("after", "written after the restart", {"scope": "S"})
    found = await backend.retrieve("restart", 10, "S", mode="keyword")
    assert sorted(e.key for e in found) == ["after", "before"]
    server.pg_ctl("restart")
    assert await backend.count("S") == 2  # a read right after a restart works too
    await backend.close()


async def test_a_stopped_server_is_a_clear_error_and_then_recovers(server: PrivateCluster) -> None:
    backend = PostgresBackend(
        location=server.dsn, schema="restart_b", pool_size=2, connect_timeout=2
    )
    await backend.store("kept", "acknowledged", {"scope": "S"})
    server.pg_ctl("stop")
    started = time.monotonic()
    with pytest.raises(AxonMemoryError) as info:
        await backend.store("lost", "never acknowledged", {"scope": "S"})
    assert time.monotonic() - started < 30
    message = str(info.value)
    assert f"postgres@127.0.0.1:{server.port}/postgres" in message
    with pytest.raises(AxonMemoryError):
        await backend.count("S")
    server.pg_ctl("start")
    await backend.store("later", "after recovery", {"scope": "S"})
    assert sorted(e.key for e in await backend.list_entries("S")) == ["kept", "later"]
    await backend.close()


def test_no_acknowledged_write_is_lost_across_restarts(server: PrivateCluster) -> None:
    acknowledged: list[str] = []
    refused: list[str] = []
    stop = threading.Event()
    failures: list[BaseException] = []

    async def write() -> None:
        backend = PostgresBackend(
            location=server.dsn, schema="restart_c", pool_size=2, connect_timeout=5
        )
        await backend.count()
        try:
            for i in range(3000):  # bounded; the main thread stops it much earlier
                if stop.is_set():
                    break
                key = f"k{i}"
                try:
                    await backend.store(key, i, {"scope": "S"})
                except AxonMemoryError:
                    refused.append(key)
                else:
                    acknowledged.append(key)
        finally:
            await backend.close()

    def run() -> None:
        try:
            asyncio.run(write())
        except BaseException as exc:  # reported below
            failures.append(exc)

    writer = threading.Thread(target=run)
    writer.start()
    try:
        for _ in range(3):
            deadline = time.monotonic() + 10
            mark = len(acknowledged)
            while len(acknowledged) < mark + 20 and time.monotonic() < deadline:
                time.sleep(0.01)  # wait for the writer to make progress, not to drive time
            server.pg_ctl("restart")
    finally:
        stop.set()
        writer.join(timeout=60)
    assert not failures, failures
    assert len(acknowledged) >= 60

    async def check() -> set[str]:
        backend = PostgresBackend(location=server.dsn, schema="restart_c")
        stored = {e.key for e in await backend.list_entries("S")}
        await backend.close()
        return stored

    stored = asyncio.run(check())
    assert set(acknowledged) <= stored  # nothing acknowledged is missing
    assert stored <= set(acknowledged) | set(refused)
