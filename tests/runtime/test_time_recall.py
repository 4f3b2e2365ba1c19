"""Time in the query through a session: relative times resolve against the session's clock
and the entry written then comes first with its `time` signal (docs/language.md,
"Time in the query")."""

from __future__ import annotations

import datetime

from axon.runtime.session import Session
from tests.memory.conftest import FakeClock

DAY = 86400.0


def test_yesterday_is_read_against_the_session_clock(session: Session, clock: FakeClock) -> None:
    clock.now = datetime.datetime(2024, 3, 13, 15, tzinfo=datetime.UTC).timestamp()
    session.execute("memory Notes { store: persistent retrieval: keyword }")
    notes = session.memory("Notes")
    clock.advance(-10 * DAY)
    notes.remember("we talked about the garden budget", key="n1")
    clock.advance(9 * DAY)
    notes.remember("we talked about the garden budget", key="n2")
    clock.advance(DAY)
    notes.remember("we talked about the garden budget", key="n3")
    found = notes.recall("what did we say about the garden budget yesterday?")
    assert [r.key for r in found][:1] == ["n2"]  # written yesterday
    first = found[0]
    assert first.signals is not None and first.signals["time"] > 0
    # Written near the day (within a week), n3 gets part of the signal; n1 (10 days) none.
    time = {r.key: (r.signals or {})["time"] for r in found}
    assert first.signals["time"] > time["n3"] > 0.0 == time["n1"]
    plain = notes.recall("what did we say about the garden budget?")
    assert [r.key for r in plain][:1] == ["n3"]  # no time named: newest first among equals
    assert all("time" not in (r.signals or {}) for r in plain)
    clock.advance(DAY)  # a day later, "yesterday" is another day
    assert [r.key for r in notes.recall("the garden budget yesterday")][:1] == ["n3"]
