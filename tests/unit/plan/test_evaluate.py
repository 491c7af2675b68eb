"""Residual conditions on the tree: XQuery's semantics, and every element looked at charged."""

from __future__ import annotations

import pytest

from feedrouter import Router
from feedrouter.errors import DocumentError
from feedrouter.limits import DocumentLimits

DOC = b"<r><s><p>1</p><p n='x'>2</p><p n='y'>3</p><p>4</p></s><s><p>5</p></s></r>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("//p[1]", b"<p>1</p><p>5</p>"),
        ("//p[last()]", b"<p>4</p><p>5</p>"),
        ("//p[@n][1]", b'<p n="x">2</p>'),
        ("//p[1][@n]", None),  # the first p has no @n
        ("//p[position() > 1 and position() < 4]", b'<p n="x">2</p><p n="y">3</p>'),
        ("//s[count(p) = 4]/p[last()]", b"<p>4</p>"),
        ("//s[not(p[@n])]", b"<s><p>5</p></s>"),
        ("//p[string-length(@n) = 0][. > 3]", b"<p>4</p><p>5</p>"),
    ],
)
def test_positions_counts_and_negations(text: str, expected: bytes | None) -> None:
    got = Router.compile([("x", text)]).route(DOC).get("x")
    assert got == expected


def test_a_costly_residual_test_is_stopped_by_the_work_budget() -> None:
    # count(//*) from every element: quadratic in the document, refused rather than left to run
    deep = b"<r>" + b"<a>" * 1 + b"<b/>" * 3000 + b"</a>" + b"</r>"
    router = Router.compile([("q", "//b[count(//*) > 1]")], limits=DocumentLimits(max_work=100_000))
    with pytest.raises(DocumentError) as info:
        router.route(deep)
    assert info.value.code == "FR205"


def test_a_backtracking_pattern_is_abandoned_and_charged_to_the_budget() -> None:
    # (a|aa)+$ backtracks exponentially on a run of a's that does not end the value
    values = b"".join(b"<v>" + b"a" * 40 + b"!</v>" for _ in range(30))
    router = Router.compile([("q", '//v[matches(., "(a|aa)+$")]'), ("ok", "//v")])
    with pytest.raises(DocumentError) as info:
        router.route(b"<r>" + values + b"</r>")
    assert info.value.code == "FR205"
    one = router.route(b"<r><v>aa</v></r>")  # a value the pattern matches at once
    assert set(one) == {"q", "ok"}
