"""Files written whole or not at all, without damaging what their path names (`axon.files`).

The trace, export and history writers all go through `replacing`; the `axon` command
cases run it as a user would (a symlink, a FIFO, a file's permissions).
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from axon.files import replacing
from tests.helpers.cli import axon, write
from tests.repl.conftest import run_axon_repl

PROGRAM = 'memory N { store: persistent retrieval: exact }\nremember("first") -> N\n'


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o027], ids=["000", "022", "027"])
def test_a_new_file_is_private_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    """An export or a trace holds what the memory holds: it was created 0666 less the
    umask (0644, readable by anyone), now 0600 like the memory file."""
    mask = os.umask(umask)
    try:
        with replacing(tmp_path / "new.txt") as handle:
            handle.write("text")
    finally:
        os.umask(mask)
    assert (tmp_path / "new.txt").read_text() == "text"
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o600


def test_an_existing_file_keeps_its_mode_and_a_failure_keeps_its_content(tmp_path: Path) -> None:
    path = tmp_path / "old.txt"
    path.write_text("old")
    path.chmod(0o604)
    with replacing(path) as handle:
        handle.write("new")
    assert (path.read_text(), stat.S_IMODE(path.stat().st_mode)) == ("new", 0o604)
    with pytest.raises(RuntimeError), replacing(path) as handle:
        handle.write("half")
        raise RuntimeError("stopped")
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.txt"]  # no temporary left


def test_a_symlink_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with replacing(link, binary=True) as handle:
        handle.write(b"new")
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"


def _read_fifo(path: Path, into: list[str]) -> threading.Thread:
    def read() -> None:
        with open(path, encoding="utf-8") as fifo:
            into.append(fifo.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return reader


def test_a_fifo_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = _read_fifo(fifo, got)
    with replacing(fifo) as handle:
        handle.write("through the pipe")
    reader.join(10)
    assert got == ["through the pipe"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_axon_run_trace_onto_a_symlink_and_a_fifo(tmp_path: Path) -> None:
    program = write(tmp_path, "p.axon", PROGRAM)
    target = tmp_path / "real.json"
    target.write_text("old")
    target.chmod(0o644)
    link = tmp_path / "t.json"
    link.symlink_to(target)
    ran = axon("run", str(program), "--trace", str(link), "--memory-dir", str(tmp_path / "m"))
    assert (ran.returncode, ran.stderr) == (0, "")
    assert link.is_symlink() and '"events"' in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644

    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = _read_fifo(fifo, got)
    ran = axon("run", str(program), "--trace", str(fifo), "--memory-dir", str(tmp_path / "m"))
    reader.join(30)
    assert ran.returncode == 0 and '"events"' in got[0]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_memory_export_and_repl_export_onto_a_symlink(tmp_path: Path) -> None:
    program = write(tmp_path, "p.axon", PROGRAM)
    memory_dir = tmp_path / "m"
    assert axon("run", str(program), "--memory-dir", str(memory_dir)).returncode == 0
    target = tmp_path / "real.jsonl"
    target.write_text("old")
    link = tmp_path / "out.jsonl"
    link.symlink_to(target)
    exported = axon("memory", "--memory-dir", str(memory_dir), "export", "-o", str(link))
    assert exported.returncode == 0, exported.stderr
    assert link.is_symlink() and '"format":"axon-memory"' in target.read_text()

    target.write_text("old")
    script = f"memory N {{ store: persistent retrieval: exact }}\n.export N {link}\n"
    result = run_axon_repl(["--memory-dir", str(memory_dir)], script, cwd=tmp_path)
    assert result.returncode == 0 and "exported 1 entry of 1 memory" in result.stdout
    assert link.is_symlink() and '"key"' in target.read_text()
