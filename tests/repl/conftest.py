"""Fixtures for the REPL tests: a session on a temp memory dir with a fast embedder."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from axon.memory.embeddings.hashing import HashingEmbedder
from axon.repl import main
from axon.repl.console import Console
from axon.runtime.session import Session
from tests.memory.conftest import FakeClock

AXON = Path(sys.executable).with_name("axon")


@attrs.define
class Repl:
    """A `Console` whose output and errors are kept in strings."""

    session: Session
    console: Console
    out: io.StringIO
    err: io.StringIO
    clock: FakeClock

    def run(self, text: str) -> bool:
        return self.console.run_input(text)

    def take(self) -> tuple[str, str]:
        """The output and errors printed since the last call."""
        out, err = self.out.getvalue(), self.err.getvalue()
        for stream in (self.out, self.err):
            stream.seek(0)
            stream.truncate()
        return out, err


def make_session(memory_dir: Path, clock: FakeClock | None = None) -> Session:
    return Session(memory_dir=memory_dir, clock=clock, embedder=lambda: HashingEmbedder())


@pytest.fixture
def repl(tmp_path: Path) -> Iterator[Repl]:
    clock = FakeClock()
    session = make_session(tmp_path / "mem", clock)
    out, err = io.StringIO(), io.StringIO()
    console = Console(session, out, err, color=False, width=100)
    yield Repl(session, console, out, err, clock)
    session.close()


def run_axon_repl(
    args: list[str], stdin: str, *, cwd: Path, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """`axon repl ARGS` as a process with `stdin` piped in (hashing embedder unless overridden).

    `env` values replace variables; None removes one.
    """
    full_env = {**os.environ, "AXON_EMBEDDER": "hashing", "AXON_HISTORY_FILE": str(cwd / "hist")}
    full_env.pop("AXON_MEMORY_DIR", None)
    for name, value in (env or {}).items():
        if value is None:
            full_env.pop(name, None)
        else:
            full_env[name] = value
    return subprocess.run(
        [str(AXON), "repl", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=120,
    )


ENTER = "\r"
CTRL_C = "\x03"
CTRL_D = "\x04"
"""Keys as the terminal sends them, for `pipe`."""


@pytest.fixture
def pipe() -> Iterator[PipeInput]:
    """prompt_toolkit's pipe input: what the interactive loop reads its keys from."""
    with create_pipe_input() as pipe_input:
        yield pipe_input


def run_main(
    pipe: PipeInput, keys: str, memory_dir: Path, file: Path | None = None
) -> tuple[int, str, str]:
    """`axon repl [FILE] --memory-dir memory_dir` (the `main` a terminal runs), typing
    `keys` into `pipe`; its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    pipe.send_text(keys)
    code = main(
        file,
        memory_dir,
        stdout=out,
        stderr=err,
        interactive=True,
        prompt_input=pipe,
        prompt_output=DummyOutput(),
    )
    return code, out.getvalue(), err.getvalue()
