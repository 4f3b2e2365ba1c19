"""Studio over a PostgreSQL store: the same pages and API on pgvector (a schema of its
own, created by a session as a program would), found without a memory directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require_extra

require_extra("starlette", "uvicorn", "httpx2", module_level=True)

from tests.memory.conftest import pg_dsn_or_skip, pg_test_schema  # noqa: E402

pytestmark = pytest.mark.postgres


def test_pages_and_api_over_postgres(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from axon import Session
    from axon.studio import store_arguments
    from axon.studio.app import Studio, build_app
    from axon.studio.data import StudioData

    dsn, schema = pg_dsn_or_skip(), pg_test_schema(tmp_path)
    with Session(memory_dir=tmp_path, pg_dsn=dsn, pg_schema=schema) as session:
        session.execute("memory Facts { store: persistent backend: pgvector }")
        facts = session.memory("Facts")
        for index in range(60):
            facts.remember(f"fact {index} about <b>postgres</b>", key=f"f{index:02d}",
                           tags=["pg"], related=["f00"] if index else None)
    data = StudioData(**store_arguments(tmp_path / "unused", dsn, schema))
    try:
        client = TestClient(build_app(Studio(data, token="t")), follow_redirects=False)
        assert client.get("/?token=t").status_code == 303
        overview = client.get("/").text
        assert 'href="/memory?name=Facts"' in overview and "<td>60</td>" in overview
        keys: list[str] = []
        after = ""
        while True:
            page = client.get("/api/entries", params={"memory": "Facts", "after": after,
                                                      "limit": "25"}).json()
            keys += [row["key"] for row in page["entries"]]
            if page["next"] is None:
                break
            after = page["next"]
        assert sorted(keys) == [f"f{i:02d}" for i in range(60)]
        entry = client.get("/entry?memory=Facts&key=f07").text
        assert "fact 7 about &lt;b&gt;postgres&lt;/b&gt;" in entry
        assert 'href="/entry?memory=Facts&amp;key=f00"' in entry
        found = client.get("/api/search", params={"memory": "Facts", "q": "fact 7",
                                                  "mode": "keyword"}).json()
        assert found["results"][0]["key"] == "f07"
        assert client.get("/stats").status_code == 200
    finally:
        data.summaries.wait()
        data.close()
