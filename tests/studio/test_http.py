"""AXON Studio over HTTP (starlette's TestClient on a real SQLite store): the token and
its cookie, the security headers, every page and API route, escaping of hostile stored
text, keyset paging and filters, read-only refusal, write mode with its CSRF token, and
trace files (good and malformed)."""

from __future__ import annotations

import datetime
import html
import json
import re
import time
from pathlib import Path
from typing import Any

from tests.conftest import require_extra

require_extra("starlette", "uvicorn", "httpx2", module_level=True)

from tests.studio.conftest import (  # noqa: E402
    HOSTILE_KEY,
    HOSTILE_META,
    HOSTILE_TAG,
    HOSTILE_VALUE,
    START,
)

PAGES = [
    "/",
    "/memory?name=Notes",
    "/entry?memory=Notes&key=pair-b",
    "/search?memory=Notes&q=tomatoes",
    "/stats",
    "/trace",
]


def _hostile_free(html: str) -> None:
    """No stored markup came through as markup: every hostile string is escaped."""
    for raw in ("<script>alert", "<img src=x", "<b onmouseover", "</pre><script>"):
        assert raw not in html


# ------------------------------------------------------------------ the token


def test_without_the_token_every_route_is_401_and_a_wrong_one_403(make_client: Any) -> None:
    client, _ = make_client(login=False)
    for path in [*PAGES, "/api/memories", "/static/studio.js"]:
        assert client.get(path).status_code == 401, path
    assert client.get("/?token=wrong").status_code == 403
    client.cookies.set("axon_studio", "wrong")
    assert client.get("/").status_code == 403
    assert client.post("/write/forget", data={"memory": "Notes"}).status_code == 403


def test_the_token_sets_an_httponly_strict_cookie_and_leaves_the_address(
    make_client: Any,
) -> None:
    client, _ = make_client(login=False)
    response = client.get("/memory?name=Notes&token=secret-token")
    assert response.status_code == 303
    assert response.headers["location"] == "/memory?name=Notes"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("axon_studio=secret-token;")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert client.get("/memory?name=Notes").status_code == 200


def test_every_response_has_a_csp_without_inline_script(make_client: Any) -> None:
    client, _ = make_client()
    for path in [*PAGES, "/api/stats", "/memory?name=Nope"]:
        headers = client.get(path).headers
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
    # and the pages hold no inline script or style to need one
    for path in PAGES:
        html = client.get(path).text
        assert re.findall(r"<script(?![^>]*\bsrc=)", html) == [], path
        assert " style=" not in html and "<style" not in html, path


# ------------------------------------------------------------------ pages


def test_every_page_is_served_and_linked(make_client: Any) -> None:
    client, _ = make_client()
    for path in PAGES:
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["content-type"].startswith("text/html")
        for nav in ('href="/"', 'href="/search"', 'href="/stats"', 'href="/trace"'):
            assert nav in response.text, (path, nav)


def test_overview_lists_memories_counts_and_a_chart(make_client: Any, store: Any) -> None:
    client, studio = make_client()
    html = client.get("/").text
    assert 'href="/memory?name=Notes"' in html and 'href="/memory?name=Other"' in html
    assert "<td>124</td>" in html  # 120 + the pair + the hostile entry + short-lived
    assert "<svg" in html and "entries per memory" in html
    studio.data.summaries.wait()
    data = client.get("/api/memories").json()
    notes = next(m for m in data["namespaces"][0]["memories"] if m["name"] == "Notes")
    assert notes["entries"] == 124 and notes["expiring_soon"] == 1 and notes["bytes"] > 4000
    assert data["namespaces"][0]["name"] is None


def test_memory_page_newest_first_with_every_column(make_client: Any) -> None:
    client, _ = make_client()
    html = client.get("/memory?name=Notes").text
    for column in ("key", "value", "type", "importance", "tags", "age", "expires"):
        assert f"<th>{column}</th>" in html
    assert html.index("short-lived") < html.index("pair-b") < html.index("note-119")
    assert "in 59m" in html  # the expiry of short-lived, an hour after it was stored
    assert 'href="/entry?memory=Notes&amp;key=note-119"' in html


def test_memory_pages_walk_every_entry_once_by_cursor(make_client: Any) -> None:
    client, _ = make_client()
    seen: list[str] = []
    path = "/memory?name=Notes"
    while True:
        html = client.get(path).text
        seen += re.findall(r'href="/entry\?memory=Notes&amp;key=([^"]+)"', html)
        older = re.search(r'<a href="([^"]+)">older →</a>', html)
        if older is None:
            break
        path = older.group(1).replace("&amp;", "&")
    assert len(seen) == 124 and len(set(seen)) == 124
    # the API pages the same way
    keys: list[str] = []
    after = ""
    while True:
        page = client.get("/api/entries", params={"memory": "Notes", "after": after,
                                                  "limit": "40"}).json()
        keys += [row["key"] for row in page["entries"]]
        if page["next"] is None:
            break
        after = page["next"]
    assert len(keys) == 124 and len(set(keys)) == 124


def test_memory_filters(make_client: Any) -> None:
    client, _ = make_client()

    def keys(**query: str) -> list[str]:
        rows = client.get("/api/entries", params={"memory": "Notes", "limit": "500",
                                                  **query}).json()["entries"]
        return [row["key"] for row in rows]

    assert len(keys(tag="even")) == 60
    assert all(int(k[5:]) % 3 == 0 for k in keys(type="long_term"))
    assert len(keys(min_importance="0.8")) == 12
    assert len(keys(where="topic=kitchen")) == 60
    since = keys(since=str(START + 100 * 60), until=str(START + 109 * 60))
    assert since == [f"note-{i:03d}" for i in range(109, 99, -1)]
    stamp = datetime.datetime.fromtimestamp(START + 100 * 60, datetime.UTC)
    assert keys(since=stamp.strftime("%Y-%m-%dT%H:%M:%SZ"))[-1] == "note-100"
    both = keys(tag="odd", type="short_term")
    assert both and all(int(k[5:]) % 2 == 1 and int(k[5:]) % 3 != 0 for k in both)
    html = client.get("/memory?name=Notes&tag=odd&type=short_term&limit=500").text
    assert "note-001" in html and "note-000" not in html and "note-003" not in html


def test_bad_filters_are_400_and_unknown_names_404(make_client: Any) -> None:
    client, _ = make_client()
    assert client.get("/memory?name=Notes&min_importance=lots").status_code == 400
    assert client.get("/memory?name=Notes&since=yesterday").status_code == 400
    assert client.get("/memory?name=Notes&limit=100000").status_code == 400
    assert client.get("/memory?name=Notes&after=garbage").status_code == 400
    missing = client.get("/memory?name=Notse")
    assert missing.status_code == 404 and "did you mean" in missing.text
    assert client.get("/entry?memory=Notes&key=nope").status_code == 404
    assert client.get("/api/entry?memory=Notes&key=nope").json()["error"]
    assert client.get("/search?memory=Notes&q=x&mode=psychic").status_code == 400


def test_entry_page_value_metadata_associations(make_client: Any) -> None:
    client, _ = make_client()
    html = client.get("/entry?memory=Notes&key=note-030").text
    assert "plain note number 30 about gardening" in html
    assert "&quot;topic&quot;: &quot;garden&quot;" in html  # metadata, pretty-printed
    assert "<dd>0.9</dd>" in html and "<dd>long_term</dd>" in html
    pair = client.get("/entry?memory=Notes&key=pair-b").text
    assert 'href="/entry?memory=Notes&amp;key=pair-a"' in pair
    data = client.get("/api/entry", params={"memory": "Notes", "key": "pair-a"}).json()
    assert [a["key"] for a in data["associated"]] == ["pair-b"]
    assert data["versions"] == [] and data["expires_at"] is None


def test_search_shows_scores_and_signal_bars(make_client: Any) -> None:
    client, _ = make_client()
    html = client.get("/search?memory=Notes&q=tomatoes&mode=hybrid").text
    assert "pair-a" in html and 'class="signals"' in html
    assert "of the score)</title>" in html  # the numbers on hover
    data = client.get("/api/search", params={"memory": "Notes", "q": "tomatoes",
                                             "mode": "hybrid", "top_k": "3"}).json()
    assert 1 <= len(data["results"]) <= 3
    first = data["results"][0]
    assert first["score"] > 0 and first["signals"]
    assert abs(sum(s["share"] for s in first["signals"]) - 1) < 1e-3
    # importance is a factor of the score, not a part of it: beside the bar, not in it
    boosted = client.get("/api/search", params={"memory": "Notes", "q": "gardening note",
                                                "mode": "hybrid", "top_k": "50"}).json()
    factors = [r["factors"] for r in boosted["results"] if r["factors"]]
    assert factors and all(set(f) == {"importance"} for f in factors)
    assert all(s["signal"] != "importance" for r in boosted["results"] for s in r["signals"])
    # each signal has one colour, the legend's, whatever the other signals of its result
    legend = dict((name, colour) for colour, name in re.findall(
        r'<rect width="10" height="10" fill="(#\w+)"/></svg> (\w+)</span>', html))
    parts = re.findall(r'fill="(#\w+)"><title>(\w+): ', html)
    assert len(legend) >= 2 and parts
    assert all(legend[name] == colour for colour, name in parts), (legend, parts)
    keyword = client.get("/api/search", params={"memory": "Notes", "q": "tomatoes",
                                                "mode": "keyword", "min_score": "0.99"}).json()
    assert keyword["results"] == [] or all(r["score"] >= 0.99 for r in keyword["results"])


def test_stats_and_api_stats(make_client: Any) -> None:
    client, _ = make_client()
    html = client.get("/stats").text
    for column in ("stores", "recalls", "forgets", "promotions", "demotions"):
        assert f"<th>{column}</th>" in html
    data = client.get("/api/stats").json()
    assert {m["name"] for m in data["memories"]} == {"Notes", "Other"}


# ------------------------------------------------------------------ escaping


def test_hostile_stored_text_is_text_on_every_page(make_client: Any) -> None:
    client, _ = make_client(write=True)
    key = HOSTILE_KEY
    paths = [
        "/", "/memory?name=Notes", "/search?memory=Notes&q=alert", "/stats", "/trace",
    ]
    for path in paths:
        _hostile_free(client.get(path).text)
    entry = client.get("/entry", params={"memory": "Notes", "key": key})
    assert entry.status_code == 200
    _hostile_free(entry.text)
    assert "&lt;script&gt;alert(&quot;v&quot;)&lt;/script&gt;" in entry.text
    assert "&lt;b onmouseover=alert(3)&gt;" in entry.text
    assert "&lt;/pre&gt;&lt;script&gt;alert(4)" in entry.text
    # in attributes too: the key in a link and in the write forms' hidden fields
    assert 'value="&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"' in entry.text
    listing = client.get("/memory?name=Notes").text
    assert "key=%22%3E%3Cimg+src%3Dx+onerror%3Dalert%282%29%3E" in listing
    # the API gives the stored text as it is (JSON is data, served as application/json)
    data = client.get("/api/entry", params={"memory": "Notes", "key": key}).json()
    assert data["value"] == HOSTILE_VALUE and data["tags"] == [HOSTILE_TAG]
    assert data["metadata"]["note"] == HOSTILE_META


# ------------------------------------------------------------------ changes


def test_read_only_refuses_every_change(make_client: Any) -> None:
    client, studio = make_client(write=False)
    for path in ("/write/forget", "/write/update", "/write/purge"):
        response = client.post(path, data={"memory": "Notes", "key": "note-001",
                                           "csrf": studio.csrf, "value": "x"})
        assert response.status_code == 403 and "without --write" in response.text
    assert client.get("/api/entry?memory=Notes&key=note-001").status_code == 200
    assert "<form method=\"post\"" not in client.get("/entry?memory=Notes&key=note-001").text


def test_changes_need_post_and_the_csrf_token(make_client: Any) -> None:
    client, studio = make_client(write=True)
    assert client.get("/write/forget?memory=Notes&key=note-001").status_code == 405
    for csrf in (None, "wrong"):
        data = {"memory": "Notes", "key": "note-001"}
        if csrf:
            data["csrf"] = csrf
        response = client.post("/write/forget", data=data)
        assert response.status_code == 403 and "CSRF" in response.text
    assert client.get("/api/entry?memory=Notes&key=note-001").status_code == 200
    html = client.get("/entry?memory=Notes&key=note-001").text
    assert f'name="csrf" value="{studio.csrf}"' in html


def test_forget_update_purge_are_traced(make_client: Any, store: Any) -> None:
    from axon import Session

    memory_dir, _ = store
    with Session(memory_dir=memory_dir) as session:
        session.execute("memory Other { store: persistent backend: sqlite }")
        session.memory("Other").remember("gone in a moment", key="blink", expires_in=0.2)
    client, studio = make_client(write=True)
    forgot = client.post("/write/forget", data={"memory": "Notes", "key": "note-001",
                                                "csrf": studio.csrf})
    assert forgot.status_code == 303 and forgot.headers["location"] == "/memory?name=Notes"
    assert client.get("/api/entry?memory=Notes&key=note-001").status_code == 404
    again = client.post("/write/forget", data={"memory": "Notes", "key": "note-001",
                                               "csrf": studio.csrf})
    assert again.status_code == 404
    assert "no such entry (memory 'Notes', key 'note-001')" in html.unescape(again.text)

    updated = client.post("/write/update", data={
        "memory": "Notes", "key": "note-010", "csrf": studio.csrf,
        "value": '{"text": "changed"}', "tags": "a, b", "importance": "0.5",
    })
    assert updated.status_code == 303
    entry = client.get("/api/entry?memory=Notes&key=note-010").json()
    assert entry["value"] == {"text": "changed"} and entry["tags"] == ["a", "b"]
    assert entry["importance"] == 0.5 and entry["metadata"]["topic"] == "garden"
    assert entry["type"] == "short_term"
    bad = client.post("/write/update", data={"memory": "Notes", "key": "note-010",
                                             "csrf": studio.csrf, "importance": "7"})
    assert bad.status_code == 400

    time.sleep(0.3)  # blink has expired (by the real clock the backend purges with)
    purged = client.post("/write/purge", data={"csrf": studio.csrf})
    assert purged.status_code == 303 and purged.headers["location"] == "/"
    events = client.get("/api/trace?file=-1").json()
    kinds = {(e["event_type"], e["memory"]) for e in events["events"]}
    assert {("memory_delete", "Notes"), ("memory_write", "Notes")} <= kinds, kinds
    expired = [e for e in events["events"] if e["event_type"] == "memory_expire"]
    assert [(e["memory"], e["data"]["count"]) for e in expired] == [("Other", 1)]


# ------------------------------------------------------------------ traces and assets


def _trace_file(tmp_path: Path) -> Path:
    import axon

    result = axon.run(
        "memory Facts { store: ephemeral }\n"
        'remember("<script>alert(5)</script> facts") -> Facts\n'
        'recall("facts") from Facts\n',
        memory_dir=tmp_path / "run",
    )
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"events": [dict(e) if isinstance(e, dict) else e.to_dict()
                                           for e in result.events]}))
    return path


def test_trace_timeline_filters_and_details(make_client: Any, tmp_path: Path) -> None:
    path = _trace_file(tmp_path)
    client, _ = make_client(traces=(path,))
    html = client.get("/trace").text
    assert "memory_write" in html and "memory_read" in html and "<details>" in html
    assert 'class="timeline"' in html and " ms</td>" in html
    _hostile_free(html)
    only_reads = client.get("/trace?file=0&operation=memory_read").text
    assert "<summary>memory_read</summary>" in only_reads
    assert "<summary>memory_write</summary>" not in only_reads
    data = client.get("/api/trace?file=0&memory=Facts").json()
    assert data["events"] and all(e["memory"] == "Facts" for e in data["events"])
    assert client.get("/api/trace?file=0&memory=Nothing").json()["events"] == []


def test_a_malformed_trace_is_an_error_page(make_client: Any, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"events": [{"event_type": 5}]')
    not_trace = tmp_path / "list.json"
    not_trace.write_text('[1, 2]')
    client, _ = make_client(traces=(broken, not_trace, tmp_path / "missing.json"))
    for index in range(3):
        response = client.get(f"/trace?file={index}")
        assert response.status_code == 400 and 'class="error"' in response.text
    assert client.get("/trace?file=7").status_code == 404
    assert client.get("/trace?file=../../etc/passwd").status_code == 404


def test_static_assets_come_from_the_package_only(make_client: Any) -> None:
    client, _ = make_client()
    script = client.get("/static/studio.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith(
        "text/javascript")
    assert len(script.content) < 4096  # a few kilobytes at most
    assert client.get("/static/studio.css").status_code == 200
    for name in ("app.py", "..%2F__init__.py", "%2E%2E%2Fdata.py"):
        assert client.get(f"/static/{name}").status_code == 404
    html = client.get("/").text
    assert re.findall(r'(?:src|href)="(?:https?:)?//', html) == []  # no CDN


def test_a_long_trace_is_paged(make_client: Any, tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    events = [{"event_type": "memory_write", "timestamp": 10 + i, "duration_ms": 1.0,
               "data": {"memory": "M", "key": f"k{i}"}} for i in range(450)]
    path.write_text(json.dumps({"events": events}))
    client, _ = make_client(traces=(path,))
    first = client.get("/trace?file=0").text
    assert first.count("<details>") == 200 and "1–200 of 450 events" in first
    later = re.search(r'<a href="([^"]+)">later events →</a>', first)
    assert later is not None
    second = client.get(later.group(1).replace("&amp;", "&")).text
    assert "201–400 of 450 events" in second and "&quot;k200&quot;" in second
    last = client.get("/api/trace?file=0&start=400").json()
    assert len(last["events"]) == 50 and last["next"] is None
    assert client.get("/trace?file=0&start=many").status_code == 400
