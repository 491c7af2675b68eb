"""The per-document context: each selected node is serialized at most once per document."""

from __future__ import annotations

from collections import Counter

import pytest
from lxml import etree

import feedrouter.plan.context as context_module
from feedrouter import Router
from tests.unit.support import BOOK_DOC


def test_a_node_many_results_hold_is_serialized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    serialized: Counter[str] = Counter()
    real = etree.tostring

    def counting(element, **kwargs):  # type: ignore[no-untyped-def]
        serialized[element.getroottree().getpath(element)] += 1
        return real(element, **kwargs)

    monkeypatch.setattr(context_module.etree, "tostring", counting)
    router = Router.compile(
        [
            ("titles", "//section/title"),
            ("wrapped", "for $s in //section return <s>{ $s/title }</s>"),
            ("twice", "for $s in //section return <s>{ $s/title }{ $s/title }</s>"),
            ("deep", "for $t in //section/title where $t = 'Deep' return <t>{ $t }</t>"),
        ]
    )
    results = router.route(BOOK_DOC)
    assert set(results) == {"titles", "wrapped", "twice", "deep"}
    assert set(serialized) == {
        "/book/section[1]/title",
        "/book/section[1]/section/title",
        "/book/section[2]/title",
    }
    assert set(serialized.values()) == {1}
