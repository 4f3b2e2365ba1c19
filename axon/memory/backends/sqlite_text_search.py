"""A text query on the SQLite file -> its best entries: the `exact` and `keyword` read
paths of `SQLiteBackend`, scored as every backend scores them.

`exact` reads a rare needle's rows from the trigram index (`entries_substr`), else
scans newest first, and scores each candidate with the seed's tiers in Python;
`keyword` takes candidates from FTS5 (the query's words in both the spellings the
indexes hold, `sqlite_fts`) and scores them with the scope's own BM25 statistics
(`retrieval.scores`); a small scope of a big file is searched by its own terms, kept
between recalls (`sqlite_scope_terms`). Kept apart from `sqlite` (connection, writes,
decay, vectors) because they are the two full-text read paths and the largest part of
the backend; each function reads an open connection, given the scope's SQL condition
(`ScopeSQL`): the backend purges expired rows and opens the read itself.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from axon.memory.backend import best_first
from axon.memory.backends.sql_common import candidate_count, quoted_terms, row_entry
from axon.memory.backends.sqlite_fts import match_expression, stem_token
from axon.memory.backends.sqlite_schema import (
    _COLUMNS,
    _SELECT,
    KEY_LC,
    LIVE,
    LIVE_E,
    SUBSTRING_TABLE,
    contains,
    like_pattern,
)
from axon.memory.backends.sqlite_scope_terms import (
    ScopeTermsCache,
    metadata_passes,
    ranked_in_scope,
)
from axon.memory.entry import MemoryEntry, filter_predicate, window_test
from axon.memory.retrieval.exact import SCORE_EQUAL, SCORE_KEY, SCORE_VALUE, seed_score
from axon.memory.retrieval.scores import ScopeStats, entry_counts, entry_length, keyword_score
from axon.memory.retrieval.text import CONTEXT_WEIGHT, search_words, stem

ScopeSQL = tuple[str, tuple[Any, ...]]
"""A condition restricting rows to a scope (` AND scope = ?`, its parameters), or ("", ())."""

SUBSTRING_CANDIDATES = 2000
"""`exact` reads the trigram index's matches of a needle when they are at most this many;
a more common needle is found sooner by the recency scan, which stops after `top_k`."""

SUBSTRING_GRAMS = 16
"""Most trigrams of a needle looked up (a long needle's are sampled along it)."""


def fts_match_expression(query: str) -> str | None:
    """An FTS5 MATCH expression for `query`: its words (`text.search_words`) in both the
    spellings the full-text indexes hold (`sqlite_fts.match_expression`), quoted, so
    no operator, column filter, prefix star or NEAR group can come from user text.
    None when the query has no words at all.
    """
    return match_expression(search_words(query))


def _entry(row: Any, score: float = 0.0) -> MemoryEntry:
    return row_entry(row, score, json.loads)


def _encodable(text: str) -> bool:
    """Whether `text` can be sent to SQLite (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def retrieve_exact(
    conn: sqlite3.Connection,
    query: str,
    top_k: int,
    scope_sql: ScopeSQL,
    filters: Mapping[str, Any] | None,
    now: float,
) -> list[MemoryEntry]:
    """The seed's tiers, best tier first, each newest first, stopping at `top_k`.

    A needle of three or more characters is looked up in the trigram index
    (`entries_substr`): when it has at most `SUBSTRING_CANDIDATES` matches in the
    file, those rows are all there is to score. Otherwise (a short or common
    needle): key equal comes from the lower-cased key index; key contains from a
    scan of the covering recency index; value contains from a scan of the rows
    in recency order. Scans are read lazily, so a common query stops after a few
    rows. SQL only preselects: every candidate is scored in Python with the
    seed's rules, so the results are the seed's.
    """
    accepts = filter_predicate(filters)
    inside = window_test(filters)
    q = query.lower()
    # What SQL matches: a NUL is a space there, as in the stored `_lc` form (SQL's
    # string functions stop at a NUL); candidates are scored with `q` itself.
    needle = q.replace("\x00", " ")
    pattern = like_pattern(needle)
    where, params = scope_sql
    tiers: tuple[tuple[str, tuple[Any, ...], float], ...] = (
        (f"{KEY_LC} = ?", (q,), SCORE_EQUAL),
        (contains("key", pattern), (pattern, needle), SCORE_KEY),  # key-equal: skipped below
        (
            f"NOT {contains('key', pattern)} AND {contains('text', pattern)}",
            (pattern, needle, pattern, needle),
            SCORE_VALUE,
        ),
    )

    indexed = _exact_indexed(conn, q, top_k, scope_sql, filters, now)
    if indexed is not None:
        return indexed
    found: list[MemoryEntry] = []
    for condition, args, tier_score in tiers:
        if len(found) >= top_k:
            break
        sql = f"{_SELECT} WHERE {condition} AND {LIVE}{where} ORDER BY timestamp DESC, id"
        if tier_score == SCORE_KEY:  # ids from the covering index, then the rows
            sql = f"SELECT id FROM entries WHERE {condition} AND {LIVE}{where} "
            sql += "ORDER BY timestamp DESC, id"
        for row in conn.execute(sql, (*args, now, *params)):
            if tier_score == SCORE_KEY:
                row = conn.execute(f"{_SELECT} WHERE id = ?", (row[0],)).fetchone()
            entry = _entry(row)
            score = seed_score(q, entry.key, entry.value)
            if score != tier_score or not (accepts(entry.metadata) and inside(entry.timestamp)):
                continue
            found.append(entry.with_score(score))
            if len(found) == top_k:
                break
    return found


def _exact_indexed(
    conn: sqlite3.Connection,
    q: str,
    top_k: int,
    scope_sql: ScopeSQL,
    filters: Mapping[str, Any] | None,
    now: float,
) -> list[MemoryEntry] | None:
    """`exact` from the trigram index, or None when it cannot say (a needle under three
    characters, one with NUL or unencodable characters, or more than
    `SUBSTRING_CANDIDATES` matches).

    The index keeps no positions, so the rows holding all of (at most
    `SUBSTRING_GRAMS` of) the needle's trigrams are a superset of those holding
    the needle; each is scored by `seed_score` (0 drops it) and ordered by
    `best_first`.
    """
    accepts = filter_predicate(filters)
    inside = window_test(filters)
    if len(q) < 3 or "\x00" in q or not _encodable(q):
        return None
    grams = list(dict.fromkeys(q[i : i + 3] for i in range(len(q) - 2)))
    if len(grams) > SUBSTRING_GRAMS:  # spread over the needle: still a superset
        step = len(grams) / SUBSTRING_GRAMS
        grams = [grams[int(i * step)] for i in range(SUBSTRING_GRAMS)]
    matches = conn.execute(
        f"SELECT rowid FROM {SUBSTRING_TABLE} WHERE {SUBSTRING_TABLE} MATCH ? LIMIT ?",
        (" AND ".join(quoted_terms(grams)), SUBSTRING_CANDIDATES + 1),
    ).fetchall()
    if len(matches) > SUBSTRING_CANDIDATES:
        return None
    where, params = scope_sql
    ranked: list[tuple[tuple[float, float, int], MemoryEntry]] = []
    for start in range(0, len(matches), 500):
        ids = [row[0] for row in matches[start : start + 500]]
        marks = ",".join("?" * len(ids))
        for row in conn.execute(
            f"{_SELECT} WHERE id IN ({marks}) AND {LIVE}{where}", (*ids, now, *params)
        ):
            entry = _entry(row)
            score = seed_score(q, entry.key, entry.value)
            if score > 0 and accepts(entry.metadata) and inside(entry.timestamp):
                ranked.append((best_first(score, entry.timestamp, row[0]), entry))
    ranked.sort(key=lambda item: item[0])
    return [entry.with_score(-order[0]) for order, entry in ranked[:top_k]]


def retrieve_keyword(
    conn: sqlite3.Connection,
    query: str,
    top_k: int,
    scope_sql: ScopeSQL,
    filters: Mapping[str, Any] | None,
    now: float,
    linked: bool = False,
    cache: ScopeTermsCache | None = None,
) -> list[MemoryEntry]:
    """Per-scope BM25 over key and text (and the context when `linked`), in [0, 1].

    FTS5 chooses the candidates: the best `want` matches of the whole file by its
    own rank, joined to their rows; if scope, expiry or filters leave fewer than
    `top_k`, `want` grows until the matches run out. Every candidate is then
    scored by `scores.keyword_score` with the statistics of its scope
    (`scope_stats`, and each query term's document count in that scope), so the
    score and the final order are those of every other backend. Unless `linked`,
    the index searched (`entries_fts`) holds only key and text.

    A small scope of a big file (`_small_scope`) is searched by its own rows instead,
    scored from their term counts kept in `cache` (`sqlite_scope_terms`; the
    backend's, so they outlive the recall while the scope is unchanged; None: read
    for this recall only), with the same scores and order.
    """
    accepts = filter_predicate(filters)
    inside = window_test(filters)
    match = fts_match_expression(query)
    if match is None:
        return []
    words = search_words(query)
    terms = [stem(word) for word in words]
    fts = "entries_fts_linked" if linked else "entries_fts"
    context_column = "e.context" if linked else "NULL"
    where, params = scope_sql
    if _small_scope(conn, scope_sql):
        passes = metadata_passes(accepts, inside) if filters else None
        found = ranked_in_scope(
            conn, cache or ScopeTermsCache(), params[0], terms, top_k, passes, now, linked
        )
        return [_entry(row, score) for row, score in found]
    want = candidate_count(top_k)
    while True:
        rows = conn.execute(
            f"SELECT {_COLUMNS}, e.text, {context_column} FROM (SELECT rowid, rank "
            f"FROM {fts} WHERE {fts} MATCH ? ORDER BY rank LIMIT ?) AS m "
            f"JOIN entries AS e ON e.id = m.rowid WHERE {LIVE_E}{where} ORDER BY m.rank",
            (match, want, now, *params),
        ).fetchall()
        kept = (
            [row for row in rows if inside(float(row[5])) and accepts(json.loads(row[4]))]
            if filters
            else rows
        )
        if len(kept) >= top_k or want < 0 or not _more_matches(conn, fts, match, want):
            break
        want = want * 16 if want < 100_000 else -1  # -1: no limit
    stats = {
        name: _scope_stats(conn, name, fts, words, linked)
        for name in {row[1] for row in kept}
    }
    scored = []
    for row in kept:
        context = row[9] if linked else None
        score = keyword_score(
            terms,
            entry_counts(row[2], row[8], context),
            entry_length(row[2], row[8], context),
            stats[row[1]],
        )
        if score > 0.0:  # FTS5 only proposes: the shared terms decide
            scored.append((*best_first(score, row[5], row[0]), row, score))
    scored.sort(key=lambda item: item[:3])
    return [_entry(item[3], item[4]) for item in scored[:top_k]]


SCOPE_SCAN = 20_000
"""A scope of at most this many entries, in a file holding at least `SCOPE_SHARE` times as
many, is searched by its own rows (`sqlite_scope_terms.ranked_in_scope`): FTS5's index covers the
whole file, so its matches of a common word grow with every other scope (a store of
1,000 namespaces), while the scope's rows do not (docs/performance.md, namespaces)."""
SCOPE_SHARE = 4


def _small_scope(conn: sqlite3.Connection, scope_sql: ScopeSQL) -> bool:
    """Whether the keyword search of this scope reads its rows rather than the index."""
    if not scope_sql[1]:
        return False
    row = conn.execute(
        "SELECT docs, (SELECT sum(docs) FROM scope_stats) FROM scope_stats "
        "WHERE ifnull(scope, X'00') = ?",
        (scope_sql[1][0],),
    ).fetchone()
    return row is not None and 0 < row[0] <= SCOPE_SCAN and row[0] * SCOPE_SHARE <= row[1]


def _scope_stats(
    conn: sqlite3.Connection, scope: str | None, fts: str, words: Sequence[str], linked: bool
) -> ScopeStats:
    """BM25 statistics of `scope` for the query `words` (unstemmed, as FTS5 wants them).

    Entries and lengths come from `scope_stats`. A term's document count is the
    whole file's (the fts5vocab table, one lookup) when the scope holds every
    entry of the file, else the count of the term's matches within the scope.
    """
    ident = scope if scope is not None else b"\x00"
    row = conn.execute(
        "SELECT docs, length, context_length FROM scope_stats WHERE ifnull(scope, X'00') = ?",
        (ident,),
    ).fetchone()
    if row is None:
        return ScopeStats(0, 0.0)
    docs, length, context_length = int(row[0]), float(row[1]), float(row[2])
    if linked:
        length += CONTEXT_WEIGHT * context_length
    by_stem: dict[str, str] = {}
    for word in words:
        by_stem.setdefault(stem(word), word)
    total = int(conn.execute("SELECT ifnull(sum(docs), 0) FROM scope_stats").fetchone()[0])
    df: dict[str, int] = {}
    if total == docs:
        # A row holds a term in one spelling (`sqlite_fts`): the word's porter stem
        # (the shared `stem`) in an ASCII row, its `stem_token` in the others.
        for term in by_stem:  # one equality lookup each (fts5vocab scans for IN)
            df[term] = 0
            for spelling in (term, stem_token(term)):
                found = conn.execute(
                    f"SELECT doc FROM {fts}_terms WHERE term = ?", (spelling,)
                ).fetchone()
                df[term] += int(found[0]) if found else 0
    else:
        for term, word in by_stem.items():
            count = conn.execute(
                f"SELECT count(*) FROM {fts} AS f CROSS JOIN entries AS e ON e.id = f.rowid "
                f"WHERE {fts} MATCH ? AND e.scope IS ?",
                (match_expression([word]), scope),
            ).fetchone()[0]
            df[term] = int(count)
    return ScopeStats(docs, length, df)


def _more_matches(conn: sqlite3.Connection, fts: str, match: str, seen: int) -> bool:
    """Whether the full-text index `fts` holds more than `seen` matches of `match`."""
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT ?)",
        (match, seen + 1),
    ).fetchone()
    return int(row[0]) > seen
