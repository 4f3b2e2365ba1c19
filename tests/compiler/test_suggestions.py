""""Did you mean": good suggestions, at a cost that does not grow with the pool."""

from __future__ import annotations

import time

import pytest

import axon
from axon.compiler.names import SMALL_POOL, Suggester, did_you_mean
from axon.errors import AxonCheckError

BIG = [f"Notes{i:04d}" for i in range(3000)] + ["CustomerProfiles", "Invoices", "Meetings"]


@pytest.mark.parametrize(
    ("typo", "wanted"),
    [
        ("Ntoes0042", "Notes0042"),  # transposition
        ("Invoces", "Invoices"),  # deletion
        ("Notes00042", "Notes0042"),  # insertion
        ("Nates0042", "Notes0042"),  # substitution
        ("CustmerProfils", "CustomerProfiles"),  # two edits
        ("invoices", "Invoices"),  # case only
        ("Meetngs", "Meetings"),
    ],
)
def test_a_large_pool_gives_the_suggestion_a_small_one_gives(typo: str, wanted: str) -> None:
    assert len(BIG) > SMALL_POOL
    assert Suggester(BIG).closest(typo) == wanted
    small = [wanted, "Other", "Things"]
    assert Suggester(small).closest(typo) == wanted


def test_nothing_close_suggests_nothing() -> None:
    assert Suggester(BIG).closest("Zebra") is None
    assert did_you_mean("Zebra", ["Notes"]) == ""


def test_allowed_restricts_the_answer() -> None:
    suggester = Suggester(BIG)
    assert suggester.closest("Meetngs", allowed={"Invoices"}) is None
    assert suggester.closest("Meetngs", allowed={"Meetings"}) == "Meetings"


def test_thousands_of_misspelt_names_check_quickly() -> None:
    n = 1500
    text = "".join(f"memory Notes{i:04d} {{ store: session }}\n" for i in range(n))
    text += "".join(f'recall("q") from Ntoes{i:04d}\n' for i in range(n))
    text += "".join(f"let value{i:04d} = 1\n" for i in range(n))
    text += "".join(f"remember(vaule{i:04d}) -> Notes0000\n" for i in range(n))
    started = time.perf_counter()
    with pytest.raises(AxonCheckError) as info:
        axon.compile(text)
    elapsed = time.perf_counter() - started
    diagnostics = info.value.diagnostics
    assert len(diagnostics) == 2 * n
    assert "(did you mean 'Notes0007'?)" in diagnostics[7].message
    assert "(did you mean 'value0007'?)" in diagnostics[n + 7].message
    assert elapsed < 8.0, f"{2 * n} suggestions took {elapsed:.1f} s"
