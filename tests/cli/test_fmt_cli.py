"""`axon fmt`, run as a user runs it: rewrite, --check, --diff, stdin, errors, file modes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.helpers.cli import ROOT, axon

EXAMPLES = ROOT / "examples"

UGLY = "memory Notes{store:session retrieval:keyword}\nrecall(\"x\")from Notes // why\n"
PRETTY = 'memory Notes { store: session, retrieval: keyword }\nrecall("x") from Notes // why\n'
BROKEN = "memory Notes {\n  store session\n}\n"


def test_fmt_rewrites_a_file_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "a.axon"
    path.write_text(UGLY)
    path.chmod(0o640)
    result = axon("fmt", str(path))
    assert result.returncode == 0, result.stderr
    assert path.read_text() == PRETTY
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert result.stderr == f"reformatted {path}\n"
    assert result.stdout == ""
    assert [p.name for p in tmp_path.iterdir()] == ["a.axon"]  # no temporary file left


def test_fmt_leaves_a_formatted_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "a.axon"
    path.write_text(PRETTY)
    before = path.stat().st_mtime_ns
    os.utime(path, ns=(before - 10**9, before - 10**9))
    result = axon("fmt", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert path.stat().st_mtime_ns == before - 10**9


def test_check_names_the_files_that_would_change_and_writes_nothing(tmp_path: Path) -> None:
    ugly, pretty = tmp_path / "ugly.axon", tmp_path / "pretty.axon"
    ugly.write_text(UGLY)
    pretty.write_text(PRETTY)
    result = axon("fmt", "--check", str(ugly), str(pretty))
    assert result.returncode == 1
    assert result.stderr == f"would reformat {ugly}\n"
    assert ugly.read_text() == UGLY
    assert axon("fmt", "--check", str(pretty)).returncode == 0


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a.axon"
    path.write_text(UGLY)
    result = axon("fmt", "--diff", str(path))
    assert result.returncode == 0, result.stderr
    assert path.read_text() == UGLY
    assert result.stdout.startswith(f"--- {path}\n+++ {path} (formatted)\n@@ ")
    assert "\n-memory Notes{store:session retrieval:keyword}\n" in result.stdout
    assert "\n+memory Notes { store: session, retrieval: keyword }\n" in result.stdout
    both = axon("fmt", "--check", "--diff", str(path))
    assert both.returncode == 1 and both.stdout == result.stdout


def test_stdin_to_stdout() -> None:
    import subprocess
    import sys


    def run(*args: str, data: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "axon.cli", "fmt", *args],
            input=data.encode(),
            capture_output=True,
            cwd=ROOT,
            timeout=120,
        )

    result = run("-", data=UGLY)
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == PRETTY
    assert run("-", data=PRETTY).stdout.decode() == PRETTY
    crlf = run("-", data=UGLY.replace("\n", "\r\n"))
    assert crlf.stdout == PRETTY.replace("\n", "\r\n").encode()
    check = run("--check", "-", data=UGLY)
    assert (check.returncode, check.stdout, check.stderr) == (1, b"", b"would reformat <stdin>\n")
    bad = run("-", data=BROKEN)
    assert bad.returncode == 1 and bad.stdout == b""
    assert bad.stderr.decode().startswith("<stdin>:2:9: error: expected ':' after field name")


def test_a_file_that_does_not_parse_is_an_error_and_left_untouched(tmp_path: Path) -> None:
    bad, ugly = tmp_path / "bad.axon", tmp_path / "ugly.axon"
    bad.write_text(BROKEN)
    ugly.write_text(UGLY)
    result = axon("fmt", str(bad), str(ugly))
    assert result.returncode == axon("check", str(bad)).returncode == 1
    assert result.stderr.startswith(
        f"{bad}:2:9: error: expected ':' after field name 'store'\n"
        "   2 |   store session\n"
        "     |         ^"
    )
    assert bad.read_text() == BROKEN
    assert ugly.read_text() == PRETTY  # the other files are still formatted
    assert f"reformatted {ugly}" in result.stderr


def test_missing_files_and_stdin_with_files(tmp_path: Path) -> None:
    result = axon("fmt", str(tmp_path / "nope.axon"))
    assert result.returncode == 1
    assert result.stderr == f"{tmp_path / 'nope.axon'}: error: no such file\n"
    mixed = axon("fmt", "-", str(tmp_path / "nope.axon"))
    assert mixed.returncode == 2
    assert "cannot be given with other files" in mixed.stderr


def test_a_directory_means_its_axon_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.axon").write_text(UGLY)
    (tmp_path / "b.axon").write_text(PRETTY)
    (tmp_path / "notes.txt").write_text(UGLY)
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "c.axon").write_text(UGLY)
    result = axon("fmt", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stderr == f"reformatted {tmp_path / 'sub' / 'a.axon'}\n"
    assert (tmp_path / "notes.txt").read_text() == UGLY
    assert (tmp_path / ".hidden" / "c.axon").read_text() == UGLY


def test_a_byte_order_mark_and_crlf_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "a.axon"
    path.write_bytes(b"\xef\xbb\xbf" + UGLY.replace("\n", "\r\n").encode())
    assert axon("fmt", str(path)).returncode == 0
    assert path.read_bytes() == b"\xef\xbb\xbf" + PRETTY.replace("\n", "\r\n").encode()


def test_the_examples_are_formatted() -> None:
    result = axon("fmt", "--check", str(EXAMPLES))
    assert result.returncode == 0, result.stderr


def test_a_symbolic_link_is_written_through(tmp_path: Path) -> None:
    target, link = tmp_path / "target.axon", tmp_path / "link.axon"
    target.write_text(UGLY)
    link.symlink_to(target)
    result = axon("fmt", str(link))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and target.read_text() == PRETTY


def test_the_formatters_parser_is_cached_in_a_private_file_of_its_own(tmp_path: Path) -> None:
    cache_home = tmp_path / "cache"
    env = {"XDG_CACHE_HOME": str(cache_home), "TMPDIR": str(tmp_path)}
    path = tmp_path / "a.axon"
    path.write_text(UGLY)
    for _ in range(2):  # the second run reads the tables the first one wrote
        result = axon("fmt", "--check", str(path), **env)
        assert result.returncode == 1 and result.stderr == f"would reformat {path}\n"
    names = sorted(p.name for p in (cache_home / "axon").iterdir())
    assert len(names) == 2 and "-tree-" in names[1] and "-tree-" not in names[0]
    assert stat.S_IMODE((cache_home / "axon").stat().st_mode) == 0o700
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".lark")]
