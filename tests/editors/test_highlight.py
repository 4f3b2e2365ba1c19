"""The `axon` Pygments lexer: every program tokenised, registered, and used by the REPL and CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Comment, Error, Keyword, Name, Number, String

from axon.compiler.parser import keywords
from axon.highlight import AxonLexer, colour_excerpts

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted(
    [*(ROOT / "examples").glob("*.axon"), ROOT / "tests" / "compiler" / "every_construct.axon"]
)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_every_program_tokenises_without_error_tokens(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tokens = list(AxonLexer(stripnl=False).get_tokens_unprocessed(text))
    assert [value for _, kind, value in tokens if kind in Error] == []
    assert "".join(value for _, _, value in tokens) == text
    assert [start for start, _, _ in tokens] == sorted(start for start, _, _ in tokens)


def test_the_entry_point_registers_the_lexer_as_axon() -> None:
    assert isinstance(get_lexer_by_name("axon"), AxonLexer)
    assert isinstance(get_lexer_for_filename("notes.axon"), AxonLexer)


def kinds(text: str) -> list[tuple[object, str]]:
    return [(k, v) for _, k, v in AxonLexer().get_tokens_unprocessed(text) if v.strip()]


def test_tokens_come_from_the_grammar() -> None:
    text = (
        "// a note\nmemory Notes { store: persistent decay: 7d top_k: 3 }\n"
        'remember("x") -> Notes with { type: "fact" } /* done */'
    )
    got = kinds(text)
    assert got[0] == (Comment.Single, "// a note")
    assert (Keyword.Declaration, "memory") in got
    assert (Name.Class, "Notes") in got
    assert (Name.Attribute, "store") in got
    assert (Name.Attribute, "type") in got  # a keyword of the grammar, here a field name
    assert (Number, "7d") in got and (Number, "3") in got
    assert (String.Double, '"fact"') in got
    assert got[-1] == (Comment.Multiline, "/* done */")
    # every keyword of the grammar is one for the lexer (no second list to keep in step)
    for word in keywords().all:
        assert kinds(f"{word} x")[0][0] in Keyword, word


def test_a_stray_character_is_one_error_token_and_lexing_goes_on() -> None:
    got = kinds('memory A { store: § }\nrecall("q") from A')
    assert (Error, "§") in got
    assert got[-1] == (Name, "A")


def test_unterminated_string_does_not_stop_the_lexer() -> None:
    got = kinds('remember("open -> Notes\nrecall("q") from Notes')
    assert (Error, '"') in got
    assert (Keyword, "recall") in got


def test_colour_excerpts_colours_only_the_source_lines() -> None:
    rendered = "x.axon:1:19: error: Unknown store\n   1 | memory M { store: x }\n     | ^"
    coloured = colour_excerpts(rendered)
    head, source, caret = coloured.split("\n")
    assert head == rendered.split("\n")[0]
    assert caret == rendered.split("\n")[2]
    assert source.startswith("   1 | ") and "\x1b[" in source
    assert "\x1b" not in colour_excerpts("x.axon: error: no such file")


def check(path: Path, **env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    done = subprocess.run(
        [sys.executable, "-m", "axon.cli", "check", str(path)],
        capture_output=True,
        text=True,
        env={**environment, **env},
        timeout=120,
    )
    assert done.returncode == 1
    return done.stderr


def test_axon_check_colours_excerpts_only_when_colour_is_on(tmp_path: Path) -> None:
    path = tmp_path / "bad.axon"
    path.write_text("memory M { store: quantum }\n")
    plain = check(path)  # stderr is a pipe: no colour
    assert "\x1b" not in plain and "   1 | memory M { store: quantum }" in plain
    coloured = check(path, FORCE_COLOR="1")
    assert "\x1b[" in coloured
    assert coloured.splitlines()[0] == plain.splitlines()[0]
    assert "\x1b" not in check(path, FORCE_COLOR="", NO_COLOR="1")

