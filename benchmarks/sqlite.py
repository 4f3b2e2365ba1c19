"""SQLite memory benchmark: synthetic conversational entries in, medians and ratios printed.

Measures, on one file per size:

- batched remember throughput: `store_many` in batches (validation, JSON, rows,
  FTS5 triggers, commit), no embeddings; target >= 50,000 entries/s;
- `keyword` recall median (top 5) next to the raw FTS5 OR-query (`SELECT rowid, rank
  ... MATCH ? ORDER BY rank LIMIT 5`) with the same MATCH expression, run on the
  backend's own connection in the same process; target <= 1.3x raw and <= 10 ms;
- `exact` recall median, per kind of query (key equal, a common word, a rare
  substring, no match at all);
- database size per entry (file + WAL after a checkpoint).

Text is drawn from a Zipf distribution over a synthetic vocabulary whose most
frequent words are real English stop words (dropped from queries, as in real
use); a keyword query is 2-4 words of a random stored entry, plus a stop word.

Usage: `.venv/bin/python benchmarks/sqlite.py` (100k entries), `--full` (also 1M),
`--sizes 10000,50000`, `--queries N`, `--batch N`, `--dir PATH` (keep the files).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import string
import tempfile
import time
from pathlib import Path

import numpy as np

from axon.memory.backends.sqlite import SQLiteBackend, fts_match_expression
from axon.memory.entry import NewEntry
from axon.memory.retrieval.text import STOP_WORDS

SCOPE = "Bench"
VOCABULARY = 50_000
STOP = sorted(STOP_WORDS)[:60]


def _vocabulary(rng: random.Random) -> list[str]:
    words = list(STOP)
    seen = set(words)
    while len(words) < VOCABULARY:
        word = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 10)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Corpus:
    """Deterministic synthetic turns: `text(i)` is entry i's value."""

    def __init__(self, seed: int = 7) -> None:
        rng = random.Random(seed)
        self.words = np.array(_vocabulary(rng), dtype=object)
        ranks = np.arange(1, VOCABULARY + 1, dtype=np.float64)
        weights = 1.0 / ranks**1.07
        self.cdf = np.cumsum(weights / weights.sum())
        self.np_rng = np.random.default_rng(seed)

    def texts(self, n: int) -> list[str]:
        lengths = self.np_rng.integers(8, 25, size=n)
        picks = np.searchsorted(self.cdf, self.np_rng.random(int(lengths.sum())))
        picks = np.minimum(picks, VOCABULARY - 1)
        out = []
        start = 0
        for length in lengths:
            out.append(" ".join(self.words[picks[start : start + length]]))
            start += length
        return out


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def build(
    backend: SQLiteBackend, corpus: Corpus, n: int, batch: int
) -> tuple[float, list[str]]:
    """Fill the memory with n entries; returns (entries/s of store_many, a sample of texts)."""
    spent = 0.0
    sample: list[str] = []
    for start in range(0, n, batch):
        texts = corpus.texts(min(batch, n - start))
        if len(sample) < 5000:
            sample.extend(texts[:50])
        items = [
            NewEntry(f"turn-{start + i}", text, {"scope": SCOPE, "speaker": "user"})
            for i, text in enumerate(texts)
        ]
        began = time.perf_counter()
        await backend.store_many(items)
        spent += time.perf_counter() - began
    return n / spent, sample


def keyword_queries(sample: list[str], count: int, rng: random.Random) -> list[str]:
    queries = []
    for _ in range(count):
        words = [w for w in rng.choice(sample).split() if w not in STOP_WORDS] or ["zzz"]
        picked = rng.sample(words, min(len(words), rng.randint(2, 4)))
        queries.append(f"what about {' '.join(picked)}?")
    return queries


async def bench_keyword(backend: SQLiteBackend, queries: list[str]) -> dict[str, float]:
    conn = backend._conn  # the raw baseline runs on the backend's own connection
    ours: list[float] = []
    raw: list[float] = []
    for query in queries:  # warm the page cache for both
        await backend.retrieve(query, 5, SCOPE, mode="keyword")
    for query in queries:
        match = fts_match_expression(query)
        began = time.perf_counter()
        conn.execute(
            "SELECT rowid, rank FROM entries_fts WHERE entries_fts MATCH ? ORDER BY rank LIMIT 5",
            (match,),
        ).fetchall()
        raw.append(time.perf_counter() - began)
        began = time.perf_counter()
        found = await backend.retrieve(query, 5, SCOPE, mode="keyword")
        ours.append(time.perf_counter() - began)
        assert found, query
    return {"keyword_ms": _median_ms(ours), "raw_fts_ms": _median_ms(raw)}


async def bench_exact(
    backend: SQLiteBackend, sample: list[str], n: int, rng: random.Random, count: int
) -> dict[str, float]:
    kinds = {
        "key equal": [f"turn-{rng.randrange(n)}" for _ in range(count)],
        "common word": [rng.choice(STOP[:10]) for _ in range(count)],
        "rare substring": [
            rng.choice([w for w in rng.choice(sample).split() if len(w) > 7] or ["qqqqqq"])
            for _ in range(count)
        ],
        "no match": [f"nomatch{rng.randrange(10**6)}" for _ in range(max(3, count // 10))],
    }
    result = {}
    for kind, queries in kinds.items():
        times = []
        for query in queries:
            began = time.perf_counter()
            await backend.retrieve(query, 5, SCOPE, mode="exact")
            times.append(time.perf_counter() - began)
        result[f"exact {kind} ms"] = _median_ms(times)
    return result


def db_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def run_size(n: int, args: argparse.Namespace, root: Path) -> None:
    directory = root / f"n{n}"
    shutil.rmtree(directory, ignore_errors=True)
    backend = SQLiteBackend(memory_dir=directory)
    try:
        rate, sample = await build(backend, Corpus(), n, args.batch)
        backend._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        size = db_size(backend.path)
        rng = random.Random(11)
        print(f"\n== {n:,} entries ({backend.path})")
        print(f"batched remember (store_many, batch {args.batch}): {rate:,.0f} entries/s")
        print(f"database size: {size / 1e6:,.1f} MB, {size / n:,.0f} bytes/entry")
        kw = await bench_keyword(backend, keyword_queries(sample, args.queries, rng))
        print(
            f"keyword recall median: {kw['keyword_ms']:.2f} ms; raw FTS5 OR-query "
            f"{kw['raw_fts_ms']:.2f} ms; ratio {kw['keyword_ms'] / kw['raw_fts_ms']:.2f}x"
        )
        exact = await bench_exact(backend, sample, n, rng, max(10, args.queries // 4))
        for name, value in exact.items():
            print(f"{name}: {value:.2f}")
    finally:
        await backend.close()
        if args.dir is None:
            shutil.rmtree(directory, ignore_errors=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--full", action="store_true", help="also 1,000,000 entries")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--batch", type=int, default=5000)
    parser.add_argument("--dir", default=None, help="where to put (and keep) the files")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.full and 1_000_000 not in sizes:
        sizes.append(1_000_000)
    root = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="axon-sqlite-bench-"))
    for n in sizes:
        await run_size(n, args, root)
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
