"""`recall(...) with { retrieval: semantic }` gets semantic retrieval, even on a memory
declared `keyword` or `exact`: the embedding model is loaded for the override."""

from __future__ import annotations

from pathlib import Path

import pytest

import axon

FACTS = {
    "dog": "The dog chased the ball across the park",
    "taxes": "Quarterly taxes are due in April",
    "shopping": "Remember to buy milk and eggs",
    "meeting": "The meeting moved to Thursday afternoon",
}


@pytest.mark.parametrize("declared", ["keyword", "exact"])
@pytest.mark.parametrize("backend", ["in_memory", "sqlite"])
@pytest.mark.parametrize("override", ["semantic", "hybrid"])
def test_an_override_runs_the_mode_it_asks_for_with_the_real_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, declared: str, backend: str, override: str
) -> None:
    monkeypatch.delenv("AXON_EMBEDDER", raising=False)  # the installed model, not the test one
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(
            f"memory K {{ store: persistent backend: {backend} retrieval: {declared} }}"
            if backend == "sqlite"
            else f"memory K {{ retrieval: {declared} }}"
        )
        for key, text in FACTS.items():
            session.execute(f'remember("{text}") -> K with {{ key: "{key}" }}')
        [record] = session.execute(
            f'recall("a puppy playing fetch") from K with {{ retrieval: {override}, top_k: 1 }}'
        )
        assert record["retrieval"] == override
        assert [r["key"] for r in record["results"]] == ["dog"]  # no word in common
        [event] = [e for e in session.events if e["event_type"] == "memory_read"]
        assert event["data"]["retrieval"] == override
        assert "requested_retrieval" not in event["data"] and "note" not in event["data"]


def test_without_any_model_the_override_falls_back_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AXON_EMBEDDER", "none")
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute("memory K { retrieval: keyword }")
        session.execute('remember("a puppy") -> K with { key: "dog" }')
        [record] = session.execute('recall("puppy") from K with { retrieval: semantic }')
        assert record["retrieval"] == "keyword"
        [event] = [e for e in session.events if e["event_type"] == "memory_read"]
        assert event["data"]["requested_retrieval"] == "semantic"
        assert "no embedding model" in event["data"]["note"]
