"""Export and import with namespaces (`axon.memory.transfer`): each line names its
namespace, an import restores it or puts the exported namespace where it is told, a
bad namespace in a file is refused at its line, and the line bound still holds."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from axon.memory import transfer
from axon.memory.backend import MemoryBackend
from axon.memory.entry import MAX_KEY_CHARS, MAX_VALUE_BYTES, NewEntry, encode_json
from axon.memory.namespaces import MAX_LABEL, MAX_LABELS, ROOT, Namespace
from axon.memory.registry import registry
from axon.memory.transfer import (
    MAX_LINE_CHARS,
    TransferError,
    export_memories,
    import_memories,
    read_lines,
)
from tests.memory.conftest import pg_dsn_or_skip, pg_test_schema

ACME, U42, U43 = Namespace.of("acme"), Namespace.of("acme/u42"), Namespace.of("acme/u43")


def _open(kind: str, tmp_path: Path, name: str) -> MemoryBackend:
    if kind == "sqlite":
        return registry.create("sqlite", memory_dir=tmp_path / name)
    return registry.create(
        "pgvector", location=pg_dsn_or_skip(), schema=pg_test_schema(tmp_path / name)
    )


@pytest.fixture(params=["sqlite", "pgvector"])
async def stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[MemoryBackend, MemoryBackend, MemoryBackend]]:
    """A source holding Notes in the root, acme, acme/u42, acme/u43 and acmeX (the same
    keys in each), and two empty targets, on SQLite files or PostgreSQL schemas."""
    backends = [_open(request.param, tmp_path, name) for name in ("src", "a", "b")]
    source = backends[0]
    for space in (ROOT, ACME, U42, U43, Namespace.of("acmeX")):
        await source.store_many(
            [
                NewEntry(key, f"{key} of {space.text or 'root'}",
                         {"scope": space.scope("Notes"), "tags": ["t"]})
                for key in ("k1", "k2")
            ]
        )
    try:
        yield backends[0], backends[1], backends[2]
    finally:
        for backend in backends:
            await backend.close()


def _lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


async def _values(backend: MemoryBackend, space: Namespace) -> list[str]:
    return sorted(str(e.value) for e in await backend.list_entries(space.scope("Notes")))


async def test_round_trip_keeps_each_entry_in_its_namespace(
    stores: tuple[MemoryBackend, MemoryBackend, MemoryBackend],
) -> None:
    source, target, _ = stores
    out = io.StringIO()
    report = await export_memories(source, out)  # the root and everything below it
    lines = _lines(out.getvalue())
    # the root's export names no namespace; holding namespaced entries, it is version 2
    assert lines[0] == {"format": "axon-memory", "version": 2}
    assert report.memories == {
        "Notes": 2, "acme/Notes": 2, "acme/u42/Notes": 2, "acme/u43/Notes": 2,
        "acmeX/Notes": 2,
    }
    root_lines = [line for line in lines[1:] if "namespace" not in line]
    assert [line["value"] for line in root_lines] == ["k1 of root", "k2 of root"]
    assert {line.get("namespace") for line in lines[1:]} == {
        None, "acme", "acme/u42", "acme/u43", "acmeX"
    }
    out.seek(0)
    back = await import_memories(target, read_lines(out, "all.jsonl"))
    assert back.memories == report.memories
    for space in (ROOT, ACME, U42, U43, Namespace.of("acmeX")):
        assert await _values(target, space) == await _values(source, space)
    assert await transfer.memory_names(target) == ["Notes"]  # the root's own memories
    assert await transfer.memory_names(target, U42) == ["Notes"]


async def test_export_of_a_namespace_holds_it_and_below_and_imports_where_told(
    stores: tuple[MemoryBackend, MemoryBackend, MemoryBackend],
) -> None:
    source, target, moved = stores
    out = io.StringIO()
    report = await export_memories(source, out, namespace=ACME)
    lines = _lines(out.getvalue())
    assert lines[0] == {"format": "axon-memory", "version": 2, "namespace": "acme"}
    assert report.memories == {"acme/Notes": 2, "acme/u42/Notes": 2, "acme/u43/Notes": 2}
    assert all(str(line["namespace"]).startswith("acme") for line in lines[1:])
    assert "acmeX" not in out.getvalue()  # a sibling sharing the prefix's text is not below
    # without a namespace: restored where each line says
    out.seek(0)
    await import_memories(target, read_lines(out, "acme.jsonl"))
    assert await _values(target, U42) == ["k1 of acme/u42", "k2 of acme/u42"]
    assert await _values(target, ROOT) == []
    # under beta/t1: acme is put there, acme/u42 at beta/t1/u42
    out.seek(0)
    beta = Namespace.of("beta/t1")
    placed = await import_memories(moved, read_lines(out, "acme.jsonl"), namespace=beta)
    assert placed.memories == {
        "beta/t1/Notes": 2, "beta/t1/u42/Notes": 2, "beta/t1/u43/Notes": 2
    }
    assert await _values(moved, Namespace.of("beta/t1/u42")) == ["k1 of acme/u42",
                                                                 "k2 of acme/u42"]
    assert await _values(moved, ACME) == [] and await _values(moved, U42) == []


async def test_into_keeps_each_line_in_its_namespace(
    stores: tuple[MemoryBackend, MemoryBackend, MemoryBackend],
) -> None:
    source, target, _ = stores
    out = io.StringIO()
    await export_memories(source, out, namespace=U42)
    out.seek(0)
    report = await import_memories(target, read_lines(out, "u42.jsonl"), into="Other")
    assert report.memories == {"acme/u42/Other": 2}
    assert len(await target.list_entries(U42.scope("Other"))) == 2


HEADER = '{"format":"axon-memory","version":1}\n'


@pytest.mark.parametrize(
    ("namespace", "problem"),
    [
        ('"a//b"', "label '' is empty"),
        ('"a/.."', "may not be '.' or '..'"),
        ('"a/\\u0001"', "holds a control character"),
        ('"' + "/".join("x" * (MAX_LABELS + 1)) + '"', "has 9 labels"),
        (f'"{"y" * (MAX_LABEL + 1)}"', "has 129 characters"),
        ("42", '"namespace" must be a string like "acme/u42", not a number'),
    ],
)
async def test_a_bad_namespace_in_a_file_is_refused_at_its_line(
    tmp_path: Path, namespace: str, problem: str
) -> None:
    backend = registry.create("sqlite", memory_dir=tmp_path)
    text = (
        HEADER
        + '{"memory":"N","key":"ok","value":1,"created_at":1}\n'
        + f'{{"namespace":{namespace},"memory":"N","key":"k","value":1,"created_at":1}}\n'
    )
    try:
        with pytest.raises(TransferError) as caught:
            await import_memories(backend, read_lines(io.StringIO(text), "bad.jsonl"),
                                  source="bad.jsonl")
        assert caught.value.where == "bad.jsonl:3"
        assert problem in str(caught.value)
        assert await backend.count() == 0  # its batch was not written
    finally:
        await backend.close()


async def test_placing_refuses_a_line_outside_the_export_and_too_deep_a_result(
    tmp_path: Path,
) -> None:
    backend = registry.create("sqlite", memory_dir=tmp_path)
    header = '{"format":"axon-memory","version":2,"namespace":"acme"}\n'
    entry = '"memory":"N","key":"k","value":1,"created_at":1}\n'
    outside = header + '{"namespace":"other",' + entry
    deep = "/".join(["acme", *"abcdef"])  # 7 labels: 6 below acme
    too_deep = header + f'{{"namespace":"{deep}",' + entry
    bad_header = '{"format":"axon-memory","version":1,"namespace":"a//b"}\n'
    try:
        with pytest.raises(TransferError, match="not in the exported namespace 'acme'") as e:
            await import_memories(backend, read_lines(io.StringIO(outside), "f"), source="f",
                                  namespace=Namespace.of("t"))
        assert e.value.where == "f:2"
        with pytest.raises(TransferError, match="has 9 labels") as e:
            await import_memories(backend, read_lines(io.StringIO(too_deep), "f"), source="f",
                                  namespace=Namespace.of("t/u/v"))
        assert e.value.where == "f:2"
        with pytest.raises(TransferError, match="label '' is empty") as e:
            await import_memories(backend, read_lines(io.StringIO(bad_header), "f"),
                                  source="f")
        assert e.value.where == "f:1"
        # without a namespace to put it at, the outside line goes where it says
        report = await import_memories(backend, read_lines(io.StringIO(outside), "f"))
        assert report.memories == {"other/N": 1}
    finally:
        await backend.close()


async def test_the_longest_namespaced_line_is_within_the_line_bound(tmp_path: Path) -> None:
    """An entry at every cap in the deepest, longest namespace whose labels are all
    escapes in JSON (`"`: two characters each): its metadata's scope holds the namespace
    (each label then a control character, six characters in JSON), so the line, which
    writes the namespace with '/', stays within MAX_LINE_CHARS."""
    space = Namespace.of(tuple('"' * MAX_LABEL for _ in range(MAX_LABELS)))
    memory = "N" * 1000
    scope = space.scope(memory)
    key = "\x01" * MAX_KEY_CHARS
    value = "\x01" * ((MAX_VALUE_BYTES - 2) // 6)
    base = len(encode_json({"scope": scope, "blob": ""}))
    metadata = {"scope": scope, "blob": "\x01" * ((MAX_VALUE_BYTES - base) // 6)}
    assert MAX_VALUE_BYTES - 6 < len(encode_json(metadata)) <= MAX_VALUE_BYTES
    source = registry.create("sqlite", memory_dir=tmp_path / "a")
    target = registry.create("sqlite", memory_dir=tmp_path / "b")
    try:
        await source.store_many([NewEntry(key, value, metadata, None, 1e9)])
        out = io.StringIO()
        await export_memories(source, out)
        line = out.getvalue().splitlines(keepends=True)[1]
        assert json.loads(line)["namespace"] == space.text
        assert len(line) <= MAX_LINE_CHARS, len(line)
        out.seek(0)
        await import_memories(target, read_lines(out, "caps.jsonl"))
        got = await target.get(key, scope)
        assert got is not None and got.value == value
    finally:
        await source.close()
        await target.close()


async def test_metadata_too_large_once_placed_is_refused_at_its_line(tmp_path: Path) -> None:
    """The namespace is part of the stored metadata's scope: metadata that fits in the
    root but not once placed under a namespace is refused at its line, nothing stored."""
    fits = MAX_VALUE_BYTES - len(encode_json({"scope": "N", "blob": ""})) - 2
    line = encode_json({"memory": "N", "key": "k", "value": 1, "created_at": 1,
                        "metadata": {"blob": "x" * fits}})
    text = HEADER + line + "\n"
    backend = registry.create("sqlite", memory_dir=tmp_path)
    try:
        with pytest.raises(TransferError) as caught:
            await import_memories(backend, read_lines(io.StringIO(text), "f"), source="f",
                                  namespace=Namespace.of("tenant"))
        assert caught.value.where == "f:2" and "metadata" in str(caught.value).lower()
        assert await backend.count() == 0
        report = await import_memories(backend, read_lines(io.StringIO(text), "f"))
        assert report.memories == {"N": 1}  # in the root it fits
    finally:
        await backend.close()


async def test_only_an_export_holding_namespaces_is_version_2(tmp_path: Path) -> None:
    """An export of the root holding no namespaced entry is version 1, as before
    namespaces, so any AXON reads it; one holding any is version 2, which an AXON older
    than namespaces refuses instead of importing every namespace into its root. This
    AXON reads both."""
    backend = registry.create("sqlite", memory_dir=tmp_path / "a")
    copy = registry.create("sqlite", memory_dir=tmp_path / "b")
    try:
        await backend.store("k", "in the root", {"scope": "Notes"})
        plain = io.StringIO()
        await export_memories(backend, plain)
        assert _lines(plain.getvalue())[0] == {"format": "axon-memory", "version": 1}
        await backend.store("k", "in u42", {"scope": U42.scope("Notes")})
        both = io.StringIO()
        await export_memories(backend, both)
        assert _lines(both.getvalue())[0] == {"format": "axon-memory", "version": 2}
        mine = io.StringIO()
        await export_memories(backend, mine, ["Notes"], namespace=U42)
        assert _lines(mine.getvalue())[0]["version"] == 2
        for text in (plain, both):
            text.seek(0)
            await import_memories(copy, read_lines(text, "f"))
        assert await _values(copy, ROOT) == ["in the root"]
        assert await _values(copy, U42) == ["in u42"]
    finally:
        await backend.close()
        await copy.close()
