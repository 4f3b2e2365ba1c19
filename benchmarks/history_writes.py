"""The cost of `history: all` on the write rate (issue 29 item 3): `--n` updates of one
SQLite memory with no history and of the same memory declared `history: all`, in the
same run, updates/s of each and their ratio.

Each round makes a fresh SQLite file per variant, remembers `--keys` entries (not
timed), then times `--n` `handle.update(key, value=...)` calls spread over those keys
(so `history: all` keeps `n / keys` versions of each at the end); the order of the two
variants alternates between rounds. The memory is `retrieval: keyword`, so no
embedding model runs. Medians of `--repeats` rounds are printed, and the history
variant's check that every update was recorded.

    .venv/bin/python benchmarks/history_writes.py                 # 10,000 updates, 3 rounds
    .venv/bin/python benchmarks/history_writes.py --n 500 --repeats 1   # a quick check
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import axon

DECL = "memory Bench {{ store: persistent backend: sqlite retrieval: keyword {extra}}}"


def rate(history: bool, n: int, keys: int) -> float:
    """Updates/s of `n` updates over `keys` entries, with or without `history: all`."""
    extra = "history: all " if history else ""
    with tempfile.TemporaryDirectory() as tmp, axon.Session(memory_dir=tmp) as session:
        session.execute(DECL.format(extra=extra))
        bench = session.memory("Bench")
        bench.remember_many(
            [{"value": f"entry {k} about the quarterly budget", "key": f"k{k}"}
             for k in range(keys)]
        )
        started = time.perf_counter()
        for i in range(n):
            bench.update(f"k{i % keys}", value=f"entry {i % keys} revised {i}")
        elapsed = time.perf_counter() - started
        if history:
            versions = bench.history("k0")
            expected = 1 + len(range(0, n, keys))
            assert len(versions) == expected, (len(versions), expected)
        assert bench.count() == keys
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="updates per variant")
    parser.add_argument("--keys", type=int, default=1_000, help="entries updated")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    plain: list[float] = []
    kept: list[float] = []
    for round_ in range(args.repeats):
        order = (False, True) if round_ % 2 == 0 else (True, False)
        for history in order:
            (kept if history else plain).append(rate(history, args.n, args.keys))
    p, k = statistics.median(plain), statistics.median(kept)
    print(f"{args.n:,} updates over {args.keys:,} SQLite entries, {args.repeats} rounds "
          "(medians)")
    print(f"  no history      {p:10,.0f} updates/s")
    print(f"  history: all    {k:10,.0f} updates/s")
    print(f"  history / none  {k / p:10.2f}x the rate")


if __name__ == "__main__":
    main()
