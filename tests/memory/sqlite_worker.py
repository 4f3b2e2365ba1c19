"""A child process for the SQLite backend's process tests: a command line in, JSON lines out.

Usage: `python sqlite_worker.py MODE MEMORY_DIR [ARGS...]`

- `stream PREFIX`: stores `PREFIX-0`, `PREFIX-1`, ... forever (every third step a batch
  of three through `store_many`) and prints each key once its store has returned.
- `hammer WORKER N`: waits for a line on stdin, then stores N entries
  `wWORKER-i`, recalling (keyword, exact, count) every 10 writes; prints one JSON
  summary line with any errors seen, and exits 1 if there were any.
- `write KEY JSON` / `recall QUERY MODE`: one store, or one recall printed as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback

from axon.memory.backends.sqlite import SQLiteBackend
from axon.memory.entry import NewEntry

SCOPE = "Shared"


def _value(key: str) -> dict[str, object]:
    return {"key": key, "text": f"note about {key} and apples", "n": len(key)}


async def stream(backend: SQLiteBackend, prefix: str) -> None:
    i = 0
    while True:
        if i % 3 == 0:
            keys = [f"{prefix}-{i + j}" for j in range(3)]
            await backend.store_many([NewEntry(k, _value(k), {"scope": SCOPE}) for k in keys])
            i += 3
        else:
            keys = [f"{prefix}-{i}"]
            await backend.store(keys[0], _value(keys[0]), {"scope": SCOPE})
            i += 1
        sys.stdout.write("".join(k + "\n" for k in keys))
        sys.stdout.flush()


async def hammer(backend: SQLiteBackend, worker: str, n: int) -> int:
    print("ready", flush=True)
    sys.stdin.readline()
    errors: list[str] = []
    recalls = 0
    for i in range(n):
        key = f"w{worker}-{i}"
        try:
            await backend.store(key, _value(key), {"scope": SCOPE, "worker": worker})
            if i % 10 == 9:
                await backend.retrieve("apples note", 5, SCOPE, mode="keyword")
                await backend.retrieve(key, 3, SCOPE, mode="exact")
                await backend.count(SCOPE)
                recalls += 3
        except Exception:
            errors.append(traceback.format_exc())
    print(json.dumps({"worker": worker, "writes": n, "recalls": recalls, "errors": errors}))
    return 1 if errors else 0


async def main(argv: list[str]) -> int:
    mode, memory_dir, *args = argv
    backend = SQLiteBackend(memory_dir=memory_dir)
    try:
        if mode == "stream":
            await stream(backend, args[0])
        elif mode == "hammer":
            return await hammer(backend, args[0], int(args[1]))
        elif mode == "write":
            await backend.store(args[0], json.loads(args[1]), {"scope": SCOPE})
        elif mode == "recall":
            found = await backend.retrieve(args[0], 5, SCOPE, mode=args[1])
            print(json.dumps([entry.to_dict() for entry in found]))
        else:
            raise SystemExit(f"unknown mode {mode}")
    finally:
        await backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
