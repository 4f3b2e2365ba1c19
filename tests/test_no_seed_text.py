"""No text a user meets at run time speaks of the seed (issue 26): the design documents'
names ("seed 002", "the seed's scoring") are for contributors, in docstrings and
docs/seed-api.md only. `--help` is tests/cli/test_packaging.py's, docs are
tests/test_docs.py's; here: error and warning messages, the REPL's `.help`, the MCP
tool's description and schema."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

from axon.mcp_server.tool import DESCRIPTION, INPUT_SCHEMA
from axon.repl.console import Console
from axon.runtime.session import Session

PACKAGE = Path(__file__).resolve().parents[1] / "axon"


def _docstrings(tree: ast.AST) -> set[int]:
    """The string constants that are docstrings (of a module, class, function or
    attribute): a bare string statement, never shown at run time."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def test_no_string_the_code_can_show_mentions_the_seed() -> None:
    """Every message (errors, warnings, printed lines) is built from string literals of
    axon/: none but a docstring may say "seed"."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and "seed" in node.value.lower()
            ):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {node.value!r}")
    assert found == []


def test_the_repl_help_and_the_mcp_tool_do_not_mention_the_seed(tmp_path: Path) -> None:
    out = io.StringIO()
    session = Session(memory_dir=tmp_path)
    try:
        Console(session, out, io.StringIO(), color=False).run_input(".help")
    finally:
        session.close()
    assert ".declare" in out.getvalue() and "seed" not in out.getvalue().lower()
    assert "seed" not in DESCRIPTION.lower()
    assert "seed" not in json.dumps(INPUT_SCHEMA).lower()
