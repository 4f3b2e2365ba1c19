"""The SQL a PostgreSQL backend composes its statements from, and the text it can hold.

`Fragments` holds the quoted names of one schema's tables and the pieces most
statements share (the selected columns, the live-row condition, the lower-cased
key and text); `db_text` is the form of a text PostgreSQL can store (no NUL).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from psycopg.sql import Composable, Composed

Row = tuple[Any, ...]
"""A row as psycopg returns it."""


class Fragments:
    """The SQL pieces every statement of one schema is composed from (`psycopg.sql`).

    Built when a backend is made (psycopg is imported only then, after
    `import_driver` has checked it is installed); `entries` is the schema's table,
    quoted by `sql.Identifier` (as are `versions` and the others). Parameters are
    `%s` placeholders throughout.
    """

    def __init__(self, schema: str) -> None:
        from psycopg import sql

        self.sql = sql
        self.schema = sql.Identifier(schema)
        self.entries = sql.Identifier(schema, "entries")
        self.scope_stats = sql.Identifier(schema, "scope_stats")
        self.term_stats = sql.Identifier(schema, "term_stats")
        self.versions = sql.Identifier(schema, "versions")
        self.versions_seq = sql.Literal(f'"{schema}".versions_seq')
        self.vgen_seq = sql.Literal(f'"{schema}".vgen_seq')
        self.columns = sql.SQL(
            "e.id, e.scope, e.key, e.value, e.metadata, e.timestamp, e.expires_at, "
            "coalesce(e.created_at, e.timestamp)"
        )
        self.live = sql.SQL("(e.expires_at IS NULL OR e.expires_at > %s)")
        self.key_lc = sql.SQL('coalesce(e.key_lc, lower(e.key COLLATE "C"))')
        self.text_lc = sql.SQL('coalesce(e.text_lc, lower(e.text COLLATE "C"))')
        self.nothing = sql.SQL("")

    def query(self, template: str, **parts: Composable) -> Composed:
        """`template` with `{entries}`, `{columns}`, `{live}`, `{key_lc}`, `{text_lc}`
        and the given `parts` filled in."""
        return self.sql.SQL(template).format(
            entries=self.entries,
            columns=self.columns,
            live=self.live,
            key_lc=self.key_lc,
            text_lc=self.text_lc,
            **parts,
        )

    def float8(self, value: float) -> Composed:
        """A float8 constant (an untyped literal would make the arithmetic `numeric`: slow)."""
        return self.sql.SQL("{}::float8").format(self.sql.Literal(float(value)))


def db_text(text: str) -> str:
    """PostgreSQL text cannot hold NUL characters: in matched text each is a space, which
    separates words as NUL does for the tokenizer (so keyword counts are every other
    backend's) and keeps `exact`'s `LIKE` candidates a superset (each is scored on its
    real value)."""
    return text.replace("\x00", " ") if "\x00" in text else text
