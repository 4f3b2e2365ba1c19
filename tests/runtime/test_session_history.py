"""What a long-lived session keeps of its past: the newest `history` records and events.

A `Session` used to keep every output record and trace event it ever produced (+246 MB
after 10,000 recalls). It now keeps the newest `DEFAULT_HISTORY` of each, `history=N`
sets the bound (None: all), and what one `execute` returns (or an `AxonRuntimeError`
carries) is still every record of that run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import axon
from axon.errors import AxonMemoryError, AxonRuntimeError
from axon.runtime.session import DEFAULT_HISTORY
from axon.runtime.tracer import Tracer

DECL = "memory Notes { store: session retrieval: keyword }"


def test_a_long_lived_session_keeps_the_newest_records_and_events(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(DECL)
        notes = session.memory("Notes")
        notes.remember("the first note", key="n")
        for i in range(DEFAULT_HISTORY + 200):
            notes.recall(f"note {i}")
        session.execute('recall("the last one") from Notes')
        records, events = session.records, session.events
    assert len(records) == DEFAULT_HISTORY and len(events) == DEFAULT_HISTORY
    assert records[-1]["query"] == "the last one" and records[-1]["line"] == 1
    assert records[-2]["query"] == f"note {DEFAULT_HISTORY + 199}"
    assert events[-1]["data"]["query"] == "the last one"


@pytest.mark.parametrize("history", [0, 7, None])
def test_history_sets_the_bound(tmp_path: Path, history: int | None) -> None:
    with axon.Session(memory_dir=tmp_path, history=history) as session:
        session.execute(DECL)
        notes = session.memory("Notes")
        for i in range(DEFAULT_HISTORY + 5):
            notes.remember(f"note {i}", key=f"k{i}")
        kept = DEFAULT_HISTORY + 5 if history is None else history
        assert len(session.records) == kept and len(session.events) == kept
        assert session.tracer.events == session.tracer.events[-kept:] if kept else True


def test_one_execute_returns_every_record_of_its_run_whatever_is_kept(tmp_path: Path) -> None:
    program = DECL + "\n" + "".join(f'remember("v{i}") -> Notes\n' for i in range(12))
    with axon.Session(memory_dir=tmp_path, history=5) as session:
        assert len(session.execute(program)) == 12
        assert [r["value"] for r in session.records] == [f"v{i}" for i in range(7, 12)]
        failing = "".join(f'remember("w{i}") -> Notes\n' for i in range(8))
        with pytest.raises(AxonRuntimeError) as caught:
            session.execute(failing + 'remember("x") -> Notes with { related: ["none"] }\n')
        assert [r["value"] for r in caught.value.records] == [f"w{i}" for i in range(8)]
        (tmp_path / "file").write_text("not a directory")
        with pytest.raises(AxonRuntimeError) as unbound:  # nothing ran: no records
            session.execute(
                'memory Other { store: persistent backend: sqlite location: "file/x.db" }'
            )
        assert getattr(unbound.value, "records", []) == []


def test_async_session_and_a_tracer_take_the_bound(tmp_path: Path) -> None:
    import asyncio

    async def main() -> tuple[int, int]:
        async with axon.AsyncSession(memory_dir=tmp_path, history=3) as session:
            await session.execute(DECL)
            for i in range(10):
                await session.memory("Notes").remember(f"n{i}")
            return len(session.records), len(session.events)

    assert asyncio.run(main()) == (3, 3)
    tracer = Tracer(keep=2)
    for i in range(5):
        tracer.emit("memory_write", {"i": i})
    assert [e.data["i"] for e in tracer.events] == [3, 4]
    assert len(Tracer().events) == 0  # a tracer made by hand keeps all (none yet)


def test_one_shot_run_keeps_everything(tmp_path: Path) -> None:
    program = DECL + "\n" + 'remember("v") -> Notes\n' * (DEFAULT_HISTORY + 10)
    records, events = axon.run(program, memory_dir=tmp_path)
    assert len(records) == DEFAULT_HISTORY + 10 and len(events) >= DEFAULT_HISTORY + 10


@pytest.mark.parametrize(
    ("history", "error", "message"),
    [
        (-1, AxonMemoryError, "history must be 0 or more"),
        ("10", TypeError, "history must be an int"),
        (True, TypeError, "history must be an int"),
    ],
)
def test_a_bad_history_is_a_clear_error(
    tmp_path: Path, history: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        axon.Session(memory_dir=tmp_path, history=history)  # type: ignore[arg-type]


def test_a_handle_recall_can_keep_no_record(tmp_path: Path) -> None:
    """`recall(..., keep_record=False)` returns its results and leaves nothing behind in
    `session.records` (its trace event, which holds keys and scores, stays bounded)."""
    big = "needle " + "x" * 100_000
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(DECL)
        notes = session.memory("Notes")
        notes.remember(big, key="big")
        before = len(session.records)
        for _ in range(50):
            [result] = notes.recall("needle", keep_record=False)
            assert result.value == big
        assert len(session.records) == before
        notes.recall("needle")
        assert session.records[-1]["results"][0]["value"] == big  # kept by default
        with pytest.raises(TypeError, match="keep_record must be True or False"):
            notes.recall("x", keep_record="no")  # type: ignore[arg-type]


async def test_an_async_handle_recall_can_keep_no_record(tmp_path: Path) -> None:
    async with axon.AsyncSession(memory_dir=tmp_path) as session:
        await session.execute(DECL)
        notes = session.memory("Notes")
        await notes.remember("a note", key="n")
        before = len(session.records)
        assert [r.key for r in await notes.recall("note", keep_record=False)] == ["n"]
        assert len(session.records) == before
