"""`axon fmt`: program files (or standard input) -> the same programs in the canonical layout.

The layout is `axon.compiler.formatter.format_source`'s; this module reads and writes.
A file is rewritten only when its layout changes, atomically (`files.replacing`: a
temporary file beside it renamed over it, its mode kept), and never when it does not
parse: the error is printed as `axon check` prints it and the other files go on.
`--check` writes nothing and names the files that would change (exit 1 if any);
`--diff` writes nothing and prints a unified diff; `-` reads standard input and writes
the result to standard output. Directories are searched for `*.axon` files (not under
hidden directories). Exit codes
are those of docs/cli.md: 1 when a file would change under `--check`, does not parse
or cannot be read or written; 4 for a bug in AXON.
"""

from __future__ import annotations

import difflib
import os
import sys
from typing import Annotated

import typer

from axon.cli_output import (
    EXIT_CHECK,
    EXIT_USAGE,
    OutputFailed,
    err,
    internal,
    output_failed,
    write,
)

STDIN = "-"
"""The FILE argument that means standard input (and standard output)."""

_BOM = b"\xef\xbb\xbf"


class _Failed(Exception):
    """One file could not be formatted; the message is already printed."""


def _paths(files: list[str]) -> list[str]:
    """FILES with each directory replaced by the `*.axon` files under it, sorted; hidden
    directories (`.git`, `.venv`, a `.axon` store) are not searched."""
    out: list[str] = []
    for name in files:
        if name == STDIN or not os.path.isdir(name):
            out.append(name)
            continue
        found: list[str] = []
        for root, dirs, names in os.walk(name):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found.extend(os.path.join(root, n) for n in names if n.endswith(".axon"))
        out.extend(p for p in sorted(found) if os.path.isfile(p))
    return out


def _read(name: str) -> str:
    """The text of a file (a byte-order mark kept) or of standard input."""
    from axon.source import MAX_SOURCE_BYTES, SourceError, lone_cr_as_newline, read_source

    if name == STDIN:
        data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)
        if len(data) > MAX_SOURCE_BYTES:
            err(f"<stdin>: error: more than {MAX_SOURCE_BYTES:,} bytes (the limit is 10 MB)")
            raise _Failed
        try:
            return lone_cr_as_newline(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            err(f"<stdin>: error: not UTF-8 text ({exc.reason} at byte {exc.start})")
            raise _Failed from None
    try:
        text = read_source(name)
        with open(name, "rb") as f:
            bom = f.read(len(_BOM)) == _BOM
    except SourceError as exc:
        err(str(exc))
        raise _Failed from None
    except OSError as exc:
        err(f"{name}: error: cannot read ({exc.strerror or exc})")
        raise _Failed from None
    return "\ufeff" + text if bom else text


def _format(name: str, text: str) -> str:
    from axon.compiler.formatter import format_source
    from axon.errors import AxonError

    try:
        return format_source(text, path="<stdin>" if name == STDIN else name)
    except AxonError as exc:
        err(str(exc))
        raise _Failed from None
    except Exception as exc:
        internal(exc)


def _diff(name: str, before: str, after: str) -> str:
    shown = "<stdin>" if name == STDIN else name
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=shown,
            tofile=f"{shown} (formatted)",
        )
    )


def _write(name: str, text: str) -> None:
    from axon.files import replacing

    try:
        with replacing(name, binary=True) as f:
            f.write(text.encode("utf-8"))
    except OSError as exc:
        err(f"{name}: error: cannot write ({exc.strerror or exc}); the file is unchanged")
        raise _Failed from None


def _stdout(text: str) -> None:
    """`text` on stdout exactly (no escapes: a formatter in a pipe gives back a program)."""
    try:
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        raise OutputFailed(None) from None
    except OSError as exc:
        raise OutputFailed(exc) from None


def fmt_cmd(
    files: Annotated[
        list[str], typer.Argument(help="AXON files or directories to format; '-' for stdin.")
    ],
    check: Annotated[
        bool,
        typer.Option("--check", help="Write nothing; name the files that would change (exit 1)."),
    ] = False,
    diff: Annotated[
        bool, typer.Option("--diff", help="Write nothing; print what would change as a diff.")
    ] = False,
) -> None:
    """Rewrite FILES in the canonical layout, keeping every comment (docs/cli.md, axon fmt)."""
    if STDIN in files and len(files) > 1:
        err("error: '-' (standard input) cannot be given with other files")
        raise typer.Exit(EXIT_USAGE)
    failed = changed = False
    try:
        for name in _paths(files):
            try:
                before = _read(name)
                after = _format(name, before)
            except _Failed:
                failed = True
                continue
            if after == before:
                if name == STDIN and not check and not diff:
                    _stdout(after)
                continue
            changed = True
            if diff:
                write(_diff(name, before, after))
            if check:
                err(f"would reformat {'<stdin>' if name == STDIN else name}")
            elif diff:
                continue
            elif name == STDIN:
                _stdout(after)
            else:
                try:
                    _write(name, after)
                except _Failed:
                    failed = True
                    continue
                err(f"reformatted {name}")
        sys.stdout.flush()
    except OutputFailed as failure:
        raise typer.Exit(output_failed(failure)) from None
    if failed or (check and changed):
        raise typer.Exit(EXIT_CHECK)
