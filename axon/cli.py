"""The `axon` command: check, run and trace AXON programs, and open the REPL.

This is the only place that prints and configures logging. User mistakes are
reported as diagnostics (exit 1 for check errors, 2 for runtime errors); a bug
in AXON itself prints a short "internal error" line (set `AXON_DEBUG=1` for the
traceback) and exits 3.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from axon.errors import AxonCheckError, AxonError, AxonRuntimeError
from axon.render import format_event, format_record

app = typer.Typer(
    name="axon",
    help="AXON: check, run and explore programs with real, persistent memory.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

EXIT_CHECK = 1
EXIT_RUNTIME = 2
EXIT_INTERNAL = 3


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")


def _internal(exc: BaseException) -> NoReturn:
    if os.environ.get("AXON_DEBUG"):
        traceback.print_exception(exc)
    else:
        _err(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in AXON, not in your program. "
            "Set AXON_DEBUG=1 to see the traceback."
        )
    raise typer.Exit(EXIT_INTERNAL)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        _err(f"{path}: error: no such file")
    except IsADirectoryError:
        _err(f"{path}: error: is a directory, not an .axon file")
    except UnicodeDecodeError as exc:
        _err(f"{path}: error: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        _err(f"{path}: error: cannot read ({exc.strerror})")
    raise typer.Exit(EXIT_CHECK)


def _read_source(path: Path) -> str:
    """A program file, bounded in size (`axon.source.read_source`); exit 1 when unreadable."""
    from axon.source import SourceError, read_source

    try:
        return read_source(path)
    except SourceError as exc:
        _err(str(exc))
    raise typer.Exit(EXIT_CHECK)


def _configure_logging(verbose: bool) -> None:
    import logging

    import structlog

    level = logging.DEBUG if verbose else logging.WARNING
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
    )


def _print_warnings(warnings: Any, source: Any) -> None:
    for warning in warnings:
        _err(warning.render(source))


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
    from axon.source import Source

    if dump not in (None, "ast", "ir"):
        _err(f"error: --dump takes 'ast' or 'ir', not '{dump}'")
        raise typer.Exit(2)
    if dump and len(files) != 1:
        _err("error: --dump takes exactly one file")
        raise typer.Exit(2)
    failed = False
    for path in files:
        text = _read_source(path)
        source = Source(text, str(path))
        try:
            program = parse(text, str(path))
            if dump == "ast":
                print(json.dumps(to_data(program), indent=2, ensure_ascii=False))
                continue
            ir_program = check_program(program, source)
        except AxonError as exc:
            _err(str(exc))
            failed = True
            continue
        except Exception as exc:
            _internal(exc)
        _print_warnings(ir_program.warnings, source)
        if dump == "ir":
            print(json.dumps(ir_program.to_dict(), indent=2, ensure_ascii=False))
    if failed:
        raise typer.Exit(EXIT_CHECK)


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
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log to stderr.")] = False,
) -> None:
    """Check and run FILE, printing every remember and recall."""
    from axon.runtime.session import Session

    _configure_logging(verbose)
    if pg_dsn:
        os.environ["AXON_PG_DSN"] = pg_dsn
    text = _read_source(file)
    session = None
    code = 0
    try:
        session = Session(memory_dir=memory_dir)
        try:
            records = session.execute(text, str(file))
        except AxonCheckError as exc:
            _err(str(exc))
            code = EXIT_CHECK
            records = []
        except AxonRuntimeError as exc:
            _err(str(exc))
            code = EXIT_RUNTIME
            records = []
        except AxonError as exc:
            _err(str(exc))
            code = EXIT_RUNTIME if exc.span.line == 0 else EXIT_CHECK
            records = []
        _print_warnings(session.warnings, None)
        for record in records:
            if as_json:
                print(json.dumps(record, ensure_ascii=False, default=str))
            else:
                print(format_record(record))
        if trace is not None:
            payload = {"program": str(file), **session.tracer.to_dict()}
            trace.write_text(json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n")
    except AxonError as exc:
        _err(str(exc))
        code = EXIT_RUNTIME
    except Exception as exc:
        _internal(exc)
    finally:
        if session is not None:
            try:
                session.close()
            except AxonError as exc:  # e.g. a backend that failed to close
                _err(f"error: {exc}")
                code = code or EXIT_RUNTIME
            except Exception as exc:
                _internal(exc)
    if code:
        raise typer.Exit(code)


@app.command(name="trace")
def trace_cmd(
    file: Annotated[Path, typer.Argument(help="A trace file written by 'axon run --trace'.")],
) -> None:
    """Pretty-print a trace file: one line per event, time relative to the first."""
    text = _read(file)
    try:
        events = json.loads(text)["events"]
        if not isinstance(events, list):
            raise TypeError("'events' is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        _err(f"{file}: error: not an AXON trace file ({exc})")
        raise typer.Exit(EXIT_CHECK) from None
    start = events[0].get("timestamp", 0.0) if events else 0.0
    for event in events:
        if not isinstance(event, dict):
            continue
        offset = (event.get("timestamp", start) or start) - start
        print(f"{offset:>9.3f}s  {format_event(event)}")


@app.command()
def repl(
    file: Annotated[
        Path | None, typer.Argument(help="A program whose declarations to load first.")
    ] = None,
    memory_dir: Annotated[
        Path | None,
        typer.Option("--memory-dir", help="Where persistent memories live (default ./.axon)."),
    ] = None,
) -> None:
    """Start an interactive session (memory persists across inputs)."""
    from axon.repl import main as repl_main

    try:
        code = repl_main(file=file, memory_dir=memory_dir)
    except Exception as exc:
        _internal(exc)
    if code:
        raise typer.Exit(code)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
