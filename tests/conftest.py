"""Suite-wide options and rules: `--update-golden` rewrites golden files instead of
comparing; `unavailable` and `require_extra` skip a test whose server or optional extra
is missing, or fail it under `CI=true`, where every test must run."""

from __future__ import annotations

import importlib.util
import os
from typing import NoReturn

import pytest

# Tests use the tiny deterministic embedder unless a test asks for the real model.
os.environ.setdefault("AXON_EMBEDDER", "hashing")


EXTRAS = {
    "psycopg": "postgres",
    "psycopg_pool": "postgres",
    "chromadb": "chroma",
    "starlette": "studio",
    "uvicorn": "studio",
    "httpx2": "dev",
    "mcp": "mcp",
    "usearch": "semantic",
    "pygls": "lsp",
    "lsprotocol": "lsp",
}
"""The optional modules tests need, each with the extra of pyproject.toml that installs it."""


def unavailable(reason: str, *, module_level: bool = False) -> NoReturn:
    """Skip (the test, or with `module_level` the whole test module)
    because `reason`; under `CI=true` fail instead: there nothing may skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=module_level)


def require_extra(*modules: str, module_level: bool = False) -> None:
    """Go on only if every module in `modules` is installed (they are keys of `EXTRAS`);
    else `unavailable`, naming the extra that installs it. Never imports them."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            extra = EXTRAS[module]
            unavailable(
                f"{module} is not installed (pip install 'axon-memory[{extra}]')",
                module_level=module_level,
            )


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/*.err.txt and *.ir.json from the current output",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))
