"""Write cost of `exact`'s substring indexes: entries in, batched write rates with and without.

Same process, batches interleaved: a SQLite file with `entries_substr` and one where
a plain table takes its inserts; PostgreSQL schemas with and without the two pg_trgm
indexes (`AXON_PG_DSN`; schemas `axon_wc_with` / `axon_wc_without`, dropped after).
Texts are `benchmarks/postgres.py`'s.

    eval "$(scripts/pg env)"; .venv/bin/python benchmarks/substring_writes.py 50000
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres import make_texts

from axon.memory.backends.postgres import PostgresBackend
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.entry import NewEntry

ORDER = (("with", "without"), ("without", "with"))


def _median(rates: list[float]) -> str:
    return f"{statistics.median(rates):,.0f}"


async def sqlite_rates(entries: list[NewEntry]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        stores = {name: SQLiteBackend(location=f"{tmp}/{name}.db") for name in ("with", "without")}
        conn = sqlite3.connect(f"{tmp}/without.db")  # a plain table takes the index's writes
        conn.execute("DROP TABLE entries_substr")
        conn.execute("CREATE TABLE entries_substr (entries_substr, key, text)")
        conn.commit()
        conn.close()
        rates: dict[str, list[float]] = {"with": [], "without": []}
        for k, i in enumerate(range(0, len(entries), 5000)):
            for name in ORDER[k % 2]:
                start = time.perf_counter()
                await stores[name].store_many(entries[i : i + 5000])
                rates[name].append(5000 / (time.perf_counter() - start))
        sizes = {
            name: sum(p.stat().st_size for p in Path(tmp).glob(f"{name}.db*")) / len(entries)
            for name in stores
        }
        print(
            f"SQLite store_many(5000), {len(entries):,} entries: with the trigram index "
            f"{_median(rates['with'])} entries/s, without {_median(rates['without'])}; "
            f"bytes/entry {sizes['with']:,.0f} vs {sizes['without']:,.0f}"
        )
        for store in stores.values():
            await store.close()


async def postgres_rates(entries: list[NewEntry], dsn: str) -> None:
    import psycopg

    schemas = {"with": "axon_wc_with", "without": "axon_wc_without"}
    with psycopg.connect(dsn, autocommit=True) as admin:
        for schema in schemas.values():
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    stores = {name: PostgresBackend(location=dsn, schema=s) for name, s in schemas.items()}
    for store in stores.values():
        await store.count()  # creates the schema
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute('DROP INDEX "axon_wc_without".entries_key_trgm')
        admin.execute('DROP INDEX "axon_wc_without".entries_text_trgm')
    rates: dict[str, list[float]] = {"with": [], "without": []}
    for k, i in enumerate(range(0, len(entries), 1000)):
        for name in ORDER[k % 2]:
            start = time.perf_counter()
            await stores[name].store_many(entries[i : i + 1000])
            rates[name].append(1000 / (time.perf_counter() - start))
    print(
        f"PostgreSQL store_many(1000), {len(entries):,} entries: with the trigram indexes "
        f"{_median(rates['with'])} entries/s, without {_median(rates['without'])}"
    )
    for store in stores.values():
        await store.close()
    with psycopg.connect(dsn, autocommit=True) as admin:
        for schema in schemas.values():
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def main(n: int) -> None:
    texts = make_texts(n, np.random.default_rng(3))
    entries = [NewEntry(f"e{i}", texts[i], {"scope": "bench"}) for i in range(n)]
    await sqlite_rates(entries)
    dsn = os.environ.get("AXON_PG_DSN")
    if dsn:
        await postgres_rates(entries[:30_000], dsn)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000))
