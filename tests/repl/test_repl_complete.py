"""Tab completion: candidates the Completer offers at a cursor position (a `Document`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from axon.memory.registry import registry
from axon.repl.complete import STATEMENT_KEYWORDS, AxonCompleter
from tests.repl.conftest import Repl


@pytest.fixture
def completer(repl: Repl) -> AxonCompleter:
    assert repl.run("memory Notes { store: session }\nmemory Facts { store: session }")
    assert repl.run('let topic = "x"\nflow Learn(x: String) { remember(x) -> Notes }')
    return AxonCompleter(repl.session)


def complete(completer: AxonCompleter, text: str) -> list[str]:
    """Candidates (the completed text) with the cursor at the end of `text`."""
    document = Document(text, len(text))
    return [c.text for c in completer.get_completions(document, CompleteEvent(True, False))]


def test_keywords_at_the_start_of_a_statement(completer: AxonCompleter) -> None:
    assert complete(completer, "re") == ["recall", "remember"]
    assert sorted(complete(completer, "")) == sorted(STATEMENT_KEYWORDS)
    assert complete(completer, "memory M {}\nme") == ["memory"]


def test_memory_names_after_arrow_from_and_in(completer: AxonCompleter) -> None:
    assert complete(completer, 'remember("x") -> ') == ["Notes", "Facts"]
    assert complete(completer, 'remember("x") -> N') == ["Notes"]
    assert complete(completer, "recall q from F") == ["Facts"]
    assert complete(completer, "remember topic in ") == ["Notes", "Facts"]
    # a memory declared earlier in the same (unfinished) input counts too
    assert complete(completer, 'memory Draft {}\nremember("x") -> D') == ["Draft"]


def test_memory_fields_and_their_values(completer: AxonCompleter) -> None:
    assert complete(completer, "memory M {\n  ") == [
        "backend: ", "decay: ", "demote_after: ", "history: ", "link: ", "location: ",
        "min_score: ",
        "persist_if: ", "promote_after: ", "refresh_on_read: ", "retrieval: ", "store: ",
        "tiers: ", "top_k: ",
    ]
    assert complete(completer, "memory M { link: ") == ["none", "sequence"]
    assert complete(completer, "memory M { refresh_on_read: ") == ["true", "false"]
    assert complete(completer, "memory M { store: session, re") == [
        "refresh_on_read: ", "retrieval: ",
    ]
    assert "store: " not in complete(completer, "memory M { store: session, ")
    assert complete(completer, "memory M {\n  store: ") == [
        "ephemeral", "none", "persistent", "session",
    ]
    assert complete(completer, "memory M { store: p") == ["persistent"]
    assert complete(completer, "memory M { retrieval: ") == [
        "exact", "hybrid", "keyword", "semantic",
    ]
    assert complete(completer, "memory M { backend: ") == registry.names()
    assert {"in_memory", "sqlite", "vector_db", "pgvector"} <= set(registry.names())
    assert complete(completer, "memory M { decay: ") == [
        "none", "never", "daily", "weekly", "1h", "1d", "7d", "30d",
    ]
    assert complete(completer, "memory M { decay: 7") == ["7d"]


def test_with_options(completer: AxonCompleter) -> None:
    assert complete(completer, 'remember("x") -> Notes with { ') == [
        "expires_in: ", "importance: ", "key: ", "metadata: ", "related: ", "tags: ", "tier: ",
        "type: ",
    ]
    assert complete(completer, 'recall("x") from Notes with { tags: ["a"], ') == [
        "min_importance: ", "min_score: ", "retrieval: ", "since: ", "tiers: ", "top_k: ",
        "type: ", "until: ", "where: ",
    ]
    assert complete(completer, 'recall("x") from Notes with { retrieval: k') == ["keyword"]


def test_names_inside_statements_and_flows(completer: AxonCompleter) -> None:
    assert "topic" in complete(completer, "remember(")
    assert complete(completer, "remember(to") == ["topic"]
    assert complete(completer, "run L") == ["Learn"]
    assert complete(completer, "flow F() {\n  st") == ["step"]
    assert complete(completer, "flow F() {\n  re") == ["reason", "recall", "refine", "remember"]


def test_braces_in_strings_and_comments_do_not_confuse_it(completer: AxonCompleter) -> None:
    assert complete(completer, 'memory M { location: "a{b", st') == ["store: "]
    assert complete(completer, "// memory X {\nre") == ["recall", "remember"]


def test_dot_commands_and_their_arguments(completer: AxonCompleter, tmp_path: Path) -> None:
    assert complete(completer, ".") == [
        ".help", ".memories", ".declare", ".show", ".stats", ".clear", ".update", ".history",
        ".trace", ".load", ".export", ".import", ".quit", ".exit",
    ]
    assert complete(completer, ".history N") == ["Notes"]
    assert complete(completer, ".export Notes F") == ["Facts"]
    assert complete(completer, ".s") == [".show", ".stats"]
    assert complete(completer, ".stats Notes F") == ["Facts"]
    assert complete(completer, ".show ") == ["Notes", "Facts"]
    assert complete(completer, ".clear F") == ["Facts"]
    assert complete(completer, ".update F") == ["Facts"]
    assert complete(completer, ".trace o") == ["on", "off"]
    (tmp_path / "prog.axon").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "sub").mkdir()
    assert sorted(complete(completer, f".load {tmp_path}/")) == ["prog.axon", "sub"]
    assert "sub" in complete(completer, f".import {tmp_path}/")


def test_a_complete_word_offers_nothing_more(completer: AxonCompleter) -> None:
    assert complete(completer, 'remember("x") -> Notes') == []


def test_tab_completes_through_the_prompt_session(repl: Repl) -> None:
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from axon.repl.prompt import make_prompt_session

    assert repl.run("memory Notes {}")  # the session runs its own event loop: not in one

    async def drive() -> str:
        with create_pipe_input() as pipe:
            session = make_prompt_session(repl.console, input=pipe, output=DummyOutput())
            task = asyncio.ensure_future(session.prompt_async())

            async def typed(keys: str, expected: str) -> None:
                pipe.send_text(keys)
                for _ in range(2000):  # completion runs as a task of this event loop
                    if session.default_buffer.text == expected:
                        return
                    await asyncio.sleep(0)
                raise AssertionError(f"{session.default_buffer.text!r} != {expected!r}")

            await typed(".sh\t", ".show")  # one candidate: Tab inserts it
            await typed(" No", ".show No")
            await typed("\t", ".show Notes")
            pipe.send_text("\r")
            return await task

    assert asyncio.run(drive()) == ".show Notes"
