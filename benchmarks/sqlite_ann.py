"""Semantic recall through the real SQLite backend at a million entries: exact scan vs the
HNSW index kept beside the file (`axon/memory/backends/sqlite_ann.py`).

    PYTHONPATH=. python benchmarks/sqlite_ann.py [--n 1000000] [--dim 384] [--queries 50]
        [--during 10] [--expansion-add 128] [--threshold 50000] [--dir DIR]

Issue 15 item 5. One run, one file, the same vectors and queries as benchmarks/ann.py
(clustered synthetic unit vectors: no embedding model is run, so the figures are the
search's): `n` entries stored with `store_many` and their vectors with `write_vectors`,
then `retrieve(mode="semantic")` through

- a backend whose threshold is off (`ann_threshold=-1`): the exact scan, its first
  recall (loading every vector) and its median; the ground truth of recall@10;
- a backend with the default threshold, in a new process's state: its first recall
  (which starts the index's build in the background and is answered by the exact
  scan), `--during` recalls while the build runs (exact, and sharing the cores with
  it), the time from the first recall until the index is ready (`AnnIndexes.wait`),
  then the first recall through the index (taking it, catching up from the log), the
  median, recall@10 against the exact scan;
- the same after a close and reopen: the first recall (loading the saved index) and
  the median.

A recall embeds one query at a time; here the query's vector is looked up instead
(`QueryTable`), so nothing but the backend's search is timed. `--expansion-add` sets
the index's build setting (`sqlite_ann.EXPANSION_ADD`) for this run.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ann import make_data

from axon.memory.backends import sqlite_ann
from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.backends.sqlite_ann import ON_THRESHOLD
from axon.memory.entry import NewEntry

SCOPE = "Notes"
BATCH = 20_000


class QueryTable:
    """An embedder whose queries are `q<i>` and whose vectors are given: the benchmark's."""

    def __init__(self, queries: np.ndarray) -> None:
        self.queries = queries
        self.dim = int(queries.shape[1])
        self.model_id = f"bench-synthetic:{self.dim}"

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.queries[int(text[1:])])

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("every vector is written by the benchmark")


async def fill(backend: SQLiteBackend, data: np.ndarray, model_id: str) -> None:
    for start in range(0, len(data), BATCH):
        stop = min(len(data), start + BATCH)
        await backend.store_many(
            [NewEntry(f"k{i}", f"note number {i}", {"scope": SCOPE}) for i in range(start, stop)]
        )
        await backend.write_vectors(
            SCOPE, model_id, [(f"k{i}", data[i]) for i in range(start, stop)]
        )


async def recalls(
    backend: SQLiteBackend, count: int, start: int = 0
) -> tuple[float, str, list[list[str]]]:
    """First recall's ms; median wall and CPU ms of the others; every recall's top-10 keys.

    CPU time (this process's, all threads: a build under way counts too) is shown beside
    wall time because on a shared, loaded machine the wall time of a short call is mostly
    time spent waiting for a core."""
    found, times, cpu = [], [], []
    for i in range(start, start + count):
        started, started_cpu = time.perf_counter(), time.process_time()
        entries = await backend.retrieve(f"q{i}", 10, SCOPE, mode="semantic")
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        found.append([entry.key for entry in entries])
    rest = times[1:] or times
    median = (
        f"median {statistics.median(rest):8.2f} ms wall, "
        f"{statistics.median(cpu[1:] or cpu):8.2f} ms CPU"
    )
    return times[0], median, found


def recall_at_10(found: list[list[str]], truth: list[list[str]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / 10 for f, t in zip(found, truth, strict=True)]))


def load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--during", type=int, default=10, help="recalls timed while the index is built"
    )
    parser.add_argument("--expansion-add", type=int, default=sqlite_ann.EXPANSION_ADD)
    parser.add_argument(
        "--threshold",
        type=int,
        default=ON_THRESHOLD,
        help="the index backend's threshold (lower it for a small --n)",
    )
    parser.add_argument("--dir", default=None, help="memory directory (default: a temporary one)")
    args = parser.parse_args()
    sqlite_ann.EXPANSION_ADD = args.expansion_add
    directory = Path(args.dir or tempfile.mkdtemp(prefix="axon-sqlite-ann-"))
    data, asked = make_data(args.n, args.dim, args.queries + 1)
    embedder = QueryTable(asked)

    started = time.perf_counter()
    exact = SQLiteBackend(memory_dir=directory, embedder=embedder, ann_threshold=-1)
    await fill(exact, data, embedder.model_id)
    del data
    print(
        f"{args.n:,} entries of {args.dim} dimensions stored with their vectors in "
        f"{time.perf_counter() - started:.0f} s ({directory}); load {load()}",
        flush=True,
    )

    first, median, truth = await recalls(exact, args.queries + 1)
    await exact.close()
    print(
        f"exact scan (threshold off)  first {first:9.0f} ms  {median}  load {load()}",
        flush=True,
    )

    ann = SQLiteBackend(memory_dir=directory, embedder=embedder, ann_threshold=args.threshold)
    assert ann.ann is not None
    started = time.perf_counter()
    first, _, found = await recalls(ann, 1)
    building = ann.ann.building
    print(
        f"index missing: first      {first:9.0f} ms (exact scan; build started: {building}), "
        f"same top 10 as the exact scan: {found[0] == truth[0]}  load {load()}",
        flush=True,
    )
    if args.during:
        _, median, found = await recalls(ann, args.during, start=1)
        same = sum(f == t for f, t in zip(found, truth[1:], strict=False))
        print(
            f"while building ({args.during} recalls)  {median}  same top 10 as the exact "
            f"scan: {same}/{len(found)}  still building: {ann.ann.building}  load {load()}",
            flush=True,
        )
    ann.ann.wait()
    print(
        f"index ready {time.perf_counter() - started:.0f} s after the first recall "
        f"({ann.ann.stats}); load {load()}",
        flush=True,
    )
    first, median, found = await recalls(ann, args.queries + 1)
    print(
        f"HNSW index, built         first {first:9.0f} ms  {median}  "
        f"recall@10 {recall_at_10(found, truth):.3f}  {ann.ann.stats}  load {load()}",
        flush=True,
    )
    await ann.close()

    ann = SQLiteBackend(memory_dir=directory, embedder=embedder, ann_threshold=args.threshold)
    first, median, found = await recalls(ann, args.queries + 1)
    assert ann.ann is not None
    print(
        f"HNSW index, reopened      first {first:9.0f} ms  {median}  "
        f"recall@10 {recall_at_10(found, truth):.3f}  {ann.ann.stats}  load {load()}",
        flush=True,
    )
    await ann.close()
    sizes = {p.name: p.stat().st_size for p in directory.iterdir() if p.is_file()}
    print("files: " + ", ".join(f"{name} {size / 1e6:.0f} MB" for name, size in sizes.items()))


if __name__ == "__main__":
    asyncio.run(main())
