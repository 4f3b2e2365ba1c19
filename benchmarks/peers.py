"""AXON's backends beside LangGraph's stores: same entries, same precomputed vectors, one run.

Runs LangGraph's `InMemoryStore` and `SqliteStore` (the `bench` extra:
`langgraph`, `langgraph-checkpoint-sqlite`; never a runtime dependency of AXON)
against AXON's in-memory and SQLite backends, and prints one table:

- writes: `--n` entries in batches of `--batch` (LangGraph: `batch` of `PutOp`s,
  vectors looked up from the precomputed ones by its `embed` function; AXON:
  `store_many`, which also keeps the keyword (BM25 / FTS5) and substring indexes
  LangGraph does not have, then the same vectors saved through the backend's save
  path); entries/s for everything, and AXON's two parts;
- vector search: top 10 by cosine for `--queries` precomputed query vectors;
- list newest 10 (LangGraph: `search(namespace, limit=10)`, which lists in insertion
  order; AXON: `list_entries(limit=10)`, newest first);
- metadata filter without a query, 10 results (`group` = one of 100 values;
  LangGraph: `search(filter=...)`; AXON: `list_matching(scope, filters, limit=10)`,
  what the management API's `list(where=...)` asks the backend: the filter in
  SQLite's query, the in-memory ordered index walked newest first);
- keyword (AXON only: LangGraph's stores have no keyword search);
- bytes per entry (SQLite: the files; in memory: the growth of the process's RSS).

Medians of `--queries` calls after 3 warm-up calls. Vectors are clustered random unit
vectors as in `benchmarks/postgres.py` (no model is run).

    PYTHONPATH=. .venv/bin/python benchmarks/peers.py            # 100k entries
    PYTHONPATH=. .venv/bin/python benchmarks/peers.py --n 20000  # quicker
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres import BenchEmbedder, make_texts, unit

from axon.memory.backend import MemoryBackend
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.entry import NewEntry

SCOPE = "bench"
GROUPS = 100


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def median_ms(fn: Callable[[int], Any], queries: int) -> float:
    for i in range(3):
        fn(i)
    times = []
    for i in range(queries):
        start = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


async def amedian_ms(fn: Callable[[int], Any], queries: int) -> float:
    for i in range(3):
        await fn(i)
    times = []
    for i in range(queries):
        start = time.perf_counter()
        await fn(i)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


class Data:
    def __init__(self, n: int, dim: int, queries: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.n = n
        self.texts = make_texts(n, rng)
        centers = unit(rng.standard_normal((max(1, n // 50), dim)).astype(np.float32))
        members = rng.integers(0, len(centers), size=n)
        self.vectors = unit(
            centers[members] + 0.8 * unit(rng.standard_normal((n, dim)).astype(np.float32))
        )
        picks = rng.choice(n, size=queries + 3, replace=False)
        noise = unit(rng.standard_normal((queries + 3, dim)).astype(np.float32))
        self.query_vectors = unit(centers[members[picks]] + 0.8 * noise)
        self.query_texts = [f"query {i}" for i in range(queries + 3)]
        self.keyword_queries = [
            " ".join(rng.choice(self.texts[int(i)].split(), size=2, replace=False))
            for i in rng.choice(n, size=queries + 3)
        ]
        self.by_text: dict[str, np.ndarray] = {t: self.vectors[i] for i, t in enumerate(self.texts)}
        for text, vector in zip(self.query_texts, self.query_vectors, strict=True):
            self.by_text[text] = vector
        self.groups = [i % GROUPS for i in range(n)]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.by_text[t].tolist() for t in texts]


def langgraph_row(
    data: Data, store: Any, label: str, batch: int, queries: int, *, vectors: bool = True
) -> dict[str, Any]:
    from langgraph.store.base import PutOp

    ns = (SCOPE,)
    before = rss_bytes()
    start = time.perf_counter()
    for i in range(0, data.n, batch):
        store.batch(
            [
                PutOp(ns, f"e{j}", {"text": data.texts[j], "group": data.groups[j]})
                for j in range(i, min(data.n, i + batch))
            ]
        )
    writes = data.n / (time.perf_counter() - start)
    grown = rss_bytes() - before
    row: dict[str, Any] = {"store": label, "writes": writes, "rss": grown}
    row["vector"] = row["top10"] = None
    if vectors:
        row["vector"] = median_ms(
            lambda i: store.search(ns, query=data.query_texts[i], limit=10), queries
        )
        row["top10"] = [
            [item.key for item in store.search(ns, query=data.query_texts[i], limit=10)]
            for i in range(queries)
        ]
    row["list"] = median_ms(lambda i: store.search(ns, limit=10), queries)
    row["filter"] = median_ms(
        lambda i: store.search(ns, filter={"group": i % GROUPS}, limit=10), queries
    )
    row["keyword"] = None
    return row


async def axon_row(
    data: Data, backend: MemoryBackend, label: str, batch: int, queries: int
) -> dict[str, Any]:
    embedder = backend.embedder
    assert isinstance(embedder, BenchEmbedder)
    before = rss_bytes()
    start = time.perf_counter()
    for i in range(0, data.n, batch):
        await backend.store_many(
            [
                NewEntry(f"e{j}", data.texts[j], {"scope": SCOPE, "group": data.groups[j]})
                for j in range(i, min(data.n, i + batch))
            ]
        )
    entries_s = time.perf_counter() - start
    start = time.perf_counter()
    pending = await backend._pending_texts(SCOPE, embedder.model_id)
    for i in range(0, len(pending), batch):
        chunk = pending[i : i + batch]
        await backend._save_vectors(
            embedder.model_id, [(ident, data.by_text[text]) for ident, text in chunk]
        )
    vectors_s = time.perf_counter() - start
    grown = rss_bytes() - before
    row: dict[str, Any] = {
        "store": label,
        "writes": data.n / (entries_s + vectors_s),
        "entries_only": data.n / entries_s,
        "vectors_only": data.n / vectors_s,
        "rss": grown,
    }

    async def vector(i: int) -> Any:
        embedder.next_query = data.query_vectors[i]
        return await backend.retrieve("(vector)", 10, SCOPE, mode="semantic")

    row["vector"] = await amedian_ms(vector, queries)
    row["top10"] = [[e.key for e in await vector(i)] for i in range(queries)]
    row["list"] = await amedian_ms(lambda i: backend.list_entries(SCOPE, limit=10), queries)

    async def filtered(i: int) -> list[Any]:  # what manager.list_matching asks the backend
        return await backend.list_matching(SCOPE, {"group": i % GROUPS}, limit=10)

    row["filter"] = await amedian_ms(filtered, queries)
    row["keyword"] = await amedian_ms(
        lambda i: backend.retrieve(data.keyword_queries[i], 10, SCOPE, mode="keyword"), queries
    )
    return row


def file_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


async def run(args: argparse.Namespace) -> None:
    from langgraph.store.memory import InMemoryStore
    from langgraph.store.sqlite import SqliteStore

    t0 = time.perf_counter()
    data = Data(args.n, args.dim, args.queries, args.seed)
    print(f"{args.n:,} entries, dim {args.dim}, generated in {time.perf_counter() - t0:.1f} s")
    index = {"dims": args.dim, "embed": data.embed, "fields": ["text"]}
    rows = []

    rows.append(langgraph_row(data, InMemoryStore(index=index), "LangGraph InMemoryStore",
                              args.batch, args.queries))
    gc.collect()
    backend = InMemoryBackend(embedder=BenchEmbedder(args.dim))
    rows.append(await axon_row(data, backend, "AXON in_memory", args.batch, args.queries))
    await backend.close()
    del backend
    gc.collect()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lg"
        path.mkdir()
        # Its vector index needs the sqlite-vec extension, and this Python's sqlite3
        # cannot load extensions (`enable_load_extension` is missing): no index then.
        vectors = hasattr(__import__("sqlite3").Connection, "enable_load_extension")
        with SqliteStore.from_conn_string(
            str(path / "store.db"), index=index if vectors else None
        ) as store:
            store.setup()
            row = langgraph_row(data, store, "LangGraph SqliteStore", args.batch, args.queries,
                                vectors=vectors)
        row["bytes"] = file_bytes(path) / args.n
        rows.append(row)
        ours = Path(tmp) / "axon"
        backend = SQLiteBackend(memory_dir=ours, embedder=BenchEmbedder(args.dim))
        row = await axon_row(data, backend, "AXON sqlite", args.batch, args.queries)
        await backend.close()
        row["bytes"] = file_bytes(ours) / args.n
        rows.append(row)

    print()
    print("| store | writes (entries/s) | vector search | list newest 10 | filter, no query "
          "| keyword | bytes/entry |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        writes = f"{row['writes']:,.0f}"
        if "entries_only" in row:
            writes += (f" (entries {row['entries_only']:,.0f}, "
                       f"vectors {row['vectors_only']:,.0f})")
        size = row.get("bytes", row["rss"] / args.n)
        keyword = "-" if row["keyword"] is None else f"{row['keyword']:.2f} ms"
        vector = "-" if row["vector"] is None else f"{row['vector']:.2f} ms"
        if row["vector"] is None:
            writes += " (no vectors)"
        print(f"| {row['store']} | {writes} | {vector} | {row['list']:.3f} ms "
              f"| {row['filter']:.3f} ms | {keyword} | {size:,.0f}"
              f"{'' if 'bytes' in row else ' (RSS)'} |")
    for a, b in ((0, 1), (2, 3)):
        if rows[a]["top10"] is None:
            continue
        same = sum(x == y for x, y in zip(rows[a]["top10"], rows[b]["top10"], strict=True))
        print(f"same vector top 10, {rows[a]['store']} vs {rows[b]['store']}: "
              f"{same}/{args.queries}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
