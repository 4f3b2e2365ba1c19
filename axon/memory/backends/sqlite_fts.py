"""What SQLite's full-text indexes hold for an entry, and how a keyword query matches it.

FTS5's `unicode61` tokenizer (Unicode 6.1 tables, its own case and diacritic folding)
splits non-ASCII text differently from the tokenizer every backend scores with
(`retrieval.text.tokenize`: Python's `str.lower()` and current Unicode): "İstanbul"
lower-cases to "i̇stanbul", two tokens for Python ("i", "stanbul") and one for FTS5
("istanbul"); a combining mark inside a word joins it for FTS5 and splits it for
Python; letters and symbols added after Unicode 6.1 are word characters for one and
separators for the other (141,100 of the 282,102 assigned non-ASCII characters,
checked one by one). FTS5 picks the candidates, so such an entry was never found.

So a row any of whose indexed columns is not ASCII is indexed as the shared stems of
each column (`fts_row`), each spelled as `stem_token`: "qx", the stem's UTF-8 in hex,
"x", one ASCII token that FTS5's porter leaves as it is (no Porter suffix ends in
"x"). ASCII rows are indexed as they are (on ASCII both tokenizers split alike, and
FTS5's porter is the shared `stem`). A query matches each of its words both ways
(`match_expression`), and a term's document count adds the two spellings (a row has
one). The candidates are then those of the shared tokenizer, and each is scored from
its text as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from axon.memory.backends.sql_common import quoted_terms
from axon.memory.retrieval.text import stem, tokenize

FtsRow = tuple[int, str, str, str]
"""`(id, key, text, context)` of an entry, as stored or as indexed."""


def stem_token(term: str) -> str:
    """The index token of the shared stem `term` in a non-ASCII row."""
    return "qx" + term.encode("utf-8", "surrogatepass").hex() + "x"


def _stems(column: str) -> str:
    return " ".join(stem_token(stem(token)) for token in tokenize(column))


def fts_row(row: FtsRow, linked: bool) -> FtsRow:
    """`row` as `entries_fts` (or, when `linked`, `entries_fts_linked`, which also
    indexes the context) holds it: as it is when its indexed columns are ASCII, else
    each column as its stems' `stem_token`s. A row is deleted from an index with the
    values it was inserted with, so every insert and delete goes through here."""
    ident, key, text, context = row
    if key.isascii() and text.isascii() and (not linked or context.isascii()):
        return row
    return ident, _stems(key), _stems(text), _stems(context) if linked else context


def match_expression(words: Sequence[str]) -> str | None:
    """The FTS5 MATCH expression of a keyword query's `words` (`text.search_words`):
    each word and its stem's `stem_token`, quoted (no user text becomes syntax),
    joined by OR. None without words."""
    if not words:
        return None
    spellings = [*words, *(stem_token(stem(word)) for word in words)]
    return " OR ".join(quoted_terms(spellings))
