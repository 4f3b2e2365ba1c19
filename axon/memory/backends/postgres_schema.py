"""PostgreSQL layout of a memory store: connection settings in, DSNs, schema DDL and migrations out.

Everything AXON keeps lives in one PostgreSQL schema (default `axon`, or
`AXON_PG_SCHEMA`, or the backend's `schema` keyword):

- `meta (name, value)`: `schema_version` is the number of `MIGRATIONS` applied.
- `entries`: one row per `(scope, key)` (`UNIQUE NULLS NOT DISTINCT`, so the
  scope-less entries are unique too; hence PostgreSQL 15 or newer). `value` and
  `metadata` are `json` (not `jsonb`): the text is kept as written, so object key
  order survives and strings may hold `\\u0000`, which `jsonb` refuses. `text` is
  what recall matches (`value_text`, NUL characters dropped); `key_lc`/`text_lc`
  hold Python's `str.lower()` only where it differs from ASCII lower-casing, so
  `exact` matches exactly as the in-memory backend does on any database locale.
  `context` is the text of the entry stored just before it in its scope (fixed
  when the key is first stored). `terms` holds the distinct Porter stems of key
  and text (`text.index_terms`, computed in Python at write, GIN-indexed; a stem
  over `MAX_TERM_CHARS` as its `index_term`, schema 6),
  `term_counts` how often each occurs and `length` the token count
  (`scores.text_length`); `context_terms`, `context_counts` and
  `context_length` are the same for the context (GIN-indexed too, searched by a
  linked recall). These are what keyword recall matches and scores with
  (`retrieval.scores`), so PostgreSQL's scores are those of every backend.
  `timestamp` is the entry's last write (`updated_at`), `created_at` its first
  (schema 7; NULL: the same as `timestamp`), kept when a live entry is stored again.
  `vgen` changes on every write of the row (it versions the text a vector was
  computed from); `wxid` is the writing transaction's id, so entries written
  since a point in time are found through an index.
- `scope_stats (scope, docs, length, context_length)`: per scope, its rows and
  the sum of their `length` and `context_length`, the BM25 statistics of a
  memory. Statement-level triggers on `entries` (transition tables) keep it in
  the transaction of every insert, update and delete, whichever statement does it
  (writes, deletes, clears, purges).
- `term_stats (term, scope, docs, linked_docs)` (schema 5): per scope and term,
  the rows whose `terms` hold it and those whose `terms` or `context_terms` do
  (a linked recall's count), the BM25 document frequencies. The same statement
  triggers keep it, in the write's transaction; a count that drops to zero
  loses its row. Recall reads one row per query term instead of counting the
  rows holding it (most of the memory for a common word).
- Trigram indexes (schema 4, pg_trgm GIN): `entries_key_trgm` and
  `entries_text_trgm` on the key and text lower-cased as Python does
  (`KEY_LC_SQL`, `TEXT_LC_SQL`), so `exact`'s substring test (`LIKE`, its `%`,
  `_` and `\\` escaped) reads only the rows holding the needle's trigrams.
- `versions (seq, scope, key, op, value, metadata, updated_at, expires_at, keep)`
  (schema 8): the history of the entries of memories declared with `history:`
  (`postgres_versions`), one row per recorded write (`op` is `remember`, `update` or
  `forget`; a `forget` has no value nor metadata; `keep` the history setting it was
  recorded with), `seq` from the sequence `versions_seq`, indexed on
  `(scope, key, seq)`. Versions are not entries: no recall, list or count reads them.
- `models (model, dim, tbl)`: one vector table per embedding model,
  `vec_<hash of the model id>` with `embedding vector(dim)` and an HNSW index
  (`vector_cosine_ops`). HNSW needs a fixed dimension; a table per model gives each
  model its own index and never mixes vectors of different models. These tables
  are created on first use of a model (the role needs CREATE on the schema then).

Migrations run on first use inside one transaction holding an advisory lock, so
concurrent first users do not race.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from axon.errors import AxonMemoryError, extra_hint
from axon.memory.backend import expand_location
from axon.memory.retrieval.text import stem, tokenize

if TYPE_CHECKING:
    from psycopg import Connection

DSN_ENV = "AXON_PG_DSN"
SCHEMA_ENV = "AXON_PG_SCHEMA"
DEFAULT_SCHEMA = "axon"
TS_CONFIG = "english"
"""The text search configuration of the schema 1 and 2 `tsv` column (dropped in 3)."""

KEYWORD_TEXT_CHARS = 100_000
"""Characters of key + text that went into schema 1 and 2's `tsv` (a tsvector is at most 1 MB)."""

MAX_TERM_CHARS = 512
"""Longer terms are stored as their `index_term`: a GIN index row must fit in a page
("index row requires 18016 bytes, maximum size is 8191" for a 6,000-character word),
and 512 characters of 4-byte UTF-8 always do."""

_LONG_TERM_PREFIX = 400

BACKFILL_BATCH = 1000
"""Rows whose terms migration 2 -> 3 computes per round trip."""

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64

_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

# Advisory lock namespace for migrations ("AXON" in ASCII), the second key is per schema.
_LOCK_NAMESPACE = 0x41584F4E


def install_hint() -> str:
    return extra_hint("postgres")


# ------------------------------------------------------------------ connection settings


def resolve_dsn(location: str | None) -> str:
    """The connection string for `location`: a DSN, `env:VAR`, or (None) `AXON_PG_DSN`."""
    if location:
        if location.startswith("env:"):
            return expand_location(location, "a PostgreSQL connection string")
        return location
    value = os.environ.get(DSN_ENV)
    if not value:
        raise AxonMemoryError(
            "backend 'pgvector' has no PostgreSQL server to use: set the AXON_PG_DSN "
            "environment variable (e.g. postgresql://user@host:5432/db), or give the memory "
            '`location: "env:VAR"` or a connection string'
        )
    return value


def parse_dsn(dsn: str) -> dict[str, Any]:
    """The connection parameters of `dsn` (URI or `key=value`); never echoes the string."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        return dict(conninfo_to_dict(dsn))
    except Exception:
        # libpq's message can quote part of the string, which may hold a password.
        raise AxonMemoryError(
            "the PostgreSQL connection string is not valid (expected a URI such as "
            "postgresql://user@host:5432/db or key=value pairs)"
        ) from None


def describe_dsn(params: dict[str, Any]) -> str:
    """`user@host:port/dbname` for messages: never the password."""
    host = str(params.get("host") or params.get("hostaddr") or "localhost")
    if host.startswith("/"):
        host = f"socket {host}"
    port = params.get("port") or "5432"
    user = params.get("user") or os.environ.get("PGUSER") or "(default user)"
    dbname = params.get("dbname") or os.environ.get("PGDATABASE") or "(default database)"
    return f"{user}@{host}:{port}/{dbname}"


def redact(message: str, params: dict[str, Any]) -> str:
    """`message` with the password (if any) blanked out."""
    password = params.get("password")
    if password:
        message = message.replace(str(password), "***")
    return message


def check_schema_name(schema: str) -> str:
    if not _SCHEMA_NAME.match(schema):
        raise AxonMemoryError(
            f"PostgreSQL schema name {schema!r} is not allowed (letters, digits and _; "
            "at most 63 characters, not starting with a digit)"
        )
    return schema


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def vector_table_name(model_id: str) -> str:
    return "vec_" + hashlib.sha1(model_id.encode("utf-8")).hexdigest()[:16]


# ------------------------------------------------------------------ migrations


def _v1(s: str) -> list[str]:
    return [
        f"CREATE TABLE {s}.entries ("
        "  id bigserial PRIMARY KEY,"
        "  scope text,"
        "  key text NOT NULL,"
        "  key_lc text,"
        "  value json NOT NULL,"
        "  text text NOT NULL,"
        "  text_lc text,"
        "  metadata json NOT NULL,"
        "  timestamp double precision NOT NULL,"
        "  expires_at double precision,"
        f"  vgen bigint NOT NULL DEFAULT nextval('{s}.vgen_seq'),"
        "  wxid bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint),"
        f"  tsv tsvector GENERATED ALWAYS AS (to_tsvector('{TS_CONFIG}'::regconfig,"
        f"      left(key || ' ' || text, {KEYWORD_TEXT_CHARS}))) STORED,"
        "  CONSTRAINT entries_scope_key UNIQUE NULLS NOT DISTINCT (scope, key)"
        ")",
        f"CREATE INDEX entries_tsv ON {s}.entries USING gin (tsv)",
        f"CREATE INDEX entries_expires ON {s}.entries (expires_at) WHERE expires_at IS NOT NULL",
        f"CREATE INDEX entries_scope_time ON {s}.entries (scope, timestamp DESC, id)",
        f"CREATE INDEX entries_time ON {s}.entries (timestamp DESC, id)",
        f"CREATE INDEX entries_wxid ON {s}.entries (wxid)",
        f"CREATE TABLE {s}.models ("
        "  model text PRIMARY KEY, dim integer NOT NULL, tbl text NOT NULL UNIQUE)",
    ]


TS_WEIGHTS = "{0.1, 0.2, 0.5, 1.0}"
"""`ts_rank` weights for labels D, C, B, A: key and text are A, the context B, so a
context word counts `text.CONTEXT_WEIGHT` (0.5) of a key or text word."""


def _v2(s: str) -> list[str]:
    """Each entry's context (the text stored just before it in its scope) joins `tsv`."""
    return [
        f"ALTER TABLE {s}.entries ADD COLUMN context text NOT NULL DEFAULT ''",
        f"UPDATE {s}.entries AS e SET context = p.prev FROM ("
        "  SELECT id, coalesce(lag(text) OVER (PARTITION BY scope ORDER BY timestamp, id), '')"
        f"  AS prev FROM {s}.entries) AS p WHERE p.id = e.id AND p.prev <> ''",
        f"ALTER TABLE {s}.entries DROP COLUMN tsv",
        f"ALTER TABLE {s}.entries ADD COLUMN tsv tsvector GENERATED ALWAYS AS ("
        f"  setweight(to_tsvector('{TS_CONFIG}'::regconfig,"
        f"      left(key || ' ' || text, {KEYWORD_TEXT_CHARS})), 'A') ||"
        f"  setweight(to_tsvector('{TS_CONFIG}'::regconfig,"
        f"      left(context, {KEYWORD_TEXT_CHARS})), 'B')) STORED",
        f"CREATE INDEX entries_tsv ON {s}.entries USING gin (tsv)",
    ]


Indexed = tuple[list[str], list[int], int]
"""A row's `terms` (distinct stems, first occurrence first), their counts and `length`."""


def counted_terms(text: str) -> tuple[Counter[str], int]:
    """The stems of `text` counted (first occurrence first) and its token count, from
    one tokenisation (`text.index_terms` and `scores.text_length` each make their own)."""
    tokens = tokenize(text)
    return Counter([stem(token) for token in tokens]), len(tokens)


def index_term(term: str) -> str:
    """`term` as the `terms` columns hold it: itself, or for a term longer than
    `MAX_TERM_CHARS` its first 400 characters, "_" and the SHA-256 of the whole (465
    characters; "_" is in no token, so it is no other term). A query maps its terms the
    same way, so a long word is matched, counted in `term_stats` and scored like any
    other (BM25 reads counts, never the term's text): before schema 6 such words were
    left out, and a query holding one found nothing."""
    if len(term) <= MAX_TERM_CHARS:
        return term
    digest = hashlib.sha256(term.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{term[:_LONG_TERM_PREFIX]}_{digest}"


def indexed(counts: Counter[str], length: int) -> Indexed:
    """`counted_terms` as stored: each term as its `index_term`, its count, the length."""
    terms = list(counts)
    return [index_term(term) for term in terms], [counts[term] for term in terms], length


def indexed_terms(text: str) -> Indexed:
    """The `terms`, their counts and the `length` of `text`.

    `text` is `key + " " + text` for an entry's own columns, or its context: the
    same tokens as `scores.entry_counts` and `scores.entry_length` count, so
    the statistics kept in SQL are those the in-memory index keeps.
    """
    return indexed(*counted_terms(text))


def entry_terms(key: str, text_counts: Counter[str], text_tokens: int) -> Indexed:
    """`indexed_terms(f"{key} {text}")` from the text's `counted_terms`, which a batch also
    needs as the next entry's context: no token spans the space, and `str.lower()` of
    the whole is that of each part, so the tokens are the key's, then the text's."""
    counts, length = counted_terms(key)
    counts.update(text_counts)
    return indexed(counts, length + text_tokens)


def _backfill_terms(s: str, only: str = "") -> Callable[[Connection[Any]], None]:
    """Compute `terms`, `length` and their context twins of the rows already stored
    (of those `only`, an SQL condition, selects)."""
    condition = f"({only}) AND " if only else ""

    def step(conn: Connection[Any]) -> None:
        last = 0
        while True:
            rows = conn.execute(
                f"SELECT id, key, text, context FROM {s}.entries WHERE {condition}id > %s "
                "ORDER BY id LIMIT %s",
                (last, BACKFILL_BATCH),
            ).fetchall()
            if not rows:
                return
            columns: list[list[Any]] = [[] for _ in range(7)]
            for ident, key, text, context in rows:
                terms, counts, length = indexed_terms(f"{key} {text}")
                context_terms, context_counts, context_length = indexed_terms(context)
                values = (
                    ident,
                    text_array(terms),
                    int_array(counts),
                    length,
                    text_array(context_terms),
                    int_array(context_counts),
                    context_length,
                )
                for column, value in zip(columns, values, strict=True):
                    column.append(value)
            # Arrays of arrays of different lengths cannot be sent: the terms go as
            # array literals, one per row, cast back by PostgreSQL.
            conn.execute(
                f"UPDATE {s}.entries AS e SET terms = u.terms::text[], "
                "term_counts = u.term_counts::int[], length = u.length, "
                "context_terms = u.context_terms::text[], "
                "context_counts = u.context_counts::int[], context_length = u.context_length "
                "FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::int[], %s::text[], "
                "%s::text[], %s::int[]) AS u(id, terms, term_counts, length, context_terms, "
                "context_counts, context_length) WHERE e.id = u.id",
                columns,
            )
            last = int(rows[-1][0])

    return step


def int_array(items: list[int]) -> str:
    """The PostgreSQL literal of an `int[]` holding `items`."""
    return "{" + ",".join(str(int(item)) for item in items) + "}"


def text_array(items: list[str]) -> str:
    """The PostgreSQL literal of a `text[]` holding `items` (every element quoted)."""
    return (
        "{"
        + ",".join('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"' for item in items)
        + "}"
    )


_STATS_FUNCTION = """
CREATE FUNCTION {s}.entries_scope_stats() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {s}.scope_stats AS t (scope, docs, length, context_length)
        SELECT scope, count(*), sum(length), sum(context_length) FROM new_rows
        GROUP BY scope ORDER BY scope
        ON CONFLICT (scope) DO UPDATE SET docs = t.docs + excluded.docs,
            length = t.length + excluded.length,
            context_length = t.context_length + excluded.context_length;
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE {s}.scope_stats AS t SET length = t.length + d.length,
            context_length = t.context_length + d.context_length
        FROM (SELECT scope, sum(length) AS length, sum(context_length) AS context_length
              FROM (SELECT scope, length, context_length FROM new_rows
                    UNION ALL
                    SELECT scope, -length, -context_length FROM old_rows) AS c
              GROUP BY scope) AS d
        WHERE t.scope IS NOT DISTINCT FROM d.scope
          AND (d.length <> 0 OR d.context_length <> 0);
    ELSE
        UPDATE {s}.scope_stats AS t SET docs = t.docs - d.docs, length = t.length - d.length,
            context_length = t.context_length - d.context_length
        FROM (SELECT scope, count(*) AS docs, sum(length) AS length,
                     sum(context_length) AS context_length
              FROM old_rows GROUP BY scope) AS d
        WHERE t.scope IS NOT DISTINCT FROM d.scope;
        DELETE FROM {s}.scope_stats WHERE docs <= 0;
    END IF;
    RETURN NULL;
END
$body$
"""


def _v3(s: str) -> list[Any]:
    """Keyword scores of every backend: Porter terms and lengths per row, `scope_stats`.

    The `tsv` column (PostgreSQL's `english` stemmer, ranked by `ts_rank`) goes:
    recall matches `terms` and scores in Python (`retrieval.scores`).
    """
    triggers = [
        f"CREATE TRIGGER entries_stats_{event.lower()} AFTER {event} ON {s}.entries "
        f"REFERENCING {tables} FOR EACH STATEMENT EXECUTE FUNCTION {s}.entries_scope_stats()"
        for event, tables in (
            ("INSERT", "NEW TABLE AS new_rows"),
            ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
            ("DELETE", "OLD TABLE AS old_rows"),
        )
    ]
    return [
        f"ALTER TABLE {s}.entries ADD COLUMN terms text[] NOT NULL DEFAULT '{{}}', "
        "ADD COLUMN term_counts integer[] NOT NULL DEFAULT '{}', "
        "ADD COLUMN length integer NOT NULL DEFAULT 0, "
        "ADD COLUMN context_terms text[] NOT NULL DEFAULT '{}', "
        "ADD COLUMN context_counts integer[] NOT NULL DEFAULT '{}', "
        "ADD COLUMN context_length integer NOT NULL DEFAULT 0",
        _backfill_terms(s),
        # Every writer gives them: a forgotten one is an error, not a wrong score.
        f"ALTER TABLE {s}.entries ALTER COLUMN terms DROP DEFAULT, "
        "ALTER COLUMN term_counts DROP DEFAULT, ALTER COLUMN length DROP DEFAULT, "
        "ALTER COLUMN context_terms DROP DEFAULT, ALTER COLUMN context_counts DROP DEFAULT, "
        "ALTER COLUMN context_length DROP DEFAULT",
        f"ALTER TABLE {s}.entries DROP COLUMN tsv",
        f"CREATE INDEX entries_terms ON {s}.entries USING gin (terms)",
        f"CREATE INDEX entries_context_terms ON {s}.entries USING gin (context_terms)",
        f"CREATE TABLE {s}.scope_stats (scope text, docs bigint NOT NULL, "
        "length bigint NOT NULL, context_length bigint NOT NULL, "
        "CONSTRAINT scope_stats_scope UNIQUE NULLS NOT DISTINCT (scope))",
        f"INSERT INTO {s}.scope_stats (scope, docs, length, context_length) "
        f"SELECT scope, count(*), sum(length), sum(context_length) FROM {s}.entries "
        "GROUP BY scope",
        _STATS_FUNCTION.replace("{s}", s),
        *triggers,
    ]


KEY_LC_SQL = 'coalesce(key_lc, lower(key COLLATE "C"))'
TEXT_LC_SQL = 'coalesce(text_lc, lower(text COLLATE "C"))'
"""The key and text lower-cased exactly as Python's `str.lower()` (what `exact` matches);
the trigram indexes of schema 4 are on these expressions."""


def _trigram_indexes(s: str) -> Callable[[Connection[Any]], None]:
    """pg_trgm GIN indexes on the lower-cased key and text, so `exact`'s `LIKE '%needle%'`
    reads the rows holding the needle's trigrams instead of scanning the table."""

    def step(conn: Connection[Any]) -> None:
        namespace = _ensure_extension(conn, "pg_trgm", "pg_trgm")
        for name, expression in (("key", KEY_LC_SQL), ("text", TEXT_LC_SQL)):
            conn.execute(
                f"CREATE INDEX entries_{name}_trgm ON {s}.entries "
                f"USING gin (({expression}) {namespace}.gin_trgm_ops)"
            )

    return step


def _v4(s: str) -> list[Any]:
    """Substring search for `exact` through pg_trgm (the extension is created if missing)."""
    return [_trigram_indexes(s)]


_TERM_ROWS = """
    SELECT r.scope, u.term, 1 AS own FROM {rows} AS r, unnest(r.terms) AS u(term)
    UNION ALL
    SELECT r.scope, u.term, 0 FROM {rows} AS r, unnest(r.context_terms) AS u(term)
    WHERE u.term <> ALL (r.terms)"""
"""One row per (entry, distinct term of its key, text or context) of `{rows}`: `own` is 1
when the term is in the entry's `terms`. Summed per (scope, term), `own` is the
term's document count and the number of rows its count for a linked recall
(`terms` or `context_terms` holding it): what keyword recall counted per query,
through the GIN indexes, before schema 5."""


def _term_changes(*signed: tuple[str, int]) -> str:
    """`term_stats` rows (term, scope, docs, linked_docs) to add for the transition tables
    `signed` (name, +1 for rows that now exist, -1 for rows that no longer do), in
    (term, scope) order so that concurrent writers lock the rows they share in the
    same order; changes that cancel out (a rewrite keeping a term) are left out."""
    parts = " UNION ALL ".join(
        f"SELECT scope, term, {sign} * own AS own, {sign} AS linked FROM ("
        + _TERM_ROWS.format(rows=rows)
        + ") AS x"
        for rows, sign in signed
    )
    return (
        f"SELECT term, scope, sum(own), sum(linked) FROM ({parts}) AS c GROUP BY term, scope "
        "HAVING sum(own) <> 0 OR sum(linked) <> 0 ORDER BY term, scope"
    )


_STATS_FUNCTION_V5 = """
CREATE OR REPLACE FUNCTION {s}.entries_scope_stats() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO {s}.scope_stats AS t (scope, docs, length, context_length)
        SELECT scope, count(*), sum(length), sum(context_length) FROM new_rows
        GROUP BY scope ORDER BY scope
        ON CONFLICT (scope) DO UPDATE SET docs = t.docs + excluded.docs,
            length = t.length + excluded.length,
            context_length = t.context_length + excluded.context_length;
        INSERT INTO {s}.term_stats AS t (term, scope, docs, linked_docs) {inserted}
        ON CONFLICT (term, scope) DO UPDATE SET docs = t.docs + excluded.docs,
            linked_docs = t.linked_docs + excluded.linked_docs;
    ELSIF TG_OP = 'UPDATE' THEN
        UPDATE {s}.scope_stats AS t SET length = t.length + d.length,
            context_length = t.context_length + d.context_length
        FROM (SELECT scope, sum(length) AS length, sum(context_length) AS context_length
              FROM (SELECT scope, length, context_length FROM new_rows
                    UNION ALL
                    SELECT scope, -length, -context_length FROM old_rows) AS c
              GROUP BY scope) AS d
        WHERE t.scope IS NOT DISTINCT FROM d.scope
          AND (d.length <> 0 OR d.context_length <> 0);
        INSERT INTO {s}.term_stats AS t (term, scope, docs, linked_docs) {rewritten}
        ON CONFLICT (term, scope) DO UPDATE SET docs = t.docs + excluded.docs,
            linked_docs = t.linked_docs + excluded.linked_docs;
        {prune}
    ELSE
        UPDATE {s}.scope_stats AS t SET docs = t.docs - d.docs, length = t.length - d.length,
            context_length = t.context_length - d.context_length
        FROM (SELECT scope, count(*) AS docs, sum(length) AS length,
                     sum(context_length) AS context_length
              FROM old_rows GROUP BY scope) AS d
        WHERE t.scope IS NOT DISTINCT FROM d.scope;
        -- A memory left empty (a clear) loses its counts at once, without counting.
        IF EXISTS (SELECT FROM {s}.scope_stats WHERE docs <= 0) THEN
            DELETE FROM {s}.term_stats AS t USING {s}.scope_stats AS k
            WHERE k.docs <= 0 AND t.scope IS NOT DISTINCT FROM k.scope;
        END IF;
        INSERT INTO {s}.term_stats AS t (term, scope, docs, linked_docs) {deleted}
        ON CONFLICT (term, scope) DO UPDATE SET docs = t.docs + excluded.docs,
            linked_docs = t.linked_docs + excluded.linked_docs;
        {prune_kept}
        DELETE FROM {s}.scope_stats WHERE docs <= 0;
    END IF;
    RETURN NULL;
END
$body$
"""
"""Schema 3's statistics function, keeping `term_stats` as well: the same statement-level
triggers run it, so the counts change in the transaction of every insert, rewrite and
delete (writes, COPY batches, deletes, clears, expiry purges) and never drift."""

_TERM_PRUNE = (
    "DELETE FROM {s}.term_stats WHERE linked_docs <= 0 AND term = ANY (ARRAY("
    "SELECT DISTINCT u.term FROM old_rows AS r, unnest(r.terms || r.context_terms) AS u(term)));"
)
"""Drop the counts a rewrite or delete brought to zero: a term no entry holds has no row.
`term = ANY(array)` is read through the index on (term, scope) whatever the array's
size; a join is planned as a scan of the whole table (its size is unknown here)."""


_KEPT = (
    "(SELECT o.* FROM old_rows AS o JOIN {s}.scope_stats AS k "
    "ON k.scope IS NOT DISTINCT FROM o.scope WHERE k.docs > 0)"
)
"""The deleted rows of the memories that still hold entries (`scope_stats` has few rows):
the counts of the others were dropped whole."""


def _term_stats_function(s: str) -> str:
    return (
        _STATS_FUNCTION_V5.replace("{s}", s)
        .replace("{inserted}", _term_changes(("new_rows", 1)))
        .replace("{rewritten}", _term_changes(("new_rows", 1), ("old_rows", -1)))
        .replace("{deleted}", _term_changes((_KEPT.replace("{s}", s), -1)))
        .replace("{prune_kept}", _TERM_PRUNE.replace("old_rows", _KEPT).replace("{s}", s))
        .replace("{prune}", _TERM_PRUNE.replace("{s}", s))
    )


def _v5(s: str) -> list[Any]:
    """Each term's document count per scope (`term_stats`), kept by the statistics triggers.

    Keyword recall read the counts by counting the scope's rows holding each query
    term, which for a common word reads most of the memory; now it reads one row
    per term. Existing entries are counted here, in the migration's transaction.
    """
    return [
        f"CREATE TABLE {s}.term_stats (term text NOT NULL, scope text, "
        "docs bigint NOT NULL, linked_docs bigint NOT NULL, "
        "CONSTRAINT term_stats_term_scope UNIQUE NULLS NOT DISTINCT (term, scope))",
        f"INSERT INTO {s}.term_stats (term, scope, docs, linked_docs) "
        "SELECT term, scope, sum(own), count(*) FROM ("
        + _TERM_ROWS.format(rows=f"{s}.entries")
        + ") AS c GROUP BY term, scope",
        _term_stats_function(s),
    ]


def _v6(s: str) -> list[Any]:
    """Index the long terms (`index_term`) that schemas 3 to 5 left out.

    Only rows holding one are rewritten: those whose stored counts add up to less
    than their length (every token of a text is counted in its length, and only the
    left-out ones are missing from the counts). The statistics triggers count the new
    terms in `term_stats`.
    """
    return [_backfill_terms(s, _HOLDS_UNINDEXED)]


_HOLDS_UNINDEXED = (
    "(SELECT coalesce(sum(c), 0) FROM unnest(term_counts) AS c) <> length "
    "OR (SELECT coalesce(sum(c), 0) FROM unnest(context_counts) AS c) <> context_length"
)


def _v7(s: str) -> list[Any]:
    """`created_at`, an entry's first write, kept when a live entry is stored again
    (`timestamp` is its last write, `updated_at`). NULL means "as `timestamp`": what
    every row stored before has (both were one time), with no row rewritten."""
    return [f"ALTER TABLE {s}.entries ADD COLUMN IF NOT EXISTS created_at double precision"]


def _v8(s: str) -> list[Any]:
    """`versions`, the history of the entries of memories declared with `history:`
    (`postgres_versions`): one row per recorded write, `seq` its order (its own sequence,
    never reused, even after a purge), `keep` the history setting it was recorded with
    (`versions.KEEP_ALL` for `all`). No entry row changes; a schema without it simply
    gains the empty table. Each statement may find its object made already (a schema
    whose version was set back, as tests do), as migration 7's column may."""
    return [
        f"CREATE SEQUENCE IF NOT EXISTS {s}.versions_seq",
        f"CREATE TABLE IF NOT EXISTS {s}.versions ("
        f"  seq bigint PRIMARY KEY DEFAULT nextval('{s}.versions_seq'),"
        "  scope text,"
        "  key text NOT NULL,"
        "  op text NOT NULL,"
        "  value json,"
        "  metadata json,"
        "  updated_at double precision NOT NULL,"
        "  expires_at double precision,"
        "  keep integer NOT NULL"
        ")",
        f"ALTER SEQUENCE {s}.versions_seq OWNED BY {s}.versions.seq",
        f"CREATE INDEX IF NOT EXISTS versions_entry ON {s}.versions (scope, key, seq)",
    ]


MIGRATIONS: tuple[Callable[[str], list[Any]], ...] = (
    _v1, _v2, _v3, _v4, _v5, _v6, _v7, _v8
)
"""`MIGRATIONS[i](quoted_schema)` lists the steps taking version i to i + 1: SQL
statements, or functions of the connection (run in the same transaction)."""

SCHEMA_VERSION = len(MIGRATIONS)


def _lock_key(schema: str) -> int:
    return int.from_bytes(hashlib.sha1(schema.encode()).digest()[:4], "big", signed=True)


def migrate(conn: Connection[Any], schema: str) -> int:
    """Create or upgrade the schema to `SCHEMA_VERSION`; returns the version found before.

    Needs a connection in autocommit mode (it opens its own transaction). Raises
    `AxonMemoryError` when pgvector is missing and cannot be installed, or when the
    stored version is newer than this AXON knows.
    """
    s = quote_ident(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (_LOCK_NAMESPACE, _lock_key(schema)))
        _ensure_vector_extension(conn)
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {s}.meta (name text PRIMARY KEY, value text NOT NULL)"
        )
        row = conn.execute(f"SELECT value FROM {s}.meta WHERE name = 'schema_version'").fetchone()
        found = int(row[0]) if row else 0
        if found > SCHEMA_VERSION:
            raise AxonMemoryError(
                f"PostgreSQL schema {schema!r} is at version {found}, newer than this AXON "
                f"understands ({SCHEMA_VERSION}); upgrade AXON"
            )
        if found == 0:
            conn.execute(f"CREATE SEQUENCE IF NOT EXISTS {s}.vgen_seq")
        for version in range(found, SCHEMA_VERSION):
            for step in MIGRATIONS[version](s):
                if callable(step):
                    step(conn)
                else:
                    conn.execute(step)
        if found != SCHEMA_VERSION:
            conn.execute(
                f"INSERT INTO {s}.meta (name, value) VALUES ('schema_version', %s) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )
    return found


def _ensure_extension(conn: Connection[Any], name: str, listed_as: str) -> str:
    """Create extension `name` if missing; returns the (quoted) schema it lives in.

    Raises `AxonMemoryError` when it cannot be created (`listed_as`: how managed
    services name it, for the message).
    """
    found = "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = %s"
    row = conn.execute(found, (name,)).fetchone()
    if row is None:
        try:
            with conn.transaction():
                conn.execute(f"CREATE EXTENSION IF NOT EXISTS {quote_ident(name)}")
        except Exception as exc:
            raise AxonMemoryError(
                f"the {name} extension is not installed in this database and could not be "
                f"created ({type(exc).__name__}: {exc}); ask an administrator to run "
                f"CREATE EXTENSION {name} (managed services list it as '{listed_as}')"
            ) from None
        row = conn.execute(found, (name,)).fetchone()
        assert row is not None
    return str(row[0])


def _ensure_vector_extension(conn: Connection[Any]) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as exc:
        raise AxonMemoryError(
            "the pgvector extension is not installed in this database and could not be "
            f"created ({type(exc).__name__}: {exc}); ask an administrator to run "
            "CREATE EXTENSION vector (managed services list it as 'vector' or 'pgvector')"
        ) from None


def ensure_vector_table(conn: Connection[Any], schema: str, model_id: str, dim: int) -> str:
    """The name of `model_id`'s vector table in `schema` (unquoted), created if missing."""
    s = quote_ident(schema)
    row = conn.execute(f"SELECT dim, tbl FROM {s}.models WHERE model = %s", (model_id,)).fetchone()
    if row is None:
        with conn.transaction():
            conn.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", (_LOCK_NAMESPACE, _lock_key(schema))
            )
            row = conn.execute(
                f"SELECT dim, tbl FROM {s}.models WHERE model = %s", (model_id,)
            ).fetchone()
            if row is None:
                tbl = vector_table_name(model_id)
                t = f"{s}.{quote_ident(tbl)}"
                conn.execute(
                    f"CREATE TABLE {t} ("
                    f"  entry_id bigint PRIMARY KEY REFERENCES {s}.entries (id) ON DELETE CASCADE,"
                    "  vgen bigint NOT NULL,"
                    f"  embedding vector({int(dim)}) NOT NULL)"
                )
                conn.execute(
                    f"CREATE INDEX {quote_ident(tbl + '_hnsw')} ON {t} "
                    f"USING hnsw (embedding vector_cosine_ops) "
                    f"WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION})"
                )
                conn.execute(
                    f"INSERT INTO {s}.models (model, dim, tbl) VALUES (%s, %s, %s)",
                    (model_id, int(dim), tbl),
                )
                row = (int(dim), tbl)
    stored_dim, tbl = int(row[0]), str(row[1])
    if stored_dim != dim:
        raise AxonMemoryError(
            f"embedding model {model_id!r} gives {dim}-dimensional vectors but schema "
            f"{schema!r} holds {stored_dim}-dimensional ones for it"
        )
    return tbl


def find_vector_table(conn: Connection[Any], schema: str, model_id: str) -> str | None:
    """The name of `model_id`'s vector table in `schema` (unquoted), or None when no vector
    of it was ever saved."""
    s = quote_ident(schema)
    row = conn.execute(f"SELECT tbl FROM {s}.models WHERE model = %s", (model_id,)).fetchone()
    return None if row is None else str(row[0])
