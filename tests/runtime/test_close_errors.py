"""A backend that fails while the session closes: every other backend is still closed,
and `axon run` reports one clear line with exit 3 (a runtime error), not an internal error."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import axon
from axon.errors import AxonError, AxonMemoryError
from axon.memory.lifetimes import OWNED_MARKER
from axon.memory.registry import BackendInfo, registry
from tests.runtime.failing_backend import FailingCloseBackend

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = (
    "memory Fragile { store: session backend: failing_close }\n"
    "memory Notes { store: session backend: sqlite }\n"
    'remember("a") -> Fragile with { key: "a" }\n'
    'remember("b") -> Notes with { key: "b" }\n'
)


def owned_rows(memory_dir: Path) -> int:
    with sqlite3.connect(memory_dir / "memory.db") as conn:
        row = conn.execute(
            "SELECT count(*) FROM entries WHERE scope LIKE ?", (OWNED_MARKER + "%",)
        ).fetchone()
    return int(row[0])


def test_axon_run_reports_a_failed_close_in_one_line_with_exit_3(tmp_path: Path) -> None:
    program = tmp_path / "p.axon"
    program.write_text(PROGRAM)
    memory_dir = tmp_path / "mem"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests/runtime/failing_backend.py"),
            "run",
            str(program),
            "--memory-dir",
            str(memory_dir),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert result.returncode == 3, result
    # warnings come with their source line and caret; errors start a line of their own
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert errors == [
        "error: closing the session failed: backend 'failing_close': "
        "the store went away while closing"
    ]
    assert "remembered" in result.stdout  # the program's own output is still printed
    assert owned_rows(memory_dir) == 0  # the SQLite backend was still closed properly


def test_session_close_tries_every_backend_and_raises_one_axon_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The checker asks the process-wide registry: add the backend there for this test only.
    info = BackendInfo("failing_close", f"{__name__}:FailingCloseBackend")
    monkeypatch.setitem(registry._by_name, info.name, info)
    monkeypatch.setitem(registry._aliases, info.name, info.name)
    session = axon.Session(memory_dir=tmp_path)
    session.execute(PROGRAM)
    backends = [session.memories[name].backend for name in ("Fragile", "Notes")]
    assert type(backends[0]) is FailingCloseBackend
    with pytest.raises(AxonError) as info:
        session.close()
    assert isinstance(info.value, AxonMemoryError) and isinstance(info.value, ValueError)
    assert "backend 'failing_close'" in str(info.value)
    assert all(b.closed for b in backends)
    assert session.closed
    assert owned_rows(tmp_path) == 0


def test_the_repl_reports_a_failed_close_and_exits_nonzero(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests/runtime/failing_backend.py"),
            "repl",
            "--memory-dir",
            str(tmp_path / "mem"),
        ],
        input=PROGRAM,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert result.returncode == 1, result
    assert result.stderr.splitlines()[-1] == (
        "error: closing the session failed: backend 'failing_close': "
        "the store went away while closing"
    )
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_a_memory_that_failed_to_open_is_not_closed_again(tmp_path: Path) -> None:
    """A store that could not be used at declaration is dropped: close() reports nothing."""
    from axon.errors import AxonRuntimeError
    from axon.runtime.session import Session

    session = Session(memory_dir=tmp_path)
    with pytest.raises(AxonRuntimeError, match="cannot open memory 'P'"):
        session.execute(
            'memory P { store: session backend: pgvector '
            'location: "postgresql://nobody@127.0.0.1:1/none" }'
        )
    assert session.memory_names() == []
    session.close()  # would raise "closing the session failed" if P's backend were kept
