"""`axon mcp` as a real process: the SDK's stdio client, streamable HTTP on a real port,
and the same entries seen by `axon run` of a program, the Python handle and the tool.

Every process here is started by the test and ended by it (or ends when its client
closes stdin). SQLite and PostgreSQL (`store` fixture) both run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_extra

require_extra("mcp", module_level=True)

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

import axon  # noqa: E402
from axon.mcp_server.target import default_declaration  # noqa: E402
from tests.mcp.conftest import Store, error, ok  # noqa: E402

PROGRAM = """\
memory AgentMemory {{ store: persistent backend: {backend} }}
memory Team {{ store: persistent backend: {backend} retrieval: keyword }}
"""


def _program(tmp_path: Path, store: Store, statements: str = "") -> Path:
    path = tmp_path / "agent.axon"
    path.write_text(PROGRAM.format(backend=store.backend) + statements, encoding="utf-8")
    return path


@contextlib.asynccontextmanager
async def stdio(store: Store, tmp_path: Path, *args: str) -> AsyncIterator[Client]:
    """`axon mcp ARGS` as a subprocess, driven by the SDK's stdio client."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "axon.cli", "mcp", *store.options(), *args],
        env=store.env,
        cwd=str(tmp_path),
    )
    with (tmp_path / "mcp-stderr.txt").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            yield client


def _run(store: Store, program: Path, tmp_path: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        store.axon("run", str(program), "--json", *store.options()),
        capture_output=True, text=True, env=store.env, cwd=tmp_path, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


async def test_a_stdio_subprocess_serves_the_tool_and_axon_run_sees_its_writes(
    store: Store, tmp_path: Path
) -> None:
    async with stdio(store, tmp_path) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == ["memory"]
        await ok(client, action="write", name="pref_units_20260203",
                 content="the user prefers metric units", tags=["prefs"])
        assert await error(client, action="write", content="no name") == (
            "name is required for write action"
        )
        found = await ok(client, action="search", query="metric units")
        assert found["results"][0]["name"] == "pref_units_20260203"
    program = _program(tmp_path, store, 'recall("metric units") from AgentMemory\n')
    (record,) = _run(store, program, tmp_path)
    assert [r["key"] for r in record["results"]][:1] == ["pref_units_20260203"]
    assert record["results"][0]["value"] == "the user prefers metric units"


async def test_what_axon_run_remembers_the_agent_reads_over_stdio(
    store: Store, tmp_path: Path
) -> None:
    program = _program(
        tmp_path, store,
        'remember("deploys happen on Tuesdays") -> Team with '
        '{ key: "deploy_day", type: reflex, importance: high, tags: ["ops"] }\n',
    )
    _run(store, program, tmp_path)
    served = tmp_path / "served.axon"
    served.write_text(program.read_text() + 'remember("only if run") -> Team with '
                      '{ key: "side_effect" }\n')
    async with stdio(store, tmp_path, "--program", str(served), "--memory", "Team") as client:
        memory = (await ok(client, action="read", name="deploy_day"))["memory"]
        assert memory["content"] == "deploys happen on Tuesdays"
        assert (memory["memory_type"], memory["importance"], memory["tags"]) == (
            "reflex", "high", ["ops"]
        )
        await ok(client, action="write", name="deploy_owner", content="ops team owns deploys",
                 related=["deploy_day"])
    check = _program(tmp_path, store, 'recall("deploys") from Team\n')
    (record,) = _run(store, check, tmp_path)
    assert sorted(r["key"] for r in record["results"]) == ["deploy_day", "deploy_owner"]
    # The served program's statements never ran: no "side_effect" entry.
    with axon.Session(**store.kwargs()) as session:
        session.execute(PROGRAM.format(backend=store.backend))
        assert sorted(e.key for e in session.memory("Team").list()) == [
            "deploy_day", "deploy_owner"
        ]


async def test_the_program_the_handle_and_the_tool_see_the_same_entries(
    store: Store, tmp_path: Path
) -> None:
    """A program remembers, the Python handle remembers, the agent writes over stdio;
    each of the three then sees all three entries."""
    _run(store, _program(tmp_path, store, 'remember("from the program") -> AgentMemory '
                                          'with { key: "p" }\n'), tmp_path)
    with axon.Session(**store.kwargs()) as session:
        session.execute(default_declaration(store.pg_dsn))
        session.memory("AgentMemory").remember("from the handle", key="h", type="dreams")
    async with stdio(store, tmp_path) as client:
        await ok(client, action="write", name="t", content="from the tool")
        listed = await ok(client, action="list")
        assert sorted(m["name"] for m in listed["memories"]) == ["h", "p", "t"]
        assert (await ok(client, action="read", name="h"))["memory"]["memory_type"] == "dreams"
    with axon.Session(**store.kwargs()) as session:
        session.execute(default_declaration(store.pg_dsn))
        entries = session.memory("AgentMemory").list()
        assert {e.key: e.value for e in entries} == {
            "p": "from the program", "h": "from the handle", "t": "from the tool"
        }
        assert session.memory("AgentMemory").get("t").type == "long_term"  # type: ignore[union-attr]
    (record,) = _run(store, _program(tmp_path, store, 'recall("from the") from AgentMemory '
                                                      "with { top_k: 10 }\n"), tmp_path)
    assert sorted(r["key"] for r in record["results"]) == ["h", "p", "t"]


async def test_the_server_and_axon_run_work_at_the_same_time(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """While the server holds the SQLite file open, `axon run` writes and reads it."""
    store = sqlite_store
    async with stdio(store, tmp_path) as client:
        await ok(client, action="write", name="agent_note", content="written by the agent")
        program = _program(tmp_path, store, 'remember("written by a program") -> AgentMemory '
                                            'with { key: "program_note" }\n'
                                            'recall("written") from AgentMemory\n')
        _, recall = await asyncio.to_thread(_run, store, program, tmp_path)
        assert sorted(r["key"] for r in recall["results"]) == ["agent_note", "program_note"]
        memory = (await ok(client, action="read", name="program_note"))["memory"]
        assert memory["content"] == "written by a program"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_streamable_http_on_a_real_loopback_port(store: Store, tmp_path: Path) -> None:
    port = _free_port()
    process = subprocess.Popen(
        store.axon("mcp", *store.options(), "--http", "--port", str(port)),
        env=store.env, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the HTTP server did not start"
            await asyncio.sleep(0.2)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["memory"]
            await ok(client, action="write", name="over_http", content="sent over HTTP")
            read = await ok(client, action="read", name="over_http")
            assert read["memory"]["content"] == "sent over HTTP"
            assert await error(client, action="bogus") == (
                'Unknown action: "bogus"; valid: write, read, update, list, search, delete, '
                "associate"
            )
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr  # SIGTERM: the memory closed, a clean exit
    assert f"axon mcp: memory 'AgentMemory' on http://127.0.0.1:{port}/mcp" in stderr
    assert "Traceback" not in stderr
    (record,) = _run(store, _program(tmp_path, store, 'recall("HTTP") from AgentMemory\n'),
                     tmp_path)
    assert [r["key"] for r in record["results"]] == ["over_http"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--program", "{bad}"], 1,
         "bad.axon:2:23: error: Unknown store type 'persistnt' in memory 'Notes' "
         "(did you mean 'persistent'?)"),
        (["--program", "{good}", "--memory", "Tem"], 2,
         "error: --memory Tem: {good} declares no memory 'Tem' (did you mean 'Team'?) "
         "(declared: AgentMemory, Team, Scratch, Scratchpad)"),
        (["--program", "{good}", "--memory", "Scratch"], 2,
         "error: memory 'Scratch' is ephemeral: its entries end with each call"),
        (["--program", "{missing}"], 1, "missing.axon: error: no such file"),
        (["--program", "{good}", "--memory", "Scratchpad"], 0,
         "warning: memory 'Scratchpad' is a session memory: its entries last only while "
         "this server runs"),
        (["--memory", "Team"], 2, "error: --memory NAME needs --program FILE"),
        (["--http", "--host", "0.0.0.0"], 2,
         "error: --host 0.0.0.0: axon mcp has no authentication, so it serves only on a "
         "loopback address"),
        (["--port", "9000"], 2, "error: --host and --port need --http"),
        (["--memory-dir", "d", "--pg-dsn", "postgresql://x@127.0.0.1/y"], 2,
         "error: give --memory-dir or --pg-dsn, not both"),
        (["--pg-dsn", "postgresql://nobody@127.0.0.1:1/none"], 3,
         "cannot open memory 'AgentMemory': PostgreSQL at nobody@127.0.0.1:1/none: cannot "
         "connect"),
    ],
)
def test_a_bad_command_line_or_program_is_a_clear_error(
    sqlite_store: Store, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    bad = tmp_path / "bad.axon"
    bad.write_text("memory Fine { store: session }\nmemory Notes { store: persistnt }\n")
    good = tmp_path / "good.axon"
    good.write_text(PROGRAM.format(backend="sqlite") + "memory Scratch { store: ephemeral }\n"
                    "memory Scratchpad { store: session }\n")
    paths = {"{bad}": bad.name, "{good}": good.name, "{missing}": "missing.axon"}
    argv = [paths.get(a, a) for a in args]  # relative to the working directory
    done = subprocess.run(
        sqlite_store.axon("mcp", *argv), capture_output=True, text=True,
        env=sqlite_store.env, cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert (done.returncode, done.stdout) == (code, ""), done.stderr
    assert message.format(good=good.name) in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_missing_sdk_names_the_extra(sqlite_store: Store, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['mcp'] = None  # as if the extra were not installed\n"
        "sys.argv = ['axon', 'mcp']\n"
        "from axon.cli import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=sqlite_store.env,
        cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: axon mcp needs the MCP SDK, which is not installed: "
        "install the 'mcp' extra: pip install '.[mcp]' in an AXON checkout "
        "(or the wheel, 'axon_memory-*.whl[mcp]')"
    )


def test_neither_import_axon_nor_axon_help_imports_the_sdk(
    sqlite_store: Store, tmp_path: Path
) -> None:
    code = (
        "import sys\n"
        "import axon, axon.cli, axon.mcp_server, axon.mcp_server.tool\n"
        "sys.argv = ['axon', '--help']\n"
        "try:\n"
        "    axon.cli.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=sqlite_store.env,
        cwd=tmp_path, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "mcp" in done.stdout  # the command is listed
    assert done.stdout.strip().splitlines()[-1] == "[]"


def _end(process: subprocess.Popen[str]) -> None:
    """Close a stdio server's input (its end of session) and wait for it to exit, killing
    it after 60 s."""
    assert process.stdin is not None
    process.stdin.close()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def test_a_lone_surrogate_escape_in_a_request_is_answered(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """JSON allows `"\\udc80"`; the SDK's parser does not, and sent no reply at all."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory",
            "arguments": {"action": "write", "name": "odd", "content": "a\udc80b"}}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory",
            "arguments": {"action": "read", "name": "odd"}}},
    ]
    process = subprocess.Popen(
        sqlite_store.axon("mcp", *sqlite_store.options()),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=sqlite_store.env,
        cwd=tmp_path,
    )
    assert process.stdin is not None and process.stdout is not None
    replies: dict[int, Any] = {}
    try:
        for line in lines:
            # json.dumps writes the lone surrogate as the escape \udc80, as a client would
            process.stdin.write(json.dumps(line) + "\n")
            process.stdin.flush()
            if "id" in line:  # wait for its reply before the next request
                ready, _, _ = select.select([process.stdout], [], [], 60)
                assert ready, f"no reply to request {line['id']} in 60 s"
                replies[line["id"]] = json.loads(process.stdout.readline())
    finally:
        _end(process)
    assert all("result" in replies[i] for i in (1, 2, 3)), replies
    written = json.loads(replies[2]["result"]["content"][0]["text"])
    assert written["success"] is True
    read = json.loads(replies[3]["result"]["content"][0]["text"])
    assert read["memory"]["content"] == "a\ufffdb"


def test_a_request_nested_too_deeply_is_answered_with_an_error(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """The SDK's parser gives up on a line nested ~250 deep and sent no reply at all;
    such a request gets an error result (same id), and the server keeps answering."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}
    lines = [
        json.dumps(init),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory",'
        '"arguments":{"action":"list","tags":%s}}}' % ("[" * 300 + "]" * 300),
        '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"memory","arguments":'
        '{"action":"write","name":"d","content":"x","tags":%s}},"id":"late"}'
        % ("[" * 5000 + "]" * 5000),
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory",'
        '"arguments":{"action":"list"}}}',
    ]
    process = subprocess.Popen(
        sqlite_store.axon("mcp", *sqlite_store.options()),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=sqlite_store.env,
        cwd=tmp_path,
    )
    assert process.stdin is not None and process.stdout is not None
    replies: dict[Any, Any] = {}
    try:
        for line in lines:
            process.stdin.write(line + "\n")
            process.stdin.flush()
            if '"id"' in line:
                ready, _, _ = select.select([process.stdout], [], [], 60)
                assert ready, f"no reply to {line[:80]} in 60 s"
                reply = json.loads(process.stdout.readline())
                replies[reply["id"]] = reply
    finally:
        _end(process)
    for request_id, depth in ((2, 303), ("late", 5003)):
        result = replies[request_id]["result"]
        assert result["isError"] is True
        assert f"nested {depth} arrays or objects deep" in result["structuredContent"]["error"]
    listed = replies[4]["result"]["structuredContent"]
    assert listed == {"success": True, "count": 0, "memories": []}  # nothing was written


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"}}}


@contextlib.contextmanager
def raw_stdio(store: Store, tmp_path: Path) -> Iterator[Callable[[str], Any]]:
    """`axon mcp` as a subprocess, initialized; yields `reply_to(line)`, which sends one
    line and returns the one reply it gets (failing after 60 s without one)."""
    process = subprocess.Popen(
        store.axon("mcp", *store.options()),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=store.env,
        cwd=tmp_path,
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def reply_to(text: str) -> Any:
        stdin.write(text + "\n")
        stdin.flush()
        ready, _, _ = select.select([stdout], [], [], 60)
        assert ready, f"no reply to {text[:80]!r} in 60 s"
        return json.loads(stdout.readline())

    try:
        assert "result" in reply_to(json.dumps(INIT))
        stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        stdin.write("\n")
        yield reply_to
    finally:
        _end(process)


PING = '{"jsonrpc": "2.0", "id": %s, "method": "ping"}'


@pytest.mark.parametrize(
    ("line", "code", "request_id"),
    [
        ("{not json", -32700, None),
        ('[{"jsonrpc": "2.0", "id": 9, "method": "ping"}]', -32600, None),  # a batch
        ("5", -32600, None),
        ('{"id": 9, "method": "ping"}', -32600, 9),  # no "jsonrpc"
        ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', -32600, None),
        ('{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', -32600, None),
        ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', -32600, None),
    ],
)
def test_a_line_that_is_no_json_rpc_message_gets_an_error_reply(
    sqlite_store: Store, tmp_path: Path, line: str, code: int, request_id: Any
) -> None:
    """The SDK drops such a line and sent nothing back, leaving the client waiting; it
    now gets JSON-RPC's error response, and the server goes on answering."""
    with raw_stdio(sqlite_store, tmp_path) as reply_to:
        error = reply_to(line)
        assert error["jsonrpc"] == "2.0" and error["id"] == request_id
        assert error["error"]["code"] == code and error["error"]["message"]
        assert reply_to(PING % 2) == {"jsonrpc": "2.0", "id": 2, "result": {}}


DEEP = "[" * 300 + "]" * 300


@pytest.mark.parametrize(
    ("template", "request_id"),
    [
        # an "id" in the arguments comes first in the line; the request's own is 8
        ('{"jsonrpc":"2.0","method":"tools/call","params":{"name":"memory","arguments":'
         '{"action":"list","id":7,"tags":DEEP}},"id":8}', 8),
        ('{"jsonrpc":"2.0","method":"tools/call","params":{"id":"7","x":DEEP},"id":"8"}', "8"),
        # no top-level id: only a nested one, which must not be answered under
        ('{"jsonrpc":"2.0","method":"tools/call","params":{"id":7,"x":DEEP}}', None),
        ('{"jsonrpc":"2.0","method":"x","params":{"id":7,"x":DEEP},"id":null}', None),
        ('{"jsonrpc":"2.0","method":"x","params":{"x":DEEP},"id":{"id":7}}', None),
        # two top-level ids: parsers differ on which wins
        ('{"jsonrpc":"2.0","id":7,"method":"x","params":{"x":DEEP},"id":8}', None),
        # an "id" inside a string value; brackets that never close
        ('{"jsonrpc":"2.0","method":"x","params":{"s":"\\"id\\":7","x":DEEP}}', None),
        ('{"jsonrpc":"2.0","method":"x","params":{"id":7,"x":DEEPDEEP', None),
    ],
)
def test_a_request_nested_too_deeply_is_answered_under_its_own_top_level_id_only(
    sqlite_store: Store, tmp_path: Path, template: str, request_id: Any
) -> None:
    """The reply to a too-deep line carried the first `"id"` found anywhere in it, so
    the client waited for ever for its own and another request (id 7, sent next) got
    a spoofed reply. The request's top-level id is used, else null."""
    line = template.replace("DEEPDEEP", "[" * 300).replace("DEEP", DEEP)
    with raw_stdio(sqlite_store, tmp_path) as reply_to:
        reply = reply_to(line)
        assert reply["id"] == request_id
        if request_id is None:
            assert reply["error"]["code"] == -32600
            assert "nested 30" in reply["error"]["message"]
        else:
            result = reply["result"]
            assert result["isError"] is True
            assert "nested 30" in result["structuredContent"]["error"]
        assert reply_to(PING % 7) == {"jsonrpc": "2.0", "id": 7, "result": {}}


def _write_line(request_id: int, size: int) -> str:
    """A tools/call write request whose line is exactly `size` bytes long."""
    head = (f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":'
            '{"name":"memory","arguments":{"action":"write","name":"n","content":"')
    tail = '"}}}'
    return head + "x" * (size - len(head) - len(tail)) + tail


def test_a_request_line_past_4_mib_is_refused_and_the_server_keeps_serving(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """A request line had no size cap (the SDK read any line whole). A line of 4 MiB
    is read; one byte more is dropped unread by the SDK and answered with JSON-RPC's
    Invalid Request error, id null; the server goes on answering."""
    limit = 4 * 1024 * 1024
    with raw_stdio(sqlite_store, tmp_path) as reply_to:
        at_limit = reply_to(_write_line(5, limit))
        assert at_limit["id"] == 5  # read: the tool refuses the content's length
        assert "content is" in at_limit["result"]["structuredContent"]["error"]
        for size in (limit + 1, 3 * limit):
            over = reply_to(_write_line(6, size))
            assert over == {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600,
                "message": f"Invalid Request: the line is {size:,} bytes long; a request "
                           "line may be at most 4,194,304 bytes (4 MiB): nothing was done",
            }}
        assert reply_to(PING % 7) == {"jsonrpc": "2.0", "id": 7, "result": {}}
