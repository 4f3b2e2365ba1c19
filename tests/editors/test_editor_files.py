"""editors/: the TextMate grammar and the VS Code extension manifest are sound and in step."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from axon.compiler.parser import keywords

EDITORS = Path(__file__).resolve().parents[2] / "editors"
GRAMMAR = EDITORS / "axon.tmLanguage.json"
VSCODE = EDITORS / "vscode"


def grammar() -> dict[str, Any]:
    return json.loads(GRAMMAR.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def rules(node: Any) -> Iterator[dict[str, Any]]:
    """Every rule of the grammar (those under `patterns` and `repository`, nested)."""
    if isinstance(node, dict):
        if any(k in node for k in ("match", "begin", "include")):
            yield node
        for value in node.values():
            yield from rules(value)
    elif isinstance(node, list):
        for value in node:
            yield from rules(value)


def test_every_pattern_compiles_and_every_include_resolves() -> None:
    data = grammar()
    assert data["scopeName"] == "source.axon" and data["fileTypes"] == ["axon"]
    found = list(rules(data))
    assert found
    for rule in found:
        for key in ("match", "begin", "end"):
            if key in rule:
                re.compile(rule[key])  # Oniguruma's syntax, in the part Python's re shares
        if "include" in rule:
            assert rule["include"].removeprefix("#") in data["repository"], rule["include"]


def scope(text: str, word: str) -> str | None:
    """The scope given to `word` (its first occurrence) by the first rule, in the grammar's
    order, that matches there: a capture's name, else the rule's (a `begin` rule: from
    where it begins). Enough of a TextMate engine for one-line cases."""
    data = grammar()
    at = text.index(word)
    for include in data["patterns"]:
        rule = data["repository"][include["include"][1:]]
        for r in rule.get("patterns", [rule]):
            pattern = r.get("match") or r.get("begin")
            for m in re.finditer(pattern, text, re.MULTILINE):
                for group in range(len(m.groups()), -1, -1):
                    name = r.get("name") if group == 0 else None
                    name = r.get("captures", {}).get(str(group), {}).get("name", name)
                    whole = "begin" in r or m.end(group) >= at + len(word)
                    if name and m.start(group) == at and whole:
                        return name  # type: ignore[no-any-return]
    return None


def test_the_keywords_are_the_grammars() -> None:
    data = grammar()["repository"]
    listed = set(re.findall(r"[a-z_]+", data["keywords"]["match"].removeprefix("\\b")))
    listed |= set(re.findall(r"[a-z_]+", data["constants"]["match"].removeprefix("\\b")))
    listed -= {"b"}
    assert listed == set(keywords().all)


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("// kept", "comment.line.double-slash.axon"),
        ("memory", "storage.type.axon"),
        ("Notes", "entity.name.type.axon"),
        ("store", "variable.other.property.axon"),
        ("7d", "constant.numeric.axon"),
        ('"fact"', "string.quoted.double.axon"),
        ("recall", "keyword.control.axon"),
        ("->", "keyword.operator.axon"),
        ("true", "constant.language.axon"),
    ],
)
def test_scopes_of_a_program(word: str, expected: str) -> None:
    text = (
        'memory Notes { store: persistent decay: 7d } // kept\n'
        'remember("fact") -> Notes with { tags: ["a"] }\nrecall("x") from Notes\nlet t = true\n'
    )
    assert scope(text, word) == expected


def test_the_vscode_extension_starts_axon_lsp() -> None:
    manifest = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    [language] = manifest["contributes"]["languages"]
    assert language["id"] == "axon" and language["extensions"] == [".axon"]
    json.loads((VSCODE / language["configuration"]).read_text(encoding="utf-8"))
    [grammar_entry] = manifest["contributes"]["grammars"]
    assert (VSCODE / grammar_entry["path"]).resolve() == GRAMMAR
    assert grammar_entry["scopeName"] == "source.axon"
    main = (VSCODE / manifest["main"]).read_text(encoding="utf-8")
    assert 'args: ["lsp"]' in main and "vscode-languageclient" in manifest["dependencies"]


def test_the_formatting_example_of_editors_md_is_what_axon_fmt_gives() -> None:
    from axon.compiler.formatter import format_source

    text = (EDITORS.parent / "docs" / "editors.md").read_text(encoding="utf-8")
    section = text[text.index("## Formatting") : text.index("## Highlighting")]
    before, after = re.findall(r"```axon\n(.*?)```", section, re.DOTALL)
    assert format_source(before) == after
