"""A running event loop -> its longest stall: `Ticker`, for tests that a coroutine never
blocks the loop."""

from __future__ import annotations

import asyncio
import contextlib
import time

STALL_LIMIT = 0.5
"""Seconds: loose, machines are noisy; a loop blocked by the work stalls for all of it."""


class Ticker:
    """Sleeps 1 ms in a loop and records the longest gap between wake-ups (a stall)."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.ticks = 0
        self._last = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            self.longest = max(self.longest, now - self._last)
            self.ticks += 1
            self._last = now

    async def __aenter__(self) -> Ticker:
        self._last = time.perf_counter()
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        # The gap up to now counts too (a loop blocked until the end never woke the ticker).
        self.longest = max(self.longest, time.perf_counter() - self._last)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
