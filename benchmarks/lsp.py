"""Editor latency: from an edit of a 2,000-line program to its diagnostics, over `axon lsp`.

Starts `axon lsp` as an editor does (a subprocess on stdio), opens a generated
program of about --lines lines, then sends --edits incremental edits (one
character typed into, then deleted from, a string in the middle of the file:
each a new version) and times each from sending `didChange` to receiving the
`publishDiagnostics` of that version. Prints the median, 90th percentile and
slowest round trip, and, as the baseline of the same run, the median time of
analysing the whole text in this process with nothing reused (parse, check,
index: what every edit would cost without `axon.lsp.chunks`). DESIGN.md's
target: a median of at most 100 ms.

    .venv/bin/python benchmarks/lsp.py [--lines 2000] [--edits 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from axon.lsp.analysis import analyse  # noqa: E402
from tests.editors.lsp_client import LspClient  # noqa: E402

BLOCK = """\
memory Notes{i} {{
  store: persistent
  backend: sqlite
  retrieval: keyword
  decay: 30d
}}

flow Survey{i}(topic: String) -> Summary {{
  recall(topic) from Notes{i} as known
  step Search {{
    given: topic
    ask: "Find recent papers on the topic"
    output: PaperList
  }}
  remember(Search) -> Notes{i} with {{ tags: ["survey"], importance: 0.7 }}
}}

remember("fact number {i}") -> Notes{i}
recall("papers") from Notes{i}

"""


def program(lines: int) -> str:
    blocks, i = [], 0
    while sum(b.count("\n") for b in blocks) < lines:
        blocks.append(BLOCK.format(i=i))
        i += 1
    return "".join(blocks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=50)
    args = parser.parse_args()
    text = program(args.lines)
    # The edit point: inside the string of the middle block's remember.
    middle = text.index('"fact number', len(text) // 2) + 1
    line = text.count("\n", 0, middle)
    column = middle - (text.rfind("\n", 0, middle) + 1)
    at = {"line": line, "character": column}
    after = {"line": line, "character": column + 1}

    client = LspClient()
    client.initialize()
    uri = (ROOT / "benchmark.axon").as_uri()
    opened = client.open(uri, text)
    assert opened["diagnostics"] == [], opened["diagnostics"][:3]
    times = []
    for n in range(args.edits):
        version = n + 2
        change = (
            {"range": {"start": at, "end": at}, "text": "x"}
            if n % 2 == 0
            else {"range": {"start": at, "end": after}, "text": ""}
        )
        started = time.perf_counter()
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
        )
        published = client.wait_for("textDocument/publishDiagnostics", uri=uri, version=version)
        times.append(time.perf_counter() - started)
        assert published["diagnostics"] == []
    client.close()

    alone = []
    for _ in range(max(5, args.edits // 5)):
        started = time.perf_counter()
        analyse(text)
        alone.append(time.perf_counter() - started)

    ms = sorted(t * 1000 for t in times)
    p90 = ms[min(len(ms) - 1, round(0.9 * (len(ms) - 1)))]
    print(f"program: {text.count(chr(10)):,} lines, {args.edits} edits")
    print(
        f"edit -> diagnostics over axon lsp: median {statistics.median(ms):.1f} ms, "
        f"p90 {p90:.1f} ms, slowest {ms[-1]:.1f} ms (target: median <= 100 ms)"
    )
    whole = statistics.median(alone) * 1000
    print(f"whole-text analysis, nothing reused (parse, check, index): median {whole:.1f} ms")


if __name__ == "__main__":
    main()
