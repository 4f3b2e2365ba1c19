"""Writing a file whole or not at all, without damaging what the path names.

Every file AXON writes for a person (`axon run --trace FILE`, `axon memory export -o
FILE`, the REPL's `.export`, `export_to_path`, the REPL history's redaction) goes
through `replacing`: the text is written to a temporary file beside the target and
renamed over it only when complete, so a failure leaves the old file as it was and
no half-written one. What the path names is respected:

- a symbolic link is written through: its target is replaced, the link stays;
- an existing regular file keeps its permission bits (a new one gets the mode a plain
  `open` would give it, 0666 less the umask, not `mkstemp`'s 0600);
- anything else that exists (a character device such as `/dev/null` or `/dev/full`, a
  FIFO, a socket) cannot be replaced by a rename without destroying it, so it is
  opened and written in place, and its errors (`/dev/full`: no space left) are the
  caller's `OSError` like any other.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


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
    mode = stat.S_IMODE(info.st_mode) if info is not None else 0o666 & ~_umask()
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


def _umask() -> int:
    """The process's umask, read without changing it (Linux), else by setting it back."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
