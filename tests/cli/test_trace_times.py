"""`axon trace` shows times as dates and durations as durations, not as epoch seconds."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from axon.render import date_text, duration_text, format_event
from tests.helpers.cli import axon

PROGRAM = """\
memory Notes { store: persistent backend: sqlite decay: 7d }
remember("the report is due friday") -> Notes with { key: "report" }
"""


def test_trace_prints_expiry_as_a_date_and_how_far_it_is(tmp_path: Path) -> None:
    program, trace = tmp_path / "p.axon", tmp_path / "trace.json"
    program.write_text(PROGRAM)
    ran = axon("run", str(program), "--memory-dir", str(tmp_path / "m"), "--trace", str(trace))
    assert ran.returncode == 0, ran.stderr
    written = next(e for e in json.loads(trace.read_text())["events"]
                   if e["event_type"] == "memory_write")
    expires = written["data"]["expires_at"]
    shown = axon("trace", str(trace))
    assert shown.returncode == 0, shown.stderr
    assert f"expires_at={date_text(expires)} (in 7d)" in shown.stdout
    assert re.search(r"expires_at=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", shown.stdout)
    assert str(int(expires)) not in shown.stdout


def test_dates_and_durations_read_as_such_whatever_the_file_holds() -> None:
    assert date_text(0) == "1970-01-01T00:00:00Z"
    assert date_text(1e300) == "9999-12-31T23:59:59Z"
    assert duration_text(7 * 86400) == "7d" and duration_text(12_000) == "3h 20m"
    line = format_event({"event_type": "memory_write", "timestamp": 1000.0,
                         "data": {"expires_at": 940.0, "wait_seconds": 90}})
    assert "expires_at=1970-01-01T00:15:40Z (1m ago)" in line and "wait_seconds=1m 30s" in line
    for odd in (10**400, float("inf"), "soon", None, True):  # a hand-edited file: no crash
        format_event({"event_type": "x", "timestamp": 1.0, "data": {"expires_at": odd}})


@given(st.floats(min_value=0, max_value=253_402_300_799))
def test_a_shown_time_is_never_later_than_the_stored_one(stored: float) -> None:
    """`iso_utc` truncates to the microsecond: read back as a `since=` bound, the time a
    user is shown keeps the entry it was shown for (a rounded-up time dropped it)."""
    from axon.memory.entry import time_bound
    from axon.render import iso_utc

    shown = iso_utc(stored)
    assert shown is not None
    bound = time_bound(shown, "since")
    assert isinstance(bound, float) and bound <= stored
    assert stored - bound < 1e-6 + abs(stored) * 1e-15
