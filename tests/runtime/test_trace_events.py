"""Every trace event type is one AXON emits, or a reference-implementation name kept for
compatibility and documented as never emitted: no name in the enum that nothing explains."""

from __future__ import annotations

import re
from pathlib import Path

from axon.trace import REFERENCE_ONLY_EVENTS, TraceEventType

AXON = Path(__file__).resolve().parents[2] / "axon"


def test_every_event_type_is_emitted_somewhere() -> None:
    used: set[str] = set()
    for path in AXON.rglob("*.py"):
        if path.name != "trace.py":
            used.update(re.findall(r"TraceEventType\.([A-Z_]+)", path.read_text(encoding="utf-8")))
    unexplained = [
        member.name
        for member in TraceEventType
        if member.name not in used and member not in REFERENCE_ONLY_EVENTS
    ]
    assert unexplained == []
    assert [m.name for m in REFERENCE_ONLY_EVENTS if m.name in used] == []
