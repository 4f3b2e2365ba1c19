"""`axon memory` with namespaces, run as a user runs it: every command's `--namespace`
(and `AXON_NAMESPACE`), `namespaces`, `erase`, and export/import between stores, on a
memory directory and on PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import axon
from tests.helpers.cli import as_json
from tests.helpers.cli import axon as run_axon
from tests.memory.conftest import pg_dsn_or_skip, pg_test_schema

SPACES = [None, "acme", "acme/u42", "acme/u43", "acmeX"]
"""Where the fixture's store holds Notes (None: the root); Diary only in acme/u42."""

Memory = Callable[..., subprocess.CompletedProcess[str]]


def _where(kind: str, tmp_path: Path, name: str) -> tuple[list[str], dict[str, str]]:
    """The store options of a store named `name`, and the Session keywords opening it."""
    if kind == "sqlite":
        return ["--memory-dir", str(tmp_path / name)], {"memory_dir": str(tmp_path / name)}
    dsn, schema = pg_dsn_or_skip(), pg_test_schema(tmp_path / name)
    return (
        ["--pg-dsn", dsn, "--pg-schema", schema],
        {"memory_dir": str(tmp_path / name), "pg_dsn": dsn, "pg_schema": schema},
    )


def _fill(kind: str, keywords: dict[str, str]) -> None:
    backend = "sqlite" if kind == "sqlite" else "pgvector"
    program = (
        f"memory Notes {{ store: persistent backend: {backend} }}\n"
        f"memory Diary {{ store: persistent backend: {backend} }}\n"
    )
    for space in SPACES:
        with axon.Session(namespace=space, **keywords) as session:  # type: ignore[arg-type]
            session.declare(program)
            notes = session.memory("Notes")
            notes.remember(f"the plan of {space or 'root'}", key="plan", tags=["work"])
            notes.remember(f"the secret of {space or 'root'}", key="secret")
            if space == "acme/u42":
                session.memory("Diary").remember("lunch on tuesday", key="lunch")


@pytest.fixture(params=["sqlite", "pgvector"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def memory(kind: str, tmp_path: Path) -> Memory:
    """`axon memory ARGS` on a store holding Notes in every namespace of SPACES."""
    where, keywords = _where(kind, tmp_path, "mem")
    _fill(kind, keywords)

    def run(*args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        return run_axon("memory", *args, *where, stdin=stdin, **env)

    return run


def test_every_command_reads_and_writes_only_its_namespace(memory: Memory) -> None:
    u42 = ["--namespace", "acme/u42"]
    assert as_json(memory("ls", "--json", *u42)) == {
        "store": as_json(memory("ls", "--json"))["store"],
        "namespace": "acme/u42",
        "memories": [{"memory": "Diary", "entries": 1}, {"memory": "Notes", "entries": 2}],
    }
    assert as_json(memory("ls", "--json"))["memories"] == [{"memory": "Notes", "entries": 2}]
    shown = as_json(memory("show", "Notes", "--json", *u42))
    assert sorted(e["value"] for e in shown["entries"]) == [
        "the plan of acme/u42", "the secret of acme/u42"
    ]
    got = as_json(memory("get", "Notes", "secret", "--json", "--namespace", "acme/u43"))
    assert got["value"] == "the secret of acme/u43"
    found = as_json(memory("search", "Notes", "secret", "--retrieval", "keyword", "--json",
                           *u42))
    assert [r["value"] for r in found["results"]] == ["the secret of acme/u42"]
    stats = as_json(memory("stats", "--json", *u42))
    assert stats["namespace"] == "acme/u42"
    assert [(s["memory"], s["entries"]) for s in stats["memories"]] == [("Diary", 1),
                                                                        ("Notes", 2)]
    # the group's option and the environment variable name it too
    assert as_json(memory("get", "Diary", "lunch", "--json", AXON_NAMESPACE="acme/u42"))[
        "value"] == "lunch on tuesday"
    store_options = memory("ls").args[5:]  # [python, -m, axon.cli, memory, ls, *options]
    grouped = run_axon("memory", "--namespace", "acme/u42", "ls", "--json", *store_options)
    assert [m["memory"] for m in as_json(grouped)["memories"]] == ["Diary", "Notes"]
    # Diary is nowhere but acme/u42: in acme it does not exist (nothing is inherited)
    missing = memory("get", "Diary", "lunch", "--namespace", "acme")
    assert missing.returncode == 1 and "namespace acme" in missing.stderr
    forgot = as_json(memory("forget", "Notes", "--tag", "work", "--yes", "--json", *u42))
    assert forgot["deleted"] == 1
    for space in ("acme", "acme/u43", "acmeX"):
        assert as_json(memory("get", "Notes", "plan", "--json", "--namespace", space))
    assert as_json(memory("get", "Notes", "plan", "--json"))["value"] == "the plan of root"


def test_namespaces_lists_them_with_counts(memory: Memory) -> None:
    listed = as_json(memory("namespaces", "--json"))
    assert listed["prefix"] == "" and listed["namespaces"] == [
        {"namespace": "", "memories": 1, "entries": 2},
        {"namespace": "acme", "memories": 1, "entries": 2},
        {"namespace": "acme/u42", "memories": 2, "entries": 3},
        {"namespace": "acme/u43", "memories": 1, "entries": 2},
        {"namespace": "acmeX", "memories": 1, "entries": 2},
    ]
    under = as_json(memory("namespaces", "--prefix", "acme", "--json"))
    assert [n["namespace"] for n in under["namespaces"]] == ["acme", "acme/u42", "acme/u43"]
    same = as_json(memory("namespaces", "--namespace", "acme", "--json"))  # the default prefix
    assert same["namespaces"] == under["namespaces"]
    table = memory("namespaces")
    assert table.returncode == 0 and "(root)" in table.stdout and "acme/u42" in table.stdout
    empty = memory("namespaces", "--prefix", "nobody")
    assert empty.returncode == 0 and "no namespaces under nobody" in empty.stdout


def test_erase_a_namespace_and_everything_below_it(memory: Memory) -> None:
    dry = as_json(memory("erase", "--namespace", "acme", "--dry-run", "--json"))
    assert dry == {
        "op": "erase", "namespace": "acme", "dry_run": True, "erased": 0, "would_erase": 7,
        "namespaces": [
            {"namespace": "acme", "memories": {"Notes": 2}},
            {"namespace": "acme/u42", "memories": {"Diary": 1, "Notes": 2}},
            {"namespace": "acme/u43", "memories": {"Notes": 2}},
        ],
    }
    asked = memory("erase", "--namespace", "acme", stdin="")  # stdin is not a terminal
    assert asked.returncode == 2 and "--yes" in asked.stderr
    assert len(as_json(memory("namespaces", "--json"))["namespaces"]) == 5  # nothing went
    done = as_json(memory("erase", "--namespace", "acme", "--yes", "--json"))
    assert done == {"op": "erase", "namespace": "acme", "erased": 7,
                    "namespaces": ["acme", "acme/u42", "acme/u43"]}
    left = as_json(memory("namespaces", "--json"))["namespaces"]
    assert [n["namespace"] for n in left] == ["", "acmeX"]
    assert memory("show", "Notes", "--namespace", "acme/u42").returncode == 1
    again = memory("erase", "--namespace", "acme", "--yes")
    assert again.returncode == 0 and "erased 0 entries" in again.stdout


def test_erase_names_what_it_erases(memory: Memory) -> None:
    for args, env in ((["--yes"], {}), (["--yes"], {"AXON_NAMESPACE": "acme"})):
        refused = memory("erase", *args, **env)
        assert refused.returncode == 2 and "erase needs --namespace P" in refused.stderr
    assert len(as_json(memory("namespaces", "--json"))["namespaces"]) == 5


@pytest.mark.parametrize(
    ("value", "problem"),
    [("a//b", "label '' is empty"), ("a/..", "may not be '.' or '..'"),
     ("/".join("x" * 9), "has 9 labels"), ("y" * 129, "has 129 characters")],
)
def test_a_bad_namespace_is_a_usage_error(tmp_path: Path, value: str, problem: str) -> None:
    for args in (["ls"], ["show", "Notes"], ["erase", "--yes"], ["export"]):
        result = run_axon("memory", *args, "--memory-dir", str(tmp_path / "m"),
                          "--namespace", value)
        assert result.returncode == 2, (args, result.stderr)
        assert problem in result.stderr and "Traceback" not in result.stderr
    env = run_axon("memory", "ls", "--memory-dir", str(tmp_path / "m"), AXON_NAMESPACE=value)
    assert env.returncode == 2 and "AXON_NAMESPACE" in env.stderr
    assert not (tmp_path / "m").exists()  # refused before anything was opened


def test_export_and_import_between_stores(memory: Memory, kind: str, tmp_path: Path) -> None:
    export = tmp_path / "acme.jsonl"
    report = as_json(memory("export", "-o", str(export), "--namespace", "acme", "--json"))
    assert report["memories"] == {"acme/Notes": 2, "acme/u42/Diary": 1, "acme/u42/Notes": 2,
                                  "acme/u43/Notes": 2}
    lines = [json.loads(line) for line in export.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["namespace"] == "acme"
    assert {line["namespace"] for line in lines[1:]} == {"acme", "acme/u42", "acme/u43"}
    # as written, into another store
    where, _ = _where(kind, tmp_path, "copy")
    as_json(run_axon("memory", "import", str(export), "--json", *where))
    copied = as_json(run_axon("memory", "namespaces", "--json", *where))["namespaces"]
    assert [n["namespace"] for n in copied] == ["acme", "acme/u42", "acme/u43"]
    # placed: acme becomes tenants/t9
    moved = as_json(run_axon("memory", "import", str(export), "--namespace", "tenants/t9",
                             "--json", *where))
    assert moved["memories"]["tenants/t9/u42/Diary"] == 1
    got = as_json(run_axon("memory", "get", "Diary", "lunch", "--namespace",
                           "tenants/t9/u42", "--json", *where))
    assert got["value"] == "lunch on tuesday"
    # the root's own export line has no namespace field
    whole = memory("export", "Notes")
    root_lines = [json.loads(line) for line in whole.stdout.splitlines()[1:]]
    assert {line.get("namespace") for line in root_lines} == {
        None, "acme", "acme/u42", "acme/u43", "acmeX"
    }
    assert all("namespace" not in line for line in root_lines if line["value"].endswith("root"))


def test_paging_and_purge_name_the_namespace(tmp_path: Path) -> None:
    where, keywords = _where("sqlite", tmp_path, "mem")
    _fill("sqlite", keywords)
    with axon.Session(namespace="acme/u42", **keywords) as session:  # type: ignore[arg-type]
        session.declare("memory Notes { store: persistent backend: sqlite }")
        session.memory("Notes").remember("soon gone", key="brief", expires_in="3s")
        stored = time.monotonic()
    # `show` must run while the entry lives: opened after the expiry, it sweeps the entry
    # itself and `purge` finds none (with a 1 s expiry a loaded machine got there). Then
    # `purge` once it has expired.
    page = run_axon("memory", "show", "Notes", "--limit", "1", "--namespace", "acme/u42",
                    *where)
    assert page.returncode == 0 and "--namespace acme/u42 --limit 1 --after" in page.stdout
    time.sleep(max(0.0, stored + 3.2 - time.monotonic()))
    purged = as_json(run_axon("memory", "purge", "--json", *where))
    assert purged == {"op": "purge", "purged": 1, "memories": {"acme/u42/Notes": 1}}


def test_ls_of_an_empty_namespace_says_where_memories_are(tmp_path: Path) -> None:
    where, keywords = _where("sqlite", tmp_path, "mem")
    with axon.Session(namespace="acme/u42", **keywords) as session:  # type: ignore[arg-type]
        session.declare("memory Notes { store: persistent backend: sqlite }")
        session.memory("Notes").remember("kept", key="k")
    root = run_axon("memory", "ls", *where)
    assert root.returncode == 0
    assert "no memories in" in root.stdout
    assert "1 namespace below it holds some: axon memory namespaces" in root.stdout
    acme = run_axon("memory", "ls", "--namespace", "acme", *where)
    assert "below acme holds some: axon memory namespaces --prefix acme" in acme.stdout
    assert as_json(run_axon("memory", "ls", "--json", *where))["memories"] == []
