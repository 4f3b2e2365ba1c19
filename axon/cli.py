"""The `axon` command: check, run and trace AXON programs, and open the REPL.

This is the only place that prints and configures logging. Exit codes (one
meaning each, documented in docs/cli.md): 0 success; 1 the program has errors
or a file cannot be read or written (a source file, a trace file, the output);
2 a bad command line (click's convention: unknown option, `--trace` into a
missing directory); 3 a statement failed while running; 4 an internal error (a
bug in AXON: a short line, `AXON_DEBUG=1` for the traceback); 141 stdout was
closed early (`axon run ... | head -1`: quiet, as a tool killed by SIGPIPE).
Everything printed to stderr goes through `redact_secrets`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from axon.cli_fmt import fmt_cmd
from axon.cli_output import (
    EXIT_CHECK,
    EXIT_INTERRUPTED,
    EXIT_RUNTIME,
    EXIT_USAGE,
    OutputFailed,
    configure_logging,
    err,
    err_diagnostic,
    flush,
    internal,
    out,
    output_failed,
)
from axon.cli_vectors import EMBED_WAIT_HELP
from axon.errors import AxonCheckError, AxonError, AxonRuntimeError
from axon.files import replacing
from axon.redaction import redact_secrets
from axon.render import format_event, format_record, terminal_json
from axon.trace_files import MAX_TRACE_BYTES, BadTraceFile, trace_events

app = typer.Typer(
    name="axon",
    help="AXON: check, run and explore programs with real, persistent memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        err(f"{path}: error: no such file")
    except IsADirectoryError:
        err(f"{path}: error: is a directory, not an .axon file")
    except UnicodeDecodeError as exc:
        err(f"{path}: error: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        err(f"{path}: error: cannot read ({exc.strerror})")
    raise typer.Exit(EXIT_CHECK)


def _read_source(path: Path) -> str:
    """A program file, bounded in size (`axon.source.read_source`); exit 1 when unreadable."""
    from axon.source import SourceError, read_source

    try:
        return read_source(path)
    except SourceError as exc:
        err(str(exc))
    raise typer.Exit(EXIT_CHECK)


NAMESPACE_HELP = "Read and write only in namespace P, e.g. acme/u42 (default $AXON_NAMESPACE)."


def _namespace(written: str | None) -> Any:
    """--namespace (else AXON_NAMESPACE, else the root) checked; exit 1 naming the rule."""
    from axon.memory.namespaces import ENV, Namespace

    try:
        if written is None:
            return Namespace.from_env()
        return Namespace.of(written, what="--namespace")
    except AxonError as exc:
        origin = "" if written is not None else f" (from ${ENV})"
        err(f"error: {exc}{origin}")
    raise typer.Exit(EXIT_CHECK)


def _print_warnings(warnings: Iterable[Any], source: Any) -> None:
    for warning in warnings:
        err_diagnostic(warning.render(source))


def _version(value: bool) -> None:
    if value:
        from axon import __version__

        typer.echo(f"axon {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """AXON: check, run and explore programs with real, persistent memory."""


@app.command()
def check(
    files: Annotated[list[Path], typer.Argument(help="AXON source files to check.")],
    dump: Annotated[
        str | None, typer.Option("--dump", help="Print the 'ast' or 'ir' of the file as JSON.")
    ] = None,
) -> None:
    """Parse and check FILES; print every diagnostic (exit 1 if there is an error)."""
    from axon.compiler.ast import to_data
    from axon.compiler.checker import check as check_program
    from axon.compiler.parser import parse
    from axon.source import Source, SourceError, read_source

    if dump not in (None, "ast", "ir"):
        err(f"error: --dump takes 'ast' or 'ir', not '{dump}'")
        raise typer.Exit(EXIT_USAGE)
    if dump and len(files) != 1:
        err("error: --dump takes exactly one file")
        raise typer.Exit(EXIT_USAGE)
    failed = False
    for path in files:
        try:
            text = read_source(path)
        except SourceError as exc:  # reported; the other files are still checked
            err(str(exc))
            failed = True
            continue
        source = Source(text, str(path))
        try:
            program = parse(text, str(path))
            if dump == "ast":
                _dump(to_data(program))
                continue
            ir_program = check_program(program, source)
        except AxonError as exc:
            err_diagnostic(str(exc))
            failed = True
            continue
        except Exception as exc:
            internal(exc)
        _print_warnings(ir_program.warnings, source)
        if dump == "ir":
            _dump(ir_program.to_dict())
    if failed:
        raise typer.Exit(EXIT_CHECK)


app.command(name="fmt")(fmt_cmd)


def _dump(data: Any) -> None:
    """`check --dump`: JSON on stdout, DSN passwords blanked (see docs/cli.md)."""
    try:
        out(redact_secrets(terminal_json(data, indent=2)))
        flush()
    except OutputFailed as failure:
        raise typer.Exit(output_failed(failure)) from None


def _check_trace_target(path: Path) -> None:
    """Exit 2 before anything runs when the `--trace` file could not be written."""
    parent = path.parent if str(path.parent) else Path(".")
    problem = None
    if path.is_dir():
        problem = "is a directory"
    elif not parent.exists():
        problem = f"directory {parent} does not exist"
    elif not parent.is_dir():
        problem = f"{parent} is not a directory"
    elif not os.access(parent, os.W_OK | os.X_OK):
        problem = f"directory {parent} is not writable"
    elif path.exists() and not os.access(path, os.W_OK):
        problem = "is not writable"
    if problem:
        err(f"error: --trace {path}: {problem}")
        raise typer.Exit(EXIT_USAGE)


def _write_trace(path: Path, payload: Mapping[str, Any]) -> bool:
    """Write the trace file whole or not at all (`files.replacing`)."""
    text = redact_secrets(json.dumps(payload, indent=2, ensure_ascii=False, default=str)) + "\n"
    try:
        with replacing(path) as handle:
            handle.write(text)
    except OSError as exc:
        err(f"{path}: error: cannot write the trace file ({exc.strerror or exc})")
        return False
    return True


@app.command()
def run(
    file: Annotated[Path, typer.Argument(help="The AXON program to run.")],
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Write the trace events to this JSON file.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per remember/recall.")
    ] = False,
    memory_dir: Annotated[
        Path | None,
        typer.Option("--memory-dir", help="Where persistent memories live (default ./.axon)."),
    ] = None,
    pg_dsn: Annotated[
        str | None,
        typer.Option("--pg-dsn", help="PostgreSQL DSN for pgvector memories (else AXON_PG_DSN)."),
    ] = None,
    embed_wait: Annotated[
        str | None, typer.Option("--embed-wait", metavar="SECONDS|all", help=EMBED_WAIT_HELP)
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            metavar="P",
            help=NAMESPACE_HELP,
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log to stderr.")] = False,
) -> None:
    """Check and run FILE, printing every remember and recall."""
    from axon.cli_store import Failed
    from axon.cli_vectors import command_wait_progress, embed_wait_text
    from axon.runtime.session import Session
    from axon.source import Source

    configure_logging(verbose)
    try:
        wait = embed_wait_text(embed_wait)
    except Failed as fail:
        err(str(fail))
        raise typer.Exit(fail.code) from None
    space = _namespace(namespace)
    if trace is not None:
        _check_trace_target(trace)
    text = _read_source(file)
    session = None
    code = 0
    try:
        # one program: every record is printed and every event goes to --trace
        session = Session(
            memory_dir=memory_dir, pg_dsn=pg_dsn or None, history=None, embed_wait=wait,
            namespace=space,
        )
        session.memories.wait_progress = command_wait_progress  # a wait is never silent
        records: Iterable[Mapping[str, Any]] = ()
        failure: AxonError | str | None = None
        try:
            records = session.execute(text, str(file))
        except KeyboardInterrupt:
            # Ctrl-C: the statement running was cancelled (its write is whole or not
            # made); those before it took effect and are printed, then one line, exit 130.
            failure, code = "interrupted", EXIT_INTERRUPTED
            records = list(session.executor.run_records)
        except AxonCheckError as exc:
            failure, code = exc, EXIT_CHECK
        except AxonRuntimeError as exc:
            # What ran before the failing statement took effect: show it, then the error.
            failure, code, records = exc, EXIT_RUNTIME, exc.records
        except AxonError as exc:
            failure, code = exc, EXIT_RUNTIME if exc.span.line == 0 else EXIT_CHECK
        _print_warnings(session.warnings, Source(text, str(file)))
        try:
            for record in records:
                if as_json:
                    out(terminal_json(record))
                else:
                    out(format_record(record))
            flush()
        except OutputFailed as output_failure:
            code = code or output_failed(output_failure)
        if failure is not None:
            err(str(failure))
        if trace is not None:
            payload = {"program": str(file), **session.tracer.to_dict()}
            if not _write_trace(trace, payload):
                code = code or EXIT_CHECK
    except AxonError as exc:
        err(str(exc))
        code = EXIT_RUNTIME
    except KeyboardInterrupt:  # outside the program's statements: starting or printing
        err("interrupted")
        code = EXIT_INTERRUPTED
    except Exception as exc:
        internal(exc)
    finally:
        if session is not None:
            try:
                session.close()
            except AxonError as exc:  # e.g. a backend that failed to close
                err(f"error: {exc}")
                code = code or EXIT_RUNTIME
            except Exception as exc:
                internal(exc)
    if code:
        raise typer.Exit(code)


def _load_trace(path: Path) -> list[dict[str, Any]]:
    """The events of the trace file at `path`, checked; exits 1 with a clear error if bad."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0  # `_read` reports a missing or unreadable file
    if size > MAX_TRACE_BYTES:
        err(
            f"{path}: error: {size:,} bytes is too large for a trace file "
            f"(at most {MAX_TRACE_BYTES // (1024 * 1024)} MiB)"
        )
        raise typer.Exit(EXIT_CHECK)
    text = _read(path).removeprefix("\ufeff")  # a byte-order mark some editors write
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"{path}:{exc.lineno}:{exc.colno}"
        err(f"{where}: error: not an AXON trace file: not JSON ({exc.msg})")
        raise typer.Exit(EXIT_CHECK) from None
    except (ValueError, RecursionError) as exc:  # a 5,000-digit number, 100,000 '['
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        err(f"{path}: error: not an AXON trace file ({reason})")
        raise typer.Exit(EXIT_CHECK) from None
    try:
        return trace_events(data)
    except BadTraceFile as exc:
        err(f"{path}: error: not an AXON trace file: {exc}")
        raise typer.Exit(EXIT_CHECK) from None


@app.command(name="trace")
def trace_cmd(
    file: Annotated[Path, typer.Argument(help="A trace file written by 'axon run --trace'.")],
) -> None:
    """Pretty-print a trace file: one line per event, time relative to the first."""
    events = _load_trace(file)
    start = next((e["timestamp"] for e in events if e.get("timestamp") is not None), 0.0)
    try:
        for event in events:
            stamp = event.get("timestamp")
            offset = float(stamp if stamp is not None else start) - float(start)
            out(redact_secrets(f"{offset:>9.3f}s  {format_event(event)}"))
        flush()
    except OutputFailed as failure:
        raise typer.Exit(output_failed(failure)) from None
    except Exception as exc:
        internal(exc)


@app.command()
def repl(
    file: Annotated[
        Path | None, typer.Argument(help="A program whose declarations to load first.")
    ] = None,
    memory_dir: Annotated[
        Path | None,
        typer.Option("--memory-dir", help="Where persistent memories live (default ./.axon)."),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            metavar="P",
            help=NAMESPACE_HELP,
        ),
    ] = None,
) -> None:
    """Start an interactive session (memory persists across inputs)."""
    from axon.repl import main as repl_main

    configure_logging(False)
    space = _namespace(namespace)
    try:
        code = repl_main(file=file, memory_dir=memory_dir, namespace=space)
    except Exception as exc:
        internal(exc)
    if code:
        raise typer.Exit(code)


@app.command(name="mcp")
def mcp_cmd(
    memory_dir: Annotated[
        Path | None,
        typer.Option("--memory-dir", help="Where persistent memories live (default ./.axon)."),
    ] = None,
    pg_dsn: Annotated[
        str | None,
        typer.Option("--pg-dsn", help="PostgreSQL DSN for pgvector memories (else AXON_PG_DSN)."),
    ] = None,
    program: Annotated[
        Path | None,
        typer.Option("--program", help="Serve a memory this program declares."),
    ] = None,
    memory: Annotated[
        str | None,
        typer.Option("--memory", help="Which memory of --program (default AgentMemory)."),
    ] = None,
    namespace: Annotated[
        str | None,
        typer.Option(
            "--namespace",
            metavar="P",
            help="Serve only namespace P, e.g. acme/u42 (default $AXON_NAMESPACE, else the root).",
        ),
    ] = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")
    ] = False,
    host: Annotated[
        str, typer.Option("--host", help="HTTP address (a loopback one).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.")] = 8765,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log to stderr.")] = False,
) -> None:
    """Serve the `memory` tool (write, read, update, list, search, delete, associate) over the Model
    Context Protocol (stdio by default)."""
    from axon.mcp_server.command import run_command

    configure_logging(verbose)
    try:
        code = run_command(
            memory_dir=memory_dir,
            pg_dsn=pg_dsn or None,
            program=program,
            memory=memory,
            namespace=namespace,
            http=http,
            host=host,
            port=port,
        )
    except Exception as exc:
        internal(exc)
    if code:
        raise typer.Exit(code)


@app.command(name="lsp")
def lsp_cmd(
    stdio: Annotated[
        bool, typer.Option("--stdio", help="Talk over stdin/stdout (the default; editors pass it).")
    ] = True,
) -> None:
    """Serve the AXON language server (diagnostics, completion, hover, definition, references,
    rename, symbols, formatting) over stdio, for editors: docs/editors.md."""
    from axon.errors import extra_hint

    try:
        from axon.lsp.server import serve
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in ("pygls", "lsprotocol"):
            err("error: axon lsp needs pygls, which is not installed: " + extra_hint("lsp"))
            raise typer.Exit(EXIT_USAGE) from None
        raise
    try:
        serve()
    except Exception as exc:
        internal(exc)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    # `python -m axon.cli`: run the app of the module `axon.cli`, the one `axon memory`
    # (which imports this module's helpers) is registered on.
    from axon.cli import main as package_main

    package_main()
else:
    from axon.cli_memory import memory_app
    from axon.cli_studio import studio_cmd

    app.add_typer(memory_app, name="memory")
    app.command(name="studio")(studio_cmd)
