"""`min_score` and `below_floor` everywhere a recall is written (docs/language.md, `min_score`).

The relevance floor is a memory field and a recall option (checked, with positions),
a Python argument (sync and async), `axon memory search --min-score` and MCP
`search`'s `min_relevance`; what it left out is `below_floor` in the `memory_read`
event, the recall's record, the handle's results and MCP's result, and "N entries
scored below the floor" where a person reads a short result (`axon run`, `axon memory
search`, the REPL). Keyword memories on real SQLite files: scores there do not depend
on the embedding model, so the counts are exact.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import axon
from axon.errors import AxonCheckError, AxonMemoryError
from axon.mcp_server.target import open_tool
from axon.repl.console import Console
from tests.memory.conftest import FakeClock
from tests.repl.conftest import Repl, make_session

ROOT = Path(__file__).resolve().parents[2]

DECL = "memory Notes { store: persistent, retrieval: keyword }\n"
FACTS = """\
remember("the quarterly report is due friday") -> Notes with { key: "report" }
remember("the quarterly budget review moved to monday") -> Notes with { key: "budget" }
remember("a recipe for tomato soup") -> Notes with { key: "soup" }
"""
""""quarterly report" matches two entries: "report" (every word, about 0.45) and
"budget" (one word, below 0.3); min_score 0.3 keeps one and leaves one out."""


def check_errors(text: str) -> list[tuple[str, int, int]]:
    with pytest.raises(AxonCheckError) as info:
        axon.compile(text)
    return [(d.message, d.line, d.column) for d in info.value.diagnostics]


# ---------------------------------------------------------------- checker and IR


@pytest.mark.parametrize(
    ("value", "shown"), [("1.5", "1.5"), ("2", "2"), ('"high"', '"high"'), ("true", "true")]
)
def test_a_memory_min_score_outside_0_to_1_is_an_error_at_its_value(
    value: str, shown: str
) -> None:
    [(message, line, column)] = check_errors(f"memory M {{\n  min_score: {value}\n}}")
    assert message == f"min_score in memory 'M' must be a number from 0 to 1, got {shown}"
    assert (line, column) == (2, 14)


def test_a_recall_min_score_outside_0_to_1_is_an_error_at_its_value() -> None:
    [(message, line, column)] = check_errors(
        DECL + 'recall("a") from Notes with { min_score: "high" }'
    )
    assert message == 'min_score in recall must be a number from 0 to 1, got "high"'
    assert (line, column) == (2, 42)


def test_a_misspelt_min_score_is_suggested() -> None:
    [(message, _, _)] = check_errors(DECL + 'recall("a") from Notes with { min_scor: 0.2 }')
    assert "did you mean 'min_score'?" in message


def test_min_score_is_resolved_into_the_ir_from_the_recall_or_its_memory() -> None:
    program = axon.compile(
        "memory M { min_score: 0.4 }\nmemory U {}\n"
        'recall("a") from M\nrecall("a") from M with { min_score: 0 }\nrecall("a") from U\n'
    )
    assert [m.min_score for m in program.memories] == [0.4, None]
    assert [s.min_score for s in program.statements] == [0.4, 0.0, None]  # type: ignore[union-attr]
    assert program.to_dict()["memories"][0]["min_score"] == 0.4


# ---------------------------------------------------------------- statements, records, events


def test_a_recall_statement_keeps_what_reaches_min_score_and_counts_the_rest(
    tmp_path: Path,
) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(DECL + FACTS)
        (unset,) = session.execute('recall("quarterly report") from Notes')
        (floored,) = session.execute(
            'recall("quarterly report") from Notes with { min_score: 0.3 }'
        )
        (none,) = session.execute('recall("quarterly report") from Notes with { min_score: 1 }')
        events = [e for e in session.events if e["event_type"] == "memory_read"][-3:]
    assert [r["key"] for r in unset["results"]] == ["report", "budget"]
    assert "below_floor" not in unset  # nothing left out: the record says nothing
    assert [r["key"] for r in floored["results"]] == ["report"]
    assert floored["below_floor"] == 1
    assert none["results"] == [] and none["below_floor"] == 2
    assert [e["data"]["below_floor"] for e in events] == [0, 1, 2]
    assert [e["data"].get("min_score") for e in events] == [None, 0.3, 1.0]


def test_a_memorys_min_score_applies_unless_the_recall_says_otherwise(tmp_path: Path) -> None:
    decl = "memory Notes { store: persistent, retrieval: keyword, min_score: 0.3 }\n"
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(decl + FACTS)
        (declared,) = session.execute('recall("quarterly report") from Notes')
        (zero,) = session.execute('recall("quarterly report") from Notes with { min_score: 0 }')
        handle = session.memory("Notes").recall("quarterly report")
    assert [r["key"] for r in declared["results"]] == ["report"]
    assert [r["key"] for r in zero["results"]] == ["report", "budget"]
    assert [r.key for r in handle] == ["report"] and handle.below_floor == 1


def test_a_tiered_recall_counts_below_floor_over_its_tiers(tmp_path: Path) -> None:
    decl = (
        "memory T { tiers: [session, persistent], retrieval: keyword, "
        "persist_if: { importance: high } }\n"
    )
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(decl)
        memory = session.memory("T")
        memory.remember("the quarterly report is due friday", key="report", importance="high")
        memory.remember("the quarterly budget review moved to monday", key="budget")
        found = memory.recall("quarterly report", min_score=0.3)
        event = [e for e in session.events if e["event_type"] == "memory_read"][-1]
    assert [r.key for r in found] == ["report"] and found.below_floor == 1
    assert event["data"]["below_floor"] == 1 and event["data"]["tiers"] == ["session", "persistent"]


# ---------------------------------------------------------------- Python


def test_the_handle_takes_min_score_and_returns_below_floor(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(DECL + FACTS)
        notes = session.memory("Notes")
        found = notes.recall("quarterly report", min_score=0.3)
        assert isinstance(found, axon.Results) and isinstance(found, list)
        assert [r.key for r in found] == ["report"] and found.below_floor == 1
        assert notes.recall("quarterly report").below_floor == 0
        assert notes.recall("quarterly report", min_score=1).below_floor == 2
        with pytest.raises(TypeError, match="min_score must be a number from 0 to 1"):
            notes.recall("quarterly", min_score="0.3")  # type: ignore[arg-type]
        wrong = "min_score must be a number from 0 to 1, got 1.5"
        with pytest.raises(AxonMemoryError, match=wrong) as info:
            notes.recall("quarterly", min_score=1.5)
        assert info.value.memory == "Notes"
        record = session.records[-1]
    assert record["below_floor"] == 2


def test_the_async_handle_takes_min_score_too(tmp_path: Path) -> None:
    async def main() -> tuple[list[str], int]:
        async with axon.AsyncSession(memory_dir=tmp_path) as session:
            await session.execute(DECL + FACTS)
            found = await session.memory("Notes").recall("quarterly report", min_score=0.3)
            with pytest.raises(AxonMemoryError, match="min_score"):
                await session.memory("Notes").recall("x", min_score=float("nan"))
            return [r.key for r in found], found.below_floor

    assert asyncio.run(main()) == (["report"], 1)


# ---------------------------------------------------------------- CLI, REPL, MCP


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AXON_EMBEDDER": "hashing"}
    return subprocess.run(
        [sys.executable, "-m", "axon.cli", *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )


def test_axon_run_says_how_many_entries_scored_below_the_floor(tmp_path: Path) -> None:
    program = tmp_path / "p.axon"
    program.write_text(
        DECL + FACTS + 'recall("quarterly report") from Notes with { min_score: 0.3 }\n'
    )
    result = cli("run", str(program), "--memory-dir", str(tmp_path / "mem"))
    assert result.returncode == 0, result.stderr
    assert "1 entry scored below the floor (min_score 0 shows them)" in result.stdout


def test_axon_memory_search_takes_min_score(tmp_path: Path) -> None:
    program = tmp_path / "p.axon"
    program.write_text(DECL + FACTS)
    # The memory is keyword: search is told so (its default is the backend's best mode).
    where = ["--memory-dir", str(tmp_path / "mem"), "--retrieval", "keyword"]
    assert cli("run", str(program), "--memory-dir", str(tmp_path / "mem")).returncode == 0
    shown = cli("memory", "search", "Notes", "quarterly report", "--min-score", "1", *where)
    assert shown.returncode == 0, shown.stderr
    assert "0 results (keyword)" in shown.stdout
    assert "2 entries scored below the floor" in shown.stdout
    data = json.loads(
        cli("memory", "search", "Notes", "quarterly report", "--min-score", "0.3", "--json",
            *where).stdout
    )
    assert [r["key"] for r in data["results"]] == ["report"] and data["below_floor"] == 1
    wrong = cli("memory", "search", "Notes", "quarterly", "--min-score", "1.5", *where)
    assert wrong.returncode == 2
    assert "--min-score must be a number from 0 to 1, not 1.5" in wrong.stderr
    assert "Traceback" not in wrong.stderr


@pytest.fixture
def repl(tmp_path: Path) -> Iterator[Repl]:
    """The REPL's console on a session, its output kept (as tests/repl's fixture)."""
    clock = FakeClock()
    session = make_session(tmp_path / "mem", clock)
    out, err = io.StringIO(), io.StringIO()
    yield Repl(session, Console(session, out, err, color=False, width=100), out, err, clock)
    session.close()


def test_the_repl_says_how_many_entries_scored_below_the_floor(repl: Repl) -> None:
    repl.run(DECL.replace("persistent", "session") + FACTS)
    repl.take()
    repl.run('recall("quarterly report") from Notes with { min_score: 1 }')
    out, err = repl.take()
    assert err == ""
    assert "0 results" in out and "2 entries scored below the floor" in out
    repl.run('recall("quarterly report") from Notes')
    out, _ = repl.take()
    assert "below the floor" not in out


async def test_mcp_search_takes_min_relevance_and_reports_below_floor(tmp_path: Path) -> None:
    tool = await open_tool(memory_dir=tmp_path)
    try:
        for key, text in (("report", "the quarterly report is due friday"),
                          ("budget", "the quarterly budget review moved to monday")):
            payload, is_error = await tool.call({"action": "write", "name": key, "content": text})
            assert not is_error, payload
        payload, is_error = await tool.call(
            {"action": "search", "query": "quarterly report", "min_relevance": 1}
        )
        assert not is_error, payload
        assert payload["results"] == [] and payload["below_floor"] == 2
        payload, _ = await tool.call({"action": "search", "query": "quarterly report"})
        assert payload["below_floor"] == 0 and payload["count"] >= 1
        payload, _ = await tool.call(
            {"action": "search", "query": "quarterly report", "min_relevance": 0}
        )
        assert payload["count"] == 2
        for wrong in (1.5, -1, "high", True):
            payload, is_error = await tool.call(
                {"action": "search", "query": "x", "min_relevance": wrong}
            )
            assert is_error and "min_relevance must be" in payload["error"], payload
        payload, is_error = await tool.call({"action": "list", "min_relevance": 0.5})
        assert is_error  # a search argument only
    finally:
        await tool.session.close()
