"""The language server's analysis without the protocol: problems, names, completion, positions."""

from __future__ import annotations

from pathlib import Path

import pytest

from axon.compiler.check_memory import FIELD_MEANINGS, MEMORY_FIELDS
from axon.compiler.check_options import (
    FORGET_OPTIONS,
    OPTION_MEANINGS,
    RECALL_OPTIONS,
    REMEMBER_OPTIONS,
)
from axon.lsp.analysis import (
    RenameError,
    analyse,
    completions,
    hover,
    references,
    rename,
    symbols,
)
from axon.lsp.documents import DocumentStore, LineIndex

ROOT = Path(__file__).resolve().parents[2]


def test_every_field_and_option_has_a_meaning() -> None:
    assert set(FIELD_MEANINGS) == set(MEMORY_FIELDS)
    assert set(OPTION_MEANINGS) == {*REMEMBER_OPTIONS, *RECALL_OPTIONS, *FORGET_OPTIONS}


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.axon")), ids=lambda p: p.name)
def test_examples_have_no_problems_and_their_declarations(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    analysis = analyse(text, str(path))
    assert [p.message for p in analysis.problems if p.severity == "error"] == []
    for declared in symbols(analysis):
        assert text[declared.name_start : declared.name_end] == declared.name
        assert text[declared.start :].startswith(declared.kind)
        assert (declared.name_start, declared.name_end) in analysis.uses[declared.name]


def test_problems_are_the_checkers_with_offsets_and_fixes() -> None:
    text = "memory Notes { store: persistant retreival: keyword }\nrecall(\"x\") from Note\n"
    problems = analyse(text).problems
    assert [(text[p.start : p.end], p.fix and p.fix[2]) for p in problems] == [
        ("persistant", "persistent"),
        ("retreival", "retrieval"),
        ("Note", "Notes"),
    ]
    assert all(p.severity == "error" for p in problems)


def test_warnings_are_kept_beside_errors() -> None:
    text = 'memory Kept { store: session backend: sqlite }\nrecall("x") from Nowhere\n'
    severities = sorted(p.severity for p in analyse(text).problems)
    assert severities == ["error", "warning"]


def test_declarations_and_uses_skip_fields_members_comments_and_strings() -> None:
    text = (
        "memory Step { store: session }\n"
        "// Step in a comment\n"
        "flow F() -> Out {\n"
        "  step Step { ask: \"Step\" }\n"
        "  recall(Step.output) from Step\n"
        "}\n"
    )
    analysis = analyse(text)
    assert [(d.name, d.kind) for d in symbols(analysis)] == [("Step", "memory"), ("F", "flow")]
    uses = [text.count("\n", 0, s) + 1 for s, _ in analysis.uses["Step"]]
    assert uses == [1, 5]  # the declaration and `from Step`: not the step, nor its output


def test_a_half_typed_program_still_has_its_names() -> None:
    text = "memory Notes { store: persistent }\nremember(\"x\") -> "
    analysis = analyse(text)
    assert analysis.problems and analysis.problems[0].severity == "error"
    assert [c.label for c in completions(analysis, len(text))] == ["Notes"]


def test_completion_contexts() -> None:
    text = "memory A { store: session  }\nflow Go() -> X { }\nrun "
    analysis = analyse(text)
    inside = text.index("session") + len("session") + 1
    assert [c.label for c in completions(analysis, inside)] == list(MEMORY_FIELDS)
    assert completions(analysis, inside)[0].detail == FIELD_MEANINGS[MEMORY_FIELDS[0]]
    assert [c.label for c in completions(analysis, len(text))] == ["Go"]
    assert "memory" in [c.label for c in completions(analyse(""), 0)]


def test_after_a_flows_arrow_come_types_not_memories() -> None:
    text = "type Summary { text: String }\nmemory Notes {}\nflow F(t: String) -> "
    analysis = analyse(text)
    assert [c.label for c in completions(analysis, len(text))] == ["Summary"]
    inside = text + "S {\n  remember(t) -> "
    assert [c.label for c in completions(analyse(inside), len(inside))] == ["Notes"]
    top = "memory Notes {}\nremember(\"x\") -> "
    assert [c.label for c in completions(analyse(top), len(top))] == ["Notes"]


def test_hover_and_references() -> None:
    text = "memory Notes { decay: 7d }\nrecall(\"x\") from Notes\n"
    analysis = analyse(text)
    use = text.rindex("Notes")
    shown, start, end = hover(analysis, use + 2) or ("", 0, 0)
    assert "memory Notes { decay: 7d }" in shown and (start, end) == (use, use + 5)
    assert "none | never | daily" in (hover(analysis, text.index("decay")) or ("",))[0]
    assert hover(analysis, text.index('"x"') + 1) is None
    assert references(analysis, use) == [(7, 12), (use, use + 5)]
    assert references(analysis, use, include_declaration=False) == [(use, use + 5)]


def test_rename_refuses_what_cannot_be_a_name() -> None:
    text = "memory Notes {}\nmemory Other {}\nrecall(\"x\") from Notes\n"
    analysis = analyse(text)
    at = text.rindex("Notes")
    assert rename(analysis, at, "Journal") == [(7, 12), (at, at + 5)]
    for bad, why in (("Other", "already declared"), ("9x", "not a name"), ("from", "keyword")):
        with pytest.raises(RenameError, match=why):
            rename(analysis, at, bad)
    with pytest.raises(RenameError, match="no declared name"):
        rename(analysis, text.index("{"), "X")


def test_line_index_counts_utf16_columns() -> None:
    text = 'remember("😀é") -> Notes\nx'
    lines = LineIndex(text)
    at = text.index("Notes")
    assert lines.position(at) == (0, at + 1)  # the emoji is two UTF-16 units
    assert lines.offset(0, at + 1) == at
    assert lines.position(len(text)) == (1, 1)
    assert lines.offset(5, 0) == len(text)


def test_the_store_analyses_a_text_once() -> None:
    store = DocumentStore()
    first = store.update("file:///a.axon", "memory A {}", 1)
    assert store.update("file:///a.axon", "memory A {}", 2).analysis is first.analysis
    assert store.update("file:///a.axon", "memory B {}", 3).analysis is not first.analysis


def test_refresh_on_read_completes_true_and_false() -> None:
    text = "memory M { refresh_on_read: "
    assert [c.label for c in completions(analyse(text), len(text))] == ["true", "false"]
