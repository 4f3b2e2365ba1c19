"""Export and import throughput (entries/s) and peak memory, SQLite and PostgreSQL.

    PYTHONPATH=. python benchmarks/transfer.py [--entries 100000] [--no-postgres]
        [--with-vectors]

Fills a store with N entries (about 200 bytes of text each, in batches of 1,000),
exports it to a file with `axon.memory.transfer`, and imports the file into a fresh
store of the same kind. `--with-vectors` gives every entry a stored 384-dimensional
vector (random unit vectors written with `write_vectors`, tagged with the store's
model, so no model runs), exports them (`with_vectors=True`) and imports them into a
store with the same model (kept, nothing embedded: the report's `vectors_kept`).
Each phase runs in its own child process, so its peak RSS
(`ru_maxrss`) is its own; "RSS growth" is that peak minus the RSS after imports.
PostgreSQL uses `AXON_PG_DSN` and a throwaway schema.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DIM = 384


def _open(kind: str, where: str, vectors: bool) -> Any:
    from axon.memory.embeddings.hashing import HashingEmbedder
    from axon.memory.registry import registry

    model = HashingEmbedder(DIM) if vectors else None
    if kind == "sqlite":
        return registry.create("sqlite", memory_dir=where, embedder=model)
    return registry.create(
        "pgvector", location=os.environ["AXON_PG_DSN"], schema=where, embedder=model
    )


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _phase(
    phase: str, kind: str, where: str, path: str, entries: int, vectors: bool
) -> dict[str, Any]:
    from axon.memory.entry import NewEntry
    from axon.memory.transfer import export_memories, import_memories, read_lines

    backend = _open(kind, where, vectors)
    base = _rss_mb()
    started = time.perf_counter()
    kept = 0
    if phase == "fill":
        import numpy as np

        rng = np.random.default_rng(7)
        for start in range(0, entries, 1000):
            stored = await backend.store_many(
                [NewEntry(f"key{i}", f"entry {i} " + "lorem ipsum dolor " * 11,
                          {"scope": "Bench", "n": i}) for i in range(start, start + 1000)]
            )
            if vectors:
                matrix = rng.standard_normal((len(stored), DIM)).astype(np.float32)
                matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
                await backend.write_vectors(
                    "Bench", backend.embedder.model_id,
                    [(e.key, matrix[i]) for i, e in enumerate(stored)],
                )
        started = time.perf_counter()  # fill time is not reported
    elif phase == "export":
        with open(path, "w", encoding="utf-8") as out:
            report = await export_memories(backend, out, with_vectors=vectors)
        kept = report.vectors_kept
    else:
        with open(path, encoding="utf-8") as handle:
            report = await import_memories(backend, read_lines(handle, path))
        kept = report.vectors_kept
    seconds = time.perf_counter() - started
    count = await backend.count()
    await backend.close()
    return {"seconds": seconds, "count": count, "rss_base_mb": base, "rss_peak_mb": _rss_mb(),
            "vectors": kept}


def _child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--child", *args], capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--with-vectors", action="store_true")
    parser.add_argument("--child", nargs=6)
    args = parser.parse_args()
    if args.child:
        phase, kind, where, path, entries, vectors = args.child
        print(json.dumps(asyncio.run(
            _phase(phase, kind, where, path, int(entries), vectors == "1")
        )))
        return
    vec = "1" if args.with_vectors else "0"
    kinds = ["sqlite"] + ([] if args.no_postgres or not os.environ.get("AXON_PG_DSN") else
                          ["pgvector"])
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "export.jsonl")
        for kind in kinds:
            tag = secrets.token_hex(3)
            source = str(Path(tmp) / f"a{tag}") if kind == "sqlite" else f"axon_bench_a{tag}"
            target = str(Path(tmp) / f"b{tag}") if kind == "sqlite" else f"axon_bench_b{tag}"
            n = str(args.entries)
            try:
                _child(["fill", kind, source, path, n, vec])
                exported = _child(["export", kind, source, path, n, vec])
                size = os.path.getsize(path) / 1e6
                imported = _child(["import", kind, target, path, n, vec])
            finally:
                if kind == "pgvector":
                    import psycopg

                    with psycopg.connect(os.environ["AXON_PG_DSN"], autocommit=True) as conn:
                        for schema in (source, target):
                            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            assert imported["count"] == args.entries, imported
            if args.with_vectors:
                assert exported["vectors"] == imported["vectors"] == args.entries
            for name, result in (("export", exported), ("import", imported)):
                rate = args.entries / result["seconds"]
                growth = result["rss_peak_mb"] - result["rss_base_mb"]
                print(
                    f"{kind:8} {name}: {args.entries:,} entries in {result['seconds']:.2f} s "
                    f"= {rate:,.0f} entries/s; peak RSS {result['rss_peak_mb']:.0f} MB "
                    f"(+{growth:.0f} MB over the opened store); file {size:.1f} MB"
                    + (f"; {result['vectors']:,} vectors" if args.with_vectors else "")
                )


if __name__ == "__main__":
    main()
