"""Lexical rules against careless and hostile text: escapes, encodings, limits, brackets."""

from __future__ import annotations

from pathlib import Path

import pytest

import axon
from axon.compiler.lexer import MAX_NESTING, MAX_NUMBER_DIGITS
from axon.errors import AxonCheckError, AxonSyntaxError
from axon.source import MAX_SOURCE_BYTES, Source, SourceError, Span, read_source


def value_of(literal: str) -> object:
    (let,) = axon.compile(f"let x = {literal}").statements
    return let.to_dict()["value"]["value"]


@pytest.mark.parametrize(
    ("literal", "text"),
    [
        (r'"a\\b"', "a\\b"),
        (r'"say \"hi\""', 'say "hi"'),
        (r"'it\'s'", "it's"),
        (r'"a\nb\tc\rd"', "a\nb\tc\rd"),
        (r'"caf\u00e9"', "café"),
        (r'"\u{1F600}!"', "\U0001f600!"),
        (r'"\u{41}"', "A"),
        ('"tab\there"', "tab\there"),
    ],
)
def test_escapes_store_exactly_the_text_meant(literal: str, text: str) -> None:
    assert value_of(literal) == text


@pytest.mark.parametrize(
    ("literal", "column", "wanted"),
    [
        (r'"a\qb"', 11, r"'\q' is not an escape"),
        (r'"\0"', 10, r"'\0' is not an escape"),
        (r'"\ud800"', 10, "surrogate"),
        (r'"\u{110000}"', 10, "beyond U+10FFFF"),
        (r'"\u12"', 10, "needs four hex digits"),
        ('"a\x00b"', 11, "control character U+0000"),
        ('"\x1b[31m"', 10, "control character U+001B"),
    ],
)
def test_bad_escapes_and_control_characters_are_errors_at_their_position(
    literal: str, column: int, wanted: str
) -> None:
    with pytest.raises(AxonSyntaxError) as info:
        axon.compile(f"let x = {literal}")
    assert wanted in info.value.message
    assert (info.value.line, info.value.column) == (1, column)


def test_a_lone_surrogate_is_an_error_with_a_position_and_prints() -> None:
    with pytest.raises(AxonSyntaxError) as info:
        axon.compile('let a = 1\nlet x = "ok \ud800"')
    assert (info.value.line, info.value.column) == (2, 13)
    str(info.value).encode("utf-8")  # no UnicodeEncodeError when shown


def test_a_byte_order_mark_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "bom.axon"
    path.write_bytes(b"\xef\xbb\xbfmemory N { stroe: session }\n")
    text = read_source(path)
    assert not text.startswith("\ufeff")
    with pytest.raises(axon.AxonCheckError) as info:
        axon.compile("\ufeffmemory N { stroe: session }")
    assert (info.value.line, info.value.column) == (1, 12)  # the BOM takes no column
    assert axon.compile("\ufeffmemory N { store: session }").memories


def test_a_missing_brace_names_the_open_brace() -> None:
    with pytest.raises(AxonSyntaxError) as info:
        axon.compile("memory Notes {\n  store: session\n\nlet x = 1\n")
    assert (info.value.line, info.value.column) == (1, 14)
    assert "'{' opened at line 1, column 14 is never closed" in info.value.message
    assert "before 'let' at line 4, column 1" in info.value.message


@pytest.mark.parametrize("opener,closer", [("[", "]"), ("{a: ", "}"), ("(", ")")])
def test_nesting_works_up_to_the_limit_and_is_an_error_past_it(opener: str, closer: str) -> None:
    def text(depth: int) -> str:
        inner = opener * depth + "1" + closer * depth
        return f"let x = {inner}" if opener != "(" else f"run F({'f(' * depth}{')' * depth})"

    if opener != "(":
        axon.compile(text(MAX_NESTING))
    with pytest.raises(AxonSyntaxError) as info:
        axon.compile(text(500))
    assert "nesting too deep" in info.value.message
    assert info.value.line == 1


def test_numbers_past_the_digit_limit_are_errors() -> None:
    assert value_of("9" * MAX_NUMBER_DIGITS) == int("9" * MAX_NUMBER_DIGITS)
    with pytest.raises(AxonSyntaxError) as info:
        axon.compile("let x = " + "9" * 5000)
    assert info.value.message.startswith("number too long")
    assert (info.value.line, info.value.column) == (1, 9)


def test_source_size_is_bounded_for_strings_and_files(tmp_path: Path) -> None:
    with pytest.raises(AxonSyntaxError) as info:
        axon.compile(" " * (MAX_SOURCE_BYTES + 1))
    assert "source too large" in info.value.message
    path = tmp_path / "big.axon"
    path.write_bytes(b"\n" * 5 + b" " * MAX_SOURCE_BYTES)
    with pytest.raises(SourceError) as error:
        read_source(path)
    assert (error.value.line, error.value.column) == (6, MAX_SOURCE_BYTES - 5 + 1)


def test_read_source_reports_bad_bytes_with_a_position(tmp_path: Path) -> None:
    path = tmp_path / "latin1.axon"
    path.write_bytes(b'let a = 1\nlet x = "caf\xe9"\n')
    with pytest.raises(SourceError) as info:
        read_source(path)
    assert str(info.value).startswith(f"{path}:2:13: error: not UTF-8 text")
    # The line is shown (the bad byte as U+FFFD) with a caret under it, as any diagnostic.
    assert str(info.value).splitlines()[1:] == [
        '   2 | let x = "caf\ufffd"',
        "     |             ^",
    ]
    with pytest.raises(SourceError, match="no such file"):
        read_source(tmp_path / "missing.axon")
    with pytest.raises(SourceError, match="is a directory"):
        read_source(tmp_path)


def test_diagnostics_show_a_window_of_a_long_line_and_no_control_characters() -> None:
    source = Source("x = " + "a" * 100_000 + " \x1b[2J oops", "f.axon")
    rendered = source.render(Span(1, 100_006), "bad")
    assert len(rendered) < 500
    assert "\x1b" not in rendered
    line, caret = rendered.splitlines()[1:]
    assert line[caret.index("^")] == "?"  # the caret still points at the column


def test_lines_are_counted_as_the_lexer_counts_them() -> None:
    source = Source("a\u2028b\x0cc\nsecond\r\nthird")
    assert source.line_text(1) == "a\u2028b\x0cc"
    assert source.line_text(2) == "second"
    assert source.line_text(3) == "third"


def test_old_mac_line_endings_end_lines(tmp_path: Path) -> None:
    """A file with CR-only line endings: a `//` comment ends at its CR (it swallowed the
    whole file, so an error on the next line passed), and positions count CR lines."""
    path = tmp_path / "cr.axon"
    path.write_bytes(b"// old Mac file\rmemory M { store: bogus }\r")
    text = read_source(path)
    assert text == "// old Mac file\nmemory M { store: bogus }\n"
    with pytest.raises(AxonCheckError) as caught:
        axon.compile(text, filename=str(path))
    assert caught.value.line == 2
    path.write_bytes(b"memory M { store: session }\r\n")  # CRLF is left as it is
    assert read_source(path) == "memory M { store: session }\r\n"
