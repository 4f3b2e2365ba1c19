"""Golden files: rendered diagnostics (`NAME.err.txt`) and IR dumps (`NAME.ir.json`).

Each `tests/golden/NAME.axon` is compiled; a failure is compared with
`NAME.err.txt`, a success with `NAME.ir.json`. Run `pytest --update-golden` to
rewrite them, then review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import axon
from axon.errors import AxonError

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
CASES = sorted(GOLDEN.glob("*.axon"))


def render(path: Path) -> tuple[str, str]:
    """(suffix, text) of what compiling `path` produces."""
    name = f"tests/golden/{path.name}"
    try:
        program = axon.compile(path.read_text(), filename=name)
    except AxonError as err:
        return ".err.txt", str(err) + "\n"
    return ".ir.json", json.dumps(program.to_dict(), indent=2, sort_keys=True) + "\n"


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_golden(path: Path, update_golden: bool) -> None:
    suffix, actual = render(path)
    expected_path = path.with_suffix(suffix)
    other = path.with_suffix(".ir.json" if suffix == ".err.txt" else ".err.txt")
    if update_golden:
        expected_path.write_text(actual)
        other.unlink(missing_ok=True)
        return
    assert not other.exists(), f"{other.name} exists but compiling gave {suffix}"
    assert expected_path.exists(), f"missing {expected_path.name}: run pytest --update-golden"
    assert actual == expected_path.read_text()


def test_there_are_both_kinds_of_golden_file() -> None:
    assert any(GOLDEN.glob("*.err.txt")) and any(GOLDEN.glob("*.ir.json"))
