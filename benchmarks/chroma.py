"""Chroma against SQLite and PostgreSQL: remember and recall at 10k and 100k entries, one run.

For each size, each backend gets the same synthetic entries (texts of 12-30
Zipf-distributed pseudo-words, 90% of them in the recalled scope) and the same
precomputed vectors (384-dimensional unit vectors around n/50 random centres),
loaded through the backend's own save path; embedding time is excluded. Then:

- remember: single `store` calls (the first 200 entries) and `store_many` in
  batches of 1000 (the rest), in entries per second;
- vectors: the backend's `_save_vectors` in chunks of 1000, vectors per second;
- recall medians (top 10, the 90% scope) over the same queries for every
  backend: `exact` (a word of a stored text), `keyword` (two words of a stored
  text) and `semantic` (a point near a stored entry's centre), each backend's
  queries interleaved with the others' so machine noise hits all alike.

Needs the Chroma server (`scripts/chroma start; eval "$(scripts/chroma env)"`) and
the PostgreSQL one (`eval "$(scripts/pg env)"`); SQLite uses a temporary directory.
Collections and schemas it makes are dropped at the end.

    .venv/bin/python benchmarks/chroma.py                      # 10k and 100k
    .venv/bin/python benchmarks/chroma.py --sizes 10000 --queries 40
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres import BenchEmbedder, make_texts, unit

from axon.memory.backend import MemoryBackend
from axon.memory.entry import NewEntry

SCOPE = "bench"
OTHER = "other"
TOP_K = 10
SINGLES = 200
BATCH = 1000


def make_backends(
    n: int, embedder: BenchEmbedder, tmp: Path, only: list[str]
) -> dict[str, MemoryBackend]:
    backends: dict[str, MemoryBackend] = {}
    if "sqlite" in only:
        from axon.memory.backends.sqlite import SQLiteBackend

        backends["sqlite"] = SQLiteBackend(memory_dir=tmp / f"sqlite-{n}", embedder=embedder)
    if "pgvector" in only:
        from axon.memory.backends.postgres import PostgresBackend

        dsn = os.environ.get("AXON_PG_DSN")
        if not dsn:
            sys.exit('set AXON_PG_DSN (eval "$(scripts/pg env)") or leave out pgvector')
        backends["pgvector"] = PostgresBackend(
            location=dsn, schema=f"axon_bench_chroma_{n}", embedder=embedder
        )
    if "chroma" in only:
        from axon.memory.backends.chroma import ChromaBackend

        url = os.environ.get("AXON_CHROMA_URL")
        if not url:
            sys.exit('set AXON_CHROMA_URL (eval "$(scripts/chroma env)") or leave out chroma')
        backends["chroma"] = ChromaBackend(
            location=f"{url.rstrip('/')}/axon-bench-{n}", embedder=embedder, connect_timeout=60
        )
    return backends


async def load(
    backend: MemoryBackend,
    entries: list[NewEntry],
    vectors: np.ndarray,
    row_of: dict[str, int],
    model_id: str,
) -> tuple[float, float, float]:
    """Remember every entry and save every vector; the three rates (per second)."""
    await backend.clear()
    start = time.perf_counter()
    for item in entries[:SINGLES]:
        await backend.store(item.key, item.value, dict(item.metadata or {}))
    single = SINGLES / (time.perf_counter() - start)
    start = time.perf_counter()
    for i in range(SINGLES, len(entries), BATCH):
        await backend.store_many(entries[i : i + BATCH])
    batch = (len(entries) - SINGLES) / (time.perf_counter() - start)
    pending = await backend._pending_texts(None, model_id)
    items = [(ident, vectors[row_of[text]]) for ident, text in pending]
    start = time.perf_counter()
    for i in range(0, len(items), BATCH):
        await backend._save_vectors(model_id, items[i : i + BATCH])
    saved = len(items) / (time.perf_counter() - start)
    return single, batch, saved


async def run(args: argparse.Namespace) -> None:
    only = args.backends.split(",")
    print(f"backends {', '.join(only)}; top {TOP_K}; {args.queries} queries per mode")
    for n in [int(size) for size in args.sizes.split(",")]:
        rng = np.random.default_rng(args.seed)
        texts = make_texts(n, rng)
        scopes = np.where(rng.random(n) < 0.9, SCOPE, OTHER)
        entries = [NewEntry(f"e{i}", texts[i], {"scope": str(scopes[i])}) for i in range(n)]
        centers = unit(rng.standard_normal((max(1, n // 50), args.dim)).astype(np.float32))
        members = rng.integers(0, len(centers), size=n)
        noise = unit(rng.standard_normal((n, args.dim)).astype(np.float32))
        vectors = unit(centers[members] + 0.8 * noise)
        row_of = {text: i for i, text in enumerate(texts)}
        picks = rng.choice(np.flatnonzero(scopes == SCOPE), size=args.queries)
        exact_queries = [str(rng.choice(texts[int(i)].split())) for i in picks]
        keyword_queries = [
            " ".join(rng.choice(texts[int(i)].split(), size=2, replace=False)) for i in picks
        ]
        query_noise = unit(rng.standard_normal((args.queries, args.dim)).astype(np.float32))
        query_vectors = unit(centers[members[picks]] + 0.8 * query_noise)

        embedder = BenchEmbedder(args.dim)
        with tempfile.TemporaryDirectory() as tmp:
            backends = make_backends(n, embedder, Path(tmp), only)
            print(f"\n{n:,} entries")
            print(f"{'':<10}{'store/s':>10}{'batch/s':>10}{'vectors/s':>11}")
            for name, backend in backends.items():
                single, batch, saved = await load(
                    backend, entries, vectors, row_of, embedder.model_id
                )
                print(f"{name:<10}{single:10,.0f}{batch:10,.0f}{saved:11,.0f}")
            times: dict[tuple[str, str], list[float]] = {}
            for i in range(args.queries):
                for name, backend in backends.items():
                    for mode, query in (
                        ("exact", exact_queries[i]),
                        ("keyword", keyword_queries[i]),
                        ("semantic", "(vector)"),
                    ):
                        embedder.next_query = query_vectors[i]
                        start = time.perf_counter()
                        await backend.retrieve(query, TOP_K, SCOPE, mode=mode)
                        times.setdefault((name, mode), []).append(time.perf_counter() - start)
            print(f"{'median ms':<10}{'exact':>10}{'keyword':>10}{'semantic':>11}")
            for name in backends:
                row = [statistics.median(times[(name, m)][1:]) * 1000 for m in _MODES]
                print(f"{name:<10}{row[0]:10.2f}{row[1]:10.2f}{row[2]:11.2f}")
            for name, backend in backends.items():
                if not args.keep:
                    await _drop(name, backend)
                await backend.close()


_MODES = ("exact", "keyword", "semantic")


async def _drop(name: str, backend: Any) -> None:
    if name == "pgvector":
        import psycopg

        with psycopg.connect(os.environ["AXON_PG_DSN"], autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{backend.schema}" CASCADE')
    elif name == "chroma":
        client = backend._db._open()
        for collection in client.list_collections():
            text = collection if isinstance(collection, str) else collection.name
            if text == backend.collection_name or text.startswith(f"{backend.collection_name}-v"):
                client.delete_collection(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated entry counts")
    parser.add_argument("--backends", default="sqlite,pgvector,chroma")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=21)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the stores it made")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
