"""The language server's piecewise parse and scan give exactly the whole text's parse and scan."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axon.compiler.ast import to_data
from axon.compiler.parser import parse
from axon.errors import AxonSyntaxError
from axon.lsp.analysis import analyse
from axon.lsp.chunks import ChunkedParser, pieces, scan

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted(
    [
        *(ROOT / "examples").glob("*.axon"),
        *(ROOT / "tests" / "golden").glob("*.axon"),
        ROOT / "tests" / "compiler" / "every_construct.axon",
    ]
)


def outcome(parse_text: object, text: str) -> object:
    """The AST as data (spans included), or the error's message and position."""
    try:
        return to_data(parse_text(text, "f.axon"))  # type: ignore[operator]
    except AxonSyntaxError as exc:
        return ("error", exc.message, tuple(exc.span))


def same(parser: ChunkedParser, text: str) -> None:
    assert outcome(parser.parse, text) == outcome(parse, text)
    assert parser.tokens(text) == scan(text)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.name)
def test_every_program_parses_the_same_in_pieces(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "".join(piece for _, _, piece in pieces(text)) == text
    parser = ChunkedParser()
    same(parser, text)
    same(parser, text)  # every piece reused
    assert parser.parsed == 0 or outcome(parse, text)[0] == "error"


EDITS = ["x", "\n", "", "}", "{", "/*", "*/", "memory M {}\n", '"', "\nflow", "// c\n", "§"]


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.axon")), ids=lambda p: p.name)
def test_edits_anywhere_keep_the_pieces_equal_to_the_whole(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    parser = ChunkedParser()
    same(parser, text)
    for n, at in enumerate(range(0, len(text), max(1, len(text) // 23))):
        edit = EDITS[n % len(EDITS)]
        edited = text[:at] + edit + text[at + (1 if edit == "" else 0) :]
        same(parser, edited)
        same(parser, text)  # and back


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(min_value=0), st.sampled_from(EDITS), st.booleans()),
        max_size=8,
    )
)
def test_any_sequence_of_edits(edits: list[tuple[int, str, bool]]) -> None:
    text = (ROOT / "examples" / "research_assistant.axon").read_text(encoding="utf-8")
    parser = ChunkedParser()
    for at, edit, delete in edits:
        at %= len(text) + 1
        text = text[:at] + edit + text[at + (1 if delete else 0) :]
        same(parser, text)


def test_an_edit_inside_a_line_parses_only_its_item_again() -> None:
    text = "".join(
        f'memory M{i} {{ store: session }}\nremember("fact {i}") -> M{i}\n' for i in range(50)
    )
    parser = ChunkedParser()
    analyse(text, parser=parser)
    assert parser.parsed == 100
    at = text.index("fact 25") + 4
    edited = text[:at] + "!" + text[at:]
    analysis = analyse(edited, parser=parser)
    assert parser.parsed == 1
    assert analysis.problems == analyse(edited).problems == []
    assert analysis.tokens == analyse(edited).tokens
