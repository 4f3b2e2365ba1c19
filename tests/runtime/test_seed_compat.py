"""Seed `000` (the AXON memory backend document), its examples run as written.

The imports, constructor, calls, scores, scope behaviour, clear counts, error and
trace events must be exactly the seed's. Where the document's sample output
disagrees with its own code, the code wins and the test says why.
"""

from __future__ import annotations

import dataclasses

import pytest

from axon.runtime.memory_backend import InMemoryBackend, MemoryBackend, MemoryEntry
from axon.runtime.tracer import TraceEventType, Tracer
from tests.memory.conftest import FakeClock


def test_the_seed_names_import() -> None:
    assert issubclass(InMemoryBackend, MemoryBackend)
    entry = MemoryEntry(
        key="contract_type",
        value="Non-Disclosure Agreement",
        metadata={"source": "Extract", "confidence": 0.95},
        timestamp=1704067200.0,
    )
    assert entry.score == 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.score = 1.0  # type: ignore[misc]
    assert MemoryEntry(key="k", value=1).metadata == {}


async def test_seed_example_contract() -> None:
    tracer = Tracer()
    memory = InMemoryBackend(tracer=tracer)

    # Stored entries
    await memory.store("contract_type", "NDA")
    await memory.store("contract_date", "2024-01-15")
    await memory.store("parties", "Acme Corp, Beta LLC")

    # Query
    results = await memory.retrieve("contract", top_k=2)

    # Two 0.7 results. The document lists contract_type first, but the seed's code
    # sorts by timestamp descending, so with a real clock the newer entry comes first.
    assert [(e.key, e.score) for e in results] == [("contract_date", 0.7), ("contract_type", 0.7)]
    assert results[0].timestamp > results[1].timestamp
    assert [e.value for e in results] == ["2024-01-15", "NDA"]


async def test_seed_example_order_when_timestamps_tie() -> None:
    """Stored within one clock tick, the seed's stable sort keeps dict (store) order:
    this is the order the document prints."""
    memory = InMemoryBackend(clock=FakeClock())
    await memory.store("contract_type", "NDA")
    await memory.store("contract_date", "2024-01-15")
    await memory.store("parties", "Acme Corp, Beta LLC")
    results = await memory.retrieve("contract", top_k=2)
    assert [(e.key, e.score) for e in results] == [("contract_type", 0.7), ("contract_date", 0.7)]


async def test_seed_scoring_table() -> None:
    memory = InMemoryBackend()
    await memory.store("contract_type", "NDA")
    await memory.store("kind", "Non-Disclosure Agreement (NDA)")
    assert [(e.key, e.score) for e in await memory.retrieve("contract_type")] == [
        ("contract_type", 1.0)
    ]
    assert [(e.key, e.score) for e in await memory.retrieve("Contract")] == [("contract_type", 0.7)]
    found = await memory.retrieve("nda")
    assert [(e.key, e.score) for e in found] == [("kind", 0.4), ("contract_type", 0.4)]
    assert await memory.retrieve("nothing") == []


async def test_seed_scope_examples() -> None:
    memory = InMemoryBackend()
    await memory.store(
        key="research_summary",
        value="Quantum computing trends...",
        metadata={"scope": "ResearchKnowledge"},
    )
    await memory.store(
        key="legal_precedent",
        value="Smith v. Jones...",
        metadata={"scope": "LegalKnowledge"},
    )

    # Only search ResearchKnowledge
    results = await memory.retrieve(query="quantum", scope="ResearchKnowledge")
    assert [e.key for e in results] == ["research_summary"]
    assert await memory.retrieve(query="quantum", scope="LegalKnowledge") == []

    # Search all scopes: "(if 'knowledge' in values)"; these values do not say it
    assert await memory.retrieve(query="knowledge", scope=None) == []
    await memory.store("research_note", "more knowledge", {"scope": "ResearchKnowledge"})
    await memory.store("legal_note", "legal knowledge", {"scope": "LegalKnowledge"})
    results = await memory.retrieve(query="knowledge", scope=None)
    assert [e.key for e in results] == ["legal_note", "research_note"]

    # Clear only ResearchKnowledge: removes research_summary (and the note), keeps legal
    count = await memory.clear(scope="ResearchKnowledge")
    assert count == 2
    assert [e.key for e in await memory.retrieve("smith")] == ["legal_precedent"]
    assert await memory.retrieve("quantum") == []


async def test_seed_usage_example_and_trace() -> None:
    tracer = Tracer()
    memory = InMemoryBackend(tracer=tracer)

    await memory.store(
        key="contract_analysis_summary",
        value={
            "parties": ["Acme Corp", "Beta LLC"],
            "risk_score": 0.35,
            "key_findings": "Standard NDA with no unusual clauses",
        },
        metadata={
            "scope": "LegalKnowledge",
            "source": "AnalyzeContract",
            "confidence": 0.92,
        },
    )

    # The seed's substring scoring: "contract risk" is in neither key nor str(value)
    results = await memory.retrieve(query="contract risk", top_k=3, scope="LegalKnowledge")
    assert results == []
    results = await memory.retrieve(query="risk_score", top_k=3, scope="LegalKnowledge")
    assert [(e.key, e.score) for e in results] == [("contract_analysis_summary", 0.4)]
    entry = results[0]
    assert entry.metadata == {
        "scope": "LegalKnowledge",
        "source": "AnalyzeContract",
        "confidence": 0.92,
    }
    assert entry.value["risk_score"] == 0.35

    await memory.store("other", "x")
    # Clear specific scope
    assert await memory.clear(scope="LegalKnowledge") == 1
    # Clear all
    assert await memory.clear() == 1

    events = [event.to_dict() for event in tracer.events]
    assert [e["event_type"] for e in events] == [
        "memory_write",
        "memory_read",
        "memory_read",
        "memory_write",
    ]
    assert events[0]["data"] == {"key": "contract_analysis_summary", "value_type": "dict"}
    assert events[1]["data"] == {"query": "contract risk", "results_count": 0, "top_k": 3}
    assert events[2]["data"] == {"query": "risk_score", "results_count": 1, "top_k": 3}
    assert events[3]["data"] == {"key": "other", "value_type": "str"}
    assert tracer.events[0].event_type is TraceEventType.MEMORY_WRITE
    assert all(isinstance(e["timestamp"], float) for e in events)


async def test_seed_read_event_counts_results() -> None:
    tracer = Tracer()
    memory = InMemoryBackend(tracer=tracer)
    for key in ["contract_type", "contract_date", "contract_parties"]:
        await memory.store(key, "x")
    await memory.retrieve("contract")
    assert tracer.events[-1].data == {"query": "contract", "results_count": 3, "top_k": 5}


async def test_seed_empty_key_error_leaves_memory_unchanged() -> None:
    tracer = Tracer()
    memory = InMemoryBackend(tracer=tracer)
    await memory.store("kept", "value")
    with pytest.raises(ValueError) as info:
        await memory.store(key="", value="anything")
    assert str(info.value) == "Memory key must not be empty"
    assert [e.key for e in await memory.retrieve("")] == ["kept"]
    assert [e.event_type for e in tracer.events] == ["memory_write", "memory_read"]


async def test_seed_overwrite_on_same_key() -> None:
    clock = FakeClock()
    memory = InMemoryBackend(clock=clock)
    first = await memory.store("contract_type", "NDA")
    clock.advance(1)
    second = await memory.store("contract_type", "MSA")
    assert second.timestamp > first.timestamp
    results = await memory.retrieve("contract_type")
    assert [(e.value, e.score) for e in results] == [("MSA", 1.0)]
    assert await memory.clear() == 1


async def test_a_seed_style_backend_implements_only_three_methods() -> None:
    """The seed's Pinecone/Chroma sketches subclass MemoryBackend with store/retrieve/clear."""
    from axon.runtime.memory_backend import InMemoryBackend, MemoryBackend, MemoryEntry

    class ListBackend(MemoryBackend):
        def __init__(self) -> None:
            self.items: list[MemoryEntry] = []

        async def store(
            self, key: str, value: object, metadata: dict[str, object] | None = None
        ) -> MemoryEntry:
            entry = MemoryEntry(key=key, value=value, metadata=dict(metadata or {}))
            self.items.append(entry)
            return entry

        async def retrieve(
            self, query: str, top_k: int = 5, scope: str | None = None
        ) -> list[MemoryEntry]:
            return [e for e in self.items if query in e.key][:top_k]

        async def clear(self, scope: str | None = None) -> int:
            count = len(self.items)
            self.items.clear()
            return count

    backend = ListBackend()
    await backend.store("contract_type", "NDA")
    assert [e.key for e in await backend.retrieve("contract")] == ["contract_type"]
    assert await backend.clear() == 1
    assert isinstance(InMemoryBackend(), MemoryBackend)


async def test_seed_top_k_zero_and_negative_slice_as_the_seed_does() -> None:
    """The seed returns `candidates[:top_k]`: nothing for 0, all but the last for -1."""
    tracer = Tracer()
    memory = InMemoryBackend(tracer=tracer, clock=FakeClock())
    await memory.store("contract_type", "NDA")
    await memory.store("contract_date", "2024-01-15")
    await memory.store("contract_party", "Acme")
    await memory.store("other", "no match")
    assert await memory.retrieve("contract", top_k=0) == []
    everything = await memory.retrieve("contract", top_k=5)
    assert [e.key for e in everything] == ["contract_type", "contract_date", "contract_party"]
    assert await memory.retrieve("contract", top_k=-1) == everything[:-1]
    assert await memory.retrieve("contract", top_k=-5) == []
    reads = [e.data for e in tracer.events if e.event_type == TraceEventType.MEMORY_READ]
    assert reads == [
        {"query": "contract", "results_count": 0, "top_k": 0},
        {"query": "contract", "results_count": 3, "top_k": 5},
        {"query": "contract", "results_count": 2, "top_k": -1},
        {"query": "contract", "results_count": 0, "top_k": -5},
    ]


def test_the_language_still_refuses_top_k_zero() -> None:
    import axon

    with pytest.raises(axon.AxonCheckError):
        axon.compile('memory N {}\nrecall("x") from N with { top_k: 0 }')


@dataclasses.dataclass
class _Point:
    x: int
    y: int


async def test_seed_values_are_any_python_object() -> None:
    """The seed's dict keeps whatever it is given, and scores it by `str(value)`."""
    import datetime

    from axon.errors import AxonMemoryError
    from axon.memory.backends.in_memory import InMemoryBackend as EngineInMemory

    backend = InMemoryBackend()
    values = {
        "date": datetime.date(2026, 12, 2),
        "set": {1, 2},
        "point": _Point(1, 2),
        "bytes": b"raw bytes",
        "big": "x" * 2_000_000 + " needle",
    }
    for key, value in values.items():
        entry = await backend.store(key, value)
        assert entry.value is value
    found = {q: [e.key for e in await backend.retrieve(q)] for q in (
        "2026-12-02", "{1, 2}", "_Point(x=1", "raw bytes", "needle")}
    assert found == {"2026-12-02": ["date"], "{1, 2}": ["set"], "_Point(x=1": ["point"],
                     "raw bytes": ["bytes"], "needle": ["big"]}
    with pytest.raises(AxonMemoryError, match="Cannot store value"):
        await EngineInMemory().store("set", {1, 2})  # the engine's backends store JSON


def test_the_quirks_live_in_the_compatibility_module_under_unique_class_names() -> None:
    """The engine carried the shim's quirk (`MemoryBackend.stores_any_value`) and two
    classes were named `InMemoryBackend` (issue 27): the any-value store is now
    `AnyValueInMemoryBackend`, exported under the old names only as aliases."""
    import ast
    from pathlib import Path

    import axon.memory.backend
    from axon.memory.backends import in_memory
    from axon.runtime import memory_backend

    assert not hasattr(axon.memory.backend.MemoryBackend, "stores_any_value")
    assert InMemoryBackend is memory_backend.AnyValueInMemoryBackend
    assert issubclass(InMemoryBackend, in_memory.InMemoryBackend)
    assert MemoryBackend is axon.memory.backend.MinimalMemoryBackend
    package = Path(axon.memory.backend.__file__).resolve().parents[1]
    defined: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(str(path.relative_to(package)))
    for name in memory_backend.__all__:
        assert len(defined.get(name, [])) <= 1, f"class {name} is defined in {defined[name]}"


async def test_the_engine_still_refuses_what_json_cannot_hold() -> None:
    """Only the compatibility store keeps any Python object; the engine's in-memory
    backend (every `backend: in_memory` memory) refuses a set, naming the key."""
    from axon.errors import AxonMemoryError
    from axon.memory.backends.in_memory import InMemoryBackend as EngineInMemoryBackend

    kept = {1, 2}
    assert (await InMemoryBackend().store("k", kept)).value is kept
    with pytest.raises(AxonMemoryError, match="key 'k'"):
        await EngineInMemoryBackend().store("k", kept)
