"""Event-loop stall: 1,000 concurrent AsyncSession recalls on SQLite vs a sync Session.

A ticker coroutine sleeps 1 ms in a loop and records the longest gap between its
wake-ups: how long the event loop could not run anything else. Two runs over the
same SQLite memory (`--entries` keyword entries written through the handle):

- `AsyncSession`: `asyncio.gather` of `--recalls` `await notes.recall(...)`; the
  work runs on the session's threads, so the loop should stay free (target: the
  largest stall under 50 ms);
- the synchronous `Session` called in a loop from a coroutine (what an async
  application does without AsyncSession): every call blocks the loop, and the
  whole loop of calls does unless the coroutine yields between calls (a second
  row); a third row hands the sync calls to `asyncio.to_thread`.

Each run reports the wall time, recalls per second and the largest and 99th
percentile gap. Results of the two runs are compared (same keys, same scores).

Usage: `.venv/bin/python benchmarks/async_session.py` (1,000 recalls over 5,000
entries), `--recalls N`, `--entries N`, `--top-k N`, `--dir PATH` (keep the files),
`--runs N` (repeat every measurement N times, alternating, and print the medians:
the machine is shared and one run says little).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import axon

DECL = "memory Notes { store: persistent backend: sqlite retrieval: keyword }"
WORDS = (
    "budget", "roadmap", "design", "review", "friday", "deploy", "freeze", "lunch", "client",
    "answer", "short", "long", "meeting", "moved", "approved", "tight", "draft", "launch",
    "metrics", "latency", "storage", "vector", "search", "travel", "invoice", "contract",
    "renewal", "onboarding", "hiring", "quarter", "planning", "retro", "sprint",
)


class Ticker:
    """Sleeps 1 ms in a loop; keeps every gap between wake-ups (the last one included)."""

    def __init__(self) -> None:
        self.gaps: list[float] = []
        self._last = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.gaps.append(now - self._last)
            self._last = now

    async def __aenter__(self) -> Ticker:
        self._last = time.perf_counter()
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self.gaps.append(time.perf_counter() - self._last)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    @property
    def longest_ms(self) -> float:
        return max(self.gaps) * 1000

    @property
    def p99_ms(self) -> float:
        if len(self.gaps) < 2:
            return self.longest_ms
        return statistics.quantiles(self.gaps, n=100)[98] * 1000


def texts(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=8)) + f" item{i}" for i in range(count)]


def queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.sample(WORDS, 2)) for _ in range(count)]


async def measure(
    label: str, run: Callable[[], Awaitable[list[Any]]], recalls: int
) -> tuple[list[Any], dict[str, float]]:
    started = time.perf_counter()
    async with Ticker() as ticker:
        results = await run()
    wall = time.perf_counter() - started
    figures = {
        "wall_s": wall,
        "recalls_per_s": recalls / wall,
        "stall_max_ms": ticker.longest_ms,
        "stall_p99_ms": ticker.p99_ms,
    }
    print(
        f"{label:<34} {wall:7.2f} s  {recalls / wall:8.0f} recalls/s  "
        f"largest stall {ticker.longest_ms:8.1f} ms  p99 gap {ticker.p99_ms:6.1f} ms"
    )
    return results, figures


async def main_async(args: argparse.Namespace, memory_dir: Path) -> None:
    with axon.Session(memory_dir=memory_dir) as setup:
        setup.execute(DECL)
        notes = setup.memory("Notes")
        if notes.count() < args.entries:
            for i, text in enumerate(texts(args.entries)):
                notes.remember(text, key=f"n{i}")
    asked = queries(args.recalls)
    print(f"{args.recalls} recalls (top {args.top_k}, keyword) over {args.entries} SQLite entries")
    runs: dict[str, list[dict[str, float]]] = {}
    for _ in range(args.runs):
        await one_run(args, memory_dir, asked, runs)
    if args.runs > 1:
        print(f"\nmedians of {args.runs} runs:")
        for label, figures in runs.items():
            stalls = ", ".join(f"{f['stall_max_ms']:.0f}" for f in figures)
            print(
                f"{label:<34} {statistics.median(f['wall_s'] for f in figures):7.2f} s  "
                f"{statistics.median(f['recalls_per_s'] for f in figures):8.0f} recalls/s  "
                f"largest stall {statistics.median(f['stall_max_ms'] for f in figures):8.1f} ms"
                f"  p99 gap {statistics.median(f['stall_p99_ms'] for f in figures):6.1f} ms"
                f"  (largest stalls, ms: {stalls})"
            )


async def one_run(
    args: argparse.Namespace,
    memory_dir: Path,
    asked: list[str],
    runs: dict[str, list[dict[str, float]]],
) -> None:
    async def measure_into(
        label: str, run: Callable[[], Awaitable[list[Any]]]
    ) -> list[Any]:
        results, figures = await measure(label, run, args.recalls)
        runs.setdefault(label, []).append(figures)
        return results

    async with axon.AsyncSession(memory_dir=memory_dir) as session:
        await session.execute(DECL)
        handle = session.memory("Notes")
        await handle.recall(asked[0], top_k=args.top_k)  # warm: open the file, first query

        async def concurrent() -> list[Any]:
            return list(await asyncio.gather(*(handle.recall(q, top_k=args.top_k)
                                               for q in asked)))

        async_results = await measure_into("AsyncSession, asyncio.gather", concurrent)

    with axon.Session(memory_dir=memory_dir) as sync:
        sync.execute(DECL)
        sync_handle = sync.memory("Notes")
        sync_handle.recall(asked[0], top_k=args.top_k)

        async def blocking() -> list[Any]:
            return [sync_handle.recall(q, top_k=args.top_k) for q in asked]

        sync_results = await measure_into("Session in a loop, from a coroutine", blocking)

        async def yielding() -> list[Any]:
            out = []
            for q in asked:
                out.append(sync_handle.recall(q, top_k=args.top_k))
                await asyncio.sleep(0)  # a polite coroutine yields between calls
            return out

        await measure_into("  the same, yielding between calls", yielding)

        async def to_thread() -> list[Any]:
            return list(await asyncio.gather(
                *(asyncio.to_thread(sync_handle.recall, q, top_k=args.top_k) for q in asked)
            ))

        await measure_into("Session via asyncio.to_thread", to_thread)

    same = [[(r.key, r.score) for r in rs] for rs in async_results] == [
        [(r.key, r.score) for r in rs] for rs in sync_results
    ]
    print(f"same results from both sessions: {same}")
    if not same:
        raise SystemExit("the async and sync sessions disagree")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recalls", type=int, default=1000)
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--dir", type=Path, default=None, help="keep the memory here")
    args = parser.parse_args()
    memory_dir = args.dir or Path(tempfile.mkdtemp(prefix="axon-async-bench-"))
    try:
        asyncio.run(main_async(args, memory_dir))
    finally:
        if args.dir is None:
            shutil.rmtree(memory_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
