"""`format_source`: one canonical layout, idempotent, the same program, every comment in place."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from lark import Token

from axon.compiler import formatter
from axon.compiler.checker import check
from axon.compiler.formatter import format_source
from axon.compiler.parser import parse
from axon.errors import AxonCheckError, AxonSyntaxError
from axon.source import Source, SourceError, read_source
from tests.helpers.programs import programs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.axon"))
FIXTURES = sorted((ROOT / "tests").rglob("*.axon"))


def _comments(text: str) -> list[tuple[str, int]]:
    """Each comment with the number of tokens before it, commas aside (the layout writes those)."""
    grammar = formatter._grammar()
    body = text.lstrip("\ufeff").replace("\r\n", "\n")
    tokens = list(grammar.parser.parse(body).scan_values(lambda v: isinstance(v, Token)))
    starts = [0, *(t.end_pos for t in tokens)]
    ends = [*(t.start_pos for t in tokens), len(body)]
    found = []
    for n, (begin, end) in enumerate(zip(starts, ends, strict=True)):
        before = sum(1 for t in tokens[:n] if str(t) != ",")
        for m in grammar.ignored.finditer(body, begin, end):
            if m.lastgroup not in grammar.spaces:
                found.append((m.group().rstrip(), before))
    return found


_POSITION = re.compile(r"(line|column) \d+")


def _meaning(text: str) -> Any:
    """What a program means: its IR, or the checker's messages (positions aside)."""
    program = parse(text)
    try:
        return check(program, Source(text))
    except AxonCheckError as exc:
        return sorted((d.severity, _POSITION.sub("", d.message)) for d in exc.diagnostics)


def assert_formats(text: str) -> str:
    """Format `text`: the result is a fixed point, means the same and keeps every comment."""
    result = format_source(text)
    assert format_source(result) == result, "formatting twice changed the text"
    if "/*" not in text:  # a block comment is kept as written, white space and all
        assert not re.search(r"[ \t]\r?$", result, re.MULTILINE), "a line ends in white space"
    assert parse(result) == parse(text)
    assert _meaning(result) == _meaning(text)
    assert _comments(result) == _comments(text)
    return result


def _parses(text: str) -> bool:
    try:
        parse(text)
    except AxonSyntaxError:
        return False
    return True


# ---------------------------------------------------------------- files


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_are_formatted(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert assert_formats(text) == text, f"axon fmt {path.relative_to(ROOT)} changes it"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT / "tests")))
def test_fixtures_format_to_the_same_program(path: Path) -> None:
    try:
        text = read_source(path)
    except SourceError:
        pytest.skip("not readable as a program (the hostile corpus holds such files)")
    if not _parses(text):
        with pytest.raises(AxonSyntaxError):
            format_source(text)
        return
    assert_formats(text)


# ---------------------------------------------------------------- generated programs

_COMMENT = st.sampled_from(
    ["// note", "//", "// a // b", "/* block */", "/**/", "/* two\n   lines */", "// trailing   "]
)
_SPACE = st.sampled_from(["", " ", "\n", "\n\n\n", "  ", "\t", "\r\n"])


_KEY = st.sampled_from(["key", "tags", "type", "memory", "use", "store", "with", "top_k"])
_VAL = st.sampled_from(['"a"', "1", "x", "[1, 2]", "{ a: 1 }", "long_term", "f(a: 1)"])
_FIELDS = st.lists(st.tuples(_KEY, _VAL), max_size=5).map(
    lambda fs: ", ".join(f"{k}: {v}" for k, v in fs)
)
_STEP_ITEM = st.one_of(
    st.tuples(_KEY, _VAL).map(lambda f: f"{f[0]}: {f[1]},"),
    st.just("use Tool(a, b: 2)"),
    st.just("probe x for [a]"),
)


@st.composite
def blocks(draw: st.DrawFn) -> str:
    """Blocks mixing fields named like keywords (after a comma) with statements."""
    fields = draw(_FIELDS)
    steps = " ".join(draw(st.lists(_STEP_ITEM, max_size=5)))
    return draw(
        st.sampled_from(
            [
                f"memory M {{ {fields} }}",
                f"persona P {{ {fields} }}",
                f'remember("x") -> M with {{ {fields} }}',
                f"let v = {{ {fields} }}",
                f"flow F() {{ step S {{ {steps} }} }}",
                f"flow F() {{ validate a against B {{ {fields} if x -> y }} }}",
                f"flow F() {{ reason about X {{ {fields} }} refine {{ {fields} }} }}",
            ]
        )
    )


@st.composite
def commented_programs(draw: st.DrawFn) -> str:
    """A generated program with comments and white space put between random tokens."""
    text = draw(st.one_of(programs(), blocks()))
    assume(_parses(text))
    tokens = list(
        formatter._grammar().parser.parse(text).scan_values(lambda v: isinstance(v, Token))
    )
    cuts = sorted(draw(st.sets(st.integers(0, len(tokens)), max_size=6)))
    out, pos = [], 0
    for cut in cuts:
        at = tokens[cut].start_pos if cut < len(tokens) else len(text)
        out.append(text[pos:at])
        comment = draw(_COMMENT)
        newline = "\n" if comment.startswith("//") else ""
        out.append(draw(_SPACE) + comment + newline + draw(_SPACE))
        pos = at
    out.append(text[pos:])
    return "".join(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commented_programs())
def test_generated_programs_format_idempotently_to_the_same_program(text: str) -> None:
    assert_formats(text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_the_layout_does_not_depend_on_the_input_layout(text: str) -> None:
    assume("/" not in text and _parses(text))  # no comments: the tokens are the program
    tokens = formatter._grammar().parser.parse(text).scan_values(lambda v: isinstance(v, Token))
    words = [str(t) for t in tokens]
    assert format_source(" ".join(words)) == format_source("\n    ".join(words))


_PIECE = re.compile(r"\s+|\w+|.", re.DOTALL)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.data())
def test_text_that_does_not_parse_is_only_ever_a_syntax_error(text: str, data: Any) -> None:
    pieces = _PIECE.findall(text)
    at = data.draw(st.integers(0, len(pieces) - 1))
    pieces[at] = data.draw(st.sampled_from(["", "{", "}", "(", ",", ":", "//", "/*", '"', "->"]))
    broken = "".join(pieces)
    try:
        expected = parse(broken)
    except AxonSyntaxError as exc:
        with pytest.raises(AxonSyntaxError) as caught:
            format_source(broken)
        assert str(caught.value) == str(exc)
        return
    assert parse(format_source(broken)) == expected


# ---------------------------------------------------------------- the rules


def test_the_canonical_layout() -> None:
    text = (
        "memory   Notes{store:session,retrieval :keyword}\n\n\n\n"
        'remember ( "x" )->Notes with{key:"a",tags:["t","u",]}\n'
        "flow F(a:String,b)->List<Party>?{probe a for[x,y] step S{given:a}}\n"
        'run F("a")as P within C constrained_by[A,B]effort:high\n'
        "type T{a:Map<String,Int>,b:T?}"
    )
    assert format_source(text) == (
        "memory Notes { store: session, retrieval: keyword }\n"
        "\n"
        'remember("x") -> Notes with { key: "a", tags: ["t", "u"] }\n'
        "flow F(a: String, b) -> List<Party>? {\n"
        "  probe a for [x, y]\n"
        "  step S {\n"
        "    given: a\n"
        "  }\n"
        "}\n"
        'run F("a") as P within C constrained_by [A, B] effort: high\n'
        "type T { a: Map<String, Int>, b: T? }\n"
    )


def test_what_does_not_fit_breaks_one_item_per_line() -> None:
    long = ", ".join(f'"tag number {n}"' for n in range(8))
    text = f'remember("x") -> Notes with {{ key: "k", tags: [{long}] }}'
    assert format_source(text) == (
        'remember("x") -> Notes with {\n'
        '  key: "k"\n'
        "  tags: [\n" + "".join(f'    "tag number {n}",\n' for n in range(8)) + "  ]\n"
        "}\n"
    )
    fields = " ".join(f"field_{n}: value_{n}" for n in range(8))
    assert format_source(f"persona P {{ {fields} }}") == (
        "persona P {\n" + "".join(f"  field_{n}: value_{n}\n" for n in range(8)) + "}\n"
    )
    branches = 'if confidence < 0.8 -> recall("similar contracts") from Knowledge else -> refine'
    assert format_source(f"flow F() {{ {branches}(max_attempts: 2, note: \"again\") }}") == (
        "flow F() {\n"
        '  if confidence < 0.8 -> recall("similar contracts") from Knowledge\n'
        '  else -> refine(max_attempts: 2, note: "again")\n'
        "}\n"
    )
    short = "flow F() { if a -> { let x = 1 } else -> b }"
    assert format_source(short) == "flow F() {\n  if a -> {\n    let x = 1\n  } else -> b\n}\n"
    modifiers = 'run Long("argument") as SomePersona within SomeContext constrained_by [A, B]'
    assert format_source(modifiers + ' output_to: "a_long_file_name.json"') == (
        'run Long("argument")\n'
        "  as SomePersona\n"
        "  within SomeContext\n"
        "  constrained_by [A, B]\n"
        '  output_to: "a_long_file_name.json"\n'
    )


def test_a_block_with_a_field_named_like_a_keyword_separates_its_fields_by_commas() -> None:
    text = (
        'remember("x") -> N with { key: "a", type: long_term importance: high '
        'tags: ["x"] related: ["some_key"] }'
    )
    assert format_source(text) == (
        'remember("x") -> N with {\n'
        '  key: "a",\n'
        "  type: long_term,\n"
        "  importance: high,\n"
        '  tags: ["x"],\n'
        '  related: ["some_key"]\n'
        "}\n"
    )
    # without the commas, `type` after a value would be read as the keyword
    assert parse(format_source(text)) == parse(text)


def test_commas_only_after_fields_in_a_statement_block() -> None:
    text = "flow F() { step S { given: x use X(a) memory: 1 } }"
    assert format_source(text) == (
        "flow F() {\n"
        "  step S {\n"
        "    given: x,\n"
        "    use X(a)\n"  # a comma may not follow a statement
        "    memory: 1\n"
        "  }\n"
        "}\n"
    )


def test_comments_stay_in_their_places() -> None:
    text = (
        "// header\n\n\n"
        "memory Notes { // after the brace\n"
        "  // before store\n"
        "  store: session, // after store\n\n\n"
        "  retrieval: /* inline */ keyword\n"
        "  // last, inside\n"
        "}\n"
        "let x = [1, // one\n 2]\n"
        "// the end"
    )
    assert assert_formats(text) == (
        "// header\n"
        "\n"
        "memory Notes { // after the brace\n"
        "  // before store\n"
        "  store: session // after store\n"
        "\n"
        "  retrieval: /* inline */ keyword\n"
        "  // last, inside\n"
        "}\n"
        "let x = [\n"
        "  1, // one\n"
        "  2,\n"
        "]\n"
        "// the end\n"
    )


def test_comments_ending_consecutive_lines_are_aligned() -> None:
    text = (
        "let a = 1 // one\n"
        'let longer = "two" // two\n'
        "let c = 3\n"
        "let d = 4   // alone\n"
    )
    assert assert_formats(text) == (
        "let a = 1          // one\n"
        'let longer = "two" // two\n'
        "let c = 3\n"
        "let d = 4 // alone\n"
    )
    with_nul = "let a = 1 // \x00\nlet bb = 2 // x\n"
    assert format_source(with_nul) == "let a = 1  // \x00\nlet bb = 2 // x\n"


def test_line_ends_and_byte_order_mark() -> None:
    assert format_source("memory X {store: session}\r\nlet y = [\r\n1]\r\n") == (
        "memory X { store: session }\r\nlet y = [1]\r\n"
    )
    assert format_source("\ufeffmemory X {}\n") == "\ufeffmemory X {}\n"
    assert format_source("memory X {}\rlet y = 1") == "memory X {}\nlet y = 1\n"
    assert format_source("") == ""
    assert format_source("\n\n  \n") == ""


def test_a_syntax_error_is_the_parsers_positioned_error() -> None:
    with pytest.raises(AxonSyntaxError) as caught:
        format_source("memory X {\n  store session\n}\n", path="bad.axon")
    assert str(caught.value).startswith("bad.axon:2:9: error: expected ':' after field name")
