"""The tokenizer's ASCII fast path and the stem cache give exactly what they replace."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axon.memory.retrieval import text
from axon.memory.retrieval.text import _porter, index_terms, stem, tokenize

ROOT = Path(__file__).resolve().parents[2]
REGEX = re.compile(r"[^\W_]+", re.UNICODE)
"""The tokenizer's definition: maximal runs of letters and digits of the lower-cased text."""

SUFFIXES = (
    "", "s", "es", "ies", "sses", "ss", "ed", "eed", "ing", "y", "ational", "tional",
    "enci", "anci", "izer", "bli", "alli", "entli", "eli", "ousli", "ization", "ation",
    "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti", "logi",
    "icate", "ative", "alize", "iciti", "ical", "ful", "ness", "al", "ance", "ence", "er",
    "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion", "tion", "ou",
    "ism", "ate", "iti", "ous", "ive", "ize", "e", "ll", "at", "bl", "iz",
)  # fmt: skip
ROOTS = (
    "hop", "fil", "motor", "gener", "relat", "cry", "sky", "agree", "feed", "bleed",
    "happ", "control", "roll", "probat", "rat", "cease", "fall", "hiss", "fizz", "tann",
    "y", "ay", "oy", "xy", "a1", "9", "e12", "x2y", "caf", "b", "st",
)  # fmt: skip


def word_list() -> list[str]:
    """English words of the project's docs and spec, plus roots with every Porter suffix."""
    words: set[str] = set()
    for path in [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        words.update(REGEX.findall(path.read_text(encoding="utf-8").lower()))
    words.update(root + suffix for root, suffix in itertools.product(ROOTS, SUFFIXES))
    words.update(f"{word}{n}" for word, n in itertools.product(sorted(words)[:500], (0, 7, 42)))
    return sorted(words)


def test_the_word_list_is_large_enough_to_mean_something() -> None:
    words = word_list()
    assert len(words) > 5000
    assert sum(1 for word in words if _porter(word) != word) > 1000


def test_cached_stems_are_the_stemmers_stems(monkeypatch: pytest.MonkeyPatch) -> None:
    words = word_list()
    want = [_porter(word) for word in words]
    text._STEMS.clear()
    assert [stem(word) for word in words] == want  # filling the cache
    assert [stem(word) for word in words] == want  # read from it
    assert all(text._STEMS[w] == s for w, s in zip(words, want, strict=True) if w in text._STEMS)
    monkeypatch.setattr(text, "STEM_CACHE_SIZE", 64)  # emptied and refilled many times
    text._STEMS.clear()
    for _ in range(2):
        assert [stem(word) for word in words] == want
        assert len(text._STEMS) <= 64
    text._STEMS.clear()


def test_words_ending_in_a_digit_are_their_own_stems_and_not_cached() -> None:
    for word in ("e123", "2024", "mp3", "covid19", "ing1", "sses9"):
        assert _porter(word) == word
        assert stem(word) == word
        assert word not in text._STEMS


def test_index_terms_stems_every_token() -> None:
    sample = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")[:20000]
    sample += " Ünïcödé naïve CAFÉ straße İstanbul e123 running_dogs x__y 42nd"
    for chunk in (sample[i : i + 300] for i in range(0, len(sample), 300)):
        assert index_terms(chunk) == [_porter(token) for token in REGEX.findall(chunk.lower())]


ASCII = st.text(st.characters(max_codepoint=127), max_size=60)


@settings(max_examples=400, deadline=None)
@given(value=ASCII | st.text(max_size=60))
def test_tokenize_is_the_regex_on_the_lower_cased_text(value: str) -> None:
    assert tokenize(value) == REGEX.findall(value.lower())


def test_tokenize_on_every_ascii_character() -> None:
    every = "".join(chr(code) for code in range(128))
    for value in (every, every[::-1], " ".join(every), every * 3):
        assert tokenize(value) == REGEX.findall(value.lower())


def _recursive_cons(w: str, i: int) -> bool:
    """Porter's consonant test as the paper states it (recursive): the reference."""
    if w[i] in "aeiou":
        return False
    if w[i] == "y":
        return i == 0 or not _recursive_cons(w, i - 1)
    return True


@given(st.text(alphabet="aeiouybyyc", min_size=1, max_size=60))
def test_consonants_are_porters_recursive_rule(word: str) -> None:
    want = [_recursive_cons(word, i) for i in range(len(word))]
    assert text._consonants(word) == want
    assert [text._cons(word, i) for i in range(len(word))] == want


def test_words_of_thousands_of_ys_stem_without_recursion() -> None:
    """Porter's rule for 'y' looks at the letter before; applied recursively it raised
    RecursionError on a word of ~1,000 'y's (a remember that crashed half-way)."""
    for word in ("y" * 5000, "ay" * 3000, "b" + "y" * 5000 + "ing", "y" * 4999 + "ies"):
        assert stem(word) == _porter(word)
        assert index_terms(f"hello {word}")[0] == "hello"
    assert _porter("y" * 5000) == "y" * 4999 + "i"  # step 1c: a 'y' after a vowel 'y'
