"""The versions of a Chroma memory collection's entries (`axon.memory.versions`), kept in
a collection of their own beside it (`<collection>-h`).

One record per version: its scope (coded as the entries' are), key, operation, value
and metadata as JSON text (empty for a `forget`), `updated_at` and `expires_at` as the
exact `repr` of the float (Chroma hands floats back rounded), `seq` (the writer's
`_SEQ`: nanoseconds, never smaller than the last) and `keep`. Chroma needs a vector per
record; a version's is the constant `[1.0]` (versions are never searched). Functions
of the collection (`collection`: a chromadb collection, the backend's connection
supplies it); nothing here is atomic across records (Chroma has no transactions): a
trim that fails part way leaves a version too many, never one too few.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from axon.memory.entry import encode_json
from axon.memory.versions import KEEP_ALL, Version, version_from_row

PAGE = 5000
"""Records per `get`/`delete` (Chroma turns ids into SQL variables: see chroma.GET_PAGE)."""

_VECTOR = [1.0]


def _id(code: str, key: str, seq: int) -> str:
    return "h" + hashlib.sha1(json.dumps([code, key, seq]).encode()).hexdigest()


def _where(code: str, key: str) -> dict[str, Any]:
    return {"$and": [{"scope": code}, {"key": key}]}


def _get(collection: Any, where: dict[str, Any] | None) -> tuple[list[str], list[dict[str, Any]]]:
    """Every record matching `where` (all: None), a page at a time."""
    ids: list[str] = []
    metas: list[dict[str, Any]] = []
    offset = 0
    while True:
        got = collection.get(where=where, include=["metadatas"], limit=PAGE, offset=offset)
        ids += list(got["ids"])
        metas += [dict(m) for m in got["metadatas"] or []]
        if len(got["ids"]) < PAGE:
            return ids, metas
        offset += PAGE


def _delete(collection: Any, ids: Sequence[str]) -> None:
    for start in range(0, len(ids), PAGE):
        collection.delete(ids=list(ids[start : start + PAGE]))


def record(
    collection: Any, code: str, versions: Sequence[Version], keep: int, seq: Callable[[], int]
) -> None:
    """Add `versions` (scope coded `code`), then keep each key's newest `keep + 1`."""
    ids, metas = [], []
    for version in versions:
        number = seq()
        forget = version.op == "forget"
        ids.append(_id(code, version.key, number))
        metas.append(
            {
                "scope": code,
                "key": version.key,
                "op": version.op,
                "value": "" if forget else encode_json(version.value),
                "meta": "" if forget else encode_json(version.metadata),
                "at": repr(float(version.updated_at)),
                "exp": "" if version.expires_at is None else repr(float(version.expires_at)),
                "seq": number,
                "keep": keep,
            }
        )
    collection.add(ids=ids, embeddings=[_VECTOR] * len(ids), metadatas=metas)
    if keep == KEEP_ALL:
        return
    for key in dict.fromkeys(v.key for v in versions):
        found, kept = _get(collection, _where(code, key))
        order = sorted(zip(found, kept, strict=True), key=lambda pair: -int(pair[1]["seq"]))
        _delete(collection, [ident for ident, _ in order[keep + 1 :]])


def read(collection: Any, code: str, key: str) -> list[Version]:
    """The versions of `key` in the scope coded `code`, in any order."""
    _, metas = _get(collection, _where(code, key))
    return [
        version_from_row(
            str(m["key"]),
            str(m["op"]),
            None if m["op"] == "forget" else json.loads(str(m["value"])),
            None if m["op"] == "forget" else json.loads(str(m["meta"])),
            float(str(m["at"])),
            float(str(m["exp"])) if m["exp"] else None,
            int(m["seq"]),
            int(m["keep"]),
        )
        for m in metas
    ]


def drop(collection: Any, wanted: Callable[[str], bool] | str | None) -> int:
    """Delete the versions of the scope coded `wanted` (a code), of every scope whose code
    `wanted(code)` accepts (a test), or all (None); how many went."""
    if isinstance(wanted, str):
        ids, _ = _get(collection, {"scope": wanted})
    else:
        found, metas = _get(collection, None)
        ids = [i for i, m in zip(found, metas, strict=True)
               if wanted is None or wanted(str(m["scope"]))]
    _delete(collection, ids)
    return len(ids)
