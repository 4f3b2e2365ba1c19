"""`session.memories[name]` is the bound memory: one protocol (`axon.runtime.memory.Memory`)
answered alike by a memory of one store and a tiered one (issue 27)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import axon
from axon.errors import AxonMemoryError
from axon.runtime.memory import Memory
from axon.runtime.plain import PlainMemory
from axon.runtime.tiered import TieredMemory

TIERED = "memory T { tiers: [session, persistent] store: session retrieval: keyword }\n"


def protocol_members() -> list[str]:
    return [name for name in vars(Memory) if not name.startswith("_")]


@pytest.mark.parametrize("cls", [PlainMemory, TieredMemory])
def test_both_kinds_answer_every_operation_with_the_protocol_s_parameters(cls: type) -> None:
    assert len(protocol_members()) >= 19
    for name in protocol_members():
        wanted = getattr(Memory, name)
        if isinstance(wanted, property):  # an attribute set in __init__ does too (decl)
            assert isinstance(getattr(cls, name, None), property) or name == "decl"
            continue
        mine = getattr(cls, name)
        params = list(inspect.signature(mine).parameters)
        assert params == list(inspect.signature(wanted).parameters), (cls, name)
        assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(wanted)


def test_an_undeclared_memory_is_an_axon_error_naming_it(tmp_path: Path) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute("memory Notes { store: session }")
        with pytest.raises(AxonMemoryError, match="memory 'Nope' is not declared") as info:
            session.memories["Nope"]
        assert info.value.memory == "Nope"
        assert "Notes" in session.memories and "Nope" not in session.memories


def test_sources_and_place_name_the_stores_an_export_reads_and_an_import_writes(
    tmp_path: Path,
) -> None:
    with axon.Session(memory_dir=tmp_path) as session:
        session.execute(TIERED + "memory P { store: persistent }")
        tiered = session.memories["T"]
        tiers = tiered.tiers
        session.memory("T").remember("kept", key="old", tier="persistent")

        async def places() -> tuple[object, ...]:
            plain = session.memories["P"]
            return (
                await tiered.sources(),
                await tiered.place("old", {}),
                await tiered.place("new", {}),
                await plain.sources(),
                await plain.place("any", {}),
            )

        sources, old, new, plain_sources, plain_place = session.run_on_loop(places())
        persistent, fast = tiers["persistent"], tiers["session"]
        assert sources == [(fast.backend, fast.scope), (persistent.backend, persistent.scope)]
        assert old == (persistent.backend, persistent.scope)  # where the key lives
        assert new == (fast.backend, fast.scope)  # where a remember would write it
        plain = session.memories["P"]
        assert plain_sources == [(plain.backend, "P")] and plain_place == (plain.backend, "P")
