"""In-memory batched writes: `--n` entries in, entries/s out, the substring index's batched
numpy path beside its former one-document-at-a-time path, in the same run.

Each repeat stores the same `--n` entries (`benchmarks/postgres.py`'s texts, metadata
as `benchmarks/peers.py` writes it) with `InMemoryBackend.store_many` in batches of
`--batch` into a fresh backend, once with `SubstringIndex.add_many` batched (the
default) and once with `exact._BATCH_MIN` raised so every document goes through
`add` (what `add_many` did before), alternating so both see the same machine load.
It also times `SubstringIndex.add_many` alone on the same documents, both ways.
Medians of `--repeats`; every index is kept (substring, BM25, order, expiry).

    PYTHONPATH=. .venv/bin/python benchmarks/inmem_writes.py --n 100000 --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from postgres import make_texts

from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.entry import NewEntry
from axon.memory.retrieval import exact
from axon.memory.retrieval.exact import SubstringIndex

SCOPE = "bench"
ONE_BY_ONE = 10**9


async def backend_rate(texts: list[str], batch: int) -> float:
    backend = InMemoryBackend()
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        await backend.store_many(
            [
                NewEntry(f"e{j}", texts[j], {"scope": SCOPE, "group": j % 100})
                for j in range(i, min(len(texts), i + batch))
            ]
        )
    rate = len(texts) / (time.perf_counter() - start)
    await backend.close()
    return rate


def index_rate(texts: list[str], batch: int) -> float:
    index = SubstringIndex()
    items = [(f"e{j}", f"e{j}", text.lower(), 1.0, j) for j, text in enumerate(texts)]
    start = time.perf_counter()
    for i in range(0, len(items), batch):
        index.add_many(items[i : i + batch])
    return len(items) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    texts = make_texts(args.n, np.random.default_rng(args.seed))
    print(f"{args.n:,} entries, batches of {args.batch}, load {os.getloadavg()[0]:.1f}")
    rates: dict[str, list[float]] = {}
    default = exact._BATCH_MIN
    for _ in range(args.repeats):
        for label, minimum in (("one by one (before)", ONE_BY_ONE), ("batched (after)", default)):
            exact._BATCH_MIN = minimum
            gc.collect()
            rates.setdefault(f"store_many, {label}", []).append(
                asyncio.run(backend_rate(texts, args.batch))
            )
            gc.collect()
            rates.setdefault(f"SubstringIndex.add_many, {label}", []).append(
                index_rate(texts, args.batch)
            )
    exact._BATCH_MIN = default
    print("| path | entries/s (median) | runs |")
    print("|---|---:|---|")
    for label, found in rates.items():
        runs = ", ".join(f"{r:,.0f}" for r in found)
        print(f"| {label} | {statistics.median(found):,.0f} | {runs} |")
    for what in ("store_many", "SubstringIndex.add_many"):
        before = statistics.median(rates[f"{what}, one by one (before)"])
        after = statistics.median(rates[f"{what}, batched (after)"])
        print(f"{what}: {after / before:.2f}x")
    print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
