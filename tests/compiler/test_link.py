"""`link:` on a memory: checked like the other fields, carried in the IR, obeyed by recall."""

from __future__ import annotations

from pathlib import Path

import pytest

import axon
from axon.errors import AxonCheckError


def test_link_defaults_to_none_and_is_in_the_ir() -> None:
    m, c = axon.compile("memory M {}\nmemory C { link: sequence }").memories
    assert (m.link, c.link) == ("none", "sequence")
    assert m.to_dict()["link"] == "none" and c.to_dict()["link"] == "sequence"
    assert axon.compile('memory S { link: "none" }').memories[0].link == "none"


@pytest.mark.parametrize(
    ("written", "message"),
    [
        (
            "sequecne",
            "Unknown link 'sequecne' in memory 'C' (did you mean 'sequence'?). "
            "Valid: none, sequence",
        ),
        ("chain", "Unknown link 'chain' in memory 'C'. Valid: none, sequence"),
        ("3", "link of memory 'C' must be a name, not 3"),
    ],
)
def test_unknown_link_is_an_error_with_a_position(written: str, message: str) -> None:
    with pytest.raises(AxonCheckError) as info:
        axon.compile(f"memory C {{\n  link: {written}\n}}", filename="t.axon")
    [d] = info.value.diagnostics
    assert (d.line, d.column, d.message) == (2, 9, message)


@pytest.mark.parametrize("backend", ["in_memory", "sqlite"])
def test_recall_uses_the_previous_entry_only_in_a_linked_memory(
    tmp_path: Path, backend: str
) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        for name, link in (("Chat", "sequence"), ("Notes", "none")):
            session.execute(
                f"memory {name} {{ backend: {backend} retrieval: keyword link: {link} }}\n"
                f'remember("Do you still go swimming at the lake?") -> {name} '
                'with { key: "q" }\n'
                f'remember("Yes, every Sunday morning") -> {name} with {{ key: "a" }}\n'
            )
        [chat] = session.execute('recall("swimming lake") from Chat')
        [notes] = session.execute('recall("swimming lake") from Notes')
    assert [r["key"] for r in chat["results"]] == ["q", "a"]
    assert [r["key"] for r in notes["results"]] == ["q"]
