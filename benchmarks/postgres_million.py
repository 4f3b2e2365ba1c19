"""PostgreSQL at 1,000,000 entries: load time, index builds, recall medians, HNSW recall@10.

Runs on the server in `AXON_PG_DSN` (`eval "$(scripts/pg env)"`), in a schema of its
own (`--schema`, default `axon_bench_million`) that it drops at the end, and prints:

- load: `store_many` in batches (`--batch`) with every index maintained, as a
  program would write; then the two GIN keyword indexes dropped and rebuilt, timed
  (what a bulk import that builds them afterwards would pay);
- vectors: precomputed clustered unit vectors (no model) saved through the
  backend's save path without the HNSW index, then the HNSW build timed with
  `maintenance_work_mem` (`--maintenance-work-mem`) and
  `max_parallel_maintenance_workers` (`--parallel-workers`), the settings that
  decide whether the graph is built in memory and by how many processes;
- `keyword`, `semantic` and `hybrid` recall medians through the backend (top 10,
  one scope holding 90% of the entries), and recall@10 of the HNSW answers against
  exact cosine computed with numpy.

The texts, vectors and queries are those of `benchmarks/postgres.py` (same
generator). Long: run it in the background at low priority, e.g.

    nohup nice -n 19 env PYTHONPATH=. .venv/bin/python benchmarks/postgres_million.py \
        > /tmp/pg-million.log 2>&1 &
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres import SCOPE, TOP_K, BenchEmbedder, make_texts, unit

from axon.memory.backends.postgres import PostgresBackend
from axon.memory.entry import NewEntry

OTHER = "other"


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


async def run(args: argparse.Namespace) -> None:
    import psycopg

    dsn = args.dsn or os.environ.get("AXON_PG_DSN")
    if not dsn:
        sys.exit('set AXON_PG_DSN (eval "$(scripts/pg env)") or pass --dsn')
    n = args.n
    rng = np.random.default_rng(args.seed)
    schema = args.schema
    s = f'"{schema}"'
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")
        server = admin.execute("SHOW server_version").fetchone()
    say(f"PostgreSQL {server[0] if server else '?'}, {n:,} entries, dim {args.dim}")

    t0 = time.perf_counter()
    texts = make_texts(n, rng)
    scopes = np.where(rng.random(n) < 0.9, SCOPE, OTHER)
    say(f"generated texts in {time.perf_counter() - t0:.1f} s")

    embedder = BenchEmbedder(args.dim)
    backend = PostgresBackend(location=dsn, schema=schema, embedder=embedder)
    try:
        # ------------------------------------------------------------ load
        start = time.perf_counter()
        for i in range(0, n, args.batch):
            await backend.store_many(
                [
                    NewEntry(f"e{j}", texts[j], {"scope": str(scopes[j]), "n": j})
                    for j in range(i, min(n, i + args.batch))
                ]
            )
            if (i // args.batch) % 40 == 0:
                done = min(n, i + args.batch)
                say(f"  loaded {done:,} ({done / (time.perf_counter() - start):,.0f}/s)")
        load = time.perf_counter() - start
        say(f"load, store_many({args.batch}), every index kept: {load:.1f} s "
            f"({n / load:,.0f} entries/s)")
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
            admin.execute(f"SET max_parallel_maintenance_workers = {args.parallel_workers}")
            for index, column in (("entries_terms", "terms"),
                                  ("entries_context_terms", "context_terms")):
                admin.execute(f"DROP INDEX {s}.{index}")
                start = time.perf_counter()
                admin.execute(f"CREATE INDEX {index} ON {s}.entries USING gin ({column})")
                say(f"GIN build {index}: {time.perf_counter() - start:.1f} s")
            start = time.perf_counter()
            admin.execute(f"VACUUM ANALYZE {s}.entries")
            say(f"VACUUM ANALYZE entries: {time.perf_counter() - start:.1f} s")
            size = admin.execute(
                f"SELECT pg_total_relation_size('{s}.entries')"
            ).fetchone()
            say(f"entries table with indexes: {int(size[0]) / n:.0f} bytes/entry" if size
                else "size unknown")

        # ------------------------------------------------------------ vectors
        centers = unit(rng.standard_normal((max(1, n // 50), args.dim)).astype(np.float32))
        members = rng.integers(0, len(centers), size=n)
        vectors = np.empty((n, args.dim), dtype=np.float32)
        for i in range(0, n, 100_000):  # in slices: the noise of 1M rows is 1.5 GB
            j = min(n, i + 100_000)
            noise = unit(rng.standard_normal((j - i, args.dim)).astype(np.float32))
            vectors[i:j] = unit(centers[members[i:j]] + 0.8 * noise)
        del noise
        pending = await backend._pending_texts(None, embedder.model_id)
        with psycopg.connect(dsn, autocommit=True) as admin:
            keys = dict(admin.execute(f"SELECT id, key FROM {s}.entries").fetchall())
        items = [(ident, vectors[int(keys[ident[0]][1:])]) for ident, _ in pending]
        del keys
        await backend._save_vectors(embedder.model_id, items[:1])
        with psycopg.connect(dsn, autocommit=True) as admin:
            row = admin.execute(
                f"SELECT tbl FROM {s}.models WHERE model = %s", (embedder.model_id,)
            ).fetchone()
            assert row is not None  # made by the first save
            table = f'{s}."{row[0]}"'
            index = f'"{row[0]}_hnsw"'
            admin.execute(f"DROP INDEX {s}.{index}")
        start = time.perf_counter()
        for i in range(1, len(items), 5000):
            await backend._save_vectors(embedder.model_id, items[i : i + 5000])
        saved = time.perf_counter() - start
        say(f"vectors saved (no index): {saved:.1f} s ({(len(items) - 1) / saved:,.0f}/s)")
        del items, pending
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
            admin.execute(f"SET max_parallel_maintenance_workers = {args.parallel_workers}")
            start = time.perf_counter()
            admin.execute(
                f"CREATE INDEX {index} ON {table} USING hnsw "
                "(embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
            )
            say(f"HNSW build (m 16, ef_construction 64, maintenance_work_mem "
                f"{args.maintenance_work_mem}, {args.parallel_workers} parallel workers): "
                f"{time.perf_counter() - start:.1f} s")
            admin.execute(f"VACUUM ANALYZE {table}")

        # ------------------------------------------------------------ recall
        in_scope = np.flatnonzero(scopes == SCOPE)
        keyword_queries = [
            " ".join(rng.choice(texts[int(i)].split(), size=2, replace=False))
            for i in rng.choice(n, size=args.queries)
        ]
        picks = rng.choice(in_scope, size=args.queries, replace=False)
        query_noise = unit(rng.standard_normal((args.queries, args.dim)).astype(np.float32))
        query_vectors = unit(centers[members[picks]] + 0.8 * query_noise)

        async def medians(label: str, mode: str) -> list[list[str]]:
            times: list[float] = []
            found: list[list[str]] = [[] for _ in range(args.queries)]
            for i in range(-3, args.queries):  # three warm-up queries first
                q = i % args.queries
                embedder.next_query = query_vectors[q]
                start = time.perf_counter()
                got = await backend.retrieve(keyword_queries[q], TOP_K, SCOPE, mode=mode)
                if i >= 0:
                    times.append(time.perf_counter() - start)
                    found[q] = [e.key for e in got]
            say(f"{label:<8} recall median: {statistics.median(times) * 1000:8.2f} ms "
                f"(p90 {np.percentile(times, 90) * 1000:.2f} ms)")
            return found

        await medians("keyword", "keyword")
        semantic = await medians("semantic", "semantic")
        await medians("hybrid", "hybrid")
        scoped = vectors[in_scope]
        hits = 0
        for got, vector in zip(semantic, query_vectors, strict=True):
            best = in_scope[np.argpartition(-(scoped @ vector), TOP_K)[:TOP_K]]
            hits += len({f"e{i}" for i in best} & set(got))
        say(f"HNSW recall@{TOP_K} vs exact cosine: {hits / (TOP_K * len(semantic)):.3f}")
    finally:
        await backend.close()
        if not args.keep:
            with psycopg.connect(dsn, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA IF EXISTS {s} CASCADE")
            say(f"dropped schema {schema}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=5000, help="store_many batch size")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--maintenance-work-mem", default="3GB")
    parser.add_argument("--parallel-workers", type=int, default=1)
    parser.add_argument("--dsn", default=None, help="default: AXON_PG_DSN")
    parser.add_argument("--schema", default="axon_bench_million")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark schema")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
