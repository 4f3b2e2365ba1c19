""""Did you mean": good suggestions, at a cost that does not grow with the pool."""

from __future__ import annotations

from typing import Any

import pytest

import axon
from axon.compiler import names
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


def test_thousands_of_misspelt_names_compare_few_candidates_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """3,000 suggestions from pools of 1,500 names: each compares a bounded set of
    candidates (the deletion index), never the whole pool, so checking stays linear
    (the speed itself is `benchmarks/frontend.py`'s)."""
    n = 1500
    text = "".join(f"memory Notes{i:04d} {{ store: session }}\n" for i in range(n))
    text += "".join(f'recall("q") from Ntoes{i:04d}\n' for i in range(n))
    text += "".join(f"let value{i:04d} = 1\n" for i in range(n))
    text += "".join(f"remember(vaule{i:04d}) -> Notes0000\n" for i in range(n))
    compared: list[int] = []
    close_matches = names.difflib.get_close_matches

    def counting(word: str, possibilities: Any, *args: Any, **kwargs: Any) -> Any:
        pool = list(possibilities)
        compared.append(len(pool))
        return close_matches(word, pool, *args, **kwargs)

    monkeypatch.setattr(names.difflib, "get_close_matches", counting)
    with pytest.raises(AxonCheckError) as info:
        axon.compile(text)
    diagnostics = info.value.diagnostics
    assert len(diagnostics) == 2 * n
    assert "(did you mean 'Notes0007'?)" in diagnostics[7].message
    assert "(did you mean 'value0007'?)" in diagnostics[n + 7].message
    assert compared and max(compared) <= max(names._EXAMINED, SMALL_POOL) < n
