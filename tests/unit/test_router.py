"""The public Router API: compile with error collection, add/remove, explain, DTD entities, pickling."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedrouter import CompileError, DocumentError, Router, SubscriptionError
from tests.unit.support import BOOK_DOC, toggle

DOC = BOOK_DOC

GOOD = [
    ("titles", "//section/title"),
    ("xml", 'for $s in //section where $s//figure/title = "XML processing" return <s>{ $s/title }</s>'),
    ("deep", "//section[@id >= 2]"),
]


def test_route_returns_results_of_matching_subscriptions_only() -> None:
    router = Router.compile([*GOOD, ("none", "//chapter")])
    results = router.route(DOC)
    assert set(results) == {"titles", "xml", "deep"}
    assert results["xml"] == b"<s><title>Intro</title></s>"
    assert results["titles"] == b"<title>Intro</title><title>Deep</title><title>End</title>"


def test_bad_subscriptions_are_collected_and_the_good_ones_served() -> None:
    router = Router.compile(
        [*GOOD, ("bad", "//a[@b = 1 || @c = 2]"), ("worse", "for $x in //a return $y")], on_error="collect"
    )
    assert set(router.errors) == {"bad", "worse"}
    assert isinstance(router.errors["bad"], SubscriptionError)
    assert "bad" in str(router.errors["bad"]) and "line 1" in str(router.errors["bad"])
    assert set(router.route(DOC)) == {"titles", "xml", "deep"}


def test_compile_raises_listing_every_bad_subscription_by_default() -> None:
    with pytest.raises(SubscriptionError) as err:
        Router.compile([*GOOD, ("bad", "//a[position()]"), ("worse", "//a[f()]")])
    assert "bad" in str(err.value) and "worse" in str(err.value)


def test_add_and_remove_behave_like_a_fresh_compile() -> None:
    router = Router.compile(GOOD)
    router.add("new", "//figure/title")
    router.remove("titles")
    fresh = Router.compile([GOOD[1], GOOD[2], ("new", "//figure/title")])
    assert router.route(DOC) == fresh.route(DOC)
    assert router.nfa.canonical() == fresh.nfa.canonical()
    for sid in list(router.subscription_ids):
        router.remove(sid)
    assert router.nfa.state_count == 1 and router.route(DOC) == {}


def test_adding_an_existing_id_or_removing_an_unknown_one_is_an_error() -> None:
    router = Router.compile(GOOD)
    with pytest.raises(CompileError, match="already compiled"):
        router.add("xml", "//a")
    with pytest.raises(CompileError, match="no subscription 'nope'"):
        router.remove("nope")


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(CompileError, match="unknown strategy"):
        Router.compile(GOOD, strategy="FWX")


def test_explain_shows_paths_shared_states_and_operators() -> None:
    router = Router.compile(GOOD, strategy="FWR")
    text = router.explain("xml")
    assert "//section//figure/title" in text
    assert "shared with other paths" in text
    assert "SharedJoin" in text and "OuterJoin-Select" in text
    assert "SemiJoin" in Router.compile(GOOD, strategy="FWR", shared_selection=False).explain("xml")
    assert "WhereFilter" in Router.compile(GOOD, strategy="F").explain("xml")


def test_document_using_entities_its_dtd_declares_routes_correctly() -> None:
    dtd = '<!ENTITY nbsp "&#160;"><!ENTITY mdash "&#8212;"><!ELEMENT story (hl)><!ELEMENT hl (#PCDATA)>'
    router = Router.compile(
        [("hl", 'for $s in /story where $s/hl = "Markets\u00a0rally\u2014again" return $s/hl')], dtd=dtd
    )
    doc = b'<!DOCTYPE story SYSTEM "http://example.invalid/story.dtd"><story><hl>Markets&nbsp;rally&mdash;again</hl></story>'
    assert router.route(doc) == {"hl": "<hl>Markets\u00a0rally\u2014again</hl>".encode()}


def test_a_malformed_document_raises_and_the_router_keeps_working() -> None:
    router = Router.compile(GOOD)
    with pytest.raises(DocumentError) as err:
        router.route(b"<book><section></book>", source="batch/msg-7.xml")
    assert "batch/msg-7.xml" in str(err.value) and err.value.line == 1
    assert set(router.route(DOC)) == {"titles", "xml", "deep"}


@pytest.mark.parametrize("strategy", ["F", "FW", "FWR"])
def test_a_compiled_router_pickles_for_spark(strategy: str) -> None:
    router = Router.compile(GOOD, strategy=strategy)
    router.route(DOC)  # warm the lazy DFA: it must pickle too
    clone = pickle.loads(pickle.dumps(router))
    assert clone.route(DOC) == router.route(DOC)
    # a loaded plan keeps changing like a fresh one: removing releases exactly what it held
    for sid in list(clone.subscription_ids):
        clone.remove(sid)
    assert clone.stats()["distinct_paths"] == 0 and clone.stats()["pattern_plans"] == 0
    for sid, text in GOOD:
        clone.add(sid, text)
    assert clone.route(DOC) == router.route(DOC)


@pytest.mark.parametrize("strategy", ["F", "FW", "FWR"])
def test_profile_breaks_the_cost_down_by_operator_and_changes_no_result(strategy: str) -> None:
    router = Router.compile(GOOD, strategy=strategy)
    costs = router.profile([DOC, DOC])
    assert {"parse + NFA", "shared selection", "message factory"} <= set(costs)
    assert ("Where-Filter" in costs) == (strategy == "F")
    assert ("OuterJoin-Select" in costs) == (strategy == "FWR")
    assert all(seconds >= 0 for seconds in costs.values())
    assert router.route(DOC) == Router.compile(GOOD, strategy=strategy).route(DOC)


def _population() -> tuple[list[tuple[str, str]], list[bytes]]:
    from feedrouter.workload import dtds, generate_documents, generate_subscriptions

    graph = dtds.load("book")
    texts = generate_subscriptions(graph, 30, seed=3, form="mixed", DSProb=0.4)
    return [(f"s{i}", t) for i, t in enumerate(texts)], generate_documents(graph, 4, seed=3)


POPULATION, POPULATION_DOCS = _population()


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_any_sequence_of_adds_and_removes_routes_like_a_fresh_compile(data: st.DataObject) -> None:
    strategy = data.draw(st.sampled_from(["F", "FW", "FWR"]))
    router = Router(strategy=strategy)
    live = toggle(router, data.draw(st.lists(st.sampled_from(POPULATION), min_size=5, max_size=40)))
    fresh = Router.compile(list(live.items()), strategy=strategy)
    assert router.nfa.canonical() == fresh.nfa.canonical()
    for doc in POPULATION_DOCS:
        assert router.route(doc) == fresh.route(doc)
