"""The conformance kit from outside: a third-party backend package runs `axon.testing`.

The package is built in `tmp_path` (a subclass of the in-memory backend registered
under another name, and the test file docs/backends.md shows, read from the doc)
and pytest runs it in a subprocess, as the package's own CI would.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import axon.testing.conformance as conformance

ROOT = Path(__file__).resolve().parents[2]

MY_BACKEND = '''
from axon.memory.backends.in_memory import InMemoryBackend
from axon.memory.registry import BackendInfo, registry


class MyBackend(InMemoryBackend):
    """A third party's backend (here the in-memory one under another name)."""

    name = "my_backend"


# What the package's `axon.backends` entry point does once it is installed.
registry.register(BackendInfo("my_backend", "my_backend:MyBackend"))
'''

PYPROJECT = """
[tool.pytest.ini_options]
asyncio_mode = "auto"
asyncio_default_fixture_loop_scope = "function"
"""


def doc_example() -> str:
    """The test file of "Testing your backend" in docs/backends.md."""
    text = (ROOT / "docs" / "backends.md").read_text()
    section = text.split("## Testing your backend", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "docs/backends.md: no python example under 'Testing your backend'"
    return match.group(1)


def suite_size() -> int:
    """The kit's conformance tests, each parametrization counted, plus the model test."""
    count = 0
    for name in conformance.__all__:
        if not name.startswith("test_"):
            continue
        cases = 1
        for mark in getattr(getattr(conformance, name), "pytestmark", []):
            if mark.name == "parametrize":
                cases *= len(mark.args[1])
        count += cases
    return count + 1


def run_package(tmp_path: Path, backend_source: str) -> subprocess.CompletedProcess[str]:
    package = tmp_path / "package"
    (package / "tests").mkdir(parents=True)
    (package / "my_backend.py").write_text(backend_source)
    (package / "pyproject.toml").write_text(PYPROJECT)
    (package / "tests" / "test_my_backend.py").write_text(doc_example())
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(package), str(ROOT)]),
        "AXON_TESTING_MAX_EXAMPLES": "5",
    }
    # The installed `pytest11` entry point loads the plugin; name it by hand only where
    # this checkout is not installed (loading it twice is an error).
    installed = any(
        ep.value == "axon.testing.plugin"
        for ep in importlib.metadata.entry_points(group="pytest11")
    )
    plugin = [] if installed else ["-p", "axon.testing.plugin"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *plugin,
         str(package / "tests")],
        cwd=package,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_backend_package_runs_the_whole_suite_with_the_documented_file(
    tmp_path: Path,
) -> None:
    result = run_package(tmp_path, MY_BACKEND)
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed, summary
    assert int(passed.group(1)) == suite_size() > 30, summary
    assert "skipped" not in summary and "failed" not in summary, summary


def test_a_failing_check_shows_the_values_it_compared(tmp_path: Path) -> None:
    """The kit's asserts are rewritten by pytest, so a broken backend sees what differed."""
    broken = MY_BACKEND.replace(
        '    name = "my_backend"\n',
        '    name = "my_backend"\n\n'
        "    async def count(self, scope=None):\n"
        "        return await super().count(scope) + 1\n",
    )
    result = run_package(tmp_path, broken)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert "FAILED" in result.stdout
    assert re.search(r"assert \d+ == \d+", result.stdout), result.stdout[-3000:]


@pytest.mark.parametrize("module", ["axon", "axon.memory.registry", "axon.memory"])
def test_importing_axon_does_not_import_the_test_tools(module: str) -> None:
    tools = {"pytest", "hypothesis", "axon.testing"}
    code = f"import sys, {module}; print(sorted({tools!r} & set(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "[]"
