"""How much of a text an embedding model reads: its token limit, and cutting a text to fit it.

A transformer reads at most its maximum sequence length (multilingual-e5-small:
512 tokens; all-MiniLM-L6-v2: 256). Embedding a longer text costs time (in
proportion to its tokens) for nothing the vector can hold, so every embedder
cuts its input first: a value or a query of a megabyte embeds as fast as a
page. Only the embedding input is cut; keyword search still indexes and matches
the whole text.

Cutting happens in two steps. A cheap character bound first
(`CHARS_PER_TOKEN_BOUND` characters per token of the limit, far more than any
natural text needs: English averages about 4, code and URLs about 6), so that
tokenizing costs no more than a few kilobytes whatever the input; then, where
the engine takes text rather than tokens, `fit_tokens` shortens that prefix until
the engine's own token count is within the limit.
"""

from __future__ import annotations

from collections.abc import Callable

CHARS_PER_TOKEN_BOUND = 12
"""Characters kept per token of a model's limit before tokenizing (see the module docstring)."""


def char_bound(max_tokens: int) -> int:
    """How many leading characters of a text can matter to a model reading `max_tokens`."""
    return max_tokens * CHARS_PER_TOKEN_BOUND


def fit_tokens(text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """The longest prefix of `text` found whose `count` is at most `max_tokens`.

    `count` is the engine's token count of a text (specials and prefix included).
    Each step shortens the text in proportion to its excess, with a 2% margin, so
    two or three counts suffice for natural text; it ends because every step cuts
    at least one character.
    """
    tokens = count(text)
    while tokens > max_tokens and text:
        keep = int(len(text) * max_tokens / tokens * 0.98)
        text = text[: min(keep, len(text) - 1)]
        tokens = count(text)
    return text
