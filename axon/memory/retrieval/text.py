"""Text analysis for keyword retrieval: the same tokens on every backend.

`tokenize` lower-cases and splits on anything that is not a letter or digit;
`query_terms` also drops stop words (which measurably hurt BM25 on
conversational questions) and duplicates, keeping the order.

`stem` is the Porter (1980) stemmer exactly as SQLite FTS5's `porter` tokenizer
applies it (checked word for word on the LoCoMo vocabulary), so an in-process
BM25 over `index_terms` / `search_terms` ranks like FTS5 does: "painting",
"painted" and "paints" all match "paint". Stemming raised BM25 evidence
recall@5 on LoCoMo dev from 0.42 to 0.47. Do not stem the terms of an FTS5
query yourself: FTS5 stems them again, and Porter is not idempotent.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

_ASCII_WORDS = bytes(
    code + 32 if 65 <= code <= 90 else code if chr(code).isalnum() and code < 128 else 32
    for code in range(256)
)
"""A `bytes.translate` table: ASCII capitals to lower case, letters and digits kept, every
other ASCII byte a space. An ASCII text translated and split on whitespace gives exactly
what `_TOKEN` finds in its lower-cased form, at about half the cost of the regex."""

STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can could did didn't do does doesn't doing don't
    down during each few for from further had has have having he her here hers herself him
    himself his how i if in into is isn't it it's its itself just let me more most my myself
    no nor not of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this
    those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t d ll m re ve
    also did does get got go going know like make made really much many say said tell told
    thing things think way well yeah yes oh ok okay
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits) of `text`."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    return _TOKEN.findall(text.lower())


def query_terms(text: str) -> list[str]:
    """The distinct content words of a query, in order; all its words if only stop words."""
    tokens = tokenize(text)
    seen: set[str] = set()
    terms = []
    for token in tokens:
        if token not in STOP_WORDS and token not in seen:
            seen.add(token)
            terms.append(token)
    if not terms:
        for token in tokens:
            if token not in seen:
                seen.add(token)
                terms.append(token)
    return terms


# ---------------------------------------------------------------------- stemming

_VOWELS = frozenset("aeiou")


def _consonants(w: str) -> list[bool]:
    """Whether each letter of `w` is a consonant, in Porter's sense, in one pass.

    A 'y' is a consonant at the start of a word or after a vowel, a vowel after a
    consonant. Porter states that rule recursively; walked left to right it needs
    only the previous letter, so a word of any length (a run of thousands of 'y's
    included) is classified without recursion and in linear time.
    """
    flags: list[bool] = []
    previous = False
    for i, ch in enumerate(w):
        if ch in _VOWELS:
            previous = False
        elif ch == "y":
            previous = i == 0 or not previous
        else:
            previous = True
        flags.append(previous)
    return flags


def _cons(w: str, i: int) -> bool:
    """Whether letter `i` of `w` is a consonant (see `_consonants`).

    Only the run of 'y's ending at `i` matters: its letters alternate, starting
    from what the letter before the run (or the start of the word) makes the first.
    """
    ch = w[i]
    if ch in _VOWELS:
        return False
    if ch != "y":
        return True
    start = i
    while start > 0 and w[start - 1] == "y":
        start -= 1
    first = start == 0 or w[start - 1] in _VOWELS
    return first == ((i - start) % 2 == 0)


def _m(stem: str) -> int:
    """Number of VC sequences in `stem`."""
    n = 0
    prev_vowel = False
    for consonant in _consonants(stem):
        if prev_vowel and consonant:
            n += 1
        prev_vowel = not consonant
    return n


def _has_vowel(stem: str) -> bool:
    return not all(_consonants(stem))


def _double_cons(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w: str) -> bool:
    if len(w) < 3:
        return False
    return (
        _cons(w, len(w) - 3)
        and not _cons(w, len(w) - 2)
        and _cons(w, len(w) - 1)
        and w[-1] not in "wxy"
    )


_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _replace(w: str, rules: tuple[tuple[str, str], ...], min_m: int) -> str:
    for suffix, repl in rules:
        if w.endswith(suffix):
            stem = w[: -len(suffix)]
            return stem + repl if _m(stem) > min_m - 1 else w
    return w


def _porter(w: str) -> str:
    if len(w) <= 2 or not w.isascii() or not w.isalnum():
        return w
    # step 1a
    if w.endswith(("sses", "ies")):
        w = w[:-2]
    elif w.endswith("ss"):
        pass
    elif w.endswith("s"):
        w = w[:-1]
    # step 1b
    extra = False
    if w.endswith("eed"):
        if _m(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith("ed") and _has_vowel(w[:-2]):
        w, extra = w[:-2], True
    elif w.endswith("ing") and _has_vowel(w[:-3]):
        w, extra = w[:-3], True
    if extra:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _double_cons(w) and w[-1] not in "lsz":
            w = w[:-1]
        elif _m(w) == 1 and _cvc(w):
            w += "e"
    # step 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    w = _replace(w, _STEP2, 1)
    w = _replace(w, _STEP3, 1)
    # step 4
    for suffix in _STEP4:
        if w.endswith(suffix):
            stem = w[: -len(suffix)]
            if _m(stem) > 1 and (suffix != "ion" or stem.endswith(("s", "t"))):
                w = stem
            break
    # step 5
    if w.endswith("e"):
        stem = w[:-1]
        if _m(stem) > 1 or (_m(stem) == 1 and not _cvc(stem)):
            w = stem
    if _m(w) > 1 and _double_cons(w) and w.endswith("l"):
        w = w[:-1]
    return w


STEM_CACHE_SIZE = 1 << 17
"""At most this many words are kept in `stem`'s cache (about 20 MB when full).

The stemmer is pure Python (about 10 microseconds a word), and words repeat: a
batch of writes looks up each token in a dict instead. When the cache is full it is
emptied and refilled from what comes next, which keeps it bounded without the
bookkeeping of a least-recently-used cache."""

_STEMS: dict[str, str] = {}
_DIGITS = frozenset("0123456789")


def stem(token: str) -> str:
    """The Porter stem of a lower-case token (FTS5 `porter`); other tokens unchanged.

    Like FTS5, only ASCII letters and digits are stemmed; words in other scripts
    are returned as they are.
    """
    found = _STEMS.get(token)
    if found is None:
        if token[-1:] in _DIGITS:
            # Every Porter rule removes or rewrites a suffix of letters, so a word that
            # ends in a digit (a number, a key such as "e123") is its own stem; such
            # words rarely repeat, and are kept out of the cache.
            return token
        found = _porter(token)
        if len(_STEMS) >= STEM_CACHE_SIZE:
            _STEMS.clear()
        _STEMS[token] = found
    return found


def index_terms(text: str) -> list[str]:
    """The stemmed tokens of a stored text, for an in-process BM25 index."""
    cached = _STEMS.get
    return [cached(token) or stem(token) for token in tokenize(text)]


CONTEXT_WEIGHT = 0.5
"""How much a word of an entry's context counts against a word of the entry itself.

The context is the text of the entry stored just before it in the same memory. A
memory is often written as a stream (a conversation, a log, notes taken in order)
and an entry's own words can miss what it is about: "Yes, every Sunday" answers
the question stored before it. Keyword indexes therefore hold each entry's context
too, at this weight (in-process BM25 and FTS5's bm25 column weights alike), so a
match only in the context ranks below a comparable match in the entry itself.
Measured on LoCoMo dev: evidence recall@5 of hybrid retrieval 0.52 -> 0.56,
keyword alone 0.47 -> 0.51. `exact` never looks at the context.
"""


MAX_QUERY_TERMS = 64
"""Distinct terms (stems) of a keyword query that are searched; the rest are ignored.
The cap bounds an SQL backend's statement (one MATCH term, one statistics lookup and
one ranking expression per term); every backend applies it (`search_words`), so a
long query ranks alike everywhere."""


def search_words(text: str) -> list[str]:
    """A keyword query's words as every backend searches them: the content words
    (`query_terms`) whose stems are the query's first `MAX_QUERY_TERMS` distinct
    stems, the first word of each stem. FTS5 wants these (it stems them itself);
    the others use `search_terms`, their stems."""
    words: list[str] = []
    seen: set[str] = set()
    for word in query_terms(text):
        term = stem(word)
        if term not in seen:
            seen.add(term)
            words.append(word)
            if len(words) == MAX_QUERY_TERMS:
                break
    return words


def search_terms(text: str) -> list[str]:
    """The terms of a keyword query on every backend: the stems of `search_words`,
    distinct, in order, at most `MAX_QUERY_TERMS`."""
    return [stem(word) for word in search_words(text)]
