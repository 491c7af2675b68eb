"""The language round's knobs leave the default populations exactly as they were."""

from __future__ import annotations

import hashlib

import pytest

from feedrouter.workload import dtds, generate_subscriptions

# digests of generate_subscriptions(dtd, 50, seed=11, form="mixed") before the knobs existed
# (commit 177be5e): benchmarks and tests seeded with them keep their populations
BEFORE = {
    "bib": "3f1c677c3399a1fe162063d55761ae33",
    "book": "24e07875f06de757c13aa6919f80a280",
    "news": "f29da1bd467b02d7a3b6a3eda39df4c3",
}


@pytest.mark.parametrize("dtd", sorted(BEFORE))
def test_default_populations_are_unchanged(dtd: str) -> None:
    texts = generate_subscriptions(dtds.load(dtd), 50, seed=11, form="mixed")
    assert hashlib.md5("".join(texts).encode()).hexdigest() == BEFORE[dtd]


def test_the_knobs_change_the_texts() -> None:
    graph = dtds.load("news")
    plain = generate_subscriptions(graph, 40, seed=3, form="mixed")
    rich = generate_subscriptions(graph, 40, seed=3, form="mixed", conditions=0.8, positions=0.5, orders=0.5)
    assert plain != rich
    assert any(" or " in t or "not(" in t or "contains(" in t for t in rich)
