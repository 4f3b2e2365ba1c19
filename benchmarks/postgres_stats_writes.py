"""What the PostgreSQL statistics triggers cost a small write: single stores, a delete, a clear.

In a fresh schema (`--schema`, dropped at the end) of the checkout first on
`PYTHONPATH`: a batch of 1,000 entries (`benchmarks/postgres.py`'s texts), then
400 single `store` calls (entries/s), one `delete` (ms, the first on its
connection), then a memory of `--n` entries cleared (s). Run it once per
checkout, alternating, to compare (the figures of docs/performance.md):

    for code in ../base . ../base .; do
        PYTHONPATH=$code .venv/bin/python benchmarks/postgres_stats_writes.py
    done
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


async def run(schema: str, n: int) -> None:
    import numpy as np
    import psycopg

    sys.path.insert(0, str(HERE))
    from postgres import make_texts

    from axon.memory.backends.postgres import PostgresBackend
    from axon.memory.entry import NewEntry

    dsn = os.environ["AXON_PG_DSN"]
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    texts = make_texts(max(n, 1400), np.random.default_rng(5))
    backend = PostgresBackend(location=dsn, schema=schema, pool_size=1)
    try:
        await backend.store_many([NewEntry(f"p{i}", texts[i], {"scope": "s"}) for i in range(1000)])
        start = time.perf_counter()
        for i in range(1000, 1400):
            await backend.store(f"p{i}", texts[i], {"scope": "s"})
        singles = 400 / (time.perf_counter() - start)
        for low in range(0, n, 5000):
            batch = range(low, min(n, low + 5000))
            await backend.store_many([NewEntry(f"c{i}", texts[i], {"scope": "c"}) for i in batch])
        start = time.perf_counter()
        await backend.delete("p7", "s")
        deleted = time.perf_counter() - start
        start = time.perf_counter()
        cleared = await backend.clear("c")
        clear = time.perf_counter() - start
    finally:
        await backend.close()
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    print(
        f"single store {singles:,.0f} entries/s; delete {deleted * 1000:.1f} ms; "
        f"clear of {cleared:,} entries {clear:.2f} s; load {os.getloadavg()[0]:.1f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="entries of the cleared memory")
    parser.add_argument("--schema", default="axon_bench_stats_writes")
    args = parser.parse_args()
    asyncio.run(run(args.schema, args.n))


if __name__ == "__main__":
    main()
