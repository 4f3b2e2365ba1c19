"""A metadata filter without a query (`list(where=...)`): filters in, median milliseconds out,
the filter in the query (`MemoryBackend.list_matching`) beside the former pages in the same run.

Every backend is filled with the same `--n` entries (`benchmarks/postgres.py`'s texts)
whose metadata is `{"group": i % 100, "tags": ["t{i % 7}"], "importance": (i % 10) / 10}`,
then asked, `--queries` times each (medians, after 3 warm-up calls), for the newest
10 entries matching:

- `group` = one value of 100 (1% match: the peers table's filter),
- `tags` containing one tag of 7 (a list filter),
- `importance >= 0.9` (a comparison, 10% match),
- `group` = 1000, which nothing matches (every entry examined: the worst case).

"before" is what `manager.list_matching` did until this change: `list_page` pages of
`LIST_PAGE` entries filtered by `matches_filters` in Python. "after" is
`list_matching(scope, filters, limit=10)`. Both give the same entries (checked). A
path whose first call takes over a second is timed 3 times (the in-memory "before"
reads a full page sort per page: minutes at 100k when nothing matches).
PostgreSQL runs when `AXON_PG_DSN` is set (schema `axon_list_filter`, dropped after;
`ANALYZE` after the load, as autovacuum would do soon: without row counts the planner
sorts the whole memory instead of walking the newest-first index).

    PYTHONPATH=. .venv/bin/python benchmarks/list_filter.py --n 100000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres import make_texts

from axon.memory.backend import LIST_PAGE, MemoryBackend
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.entry import MemoryEntry, NewEntry, matches_filters

SCOPE = "bench"
FILTERS: dict[str, dict[str, Any]] = {
    "group = 1 of 100": {"group": 42},
    "tags has 1 of 7": {"tags": ["t3"]},
    "importance >= 0.9": {"importance": {"gte": 0.9}},
    "no match": {"group": 1000},
}


async def pages_before(
    backend: MemoryBackend, filters: dict[str, Any], limit: int
) -> list[MemoryEntry]:
    """The former `manager.list_matching`: pages filtered in Python."""
    found: list[MemoryEntry] = []
    cursor = None
    while len(found) < limit:
        page = await backend.list_page(SCOPE, limit=LIST_PAGE, after=cursor)
        found += [e for e in page.entries if matches_filters(e.metadata, filters)]
        if page.cursor is None:
            break
        cursor = page.cursor
    return found[:limit]


async def median_ms(call: Callable[[], Awaitable[Any]], queries: int) -> float:
    """Median of `queries` calls after 3 warm-ups; 3 calls, no warm-up, when one takes over
    a second (the in-memory "before" of a filter nothing matches reads every page)."""
    start = time.perf_counter()
    await call()
    if time.perf_counter() - start > 1.0:
        queries = 3
    else:
        for _ in range(2):
            await call()
    times = []
    for _ in range(queries):
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def fill(backend: MemoryBackend, texts: list[str]) -> None:
    for i in range(0, len(texts), 1000):
        await backend.store_many(
            [
                NewEntry(
                    f"e{j}",
                    texts[j],
                    {
                        "scope": SCOPE,
                        "group": j % 100,
                        "tags": [f"t{j % 7}"],
                        "importance": (j % 10) / 10,
                    },
                )
                for j in range(i, min(len(texts), i + 1000))
            ]
        )


async def measure(
    label: str,
    backend: MemoryBackend,
    texts: list[str],
    queries: int,
    loaded: Callable[[], None] | None = None,
) -> None:
    start = time.perf_counter()
    await fill(backend, texts)
    print(f"{label}: {len(texts):,} entries stored in {time.perf_counter() - start:.1f} s")
    if loaded is not None:
        loaded()
    for name, filters in FILTERS.items():
        before = [e.key for e in await pages_before(backend, filters, 10)]
        after = [e.key for e in await backend.list_matching(SCOPE, filters, limit=10)]
        assert before == after, (name, before, after)
        old = await median_ms(lambda f=filters: pages_before(backend, f, 10), queries)
        new = await median_ms(lambda f=filters: backend.list_matching(SCOPE, f, limit=10), queries)
        print(f"| {label} | {name} | {old:.2f} ms | {new:.3f} ms | {old / new:.0f}x |")
    await backend.close()


async def run(args: argparse.Namespace) -> None:
    texts = make_texts(args.n, np.random.default_rng(args.seed))
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| backend | filter (newest 10) | before: pages | after: in the query | ratio |")
    print("|---|---|---:|---:|---:|")
    if "in_memory" in args.backends:
        await measure("in_memory", InMemoryBackend(), texts, args.queries)
    if "sqlite" in args.backends:
        with tempfile.TemporaryDirectory() as tmp:
            await measure("sqlite", SQLiteBackend(memory_dir=tmp), texts, args.queries)
    dsn = os.environ.get("AXON_PG_DSN")
    if "postgres" in args.backends and dsn:
        import psycopg

        from axon.memory.backends.postgres import PostgresBackend

        schema = "axon_list_filter"

        def analyze() -> None:  # what autovacuum does soon after a load: the planner's row counts
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'ANALYZE "{schema}".entries')

        try:
            backend = PostgresBackend(location=dsn, schema=schema)
            await measure("postgres", backend, texts, args.queries, analyze)
        finally:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backends", default="in_memory,sqlite,postgres")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
