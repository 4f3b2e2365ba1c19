"""Every trace event type is one AXON emits: no name in the enum that nothing produces."""

from __future__ import annotations

import re
from pathlib import Path

from axon.trace import TraceEventType

AXON = Path(__file__).resolve().parents[2] / "axon"


def test_every_event_type_is_emitted_somewhere() -> None:
    used: set[str] = set()
    for path in AXON.rglob("*.py"):
        if path.name != "trace.py":
            used.update(re.findall(r"TraceEventType\.([A-Z_]+)", path.read_text(encoding="utf-8")))
    assert sorted(member.name for member in TraceEventType if member.name not in used) == []
