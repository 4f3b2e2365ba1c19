"""Fixtures of the `axon` command's tests: `store`, one store holding `PROGRAM`'s memories
on each backend the CLI reaches."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_extra
from tests.helpers.cli import PROGRAM, Store, axon
from tests.memory.conftest import chroma_test_url, pg_dsn_or_skip, pg_test_schema


@pytest.fixture(params=["sqlite", "pgvector", "chroma"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """`axon memory ...` against a store holding PROGRAM's memories: a memory directory,
    a PostgreSQL schema and a collection on the Chroma server (`--chroma URL`).

    The embedded Chroma directory runs the same backend code through another client, so
    only the tests that name the store's location on the command line (every command,
    the errors, a pasted page hint) take it too: `store_every_location`."""
    return _store(request.param, tmp_path)


@pytest.fixture(params=["sqlite", "pgvector", "chroma", "chroma-dir"])
def store_every_location(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """`store`, and also a store in an embedded Chroma directory (`--chroma DIR`,
    relative to the memory directory)."""
    return _store(request.param, tmp_path)


def _store(kind: str, tmp_path: Path) -> Store:
    """PROGRAM's memories written by `axon run` on the backend `kind`; `axon memory`
    against them."""
    backend = kind
    env: dict[str, str] = {}
    if kind == "sqlite":
        where = ["--memory-dir", str(tmp_path / "mem")]
    elif kind == "pgvector":
        dsn = pg_dsn_or_skip()
        schema = pg_test_schema(tmp_path)
        where = ["--pg-dsn", dsn, "--pg-schema", schema]
        env = {"AXON_PG_SCHEMA": schema}
    else:
        require_extra("chromadb")  # the embedded "chroma-dir" needs no server, but the client
        location = chroma_test_url(tmp_path) if kind == "chroma" else "kb#notes"
        backend = f'chroma location: "{location}"'
        where = ["--memory-dir", str(tmp_path / "mem"), "--chroma", location]
    program = tmp_path / "p.axon"
    program.write_text(PROGRAM.replace("BACKEND", backend))
    run_where = ["--memory-dir", str(tmp_path / "mem")]
    if kind == "pgvector":
        run_where += ["--pg-dsn", where[1]]
    result = axon("run", str(program), *run_where, **env)
    assert result.returncode == 0, result.stderr

    def memory(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return axon("memory", *args, *where, stdin=stdin)

    return memory
