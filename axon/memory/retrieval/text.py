"""Text analysis for keyword retrieval: the same tokens on every backend.

`tokenize` lower-cases and splits on anything that is not a letter or digit;
`query_terms` also drops stop words (which measurably hurt BM25 on
conversational questions) and duplicates, keeping the order.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

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
    """.split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits) of `text`."""
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
