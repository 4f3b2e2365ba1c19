"""Stored text on a terminal: control characters are shown as escapes, never acted on.

A memory name, key, value, tag or metadata may hold ESC sequences (clear the screen,
retitle the window, plant a hyperlink), C1 controls or bidirectional overrides, written
by an import, an MCP agent or any program. Every `axon` command that prints them for a
person shows them as `\\x1b`, `\\x9b`, `\\u202e`; `--json` prints the same JSON document
with them escaped; rich markup in stored text (`[bold]`, `[link=...]`) is printed as text.
Each command runs as a user runs it (a subprocess).
"""

from __future__ import annotations

import asyncio
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest

import axon
from axon.memory.registry import registry
from tests.helpers.cli import axon as axon_command


def run_axon(*args: str) -> Any:
    """`axon ARGS...` in a wide terminal, so that no table cuts the text it shows."""
    return axon_command(*args, COLUMNS="400")

HOSTILE = (
    "\x1b]0;pwned\x07\x1b[2J\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\"
    "\x9b31m\x7f\u202eevil\u2066 [bold]B[/bold] [link=http://x.example]L[/link]"
)
"""Title, clear screen, an OSC 8 hyperlink, an 8-bit CSI, DEL, bidi overrides, markup."""

KEY = "k\x1b[2J\u202e"
NAME = "Bad\x1b]0;name\x07"
"""A memory name no program can declare, as an import or another program may leave it."""

_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unsafe(text: str) -> list[str]:
    """The characters of `text` a terminal may act on (tab and newline are fine)."""
    return [
        c for c in text
        if (unicodedata.category(c) == "Cc" and c not in "\n\t") or c in _BIDI
        or c in "\u2028\u2029"
    ]


def assert_shown(output: str) -> None:
    assert unsafe(output) == [], output
    assert "\\x1b" in output and "Traceback" not in output, output


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A memory directory whose Notes memory holds hostile text everywhere, and a memory
    whose very name is hostile."""
    memory_dir = tmp_path / "mem"
    with axon.Session(memory_dir=memory_dir) as session:
        session.execute("memory Notes { store: persistent backend: sqlite }")
        session.memory("Notes").remember(
            HOSTILE, key=KEY, tags=[HOSTILE], metadata={"note": HOSTILE}
        )

    async def hostile_name() -> None:
        backend = registry.create("sqlite", memory_dir=memory_dir)
        try:
            await backend.store("plain", HOSTILE, {"scope": NAME})
        finally:
            await backend.close()

    asyncio.run(hostile_name())
    return memory_dir


def test_every_memory_command_shows_control_characters_as_escapes(store: Path) -> None:
    where = ["--memory-dir", str(store)]
    commands = [
        ["ls"],
        [],  # `axon memory` alone: ls and the hint
        ["show", "Notes"],
        ["show", NAME],
        ["get", "Notes", KEY],
        ["search", "Notes", "evil"],
        ["stats"],
    ]
    for command in commands:
        result = run_axon("memory", *command, *where)
        assert result.returncode == 0, (command, result.stderr)
        assert_shown(result.stdout)
        assert "[bold]B[/bold]" in result.stdout or command in (["ls"], [], ["stats"])
    listing = run_axon("memory", "ls", *where).stdout
    assert "Bad\\x1b]0;name\\x07" in listing
    got = run_axon("memory", "get", "Notes", KEY, *where).stdout
    assert "k\\x1b[2J\\u202e" in got and "\\x9b31m\\x7f\\u202eevil\\u2066" in got
    assert "[link=http://x.example]L[/link]" in got  # markup is text, not a link


def test_errors_that_echo_stored_text_show_it_escaped(store: Path) -> None:
    missing = run_axon("memory", "get", "Notes", KEY + "x", "--memory-dir", str(store))
    assert missing.returncode == 1
    assert_shown(missing.stderr)
    unknown = run_axon("memory", "show", "Bad\x1b]0;nam", "--memory-dir", str(store))
    assert unknown.returncode == 1
    assert_shown(unknown.stderr)
    assert "did you mean 'Bad\\x1b]0;name\\x07'?" in unknown.stderr


def test_json_output_is_the_same_json_with_every_control_character_escaped(
    store: Path,
) -> None:
    where = ["--memory-dir", str(store), "--json"]
    for command in (["show", "Notes"], ["get", "Notes", KEY], ["search", "Notes", "evil"],
                    ["ls"], ["show", NAME]):
        result = run_axon("memory", *command, *where)
        assert result.returncode == 0, result.stderr
        assert unsafe(result.stdout) == [], command
        found = set(_strings(json.loads(result.stdout)))
        assert HOSTILE in found or NAME in found, command
    got = json.loads(run_axon("memory", "get", "Notes", KEY, *where).stdout)
    assert (got["key"], got["value"], got["metadata"]["note"]) == (KEY, HOSTILE, HOSTILE)


def _strings(data: Any) -> list[str]:
    if isinstance(data, str):
        return [data]
    items = data.values() if isinstance(data, dict) else data if isinstance(data, list) else []
    return [text for item in items for text in _strings(item)]


def test_run_and_trace_show_stored_text_escaped(tmp_path: Path) -> None:
    program = tmp_path / "p.axon"
    program.write_text(
        "memory Notes { store: persistent backend: sqlite }\n"
        'remember("\\u{1b}]0;T\\u{7}x \\u{9b}2J \\u{202e}y [bold]B[/bold]") -> Notes '
        'with { key: "k\\u{1b}[2J", tags: ["\\u{1b}[5mt"] }\n'
        'recall("x") from Notes\n'
        'forget("k\\u{1b}[2J") from Notes\n'
    )
    where = ["--memory-dir", str(tmp_path / "mem")]
    trace = tmp_path / "trace.json"
    result = run_axon("run", str(program), "--trace", str(trace), *where)
    assert result.returncode == 0, result.stderr
    assert_shown(result.stdout)
    assert "[bold]B[/bold]" in result.stdout and "\\x9b2J \\u202ey" in result.stdout
    as_json = run_axon("run", str(program), "--json", *where)
    assert as_json.returncode == 0, as_json.stderr
    assert unsafe(as_json.stdout) == []
    records = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert records[0]["key"] == "k\x1b[2J" and "\x9b2J \u202ey" in records[0]["value"]
    shown = run_axon("trace", str(trace))
    assert shown.returncode == 0, shown.stderr
    assert_shown(shown.stdout)
    assert "k\\x1b[2J" in shown.stdout


def test_a_progress_bar_shows_a_stored_memory_name_escaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`embed` and `search` name the memory in their progress bar (on a terminal only):
    its control characters are escapes and its markup is text there too."""
    import io

    from axon.cli_store import progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with progress(f"embedding {NAME} [bold]x[/bold]", 10) as advance:
        advance(10)
    shown = screen.getvalue()
    assert "Bad\\x1b]0;name\\x07 [bold]x[/bold]" in shown
    assert "\x1b]0;" not in shown and "\x07" not in shown


def test_verbose_log_lines_show_stored_text_escaped(tmp_path: Path) -> None:
    """`axon run -v` logs every memory event with its key and query: escaped too."""
    program = tmp_path / "p.axon"
    program.write_text(
        "memory Notes { store: session }\n"
        'remember("\\u{1b}]0;T\\u{7}x") -> Notes with { key: "k\\u{1b}[2J" }\n'
        'recall("x \\u{9b}2J") from Notes\n'
    )
    result = run_axon("run", str(program), "-v", "--memory-dir", str(tmp_path / "mem"))
    assert result.returncode == 0, result.stderr
    assert "memory_write" in result.stderr and "key=k\\x1b[2J" in result.stderr
    assert_shown(result.stderr)
