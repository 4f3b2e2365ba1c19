"""Every keyword of the grammar is known to the REPL completer and to syntax errors' suggestions.

The keywords are read here straight from the grammar's terminals (string
terminals that are words), independently of `lexer.grammar_words`, so a keyword
added to `grammar/axon.lark` is checked everywhere it must appear.
"""

from __future__ import annotations

from pathlib import Path

import lark
import pytest
from lark.lexer import PatternStr
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

import axon
from axon.compiler import syntax_errors
from axon.compiler.parser import _parser, grammar_text, keywords
from axon.errors import AxonSyntaxError
from axon.repl.complete import FLOW_KEYWORDS, OTHER_KEYWORDS, STATEMENT_KEYWORDS, AxonCompleter
from axon.runtime.session import Session

_TERMINALS = lark.Lark(grammar_text(), parser="lalr").terminals
GRAMMAR_KEYWORDS = {
    t.name: t.pattern.value
    for t in _TERMINALS
    if isinstance(t.pattern, PatternStr) and t.pattern.value.isidentifier()
}
_WORDS = sorted(GRAMMAR_KEYWORDS.values())


def test_the_grammar_has_the_keywords_this_test_expects() -> None:
    assert {"memory", "remember", "recall", "for", "constrained_by", "true"} <= set(_WORDS)


def test_the_completer_knows_every_keyword_once_per_place() -> None:
    assert sorted({*STATEMENT_KEYWORDS, *FLOW_KEYWORDS, *OTHER_KEYWORDS}) == _WORDS
    assert not set(OTHER_KEYWORDS) & {*STATEMENT_KEYWORDS, *FLOW_KEYWORDS}
    assert {"memory", "flow", "run", "let"} <= set(STATEMENT_KEYWORDS)
    assert {"step", "probe", "if", "let"} <= set(FLOW_KEYWORDS)


def test_syntax_errors_know_every_keyword() -> None:
    words = keywords()
    assert words.terminals == GRAMMAR_KEYWORDS
    for terminal, word in GRAMMAR_KEYWORDS.items():
        assert syntax_errors._keyword_words({terminal}, _parser()) == [word]
    assert words.starters == tuple(sorted({*STATEMENT_KEYWORDS, *FLOW_KEYWORDS}))


def _complete(completer: AxonCompleter, text: str) -> list[str]:
    document = Document(text, len(text))
    return [c.text for c in completer.get_completions(document, CompleteEvent(True, False))]


@pytest.fixture
def completer(tmp_path: Path) -> AxonCompleter:
    return AxonCompleter(Session(memory_dir=tmp_path), backend_names=lambda: [])


@pytest.mark.parametrize("word", STATEMENT_KEYWORDS)
def test_each_statement_keyword_completes_and_is_suggested_when_misspelt(
    word: str, completer: AxonCompleter
) -> None:
    assert word in _complete(completer, word[:-1])
    with pytest.raises(AxonSyntaxError) as info:
        axon.parse(f"{word}{word[-1]} X")
    assert f"did you mean '{word}'?" in info.value.message


@pytest.mark.parametrize("word", FLOW_KEYWORDS)
def test_each_flow_keyword_completes_and_is_suggested_when_misspelt(
    word: str, completer: AxonCompleter
) -> None:
    assert word in _complete(completer, "flow F() {\n  " + word[:-1])
    with pytest.raises(AxonSyntaxError) as info:
        axon.parse(f"flow F() {{\n  {word}{word[-1]} X\n}}")
    assert f"did you mean '{word}'?" in info.value.message


@pytest.mark.parametrize("word", OTHER_KEYWORDS)
def test_each_other_keyword_completes_inside_a_statement(
    word: str, completer: AxonCompleter
) -> None:
    assert word in _complete(completer, "recall x " + word[:-1])
