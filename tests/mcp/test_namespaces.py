"""`axon mcp --namespace P`: the served memory's whole world is P. What the tool writes
is in P (seen there by a program's session and by `axon memory`), it reads nothing of
another namespace, and no argument of a call can name one: a `namespace` argument is an
error result, and a name that looks like a path is just a name in P."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_extra

require_extra("mcp", module_level=True)

from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

import axon  # noqa: E402
from axon.mcp_server.target import DEFAULT_MEMORY, default_declaration, open_tool  # noqa: E402
from tests.mcp.conftest import Store, error, ok, serve  # noqa: E402

TRICKS = ["acme/u43", "../u43", "/acme/u43/x", "\x1dacme\x1fu43\x1fAgentMemory", ".."]
"""Names that look like another namespace (or like its physical scope): still names."""

VALID = {
    "write": {"name": "plan", "content": "overwritten"},
    "read": {"name": "plan"},
    "list": {},
    "search": {"query": "plan"},
    "delete": {"name": "plan"},
    "associate": {"name": "plan", "related": ["..", "acme/u43"]},
}
"""A call of each action the tool would answer, but for the namespace argument."""


async def test_the_tool_lives_in_its_namespace(store: Store) -> None:
    u42 = await open_tool(**store.kwargs(), namespace="acme/u42")
    u43 = await open_tool(**store.kwargs(), namespace="acme/u43")
    root = await open_tool(**store.kwargs())
    try:
        async with serve(u42) as client:
            await ok(client, action="write", name="plan", content="the plan of u42",
                     tags=["work"])
            for name in TRICKS:
                await ok(client, action="write", name=name, content=f"written as {name!r}")
            assert (await ok(client, action="list"))["count"] == 1 + len(TRICKS)
            for field in ("namespace", "scope", "tenant", "user_id"):
                for action, valid in VALID.items():
                    message = await error(client, action=action, **valid,
                                          **{field: "acme/u43"})
                    assert message.startswith(f'unknown argument "{field}"'), message
            assert (await ok(client, action="read", name="plan"))["memory"]["content"] == (
                "the plan of u42"
            )  # no refused call wrote or deleted anything
        for other in (u43, root):
            async with serve(other) as client:
                assert (await ok(client, action="list"))["count"] == 0
                assert "plan" in await error(client, action="read", name="plan")
                found = await ok(client, action="search", query="plan of u42")
                assert found["count"] == 0
                for name in TRICKS:
                    await error(client, action="read", name=name)
        # a program's session in acme/u42 sees what the tool wrote; one in acme/u43 does not
        settings = {**store.kwargs()}
        for space, expected in (("acme/u42", "the plan of u42"), ("acme/u43", None)):
            async with axon.AsyncSession(**settings, namespace=space) as session:
                await session.declare(default_declaration(store.pg_dsn))
                entry = await session.memory(DEFAULT_MEMORY).get("plan")
                assert (entry.value if entry is not None else None) == expected
    finally:
        for tool in (u42, u43, root):
            await tool.session.close()


async def test_axon_mcp_namespace_over_stdio(sqlite_store: Store, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "axon.cli", "mcp", *sqlite_store.options(), "--namespace", "acme/u42"],
        env=sqlite_store.env,
        cwd=str(tmp_path),
    )
    with (tmp_path / "mcp-stderr.txt").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            await ok(client, action="write", name="plan", content="the plan of u42")
    read = subprocess.run(
        sqlite_store.axon("memory", "get", DEFAULT_MEMORY, "plan", "--namespace", "acme/u42",
                          *sqlite_store.options()),
        capture_output=True, text=True, env=sqlite_store.env, timeout=120,
    )
    assert read.returncode == 0 and "the plan of u42" in read.stdout, read.stderr
    root = subprocess.run(
        sqlite_store.axon("memory", "ls", "--json", *sqlite_store.options()),
        capture_output=True, text=True, env=sqlite_store.env, timeout=120,
    )
    assert '"memories": []' in root.stdout  # nothing in the root


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--namespace", "a//b"], {}, "error: --namespace 'a//b': label '' is empty"),
        (["--namespace", "a/.."], {}, "may not be '.' or '..'"),
        ([], {"AXON_NAMESPACE": "/".join("x" * 9)}, "AXON_NAMESPACE"),
    ],
)
def test_a_bad_namespace_is_refused_before_anything_opens(
    sqlite_store: Store, tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    done = subprocess.run(
        sqlite_store.axon("mcp", *sqlite_store.options(), *args), capture_output=True,
        text=True, env={**sqlite_store.env, **env}, cwd=tmp_path, timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert sqlite_store.memory_dir is not None and not sqlite_store.memory_dir.exists()
