"""The environment -> where Lark may cache the parser's tables: a private per-user file, or nowhere.

Lark's own `cache=True` keeps its tables in `<tempdir>/.lark_cache_<user>_<hash>_<ver>.tmp`
and unpickles that file before checking anything about it: a predictable name in a
directory everyone can write, so whoever plants a pickle there first runs code as the next
person to parse a program. AXON never lets Lark read from a shared directory. The tables
are cached in `$XDG_CACHE_HOME/axon/` (`~/.cache/axon/` by default), a directory created
with mode 0700 and used only while it is a real directory owned by the current user that
no one else can read or write; the cache file must be the user's own regular file too.
When any of that cannot be had (no home, a directory of someone else's, loose modes that
the user chose, a platform without user ids), the parser is built without a cache: about
75 ms more per process, never a risk.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from pathlib import Path

import lark

_PRIVATE = 0o077
"""Mode bits for the group and others: none may be set on the directory."""


def cache_dir() -> Path | None:
    """The private directory for AXON's caches, created 0700 if missing; None if unsafe."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return None
    base_text = os.environ.get("XDG_CACHE_HOME") or ""
    try:
        base = Path(base_text) if base_text else Path.home() / ".cache"
    except RuntimeError:  # no home directory to be found
        return None
    if not base.is_absolute():  # the XDG rule: a relative value is ignored
        try:
            base = Path.home() / ".cache"
        except RuntimeError:
            return None
    path = base / "axon"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != getuid():
        return None
    if info.st_mode & _PRIVATE:
        return None
    return path


def parser_cache_file(grammar: str, variant: str = "") -> str | None:
    """The file Lark may cache `grammar`'s tables in, or None for no cache at all.

    The name carries the grammar's hash and the Lark and Python versions, so another
    grammar or release never reads tables that are not its own (Lark checks the hash
    inside the file as well). `variant` names a parser of the same grammar built with
    other options (the formatter's keeps every token), which gets a file of its own.
    """
    directory = cache_dir()
    if directory is None:
        return None
    digest = hashlib.sha256(grammar.encode("utf-8")).hexdigest()[:16]
    version = f"{sys.version_info[0]}{sys.version_info[1]}"
    kind = f"-{variant}" if variant else ""
    path = directory / f"parser-{digest}{kind}-lark{lark.__version__}-py{version}.pickle"
    try:
        info = path.lstat()
    except FileNotFoundError:
        return str(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
        return None
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return str(path)
