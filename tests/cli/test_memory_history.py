"""`axon memory history MEMORY KEY` and `axon memory purge --history` (docs/cli.md), and
the versions `axon memory update` and `forget` record on a store whose memory keeps
history (docs/language.md §5.3), run as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import axon, write

PROGRAM = """\
memory Profile { store: persistent history: 2 }
memory Plain { store: persistent }
remember("likes tea") -> Profile with { key: "drink", tags: ["food"], importance: high }
remember("plain words") -> Plain with { key: "p" }
"""


def _store(tmp_path: Path) -> list[str]:
    program = write(tmp_path, "p.axon", PROGRAM)
    where = ["--memory-dir", str(tmp_path / "mem")]
    result = axon("run", str(program), *where)
    assert result.returncode == 0, result.stderr
    return where


def _versions(where: list[str], key: str = "drink") -> list[dict[str, object]]:
    result = axon("memory", "history", "Profile", key, "--json", *where)
    assert result.returncode == 0, result.stderr
    versions = json.loads(result.stdout)["versions"]
    assert isinstance(versions, list)
    return versions


def test_history_lists_versions_newest_first_and_cli_writes_record_theirs(
    tmp_path: Path,
) -> None:
    where = _store(tmp_path)
    assert [(v["op"], v["value"]) for v in _versions(where)] == [("remember", "likes tea")]
    assert axon("memory", "update", "Profile", "drink", "--value", "likes coffee",
                *where).returncode == 0
    assert axon("memory", "update", "Profile", "drink", "--tag", "morning",
                *where).returncode == 0
    shown = axon("memory", "history", "Profile", "drink", *where, COLUMNS="160")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].split()[:3] == ["op", "updated", "value"]
    assert "likes coffee" in lines[2] and "morning" in lines[2] and "high" in lines[2]
    assert "likes tea" in lines[-1] and lines[-1].split()[0] == "remember"
    # history: 2 keeps the current and 2 before it, whoever writes (the CLI included).
    assert [v["op"] for v in _versions(where)] == ["update", "update", "remember"]
    assert axon("memory", "update", "Profile", "drink", "--importance", "low",
                *where).returncode == 0
    assert [v["op"] for v in _versions(where)] == ["update", "update", "update"]
    assert axon("memory", "forget", "Profile", "drink", *where).returncode == 0
    versions = _versions(where)
    assert versions[0]["op"] == "forget" and versions[0]["value"] is None
    assert [v["op"] for v in versions] == ["forget", "update", "update"]
    assert versions[1]["metadata"]["importance"] == 0.25  # type: ignore[index]


def test_no_history_is_exit_1_and_purge_history_keeps_the_entries(tmp_path: Path) -> None:
    where = _store(tmp_path)
    missing = axon("memory", "history", "Plain", "p", *where)
    assert missing.returncode == 1
    assert "no history of key 'p' in memory 'Plain'" in missing.stderr
    assert "Traceback" not in missing.stderr
    # A CLI write to a memory that keeps no history records nothing.
    assert axon("memory", "update", "Plain", "p", "--value", "new", *where).returncode == 0
    assert axon("memory", "history", "Plain", "p", *where).returncode == 1
    purged = axon("memory", "purge", "--history", "--json", *where)
    assert purged.returncode == 0, purged.stderr
    assert json.loads(purged.stdout)["versions"] == 1
    assert axon("memory", "history", "Profile", "drink", *where).returncode == 1
    got = axon("memory", "get", "Profile", "drink", "--json", *where)
    assert got.returncode == 0 and json.loads(got.stdout)["value"] == "likes tea"


def test_purge_history_in_a_namespace_leaves_the_others(tmp_path: Path) -> None:
    program = write(tmp_path, "p.axon", PROGRAM)
    where = ["--memory-dir", str(tmp_path / "mem")]
    for space in ("acme/u1", "acme/u2"):
        result = axon("run", str(program), "--namespace", space, *where)
        assert result.returncode == 0, result.stderr
    purged = axon("memory", "purge", "--history", "--namespace", "acme/u1", *where)
    assert purged.returncode == 0 and "purged 1 version of history" in purged.stdout
    assert axon("memory", "history", "Profile", "drink", "--namespace", "acme/u1",
                *where).returncode == 1
    assert axon("memory", "history", "Profile", "drink", "--namespace", "acme/u2",
                *where).returncode == 0
