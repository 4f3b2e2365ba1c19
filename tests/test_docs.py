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
