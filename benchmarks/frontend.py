"""Front-end speed: parse + check a generated ~15,000-line program; prints lines/s.

Baselines run in the same process on the same text: plain Lark LALR building a
parse tree with positions (what the grammar alone costs), and our parse without
the checker. DESIGN.md's target: >= the reference hand-written parser (43k
lines/s measured on these machines), since a Lark parse tree alone reaches only
~15-19k. Also reports the cold wall time of `axon check examples/<file>`.

    .venv/bin/python benchmarks/frontend.py [--lines 15000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import lark

import axon
from axon.compiler.parser import grammar_text

ROOT = Path(__file__).resolve().parent.parent

BLOCK = """\
persona Analyst{i} {{
  domain: ["contracts", "finance"]
  tone: precise
  confidence_threshold: 0.85
}}

memory Knowledge{i} {{
  store: persistent
  backend: sqlite
  retrieval: hybrid
  decay: 7d
  top_k: 5
}}

flow Analyze{i}(doc: Document) -> Summary{i} {{
  recall("earlier findings {i}") from Knowledge{i} as prior
  step Extract {{
    given: doc
    ask: "Extract parties, dates and amounts"
    output: Entities{i}
  }}
  probe doc for [parties, dates, amounts]
  step Assess {{
    given: Extract.output
    ask: "Identify risky clauses"
    output: Risks{i}
    confidence_floor: 0.8
  }}
  if confidence < 0.5 -> refine(max_attempts: 2) else -> remember(Risks{i}) -> Knowledge{i}
  weave [Extract.output, Assess.output] into Summary{i} {{ format: Report }}
  remember(Summary{i}) -> Knowledge{i} with {{ tags: ["block{i}"], importance: 0.7 }}
}}

run Analyze{i}("contract_{i}.pdf") as Analyst{i} effort: high
let note{i} = "block {i} done"
remember(note{i}) -> Knowledge{i}
recall("block {i}") from Knowledge{i} with {{ top_k: 3 }} as hits{i}
"""


def program(lines: int) -> str:
    per_block = BLOCK.count("\n")
    return "\n".join(BLOCK.format(i=i) for i in range(max(1, lines // per_block)))


def timed(fn: object, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def cold_check(path: Path, repeat: int) -> float:
    cmd = [str(Path(sys.executable).with_name("axon")), "check", str(path)]
    subprocess.run(cmd, check=True, capture_output=True)  # warm the OS cache and lark's cache
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=15_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    text = program(args.lines)
    n = text.count("\n") + 1
    axon.compile(text)  # warm: grammar loaded, caches filled
    tree_parser = lark.Lark(
        grammar_text(), parser="lalr", lexer="contextual", propagate_positions=True
    )
    tree_parser.parse(text)

    t_tree = timed(lambda: tree_parser.parse(text), args.repeat)
    t_parse = timed(lambda: axon.parse(text), args.repeat)
    t_full = timed(lambda: axon.compile(text), args.repeat)

    print(f"program: {n:,} lines, {len(text):,} bytes; median of {args.repeat} runs")
    print(f"  baseline: Lark LALR parse tree + positions : {n / t_tree:>9,.0f} lines/s")
    print(f"  axon.parse (inline transformer -> AST)     : {n / t_parse:>9,.0f} lines/s "
          f"({t_tree / t_parse:.2f}x the tree baseline)")
    print(f"  axon.compile (parse + check -> IR)         : {n / t_full:>9,.0f} lines/s "
          f"({t_tree / t_full:.2f}x the tree baseline; reference parser: 43,000 lines/s)")
    for example in ("contract_analyzer.axon", "script.axon"):
        wall = cold_check(ROOT / "examples" / example, args.repeat)
        print(f"  cold `axon check examples/{example}`: {wall * 1000:.0f} ms wall (median)")


if __name__ == "__main__":
    main()
