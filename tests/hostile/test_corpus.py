"""Hostile inputs: every one is a clear error with a position, or just works.

Each case (a file of `corpus/`, or a bulky one generated here) goes through the
three ways a program reaches AXON: `axon.compile`, `Session.execute` and `axon
check` as a user runs it (a subprocess). The only acceptable failures are
`AxonError`s whose line and column lie inside the text, and, from the command,
exit code 1 with `file:line:col: error:` on stderr and never a traceback or an
"internal error". Hypothesis adds deep nesting of every bracket and token soup
near the limits.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import axon
from axon.compiler.lexer import MAX_NESTING, MAX_NUMBER_DIGITS
from axon.errors import AxonError
from axon.source import MAX_SOURCE_BYTES, SourceError, lone_cr_as_newline, read_source
from tests.helpers.programs import HOSTILE_FILES, HOSTILE_TOKENS

ROOT = Path(__file__).resolve().parents[2]
_BOM = b"\xef\xbb\xbf"
_DIAGNOSTIC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error: ", re.MULTILINE)


def _nested(opener: str, closer: str, depth: int, inner: str = "1") -> str:
    return opener * depth + inner + closer * depth


def _generated() -> dict[str, bytes]:
    """Cases too bulky to commit, built from the limits they probe."""
    memory = "memory Notes { store: session }\n"
    over, deep = MAX_NESTING + 1, 500
    cases = {
        "source_over_limit": b"let x = 1\n" * (MAX_SOURCE_BYTES // 10 + 1),
        "source_nul_over_limit": b"\0" * (MAX_SOURCE_BYTES + 10),
        "huge_line_string": (memory + 'let x = "' + "a" * 1_000_000 + '"\n'
                             + "remember(x) -> Notes\n").encode(),
        "huge_line_error": ("let x = " + "1 " * 500_000 + "\n").encode(),
        "number_5000_digits": ("let x = " + "9" * 5000 + "\n").encode(),
        "top_k_5000_digits": (memory + 'recall("a") from Notes with { top_k: '
                              + "9" * 5000 + " }\n").encode(),
        "float_5000_digits": ("let x = 1." + "1" * 5000 + "\n").encode(),
        "many_statements": (memory + 'remember("a") -> Notes\n' * 2000).encode(),
    }
    for depth in (over, deep):
        cases[f"list_depth_{depth}"] = ("let x = " + _nested("[", "]", depth)).encode()
        cases[f"map_depth_{depth}"] = ("let x = " + _nested("{a: ", "}", depth)).encode()
        cases[f"if_depth_{depth}"] = (
            "flow F() {\n" + _nested("if a -> {\n", "}\n", depth, "") + "}\n"
        ).encode()
        cases[f"call_depth_{depth}"] = ("run F(" + _nested("f(", ")", depth, "") + ")").encode()
        cases[f"type_depth_{depth}"] = ("type T = " + _nested("List<", ">", depth, "X")).encode()
        cases[f"with_depth_{depth}"] = (
            memory + 'remember("a") -> Notes with { metadata: '
            + _nested("{a: ", "}", depth) + " }\n"
        ).encode()
        cases[f"step_field_depth_{depth}"] = (
            "flow F() {\n  step S { given: " + _nested("[", "]", depth) + " }\n}\n"
        ).encode()
    cases["list_depth_at_limit"] = (
        memory + "let x = " + _nested("[", "]", MAX_NESTING) + "\nremember(x) -> Notes\n"
    ).encode()
    cases["number_at_limit"] = ("let x = " + "9" * MAX_NUMBER_DIGITS + "\n").encode()
    return cases


GENERATED = _generated()
CASES: dict[str, bytes] = {p.stem: p.read_bytes() for p in HOSTILE_FILES} | GENERATED


def _text(data: bytes) -> str:
    """The bytes as `axon.compile` would be given them: undecodable bytes as lone surrogates."""
    return data.decode("utf-8", "surrogateescape")


def _inside(text: str, line: int, column: int) -> bool:
    lines = text.split("\n")
    return 1 <= line <= len(lines) and 1 <= column <= len(lines[line - 1]) + 1


def _assert_clean(exc: AxonError, text: str) -> None:
    assert _inside(text, exc.line, exc.column), (exc.line, exc.column, str(exc)[:300])
    rendered = str(exc)
    rendered.encode("utf-8")  # printable: no lone surrogate reaches a message
    assert len(rendered) < 2000, rendered[:300]


def test_the_corpus_is_large() -> None:
    assert len(HOSTILE_FILES) >= 80
    assert len(CASES) >= 100


@pytest.mark.parametrize("name", sorted(CASES))
def test_compile(name: str) -> None:
    text = _text(CASES[name])
    try:
        program = axon.compile(text, filename=f"{name}.axon")
    except AxonError as exc:
        _assert_clean(exc, text)
    else:
        program.to_dict()


@pytest.mark.parametrize("name", sorted(CASES))
def test_session_execute(name: str, tmp_path: Path) -> None:
    text = _text(CASES[name])
    with axon.Session(memory_dir=tmp_path) as session:
        try:
            session.execute(text, filename=f"{name}.axon")
        except AxonError as exc:
            _assert_clean(exc, text)


def _axon_check(*paths: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AXON_EMBEDDER": "hashing", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "axon.cli", "check", *map(str, paths)],
        capture_output=True,
        text=True,
        errors="replace",
        env=env,
        timeout=300,
    )


def _expected_error(data: bytes) -> tuple[int, int] | None:
    """Where `axon check` must report the first error of a file, or None when it checks."""
    path = Path("/dev/null")
    try:
        text = read_source_bytes(data, path)
    except SourceError as exc:
        return (exc.line, exc.column)
    try:
        axon.compile(text)
    except AxonError as exc:
        return (exc.line, exc.column)
    return None


def read_source_bytes(data: bytes, path: Path) -> str:
    """`read_source`'s decoding, for bytes held in memory (the size check included)."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    if len(data) > MAX_SOURCE_BYTES - 3:
        raise SourceError("too large", str(path), 1, 1)
    try:
        return lone_cr_as_newline(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise SourceError("not UTF-8", str(path), 1, 1) from None


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    folder = tmp_path_factory.mktemp("hostile")
    paths = {}
    for name, data in CASES.items():
        path = folder / f"{name}.axon"
        path.write_bytes(data)
        paths[name] = path
    yield paths


def test_axon_check(written: dict[str, Path]) -> None:
    """One `axon check` over every readable case (it checks them all), then one per unreadable."""
    readable, unreadable = [], []
    for name, path in sorted(written.items()):
        try:
            read_source(path)
            readable.append(name)
        except SourceError:
            unreadable.append(name)
    assert unreadable, "the corpus should hold files that are not UTF-8 or too large"
    runs = [(readable, _axon_check(*(written[n] for n in readable)))]
    runs += [([n], _axon_check(written[n])) for n in unreadable]
    for names, result in runs:
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        assert "internal error" not in result.stderr, result.stderr[-3000:]
        assert result.returncode in (0, 1), result.stderr[-3000:]
        reported: dict[str, tuple[int, int]] = {}
        for m in _DIAGNOSTIC.finditer(result.stderr):
            reported.setdefault(Path(m["file"]).stem, (int(m["line"]), int(m["col"])))
        for name in names:
            expected = _expected_error(CASES[name])
            if expected is None:
                assert name not in reported, (name, result.stderr[-2000:])
                continue
            assert name in reported, (name, result.stderr[-2000:])
            if name in unreadable:
                continue  # the position is where the bad byte or the limit is
            assert reported[name] == expected, name
    assert any(result.returncode == 1 for _, result in runs)


def test_read_source_stops_at_the_limit_on_an_endless_file() -> None:
    with pytest.raises(SourceError) as info:
        read_source("/dev/zero")
    assert info.value.line == 1 and info.value.column == MAX_SOURCE_BYTES + 1
    assert str(info.value).startswith("/dev/zero:1:")


# ---------------------------------------------------------------- Hypothesis

_OPEN_CLOSE = [("[", "]"), ("{a: ", "}"), ("f(", ")"), ("if a -> {\n", "}\n")]


def _wrap(kind: int, depth: int) -> str:
    opener, closer = _OPEN_CLOSE[kind]
    if kind == 3:
        return "flow F() {\n" + _nested(opener, closer, depth, "") + "}\n"
    if kind == 2:
        return "run F(" + _nested(opener, closer, depth, "") + ")\n"
    return "let x = " + _nested(opener, closer, depth) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.integers(0, len(_OPEN_CLOSE) - 1),
    depth=st.integers(MAX_NESTING - 5, MAX_NESTING + 400),
)
def test_deep_nesting_is_an_error_past_the_limit_only(kind: int, depth: int) -> None:
    text = _wrap(kind, depth)
    open_at_once = depth + (1 if kind >= 2 else 0)  # the flow's '{' or run's '(' counts
    try:
        axon.compile(text)
    except AxonError as exc:
        _assert_clean(exc, text)
        if "nesting too deep" not in exc.message:
            assert open_at_once <= MAX_NESTING, exc.message  # other errors only within it
        else:
            assert open_at_once > MAX_NESTING
    else:
        assert open_at_once <= MAX_NESTING


@settings(max_examples=300, deadline=None)
@given(st.lists(HOSTILE_TOKENS, max_size=60).map(" ".join))
def test_token_soup(text: str) -> None:
    try:
        axon.compile(text)
    except AxonError as exc:
        _assert_clean(exc, text)
