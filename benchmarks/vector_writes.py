"""Cost of writing vectors to a SQLite memory: `write_vectors` of N precomputed vectors.

    PYTHONPATH=. python benchmarks/vector_writes.py [--n 50000] [--repeats 3] [--label X]

Stores N entries, then times `write_vectors` of their N vectors (384 dimensions, in
batches of 10,000), on a fresh file each repeat; prints the median. Run it with
`PYTHONPATH` on another checkout to measure that checkout's backend with the same
script (issue 15 item 5: the `vector_log` triggers of schema 8 against schema 7).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time

import numpy as np

from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.entry import NewEntry


async def once(n: int) -> float:
    backend = SQLiteBackend(memory_dir=tempfile.mkdtemp(prefix="axon-vector-writes-"))
    await backend.store_many([NewEntry(f"k{i}", f"note {i}", {"scope": "S"}) for i in range(n)])
    vectors = np.random.default_rng(1).standard_normal((n, 384)).astype(np.float32)
    started = time.perf_counter()
    for start in range(0, n, 10_000):
        batch = [(f"k{i}", vectors[i]) for i in range(start, min(n, start + 10_000))]
        await backend.write_vectors("S", "bench:384", batch)
    elapsed = time.perf_counter() - started
    await backend.close()
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    runs = [await once(args.n) for _ in range(args.repeats)]
    median = statistics.median(runs)
    print(
        f"{args.label} {args.n:,} vectors: median {median:.2f} s ({args.n / median:,.0f}/s), "
        f"runs {[round(r, 2) for r in runs]}"
    )


if __name__ == "__main__":
    asyncio.run(main())
