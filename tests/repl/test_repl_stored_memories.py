"""A second `axon repl --memory-dir D` knows the memories D's store holds: `.memories` lists
them as not declared in this session, an input naming one says `.declare NAME`, and
`.declare NAME` declares it with the store's settings (persistent, sqlite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from prompt_toolkit.input import PipeInput

from axon.repl.prompt import HISTORY_ENV
from tests.repl.conftest import CTRL_D, ENTER, run_axon_repl, run_main

FIRST = """\
memory Notes { store: persistent backend: sqlite }
memory Diary { store: persistent backend: sqlite }
remember("the quarterly report is due friday") -> Notes with { key: "report" }
remember("lunch on tuesday") -> Diary with { key: "lunch" }
remember("dinner on friday") -> Diary with { key: "dinner" }
"""


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """A memory directory a first session left Notes (1 entry) and Diary (2) in."""
    memory_dir = tmp_path / "mem"
    first = run_axon_repl(["--memory-dir", str(memory_dir)], FIRST, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    return memory_dir


def test_memories_lists_what_the_store_holds_and_declare_declares_it(
    stored: Path, tmp_path: Path
) -> None:
    script = (
        ".memories\n"
        'recall("quarterly report") from Notes\n'
        ".declare Notes\n"
        'recall("quarterly report") from Notes\n'
        ".memories\n"
    )
    result = run_axon_repl(["--memory-dir", str(stored)], script, cwd=tmp_path)
    out = result.stdout
    listing, after = out.split("memory Notes: persistent", 1)
    assert "no memories declared yet" in listing
    assert "in the store, not declared in this session (.declare NAME declares one):" in listing
    assert [line.split() for line in listing.splitlines()[-2:]] == [["Diary", "2"], ["Notes", "1"]]
    assert result.stderr.splitlines()[-1] == (
        "note: the store holds a memory 'Notes' (1 entry) not declared in this session: "
        ".declare Notes declares it"
    )
    assert result.returncode == 1  # the recall before .declare failed
    assert after.startswith(", sqlite, hybrid, decay none, 1 entry")
    assert 'recall "quarterly report" from Notes: 1 result (hybrid)' in after
    assert "report" in after
    tail = after.split("in the store, not declared", 1)[1]
    assert "Diary" in tail and "Notes" not in tail  # Notes is declared now


def test_declare_refuses_what_it_cannot_declare(stored: Path, tmp_path: Path) -> None:
    script = ".declare Note\n.declare\n.declare Diary\n.declare Diary\n.show Diary\n"
    result = run_axon_repl(["--memory-dir", str(stored)], script, cwd=tmp_path)
    assert result.stderr.splitlines() == [
        f"error: the store in {stored} holds no memory 'Note' (did you mean 'Notes'?)",
        "error: usage: .declare NAME",
        "error: memory 'Diary' is already declared in this session",
    ]
    assert "Diary: 2 of 2 entries, newest first" in result.stdout


def test_show_of_a_stored_memory_says_declare(stored: Path, tmp_path: Path) -> None:
    result = run_axon_repl(["--memory-dir", str(stored)], ".show Diary\n", cwd=tmp_path)
    assert result.stderr.splitlines() == [
        "error: no memory named 'Diary'",
        "note: the store holds a memory 'Diary' (2 entries) not declared in this session: "
        ".declare Diary declares it",
    ]


def test_the_banner_lists_the_stored_memories(
    stored: Path, tmp_path: Path, pipe: PipeInput, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AXON_EMBEDDER", "hashing")
    monkeypatch.setenv(HISTORY_ENV, str(tmp_path / "hist"))
    code, out, err = run_main(pipe, ".declare Diary" + ENTER + CTRL_D, stored)
    assert (code, err) == (0, "")
    assert (
        "the store holds 2 memories not declared in this session: Diary (2 entries), "
        "Notes (1 entry); .declare NAME declares one"
    ) in out
    assert "memory Diary: persistent, sqlite, hybrid, decay none, 2 entries" in out


def test_an_empty_memory_directory_lists_nothing_and_creates_nothing(tmp_path: Path) -> None:
    memory_dir = tmp_path / "empty"
    result = run_axon_repl(["--memory-dir", str(memory_dir)], ".memories\n", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert "not declared in this session" not in result.stdout
    assert not memory_dir.exists()
