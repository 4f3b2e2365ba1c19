"""Fixtures of the `axon` command's tests: `store`, one store holding `PROGRAM`'s memories
on each backend the CLI reaches."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import require_extra
from tests.helpers.cli import PROGRAM, Store, axon
from tests.memory.conftest import chroma_test_url, pg_dsn_or_skip, pg_test_schema


@pytest.fixture(params=["sqlite", "pgvector", "chroma", "chroma-dir"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """`axon memory ...` against a store holding PROGRAM's memories: a memory directory,
    a PostgreSQL schema, a collection on the Chroma server (`--chroma URL`) and one in
    an embedded Chroma directory (`--chroma DIR`, relative to the memory directory)."""
    backend = request.param
    env: dict[str, str] = {}
    if request.param == "sqlite":
        where = ["--memory-dir", str(tmp_path / "mem")]
    elif request.param == "pgvector":
        dsn = pg_dsn_or_skip()
        schema = pg_test_schema(tmp_path)
        where = ["--pg-dsn", dsn, "--pg-schema", schema]
        env = {"AXON_PG_SCHEMA": schema}
    else:
        require_extra("chromadb")  # the embedded "chroma-dir" needs no server, but the client
        location = chroma_test_url(tmp_path) if request.param == "chroma" else "kb#notes"
        backend = f'chroma location: "{location}"'
        where = ["--memory-dir", str(tmp_path / "mem"), "--chroma", location]
    program = tmp_path / "p.axon"
    program.write_text(PROGRAM.replace("BACKEND", backend))
    run_where = ["--memory-dir", str(tmp_path / "mem")]
    if request.param == "pgvector":
        run_where += ["--pg-dsn", where[1]]
    result = axon("run", str(program), *run_where, **env)
    assert result.returncode == 0, result.stderr

    def memory(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return axon("memory", *args, *where, stdin=stdin)

    return memory
