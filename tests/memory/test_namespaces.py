"""Namespaces as written -> checked `Namespace` values and the scopes of their entries."""

from __future__ import annotations

import pytest

import axon
from axon.errors import AxonError
from axon.memory.namespaces import ROOT, Namespace, split_scope


@pytest.mark.parametrize(
    ("written", "labels"),
    [
        ("acme/u42", ("acme", "u42")),
        (("acme", "u42"), ("acme", "u42")),
        (["acme"], ("acme",)),
        ("", ()),
        (None, ()),
        ("/".join("abcdefgh"), tuple("abcdefgh")),
        ("x" * 128, ("x" * 128,)),
        ("ünï cøde/with space", ("ünï cøde", "with space")),
    ],
)
def test_good_namespaces(written: object, labels: tuple[str, ...]) -> None:
    assert Namespace.of(written).labels == labels
    assert axon.Namespace is Namespace


@pytest.mark.parametrize(
    ("written", "rule"),
    [
        ("a//b", "is empty"),
        ("/a", "is empty"),
        ("a/", "is empty"),
        ("a/.", "may not be '.' or '..'"),
        ("../a", "may not be '.' or '..'"),
        ("x" * 129, "at most 128"),
        ("/".join("abcdefghi"), "at most 8"),
        (("a/b",), "holds '/'"),
        ("a\x00b", "control character"),
        ("a\x1fb", "control character"),
        ("tab\there", "control character"),
        ((), None),
    ],
)
def test_bad_namespaces_name_the_namespace_and_the_rule(written: object, rule: str | None) -> None:
    if rule is None:
        assert Namespace.of(written) == ROOT
        return
    with pytest.raises(AxonError) as raised:
        Namespace.of(written)
    assert repr(written) in str(raised.value)
    assert rule in str(raised.value)


def test_a_namespace_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="namespace must be a str"):
        Namespace.of(42)


def test_scopes_root_unchanged_prefixes_unambiguous() -> None:
    acme, below, other = Namespace.of("acme"), Namespace.of("acme/u42"), Namespace.of("acmeX")
    assert ROOT.scope("Notes") == "Notes"  # a store written before namespaces opens as it was
    assert below.scope("Notes").startswith(acme.scope_prefix)
    assert not other.scope("Notes").startswith(acme.scope_prefix)
    assert not acme.scope("Notes").startswith(below.scope_prefix)
    assert acme.contains(below) and not below.contains(acme) and not acme.contains(other)
    for namespace in (ROOT, acme, below):
        assert split_scope(namespace.scope("~axon|h|1|s|n|session|Notes")) == (
            namespace,
            "~axon|h|1|s|n|session|Notes",
        )
