"""`axon trace` on malformed trace files: one clear error naming the file, exit 1, no traceback.

Each file in `tests/hostile/traces/` is a trace file gone wrong (not JSON, the
wrong shape, fields of the wrong type, numbers no float holds, nesting deep
enough to exhaust a recursive parser). `EXPECTED` says what the error must say;
a file added to the directory without an entry here fails the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TRACES = Path(__file__).parent / "traces"
ROOT = Path(__file__).resolve().parents[2]

EXPECTED: dict[str, str] = {
    "not_json.json": ":1:1: error: not an AXON trace file: not JSON (Expecting value)",
    "truncated.json": ": error: not an AXON trace file: not JSON",
    "empty.json": ":1:1: error: not an AXON trace file: not JSON (Expecting value)",
    "top_level_list.json": ': error: not an AXON trace file: expected an object with an "events"'
    " list, got a list",
    "no_events.json": 'expected an object with an "events" list, got an object',
    "events_not_list.json": '"events" must be a list, not an object',
    "event_not_object.json": "event 1 must be an object, not a string",
    "timestamp_string.json": 'event 1: "timestamp" must be a number, not a string',
    "timestamp_bool.json": 'event 0: "timestamp" must be a number, not a boolean',
    "timestamp_infinite.json": 'event 0: "timestamp" must be a number, not a number out of range',
    "timestamp_nan.json": 'event 0: "timestamp" must be a number, not a number out of range',
    "timestamp_huge_int.json": 'event 0: "timestamp" must be a number, not a number out of range',
    "number_5000_digits.json": ": error: not an AXON trace file (Exceeds the limit",
    "event_type_number.json": 'event 0: "event_type" must be a string, not a number',
    "step_name_list.json": 'event 0: "step_name" must be a string, not a list',
    "data_list.json": 'event 0: "data" must be an object, not a list',
    "duration_string.json": 'event 0: "duration_ms" must be a number, not a string',
    "data_duration_object.json": 'event 0: "duration_ms" must be a number, not an object',
    "results_not_list.json": 'event 0: "results" must be a list, not a string',
    "result_not_object.json": "event 0, result 1: must be an object, not a number",
    "score_string.json": 'event 0, result 0: "score" must be a number, not a string',
    "deeply_nested_json.json": ": error: not an AXON trace file (nested too deeply)",
    "deeply_nested_event.json": "event 0 is nested more than 64 levels deep",
    "not_utf8.json": ": error: not UTF-8 text",
}
"""File name -> a part of the one error line `axon trace` must print for it."""

ACCEPTED = {"bom.json"}
"""Odd but valid: a UTF-8 byte-order mark before the JSON (Windows editors write one)."""


def axon_trace(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axon.cli", "trace", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ),
        timeout=120,
    )


def test_every_file_has_an_expectation() -> None:
    names = {path.name for path in TRACES.iterdir()}
    assert names == set(EXPECTED) | ACCEPTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_trace_is_one_clear_error(name: str) -> None:
    path = TRACES / name
    result = axon_trace(path)
    assert result.returncode == 1, result
    assert result.stdout == ""
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.startswith(str(path)), result.stderr
    assert EXPECTED[name] in result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1 and len(result.stderr) < 400


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_odd_but_valid_trace_is_read(name: str) -> None:
    result = axon_trace(TRACES / name)
    assert (result.returncode, result.stderr) == (0, "")


def test_a_huge_trace_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(300 * 1024 * 1024)  # sparse: nothing is written to disk
    result = axon_trace(path)
    assert result.returncode == 1
    assert result.stderr == (
        f"{path}: error: 314,572,800 bytes is too large for a trace file (at most 256 MiB)\n"
    )


def test_a_hand_edited_trace_with_extra_fields_still_prints(tmp_path: Path) -> None:
    events = [
        {
            "event_type": "memory_read",
            "timestamp": 10.0,
            "duration_ms": 2,
            "data": {
                "memory": "N",
                "results": [{"key": "a", "score": 0.5, "signals": {"bm25": "?"}}],
                "note": {"nested": [1, 2]},
            },
        },
        {"event_type": "memory_write", "data": {}, "extra": None},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"events": events}))
    result = axon_trace(path)
    assert (result.returncode, result.stderr) == (0, ""), result
    lines = result.stdout.splitlines()
    assert lines[0].startswith("    0.000s  memory_read")
    assert lines[1] == "    -> a  score=0.500  bm25=?"
    assert lines[2].startswith("    0.000s  memory_write")
