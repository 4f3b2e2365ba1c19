"""The distribution's metadata: a name free on the package index, and hints that install it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

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


def test_every_install_hint_names_the_distribution() -> None:
    name = PYPROJECT["project"]["name"]
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "axon").rglob("*.py")]
    hints = []
    for path in files:
        for match in re.finditer(r"pip install ['\"]?([A-Za-z0-9_.-]+)\[", path.read_text()):
            hints.append((path.relative_to(ROOT), match.group(1)))
    assert hints, "no install hint found: the pattern is out of date"
    assert [h for h in hints if h[1] != name] == []


def test_setup_replaces_an_old_axon_install() -> None:
    setup = (ROOT / "scripts" / "setup").read_text()
    uninstall = setup.index("pip uninstall -q -y axon\n")
    assert uninstall < setup.index("pip install -q -e '.[dev,semantic,postgres,mcp,chroma,bench]'")
