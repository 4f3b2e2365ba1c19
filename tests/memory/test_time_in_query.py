"""Time in the query (`axon.memory.retrieval.when`): the forms recognised and their windows,
what is not a time, and a query naming no time ranking exactly as without the rule on the
notes benchmark's questions and LoCoMo's questions (docs/language.md, "Time in the query")."""

from __future__ import annotations

import datetime
import json
import sys
from pathlib import Path

import attrs
import pytest

from axon.memory.backend import MemoryBackend
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import MemoryEntry, NewEntry
from axon.memory.retrieval.when import SCANNED_CHARS, Window, query_window

REPO = Path(__file__).resolve().parents[2]
NOW = datetime.datetime(2024, 3, 13, 15, 0, tzinfo=datetime.UTC).timestamp()
"""Wednesday, March 13, 2024, 15:00 UTC."""


def _day(text: str) -> float:
    return datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.UTC).timestamp()


WINDOWS = {
    "What did we decide on March 7, 2024?": ("2024-03-07", "2024-03-08"),
    "on 7 March": ("2024-03-07", "2024-03-08"),
    "the 7th of March 2024": ("2024-03-07", "2024-03-08"),
    "March 3rd": ("2024-03-03", "2024-03-04"),
    "on March 20": ("2023-03-20", "2023-03-21"),  # no year: the latest one before now
    "shared on December 1,2023": ("2023-12-01", "2023-12-02"),
    "on 2023-05-08": ("2023-05-08", "2023-05-09"),
    "Which city was Calvin visiting in August 2023?": ("2023-08-01", "2023-09-01"),
    "in May": ("2023-05-01", "2023-06-01"),
    "during March": ("2024-03-01", "2024-04-01"),
    "last March": ("2023-03-01", "2023-04-01"),
    "What happened in 2022?": ("2022-01-01", "2023-01-01"),
    "during the last week of August 2023": ("2023-08-25", "2023-09-01"),
    "the second week of November 2023": ("2023-11-08", "2023-11-15"),
    "early June 2023": ("2023-06-01", "2023-06-11"),
    "mid-August 2023": ("2023-08-11", "2023-08-21"),
    "at the end of February 2024": ("2024-02-21", "2024-03-01"),
    "summer of 2022": ("2022-06-01", "2022-09-01"),
    "today": ("2024-03-13", "2024-03-14"),
    "what did the user say yesterday": ("2024-03-12", "2024-03-13"),
    "the day before yesterday": ("2024-03-11", "2024-03-12"),
    "two days ago": ("2024-03-11", "2024-03-12"),
    "3 weeks ago": ("2024-02-19", "2024-02-26"),
    "a month ago": ("2024-02-01", "2024-03-01"),
    "last week": ("2024-03-04", "2024-03-11"),
    "this week": ("2024-03-11", "2024-03-18"),
    "last weekend": ("2024-03-09", "2024-03-11"),
    "last month": ("2024-02-01", "2024-03-01"),
    "last year": ("2023-01-01", "2024-01-01"),
    "last Monday": ("2024-03-11", "2024-03-12"),
    "on Wednesday": ("2024-03-13", "2024-03-14"),
    "last Wednesday": ("2024-03-06", "2024-03-07"),
    # A written-out date wins over a relative expression in the same query.
    "What did Maria do last weekend before April 10, 2023?": ("2023-04-10", "2023-04-11"),
}


@pytest.mark.parametrize("query", sorted(WINDOWS))
def test_each_form_names_its_window(query: str) -> None:
    window = query_window(query, NOW)
    start, end = WINDOWS[query]
    assert window is not None, query
    assert (window.start, window.end) == (_day(start), _day(end))


def test_past_n_units_end_now() -> None:
    window = query_window("anything in the past 3 days?", NOW)
    assert window is not None and (window.start, window.end) == (NOW - 3 * 86400, NOW)
    window = query_window("the past week", NOW)
    assert window is not None and (window.start, window.end) == (NOW - 7 * 86400, NOW)


NOT_TIMES = (
    "You may want to march on",
    "the second time we met",
    "it costs 2023 dollars",
    "meet at 7:30",
    "February 30, 2023",  # no such day
    "in 2 days",
    "What did Caroline research?",
    "a few days ago",  # too vague to bound
    "recently",
    "",
)


@pytest.mark.parametrize("query", NOT_TIMES)
def test_what_is_not_a_time(query: str) -> None:
    assert query_window(query, NOW) is None


def test_only_the_start_of_a_long_query_is_read() -> None:
    assert query_window("x " * SCANNED_CHARS + "in August 2023", NOW) is None
    assert query_window("in August 2023 " + "x " * 100_000, NOW) is not None


def test_nearness_is_one_inside_and_falls_to_zero_within_the_reach() -> None:
    day = 86400.0
    window = Window(_day("2023-08-01"), _day("2023-09-01"), "August 2023")
    assert window.nearness(_day("2023-08-15")) == 1.0
    assert window.nearness(window.end + 31 * day / 2) == pytest.approx(0.5)
    assert window.nearness(window.start - 31 * day) == 0.0
    short = Window(_day("2023-08-01"), _day("2023-08-02"), "August 1, 2023")
    assert short.nearness(short.end + 3.5 * day) == pytest.approx(0.5)  # a week at least


# ------------------------------------------------- no time named: exactly as without the rule


def _as_without_time(backend: MemoryBackend) -> None:
    backend.hybrid_weights = attrs.evolve(backend.hybrid_weights, time=0.0)


def _same(got: list[MemoryEntry], want: list[MemoryEntry]) -> None:
    assert [(e.key, e.score, e.signals) for e in got] == [(e.key, e.score, e.signals) for e in want]


def _notes() -> tuple[list[tuple[str, str]], list[str]]:
    data = REPO / "benchmarks" / "data" / "notes"
    with (data / "notes.jsonl").open(encoding="utf-8") as lines:
        notes = [(row["key"], row["text"]) for row in map(json.loads, lines)]
    with (data / "questions.jsonl").open(encoding="utf-8") as lines:
        questions = [row["question"] for row in map(json.loads, lines)]
    return notes, questions


@pytest.mark.parametrize("kind", ["in_memory", "sqlite"])
async def test_notes_questions_naming_no_time_rank_exactly_as_without_the_rule(
    tmp_path: Path, kind: str
) -> None:
    """Every notes benchmark question that names no time: the same keys, scores and
    signals, byte for byte, in keyword, semantic and hybrid, as with `time` off."""
    notes, questions = _notes()
    plain = [q for q in questions if query_window(q, NOW) is None]
    assert len(plain) > 300
    backends: list[MemoryBackend] = []
    for name in ("on", "off"):
        clock = lambda: NOW  # noqa: E731
        if kind == "sqlite":
            backends.append(
                SQLiteBackend(memory_dir=tmp_path / name, clock=clock, embedder=HashingEmbedder())
            )
        else:
            backends.append(InMemoryBackend(clock=clock, embedder=HashingEmbedder()))
    on, off = backends
    _as_without_time(off)
    try:
        for backend in backends:
            await backend.store_many([NewEntry(k, v, {"scope": "notes"}) for k, v in notes])
        for question in plain:
            for mode in ("keyword", "semantic", "hybrid"):
                _same(
                    await on.retrieve(question, 10, "notes", mode=mode),
                    await off.retrieve(question, 10, "notes", mode=mode),
                )
    finally:
        for backend in backends:
            await backend.close()


async def test_locomo_questions_naming_no_time_rank_exactly_as_without_the_rule() -> None:
    """LoCoMo dev's questions that name no time, each turn remembered at the time it was
    said in a `link: sequence` memory, asked at the conversation's end: hybrid (with
    the learned ranker) and keyword give the same keys, scores and signals as with
    `time` off; the questions that name one do change some rankings."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import locomo

    conversations = locomo.load_conversations(locomo.DEFAULT_DATA, only=["26", "43"])
    backends = [InMemoryBackend(embedder=HashingEmbedder()) for _ in range(2)]
    on, off = backends
    _as_without_time(off)
    changed = 0
    try:
        for conv in conversations:
            places = locomo.session_indexes(conv.turns)
            entries = [
                locomo.turn_entry(conv.name, turn, date=False, speaker_metadata=True, index=place)
                for turn, place in zip(conv.turns, places, strict=True)
            ]
            asked = locomo.ended(conv)
            for backend in backends:
                await backend.store_many(entries)
                backend.clock = lambda asked=asked: asked
            for question, _evidence, _category in conv.questions:
                for mode in ("hybrid", "keyword"):
                    got = await on.retrieve(question, 10, conv.name, mode=mode, linked=True)
                    want = await off.retrieve(question, 10, conv.name, mode=mode, linked=True)
                    if query_window(question, asked) is None:
                        _same(got, want)
                    else:
                        changed += [e.key for e in got] != [e.key for e in want]
    finally:
        for backend in backends:
            await backend.close()
    assert changed > 0
