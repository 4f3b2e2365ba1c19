"""AXON Studio's server time per route: a SQLite store of `--n` entries in, the median
milliseconds of each page and API route out (the target: at most 100 ms at 100,000).

The store holds `Notes` (`--n` entries: tags, importance, type, metadata, one in 50
expiring within a day; loaded with `store_many`, 1,000 a batch) and `Small` (100
entries); the trace file given to Studio holds 2,000 events. Each route is asked
`--repeat` times through starlette's TestClient (the whole ASGI app in process: token
gate, routing, the handler, the page) after 3 warm-up calls, once the overview's
background walk (bytes, expiring soon) has finished. Searches are keyword unless
`--mode` says otherwise (hybrid needs every vector computed first: `axon memory embed`).

    PYTHONPATH=. .venv/bin/python benchmarks/studio.py --n 100000
    PYTHONPATH=. .venv/bin/python benchmarks/studio.py --n 2000 --repeat 5   # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

WORDS = (
    "garden", "tomato", "kitchen", "recipe", "contract", "clause", "renewal", "invoice",
    "meeting", "travel", "budget", "report", "design", "review", "launch", "customer",
    "support", "billing",
)


async def fill(memory_dir: Path, n: int) -> None:
    from axon.memory.entry import NewEntry
    from axon.memory.registry import registry

    backend = registry.create("sqlite", memory_dir=memory_dir)
    now = time.time()
    try:
        for scope, count in (("Notes", n), ("Small", 100)):
            for start in range(0, count, 1000):
                batch = []
                for i in range(start, min(count, start + 1000)):
                    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7, 11))
                    batch.append(NewEntry(
                        f"{scope.lower()}-{i:06d}",
                        f"entry {i}: {words}",
                        {"scope": scope, "tags": [f"t{i % 7}"], "importance": (i % 10) / 10,
                         "type": "long_term", "topic": WORDS[i % len(WORDS)]},
                        expires_at=now + 3600 if i % 50 == 0 else None,
                        timestamp=now - (count - i),
                    ))
                await backend.store_many(batch)
    finally:
        await backend.close()


def trace_file(path: Path) -> Path:
    events = [
        {"event_type": ("memory_write", "memory_read")[i % 2], "timestamp": 1.0 + i / 100,
         "duration_ms": 0.5 + i % 7, "data": {"memory": ("Notes", "Small")[i % 3 == 0],
                                               "key": f"k{i}"}}
        for i in range(2000)
    ]
    path.write_text(json.dumps({"events": events}))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--mode", default="keyword")
    args = parser.parse_args()

    from starlette.testclient import TestClient

    from axon.studio.app import Studio, build_app
    from axon.studio.data import StudioData

    with tempfile.TemporaryDirectory() as tmp:
        memory_dir = Path(tmp) / "store"
        start = time.perf_counter()
        asyncio.run(fill(memory_dir, args.n))
        print(f"{args.n:,} entries stored in {time.perf_counter() - start:.1f} s")
        data = StudioData(memory_dir=memory_dir)
        studio = Studio(data, [trace_file(Path(tmp) / "trace.json")], token="t")
        client = TestClient(build_app(studio))
        client.get("/?token=t")
        data.summaries.wait(timeout=600)
        middle = client.get("/api/entries", params={"memory": "Notes", "limit": "50"}).json()
        for _ in range(args.n // 100):  # a cursor half-way down the memory
            after = middle["next"]
            if after is None:
                break
            middle = client.get("/api/entries", params={"memory": "Notes", "limit": "50",
                                                        "after": after}).json()
        deep = middle["next"] or ""
        key = f"notes-{args.n // 2:06d}"
        routes: list[tuple[str, dict[str, Any]]] = [
            ("/", {}),
            ("/memory", {"name": "Notes"}),
            ("/memory", {"name": "Notes", "after": deep}),
            ("/memory", {"name": "Notes", "tag": "t3"}),
            ("/memory", {"name": "Notes", "min_importance": "0.9", "where": "topic=garden"}),
            ("/entry", {"memory": "Notes", "key": key}),
            ("/search", {"memory": "Notes", "q": "contract renewal", "mode": args.mode}),
            ("/stats", {}),
            ("/trace", {"file": "0"}),
            ("/trace", {"file": "0", "memory": "Small", "operation": "memory_read"}),
            ("/api/memories", {}),
            ("/api/entries", {"memory": "Notes", "after": deep}),
            ("/api/search", {"memory": "Notes", "q": "contract renewal", "mode": args.mode}),
        ]
        print(f"load average: {os.getloadavg()[0]:.1f}")
        print("| route | median ms | max ms |")
        print("|---|---:|---:|")
        for path, query in routes:
            for _ in range(3):
                client.get(path, params=query)
            times = []
            for _ in range(args.repeat):
                begin = time.perf_counter()
                response = client.get(path, params=query)
                times.append((time.perf_counter() - begin) * 1000)
                assert response.status_code == 200, (path, query, response.text[:300])
            shown = path + ("?" + "&".join(f"{k}={v[:12]}" for k, v in query.items())
                            if query else "")
            print(f"| {shown} | {statistics.median(times):.1f} | {max(times):.1f} |")
        data.close()


if __name__ == "__main__":
    main()
