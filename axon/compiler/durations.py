"""Durations: text such as `1h30m` <-> seconds (5400.0), and the `decay:` keywords.

A duration is one or more `NUMBER UNIT` groups with no spaces; units are
`ms s m h d w`. `format_duration` writes the shortest canonical text, so
`parse_duration(format_duration(x)) == x` for every positive number of
milliseconds.
"""

from __future__ import annotations

import math
import re

UNITS: dict[str, float] = {
    "w": 7 * 86400.0,
    "d": 86400.0,
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 0.001,
}

_GROUP = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")

NO_EXPIRY = frozenset({"none", "never"})
NAMED = {"daily": 86400.0, "weekly": 7 * 86400.0}


class DurationError(ValueError):
    """The text is not a valid duration; the message says why."""


def parse_duration(text: str) -> float:
    """Seconds in `text` (`"7d"` -> 604800.0). Raises `DurationError` if invalid or <= 0."""
    pos = 0
    total = 0.0
    if not text:
        raise DurationError("empty duration")
    if any(ch.isspace() for ch in text):
        raise DurationError(f"a duration has no spaces: write {''.join(text.split())}")
    if text.startswith("-"):
        raise DurationError("a duration must be greater than zero")
    while pos < len(text):
        match = _GROUP.match(text, pos)
        if match is None:
            rest = text[pos:]
            unit = re.match(r"\d+(?:\.\d+)?([A-Za-z]*)", rest)
            if unit and unit.group(1):
                raise DurationError(
                    f"unknown unit '{unit.group(1)}' (units: ms, s, m, h, d, w)"
                )
            if unit:
                raise DurationError(f"'{rest}' has no unit (units: ms, s, m, h, d, w)")
            raise DurationError("expected NUMBER UNIT groups such as 30s, 15m, 1h30m, 7d")
        total += float(match.group(1)) * UNITS[match.group(2)]
        pos = match.end()
    if total <= 0 or not math.isfinite(total):
        raise DurationError("a duration must be greater than zero")
    return total


def parse_decay(text: str) -> float | None:
    """Seconds of a `decay:` value, `None` for no expiry (`none`/`never`)."""
    lowered = text.strip().lower()
    if lowered in NO_EXPIRY:
        return None
    if lowered in NAMED:
        return NAMED[lowered]
    return parse_duration(text.strip())


def format_duration(seconds: float) -> str:
    """Canonical text of a positive duration, largest units first (`5400.0` -> `"1h30m"`)."""
    if seconds <= 0 or not math.isfinite(seconds):
        raise DurationError("a duration must be greater than zero")
    millis = round(seconds * 1000)
    if millis == 0:
        raise DurationError("a duration must be at least 1ms")
    parts = []
    for unit in ("w", "d", "h", "m", "s", "ms"):
        size = round(UNITS[unit] * 1000)
        count, millis = divmod(millis, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
