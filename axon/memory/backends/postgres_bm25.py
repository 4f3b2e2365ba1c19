"""PostgreSQL keyword ranking: the BM25 statistics, the ranking expression, the max-score rule.

`PostgresBackend._retrieve_keyword` picks its candidates with these and scores them
with `scores.keyword_score`, as every backend does:

- `scope_stats`: a memory's BM25 statistics for a query, read from `scope_stats` and
  `term_stats` (kept by the write's own triggers, schema 5) in one statement;
- `rank_sql`: an SQL expression computing each candidate's BM25 (up to a constant),
  so the server orders the rows and returns only the best;
- `best_ranked`: reads only the rows of the query's rarer words when that provably
  gives the same best rows;
- `stored_counts`: a candidate's term counts and length from its stored columns, so
  its score needs no tokenising again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from axon.memory.backends.postgres_sql import Fragments, Row
from axon.memory.retrieval.scores import K1, B, ScopeStats, idf
from axon.memory.retrieval.text import CONTEXT_WEIGHT

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import Composable, Composed


def best_ranked(
    ranked: Callable[[list[str], int], list[Row]],
    terms: list[str],
    stats: ScopeStats,
    want: int,
) -> list[Row]:
    """`ranked(terms, want)`, reading only the rows of the query's rarer terms when that
    provably gives the same rows (the "max score" rule of search engines).

    A term adds at most its bound, `idf * (k1 + 1)`, to a row's rank. So when the
    bounds of the most common terms (those set aside) add up to less than the
    `want`-th best rank among the rows holding one of the other terms, no row
    holding only set-aside terms can be among the best `want`: the rows holding
    the other terms, ranked by every term, are the answer. A query with a very
    common word then reads the rows of its rare words instead of most of the
    table. Otherwise (a short result, a rank too low) every matching row is ranked.
    """
    if want < 0 or len(terms) < 2:
        return ranked(terms, want)
    bound = {term: idf(stats.df.get(term, 0), stats.docs) * (K1 + 1.0) for term in terms}
    by_frequency = sorted(terms, key=lambda term: -stats.df.get(term, 0))
    rest = list(by_frequency)
    aside = 0.0
    for term in by_frequency[:-1]:
        # Worth trying when the set-aside bounds stay well below what one rare term
        # gives a typical row (its bound times about 0.45, at tf 1 and average length).
        if aside + bound[term] >= 0.4 * max(bound[other] for other in rest if other != term):
            break
        aside += bound[term]
        rest.remove(term)
    if len(rest) == len(terms):
        return ranked(terms, want)
    rows = ranked(rest, want)
    if len(rows) == want and aside < float(rows[-1][-1]) * (1.0 - 1e-9):
        return rows
    return ranked(terms, want)


def scope_stats(
    q: Fragments,
    conn: Connection[Any],
    scope: str | None,
    terms: Sequence[str],
    linked: bool,
    *,
    every: bool = False,
) -> ScopeStats:
    """BM25 statistics of `scope` (of the whole store if `every`) for the query `terms`.

    One statement, reading one row per scope (`scope_stats`: entries and lengths)
    and one per query term and scope (`term_stats`, schema 5: its document
    count, `linked_docs` when `linked`), both kept by the write's own triggers.
    Expired rows count until they are purged, as in the other backends.
    """
    where, params = (
        (q.sql.SQL("true"), ())
        if every
        else (q.sql.SQL("scope IS NULL"), ())
        if scope is None
        else (q.sql.SQL("scope = %s"), (scope,))
    )
    row = conn.execute(
        q.query(
            "SELECT (SELECT array[count(*), sum(docs), sum(length), sum(context_length)] "
            "FROM {scope_stats} WHERE {where}), "
            "(SELECT array_agg(array[term, n::text]) FROM (SELECT term, sum({column}) AS n "
            "FROM {term_stats} WHERE term = ANY(%s::text[]) AND {where} GROUP BY term) AS d)",
            scope_stats=q.scope_stats,
            term_stats=q.term_stats,
            where=where,
            column=q.sql.SQL("linked_docs" if linked else "docs"),
        ),
        (*params, list(terms), *params),
    ).fetchone()
    assert row is not None
    found, docs, length, context_length = row[0]
    if not found:
        return ScopeStats(0, 0.0)
    total = float(length) + (CONTEXT_WEIGHT * float(context_length) if linked else 0.0)
    df = {term: int(count) for term, count in row[1] or () if int(count)}
    return ScopeStats(int(docs), total, df)


def rank_sql(
    q: Fragments, terms: Sequence[str], stats: ScopeStats, linked: bool, length: Composable
) -> tuple[Composed, tuple[Any, ...]]:
    """An SQL expression ordering candidates: their BM25 in the scope of `stats`.

    It computes what `scores.keyword_score` does (from `term_counts`, and
    `context_counts` when linked) up to the division by the query's bound, so
    the rows it ranks first are the best; only the order is taken from it, the
    scores themselves come from `keyword_score`.
    """
    sql = q.sql
    # float8 constants throughout (`float8`): untyped literals would make it `numeric` (slow).
    norm = sql.SQL("{} + {} * {}").format(
        q.float8(K1 * (1 - B)), q.float8(K1 * B / stats.average_length), length
    )
    tf = sql.SQL("coalesce(e.term_counts[array_position(e.terms, %s::text)], 0)::float8")
    if linked:
        tf = sql.SQL(
            "({} + {} * coalesce(e.context_counts[array_position(e.context_terms, %s::text)], 0))"
        ).format(tf, q.float8(CONTEXT_WEIGHT))
    parts: list[Composable] = []
    params: list[Any] = []
    for term in terms:
        # Inline arithmetic, no subquery: it runs once per matching row.
        weight = idf(stats.df.get(term, 0), stats.docs) * (K1 + 1.0)
        parts.append(sql.SQL("{} * {} / ({} + {})").format(q.float8(weight), tf, tf, norm))
        params.extend([term, term] * 2 if linked else [term] * 2)
    return sql.SQL("({})").format(sql.SQL(" + ").join(parts)), tuple(params)


def stored_counts(row: Row, linked: bool) -> tuple[dict[str, float], float]:
    """`scores.entry_counts` and `entry_length` of a keyword candidate, from its stored
    `terms`, `term_counts` and `length` (row[9:12]) and, when `linked`, its context's
    (row[13:16]): the same numbers, without tokenising and stemming the texts again."""
    counts: dict[str, float] = dict(zip(row[9], row[10], strict=True))
    length = float(row[11])
    if linked:
        for term, count in zip(row[13], row[14], strict=True):
            counts[term] = counts.get(term, 0.0) + CONTEXT_WEIGHT * count
        length += CONTEXT_WEIGHT * row[15]
    return counts, length
