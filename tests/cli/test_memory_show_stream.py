"""`axon memory show --limit N` with many entries: read and printed a page at a time.

A `--limit 1000000` used to read every entry in one call and build one table of all of
them before printing anything (976 MB for a million entries). Now each page of
`cli_store.PAGE` entries is printed before the next is read: the table (aligned by its
first page) and the `--json` document (the same JSON as one read, on one line) alike.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from axon.cli import app
from axon.cli_store import PAGE
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.entry import NewEntry
from axon.memory.registry import registry

ENTRIES = 2 * PAGE + 123


@pytest.fixture
def memory_dir(tmp_path: Path) -> Path:
    async def fill() -> None:
        backend = registry.create("sqlite", memory_dir=tmp_path / "mem")
        try:
            await backend.store_many(
                [NewEntry(f"k{i:05d}", f"value {i}", {"scope": "Notes"}) for i in range(ENTRIES)]
            )
        finally:
            await backend.close()

    asyncio.run(fill())
    return tmp_path / "mem"


def _spy_on_pages(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Each `list_page` call's limit and how many bytes stdout held when it was made
    (the real SQLite read runs: this only watches)."""
    calls: list[tuple[int, int]] = []
    real = SQLiteBackend.list_page

    async def watched(self: SQLiteBackend, scope: str | None, **kwargs: Any) -> Any:
        sys.stdout.flush()
        calls.append((kwargs["limit"], sys.stdout.buffer.getbuffer().nbytes))  # type: ignore[attr-defined]
        return await real(self, scope, **kwargs)

    monkeypatch.setattr(SQLiteBackend, "list_page", watched)
    return calls


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_show_prints_each_page_before_reading_the_next(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch, as_json: bool
) -> None:
    calls = _spy_on_pages(monkeypatch)
    args = ["memory", "show", "Notes", "--limit", "1000000", "--memory-dir", str(memory_dir)]
    result = CliRunner().invoke(app, args + (["--json"] if as_json else []))
    assert result.exit_code == 0, result.output
    assert [limit for limit, _ in calls] == [PAGE, PAGE, PAGE]  # never all at once
    written = [size for _, size in calls]
    assert written[0] == 0 and 0 < written[1] < written[2] < len(result.stdout_bytes)
    if as_json:
        data = json.loads(result.stdout)
        assert (data["count"], len(data["entries"]), data["next"]) == (ENTRIES, ENTRIES, None)
        assert [e["key"] for e in data["entries"]][:2] == ["k00000", "k00001"]  # ties:
        # one batch has one timestamp, and ties list first stored first
        assert len(result.stdout.splitlines()) == 1
    else:
        lines = result.stdout.splitlines()
        assert lines[0].split() == [
            "key", "age", "type", "importance", "value", "tags", "expires", "in"
        ]
        assert len(lines) == 2 + ENTRIES  # one header, one rule: pages add no headers
        assert lines[2].startswith("k00000 ") and lines[-1].startswith(f"k{ENTRIES - 1:05d} ")
        assert len({line.index("value") if "value" in line else 0 for line in lines[2:]}) == 1


def test_show_with_a_limit_over_pages_stops_there_and_gives_the_cursor(
    memory_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A limit past one page reads whole pages, then only what is left; the next page's
    cursor continues exactly after the last entry shown, as a single read's did."""
    calls = _spy_on_pages(monkeypatch)
    where = ["--memory-dir", str(memory_dir), "--json"]
    first = CliRunner().invoke(app, ["memory", "show", "Notes", "-n", str(PAGE + 5), *where])
    assert first.exit_code == 0, first.output
    assert [limit for limit, _ in calls] == [PAGE, 5]
    data = json.loads(first.stdout)
    assert len(data["entries"]) == PAGE + 5 and data["next"] is not None
    rest = CliRunner().invoke(
        app, ["memory", "show", "Notes", "-n", "1000000", "--after", data["next"], *where]
    )
    following = json.loads(rest.stdout)
    keys = [e["key"] for e in data["entries"] + following["entries"]]
    assert keys == [f"k{i:05d}" for i in range(ENTRIES)]
