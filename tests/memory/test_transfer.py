"""Export and import (`axon.memory.transfer`) on real backends: lossless, idempotent, streaming."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import math
import threading
import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from axon.cli_transfer import addressable
from axon.errors import AxonMemoryError
from axon.memory import transfer
from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import (
    MAX_CONTEXT_JSON_CHARS,
    MAX_KEY_CHARS,
    MAX_VALUE_BYTES,
    NewEntry,
    encode_json,
)
from axon.memory.lifetimes import Owner
from axon.memory.registry import registry
from axon.memory.transfer import (
    MAX_LINE_CHARS,
    TransferError,
    export_memories,
    import_memories,
    memory_names,
    read_lines,
)
from tests.memory.conftest import (
    BACKEND_FACTORIES,
    BackendEnv,
    FakeClock,
    pg_dsn_or_skip,
    pg_test_schema,
)

WORDS = [
    "apple", "river", "stone", "cloud", "lamp", "garden",
    "violin", "orbit", "pepper", "meadow", "copper", "tide",
]


def _value(i: int) -> Any:
    """Values of every JSON type, so an import must keep types (not just text)."""
    kind = i % 5
    if kind == 0:
        return f"{WORDS[i % 12]} {WORDS[(i * 7) % 12]} note {i}"
    if kind == 1:
        return i * 1.5
    if kind == 2:
        return {"n": i, "words": [WORDS[i % 12], True, None]}
    if kind == 3:
        return [i, f"{WORDS[(i * 5) % 12]} list"]
    return i % 2 == 0


async def _fill(backend: MemoryBackend, clock: FakeClock) -> None:
    """Two memories; batches share a timestamp (ties), some entries expire, one already has."""
    for batch in range(6):
        items = []
        for j in range(7):
            i = batch * 7 + j
            memory = "Notes" if i % 3 else "Diary"
            meta: dict[str, Any] = {"scope": memory, "tags": [WORDS[i % 4]], "n": i}
            expires = clock.now + 3600 if i % 4 == 0 else None
            items.append(NewEntry(f"k{i}", _value(i), meta, expires))
        await backend.store_many(items)
        clock.advance(10)
    await backend.store(
        "gone", "expired already", {"scope": "Notes"}, expires_at=clock.now + 1
    )
    clock.advance(5)


async def _snapshot(backend: MemoryBackend) -> dict[str, Any]:
    """Everything a user can observe: every entry by get, listings, recall rankings.

    Expired entries are purged first: until then they still weigh in BM25 statistics.
    """
    await backend.purge_expired()
    out: dict[str, Any] = {}
    for memory in ("Notes", "Diary"):
        listed = await backend.list_entries(memory)
        out[memory] = [
            (e.key, e.value, type(e.value).__name__, e.metadata, e.timestamp, e.expires_at)
            for e in listed
        ]
        got = [await backend.get(e.key, memory) for e in listed]
        out[memory + ".get"] = [(g.key, g.value, g.metadata, g.timestamp) for g in got if g]
        for mode in ("exact", "keyword", "semantic", "hybrid"):
            for query in ("apple note", "river", "copper list", "note"):
                for linked in (False, True):
                    if linked and mode in ("exact", "semantic"):
                        continue
                    found = await backend.retrieve(query, 10, memory, mode=mode, linked=linked)
                    out[f"{memory}.{mode}.{query}.{linked}"] = [
                        (e.key, round(e.score, 6)) for e in found
                    ]
    return out


def _sqlite(tmp_path: Path, clock: FakeClock, name: str) -> MemoryBackend:
    return registry.create(
        "sqlite", memory_dir=tmp_path / name, clock=clock, embedder=HashingEmbedder()
    )


def _postgres(tmp_path: Path, clock: FakeClock) -> MemoryBackend:
    return registry.create(
        "pgvector",
        location=pg_dsn_or_skip(),
        schema=pg_test_schema(tmp_path / "pg"),
        pool_size=2,
        clock=clock,
        embedder=HashingEmbedder(),
    )


async def _move(
    source: MemoryBackend, target: MemoryBackend, *, with_vectors: bool = False
) -> str:
    out = io.StringIO()
    await export_memories(source, out, with_vectors=with_vectors)
    text = out.getvalue()
    await import_memories(target, io.StringIO(text))
    return text


class CountingEmbedder(HashingEmbedder):
    """`HashingEmbedder` counting the passages it embeds (0 means nothing was re-embedded)."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.passages = 0

    def embed_passages(self, texts: Any) -> Any:
        self.passages += len(texts)
        return super().embed_passages(texts)


def _vector(values: list[float], model: str = "hashing:64") -> dict[str, Any]:
    """The `vector` field of an export line holding `values`."""
    raw = np.asarray(values, dtype="<f4").tobytes()
    return {"model": model, "dim": len(values), "f32": base64.b64encode(raw).decode("ascii")}


def _semantic(snapshot: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in snapshot.items() if ".semantic." in k}


async def test_store_many_keeps_a_given_timestamp(backend: MemoryBackend, clock: FakeClock) -> None:
    [entry] = await backend.store_many(
        [NewEntry("old", "from last year", {"scope": "M"}, None, clock.now - 86400 * 365)]
    )
    assert entry.timestamp == clock.now - 86400 * 365
    got = await backend.get("old", "M")
    assert got is not None and got.timestamp == clock.now - 86400 * 365
    await backend.store("new", "stamped now", {"scope": "M"})
    assert [e.key for e in await backend.list_entries("M")] == ["new", "old"]
    with pytest.raises(ValueError, match="timestamp must be a finite number"):
        await backend.store_many([NewEntry("bad", 1, {"scope": "M"}, None, float("nan"))])


def _portable(snapshot: dict[str, Any]) -> dict[str, Any]:
    """What must match across backend kinds: entries, gets, and `exact` rankings.

    Keyword (BM25) and fused scores are each backend's own; those are compared
    against the same kind of backend filled natively instead.
    """
    return {k: v for k, v in snapshot.items() if ".keyword." not in k and ".hybrid." not in k
            and ".semantic." not in k}


async def test_round_trip_in_memory_sqlite_postgres_jsonl(tmp_path: Path) -> None:
    """Every hop reproduces what storing the same entries natively gives, exactly."""
    natives: list[MemoryBackend] = []

    async def native(make: Any) -> dict[str, Any]:
        clock = FakeClock()
        backend = make(clock)
        natives.append(backend)
        await _fill(backend, clock)
        return await _snapshot(backend)

    clock = FakeClock()
    origin = registry.create("in_memory", clock=clock, embedder=HashingEmbedder())
    await _fill(origin, clock)  # leaves the clock where the natives' clocks end
    sqlite = _sqlite(tmp_path, clock, "a")
    postgres = _postgres(tmp_path, clock)
    final = _sqlite(tmp_path, clock, "b")
    try:
        expected = await _snapshot(origin)
        assert len(expected["Notes"]) == 28 and len(expected["Diary"]) == 14
        first = await _move(origin, sqlite)
        assert await _snapshot(sqlite) == await native(lambda c: _sqlite(tmp_path, c, "n1"))
        second = await _move(sqlite, postgres)
        assert await _snapshot(postgres) == await native(
            lambda c: _postgres(tmp_path / "native", c)
        )
        third = await _move(postgres, final)
        final_snapshot = await _snapshot(final)
        assert final_snapshot == await native(lambda c: _sqlite(tmp_path, c, "n2"))
        for hop in (sqlite, postgres):
            assert _portable(await _snapshot(hop)) == _portable(expected)
        assert first == second == third  # the JSONL itself is identical after every hop
        lines = first.splitlines()
        assert json.loads(lines[0]) == {"format": "axon-memory", "version": 1}
        assert len(lines) == 1 + 42  # the expired entry is not exported
        assert all('"gone"' not in line for line in lines)
        record = json.loads(lines[1])
        assert set(record) == {
            "memory", "key", "value", "metadata", "created_at", "updated_at", "expires_at",
            "context",
        }
        assert "scope" not in record["metadata"]
    finally:
        for backend in (origin, sqlite, postgres, final, *natives):
            await backend.close()


async def test_import_twice_adds_nothing(backend: MemoryBackend, clock: FakeClock) -> None:
    source = registry.create("in_memory", clock=clock, embedder=HashingEmbedder())
    await _fill(source, clock)
    out = io.StringIO()
    await export_memories(source, out)
    await import_memories(backend, io.StringIO(out.getvalue()))
    before = await _snapshot(backend)
    report = await import_memories(backend, io.StringIO(out.getvalue()))
    assert report.entries == 42
    assert await backend.count() == 42
    assert await _snapshot(backend) == before
    await source.close()


async def test_import_into_and_expired_skipped(tmp_path: Path) -> None:
    clock = FakeClock()
    target = _sqlite(tmp_path, clock, "t")
    lines = [
        json.dumps({"format": "axon-memory", "version": 1}),
        json.dumps({"memory": "A", "key": "x", "value": 1, "metadata": {}, "created_at": 5.0,
                    "expires_at": None}),
        json.dumps({"memory": "B", "key": "y", "value": "old", "metadata": {},
                    "created_at": 5.0, "expires_at": clock.now - 1}),
    ]
    report = await import_memories(target, lines, into="Merged")
    assert report.memories == {"Merged": 1} and report.skipped_expired == 1
    assert await memory_names(target) == ["Merged"]
    got = await target.get("x", "Merged")
    assert got is not None and got.value == 1 and got.timestamp == 5.0
    await target.close()


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        ([], 1, "the file is empty"),
        (['{"format": "csv"}'], 1, "not an AXON memory export"),
        (['{"format": "axon-memory", "version": 3}'], 1,
         "version 3 is not one this AXON reads (it reads 1 and 2)"),
        (["PK\x03\x04garbage"], 1, "not JSON"),
        (["HEADER", "ok", '{"memory": "A", "key": "z", "value": 1, "crea'], 3, "not JSON"),
        (["HEADER", "ok", "[1, 2]"], 3, "must be a JSON object, not a list"),
        (["HEADER", '{"memory": "A", "key": "k", "value": 1}'], 2, 'no "created_at"'),
        (["HEADER", "ok", '{"memory": "A", "key": "", "value": 1, "created_at": 1}'], 3,
         "key must not be empty"),
        (["HEADER", '{"memory": "~axon|x", "key": "k", "value": 1, "created_at": 1}'], 2,
         "reserved"),
        (["HEADER", '{"memory": "A", "key": "k", "value": 1, "created_at": "today"}'], 2,
         '"created_at" must be a number, not a string'),
        # A boolean is not a version (True == 1 let `true` through).
        (['{"format": "axon-memory", "version": true}'], 1,
         '"version" must be a whole number, not a boolean'),
        (['{"format": "axon-memory", "version": "1"}'], 1,
         '"version" must be a whole number, not a string'),
        # Only version 1 is read: not an older one (a `>` for `!=` let 0 through), nor
        # a negative one, nor one that is not a whole number.
        (['{"format": "axon-memory", "version": 0}'], 1, "version 0 is not one"),
        (['{"format": "axon-memory", "version": -1}'], 1, "version -1 is not one"),
        (['{"format": "axon-memory", "version": 1.5}'], 1,
         '"version" must be a whole number, not 1.5'),
        (['{"format": "axon-memory", "version": 1.0}'], 1,
         '"version" must be a whole number, not 1.0'),
        (['{"format": "axon-memory", "version": null}'], 1,
         '"version" must be a whole number, not null'),
        # What no program could address: a blank key, a memory no program can declare.
        (["HEADER", "ok", '{"memory": "A", "key": "   ", "value": 1, "created_at": 1}'], 3,
         "key must be a non-empty string (memory 'A', key '   ')"),
        (["HEADER", '{"memory": "A", "key": "\\t\\n", "value": 1, "created_at": 1}'], 2,
         "key must be a non-empty string"),
        (["HEADER", "ok", '{"memory": "my notes", "key": "k", "value": 1, "created_at": 1}'],
         3, "not a memory name a program can declare (letters, digits and _, not starting "
         "with a digit); import its entries with --into NAME (memory 'my notes', key 'k')"),
        (["HEADER", '{"memory": "9lives", "key": "k", "value": 1, "created_at": 1}'], 2,
         "not a memory name a program can declare"),
        (["HEADER", '{"memory": "Notes\\n", "key": "k", "value": 1, "created_at": 1}'], 2,
         "not a memory name a program can declare"),
        (["HEADER", "ok", '{"memory": "A", "key": "k", "value": 1, "created_at": NaN}'], 3,
         "memory 'A', key 'k': \"created_at\" must be a finite number, not NaN"),
        (["HEADER", "ok", '{"memory": "A", "key": "k", "value": 1, "created_at": 1e300}'], 3,
         "memory 'A', key 'k': \"created_at\" must be a Unix time from"),
        (["HEADER", "ok", '{"memory": "A", "key": "k", "value": 1, "created_at": 1, '
          '"expires_at": Infinity}'], 3, '"expires_at" must be a finite number or null'),
        (["HEADER", '{"memory": "", "key": "k", "value": 1, "created_at": 1}'], 2,
         '"memory" must be a non-empty string, not ""'),
    ],
)
async def test_bad_file_names_the_line_and_writes_nothing_of_the_batch(
    tmp_path: Path, lines: list[str], line: int, message: str
) -> None:
    header = json.dumps({"format": "axon-memory", "version": 1})
    good = json.dumps({"memory": "A", "key": "first", "value": "v", "created_at": 1.0})
    text = [header if x == "HEADER" else good if x == "ok" else x for x in lines]
    target = _sqlite(tmp_path, FakeClock(), "bad")
    with pytest.raises(TransferError) as info:  # with the rules `axon memory import` uses
        await import_memories(
            target, [t + "\n" for t in text], source="f.jsonl", addressable=addressable
        )
    assert str(info.value).startswith(f"f.jsonl:{line}: error: ")
    assert message in str(info.value)
    assert await target.count() == 0  # the good line before the bad one was not written
    await target.close()


async def test_into_refuses_two_memories_sharing_a_key(tmp_path: Path) -> None:
    lines = [
        json.dumps({"format": "axon-memory", "version": 1}),
        json.dumps({"memory": "A", "key": "k", "value": "from A", "created_at": 1.0}),
        json.dumps({"memory": "B", "key": "k", "value": "from B", "created_at": 2.0}),
    ]
    target = _sqlite(tmp_path, FakeClock(), "into")
    with pytest.raises(TransferError) as info:
        await import_memories(target, lines, into="X", source="f.jsonl")
    assert str(info.value) == (
        "f.jsonl:3: error: key 'k' of memory 'B' goes into memory 'X' where line 2 "
        "(memory 'A') already puts it: each entry must be stored once"
    )
    assert await target.count() == 0
    await target.close()


async def test_a_key_repeated_in_one_memory_is_replaced_and_counted_once(tmp_path: Path) -> None:
    lines = [
        json.dumps({"format": "axon-memory", "version": 1}),
        json.dumps({"memory": "A", "key": "k", "value": "first", "created_at": 1.0}),
        json.dumps({"memory": "A", "key": "j", "value": "other", "created_at": 1.5}),
        json.dumps({"memory": "A", "key": "k", "value": "second", "created_at": 2.0}),
    ]
    target = _sqlite(tmp_path, FakeClock(), "again")
    report = await import_memories(target, lines, into="X")
    assert report.memories == {"X": 2} and report.entries == 2
    got = await target.get("k", "X")
    assert got is not None and got.value == "second"  # the later line, as a remember would
    await target.close()


async def test_a_bad_line_after_a_stored_batch_says_what_was_stored(tmp_path: Path) -> None:
    lines = [json.dumps({"format": "axon-memory", "version": 1})] + [
        json.dumps({"memory": "A", "key": f"k{i}", "value": i, "created_at": 1.0})
        for i in range(transfer.BATCH)
    ]
    target = _sqlite(tmp_path, FakeClock(), "half")
    with pytest.raises(TransferError) as info:
        await import_memories(target, [*lines, "{not json"], source="f.jsonl")
    assert str(info.value).startswith(f"f.jsonl:{transfer.BATCH + 2}: error: not JSON")
    assert str(info.value).endswith(
        f"({transfer.BATCH:,} entries before this line were imported; importing the file "
        "again once it is fixed adds none of them twice)"
    )
    assert await target.count() == transfer.BATCH
    await target.close()


async def test_owned_scopes_are_not_exported(tmp_path: Path) -> None:
    clock = FakeClock()
    source = _sqlite(tmp_path, clock, "s")
    owner = Owner.current()
    await source.store("a", "persistent", {"scope": "Notes"})
    await source.store("b", "session data", {"scope": owner.scope("session", "Notes")})
    out = io.StringIO()
    report = await export_memories(source, out)
    assert report.memories == {"Notes": 1}
    assert "session data" not in out.getvalue()
    owner.release()
    await source.close()


async def test_export_streams_in_bounded_memory(tmp_path: Path) -> None:
    """50k entries: exporting holds a page at a time, far less than the whole memory."""
    clock = FakeClock()
    source = _sqlite(tmp_path, clock, "big")
    total = 50_000
    for start in range(0, total, 5000):
        await source.store_many(
            [
                NewEntry(f"key{i}", f"value {i} " + "x" * 150, {"scope": "Big", "n": i})
                for i in range(start, start + 5000)
            ]
        )
        clock.advance(1)

    class Counter:
        lines = 0

        def write(self, text: str) -> int:
            self.lines += text.count("\n")
            return len(text)

    sink = Counter()
    tracemalloc.start()
    try:
        report = await export_memories(source, sink)
        _, export_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        everything = await source.list_entries("Big")
        _, whole_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.entries == total and sink.lines == total + 1
    assert len(everything) == total
    # Holding every entry costs tens of MB; the export stays a small fraction of that.
    assert export_peak < whole_peak / 4, (export_peak, whole_peak)
    await source.close()


async def test_round_trip_with_vectors_embeds_nothing_again(tmp_path: Path) -> None:
    """in-memory -> SQLite -> PostgreSQL -> SQLite with vectors: every hop gives the
    same gets and rankings, the same JSONL (vectors bit for bit), and no entry is
    embedded again when the target's model is the source's."""
    clock = FakeClock()
    embedders = [CountingEmbedder() for _ in range(4)]
    origin = registry.create("in_memory", clock=clock, embedder=embedders[0])
    await _fill(origin, clock)
    assert await origin.ensure_vectors("Notes") + await origin.ensure_vectors("Diary") == 42
    embedded = embedders[0].passages
    sqlite = registry.create("sqlite", memory_dir=tmp_path / "a", clock=clock,
                             embedder=embedders[1])
    postgres = registry.create(
        "pgvector", location=pg_dsn_or_skip(), schema=pg_test_schema(tmp_path / "pg"),
        pool_size=2, clock=clock, embedder=embedders[2],
    )
    final = registry.create("sqlite", memory_dir=tmp_path / "b", clock=clock,
                            embedder=embedders[3])
    natives: list[MemoryBackend] = []
    try:
        expected = await _snapshot(origin)
        texts = []
        for source, target in ((origin, sqlite), (sqlite, postgres), (postgres, final)):
            out = io.StringIO()
            exported = await export_memories(source, out, with_vectors=True)
            assert exported.vectors_kept == 42
            texts.append(out.getvalue())
            report = await import_memories(target, io.StringIO(texts[-1]))
            assert (report.vectors_kept, report.vectors_dropped) == (42, 0)
            snapshot = await _snapshot(target)
            assert _portable(snapshot) == _portable(expected)
            assert _tied(_semantic(snapshot)) == _tied(_semantic(expected))
            natives.append(await _native_twin(target, tmp_path / f"n{len(natives)}"))
            assert snapshot == await _snapshot(natives[-1])  # every mode, tie order too
        assert embedders[0].passages == embedded
        assert [e.passages for e in embedders[1:]] == [0, 0, 0]  # nothing re-embedded
        assert texts[0] == texts[1] == texts[2]
        record = json.loads(texts[0].splitlines()[1])
        assert set(record["vector"]) == {"model", "dim", "f32"}
        assert record["vector"]["model"] == "hashing:64" and record["vector"]["dim"] == 64
        assert json.loads(texts[0].splitlines()[0]) == {"format": "axon-memory", "version": 1}
    finally:
        for backend in (origin, sqlite, postgres, final, *natives):
            await backend.close()


def _tied(rankings: dict[str, Any]) -> dict[str, Any]:
    """Rankings with each run of equal scores as a set: backends order exact ties
    (here: entries sharing no feature with the query) each their own way."""
    out: dict[str, Any] = {}
    for name, ranking in rankings.items():
        runs: list[tuple[float, set[str]]] = []
        for key, score in ranking:
            if runs and runs[-1][0] == score:
                runs[-1][1].add(key)
            else:
                runs.append((score, {key}))
        out[name] = runs[:-1]  # the last run may be cut by top_k differently
    return out


async def _native_twin(like: MemoryBackend, where: Path) -> MemoryBackend:
    """A backend of `like`'s kind filled by `_fill` and embedded by its own model."""
    clock = FakeClock()
    pg = like.name == "pgvector"
    twin = _postgres(where, clock) if pg else _sqlite(where, clock, "twin")
    await _fill(twin, clock)
    return twin


async def test_vectors_of_another_model_are_dropped_and_re_embedded(tmp_path: Path) -> None:
    clock = FakeClock()
    origin = registry.create("in_memory", clock=clock, embedder=HashingEmbedder())
    await _fill(origin, clock)
    await origin.ensure_vectors("Notes")
    out = io.StringIO()
    assert (await export_memories(origin, out, ["Notes"], with_vectors=True)).vectors_kept == 28
    other = CountingEmbedder(32)
    target = registry.create("sqlite", memory_dir=tmp_path / "t", clock=clock, embedder=other)
    report = await import_memories(target, io.StringIO(out.getvalue()))
    assert (report.entries, report.vectors_kept, report.vectors_dropped) == (28, 0, 28)
    assert await target.read_vectors("Notes", ["k1"], "hashing:64") == {}
    await target.retrieve("apple", 5, "Notes", mode="semantic")
    assert other.passages == 28  # embedded by the target's own model
    # Without an embedder, vectors cannot be exported (and are skipped on import).
    bare = registry.create("sqlite", memory_dir=tmp_path / "bare", clock=clock)
    with pytest.raises(AxonMemoryError, match="exporting vectors needs the embedding model"):
        await export_memories(origin.__class__(clock=clock), io.StringIO(), ["X"],
                              with_vectors=True)
    report = await import_memories(bare, io.StringIO(out.getvalue()))
    assert report.vectors_dropped == 28
    for backend in (origin, target, bare):
        await backend.close()


@pytest.mark.parametrize(
    ("vector", "message"),
    [
        ([1, 2], '"vector" must be an object, not a list'),
        ({"dim": 2, "f32": "AAAAAAAAAAA="}, '"vector" needs a "model"'),
        ({"model": "m", "dim": 0, "f32": ""}, '"vector" needs a "dim"'),
        ({"model": "m", "dim": 2}, '"vector" needs "f32"'),
        ({"model": "m", "dim": 2, "f32": "not base64!"}, "is not base64"),
        ({"model": "m", "dim": 3, "f32": "AAAAAAAAAAA="}, "holds 8 bytes, not 12"),
        ({"model": "m" * 1025, "dim": 1, "f32": "AACAPw=="}, "at most 1,024 characters"),
        # Right model and dimension, but no embedding: refused, not trusted (a NaN one
        # was never found again, a huge one scored 1.0 on every query).
        (_vector([math.nan] + [0.0] * 63), "not a finite number (NaN or infinity)"),
        (_vector([math.inf] + [0.0] * 63), "not a finite number (NaN or infinity)"),
        (_vector([0.0] * 64), "is all zeros"),
        (_vector([3e38] * 64), "has length 2.4e+39, not 1 (an embedding is normalised: 1 +- 0.01)"),
        (_vector([0.5] + [0.0] * 63), "has length 0.5, not 1"),
        (_vector([1.02] + [0.0] * 63), "has length 1.02, not 1"),
    ],
)
async def test_a_bad_vector_names_the_line(
    tmp_path: Path, vector: Any, message: str, capfd: pytest.CaptureFixture[str]
) -> None:
    header = json.dumps({"format": "axon-memory", "version": 1})
    line = json.dumps(
        {"memory": "A", "key": "k", "value": "v", "created_at": 1.0, "vector": vector}
    )
    target = _sqlite(tmp_path, FakeClock(), "bad")
    with warnings.catch_warnings(), pytest.raises(TransferError) as info:
        warnings.simplefilter("error")  # numpy's overflow warning reached stderr
        await import_memories(target, [header, line], source="v.jsonl")
    assert str(info.value).startswith("v.jsonl:2: error: ") and message in str(info.value)
    assert await target.count() == 0
    assert capfd.readouterr().err == ""
    await target.close()


@pytest.mark.parametrize("off", [0.0, -0.99, 0.99])
async def test_a_vector_of_length_one_within_the_tolerance_is_kept(
    tmp_path: Path, off: float
) -> None:
    length = 1.0 + off * transfer.NORM_TOLERANCE  # just inside the tolerance
    embedder = HashingEmbedder(64)
    header = json.dumps({"format": "axon-memory", "version": 1})
    unit = embedder.embed_passages(["v"])[0]
    line = json.dumps(
        {"memory": "A", "key": "k", "value": "v", "created_at": 1.0,
         "vector": _vector(list(unit * length), model=embedder.model_id)}
    )
    target = registry.create(
        "sqlite", memory_dir=tmp_path / "ok", clock=FakeClock(), embedder=embedder
    )
    report = await import_memories(target, [header, line], source="v.jsonl")
    assert report.vectors_kept == 1
    await target.close()


def test_a_line_past_the_limit_is_refused_without_reading_the_rest_of_it() -> None:
    # A 300 MB line used to be read whole (637 MB RSS) before it was refused.
    header = '{"format":"axon-memory","version":1}\n'
    handle = io.StringIO(header + '{"memory":"N","value":"' + "a" * (3 * MAX_LINE_CHARS) + '"}\n')
    lines = read_lines(handle, "huge.jsonl")
    assert next(lines) == header
    with pytest.raises(TransferError) as caught:
        next(lines)
    assert str(caught.value) == (
        "huge.jsonl:2: error: line is more than 7,362,053 characters long "
        "(the longest line an export writes)"
    )
    assert handle.tell() == len(header) + MAX_LINE_CHARS + 1  # the rest was never read
    exact = io.StringIO("b" * (MAX_LINE_CHARS - 1) + "\n")  # at the limit: read whole
    assert [len(line) for line in read_lines(exact, "ok.jsonl")] == [MAX_LINE_CHARS]


async def test_json_errors_read_as_sentences(tmp_path: Path) -> None:
    # json says "Unterminated string starting at"; "... at at column 38" was doubled.
    header = json.dumps({"format": "axon-memory", "version": 1})
    target = _sqlite(tmp_path, FakeClock(), "bad")
    with pytest.raises(TransferError) as info:
        await import_memories(target, [header + "\n", '{"memory": "A", "key": "z", "value": "x'])
    assert str(info.value).endswith("not JSON (Unterminated string starting at column 38)")
    await target.close()


async def test_metadata_the_low_level_api_stored_comes_back_as_it_was(tmp_path: Path) -> None:
    """The seed API stores any JSON metadata: an export of it must import, unchanged."""
    clock = FakeClock()
    source = _sqlite(tmp_path, clock, "odd")
    odd = {"scope": "M", "type": "note", "importance": "high", "tags": "work", "related": [1]}
    await source.store("k", "a value", odd)
    out = io.StringIO()
    await export_memories(source, out)
    target = _sqlite(tmp_path, clock, "odd-copy")
    report = await import_memories(target, io.StringIO(out.getvalue()))
    assert report.entries == 1
    got = await target.get("k", "M")
    assert got is not None and got.metadata == odd
    await source.close()
    await target.close()


def _in_thread(work: Any) -> None:
    """Run coroutine function `work` to its end on its own event loop in another thread:
    a second writer, as another process would be, while the export's loop waits."""
    failures: list[BaseException] = []

    def body() -> None:
        try:
            asyncio.run(work())
        except BaseException as exc:  # handed to the test
            failures.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    if failures:
        raise failures[0]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_an_entry_stored_again_during_the_export_is_written_once(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of 2; after the first page another writer stores k0 (already written) and
    k5 (not reached yet) again: both move to the end of the oldest-first order. The
    export writes each key once, k0 with the data it had read, k5 with its new data."""
    clock = FakeClock()

    def make() -> MemoryBackend:
        if kind == "sqlite":
            return _sqlite(tmp_path, clock, "moving")
        return _postgres(tmp_path, clock)

    source, writer = make(), make()
    for i in range(6):
        await source.store(f"k{i}", f"first {i}", {"scope": "M"})
        clock.advance(1)
    monkeypatch.setattr(transfer, "PAGE", 2)

    async def store_again() -> None:
        clock.advance(10)
        for key in ("k0", "k5"):
            await writer.store(key, f"again {key}", {"scope": "M"})

    class Sink:
        text = ""

        def write(self, text: str) -> int:
            if self.text.count("\n") == 1:  # the header only: the first page comes now
                _in_thread(store_again)
            self.text += text
            return len(text)

    sink = Sink()
    try:
        report = await export_memories(source, sink)
        written = [json.loads(line) for line in sink.text.splitlines()[1:]]
        keys = [record["key"] for record in written]
        assert sorted(keys) == [f"k{i}" for i in range(6)], keys  # k0 was written twice
        values = {record["key"]: record["value"] for record in written}
        assert values["k0"] == "first 0" and values["k5"] == "again k5"
        assert report.entries == 6
    finally:
        await writer.close()
        await source.close()


async def test_an_entry_at_every_cap_exports_to_a_line_import_reads(tmp_path: Path) -> None:
    """The longest line export can write: a value and a metadata (with a long memory
    name in its "scope") of 1 MB of JSON each, all of it escapes, a 1,024-character key
    of escapes, long times, a 65,536-dimension vector and the longest context (the text
    of a list of 1 MB of DEL characters stored before it: `'\\x7f'` in its text, five
    characters each in JSON). It is within MAX_LINE_CHARS (derived from those caps, not
    far above them) and imports back as it was."""
    clock = FakeClock()
    embedder = HashingEmbedder(transfer.MAX_VECTOR_DIM)
    memory = "N" * 1000  # a name a program can declare, long

    def make(name: str) -> MemoryBackend:
        return registry.create(
            "sqlite", memory_dir=tmp_path / name, clock=clock, embedder=embedder
        )

    key = "\x01" * MAX_KEY_CHARS  # six characters each as JSON: \u0001
    value = "\x01" * ((MAX_VALUE_BYTES - 2) // 6)
    base = len(encode_json({"scope": memory, "blob": ""}))
    metadata = {"scope": memory, "blob": "\x01" * ((MAX_VALUE_BYTES - base) // 6)}
    assert MAX_VALUE_BYTES - 6 < len(encode_json(metadata)) <= MAX_VALUE_BYTES
    source, target = make("caps"), make("caps-copy")
    before = ["\x7f" * (MAX_VALUE_BYTES - 4)]  # `["..."]`: 1 MB of JSON
    assert len(encode_json(before).encode()) == MAX_VALUE_BYTES
    try:
        await source.store("before", before, {"scope": memory})  # the next one's context
        await source.store_many(
            [NewEntry(key, value, metadata, -1.2345678901234567e-300 + 9e10,
                      -2.2250738585072014e-308 + 1.7e9 + 0.123456789)]
        )
        unit = np.full(transfer.MAX_VECTOR_DIM, 1 / 256, dtype=np.float32)
        assert await source.write_vectors(memory, embedder.model_id, [(key, unit)]) == 1
        out = io.StringIO()
        await export_memories(source, out, with_vectors=True)
        line = out.getvalue().splitlines(keepends=True)[2]
        assert MAX_LINE_CHARS - 20_000 < len(line) <= MAX_LINE_CHARS, len(line)
        assert json.loads(line)["context"] == str(before)
        out.seek(0)
        report = await import_memories(target, read_lines(out, "caps.jsonl"))
        assert report.entries == 2 and report.vectors_kept == 1
        assert await target.read_contexts(memory, [key]) == {key: str(before)}
        got, original = await target.get(key, memory), await source.get(key, memory)
        assert got is not None and original is not None
        assert (got.value, got.metadata, got.timestamp, got.expires_at) == (
            original.value, original.metadata, original.timestamp, original.expires_at
        )
    finally:
        await source.close()
        await target.close()


async def _linked(backend: MemoryBackend, query: str) -> list[tuple[str, float]]:
    found = await backend.retrieve(query, 10, "M", mode="keyword", linked=True)
    return [(e.key, round(e.score, 6)) for e in found]


async def test_linked_recall_is_the_same_after_a_round_trip_of_replaced_entries(
    backend: MemoryBackend, clock: FakeClock, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Each entry's context (the text stored just before it, `link: sequence`) is fixed
    at its first store; replacing entries later moves them in the oldest-first export.
    The export carries each context and the import stores it as written, into an empty
    memory and into one holding the same keys with other contexts, so linked recall
    ranks the same, and exporting the copy writes the same file."""
    make = BACKEND_FACTORIES[request.node.callspec.params["backend"]]
    count = 70  # one import batch past PostgreSQL's COPY_THRESHOLD (64): its COPY path
    for i in range(count):
        await backend.store(f"k{i}", f"{WORDS[i % 12]} note {i}", {"scope": "M"})
        clock.advance(1)
    for i in range(1, count, 7):  # stored again: new text and time, their context stays
        await backend.store(f"k{i}", f"{WORDS[(i + 5) % 12]} changed {i}", {"scope": "M"})
        clock.advance(1)
    fresh = make(BackendEnv(tmp_path / "fresh", clock, HashingEmbedder()))
    held = make(BackendEnv(tmp_path / "held", clock, HashingEmbedder()))
    try:
        for i in reversed(range(count)):  # other order, other contexts: all replaced
            await held.store(f"k{i}", f"{WORDS[i % 12]} placeholder", {"scope": "M"})
        text = await _move(backend, fresh)
        assert all('"context":' in line for line in text.splitlines()[1:])
        await import_memories(held, io.StringIO(text))
        for query in [*WORDS, "note changed", "changed"]:
            expected = await _linked(backend, query)
            assert expected, query
            assert await _linked(fresh, query) == expected, query
            assert await _linked(held, query) == expected, query
        for copy in (fresh, held):
            again = io.StringIO()
            await export_memories(copy, again)
            assert again.getvalue() == text
    finally:
        await fresh.close()
        await held.close()


async def test_an_export_without_contexts_imports_as_before(
    backend: MemoryBackend, clock: FakeClock
) -> None:
    """An older export (no "context" field, or null) still imports: each entry gets the
    backend's own context, the text stored just before it (the file's order)."""
    header = json.dumps({"format": "axon-memory", "version": 1})
    lines = [header] + [
        json.dumps({"memory": "M", "key": f"k{i}", "value": f"{word} note", "metadata": {},
                    "created_at": 1000.0 + i, "expires_at": None,
                    **({"context": None} if i == 2 else {})})
        for i, word in enumerate(WORDS[:4])
    ]
    report = await import_memories(backend, lines, source="old.jsonl")
    assert report.entries == 4
    contexts = await backend.read_contexts("M", ["k0", "k1", "k2", "k3"])
    if contexts:  # a backend that keeps contexts
        assert contexts == {
            "k0": "", "k1": "apple note", "k2": "river note", "k3": "stone note"
        }
    found = await backend.retrieve("river", 5, "M", mode="keyword", linked=True)
    assert [e.key for e in found] == ["k1", "k2"]  # k2 by its context


@pytest.mark.parametrize(
    ("context", "message"),
    [
        (7, '"context" must be a string or null, not a number'),
        (["a"], '"context" must be a string or null, not a list'),
        ("half \ud800", "memory 'A', key 'k': an entry's context contains an unpaired"),
        ("\x7f" * 10, None),  # DEL is one character of JSON: fine
    ],
)
async def test_a_bad_context_names_the_line(
    tmp_path: Path, context: Any, message: str | None
) -> None:
    header = json.dumps({"format": "axon-memory", "version": 1})
    line = json.dumps({"memory": "A", "key": "k", "value": "v", "created_at": 1.0,
                       "context": context})
    target = _sqlite(tmp_path, FakeClock(), "bad")
    try:
        if message is None:
            await import_memories(target, [header, line], source="c.jsonl")
            assert await target.read_contexts("A", ["k"]) == {"k": context}
            return
        with pytest.raises(TransferError) as info:
            await import_memories(target, [header, line], source="c.jsonl")
        assert str(info.value).startswith("c.jsonl:2: error: ")
        assert message in str(info.value)
        assert await target.count() == 0
    finally:
        await target.close()


def test_a_context_past_the_cap_is_refused_naming_memory_and_key() -> None:
    """A context whose JSON is longer than any value's text can be (in a line within
    MAX_LINE_CHARS) is refused with its line, memory and key."""
    context = "\x7f" * (MAX_CONTEXT_JSON_CHARS - 1)  # JSON: its characters and 2 quotes
    line = json.dumps({"memory": "A", "key": "k", "value": "v", "created_at": 1.0,
                       "context": context}, ensure_ascii=False)
    assert len(line) < MAX_LINE_CHARS
    with pytest.raises(TransferError) as info:
        transfer.parse_record(json.loads(line), "c.jsonl:2")
    assert str(info.value).startswith(
        "c.jsonl:2: error: memory 'A', key 'k': an entry's context is 5,000,003 characters"
    )
    transfer.parse_record(json.loads(line.replace("\x7f", "", 1)), "c.jsonl:2")  # at the cap
