"""Batched remember (issue 15 item 4): entries in, `store_many` entries/s of two checkouts out.

Each run stores `--n` entries (the texts of `benchmarks/postgres.py`, 90% in one
scope, no embedder) in batches of `--batch` into a fresh SQLite file or a fresh
PostgreSQL schema (`--schema`, dropped after each run), every index kept. Runs
alternate between this checkout and `--baseline` (another checkout, e.g. a
`git worktree` of main), each in its own process with that checkout first on
`PYTHONPATH`, so both see the same machine load; medians of `--repeats` runs and
the ratio new / baseline are printed, with the share of the time the client
process was on the CPU (Python preparing rows, the driver, and for SQLite the
library itself); the rest is waiting (for PostgreSQL: the server). Text
generation is not timed.

    eval "$(scripts/pg env)"
    .venv/bin/python benchmarks/batched_writes.py --baseline ../base --repeats 3
    .venv/bin/python benchmarks/batched_writes.py --profile pgvector   # where the time goes
    .venv/bin/python benchmarks/batched_writes.py --split sqlite       # time per statement
    .venv/bin/python benchmarks/batched_writes.py --split pgvector     # server time per index

`--split sqlite` times every statement of one run (the rest is Python); `--split
pgvector` loads the entries once, then inserts the same rows again, batch by
batch, into fresh schemas lacking one group of indexes (or the statistics
triggers) each, rounds interleaved, so what each group costs the server shows
as the difference to the complete table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


async def one_run(
    backend_name: str, n: int, batch: int, schema: str, profile: bool, keep: bool = False
) -> tuple[float, float]:
    """Entries/s of `store_many` over `n` entries in this process's checkout, and the
    share of that time this process spent on the CPU (the rest: waiting for the
    database server or the disk)."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    from postgres import make_texts

    from axon.memory.backend import MemoryBackend
    from axon.memory.entry import NewEntry

    rng = np.random.default_rng(7)
    texts = make_texts(n, rng)
    scopes = np.where(rng.random(n) < 0.9, "bench", "other")
    entries = [NewEntry(f"e{i}", texts[i], {"scope": str(scopes[i]), "n": i}) for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        backend: MemoryBackend
        if backend_name == "sqlite":
            from axon.memory.backends.sqlite import SQLiteBackend

            backend = SQLiteBackend(location=f"{tmp}/bench.db")
        else:
            import psycopg

            from axon.memory.backends.postgres import PostgresBackend

            dsn = os.environ["AXON_PG_DSN"]
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            backend = PostgresBackend(location=dsn, schema=schema)
        await backend.store_many(entries[:1])  # opens, migrates: not timed
        profiler = cProfile.Profile() if profile else None
        cpu = time.process_time()
        start = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        for i in range(1, n, batch):
            await backend.store_many(entries[i : i + batch])
        if profiler is not None:
            profiler.disable()
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
        await backend.close()
        if backend_name != "sqlite" and not keep:
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    return (n - 1) / elapsed, cpu / elapsed


def split_sqlite(n: int, batch: int) -> None:
    """One run with every statement of the SQLite backend timed (by its first words)."""
    import sqlite3

    from axon.memory.backends import sqlite as sqlite_module

    spent: dict[str, float] = defaultdict(float)

    class Timed(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            start = time.perf_counter()
            try:
                return super().execute(sql, *args)
            finally:
                spent[" ".join(sql.split()[:4])] += time.perf_counter() - start

        def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:
            start = time.perf_counter()
            try:
                return super().executemany(sql, *args)
            finally:
                spent[" ".join(sql.split()[:5])] += time.perf_counter() - start

    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real_connect(*args, factory=Timed, **kwargs)

    sqlite_module.sqlite3.connect = connect  # type: ignore[assignment]
    rate, _ = asyncio.run(one_run("sqlite", n, batch, "", False))
    total = (n - 1) / rate
    print(f"sqlite: {rate:,.0f} entries/s, {total:.2f} s")
    for sql, seconds in sorted(spent.items(), key=lambda item: -item[1])[:12]:
        print(f"  {seconds / total:6.1%}  {seconds:7.2f} s  {sql}")
    print(f"  {1 - sum(spent.values()) / total:6.1%}  Python (validation, rows, tokenising)")


GIN = ("entries_text_trgm", "entries_key_trgm", "entries_terms", "entries_context_terms")
PENDING_KB = 65536
"""`gin_pending_list_limit` (kB) of the pending-list groups: inserts append to the list."""

Group = tuple[list[str], list[str], list[str]]
"""Statements run once on the fresh schema, in each batch's transaction before its
insert, and after its insert (timed with it)."""

GROUPS: dict[str, Group] = {
    "every index and trigger": ([], [], []),
    "without the text trigram index": (["DROP INDEX {s}.entries_text_trgm"], [], []),
    "without both trigram indexes": (
        ["DROP INDEX {s}.entries_text_trgm", "DROP INDEX {s}.entries_key_trgm"],
        [],
        [],
    ),
    "without the terms GIN indexes": (
        ["DROP INDEX {s}.entries_terms", "DROP INDEX {s}.entries_context_terms"],
        [],
        [],
    ),
    "without any GIN index": ([f"DROP INDEX {{s}}.{name}" for name in GIN], [], []),
    "without the statistics triggers": (["ALTER TABLE {s}.entries DISABLE TRIGGER USER"], [], []),
    "GIN fastupdate off": (
        [f"ALTER INDEX {{s}}.{name} SET (fastupdate = off)" for name in GIN],
        [],
        [],
    ),
    "GIN pending list 64 MB": (
        [f"ALTER INDEX {{s}}.{name} SET (gin_pending_list_limit = {PENDING_KB})" for name in GIN],
        [],
        [],
    ),
    "GIN pending list 64 MB, work_mem 256 MB": (
        [f"ALTER INDEX {{s}}.{name} SET (gin_pending_list_limit = {PENDING_KB})" for name in GIN],
        ["SET LOCAL work_mem = '256MB'"],
        [],
    ),
    "GIN pending list 64 MB, merged per batch": (
        [f"ALTER INDEX {{s}}.{name} SET (gin_pending_list_limit = {PENDING_KB})" for name in GIN],
        [],
        [f"SELECT gin_clean_pending_list('{{s}}.{name}'::regclass)" for name in GIN],
    ),
}


def split_postgres(n: int, batch: int, schema: str, repeats: int, only: str | None) -> None:
    """Server time of inserting the same rows, batch by batch, per group of indexes; then,
    per group, keyword and exact recall right after the last batch, and again once the
    GIN pending lists are merged (`gin_clean_pending_list`, timed)."""
    import psycopg

    dsn = os.environ["AXON_PG_DSN"]
    source = f"{schema}_src"
    asyncio.run(one_run("pgvector", n, batch, source, False, keep=True))
    columns = (
        "scope, key, key_lc, value, text, text_lc, metadata, timestamp, expires_at, terms, "
        "term_counts, length, context, context_terms, context_counts, context_length"
    )
    groups = {
        k: v
        for k, v in GROUPS.items()
        if only is None
        or k == "every index and trigger"
        or any(part and part in k for part in only.split(","))
    }
    seconds: dict[str, list[float]] = {group: [] for group in groups}
    reads: dict[str, str] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        texts = [
            t
            for (t,) in conn.execute(
                f'SELECT text FROM "{source}".entries ORDER BY id LIMIT 20 OFFSET 5000'
            )
        ]
        for repeat in range(repeats):
            for group, (setup, before, after) in groups.items():
                fresh_schema(dsn, schema)
                for statement in setup:
                    conn.execute(statement.format(s=f'"{schema}"'))
                spent = 0.0
                for low in range(0, n, batch):
                    start = time.perf_counter()
                    with conn.transaction():
                        for statement in before:
                            conn.execute(statement)
                        conn.execute(
                            f'INSERT INTO "{schema}".entries ({columns}) SELECT {columns} '
                            f'FROM "{source}".entries WHERE id > %s AND id <= %s ORDER BY id',
                            (low, low + batch),
                        )
                        for statement in after:
                            conn.execute(statement.format(s=f'"{schema}"'))
                    spent += time.perf_counter() - start
                seconds[group].append(spent)
                if repeat == repeats - 1:
                    reads[group] = read_costs(conn, dsn, schema, texts)
                print(
                    f"  ({group}: {n / spent:,.0f} rows/s, load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        conn.execute(f'DROP SCHEMA IF EXISTS "{source}" CASCADE')
    full = statistics.median(seconds["every index and trigger"])
    print(
        f"pgvector, server only (INSERT ... SELECT of {n:,} stored rows, batches of {batch:,}), "
        f"medians of {repeats}; load {os.getloadavg()[0]:.1f}"
    )
    for group, values in seconds.items():
        median = statistics.median(values)
        print(
            f"  {group:42s} {n / median:9,.0f} rows/s  ({median:6.1f} s, "
            f"saves {1 - median / full:.0%}); {reads[group]}"
        )


def read_costs(conn: Any, dsn: str, schema: str, texts: list[str]) -> str:
    """Keyword and exact recall medians now, and after merging the GIN pending lists."""
    from axon.memory.backends.postgres import PostgresBackend

    pending = conn.execute(
        "SELECT sum(pg_relation_size(c.oid)) FROM pg_class AS c JOIN pg_namespace AS n "
        "ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relname = ANY(%s)",
        (schema, list(GIN)),
    ).fetchone()
    words = [" ".join(text.split()[:2]) for text in texts]
    needles = [text[3:12].upper() for text in texts]

    async def medians() -> tuple[float, float]:
        backend = PostgresBackend(location=dsn, schema=schema, pool_size=1)
        try:
            times: dict[str, list[float]] = {"keyword": [], "exact": []}
            for mode, queries in (("keyword", words), ("exact", needles)):
                for query in queries:
                    start = time.perf_counter()
                    await backend.retrieve(query, 10, "bench", mode=mode)
                    times[mode].append(time.perf_counter() - start)
            return (
                statistics.median(times["keyword"]) * 1000,
                statistics.median(times["exact"]) * 1000,
            )
        finally:
            await backend.close()

    keyword, exact = asyncio.run(medians())
    start = time.perf_counter()
    for name in GIN:
        with contextlib.suppress(Exception):  # a dropped index
            conn.execute(f"SELECT gin_clean_pending_list('\"{schema}\".{name}'::regclass)")
    merge = time.perf_counter() - start
    keyword_after, exact_after = asyncio.run(medians())
    size = int(pending[0] or 0) / 1e6 if pending else 0.0
    return (
        f"recall keyword {keyword:.1f} ms, exact {exact:.1f} ms; merging the pending lists "
        f"{merge:.1f} s, then keyword {keyword_after:.1f} ms, exact {exact_after:.1f} ms "
        f"(GIN {size:.0f} MB)"
    )


def fresh_schema(dsn: str, schema: str) -> None:
    """An empty `schema` made by the backend itself (every index, trigger and sequence)."""
    import psycopg

    from axon.memory.backends.postgres import PostgresBackend

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    backend = PostgresBackend(location=dsn, schema=schema)
    asyncio.run(backend.count())  # opens and migrates
    asyncio.run(backend.close())


def child(code: Path, backend: str, args: argparse.Namespace) -> tuple[float, float]:
    """One run in a fresh process importing `code`'s `axon`."""
    env = dict(os.environ, PYTHONPATH=str(code))
    command = [sys.executable, str(HERE / "batched_writes.py"), "--child", backend]
    command += ["--n", str(args.n), "--batch", str(args.batch), "--schema", args.schema]
    out = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return float(result["rate"]), float(result["client_cpu"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", default="sqlite,pgvector")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    parser.add_argument("--schema", default="axon_bench_copy", help="PostgreSQL schema (dropped)")
    parser.add_argument("--profile", metavar="BACKEND", help="one profiled run, this checkout")
    parser.add_argument("--split", metavar="BACKEND", help="where the time goes, this checkout")
    parser.add_argument(
        "--only", help="--split pgvector: the groups whose name holds one of these (commas)"
    )
    parser.add_argument("--child", metavar="BACKEND", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.split == "sqlite":
        split_sqlite(args.n, args.batch)
        return
    if args.split:
        split_postgres(args.n, args.batch, args.schema, args.repeats, args.only)
        return
    if args.child or args.profile:
        name = args.child or args.profile
        rate, cpu = asyncio.run(one_run(name, args.n, args.batch, args.schema, bool(args.profile)))
        print(json.dumps({"rate": rate, "client_cpu": cpu}))
        return
    codes = {"new": ROOT}
    if args.baseline is not None:
        codes = {"baseline": args.baseline.resolve(), "new": ROOT}
    print(
        f"{args.n:,} entries, batches of {args.batch:,}, {args.repeats} runs each, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    for backend in args.backends.split(","):
        rates: dict[str, list[float]] = {name: [] for name in codes}
        cpus: dict[str, list[float]] = {name: [] for name in codes}
        for repeat in range(args.repeats):
            names = list(codes) if repeat % 2 == 0 else list(reversed(codes))
            for name in names:
                rate, cpu = child(codes[name], backend, args)
                rates[name].append(rate)
                cpus[name].append(cpu)
        medians = {name: statistics.median(values) for name, values in rates.items()}
        line = ", ".join(
            f"{name} {medians[name]:,.0f}/s (runs {', '.join(f'{v:,.0f}' for v in rates[name])}; "
            f"client CPU {statistics.median(cpus[name]):.0%} of the time)"
            for name in codes
        )
        ratio = (
            f", ratio {medians['new'] / medians['baseline']:.2f}x" if "baseline" in codes else ""
        )
        print(f"{backend}: {line}{ratio}; load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
