"""Durations: parse and format round-trip; invalid text says why."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axon.compiler.durations import DurationError, format_duration, parse_decay, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("500ms", 0.5),
        ("30s", 30.0),
        ("15m", 900.0),
        ("1.5h", 5400.0),
        ("7d", 604800.0),
        ("2w", 1209600.0),
        ("1h30m", 5400.0),
        ("1d2h3m4s5ms", 93784.005),
    ],
)
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_format_is_canonical() -> None:
    assert format_duration(5400.0) == "1h30m"
    assert format_duration(604800.0) == "1w"
    assert format_duration(0.5) == "500ms"
    assert format_duration(93784.005) == "1d2h3m4s5ms"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("0d", "greater than zero"),
        ("-1d", "greater than zero"),
        ("7x", "unknown unit 'x'"),
        ("7", "no unit"),
        ("", "empty"),
        ("d7", "expected NUMBER UNIT"),
        ("1h 30m", "no spaces: write 1h30m"),
    ],
)
def test_invalid(text: str, why: str) -> None:
    with pytest.raises(DurationError, match=why):
        parse_duration(text)


def test_decay_keywords() -> None:
    assert parse_decay("none") is None and parse_decay("never") is None
    assert parse_decay("daily") == 86400.0 and parse_decay("weekly") == 604800.0


@given(st.integers(min_value=1, max_value=10**13))
def test_round_trip_from_milliseconds(millis: int) -> None:
    seconds = millis / 1000
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds, rel=1e-12)


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=999),
            st.sampled_from(["w", "d", "h", "m", "s", "ms"]),
        ),
        min_size=1,
        max_size=6,
    ).filter(lambda groups: any(n for n, _ in groups))
)
def test_round_trip_from_text(groups: list[tuple[int, str]]) -> None:
    text = "".join(f"{n}{unit}" for n, unit in groups)
    seconds = parse_duration(text)
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds, rel=1e-12)
