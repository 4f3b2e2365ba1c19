"""AXON Studio: a store and trace files in, a local web app that shows them out
(`axon studio`; docs/studio.md).

The package, by concept: `data` (the store through the public Python API, as plain
dicts), `traces` (trace files, checked, as a filterable timeline), `svg` (charts),
`templates` (escaped HTML parts), `pages` (each page's HTML), `auth` (token, cookie,
CSRF, security headers), `app` (the routes: pages, `/api/`, changes) and `serve` here,
which runs it with uvicorn. Starlette and uvicorn come with the `studio` extra (the
`mcp` extra brings them too); nothing is fetched from the network.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from axon.errors import AxonError, extra_hint

DEFAULT_PORT = 8470


class StudioUnavailable(AxonError):
    """Starlette or uvicorn is not installed."""


def require_stack() -> None:
    """Raise `StudioUnavailable` (with the install hint) unless Starlette and uvicorn
    import."""
    for module in ("starlette", "uvicorn"):
        try:
            __import__(module)
        except ImportError:
            raise StudioUnavailable(
                f"axon studio needs {module}: {extra_hint('studio')}"
            ) from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def store_arguments(
    memory_dir: Path | None = None,
    pg_dsn: str | None = None,
    pg_schema: str | None = None,
    chroma: str | None = None,
) -> dict[str, Any]:
    """`StudioData`'s store arguments for a memory directory (SQLite), a PostgreSQL DSN
    and schema, or a Chroma location (as `axon memory`'s options name them)."""
    if chroma:
        return {"backend": "chroma", "location": chroma, "memory_dir": memory_dir}
    if pg_dsn:
        settings = {"schema": pg_schema} if pg_schema else {}
        return {"backend": "pgvector", "location": pg_dsn, "settings": settings,
                "memory_dir": memory_dir}
    return {"backend": "sqlite", "memory_dir": memory_dir}


def serve(
    *,
    memory_dir: Path | None = None,
    pg_dsn: str | None = None,
    pg_schema: str | None = None,
    chroma: str | None = None,
    store: Mapping[str, Any] | None = None,
    traces: Sequence[Path] = (),
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    write: bool = False,
    open_browser: bool = True,
    say: Callable[[str], None] = print,
    warn: Callable[[str], None] = lambda text: print(text, file=sys.stderr),
) -> None:
    """Serve Studio until interrupted: bind (`port` 0 picks a free one), print the
    address with the token, open a browser unless told not to. The store is `store`
    (`StudioData`'s arguments: backend, location, settings, memory_dir...), else the
    one `memory_dir`, `pg_dsn` and `pg_schema`, or `chroma` name (`store_arguments`)."""
    require_stack()
    import uvicorn

    from axon.studio.app import Studio, build_app
    from axon.studio.data import StudioData

    if not is_loopback(host):
        warn(
            f"warning: serving on {host}, not a loopback address: anyone who can reach it "
            "and has the token can read the store"
            + (" and change it (--write)" if write else "")
        )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)  # connections wait from now on, while uvicorn starts
    except OSError as exc:
        sock.close()
        raise AxonError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = sock.getsockname()[1]
    arguments = dict(store) if store else store_arguments(memory_dir, pg_dsn, pg_schema, chroma)
    data = StudioData(**arguments)
    try:
        studio = Studio(data, traces, write=write)
        shown = f"[{host}]" if ":" in host else host
        address = f"http://{shown}:{bound}/?token={studio.token}"
        say(f"AXON Studio: {address}")
        if write:
            say("write mode: entries can be forgotten, changed and purged")
        if open_browser:
            import webbrowser

            webbrowser.open(address)
        config = uvicorn.Config(build_app(studio), log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        server.run(sockets=[sock])
    finally:
        sock.close()
        data.close()


__all__ = [
    "DEFAULT_PORT",
    "StudioUnavailable",
    "is_loopback",
    "require_stack",
    "serve",
    "store_arguments",
]
