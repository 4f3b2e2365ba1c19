"""Namespaces (issue 28 item 7): a store of N namespaces x M entries -> recall latency in one
namespace against the same recall in a store of only those M entries, and erase time, out.

Two stores per backend are built in the same run: *crowded*, `--namespaces` namespaces
(`t/u0`, `t/u1`, ...) of `--entries` entries each in memory `Bench`, and *alone*, only
namespace `t/u0`'s entries (same scope, same texts, same vectors). Entries are written
through `store_many` with their vectors precomputed (`write_vectors`, the hashing
embedder: no model runs while timing), so what is timed is the store's recall:
`retrieve(query, 10, scope, mode=...)` for keyword, semantic and hybrid, `--queries`
queries per mode, alternating crowded and alone query by query (same machine load).
The table gives median and p95 milliseconds and the crowded/alone ratio of medians
(target: at most 1.5x on in-memory and SQLite; PostgreSQL reported). Row `kw+write`:
keyword recalls each made right after a store in the namespace (timed: the recall
only), what a chat app does and where a store that keeps a namespace's term counts
between recalls (SQLite) must read them again. Then one namespace
of the crowded store is erased (`MemoryBackend.erase`, on SQLite with its scrub:
secure delete, full-text merge, log truncation) and the time is printed.

    .venv/bin/python benchmarks/namespaces.py                     # 1,000 x 1,000, the target
    .venv/bin/python benchmarks/namespaces.py --namespaces 20 --entries 200 --queries 10
    eval "$(scripts/pg env)"; .venv/bin/python benchmarks/namespaces.py --backends pgvector
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from axon.memory.backend import MemoryBackend
from axon.memory.embeddings.hashing import HashingEmbedder
from axon.memory.entry import NewEntry
from axon.memory.namespaces import Namespace

WORDS = (
    "budget", "garden", "roof", "client", "answers", "pool", "meeting", "invoice", "travel",
    "oslo", "paint", "water", "launch", "apollo", "contract", "summary", "review", "draft",
    "schedule", "report", "tea", "coffee", "milk", "sugar", "dentist", "friday", "monday",
    "plan", "ledger", "lighthouse", "harbour", "train", "ticket", "museum", "concert", "recipe",
)
MODES = ("keyword", "semantic", "hybrid")
BATCH = 5_000


def texts(m: int, seed: int) -> list[str]:
    """`m` entry texts of eight words and a number, the same in every namespace."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(8)) + f" #{i}" for i in range(m)]


def scope(i: int) -> str:
    return Namespace.of(("t", f"u{i}")).scope("Bench")


async def fill(
    backend: MemoryBackend, spaces: range, entries: list[str], vectors: np.ndarray, model: str
) -> None:
    """Every namespace of `spaces` gets `entries` with their precomputed `vectors`."""
    for i in spaces:
        where = scope(i)
        for start in range(0, len(entries), BATCH):
            chunk = entries[start : start + BATCH]
            await backend.store_many(
                [NewEntry(f"k{start + j}", text, {"scope": where}) for j, text in enumerate(chunk)]
            )
            await backend.write_vectors(
                where, model, [(f"k{start + j}", vectors[start + j]) for j in range(len(chunk))]
            )


def make(name: str, directory: Path, label: str, embedder: HashingEmbedder) -> MemoryBackend:
    if name == "in_memory":
        from axon.memory.backends.in_memory import InMemoryBackend

        return InMemoryBackend(embedder=embedder)
    if name == "sqlite":
        from axon.memory.backends.sqlite import SQLiteBackend

        return SQLiteBackend(memory_dir=directory / label, embedder=embedder)
    if name == "pgvector":
        from axon.memory.backends.postgres import PostgresBackend

        dsn = os.environ.get("AXON_PG_DSN")
        if not dsn:
            sys.exit('set AXON_PG_DSN (eval "$(scripts/pg env)") or leave out pgvector')
        return PostgresBackend(location=dsn, schema=f"axon_bench_ns_{label}", embedder=embedder)
    sys.exit(f"unknown backend {name!r} (in_memory, sqlite, pgvector)")


def drop(name: str, label: str) -> None:
    if name != "pgvector":
        return
    import psycopg

    with psycopg.connect(os.environ["AXON_PG_DSN"], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "axon_bench_ns_{label}" CASCADE')


def ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p95 * 1000


async def bench(name: str, args: argparse.Namespace, directory: Path) -> None:
    embedder = HashingEmbedder()
    entries = texts(args.entries, args.seed)
    vectors = np.asarray(embedder.embed_passages(entries), dtype=np.float32)
    model = embedder.model_id
    rng = random.Random(args.seed + 1)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(args.queries)]
    crowded = make(name, directory, "crowded", embedder)
    alone = make(name, directory, "alone", embedder)
    try:
        started = time.perf_counter()
        await fill(crowded, range(args.namespaces), entries, vectors, model)
        await fill(alone, range(1), entries, vectors, model)
        built = time.perf_counter() - started
        total = await crowded.count()
        print(f"\n{name}: {total:,} entries in {args.namespaces:,} namespaces "
              f"(+ {args.entries:,} alone), built in {built:.1f} s")
        target = scope(0)
        for store in (crowded, alone):  # warm: caches, statistics, vectors loaded
            for mode in MODES:
                await store.retrieve(queries[0], 10, target, mode=mode)
        print(f"{'mode':<9} {'crowded ms (median/p95)':>24} {'alone ms':>16} {'ratio':>7}")
        for mode in MODES:
            times: dict[str, list[float]] = {"crowded": [], "alone": []}
            for query in queries:
                for label, store in (("crowded", crowded), ("alone", alone)):
                    began = time.perf_counter()
                    found = await store.retrieve(query, 10, target, mode=mode)
                    times[label].append(time.perf_counter() - began)
                    assert all(e.scope == target for e in found)
            c_med, c_p95 = ms(times["crowded"])
            a_med, a_p95 = ms(times["alone"])
            print(f"{mode:<9} {c_med:>12.2f} / {c_p95:>8.2f} {a_med:>7.2f} / {a_p95:>6.2f} "
                  f"{c_med / a_med:>6.2f}x")
        # A chat app writes before it recalls: each keyword recall right after a store in
        # the namespace (SQLite then reads the namespace's terms again, `sqlite_scope_terms`).
        times = {"crowded": [], "alone": []}
        for n, query in enumerate(queries):
            for label, store in (("crowded", crowded), ("alone", alone)):
                await store.store(f"w{n}", f"{query} #w{n}", {"scope": target})
                began = time.perf_counter()
                await store.retrieve(query, 10, target, mode="keyword")
                times[label].append(time.perf_counter() - began)
        c_med, c_p95 = ms(times["crowded"])
        a_med, a_p95 = ms(times["alone"])
        print(f"{'kw+write':<9} {c_med:>12.2f} / {c_p95:>8.2f} {a_med:>7.2f} / {a_p95:>6.2f} "
              f"{c_med / a_med:>6.2f}x")
        prefix = Namespace.of(("t", f"u{args.namespaces // 2}")).scope_prefix
        began = time.perf_counter()
        erased = await crowded.erase(prefix)
        took = time.perf_counter() - began
        print(f"erase of one namespace ({sum(erased.values()):,} entries): {took * 1000:.0f} ms")
    finally:
        await crowded.close()
        await alone.close()
        drop(name, "crowded")
        drop(name, "alone")


async def run(args: argparse.Namespace) -> None:
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in [b for b in args.backends.split(",") if b]:
            await bench(name, args, Path(tmp))
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=1_000)
    parser.add_argument("--entries", type=int, default=1_000, help="entries per namespace")
    parser.add_argument("--queries", type=int, default=30, help="queries per mode")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backends", default="in_memory,sqlite")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
