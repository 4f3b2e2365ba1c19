"""Time named in a query: its text and the clock in, the window of time it names (or None) out.

A recall whose query names a date or a period ("on March 3, 2024", "in August
2023", "last week", "two days ago") lifts the entries written in that window
(`time` signal, `axon.memory.retrieval.scores.time_lift`); docs/language.md,
"Time in the query", lists every form recognised here and the window of each.

A small grammar of our own rather than `dateparser` or `parsedatetime`: those
parse a whole string as one date and read "may", "march", "second" or a bare
number as times wherever they stand ("you may want" is a month to them), so
they would need the same pattern-finding in front of them; this module finds
only the forms below, in English, with nothing to install. Windows are
half-open `[start, end)` in Unix seconds, read on the UTC calendar (the clock's
seconds and the entries' timestamps are UTC); weeks start on Monday.

Cost is bounded: the patterns are regular expressions without nested
repetition, run over at most `SCANNED_CHARS` characters of the query, and
what they find is cached by query text (`_expressions`), so a repeated query
only resolves its expression against the clock.
"""

from __future__ import annotations

import calendar
import datetime
import functools
import re

import attrs

SCANNED_CHARS = 1000
"""Only the start of a query this long is read for a time (a bounded cost per query)."""

DAY = 86400.0

REACH_SHARE = 1.0
"""An entry written up to this many window lengths before or after the window is near it
(`Window.nearness`), ..."""

REACH_MIN = 7 * DAY
"""... and always up to this long."""
_UTC = datetime.UTC

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4,
    "apr": 4, "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11,
    "nov": 11, "december": 12, "dec": 12,
}  # fmt: skip
_WEEKDAYS = {
    "monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5,
    "sunday": 6,
}  # fmt: skip
_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2,
}  # fmt: skip
_ORDINAL_WEEKS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2,
                  "fourth": 3, "4th": 3, "last": -1, "final": -1}  # fmt: skip
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3),
            "winter": (12, 3)}  # fmt: skip
"""A season (northern hemisphere) as (first month, months): winter YEAR is December YEAR
to February YEAR + 1."""

_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_COUNT = r"(?P<count>\d{1,3}|" + "|".join(sorted(_COUNTS, key=len, reverse=True)) + ")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + ")"
_END = r"(?![\w:/.-]?\d)"
"""No more digits after a number (not a time "7:30", a fraction, a longer number)."""

_PATTERNS: tuple[tuple[str, str], ...] = (
    ("iso_day", r"\b(?P<year>\d{4})-(?P<mon>\d\d)-(?P<day>\d\d)\b"),
    ("iso_month", r"\b(?P<year>\d{4})-(?P<mon>\d\d)\b(?!-\d)"),
    ("week_of", r"\b(?P<nth>first|1st|second|2nd|third|3rd|fourth|4th|last|final) week"
     rf" (?:of|in) {_MONTH}(?:(?:,\s*|\s+){_YEAR})?\b"),
    ("part_of", r"\b(?P<part>early|mid|late|beginning of|start of|middle of|end of)[- ]"
     rf"(?:the month of )?{_MONTH}(?:(?:,\s*|\s+){_YEAR})?\b"),
    ("month_day", rf"\b{_MONTH} {_DAY}{_END}(?:(?:,\s*|\s+){_YEAR})?\b"),
    ("day_month", rf"\b{_DAY}(?: of)? {_MONTH}(?:(?:,\s*|\s+){_YEAR})?\b"),
    ("month_year", rf"\b{_MONTH}(?:,\s*|\s+){_YEAR}\b"),
    ("season", r"\b(?P<season>spring|summer|autumn|fall|winter)(?: of)?,? " + _YEAR + r"\b"),
    ("month", r"\b(?P<rel>in|during|throughout|last|this)(?: the month of)? " + _MONTH
     + r"(?! \d)\b"),
    ("year", r"\b(?:in|during|throughout|of|the year) " + _YEAR + r"\b(?!-\d)"),
    ("day_before", r"\bthe day before yesterday\b"),
    ("today", r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b"),
    ("yesterday", r"\b(?:yesterday|last night)\b"),
    ("ago", rf"\b{_COUNT} {_UNIT} ago\b"),
    ("past_n", rf"\b(?:(?:in )?the )?(?:past|last) {_COUNT} {_UNIT}\b"),
    ("past", r"\bthe past (?P<unit>week|month|year)\b"),
    ("last_unit", r"\b(?P<rel>last|this) (?P<unit>week|weekend|month|year)\b"),
    ("weekday", rf"\b(?P<rel>last|on|this) {_WEEKDAY}\b"),
)
_RELATIVE = frozenset(
    {"day_before", "today", "yesterday", "ago", "past_n", "past", "last_unit", "weekday"}
)
"""Expressions read against the clock: a date written out in the same query wins over
them ("last weekend before April 10, 2023" is about April 2023, whatever today is)."""
_COMPILED = tuple((name, re.compile(text, re.IGNORECASE)) for name, text in _PATTERNS)


@attrs.frozen
class Window:
    """A period of time `[start, end)` in Unix seconds, and the words that named it."""

    start: float
    end: float
    text: str

    def holds(self, moment: float) -> bool:
        """Whether `moment` (Unix seconds) falls in the window."""
        return self.start <= moment < self.end

    def nearness(self, moment: float) -> float:
        """1 for a moment in the window, falling linearly to 0 at `reach` before or after it.

        What is said about a period is often said a little before it (a plan) or
        after it (a report: "last week I went ..."), so an entry written just
        outside the window still gets part of the `time` signal.
        """
        if self.start <= moment < self.end:
            return 1.0
        distance = self.start - moment if moment < self.start else moment - self.end
        reach = max(REACH_SHARE * (self.end - self.start), REACH_MIN)
        return max(0.0, 1.0 - distance / reach)


@attrs.frozen
class _Expression:
    """A time expression found in a query: its pattern, groups and words (clock-free)."""

    kind: str
    groups: tuple[tuple[str, str], ...]
    text: str


@functools.lru_cache(maxsize=4096)
def _expressions(head: str) -> tuple[_Expression, ...]:
    """The time expressions of `head` (a query's first `SCANNED_CHARS`, so the cache holds
    no longer text): written-out dates before relative ones (`_RELATIVE`), then leftmost
    first, longest first at one place."""
    found: list[tuple[int, int, _Expression]] = []
    for kind, pattern in _COMPILED:
        for match in pattern.finditer(head):
            groups = tuple((k, v.lower()) for k, v in match.groupdict().items() if v is not None)
            found.append(
                (match.start(), -(match.end() - match.start()), _Expression(kind, groups, match[0]))
            )
    found.sort(key=lambda item: (item[2].kind in _RELATIVE, item[0], item[1]))
    return tuple(expression for _, _, expression in found)


def query_window(query: str, now: float) -> Window | None:
    """The window of time the query names, resolved against `now` (Unix seconds), or None.

    The first expression that makes a real window wins: a written-out date before
    one relative to the clock, then the leftmost, then the longest at one place
    ("the last week of August 2023" is that week, not August). A date without a
    year is its latest occurrence on or before `now`'s day; see docs/language.md.
    """
    for expression in _expressions(query[:SCANNED_CHARS]):
        try:
            found = _resolve(expression, now)
        except (ValueError, OverflowError):  # "February 30", a year out of range
            found = None
        if found is not None:
            return Window(found[0], found[1], expression.text)
    return None


def _stamp(day: datetime.date) -> float:
    return datetime.datetime(day.year, day.month, day.day, tzinfo=_UTC).timestamp()


def _days(first: datetime.date, count: int) -> tuple[float, float]:
    start = _stamp(first)
    return start, start + count * DAY


def _month(year: int, month: int, months: int = 1) -> tuple[float, float]:
    end_year, end_month = divmod(month - 1 + months, 12)
    start = _stamp(datetime.date(year, month, 1))
    return start, _stamp(datetime.date(year + end_year, end_month + 1, 1))


def _months_back(year: int, month: int, back: int) -> tuple[int, int]:
    shifted = year * 12 + month - 1 - back
    return shifted // 12, shifted % 12 + 1


def _latest_day(today: datetime.date, month: int, day: int) -> datetime.date:
    """The latest `month`/`day` on or before `today` (February 29 of the last leap year)."""
    year = today.year
    for _ in range(9):
        if calendar.isleap(year) or (month, day) != (2, 29):
            found = datetime.date(year, month, day)  # ValueError for a day the month lacks
            if found <= today:
                return found
        year -= 1
    raise ValueError("no such day")


def _resolve(expression: _Expression, now: float) -> tuple[float, float] | None:
    """The `[start, end)` of one expression against the clock, None when it names no time."""
    g = dict(expression.groups)
    today = datetime.datetime.fromtimestamp(now, _UTC).date()
    month = _MONTHS[g["month"]] if "month" in g else None
    year = int(g["year"]) if "year" in g else None
    match expression.kind:
        case "iso_day":
            return _days(datetime.date(int(g["year"]), int(g["mon"]), int(g["day"])), 1)
        case "iso_month":
            return _month(int(g["year"]), int(g["mon"]))
        case "week_of" | "part_of":
            assert month is not None
            if year is None:
                year = today.year if month <= today.month else today.year - 1
            length = calendar.monthrange(year, month)[1]
            if expression.kind == "week_of":
                nth = _ORDINAL_WEEKS[g["nth"]]
                first = length - 6 if nth < 0 else 1 + 7 * nth
                return _days(datetime.date(year, month, first), 7)
            part = g["part"]
            if part in ("early", "beginning of", "start of"):
                return _days(datetime.date(year, month, 1), 10)
            if part in ("mid", "middle of"):
                return _days(datetime.date(year, month, 11), 10)
            return _days(datetime.date(year, month, 21), length - 20)
        case "month_day" | "day_month":
            assert month is not None
            day = int(g["day"])
            if year is None:
                return _days(_latest_day(today, month, day), 1)
            return _days(datetime.date(year, month, day), 1)
        case "month_year":
            assert month is not None and year is not None
            return _month(year, month)
        case "season":
            assert year is not None
            first, months = _SEASONS[g["season"]]
            return _month(year, first, months)
        case "month":
            assert month is not None
            latest = today.year if month <= today.month else today.year - 1
            if g["rel"] == "last" and month == today.month:
                latest -= 1
            elif g["rel"] == "this":
                latest = today.year
            return _month(latest, month)
        case "year":
            assert year is not None
            return _month(year, 1, 12)
        case "today":
            return _days(today, 1)
        case "yesterday":
            return _days(today - datetime.timedelta(days=1), 1)
        case "day_before":
            return _days(today - datetime.timedelta(days=2), 1)
        case "ago":
            return _ago(today, _count(g["count"]), g["unit"])
        case "past_n":
            seconds = {"day": 1, "week": 7, "month": 30, "year": 365}[g["unit"]] * DAY
            return now - _count(g["count"]) * seconds, now
        case "past":
            seconds = {"week": 7, "month": 30, "year": 365}[g["unit"]] * DAY
            return now - seconds, now
        case "last_unit":
            return _last_unit(today, g["rel"], g["unit"])
        case "weekday":
            back = (today.weekday() - _WEEKDAYS[g["weekday"]]) % 7
            if g["rel"] == "last" and back == 0:
                back = 7
            return _days(today - datetime.timedelta(days=back), 1)
    return None


def _count(text: str) -> int:
    return int(text) if text.isdigit() else _COUNTS[text]


def _ago(today: datetime.date, count: int, unit: str) -> tuple[float, float] | None:
    """"N days/weeks/months/years ago": that day, or that calendar week, month or year."""
    if count < 1:
        return None
    if unit == "day":
        return _days(today - datetime.timedelta(days=count), 1)
    if unit == "week":
        monday = today - datetime.timedelta(days=today.weekday() + 7 * count)
        return _days(monday, 7)
    if unit == "month":
        return _month(*_months_back(today.year, today.month, count))
    return _month(today.year - count, 1, 12)


def _last_unit(today: datetime.date, rel: str, unit: str) -> tuple[float, float]:
    """"last/this week, weekend, month, year": the calendar unit before, or the current one."""
    back = 1 if rel == "last" else 0
    if unit == "week":
        return _days(today - datetime.timedelta(days=today.weekday() + 7 * back), 7)
    if unit == "weekend":
        saturday = today - datetime.timedelta(days=(today.weekday() - 5) % 7)
        if rel == "last" and today.weekday() >= 5:
            saturday -= datetime.timedelta(days=7)
        return _days(saturday, 2)
    if unit == "month":
        return _month(*_months_back(today.year, today.month, back))
    return _month(today.year - back, 1, 12)
