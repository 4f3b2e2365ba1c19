"""PostgreSQL keyword recall against a baseline checkout and SQLite: queries in, medians out.

Issue 15 item 2: PostgreSQL `keyword` recall at 100k entries within 2x SQLite's in
the same run, and the same top 10 as the baseline's ranking. Three worker
processes load the same entries: PostgreSQL with this checkout's code, PostgreSQL
with `--baseline`'s (another checkout, e.g. a `git worktree` of main; each in a
schema of its own, `--schema` plus `_new` / `_base`, dropped at the end) and
SQLite with this checkout's. Then every query goes to the three in turn (the
order rotating query by query, so all see the same machine load); each worker
times its own `retrieve` call, so the figures exclude the pipes. Printed: the
medians, the ratios, and on how many queries this checkout's top 10 (keys and
scores) equals the baseline's.

Two corpora (`--corpus`, default both):

- `postgres`: `benchmarks/postgres.py`'s texts (12-30 Zipf words from 20,000, no
  stop words, 90% of the entries in one scope) and queries (two words of a random
  stored text: frequent words are frequent);
- `sqlite`: `benchmarks/sqlite.py`'s texts (8-24 words, the most frequent being
  English stop words) and queries ("what about" and 2-4 words of a stored text),
  one scope.

    eval "$(scripts/pg env)"
    git worktree add --detach ../base main
    .venv/bin/python benchmarks/postgres_keyword.py --baseline ../base --n 100000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TOP_K = 10
BATCH = 5000


def corpus(name: str, n: int, queries: int) -> tuple[list[tuple[str, str, str]], list[str], str]:
    """(key, text, scope) of every entry, the queries, and the scope they ask."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    if name == "postgres":
        from postgres import make_texts

        rng = np.random.default_rng(1)
        texts = make_texts(n, rng)
        scopes = np.where(rng.random(n) < 0.9, "bench", "other")
        asked = [
            " ".join(rng.choice(texts[int(i)].split(), size=2, replace=False))
            for i in rng.choice(n, size=queries)
        ]
        return [(f"e{i}", texts[i], str(scopes[i])) for i in range(n)], asked, "bench"
    from sqlite import Corpus, keyword_queries

    made = Corpus()
    texts = []
    sample: list[str] = []
    for start in range(0, n, BATCH):  # as benchmarks/sqlite.py's `build` draws them
        chunk = made.texts(min(BATCH, n - start))
        if len(sample) < 5000:
            sample.extend(chunk[:50])
        texts.extend(chunk)
    asked = keyword_queries(sample, queries, random.Random(11))
    return [(f"turn-{i}", text, "Bench") for i, text in enumerate(texts)], asked, "Bench"


async def worker(kind: str, schema: str) -> None:
    """Answer the driver's commands (one JSON object per line) with this checkout's code."""
    from axon.memory.backend import MemoryBackend
    from axon.memory.entry import NewEntry

    backend: MemoryBackend | None = None
    tmp = tempfile.TemporaryDirectory()
    for line in sys.stdin:
        command = json.loads(line)
        reply: dict[str, Any] = {}
        if command["do"] == "load":
            entries, _, _ = corpus(command["corpus"], command["n"], 0)
            if kind == "sqlite":
                from axon.memory.backends.sqlite import SQLiteBackend

                backend = SQLiteBackend(location=f"{tmp.name}/{command['corpus']}.db")
            else:
                import psycopg

                from axon.memory.backends.postgres import PostgresBackend

                with psycopg.connect(os.environ["AXON_PG_DSN"], autocommit=True) as admin:
                    admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                backend = PostgresBackend(location=os.environ["AXON_PG_DSN"], schema=schema)
            items = [NewEntry(key, text, {"scope": scope}) for key, text, scope in entries]
            start = time.perf_counter()
            for low in range(0, len(items), BATCH):
                await backend.store_many(items[low : low + BATCH])
            reply["rate"] = len(items) / (time.perf_counter() - start)
            if kind != "sqlite":
                import psycopg

                with psycopg.connect(os.environ["AXON_PG_DSN"], autocommit=True) as admin:
                    admin.execute(f'VACUUM ANALYZE "{schema}".entries')
        elif command["do"] == "query":
            assert backend is not None
            start = time.perf_counter()
            found = await backend.retrieve(command["q"], TOP_K, command["scope"], mode="keyword")
            reply["seconds"] = time.perf_counter() - start
            reply["found"] = [(entry.key, entry.score) for entry in found]
        elif command["do"] == "close":
            if backend is not None:
                await backend.close()
            backend = None
            if kind != "sqlite":
                import psycopg

                with psycopg.connect(os.environ["AXON_PG_DSN"], autocommit=True) as admin:
                    admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        print(json.dumps(reply), flush=True)
    tmp.cleanup()


class Worker:
    """A worker process: `kind` (`pg` or `sqlite`) with `code`'s `axon` first on the path."""

    def __init__(self, name: str, kind: str, code: Path, schema: str) -> None:
        self.name = name
        env = dict(os.environ, PYTHONPATH=str(code))
        command = [sys.executable, __file__, "--worker", kind, "--schema", schema]
        self.process = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def send(self, **command: Any) -> None:
        stdin: IO[str] | None = self.process.stdin
        assert stdin is not None
        stdin.write(json.dumps(command) + "\n")
        stdin.flush()

    def receive(self) -> dict[str, Any]:
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        line = stdout.readline()
        if not line:
            raise SystemExit(f"worker {self.name} stopped")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def ask(self, **command: Any) -> dict[str, Any]:
        self.send(**command)
        return self.receive()

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000.0


def drive(args: argparse.Namespace) -> None:
    workers = [Worker("new", "pg", ROOT, f"{args.schema}_new")]
    if args.baseline is not None:
        workers.append(Worker("base", "pg", args.baseline.resolve(), f"{args.schema}_base"))
    workers.append(Worker("sqlite", "sqlite", ROOT, ""))
    try:
        for name in args.corpus.split(","):
            _, queries, scope = corpus(name, args.n, args.queries)
            for w in workers:  # loaded together: each load takes minutes
                w.send(do="load", corpus=name, n=args.n)
            rates = {w.name: w.receive()["rate"] for w in workers}
            print(
                f"{name} corpus, {args.n:,} entries loaded (store_many({BATCH}), concurrently): "
                + ", ".join(f"{k} {v:,.0f}/s" for k, v in rates.items())
            )
            for warm in queries[:3]:
                for w in workers:
                    w.ask(do="query", q=warm, scope=scope)
            seconds: dict[str, list[float]] = {w.name: [] for w in workers}
            same = 0
            load = os.getloadavg()[0]
            for i, query in enumerate(queries):
                found = {}
                for w in workers[i % len(workers) :] + workers[: i % len(workers)]:
                    reply = w.ask(do="query", q=query, scope=scope)
                    seconds[w.name].append(reply["seconds"])
                    found[w.name] = reply["found"]
                same += "base" in found and found["new"] == found["base"]
            medians = {k: median_ms(v) for k, v in seconds.items()}
            line = ", ".join(f"{k} {v:.2f} ms" for k, v in medians.items())
            ratios = f"new / sqlite {medians['new'] / medians['sqlite']:.2f}x"
            if "base" in medians:
                ratios += (
                    f", new / base {medians['new'] / medians['base']:.2f}x, same top {TOP_K} "
                    f"(keys and scores) as base: {same}/{len(queries)}"
                )
            print(f"  keyword recall medians, {len(queries)} queries: {line}; {ratios}")
            print(f"  load {load:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
            for w in workers:
                w.ask(do="close")
    finally:
        for w in workers:
            w.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--corpus", default="postgres,sqlite", help="postgres, sqlite or both")
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with")
    parser.add_argument("--schema", default="axon_bench_kw", help="PostgreSQL schema prefix")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(worker(args.worker, args.schema))
    else:
        drive(args)


if __name__ == "__main__":
    main()
