"""Sample data and helpers shared by the router-level unit tests."""

from __future__ import annotations

from collections.abc import Iterable

from feedrouter import Router

#: Nested sections with ids, titles and a figure: enough for paths, predicates and constructors.
BOOK_DOC = b"""<book><section id="1"><title>Intro</title><figure><title>XML processing</title></figure>
<section id="2"><title>Deep</title></section></section><section id="3"><title>End</title></section></book>"""


def toggle(router: Router, steps: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Add each subscription that is not in ``router``, remove each that is; returns the live ones."""
    live: dict[str, str] = {}
    for sid, text in steps:
        if sid in live:
            router.remove(sid)
            del live[sid]
        else:
            router.add(sid, text)
            live[sid] = text
    return live
