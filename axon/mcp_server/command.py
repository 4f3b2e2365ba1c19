"""`axon mcp`: check the options, open the memory, serve until the client goes away.

Called by `axon.cli` (which registers the command and imports this module only
when it runs). Messages go to stderr, never stdout: on the stdio transport stdout
carries the protocol. Exit codes are `axon.cli`'s: 2 a bad command line (also a
missing `mcp` SDK, an unknown `--memory`, a non-loopback `--host`), 1 a program
with errors, 3 a memory that cannot be opened.
"""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path

from axon.cli_output import EXIT_CHECK, EXIT_USAGE, err
from axon.errors import extra_hint

DEFAULT_PORT = 8765
"""`axon mcp --http`'s port unless `--port` says otherwise."""

MISSING_SDK = "error: axon mcp needs the MCP SDK, which is not installed: " + extra_hint("mcp")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run_command(
    *,
    memory_dir: Path | None,
    pg_dsn: str | None,
    program: Path | None,
    memory: str | None,
    http: bool,
    namespace: str | None = None,
    host: str,
    port: int,
) -> int:
    """Run `axon mcp`; returns the exit code (0 when the client closed the connection)."""
    if memory_dir is not None and pg_dsn is not None:
        err("error: give --memory-dir or --pg-dsn, not both")
        return EXIT_USAGE
    if not http and (host != "127.0.0.1" or port != DEFAULT_PORT):
        err("error: --host and --port need --http (the default transport is stdio)")
        return EXIT_USAGE
    if http and not _loopback(host):
        err(f"error: --host {host}: axon mcp has no authentication, so it serves only on "
            "a loopback address (127.0.0.1, ::1, localhost)")
        return EXIT_USAGE
    if not 0 < port < 65536:
        err(f"error: --port {port}: a port is from 1 to 65535")
        return EXIT_USAGE
    from axon.errors import AxonError
    from axon.memory.namespaces import Namespace

    try:  # checked before anything is opened
        space = (
            Namespace.from_env() if namespace is None
            else Namespace.of(namespace, what="--namespace")
        )
    except AxonError as exc:
        err(f"error: {exc}")
        return EXIT_USAGE
    try:
        from axon.mcp_server import server
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] in ("mcp", "mcp_types"):
            err(MISSING_SDK)
            return EXIT_USAGE
        raise
    text = None
    if program is not None:
        from axon.source import SourceError, read_source

        try:
            text = read_source(program)
        except SourceError as exc:
            err(str(exc))
            return EXIT_CHECK
    from axon.mcp_server.target import SetupError, open_tool

    async def main() -> None:
        tool = await open_tool(
            memory_dir=memory_dir, pg_dsn=pg_dsn, program=program, program_text=text,
            memory=memory, warn=err, namespace=space,
        )
        try:
            if http:
                where = "" if space.is_root else f" in namespace {space.text}"
                err(f"axon mcp: memory '{tool.memory}'{where} on http://{host}:{port}/mcp")
                await server.serve_http(tool, host, port)
            else:
                await server.serve_stdio(tool)
        finally:
            await tool.session.close()

    try:
        asyncio.run(main())
    except SetupError as exc:
        err(str(exc))
        return exc.code
    except KeyboardInterrupt:
        return 0
    return 0
