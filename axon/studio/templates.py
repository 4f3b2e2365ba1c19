"""Page parts in, escaped HTML text out: the layout every Studio page shares and the small
pieces (links, tables, forms) the pages are built from.

String templates (Jinja2 is not among what the `studio` extra installs): every value
that is not Studio's own markup goes through `e` (`html.escape` with quotes), in text
and in attributes, and every URL through `url` (query values percent-encoded). No inline
script or style: the CSP forbids both; `/static/studio.css` and `/static/studio.js` are
the only assets.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import urlencode

NAV = (("/", "Overview"), ("/search", "Search"), ("/stats", "Tier stats"), ("/trace", "Trace"))


def e(value: Any) -> str:
    """Any value as HTML text (and attribute-safe: quotes are escaped)."""
    return escape("" if value is None else str(value), quote=True)


def url(path: str, **query: Any) -> str:
    """`path` with the query values that are not None or empty, percent-encoded, escaped
    for an attribute."""
    pairs = {k: str(v) for k, v in query.items() if v is not None and v != ""}
    return e(path + ("?" + urlencode(pairs) if pairs else ""))


def link(text: Any, path: str, **query: Any) -> str:
    return f'<a href="{url(path, **query)}">{e(text)}</a>'


def page(title: str, body: str, *, write: bool = False) -> str:
    nav = " ".join(f'<a href="{e(href)}">{e(name)}</a>' for href, name in NAV)
    mode = '<span class="mode write">write mode</span>' if write else (
        '<span class="mode">read only</span>'
    )
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · AXON Studio</title>"
        '<link rel="stylesheet" href="/static/studio.css">'
        '<script src="/static/studio.js" defer></script></head><body>'
        f'<header><strong>AXON Studio</strong> <nav>{nav}</nav> {mode}</header>'
        f"<main><h1>{e(title)}</h1>{body}</main></body></html>"
    )


def error_page(title: str, message: str, *, write: bool = False) -> str:
    return page(title, f'<p class="error">{e(message)}</p>', write=write)


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table of cells that are already HTML (escape them with `e` or build them with
    `link`)."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{e(cls)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def form(action: str, fields: str, submit: str, *, method: str = "get", csrf: str = "") -> str:
    token = f'<input type="hidden" name="csrf" value="{e(csrf)}">' if csrf else ""
    return (
        f'<form method="{e(method)}" action="{e(action)}">{token}{fields}'
        f'<button type="submit">{e(submit)}</button></form>'
    )


def field(name: str, label: str, value: Any = "", *, kind: str = "text", size: int = 12) -> str:
    return (
        f'<label>{e(label)} <input type="{e(kind)}" name="{e(name)}" value="{e(value)}" '
        f'size="{size}"></label> '
    )


def select(name: str, label: str, options: Sequence[str], chosen: str) -> str:
    items = "".join(
        f'<option value="{e(o)}"{" selected" if o == chosen else ""}>{e(o or "any")}</option>'
        for o in options
    )
    return (
        f'<label>{e(label)} <select name="{e(name)}" class="autosubmit">{items}</select>'
        "</label> "
    )


def age(timestamp: float | None, now: float) -> str:
    """How long ago (or, for a future time, in how long), in the largest unit."""
    if timestamp is None:
        return ""
    seconds = now - timestamp
    ahead = seconds < 0
    seconds = abs(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            text = f"{int(seconds // size)}{unit}"
            break
    else:
        text = f"{int(seconds)}s"
    return f"in {text}" if ahead else f"{text} ago"


def when(timestamp: float | None) -> str:
    if timestamp is None:
        return ""
    try:
        moment = datetime.datetime.fromtimestamp(timestamp, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        return "far future"
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def definitions(items: Mapping[str, str]) -> str:
    """A definition list of already-HTML values."""
    return "<dl>" + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in items.items()) + "</dl>"


def size(count: int | None) -> str:
    if count is None:
        return '<span class="pending" title="computing">…</span>'
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:,} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count = count / 1024  # type: ignore[assignment]
    return str(count)
