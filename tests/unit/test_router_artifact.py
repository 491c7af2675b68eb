"""A compiled router ships only what routing needs (issue 13, step 6): plans keep neither their
subscription's text nor its syntax tree; the texts are kept once, at the router, only where the
fallback for invalid documents may have to recompile them."""

from __future__ import annotations

import pickle

from feedrouter import Router
from feedrouter.workload import dtds

# the comment is in the text only: no plan, pattern or template holds it
MARK = "distinctive-comment-4711"
SUBSCRIPTIONS = [
    ("titles", f"(: {MARK} :) //title"),
    ("books", f'(: {MARK} :) for $b in //book where $b/@year = "1994" return <r>{{$b/title}}</r>'),
]
VALID = b'<bib><book year="1994"><title>TCP/IP</title><publisher>AW</publisher><price>1</price></book></bib>'
INVALID = VALID.replace(b"</bib>", b"<article><title>Art</title></article></bib>")


def test_plans_keep_neither_text_nor_syntax_tree() -> None:
    router = Router.compile(SUBSCRIPTIONS)
    for plan in router._plans.values():
        assert not hasattr(plan, "text") and not hasattr(plan, "tree")
    assert [router._plans[sid].is_flwr for sid, _ in SUBSCRIPTIONS] == [False, True]


def test_a_router_that_never_recompiles_pickles_without_the_texts() -> None:
    for router in (
        Router.compile(SUBSCRIPTIONS),
        Router.compile(SUBSCRIPTIONS, dtd=dtds.load("bib"), optimize="query"),
    ):
        assert not router.validates_documents
        assert MARK.encode() not in pickle.dumps(router)


def test_a_validating_router_keeps_each_text_once_for_its_fallback() -> None:
    router = Router.compile(SUBSCRIPTIONS, dtd=dtds.load("bib"))
    data = pickle.dumps(router)
    assert data.count(MARK.encode()) == len(SUBSCRIPTIONS)
    copy = pickle.loads(data)
    assert copy.route(INVALID)["titles"] == b"<title>TCP/IP</title><title>Art</title>"
    router.remove("titles")
    assert set(router._texts) == {"books"}


def test_a_router_pickled_with_texts_in_its_plans_still_builds_its_fallback() -> None:
    router = Router.compile(SUBSCRIPTIONS, dtd=dtds.load("bib"))
    state = router.__getstate__()
    texts = state.pop("_texts")
    for sid, plan in state["_plans"].items():  # type: ignore[attr-defined]
        plan.__dict__["text"] = texts[sid]  # type: ignore[index]
        plan.__dict__["tree"] = object()
    legacy = Router.__new__(Router)
    legacy.__setstate__(state)
    assert legacy._texts == dict(SUBSCRIPTIONS)
    assert not any(hasattr(plan, "tree") for plan in legacy._plans.values())
    assert legacy.route(INVALID)["titles"] == b"<title>TCP/IP</title><title>Art</title>"
