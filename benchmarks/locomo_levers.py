"""Every hybrid lever of a linked memory, one at a time: LoCoMo recall@5 with and without it.

For each lever (a `HybridWeights` field set to 0, or another value), the LoCoMo
benchmark (`benchmarks/locomo.py`, default mode, in-memory) runs once linked and
once unlinked, and the change in recall@5 against the defaults is given with a
95% paired bootstrap interval over questions (resampling questions, each counted
with its evidence turns, 2,000 resamples, fixed seed); "change" is what recall@5
does without the lever (the run without it minus the defaults). The linked-only
levers never touch a memory of independent notes; `benchmarks/notes.py --weight
semantic=0.4` gives the
notes figure of the unlinked weighting before. `--only` splits the conversations
(e.g. tune on 26,30, report 41,42,43).

    PYTHONPATH=. .venv/bin/python benchmarks/locomo_levers.py --cache /tmp/vcache
    PYTHONPATH=. .venv/bin/python benchmarks/locomo_levers.py --cache /tmp/vcache --only 41,42,43
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import locomo  # noqa: E402

LEVERS: dict[str, list[str]] = {
    "defaults": [],
    "no learned ranker": ["learned=0"],
    "no neighbour": ["neighbour=0"],
    "no episode": ["episode=0"],
    "no when": ["when=0"],
    "no mention": ["mention=0"],
    "no linked levers": ["learned=0", "neighbour=0", "episode=0", "when=0"],
    "semantic 0.4 unlinked (before)": ["semantic=0.4"],
}


def paired_interval(
    new: Sequence[tuple[int, int]], old: Sequence[tuple[int, int]], *, rounds: int = 2000
) -> tuple[float, float, float]:
    """recall(new) - recall(old) and its 95% bootstrap interval, questions resampled in pairs."""
    size = len(new)
    rng = random.Random(16)

    def gain(sample: Sequence[int]) -> float:
        evidence = sum(new[i][1] for i in sample) or 1
        return (sum(new[i][0] for i in sample) - sum(old[i][0] for i in sample)) / evidence

    whole = gain(range(size))
    draws = sorted(gain([rng.randrange(size) for _ in range(size)]) for _ in range(rounds))
    return whole, draws[int(0.025 * rounds)], draws[int(0.975 * rounds) - 1]


async def measure(base: list[str], weights: list[str], unlinked: bool) -> dict[str, Any]:
    args = locomo.build_parser().parse_args(
        [*base, "--modes", "default", *(["--unlinked"] if unlinked else [])]
        + [item for weight in weights for item in ("--weight", weight)]
    )
    return await locomo.run(args)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=None, help="keep passage vectors in DIR")
    parser.add_argument("--only", default=None, help="comma-separated conversation names")
    parser.add_argument("--backend", default="in_memory", choices=["in_memory", "sqlite"])
    args = parser.parse_args(argv)
    base = ["--backend", args.backend]
    if args.cache:
        base += ["--cache", args.cache]
    if args.only:
        base += ["--only", args.only]
    results = {
        (name, unlinked): asyncio.run(measure(base, weights, unlinked))
        for name, weights in LEVERS.items()
        for unlinked in (False, True)
    }
    print(
        f"{'lever':<32} {'linked R@5':>10} {'change [95% CI]':>24} "
        f"{'unlinked R@5':>12} {'change':>7}"
    )
    for name in LEVERS:
        cells = []
        for unlinked in (False, True):
            result = results[(name, unlinked)]
            reference = results[("defaults", unlinked)]
            recall = result["modes"]["default"]["recall@5"]
            delta, low, high = paired_interval(
                reference["per_question"]["default"], result["per_question"]["default"]
            )
            cells.append((recall, -delta, -high, -low))
        (lr, ld, llo, lhi), (ur, ud, _, _) = cells
        print(
            f"{name:<32} {lr:>10.3f} {ld:>+8.3f} [{llo:+.3f}, {lhi:+.3f}] {ur:>12.3f} {ud:>+7.3f}"
        )
    row = results[("defaults", False)]["modes"]["default"]
    print(
        f"defaults, linked: recall@10 {row['recall@10']:.3f}, MRR {row['mrr']:.3f}, "
        f"ms/query median {row['ms_median']:.1f}, p95 {row['ms_p95']:.1f}; recall@5 by category "
        + ", ".join(f"{c}: {v:.3f}" for c, v in row["recall@5_by_category"].items())
    )


if __name__ == "__main__":
    main()
