"""Suite-wide options: `--update-golden` rewrites golden files instead of comparing."""

from __future__ import annotations

import os

import pytest

# Tests use the tiny deterministic embedder unless a test asks for the real model.
os.environ.setdefault("AXON_EMBEDDER", "hashing")


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
