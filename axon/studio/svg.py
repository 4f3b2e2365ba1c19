"""Numbers in, server-rendered SVG charts out (escaped text, no script, no external asset).

`bar_chart` draws one horizontal bar per label (entries per memory on the overview);
`stacked_bar` one bar split by shares (a search result's signals), each part with a
`<title>` the browser shows on hover; `timeline_bar` an event's place and duration on a
trace's time axis. Every label goes through `html.escape` (quotes too): a stored name is
text in the SVG as everywhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

PALETTE = ("#3b6ea5", "#e07b39", "#5a9e5a", "#b5485d", "#8a6bb1", "#9c8a3b", "#4a9ca6")
"""Colours of the signals of a stacked bar, in order (a class could not be styled per
part without inline style; SVG `fill` attributes are not inline style)."""


def bar_chart(items: Sequence[tuple[str, int]], width: int = 560, bar: int = 18) -> str:
    """One bar per `(label, value)`, scaled to the largest; values written beside."""
    if not items:
        return ""
    largest = max(value for _, value in items) or 1
    label_width = 160
    room = width - label_width - 70
    rows = []
    for index, (label, value) in enumerate(items):
        y = index * (bar + 6)
        length = max(1, round(room * value / largest)) if value else 0
        shown = escape(label if len(label) <= 24 else label[:23] + "…")
        rows.append(
            f'<g><title>{escape(label)}: {value:,} entries</title>'
            f'<text x="{label_width - 6}" y="{y + bar - 5}" text-anchor="end">{shown}</text>'
            f'<rect x="{label_width}" y="{y}" width="{length}" height="{bar}" fill="{PALETTE[0]}"/>'
            f'<text x="{label_width + length + 6}" y="{y + bar - 5}">{value:,}</text></g>'
        )
    height = len(items) * (bar + 6)
    return (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="entries per memory">{"".join(rows)}</svg>'
    )


def stacked_bar(
    parts: Sequence[tuple[str, float, float]], signals: Sequence[str],
    width: int = 240, height: int = 14,
) -> str:
    """A bar split by `(signal, value, share)` parts (shares summing to 1), each signal in
    its colour of `legend(signals)`; each part's `<title>` holds its signal, value and
    share, the numbers shown on hover."""
    x = 0.0
    rects = []
    for signal, value, share in parts:
        length = width * max(0.0, min(share, 1.0))
        place = signals.index(signal) if signal in signals else len(signals)
        colour = PALETTE[place % len(PALETTE)]
        rects.append(
            f'<rect x="{x:.2f}" y="0" width="{length:.2f}" height="{height}" fill="{colour}">'
            f'<title>{escape(signal)}: {value:.4f} ({share:.0%} of the score)</title></rect>'
        )
        x += length
    return (
        f'<svg class="signals" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="signal shares">{"".join(rects)}</svg>'
    )


def legend(signals: Sequence[str]) -> str:
    """The colours of `stacked_bar`'s parts, as a small SVG per signal and its name."""
    items = []
    for index, signal in enumerate(signals):
        colour = PALETTE[index % len(PALETTE)]
        items.append(
            f'<span class="legend"><svg xmlns="http://www.w3.org/2000/svg" width="10" '
            f'height="10"><rect width="10" height="10" fill="{colour}"/></svg> '
            f"{escape(signal)}</span>"
        )
    return " ".join(items)


def timeline_bar(start: float, duration: float, span: float, width: int = 300) -> str:
    """Where an event sits on a trace's time axis (`start` and `duration` in seconds from
    the first event, `span` the whole trace's length) as a thin SVG bar."""
    span = span if span > 0 else 1.0
    x = width * min(max(start / span, 0.0), 1.0)
    length = max(1.5, width * min(duration / span, 1.0))
    length = min(length, width - x) if x < width else 1.5
    return (
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{width}" height="10" '
        f'viewBox="0 0 {width} 10"><rect x="0" y="4" width="{width}" height="2" fill="#ddd"/>'
        f'<rect x="{x:.2f}" y="0" width="{length:.2f}" height="10" fill="{PALETTE[1]}"/></svg>'
    )
