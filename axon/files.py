"""Writing a file whole or not at all, without damaging what the path names; creating
a store's directories and files private to their owner.

Every file AXON writes for a person (`axon run --trace FILE`, `axon memory export -o
FILE`, the REPL's `.export`, `export_to_path`, the REPL history's redaction) goes
through `replacing`: the text is written to a temporary file beside the target and
renamed over it only when complete, so a failure leaves the old file as it was and
no half-written one. What the path names is respected:

- a symbolic link is written through: its target is replaced, the link stays;
- an existing regular file keeps its permission bits; a new one is private, mode 0600
  whatever the umask: an export or a trace holds what the memory holds, so it is
  kept as private as the memory file itself;
- anything else that exists (a character device such as `/dev/null` or `/dev/full`, a
  FIFO, a socket) cannot be replaced by a rename without destroying it, so it is
  opened and written in place, and its errors (`/dev/full`: no space left) are the
  caller's `OSError` like any other.

A memory store is private in the same way (`private_directory`, `create_private`): a
directory AXON creates for it is mode 0700 and a file it creates there 0600 (the
SQLite file, whose `-wal` and `-shm` SQLite then creates with the same mode, the ANN
index files, lock files), whatever the umask. A directory or file that already
exists is left as it is: its mode is its owner's choice.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

PRIVATE_FILE_MODE = 0o600
"""The mode of every file AXON creates (an export, a trace, a store's files)."""
PRIVATE_DIR_MODE = 0o700
"""The mode of every directory AXON creates for a store."""


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO[Any]]:
    """A stream (UTF-8 text, or bytes when `binary`) whose content becomes `path`'s
    when the `with` block ends without an exception; see the module docstring."""
    target = Path(path)
    if target.is_symlink():
        target = Path(os.path.realpath(target))
    try:
        info = target.stat()
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        with _open(target, binary) as handle:
            yield handle
        return
    parent = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    mode = stat.S_IMODE(info.st_mode) if info is not None else PRIVATE_FILE_MODE
    try:
        with _open(fd, binary) as handle:
            os.fchmod(handle.fileno(), mode)
            yield handle
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _open(file: int | Path, binary: bool) -> IO[Any]:
    """`file` (a descriptor or a path) opened for writing, bytes or UTF-8 text."""
    if binary:
        return open(file, "wb")
    return open(file, "w", encoding="utf-8")


def private_directory(path: str | os.PathLike[str]) -> None:
    """Create the directory `path` and its missing parents, each one created mode 0700
    whatever the umask; a directory that exists (or that another process creates at the
    same moment) is left as it is. Errors are `OSError`s, as `Path.mkdir`'s."""
    missing: list[Path] = []
    current = Path(path)
    while not os.path.lexists(current) and current.parent != current:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, PRIVATE_DIR_MODE)  # the umask may have taken bits off


def create_private(path: str | os.PathLike[str]) -> bool:
    """Create `path` as an empty file of mode 0600 (whatever the umask) unless something
    exists there; True when this call created it. An existing file is never opened: a
    SQLite file open in this process would lose its locks when a second descriptor to it
    is closed."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, PRIVATE_FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, PRIVATE_FILE_MODE)
    finally:
        os.close(fd)
    return True
