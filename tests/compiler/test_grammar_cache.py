"""Where the parser's tables are cached: never a file anyone else can plant (a pickle)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from axon.compiler import grammar_cache

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "script.axon"


def _env(tmp: Path, cache_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "TMPDIR")}
    env.update(TMPDIR=str(tmp), XDG_CACHE_HOME=str(cache_home), HOME=str(tmp / "home"))
    return env


def _check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "axon.cli", "check", str(EXAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


class _Plant:
    """A pickle that leaves a marker file behind when it is loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def test_a_pickle_planted_where_lark_would_cache_is_never_loaded(tmp_path: Path) -> None:
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    env = _env(shared, tmp_path / "cache")
    # Stock Lark with cache=True, configured as AXON's parser: the file it names is the
    # one an attacker would plant in the shared temporary directory.
    stock = (
        "import lark; from axon.compiler import parser as p; "
        "lark.Lark(p.grammar_text(), parser='lalr', lexer='contextual', "
        "transformer=p._Builder(), maybe_placeholders=True, cache=True)"
    )
    subprocess.run([sys.executable, "-c", stock], env=env, check=True, timeout=120)
    planted = [p for p in shared.iterdir() if p.name.startswith(".lark_cache")]
    assert len(planted) == 1
    marker = tmp_path / "code-ran"
    digest_line = planted[0].read_bytes().split(b"\n", 1)[0]
    planted[0].write_bytes(digest_line + b"\n" + pickle.dumps(_Plant(marker)))

    result = _check(env)
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), "axon check unpickled a file from the shared temp directory"


def test_the_cache_lives_in_a_private_directory_of_the_user(tmp_path: Path) -> None:
    cache_home = tmp_path / "cache"
    env = _env(tmp_path, cache_home)
    assert _check(env).returncode == 0
    directory = cache_home / "axon"
    assert directory.stat().st_mode & 0o777 == 0o700
    files = list(directory.iterdir())
    assert len(files) == 1 and files[0].name.startswith("parser-")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".lark")]
    # A second process reads the tables back and parses the same.
    assert _check(env).returncode == 0
    assert list(directory.iterdir()) == files


@pytest.mark.parametrize("mode", [0o777, 0o750, 0o705])
def test_a_directory_others_can_reach_is_not_used(tmp_path: Path, mode: int) -> None:
    cache_home = tmp_path / "cache"
    directory = cache_home / "axon"
    directory.mkdir(parents=True)
    directory.chmod(mode)
    result = _check(_env(tmp_path, cache_home))
    assert result.returncode == 0, result.stderr
    assert list(directory.iterdir()) == []  # no cache written or read there
    assert directory.stat().st_mode & 0o777 == mode  # the user's choice is left alone


def test_a_cache_file_others_can_write_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    grammar = "start: 'a'\n"
    name = grammar_cache.parser_cache_file(grammar)
    assert name is not None and Path(name).parent == tmp_path / "axon"
    Path(name).write_bytes(b"")
    Path(name).chmod(0o666)
    assert grammar_cache.parser_cache_file(grammar) is None
    Path(name).unlink()
    Path(name).symlink_to(tmp_path / "elsewhere")
    assert grammar_cache.parser_cache_file(grammar) is None


def test_a_symlinked_directory_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "axon").symlink_to(target)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    assert grammar_cache.cache_dir() is None
