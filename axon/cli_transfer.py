"""`axon memory export` and `import`: memories out to the JSON Lines export format, and back in.

The format and what an import keeps are `axon.memory.transfer`'s; here are the command
lines around it: an export to `-o FILE` is written to a temporary file and renamed over
FILE (whole or not at all), an export to stdout turns a closed pipe into the usual exit
code, and an import reads a file or stdin with a progress bar in bytes. Registered on
the `axon memory` group by `axon.cli_memory`.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from axon import cli_output as out
from axon.cli_store import (
    AsJson,
    Failed,
    Store,
    embedder_or_fail,
    json_flag,
    missing_store,
    opened,
    progress,
    require_memory,
    run,
    say,
    say_json,
)
from axon.cli_vectors import pending_lines
from axon.files import replacing
from axon.memory.backend import (
    MemoryBackend,
)
from axon.memory.lifetimes import is_reserved
from axon.render import counted


def export_cmd(
    ctx: typer.Context,
    memories: Annotated[
        list[str] | None, typer.Argument(help="The memories to export (default: all).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to FILE (else stdout).")
    ] = None,
    with_vectors: Annotated[
        bool,
        typer.Option(
            "--with-vectors", help="Also write each entry's stored vector (with its model)."
        ),
    ] = False,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """Write memories in the JSON Lines export format (docs/cli.md), oldest entry first."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        from axon.memory.transfer import export_memories, export_plan, split_shown

        if output is not None:
            _check_output(output)
        if not store.exists():
            if memories:
                raise missing_store(store, memories[0])
            raise missing_store(store)
        async with opened(store, embedder=with_vectors) as backend:
            # the memories of the namespace and of every namespace below it
            plan = await export_plan(backend, store.namespace, memories or None)
            found = {split_shown(shown)[1] for shown, count in plan.items() if count}
            for name in memories or []:
                if name not in found:
                    await require_memory(backend, store, name)
            names = list(memories) if memories else None
            with progress("exporting", sum(plan.values())) as advance:
                if output is None:
                    report = await export_memories(
                        backend, _Stdout(), names, progress=advance, with_vectors=with_vectors,
                        namespace=store.namespace,
                    )
                else:
                    report = await _export_file(
                        backend, output, names, advance, with_vectors, store
                    )
        if output is not None:
            if wants_json:
                say_json({"op": "export", "file": str(output), **report.to_dict()})
            else:
                vectors = f" (with {report.vectors_kept:,} vectors)" if with_vectors else ""
                say(
                    f"exported {counted(report.entries, 'entry', 'entries')} of "
                    f"{counted(len(report.memories), 'memory', 'memories')} to {output}{vectors}"
                )

    run(body)


def _check_output(path: Path) -> None:
    """Exit 1 before anything is read when `-o FILE` could not be written."""
    parent = path.parent if str(path.parent) else Path(".")
    problem = None
    if path.is_dir():
        problem = "is a directory"
    elif not parent.is_dir():
        problem = f"directory {parent} does not exist"
    elif not os.access(parent, os.W_OK | os.X_OK):
        problem = f"directory {parent} is not writable"
    if problem:
        raise Failed(f"{path}: error: cannot write the export: {problem}", out.EXIT_CHECK)


async def _export_file(
    backend: MemoryBackend,
    path: Path,
    names: list[str] | None,
    advance: Callable[[int], None],
    with_vectors: bool,
    store: Store,
) -> Any:
    """Export into `path`, whole or not at all (`files.replacing`)."""
    from axon.memory.transfer import export_memories

    try:
        with replacing(path) as handle:
            report = await export_memories(
                backend, handle, names, progress=advance, with_vectors=with_vectors,
                namespace=store.namespace,
            )
    except OSError as exc:
        raise Failed(
            f"{path}: error: cannot write the export ({exc.strerror or exc})", out.EXIT_CHECK
        ) from None
    return report


class _Stdout(io.TextIOBase):
    """stdout for the export: a closed pipe or a full disk become `out.OutputFailed`."""

    def write(self, text: str) -> int:
        try:
            sys.stdout.write(text)
        except BrokenPipeError:
            raise out.OutputFailed(None) from None
        except OSError as exc:
            raise out.OutputFailed(exc) from None
        return len(text)


def import_cmd(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="An export file ('-' for stdin).")],
    into: Annotated[
        str | None, typer.Option("--into", help="Put every entry into this memory.")
    ] = None,
    as_json: AsJson = False,
    *,
    store: Store,
) -> None:
    """Store the entries of an export FILE (importing the same file twice adds nothing)."""
    wants_json = json_flag(ctx, as_json)

    async def body() -> None:
        from axon.compiler.check_options import memory_name_problem
        from axon.memory.transfer import import_memories, read_lines

        if into is not None:  # a bad option value: exit 2
            problem = (
                "names starting with the owned-scope marker are reserved"
                if is_reserved(into)
                else memory_name_problem(into)
            )
            if problem is not None:
                raise Failed(
                    f"error: --into {into!r} is not a memory name that can be imported "
                    f"into: {problem}",
                    out.EXIT_USAGE,
                )
        with _open_input(file) as (handle, size):
            source = "<stdin>" if str(file) == "-" else str(file)
            # With the model attached, vectors of that model in the file are kept; a
            # model that cannot run here only means every vector is dropped.
            try:
                embedder_or_fail()
                wants_model = True
            except Failed:
                wants_model = False
            async with opened(store, embedder=wants_model) as backend:
                with progress("importing", size) as advance:
                    lines = read_lines(handle, source)
                    tell = _byte_progress(handle, advance) if size else None
                    report = await import_memories(
                        backend,
                        lines,
                        source=source,
                        into=into,
                        progress=tell,
                        addressable=addressable,
                        # under --namespace P (or AXON_NAMESPACE); the root: as written
                        namespace=None if store.namespace.is_root else store.namespace,
                    )
                # Vectors are computed when a recall needs them, not here: say so
                # (never a silent wait later), with the command that computes them now.
                pending, notes = await pending_lines(
                    backend, list(report.memories), store.options()
                )
        if wants_json:
            say_json(
                {
                    "op": "import",
                    "file": source,
                    **report.to_dict(),
                    "vectors_pending": sum(pending.values()),
                }
            )
        else:
            skipped = (
                f" ({report.skipped_expired:,} already expired, skipped)"
                if report.skipped_expired
                else ""
            )
            vectors = ""
            if report.vectors_kept or report.vectors_dropped:
                vectors = f"; {report.vectors_kept:,} vectors kept"
                if report.vectors_dropped:
                    vectors += (
                        f", {report.vectors_dropped:,} of another model dropped "
                        "(those entries are embedded again)"
                    )
            say(
                f"imported {counted(report.entries, 'entry', 'entries')} into "
                f"{counted(len(report.memories), 'memory', 'memories')}"
                f"{skipped}{vectors}"
            )
            for note in notes:
                say(note)

    run(body)


def addressable(memory: str, key: str) -> str | None:
    """Why no program could name `memory` or `key` (`transfer.Addressable`): the
    checker's rules for a declared memory's name and for a key."""
    from axon.compiler.check_options import key_problem, memory_name_problem

    problem = memory_name_problem(memory)
    if problem is not None:
        return f"{problem}; import its entries with --into NAME"
    return key_problem(key, "")


def _byte_progress(handle: Any, advance: Callable[[int], None]) -> Callable[[int], None]:
    """Progress of an import in bytes read (the file's size is known, its entry count is not)."""

    def tell(_: int) -> None:
        with contextlib.suppress(OSError, ValueError):
            advance(handle.buffer.tell())

    return tell


@contextlib.contextmanager
def _open_input(path: Path) -> Iterator[tuple[Any, int | None]]:
    if str(path) == "-":
        yield sys.stdin, None
        return
    try:
        handle = open(path, encoding="utf-8", newline="")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise Failed(f"{path}: error: no such file", out.EXIT_CHECK) from None
    except IsADirectoryError:
        raise Failed(f"{path}: error: is a directory, not an export file", out.EXIT_CHECK) from None
    except OSError as exc:
        raise Failed(f"{path}: error: cannot read ({exc.strerror})", out.EXIT_CHECK) from None
    with handle:
        yield handle, os.fstat(handle.fileno()).st_size
