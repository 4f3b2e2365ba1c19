"""What the `axon` commands share to talk to a terminal: exit codes, stdout and stderr, logging.

`axon` (cli.py) and `axon memory` (cli_memory.py, cli_store.py, cli_transfer.py) both
write through these, so a closed pipe, a full disk or a connection-string password is
handled the same way everywhere: `out` raises `OutputFailed` when stdout cannot take more,
`output_failed` turns that into a quiet exit (closed pipe) or one line (full
disk), `err` never raises and redacts secrets, `internal` reports a bug in AXON
without a traceback unless `AXON_DEBUG` is set. Both `out` and `err` show control
characters as escapes (`axon.render.visible`): what they print may be stored text.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, NoReturn, TextIO

import typer

from axon.redaction import redact_secrets
from axon.render import visible

EXIT_CHECK = 1
EXIT_USAGE = 2
EXIT_RUNTIME = 3
EXIT_INTERNAL = 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT: Ctrl-C
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell reports for `yes | head -1`


class OutputFailed(Exception):
    """Writing to stdout failed: `errno` None for a closed pipe, else the OSError."""

    def __init__(self, error: OSError | None) -> None:
        super().__init__(str(error))
        self.error = error


def err(text: str) -> None:
    """One message on stderr (connection-string passwords blanked, control characters
    shown as escapes: `render.visible`); never raises."""
    try:
        sys.stderr.write(visible(redact_secrets(text)) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed or full: nowhere left to say it
        pass


def colour_on(stream: TextIO) -> bool:
    """Whether to write colour to `stream`: a terminal, `NO_COLOR` unset, `TERM` not dumb
    (`FORCE_COLOR`, set and not empty, turns it on for any stream)."""
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def err_diagnostic(text: str) -> None:
    """`err` for rendered diagnostics: their source lines highlighted by the `axon` lexer
    when stderr takes colour (`colour_on`), plain otherwise."""
    if not colour_on(sys.stderr):
        err(text)
        return
    from axon.highlight import colour_excerpts

    try:
        sys.stderr.write(colour_excerpts(visible(redact_secrets(text))) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed or full: nowhere left to say it
        pass


def internal(exc: BaseException) -> NoReturn:
    if os.environ.get("AXON_DEBUG"):
        err("".join(traceback.format_exception(exc)).rstrip())
    else:
        err(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in AXON, not in your program. "
            "Set AXON_DEBUG=1 to see the traceback."
        )
    raise typer.Exit(EXIT_INTERNAL)


def out(text: str) -> None:
    """`text` and a newline on stdout, `visible` (control characters as escapes: JSON goes
    through `render.terminal_json` first, which leaves it unchanged); raises
    `OutputFailed` when stdout is closed or full."""
    try:
        sys.stdout.write(visible(text) + "\n")
    except BrokenPipeError:
        raise OutputFailed(None) from None
    except OSError as exc:
        raise OutputFailed(exc) from None


def write(text: str) -> None:
    """`text` on stdout without a newline, as `out` writes it (a long line in parts)."""
    try:
        sys.stdout.write(visible(text))
    except BrokenPipeError:
        raise OutputFailed(None) from None
    except OSError as exc:
        raise OutputFailed(exc) from None


def flush() -> None:
    """Flush stdout (a full disk or a closed pipe shows up here); raises `OutputFailed`."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise OutputFailed(None) from None
    except OSError as exc:
        raise OutputFailed(exc) from None


def output_failed(failure: OutputFailed) -> int:
    """Report a failed stdout (quietly for a closed pipe); returns the exit code.

    Whatever is still buffered would fail again when Python flushes stdout at
    exit, so stdout is pointed at /dev/null first.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    if failure.error is None:
        return EXIT_CLOSED_PIPE
    err(f"error: cannot write the output: {failure.error.strerror or failure.error}")
    return EXIT_CHECK


def configure_logging(verbose: bool) -> None:
    """structlog to stderr (debug with -v, else warnings); library loggers only with -v.

    Without -v the standard `logging` tree (psycopg_pool logs every failed
    reconnection there) gets a handler that drops everything, so stderr holds
    only AXON's own error message. Without -v structlog is not even imported
    unless something already loaded it (it loads rich: ~60 ms of start-up): left
    unconfigured, the tracer, AXON's only structlog user, logs nothing, as the
    warning level would have dropped its debug entries anyway. Log lines quote event
    data (keys, queries), so they show control characters as escapes too.
    """
    import logging

    root = logging.getLogger()
    handler: logging.Handler
    if verbose:

        class VisibleFormatter(logging.Formatter):  # a log line may quote stored text
            def format(self, record: logging.LogRecord) -> str:
                return visible(super().format(record))

        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(VisibleFormatter("%(levelname)s %(name)s: %(message)s"))
        root.setLevel(logging.DEBUG)
    else:
        handler = logging.NullHandler()  # found by the tree, so `logging.lastResort` is not
    root.addHandler(handler)
    if not verbose and "structlog" not in sys.modules:
        return  # nothing in the process logs through structlog yet: no need to load it
    import structlog

    level = logging.DEBUG if verbose else logging.WARNING
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.dev.ConsoleRenderer(colors=False),
            _visible_line,  # the rendered line: event data may be stored text
        ],
    )


def _visible_line(logger: Any, method: str, line: Any) -> str:
    """structlog's last step: the rendered line with control characters as escapes."""
    return visible(str(line))
