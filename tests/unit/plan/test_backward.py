"""Backward axes made forward (feedrouter.plan.backward): the rules' golden cases, the single pass,
and what explain() says."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lxml import etree

from feedrouter import Router
from feedrouter.engine.document import DocumentParser
from feedrouter.engine.runtime import Nodes
from feedrouter.lang import parse, to_xquery
from feedrouter.plan import backward, evaluate, search
from feedrouter.plan.context import DocumentContext

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "backward" / "rules.txt"


@dataclass
class Case:
    text: str = ""
    expected: str = ""
    notes: list[str] = field(default_factory=list)


def load_cases() -> list[Case]:
    cases: list[Case] = []
    for line in GOLDEN.read_text(encoding="utf-8").split("\n"):
        if line.startswith("in: "):
            cases.append(Case(line[4:]))
        elif line.startswith("out: "):
            cases[-1].expected = line[5:]
        elif line.startswith("note: "):
            cases[-1].notes.append(line[6:])
    return cases


@pytest.mark.parametrize("case", load_cases(), ids=lambda c: c.text[:50])
def test_golden_rewrites(case: Case) -> None:
    notes: list[str] = []
    found = backward.forward(parse(case.text), notes)
    assert (to_xquery(found).replace("\n", " "), notes) == (case.expected, case.notes)


def test_the_rules_are_listed_in_order() -> None:
    assert [name for name, _ in backward.RULES] == [
        "upward turn in a condition path",
        "conditions on the parent",
        "x-dag of a condition path",
        "first step from its ancestors",
        "parent of a child",
        "x-dag of an absolute path",
    ]


DOCUMENT = (
    b"<lib><story lang='en'><h>a</h><sec id='1'><p>X</p><fig><title>t</title></fig>"
    b"<sec id='2'><p>Y</p></sec></sec></story>"
    b"<story><p>X</p><sec><fig><title>u</title></fig></sec></story></lib>"
)
SUBSCRIPTIONS = {
    "stories": '//p[. = "X"]/ancestor::story',
    "around": '//fig[title = "t"]/parent::*',
    "english": '//p[ancestor::story[@lang = "en"]]',
    "siblings": '//sec/fig[../p = "X"]',
    "where": 'for $f in //sec/fig where $f/../p = "X" return <f>{ $f/title }</f>',
    "nested": "//sec/p/ancestor::sec[@id]/ancestor::story",
    "member": '//sec/p[ancestor::story[@lang = "en"]]',  # a join on the node's id
    "upward": "for $p in //sec/p return <r>{ $p/ancestor::story[@lang]/h }</r>",  # recorded parents
    "turned": '//story[.//p[. = "Y"]/ancestor::sec[@id = 1]]',  # down, then up: where the sec stands
    "folded": "for $s in //story return $s/sec/fig/../p",  # a child's parent in a return: $s/sec[fig]/p
}
EXPECTED = {  # element ids in document order (the lib is 0)
    "stories": {1, 9},
    "around": {3},
    "english": {4, 8},
    "siblings": {5},
    "where": {5},
    "nested": {1},
    "member": {4, 8},
    "upward": {2},  # the h of the two bound p's story (see below)
    "turned": {1},
    "folded": {4},
}


@pytest.fixture
def forbid_tree_walks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Make every way of walking the document tree again fail, and count the events consumed."""

    def walked(*args: object, **kwargs: object) -> None:
        raise AssertionError("the document tree was walked again")

    for module, name in (
        (evaluate, "values"),
        (evaluate, "_step"),
        (evaluate, "survives"),
        (search, "_search_from"),
        (search, "_branch_holds"),
    ):
        monkeypatch.setattr(module, name, walked)
    monkeypatch.setattr(DocumentContext, "children", walked)
    monkeypatch.setattr(DocumentContext, "id_of", walked)  # needed to go from an element to its id
    monkeypatch.setattr(Nodes, "_make_children", walked)  # making elements the run did not keep
    counts = {"calls": 0, "events": 0}
    original = DocumentParser.events

    def counted(self: DocumentParser, document: bytes, source: str | None = None) -> Iterator:
        counts["calls"] += 1
        for event in original(self, document, source):
            counts["events"] += 1
            yield event

    monkeypatch.setattr(DocumentParser, "events", counted)
    return counts


def test_backward_axes_run_in_the_single_pass(forbid_tree_walks: dict[str, int]) -> None:
    router = Router.compile(list(SUBSCRIPTIONS.items()), strategy="FWR")
    elements = list(etree.fromstring(DOCUMENT).iter(etree.Element))
    results = router.route(DOCUMENT)
    assert forbid_tree_walks == {"calls": 1, "events": 2 * len(elements)}  # each start and end once
    for sid, expected in EXPECTED.items():
        copies = [etree.tostring(elements[i], with_tail=False) for i in sorted(expected)]
        if sid == "where":
            copies = [b"<f>" + copy[copy.index(b"<title") :].split(b"</fig>")[0] + b"</f>" for copy in copies]
        if sid == "upward":  # one result per bound p (4 and 8), each the h of their story
            copies = [b"<r>" + etree.tostring(elements[2], with_tail=False) + b"</r>"] * 2
        wanted = b"".join(copies)
        assert results[sid] == wanted, sid


def test_explain_says_what_the_x_dag_is() -> None:
    router = Router.compile([("s", "//lib/story/sec/p/ancestor::story"), ("f", "//story//p")])
    text = router.explain("s")
    assert "x-dag: //lib/story/sec/p/ancestor::story is //story[.//p[exists(. intersect /" in text
    assert "//story//p" in text  # the reversed edge is a forward path, shared with subscription f


def test_member_plans_are_released_with_their_subscriptions() -> None:
    router = Router.compile([("a", "//sec/fig[ancestor::story]"), ("b", "//sec/fig[ancestor::story]")])
    planner = router._planner
    assert len(planner.members) == 1
    router.remove("a")
    assert len(planner.members) == 1
    router.remove("b")
    assert planner.members == {}
