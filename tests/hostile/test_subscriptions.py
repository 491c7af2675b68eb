"""The hostile subscriptions corpus: every text gives a Subscription or a SubscriptionError with its
code, through the parser and through the router, never another exception (RecursionError, ValueError,
MemoryError) and never an internal compile error (FR300)."""

from __future__ import annotations

import pytest

from feedrouter import Router
from feedrouter.errors import SubscriptionError
from feedrouter.lang import parse
from feedrouter.limits import DEFAULT_MAX_SUBSCRIPTION_CHARS
from tests.hostile.subscriptions.corpus import CASES, Case

IDS = [case.name for case in CASES]


def outcome(text: str, max_chars: int | None = DEFAULT_MAX_SUBSCRIPTION_CHARS) -> str:
    """ "ok" or the code of the SubscriptionError; any other exception fails the test."""
    try:
        parse(text, max_chars=max_chars)
    except SubscriptionError as exc:
        assert exc.details and all(d.code.startswith("FR1") for d in exc.details)
        return exc.code
    return "ok"


def test_the_corpus_covers_the_attacks_of_the_issue() -> None:
    texts = [case.text for case in CASES]
    assert any(t.count("[") >= 10_000 for t in texts)  # deep nesting
    assert any(len(t) >= 1_000_000 for t in texts)  # a 1 MB text
    assert any("\x00" in t for t in texts) and any("\ud800" in t for t in texts)  # NUL, lone surrogates
    assert any(t.count("declare namespace") >= 40_000 for t in texts)  # many prolog lines
    assert all(case.expect == "ok" or case.expect.startswith("FR1") for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_each_text_gives_its_code(case: Case) -> None:
    assert outcome(case.text) == case.expect, case.why


LONG = [c for c in CASES if len(c.text) > DEFAULT_MAX_SUBSCRIPTION_CHARS]


@pytest.mark.parametrize("case", LONG, ids=[c.name for c in LONG])
def test_texts_over_the_limit_are_still_read_safely_without_it(case: Case) -> None:
    # the length limit is the first defence; with it lifted the parser's own bounds still hold
    assert outcome(case.text, max_chars=None).startswith(("ok", "FR1"))


def test_the_router_reports_every_bad_text_with_its_code_and_serves_the_good_ones() -> None:
    router = Router.compile({case.name: case.text for case in CASES}, on_error="collect")
    for case in CASES:
        error = router.errors.get(case.name)
        got = "ok" if error is None else error.code
        assert got == case.expect, f"{case.name}: {error}"
        assert error is None or isinstance(error, SubscriptionError)
    assert isinstance(router.route(b"<a><b>x</b></a>"), dict)
