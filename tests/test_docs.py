"""The documentation covers what exists: every CLI command and every registered backend."""

from __future__ import annotations

from pathlib import Path

from axon.cli import app
from axon.memory.registry import BUILTIN_BACKENDS, registry

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_every_cli_command_is_documented() -> None:
    text = (DOCS / "cli.md").read_text()
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]
    assert names, "the CLI has commands"
    for name in names:
        assert f"## `axon {name}" in text, f"docs/cli.md has no section for 'axon {name}'"


def test_every_registered_backend_and_alias_is_documented() -> None:
    text = (DOCS / "backends.md").read_text()
    for name in [info.name for info in BUILTIN_BACKENDS]:  # a plugin documents itself
        info = registry.lookup(name)
        assert info is not None
        for label in (info.name, *info.aliases):
            assert f"`{label}`" in text, f"docs/backends.md does not mention `{label}`"


def test_readme_gives_the_two_commands_that_ci_runs() -> None:
    readme = (DOCS.parent / "README.md").read_text()
    ci = (DOCS.parent / ".ci" / "run").read_text()
    assert "scripts/example" in readme and "scripts/test" in readme
    assert "scripts/test" in ci


def test_readme_links_every_page_of_docs() -> None:
    readme = (DOCS.parent / "README.md").read_text()
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if f"](docs/{p.name})" not in readme]
    assert missing == [], f"README.md does not link {missing}"


def test_the_derived_key_shown_in_language_md_is_the_one_the_runtime_derives() -> None:
    """docs/language.md showed `..._1c5d0e2a` for a key the runtime derives as `..._1eca43ca`."""
    import re

    import axon

    text = (DOCS / "language.md").read_text()
    assert 'remember("The client prefers short answers") -> Prefs' in text
    shown = re.findall(r"the_client_prefers_short_answers_[0-9a-f]{8}", text)
    records, _ = axon.run(
        'memory Prefs { store: session retrieval: exact }\n'
        'remember("The client prefers short answers") -> Prefs\n'
    )
    assert shown and set(shown) == {records[0]["key"]}


def test_no_page_of_docs_holds_a_merge_conflict() -> None:
    """language.md's limits table once shipped `<<<<<<< HEAD` ... `>>>>>>> fix5`."""
    markers = ("<<<<<<< ", "=======\n", ">>>>>>> ")
    for page in [DOCS.parent / "README.md", *sorted(DOCS.rglob("*.md"))]:
        for number, line in enumerate(page.read_text().splitlines(keepends=True), 1):
            assert not line.startswith(markers), f"{page.name}:{number} is a merge conflict marker"


def test_no_page_a_user_reads_speaks_of_the_seed() -> None:
    """Users never saw the design documents ("seed 001", "the seed's scoring"): issue 26.

    Only docs/seed-api.md explains them; a link to it may name the file in its
    target, but its text says what users know it as (the compatible low-level API).
    """
    import re

    link_target = re.compile(r"\]\([^)\s]*seed-api\.md(?:#[^)\s]*)?\)")
    docs = (p for p in sorted(DOCS.rglob("*.md")) if p.name != "seed-api.md")
    pages = [DOCS.parent / "README.md", *docs]
    found = [
        f"{page.relative_to(DOCS.parent)}:{number}: {line.strip()}"
        for page in pages
        for number, line in enumerate(page.read_text().splitlines(), 1)
        if "seed" in link_target.sub("](...)", line).lower()
    ]
    assert found == [], "pages users read mention the seed:\n" + "\n".join(found)


def _language_sections() -> dict[str, tuple[str, str]]:
    """docs/language.md's sections: number -> (title, anchor), checking on the way that
    `##` headings count 1, 2, 3..., `###` headings N.1, N.2... under theirs, and each
    follows its own `<a id="...">` anchor line."""
    import re

    sections: dict[str, tuple[str, str]] = {}
    lines = (DOCS / "language.md").read_text().splitlines()
    top = sub = 0
    fenced = False
    for index, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith(("## ", "### ")):
            continue
        match = re.fullmatch(r"(##|###) (\d+(?:\.\d+)?)\.? (.+)", line)
        assert match, f"docs/language.md:{index + 1}: heading without a number: {line}"
        level, number, title = match.groups()
        if level == "##":
            top, sub = top + 1, 0
            assert number == str(top), f"docs/language.md:{index + 1}: expected {top}."
        else:
            sub += 1
            assert number == f"{top}.{sub}", f"docs/language.md:{index + 1}: expected {top}.{sub}"
        anchor = re.fullmatch(r'<a id="([\w-]+)"></a>', lines[index - 1])
        assert anchor, f"docs/language.md:{index + 1}: no <a id> line before the heading"
        sections[number] = (title, anchor.group(1))
    return sections


def test_language_md_has_numbered_sections_with_stable_anchors() -> None:
    """Code and docs cited sections of a contract file the project does not ship
    (the specification's "§8"); they cite docs/language.md's own numbered sections now."""
    sections = _language_sections()
    assert len(sections) >= 12
    anchors = [anchor for _, anchor in sections.values()]
    assert len(set(anchors)) == len(anchors)
    text = (DOCS / "language.md").read_text()
    for number, (title, anchor) in sections.items():
        assert f"- §{number} [{title}](#{anchor})" in text, f"contents miss §{number}"


def _project_texts() -> list[Path]:
    root = DOCS.parent
    return [
        root / "README.md",
        *sorted(DOCS.rglob("*.md")),
        *sorted((root / "axon").rglob("*.py")),
        *sorted((root / "axon").rglob("*.lark")),
        *sorted((root / "tests").rglob("*.py")),
    ]


def test_every_citation_of_language_md_names_a_section_it_has() -> None:
    """`docs/language.md §N Title` names a section that exists, and the word after the
    number is the first word of that section's title; a link `language.md#anchor`
    names an anchor it has."""
    import re

    sections = _language_sections()
    anchors = {anchor for _, anchor in sections.values()}
    def first_word(text: str) -> str:
        found = re.match(r"[\w.]+", text.strip().strip("`"))
        return found.group(0).lower() if found else ""

    first_words = {number: first_word(title) for number, (title, _) in sections.items()}
    cite = re.compile(r"language\.md §(\d+(?:\.\d+)?)( [\w`.]+)?|§(\d+(?:\.\d+)?)( [\w`.]+)?")
    link = re.compile(r"\]\((?:language\.md)?#([\w-]+)\)")
    problems = []
    for path in _project_texts():
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(DOCS.parent))
        if "language.md" not in text and path.name != "language.md":
            continue
        for match in cite.finditer(text):
            number = match.group(1) or match.group(3)
            word = first_word(match.group(2) or match.group(4) or "")
            if number not in sections:
                problems.append(f"{name}: §{number} is not a section of docs/language.md")
            elif word and word != first_words[number]:
                problems.append(f"{name}: §{number} is {sections[number][0]!r}, not {word!r}")
        if path.parent == DOCS or path.name == "README.md":
            for match in link.finditer(text):
                target_page = "language.md" in match.group(0) or path.name == "language.md"
                if target_page and match.group(1) not in anchors:
                    problems.append(f"{name}: no anchor #{match.group(1)} in docs/language.md")
    assert problems == []


def test_no_file_of_the_project_cites_the_contract_it_does_not_ship() -> None:
    """Four test modules cited the specification's sections (its file name and "§7"),
    a file users never get (issue 27)."""
    contract = "LANGUAGE" + ".md"
    found = [
        str(path.relative_to(DOCS.parent))
        for path in _project_texts()
        if contract in path.read_text(encoding="utf-8")
    ]
    assert found == []


def test_seed_api_md_says_what_each_original_document_was() -> None:
    text = (DOCS / "seed-api.md").read_text()
    for number in ("000", "001", "002", "004"):
        assert text.count(f"- `{number}` \"") == 1, f"docs/seed-api.md does not describe {number}"
