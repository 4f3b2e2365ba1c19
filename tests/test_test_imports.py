"""Test modules share helpers through conftest.py files and tests/helpers, never by
importing one another: a test module imported by another was collected twice in
spirit, and its fixtures re-bound by hand (issue 27)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imports_of_test_modules(path: Path) -> list[str]:
    """The test modules (`tests....test_x`) `path` imports, at any depth of the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found += [
            name for name in names
            if name.startswith("tests.") and name.split(".")[-1].startswith("test_")
        ]
    return found


def test_no_test_module_imports_another() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)} imports {name}"
        for path in sorted(TESTS.rglob("*.py"))
        for name in _imports_of_test_modules(path)
    ]
    assert found == []
