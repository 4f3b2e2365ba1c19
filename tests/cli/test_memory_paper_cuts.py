"""`axon memory` paper cuts (issue 26): hints that paste, search's default retrieval,
`--where`/`--tag` on show and search, a guarded `forget --where/--tag`, type and
importance in show and get; run as a user runs them (a subprocess)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.cli import ROOT, Store, as_json, axon

TYPED = """\
memory Notes { store: persistent backend: sqlite }
remember("the quarterly report is due friday") -> Notes with {
    key: "report", tags: ["work"], type: long_term, importance: high }
remember({"count": 3}) -> Notes with { key: "tally", tags: ["home"], metadata: { owner: "ann" } }
remember("water the plants") -> Notes with { key: "plants", tags: ["home"] }
remember("call the plumber") -> Notes with { key: "plumber", tags: ["home"],
    metadata: { owner: "bob" } }
"""


@pytest.fixture
def typed(tmp_path: Path) -> list[str]:
    """A memory directory whose name needs quoting, holding TYPED's four Notes."""
    where = ["--memory-dir", str(tmp_path / "my memories")]
    program = tmp_path / "p.axon"
    program.write_text(TYPED)
    result = axon("run", str(program), *where)
    assert result.returncode == 0, result.stderr
    return where


def _hint(stdout: str) -> list[str]:
    match = re.search(r"next page: (.*)\)$", stdout.strip())
    assert match, stdout
    words = shlex.split(match.group(1))
    assert words[:3] == ["axon", "memory", "show"]
    return words[1:]


def test_the_next_page_hint_pastes_and_works(store_every_location: Store) -> None:
    """Pasted as printed (no options added), the hint shows the next page of the same
    store: on a memory directory, PostgreSQL and Chroma alike."""
    store = store_every_location  # the embedded Chroma directory too
    first = store("show", "Notes", "--limit", "1")
    assert first.returncode == 0, first.stderr
    assert "tally" in first.stdout and "report" not in first.stdout
    pasted = axon(*_hint(first.stdout))
    assert pasted.returncode == 0, pasted.stderr
    assert "report" in pasted.stdout and "tally" not in pasted.stdout
    assert "next page" not in pasted.stdout


def test_a_filtered_show_pages_by_its_hints(typed: list[str]) -> None:
    """`show --tag home -n 1` and each hint after it: one matching entry a page, newest
    first, the filter, limit and quoted memory directory carried along."""
    seen = []
    result = axon("memory", "show", "Notes", "--tag", "home", "-n", "1", *typed)
    while True:
        assert result.returncode == 0, result.stderr
        rows = [line.split()[0] for line in result.stdout.splitlines()[2:]
                if not line.startswith("(")]
        seen += rows
        if "next page" not in result.stdout:
            break
        result = axon(*_hint(result.stdout))
    assert [key for key in seen if key] == ["plumber", "plants", "tally"]


def test_search_uses_the_best_retrieval_unless_told(store: Store) -> None:
    """The store does not record declarations: search takes the best mode of the backend
    (hybrid on each built-in one) with a model, keyword without, and --retrieval wins."""
    found = as_json(store("search", "Notes", "quarterly report", "--json"))
    assert found["retrieval"] == "hybrid"
    assert found["results"][0]["key"] == "report" and "signals" in found["results"][0]
    told = as_json(store("search", "Notes", "quarterly report", "--retrieval", "keyword",
                         "--json"))
    assert told["retrieval"] == "keyword"


def test_search_without_a_model_defaults_to_keyword_quietly(typed: list[str]) -> None:
    result = axon("memory", "search", "Notes", "plumber", *typed, "--json",
                  AXON_EMBEDDER="none")
    assert as_json(result)["retrieval"] == "keyword" and result.stderr == ""
    asked = axon("memory", "search", "Notes", "plumber", "--retrieval", "semantic", *typed,
                 AXON_EMBEDDER="none")
    assert asked.returncode == 0 and "warning" in asked.stderr  # told: it says so


def test_where_and_tag_on_show_and_search(typed: list[str]) -> None:
    def keys(*args: str) -> list[str]:
        data = as_json(axon("memory", *args, *typed, "--json"))
        return [e["key"] for e in data.get("entries", data.get("results", []))]

    assert keys("show", "Notes", "--tag", "home") == ["plumber", "plants", "tally"]
    assert keys("show", "Notes", "--tag", "home", "--tag", "work") == [
        "plumber", "plants", "tally", "report"
    ]
    assert keys("show", "Notes", "--where", "owner=ann") == ["tally"]
    assert keys("show", "Notes", "--where", "owner=ann", "--tag", "work") == []
    assert keys("show", "Notes", "--where", "importance=0.75") == ["report"]  # JSON: a number
    assert keys("show", "Notes", "--where", 'owner="bob"') == ["plumber"]  # JSON: a string
    assert keys("search", "Notes", "the", "--retrieval", "keyword", "--tag", "home") == [
        "plumber", "plants"
    ]
    assert keys("search", "Notes", "the", "--retrieval", "keyword", "--where",
                "type=long_term") == ["report"]
    twice = axon("memory", "show", "Notes", "--where", "a=1", "--where", "a=2", *typed)
    assert twice.returncode == 2 and "twice" in twice.stderr
    bad = axon("memory", "search", "Notes", "x", "--where", "novalue", *typed)
    assert bad.returncode == 2 and "FIELD=VALUE" in bad.stderr


def test_forget_by_filter_refuses_without_yes_off_a_terminal(typed: list[str]) -> None:
    refused = axon("memory", "forget", "Notes", "--tag", "home", *typed, stdin="y\n")
    assert refused.returncode == 2
    assert "stdin is not a terminal" in refused.stderr and "--yes" in refused.stderr
    dry = axon("memory", "forget", "Notes", "--tag", "home", "--dry-run", *typed)
    assert dry.returncode == 0, dry.stderr
    assert "would forget 3 entries" in dry.stdout and "plants" in dry.stdout
    dry_json = as_json(axon("memory", "forget", "Notes", "--where", "owner=ann", "--dry-run",
                            "--json", *typed))
    assert dry_json["would_delete"] == ["tally"] and dry_json["deleted"] == 0
    assert as_json(axon("memory", "ls", "--json", *typed))["memories"][0]["entries"] == 4
    done = as_json(axon("memory", "forget", "Notes", "--tag", "home", "--yes", "--json",
                        *typed))
    assert done["deleted"] == 3
    assert as_json(axon("memory", "ls", "--json", *typed))["memories"][0]["entries"] == 1
    # a single KEY is not guarded (it names exactly what goes)
    assert axon("memory", "forget", "Notes", "report", *typed).returncode == 0


def _on_a_terminal(args: list[str], answer: str) -> subprocess.CompletedProcess[str]:
    """`axon memory ARGS` with stdin a pseudo-terminal that types `answer`."""
    controller, terminal = os.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "axon.cli", "memory", *args],
            stdin=terminal, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=ROOT, env={**os.environ, "AXON_EMBEDDER": "hashing"},
        )
        time.sleep(0.2)
        os.write(controller, answer.encode())
        stdout, stderr = process.communicate(timeout=120)
    finally:
        os.close(controller)
        os.close(terminal)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def test_forget_by_filter_asks_on_a_terminal(typed: list[str]) -> None:
    kept = _on_a_terminal(["forget", "Notes", "--tag", "home", *typed], "n\n")
    assert kept.returncode == 0, kept.stderr
    assert "delete 3 entries of Notes" in kept.stderr and "nothing forgotten" in kept.stdout
    assert as_json(axon("memory", "ls", "--json", *typed))["memories"][0]["entries"] == 4
    gone = _on_a_terminal(["forget", "Notes", "--where", "owner=bob", *typed], "y\n")
    assert gone.returncode == 0, gone.stderr
    assert "delete 1 entry of Notes" in gone.stderr and "forgot 1 entry" in gone.stdout
    assert as_json(axon("memory", "ls", "--json", *typed))["memories"][0]["entries"] == 3


def test_show_has_type_and_importance_and_get_names_the_record_type(
    typed: list[str],
) -> None:
    shown = axon("memory", "show", "Notes", *typed)
    assert shown.returncode == 0, shown.stderr
    header, _, *rows = shown.stdout.splitlines()
    assert header.split() == ["key", "age", "type", "importance", "value", "tags",
                              "expires", "in"]
    report = next(row for row in rows if row.startswith("report"))
    assert "long_term" in report and "high" in report
    got = axon("memory", "get", "Notes", "report", *typed)
    fields = {line[:12].strip(): line[12:].strip() for line in got.stdout.splitlines()[2:]}
    assert fields["type"] == "long_term" and fields["importance"] == "high"
    assert fields["value type"] == "string"
    tally = axon("memory", "get", "Notes", "tally", *typed).stdout
    assert re.search(r"^type\s+\(none\)$", tally, re.M)
    assert re.search(r"^value type\s+object$", tally, re.M)


def test_where_takes_comparisons_and_operator_maps(typed: list[str]) -> None:
    """`--where 'n>=3'` and its kin are operator maps (docs/cli.md); repeated on one
    field they add up; `FIELD=VALUE` keeps its meaning; a bad map is refused by field."""
    def keys(*args: str) -> list[str]:
        result = axon("memory", *args, *typed, "--json")
        assert result.returncode == 0, result.stderr
        data = as_json(result)
        return sorted(e["key"] for e in data.get("entries", data.get("results", [])))

    assert keys("show", "Notes", "--where", "importance>=0.75") == ["report"]
    assert keys("show", "Notes", "--where", "importance>0.75") == []
    assert keys("show", "Notes", "--where", "owner<b") == ["tally"]  # text: by code point
    assert keys("show", "Notes", "--where", "owner<=bob") == ["plumber", "tally"]
    assert keys("show", "Notes", "--where", "owner!=ann") == ["plumber"]
    assert keys("show", "Notes", "--where", "owner>a", "--where", "owner<b") == ["tally"]
    assert keys("show", "Notes", "--where", 'owner={"in": ["ann", "bob"]}') == [
        "plumber", "tally"
    ]
    assert keys("show", "Notes", "--where", 'owner={"exists": false}') == ["plants", "report"]
    assert keys("search", "Notes", "the", "--retrieval", "keyword", "--where",
                "owner>=b") == ["plumber"]
    assert keys("show", "Notes", "--where", "owner=ann") == ["tally"]
    bad = axon("memory", "show", "Notes", "--where", 'owner={"gtee": 1}', *typed)
    assert bad.returncode == 2
    assert "unknown operator 'gtee' for 'owner' (did you mean 'gte'?)" in bad.stderr
    twice = axon("memory", "show", "Notes", "--where", "n>1", "--where", "n>2", *typed)
    assert twice.returncode == 2 and "twice" in twice.stderr
    listed = axon("memory", "show", "Notes", "--where", "n>[1]", *typed)
    assert listed.returncode == 2 and "gt takes a number or a string, got [1]" in listed.stderr
