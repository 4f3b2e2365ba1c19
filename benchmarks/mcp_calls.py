"""`axon mcp`: the cost of one `memory` tool call over the handle call it wraps.

Over the default `AgentMemory` (SQLite, hybrid retrieval, the hashing embedder so
no model is loaded) in a temporary directory, each of N rounds makes one write and
one search three ways, in turn (so a change of load hits each alike):

- `handle`: `AsyncMemoryHandle.remember` / `.recall` (the baseline: what the tool calls);
- `in-process`: the SDK's `Client` connected to the server object;
- `stdio`: the SDK's stdio client talking to an `axon mcp` subprocess.

Prints the median and the 90th percentile per call, in milliseconds.

    .venv/bin/python benchmarks/mcp_calls.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from axon.mcp_server.server import build_server
from axon.mcp_server.target import open_tool

ROOT = Path(__file__).resolve().parent.parent


async def timed(samples: list[float], work: Awaitable[Any]) -> None:
    """Await `work` (a coroutine: it starts running only here) and record its time."""
    start = time.perf_counter()
    result = await work
    samples.append((time.perf_counter() - start) * 1000)
    if getattr(result, "is_error", False):
        raise SystemExit(f"a call failed: {result.content}")


def line(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[int(len(ordered) * 0.9) - 1]
    return f"{name:<22} median {statistics.median(ordered):7.2f} ms   p90 {p90:7.2f} ms"


async def main(rounds: int) -> None:
    os.environ["AXON_EMBEDDER"] = "hashing"
    with tempfile.TemporaryDirectory() as tmp:
        handle_dir, inproc_dir, stdio_dir = (Path(tmp) / n for n in ("h", "i", "s"))
        base = await open_tool(memory_dir=handle_dir)
        inproc = await open_tool(memory_dir=inproc_dir)
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "axon.cli", "mcp", "--memory-dir", str(stdio_dir)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        samples: dict[str, list[float]] = {}
        try:
            async with Client(build_server(inproc)) as client, Client(params) as remote:
                for i in range(rounds):
                    text = f"note {i}: the deploy of service {i % 17} failed on a timeout"
                    args = {"action": "write", "name": f"note_{i}", "content": text}
                    query = {"action": "search", "query": f"service {i % 17} timeout"}
                    await timed(samples.setdefault("handle write", []),
                                base.handle.remember(text, key=f"note_{i}", type="long_term"))
                    await timed(samples.setdefault("in-process write", []),
                                client.call_tool("memory", args))
                    await timed(samples.setdefault("stdio write", []),
                                remote.call_tool("memory", args))
                    await timed(samples.setdefault("handle search", []),
                                base.handle.recall(query["query"], top_k=10))
                    await timed(samples.setdefault("in-process search", []),
                                client.call_tool("memory", query))
                    await timed(samples.setdefault("stdio search", []),
                                remote.call_tool("memory", query))
        finally:
            await base.session.close()
            await inproc.session.close()
    print(f"{rounds} rounds, each store ending with {rounds} entries")
    for name, values in samples.items():
        print(line(name, values))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    asyncio.run(main(parser.parse_args().rounds))
