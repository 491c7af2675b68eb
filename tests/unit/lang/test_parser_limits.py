"""Compile cost is bounded: text length, problems reported, parts, and a prolog read in linear work."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from feedrouter import Router
from feedrouter.errors import SubscriptionError
from feedrouter.lang import parse
from feedrouter.lang.lexer import MAX_PROBLEMS
from feedrouter.lang.parser import MAX_PARTS
from feedrouter.limits import DEFAULT_MAX_SUBSCRIPTION_CHARS


class WorkExceeded(BaseException):
    """Raised by the call counter: a BaseException, so no ``except Exception`` in the parser hides it."""


@contextmanager
def call_budget(limit: int) -> Iterator[list[int]]:
    """Count Python-level calls (generator resumptions included) and stop the work past ``limit``.

    Counting calls instead of timing makes the test exact and machine-independent; stopping at the
    budget makes a quadratic parser fail in seconds instead of running for minutes.
    """
    count = [0]

    def profile(_frame: object, event: str, _arg: object) -> None:
        if event == "call":
            count[0] += 1
            if count[0] > limit:
                raise WorkExceeded(f"more than {limit} calls")

    sys.setprofile(profile)
    try:
        yield count
    finally:
        sys.setprofile(None)


def declarations(count: int) -> str:
    return "".join(f'declare namespace p{i} = "urn:{i}";\n' for i in range(count))


def refused(text: str) -> SubscriptionError:
    with pytest.raises(SubscriptionError) as info:
        parse(text)
    return info.value


def calls_to_parse(text: str, limit: int) -> int:
    with call_budget(limit) as count:
        parse(text, max_chars=None)
    return count[0]


def test_forty_thousand_namespace_declarations_cost_linear_work() -> None:
    # ~50 calls per declaration when each is read once; the old prolog rescanned every earlier
    # prefix per declaration (n²/2 = 800 million steps for 40,000: 106 s) and stops here at ~4,000.
    n = 40_000
    calls = calls_to_parse(declarations(n) + f"//p{n - 1}:a", limit=200 * n)
    assert calls < 200 * n


def test_prolog_work_per_declaration_does_not_grow_with_the_prolog() -> None:
    small = calls_to_parse(declarations(2_000) + "//a", limit=10**8)
    large = calls_to_parse(declarations(8_000) + "//a", limit=10**8)
    assert large < 4.4 * small  # 4x the declarations: linear is 4x, quadratic would be ~16x


def test_a_text_longer_than_the_limit_is_refused_before_it_is_read() -> None:
    text = "\x00" + " " * DEFAULT_MAX_SUBSCRIPTION_CHARS  # the NUL would be FR100 if it were read
    with pytest.raises(SubscriptionError) as info:
        parse(text, source="s1")
    exc = info.value
    assert exc.code == "FR114" and exc.span is None
    assert f"{DEFAULT_MAX_SUBSCRIPTION_CHARS + 1} characters" in exc.message
    assert f"limit of {DEFAULT_MAX_SUBSCRIPTION_CHARS}" in exc.message
    assert str(exc).startswith("s1, [FR114]")


def test_a_text_of_exactly_the_limit_is_read() -> None:
    text = "//a" + " " * (DEFAULT_MAX_SUBSCRIPTION_CHARS - 3)
    assert parse(text).body.path.steps[0].name.local == "a"  # type: ignore[union-attr]


def test_the_limit_is_a_parameter() -> None:
    with pytest.raises(SubscriptionError, match="FR114"):
        parse("//abc", max_chars=4)
    assert parse("//a" + " " * 100_000, max_chars=None)


def test_the_router_refuses_a_long_text_and_serves_the_others() -> None:
    texts = {"long": "//a[b = '" + "x" * DEFAULT_MAX_SUBSCRIPTION_CHARS + "']", "ok": "//a"}
    router = Router.compile(texts, on_error="collect")
    assert router.errors["long"].code == "FR114" and "long" in str(router.errors["long"])
    assert router.route(b"<a/>") == {"ok": b"<a/>"}


def test_a_subscription_must_be_a_str() -> None:
    with pytest.raises(
        SubscriptionError, match=r"\[FR100\] a subscription must be a text \(str\), not bytes"
    ):
        parse(b"//a")  # type: ignore[arg-type]


def test_at_most_max_problems_are_reported_then_one_fr114_note() -> None:
    text = 'declare namespace p = "urn:x";\n' * 1000 + "//p:a"
    exc = refused(text)
    assert len(exc.details) == MAX_PROBLEMS + 1
    assert {d.code for d in exc.details[:-1]} == {"FR100"}
    last = exc.details[-1]
    assert last.code == "FR114" and last.span is not None and last.span.line == MAX_PROBLEMS + 2
    assert f"more than {MAX_PROBLEMS} problems" in last.message


def test_steps_and_conditions_are_bounded() -> None:
    assert len(parse("/" + "/a" * MAX_PARTS).body.path.steps) == MAX_PARTS  # type: ignore[union-attr]
    exc = refused("/" + "/a" * (MAX_PARTS + 1))
    assert exc.code == "FR114" and exc.column == 2 + 2 * MAX_PARTS + 1
    assert f"more than {MAX_PARTS} steps" in exc.message
    exc = refused("//a" + "[b]" * MAX_PARTS)
    assert exc.code == "FR114"


def test_constructor_items_count_as_parts() -> None:
    text = "for $v in //a return <r>" + "<x/>" * (MAX_PARTS + 1) + "</r>"
    assert refused(text).code == "FR114"


@pytest.mark.parametrize(
    "text",
    [
        "//a" + "[" * 10_000,
        "//a" + "[b" * 10_000 + "]" * 10_000,
        "//a" + "[.//b" * 10_000 + "]" * 10_000,
        "for $v in //a return " + "<a>" * 10_000,
        "for $v in //a return " + "<a>{" * 10_000,
        "<w>{" * 10_000,
        "(:" * 10_000 + "//a",
        "//a[" + "(" * 10_000,
    ],
)
def test_deep_nesting_is_a_subscription_error_never_a_recursion_error(text: str) -> None:
    exc = refused(text)
    assert exc.code.startswith("FR1") and exc.span is not None
