"""The shared selection index: hashed equality, sorted ranges, and agreement with no index at all."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedrouter import Router
from feedrouter.lang.ast import CompOp
from feedrouter.plan.index import _SortedConstants


def filed(*keys: float) -> _SortedConstants:
    constants = _SortedConstants()
    for key in keys:
        constants.add(key, f"c{key:g}")
    return constants


@pytest.mark.parametrize(
    ("op", "values", "expected"),
    [
        # value > c for some value: every constant below the largest value
        (CompOp.GT, [5.0, 20.0], ["c5", "c10"]),
        (CompOp.GE, [5.0, 20.0], ["c5", "c10", "c20"]),
        # value < c for some value: every constant above the smallest value
        (CompOp.LT, [10.0, 40.0], ["c20", "c30"]),
        (CompOp.LE, [10.0, 40.0], ["c10", "c20", "c30"]),
        (CompOp.GT, [5.0], []),
        (CompOp.LT, [30.0], []),
    ],
)
def test_a_range_probe_is_one_bisection_on_the_extreme_value(
    op: CompOp, values: list[float], expected: list[str]
) -> None:
    assert list(filed(5, 10, 20, 30).satisfied(op, values)) == expected


def test_sorted_constants_forget_a_key_with_its_last_subscription() -> None:
    constants = filed(5, 10)
    constants.add(10.0, "again")
    constants.remove(10.0, "c10")
    assert constants.keys == [5.0, 10.0]
    constants.remove(10.0, "again")
    assert constants.keys == [5.0]
    constants.remove(5.0, "c5")
    assert not constants


DOCUMENT = (
    b"<shop><item price='15' name='pear'/><item price='40' name='fig'/><item price='n/a' name='kiwi'/></shop>"
)


def test_range_subscriptions_are_filed_sorted_and_route_like_without_the_index() -> None:
    subscriptions = {
        "cheap": "//item[@price < 20]",
        "dear": "//item[@price >= 40]",
        "none": "//item[@price > 40]",
        "names": "for $i in //item where $i/@name > 'g' return <n>{ $i }</n>",
        "both": "//item[@price > 1][@price = 15]",
    }
    indexed = Router.compile(subscriptions)
    plain = Router.compile(subscriptions, shared_selection=False)
    assert indexed.route(DOCUMENT) == plain.route(DOCUMENT)
    assert set(indexed.route(DOCUMENT)) == {"cheap", "dear", "names", "both"}
    assert "shared selection (sorted)" in indexed.explain("cheap") and "< 20.0" in indexed.explain("cheap")
    # with an equality test too, the more selective equality is the one filed
    assert "shared selection (hashed)" in indexed.explain("both")
    indexed.remove("cheap")
    indexed.add("cheap", "//item[@price <= 15]")
    assert "cheap" in indexed.route(DOCUMENT)


VALUES = st.sampled_from(["1", "2", " 3 ", "10", "-4", "2.5", "1e1", "INF", "-INF", "NaN", "x", "", "b", "B"])
LITERALS = st.one_of(
    st.sampled_from([1, 2, 3, 10, -4, 2.5, 0]).map(str), st.sampled_from(["'1'", "'b'", "'x'", "''"])
)
OPS = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.lists(VALUES, min_size=0, max_size=3), min_size=1, max_size=4),
    tests=st.lists(
        st.tuples(st.sampled_from(["@v", "v", "v/text()", "."]), OPS, LITERALS), min_size=1, max_size=12
    ),
)
def test_the_index_never_changes_what_routes(
    values: list[list[str]], tests: list[tuple[str, str, str]]
) -> None:
    """Every comparison on attributes, child elements, text and the node itself, on numbers,
    non-numbers, NaN, infinities and padded values: the index only skips what cannot match."""
    items = "".join(
        f"<item v='{vs[0] if vs else ''}'>" + "".join(f"<v>{v}</v>" for v in vs) + "</item>" for vs in values
    )
    document = f"<list>{items}</list>".encode()
    subscriptions = {
        f"s{i}": f"//item[{subject} {op} {literal}]" for i, (subject, op, literal) in enumerate(tests)
    }
    subscriptions |= {
        f"f{i}": f"for $i in //item/v where $i {op} {literal} return <r>{{ $i }}</r>"
        for i, (_, op, literal) in enumerate(tests)
    }
    for strategy in ("FW", "FWR"):
        indexed = Router.compile(subscriptions, strategy=strategy)
        plain = Router.compile(subscriptions, strategy=strategy, shared_selection=False)
        assert indexed.route(document) == plain.route(document)


def test_selections_pulled_up_over_a_shared_join_serve_every_constant_of_the_signature() -> None:
    document = (
        b"<feed><story id='1'><head><id>7</id><id>9</id></head></story>"
        b"<story id='2'><head><id>9</id></head></story><story id='3'><head/></story></feed>"
    )
    subscriptions = {
        "seven": "//story[head/id = 7]",
        "nine": "for $s in //story where $s/head/id = 9 return <s>{ $s }</s>",
        "above": "//story[head/id > 8]",
        "own": "//story[@id <= 2]",
        "self-nav": "/feed[.//id = 9]//id",  # the predicate path has the binding path's navigation
    }
    shared = Router.compile(subscriptions)
    pushed = Router.compile(subscriptions, shared_selection=False)
    assert shared.route(document) == pushed.route(document)
    assert set(shared.route(document)) == {"seven", "nine", "above", "own", "self-nav"}
    assert "SharedJoin($1 with path" in shared.explain("seven")
    assert "SharedSelection[sorted]($1 @id <= 2.0) over SharedJoin($1 with itself)" in shared.explain("own")
    assert "SharedJoin" not in pushed.explain("seven")
