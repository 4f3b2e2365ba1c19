"""A child process racing on one entry: role, memory directory, backend in; JSON out.

Usage: `python association_worker.py ROLE MEMORY_DIR BACKEND PG_SCHEMA SECONDS`.
`writer` replaces entry `T` of memory `Notes` with "value 1", "value 2", ... and,
before each write, reads `T` back: its value must be the writer's last (it is the
only one writing values), else a revert is counted. `linker` associates new entries
with `T` (by `related` on remember, or by `associate`) and deletes every other one
(which unlinks it). The linker runs for SECONDS and at least MIN_LINKS rounds (a
loaded machine must not shrink the race to nothing), then leaves a `linker-done` file;
the writer runs until it sees that file, so the two overlap for the linker's whole
run. Each then prints one JSON line: the writer its last value, its write count and
the reverts it saw, the linker the keys it left linked.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import axon

MIN_LINKS = 30
CAP_SECONDS = 45.0


def main() -> None:
    role, memory_dir, backend, schema, seconds = sys.argv[1:6]
    pg = {"pg_dsn": os.environ["AXON_PG_DSN"], "pg_schema": schema} if backend == "pgvector" else {}
    with axon.Session(memory_dir=memory_dir, **pg) as session:
        session.execute(f"memory Notes {{ store: persistent backend: {backend} }}")
        notes = session.memory("Notes")
        started = time.monotonic()
        deadline = started + float(seconds)
        done = Path(memory_dir) / "linker-done"
        if role == "writer":
            last, reverts = 0, []
            while not done.exists() and time.monotonic() < started + CAP_SECONDS:
                got = notes.get("T")
                seen = None if got is None else got.value
                if seen != f"value {last}":
                    reverts.append([last, seen])
                last += 1
                notes.remember(f"value {last}", key="T")
            print(
                json.dumps({"last": f"value {last}", "writes": last, "reverts": reverts}),
                flush=True,
            )
            return
        alive: list[str] = []
        n = 0
        while (time.monotonic() < deadline or n < MIN_LINKS) and (
            time.monotonic() < started + CAP_SECONDS
        ):
            n += 1
            key = f"{os.getpid()}-{n}"
            if n % 2:
                notes.remember(f"linked {n}", key=key, related=["T"])
            else:
                notes.remember(f"linked {n}", key=key)
                notes.associate(key, "T")
            if n % 3 == 0:
                notes.delete(key)
            else:
                alive.append(key)
        done.touch()
        print(json.dumps({"alive": alive, "count": n}), flush=True)


if __name__ == "__main__":
    main()
