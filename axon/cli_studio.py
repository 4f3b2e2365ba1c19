"""`axon studio`: a store's options and trace files in, AXON Studio served on a local
address out (printed with its token; docs/studio.md).

The store options are `axon memory`'s (`axon.cli_store.store_command`: `--memory-dir`
and every registered backend's, `--pg-dsn`/`--pg`, `--pg-schema`, `--chroma`); the app
itself is `axon.studio`. A missing Starlette or uvicorn, an address that cannot be bound
or a store that cannot be opened is one line on stderr and an exit code, never a
traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from axon import cli_output as out
from axon.cli_store import Failed, Store, store_command
from axon.errors import AxonError

Traces = Annotated[
    list[Path] | None,
    typer.Option("--trace", help="A trace file (axon run --trace) to show (repeatable)."),
]


def _say(text: str) -> None:
    out.out(text)
    out.flush()  # the address must show at once: the server runs until interrupted


@store_command
def studio_cmd(
    trace: Traces = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (warns unless loopback).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (0: a free one).")] = 8470,
    write: Annotated[
        bool, typer.Option("--write", help="Allow forgetting, updating and purging entries.")
    ] = False,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Do not open a browser.")
    ] = False,
    *,
    store: Store,
) -> None:
    """Serve AXON Studio: look at a store's memories, searches, entries and traces in a
    browser (a local address with a secret token)."""
    from axon.studio import serve

    out.configure_logging(False)
    if not 0 <= port <= 65535:
        out.err(f"error: --port must be from 0 to 65535, not {port}")
        raise typer.Exit(out.EXIT_USAGE)
    try:
        serve(
            store={  # the store the options chose, whichever registered backend holds it
                "backend": store.backend_name, "location": store.location,
                "settings": store.settings, "memory_dir": store.memory_dir,
                "label": store.label, "open_backend": store.open, "exists": store.exists,
            },
            traces=list(trace or []), host=host, port=port,
            write=write, open_browser=not no_open,
            say=_say, warn=out.err,
        )
    except Failed as fail:
        out.err(str(fail))
        raise typer.Exit(fail.code) from None
    except AxonError as exc:
        text = " ".join(str(exc).split()).removeprefix("error: ")  # AxonError's own prefix
        out.err(f"error: {text}")
        raise typer.Exit(out.EXIT_RUNTIME) from None
    except KeyboardInterrupt:
        raise typer.Exit(out.EXIT_INTERRUPTED) from None
    except Exception as exc:
        out.internal(exc)
