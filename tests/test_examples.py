"""Every program in examples/ parses, checks and runs."""

from __future__ import annotations

from pathlib import Path

import pytest

import axon

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.axon"))


def test_there_are_at_least_four_examples() -> None:
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_parses_checks_and_runs(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    axon.parse(text, filename=str(path))
    program = axon.compile(text, filename=str(path))
    assert program.memories, "every example declares memory"
    assert not [w for w in program.warnings if "Unbound" in w.message]
    records, events = axon.run(text, filename=str(path), memory_dir=tmp_path)
    assert any(r["op"] == "remember" for r in records)
    assert any(r["op"] == "recall" and r["results"] for r in records)
    assert any(e["event_type"] == "memory_read" for e in events)
