"""remember_many (issue 29 item 7): N items in, entries/s of `handle.remember_many` and of a
loop of `handle.remember` on SQLite, and their ratio, out (same run, same machine load).

Each round writes the same `--n` items (short texts with tags, importance and a free
metadata field, half with a key, half with the key derived from the value) through a
`Session` into a fresh SQLite file: once as one `remember_many(items)` call, once as a
loop of `remember(**item)`; the order of the two alternates between rounds. The memory
is `retrieval: keyword`, so no embedding model runs. Medians of `--repeats` rounds and
the ratio are printed; the target is at least 5x on 10,000 items.

    .venv/bin/python benchmarks/remember_many.py                  # 10,000 items, 3 rounds
    .venv/bin/python benchmarks/remember_many.py --n 500 --repeats 1   # a quick check
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import axon

MEMORY = "memory Bench { store: persistent backend: sqlite retrieval: keyword }"

WORDS = (
    "budget", "garden", "roof", "client", "answers", "pool", "meeting", "invoice", "travel",
    "oslo", "paint", "water", "launch", "apollo", "contract", "summary", "review", "draft",
    "schedule", "report",
)


def make_items(n: int) -> list[dict[str, Any]]:
    """`n` items of `remember_many`, the same every run."""
    items: list[dict[str, Any]] = []
    for i in range(n):
        text = " ".join(WORDS[(i * k + k) % len(WORDS)] for k in range(1, 9)) + f" #{i}"
        item: dict[str, Any] = {
            "value": text,
            "tags": [WORDS[i % len(WORDS)]],
            "importance": (i % 10) / 10,
            "metadata": {"n": i},
        }
        if i % 2 == 0:
            item["key"] = f"item-{i}"
        items.append(item)
    return items


def timed(write: Callable[[Any, list[dict[str, Any]]], None], items: list[dict[str, Any]]) -> float:
    """Entries/s of `write(handle, items)` into a fresh SQLite file (the session's
    opening and closing not timed); checks every item was stored."""
    with tempfile.TemporaryDirectory() as tmp, axon.Session(memory_dir=tmp) as session:
        session.execute(MEMORY)
        handle = session.memory("Bench")
        started = time.perf_counter()
        write(handle, items)
        elapsed = time.perf_counter() - started
        assert handle.count() == len(items), "not every item was stored"
    return len(items) / elapsed


def batched(handle: Any, items: list[dict[str, Any]]) -> None:
    handle.remember_many(items)


def looped(handle: Any, items: list[dict[str, Any]]) -> None:
    for item in items:
        handle.remember(item["value"], **{k: v for k, v in item.items() if k != "value"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="items per write (10,000)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds (3)")
    args = parser.parse_args()
    items = make_items(args.n)
    rates: dict[str, list[float]] = {"remember_many": [], "loop of remember": []}
    for round_ in range(args.repeats):
        order = [("remember_many", batched), ("loop of remember", looped)]
        for name, write in order if round_ % 2 == 0 else order[::-1]:
            rates[name].append(timed(write, items))
    many = statistics.median(rates["remember_many"])
    loop = statistics.median(rates["loop of remember"])
    print(f"SQLite, {args.n:,} items, median of {args.repeats} round(s):")
    print(f"  remember_many     {many:>12,.0f} entries/s")
    print(f"  loop of remember  {loop:>12,.0f} entries/s")
    print(f"  ratio             {many / loop:>12.1f}x (target >= 5x)")


if __name__ == "__main__":
    main()
