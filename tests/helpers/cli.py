"""The `axon` command run as a user runs it (a subprocess), and what its tests share."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
"""The project root: the working directory of every `axon` subprocess by default."""

PROGRAM = """\
memory Notes { store: persistent backend: BACKEND }
memory Diary { store: persistent backend: BACKEND }
remember("the quarterly report is due friday") -> Notes with { key: "report", tags: ["work"] }
remember({"count": 3, "done": false}) -> Notes with { key: "tally", tags: ["home"] }
remember("lunch with 田中さん on tuesday") -> Diary with { key: "lunch" }
"""
"""The memories the `store` fixture's store holds (`BACKEND` replaced by its backend)."""

Store = Callable[..., subprocess.CompletedProcess[str]]
"""`axon memory ...` against one store (the `store` fixture of tests/cli/conftest.py)."""


def axon(
    *args: str, cwd: Path | None = None, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """`python -m axon.cli ARGS` in `cwd` (the project root), with the hashing embedder
    and `env` added to the environment, `stdin` as its input."""
    environment = {**os.environ, "AXON_EMBEDDER": "hashing", **env}
    return subprocess.run(
        [sys.executable, "-m", "axon.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd or ROOT,
        env=environment,
        input=stdin,
        timeout=120,
    )


def write(tmp_path: Path, name: str, text: str) -> Path:
    """`text` written to `tmp_path / name`; the path."""
    path = tmp_path / name
    path.write_text(text)
    return path


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    """The JSON document a successful command printed."""
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)
