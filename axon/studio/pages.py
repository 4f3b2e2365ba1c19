"""`StudioData`'s dicts in, the HTML of each Studio page out (overview, memory, entry,
search, trace, tier stats), every stored string escaped (`templates.e`).

Pages work with JavaScript off: filters and searches are GET forms, changes (`--write`)
POST forms carrying the CSRF token, and every memory, entry and associated entry is a
plain link. Each function takes what `StudioData` returned and the request's query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import axon.studio.svg as svg
from axon.studio.data import value_json
from axon.studio.templates import (
    age,
    definitions,
    e,
    field,
    form,
    link,
    page,
    select,
    size,
    table,
    url,
    when,
)


def overview(data: Mapping[str, Any], write: bool, csrf: str = "") -> str:
    parts = [f'<p>Store: <code>{e(data["store"])}</code></p>']
    for namespace in data["namespaces"]:
        memories = namespace["memories"]
        if namespace["name"] is not None:  # namespaces, when stores have them
            parts.append(f"<h2>Namespace {e(namespace['name'])}</h2>")
        if not memories:
            parts.append("<p>The store holds no memories.</p>")
            continue
        rows = [
            [
                link(m["name"], "/memory", name=m["name"]),
                f"{m['entries']:,}",
                e(", ".join(m["tiers"])),
                size(m["bytes"]),
                size(m["expiring_soon"]).replace(" B", "") if m["expiring_soon"] is not None
                else size(None),
                link("search", "/search", memory=m["name"]),
            ]
            for m in memories
        ]
        parts.append(table(
            ["memory", "entries", "tiers", "size (values)", "expiring in 24h", ""], rows,
        ))
        parts.append("<h2>Entries per memory</h2>")
        parts.append(svg.bar_chart([(m["name"], m["entries"]) for m in memories]))
    if write:
        parts.append(form(
            "/write/purge", "", "Purge expired entries (every memory)", method="post",
            csrf=csrf,
        ))
    return page("Overview", "".join(parts), write=write)


def memory(data: Mapping[str, Any], query: Mapping[str, str], write: bool, csrf: str) -> str:
    name = data["memory"]
    now = data["now"]
    filters = form(
        "/memory",
        '<input type="hidden" name="name" value="' + e(name) + '">'
        + field("tag", "tags", query.get("tag", ""))
        + field("type", "type", query.get("type", ""), size=10)
        + field("min_importance", "min importance", query.get("min_importance", ""), size=4)
        + field("where", "metadata FIELD=VALUE", query.get("where", ""))
        + field("since", "since", query.get("since", ""), size=16)
        + field("until", "until", query.get("until", ""), size=16),
        "Filter",
    )
    rows = [
        [
            link(r["key"], "/entry", memory=name, key=r["key"]),
            e(r["excerpt"]),
            e(r["type"] or ""),
            e("" if r["importance"] is None else f"{r['importance']:g}"),
            e(", ".join(r["tags"])),
            f'<span title="{e(when(r["created_at"]))}">{e(age(r["created_at"], now))}</span>',
            f'<span title="{e(when(r["expires_at"]))}">{e(age(r["expires_at"], now))}</span>',
        ]
        for r in data["entries"]
    ]
    body = [
        f"<p>{link('search this memory', '/search', memory=name)}</p>",
        filters,
        table(["key", "value", "type", "importance", "tags", "age", "expires"], rows)
        if rows else "<p>No entries on this page.</p>",
    ]
    kept = {k: v for k, v in query.items() if k not in ("after", "name")}
    nav = [link("newest", "/memory", name=name, **kept)] if query.get("after") else []
    if data["next"]:
        nav.append(link("older →", "/memory", name=name, after=data["next"], **kept))
    body.append(f'<p class="pager">{" · ".join(nav)}</p>')
    return page(f"Memory {name}", "".join(body), write=write)


def entry(data: Mapping[str, Any], write: bool, csrf: str) -> str:
    name, key, now = data["memory"], data["key"], data["now"]
    associated = "".join(
        f"<li>{link(a['key'], '/entry', memory=name, key=a['key'])} {e(a['excerpt'])}</li>"
        for a in data["associated"]
    ) or "<li>none</li>"
    versions = "".join(
        f"<li>{e(when(v.get('at')))}: <pre>{e(value_json(v.get('value'), 2))}</pre></li>"
        for v in data["versions"]
    )
    facts = {
        "memory": link(name, "/memory", name=name),
        "key": e(key),
        "type": e(data["type"] or ""),
        "importance": e("" if data["importance"] is None else f"{data['importance']:g}"),
        "tags": e(", ".join(data["tags"])),
        "tier": e(data["tier"] or ""),
        "stored": e(f"{when(data['created_at'])} ({age(data['created_at'], now)})"),
        "expires": e(
            f"{when(data['expires_at'])} ({age(data['expires_at'], now)})"
            if data["expires_at"] is not None else "never"
        ),
    }
    body = [
        definitions(facts),
        "<h2>Value</h2>", f'<pre class="value">{e(value_json(data["value"], 2))}</pre>',
        "<h2>Metadata</h2>", f"<pre>{e(value_json(data['metadata'], 2))}</pre>",
        "<h2>Associated entries</h2>", f"<ul>{associated}</ul>",
    ]
    if versions:  # when entries keep their history
        body += ["<h2>Versions</h2>", f"<ul>{versions}</ul>"]
    if write:
        hidden = (
            f'<input type="hidden" name="memory" value="{e(name)}">'
            f'<input type="hidden" name="key" value="{e(key)}">'
        )
        value = data["value"] if isinstance(data["value"], str) else value_json(data["value"])
        body += [
            "<h2>Change</h2>",
            form(
                "/write/update",
                hidden
                + f'<label>value (JSON, else text)<br><textarea name="value" rows="4" '
                f'cols="60">{e(value)}</textarea></label><br>'
                + field("tags", "tags (comma-separated)", ", ".join(data["tags"]))
                + field("importance", "importance", data["importance"] or "", size=4),
                "Update", method="post", csrf=csrf,
            ),
            form("/write/forget", hidden, "Forget this entry", method="post", csrf=csrf),
        ]
    return page(f"Entry {key}", "".join(body), write=write)


def search(
    data: Mapping[str, Any] | None, names: Sequence[str], query: Mapping[str, str],
    modes: Sequence[str], write: bool,
) -> str:
    chosen = query.get("memory", "") or (names[0] if names else "")
    fields = (
        select("memory", "memory", list(names), chosen)
        + field("q", "query", query.get("q", ""), size=30)
        + select("mode", "mode", ["", *modes], query.get("mode", ""))
        + field("top_k", "top_k", query.get("top_k", ""), size=4)
        + field("min_score", "min_score", query.get("min_score", ""), size=4)
    )
    body = [form("/search", fields, "Search")]
    if data is not None and data["query"].strip():
        results = data["results"]
        signals = sorted({s["signal"] for r in results for s in r["signals"]})
        order = {s: i for i, s in enumerate(signals)}
        rows = []
        for rank, r in enumerate(results, 1):
            parts = sorted(r["signals"], key=lambda s: order[s["signal"]])
            bar = svg.stacked_bar([(s["signal"], s["value"], s["share"]) for s in parts], signals)
            shares = ", ".join(f"{s['signal']} {s['share']:.0%}" for s in parts)
            shares += "".join(f", × {v:g} {k}" for k, v in r["factors"].items())
            rows.append([
                str(rank), link(r["key"], "/entry", memory=data["memory"], key=r["key"]),
                e(r["excerpt"]), f"{r['score']:.4f}",
                bar + f' <span class="shares">{e(shares)}</span>' if parts else "",
            ])
        if signals:
            body.append(f"<p>Signals: {svg.legend(signals)}</p>")
        body.append(
            table(["#", "key", "value", "score", "why (signal shares)"], rows)
            if rows else "<p>Nothing found.</p>"
        )
        if data["below_floor"]:
            everything = link("min_score 0 shows them", "/search", **{**query, "min_score": "0"})
            body.append(
                f"<p>{data['below_floor']:,} of the nearest entries scored below the "
                f"relevance floor ({everything}).</p>"
            )
    return page("Search", "".join(body), write=write)


def stats(data: Mapping[str, Any], write: bool) -> str:
    rows = []
    for m in data["memories"]:
        for tier, counts in m["tiers"].items():
            rows.append([
                link(m["name"], "/memory", name=m["name"]), e(tier),
                *(f"{counts.get(k, 0):,}" for k in
                  ("stores", "recalls", "forgets", "promotions", "demotions")),
            ])
    body = table(
        ["memory", "tier", "stores", "recalls", "forgets", "promotions", "demotions"], rows
    ) if rows else "<p>The store holds no memories.</p>"
    note = "<p>Counted by the store for tiered memories, else by this Studio session.</p>"
    return page("Tier stats", body + note, write=write)


def trace(
    files: Sequence[tuple[int, str, str | None]], chosen: int | None,
    data: Mapping[str, Any] | None, query: Mapping[str, str], write: bool,
) -> str:
    """`files`: (index, label, error) of each trace (`-1` is this Studio session)."""
    tabs = " · ".join(
        link(label, "/trace", file=index) if index != chosen else f"<strong>{e(label)}</strong>"
        for index, label, _ in files
    )
    body = [f"<p>{tabs}</p>"]
    if data is None:
        return page("Trace", "".join(body), write=write)
    fields = (
        f'<input type="hidden" name="file" value="{e(chosen)}">'
        + select("memory", "memory", ["", *data["memories"]], query.get("memory", ""))
        + select("operation", "operation", ["", *data["operations"]], query.get("operation", ""))
    )
    body.append(form("/trace", fields, "Filter"))
    rows = []
    for event in data["events"]:
        details = (
            f"<details><summary>{e(event['event_type'])}</summary>"
            f"<pre>{e(value_json(event['data'], 2))}</pre></details>"
        )
        rows.append([
            f"{event['offset']:.3f}s", details, e(event["memory"] or ""),
            f"{event['duration_ms']:.2f} ms",
            svg.timeline_bar(event["offset"], event["duration_ms"] / 1000, data["span"]),
        ])
    body.append(
        table(["at", "event", "memory", "duration", "timeline"], rows)
        if rows else "<p>No memory events match.</p>"
    )
    kept = {k: v for k, v in query.items() if k not in ("start", "file")}
    nav = []
    if data["start"]:
        nav.append(link("first events", "/trace", file=chosen, **kept))
    if data["next"] is not None:
        nav.append(link("later events →", "/trace", file=chosen, start=data["next"], **kept))
    body.append(
        f'<p class="pager">{data["start"] + 1:,}–{data["start"] + len(data["events"]):,} '
        f'of {data["matched"]:,} events {" · ".join(nav)}</p>' if data["events"] else ""
    )
    return page("Trace", "".join(body), write=write)


__all__ = ["entry", "memory", "overview", "search", "stats", "trace", "url"]
