"""The shared selection index: hashed equality, sorted ranges, and agreement with no index at all."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from feedrouter import Router
from feedrouter.lang.ast import CompOp
from feedrouter.plan.index import _SortedConstants
from feedrouter.plan.results import SubscriptionPlan


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


#: (a predicate on //item, the same test in a where clause on $i)
CONJUNCTS = st.sampled_from(
    [
        ("@lang = 'en'", "$i/@lang = 'en'"),
        ("@lang = 'de'", "$i/@lang = 'de'"),
        ("author = 'Ada'", "$i/author = 'Ada'"),
        ("author = 'Alan'", "$i/author = 'Alan'"),
        ("author = 'Bob'", "$i/author = 'Bob'"),
        ("contains(title, 'ar')", "contains($i/title, 'ar')"),
        ("contains(title, 'Mark')", "contains($i/title, 'Mark')"),
        ("starts-with(title, 'Ra')", "starts-with($i/title, 'Ra')"),
        ("ends-with(title, 'ly')", "ends-with($i/title, 'ly')"),
        ("@n > 2", "$i/@n > 2"),
        ("@n <= 1", "$i/@n <= 1"),
        ("not(@lang = 'fr')", "not($i/@lang = 'fr')"),
        ("category", "exists($i/category)"),
    ]
)


@settings(max_examples=60, deadline=None)
@given(
    items=st.lists(
        st.tuples(
            st.sampled_from(["en", "de", "fr"]),
            st.sampled_from(["Ada", "Alan", "Bob"]),
            st.sampled_from(["Markets rally", "Rates", "Oil slump", ""]),
            st.integers(0, 4),
        ),
        min_size=1,
        max_size=4,
    ),
    conjunctions=st.lists(st.lists(CONJUNCTS, min_size=1, max_size=3), min_size=1, max_size=10),
)
def test_checking_a_candidates_other_tests_never_changes_what_routes(
    items: list[tuple[str, str, str, int]], conjunctions: list[list[tuple[str, str]]]
) -> None:
    """Conjunctions of equality, keyword and range tests: the index files each under one of them and
    checks the others before evaluating (all are necessary), which only skips what cannot match."""
    document = (
        "<list>"
        + "".join(
            f"<item lang='{lang}' n='{n}'><author>{author}</author><title>{title}</title></item>"
            for lang, author, title, n in items
        )
        + "</list>"
    ).encode()
    subscriptions = {
        f"s{i}": "//item" + "".join(f"[{p}]" for p, _ in cs) for i, cs in enumerate(conjunctions)
    }
    subscriptions |= {
        f"f{i}": "for $i in //item where " + " and ".join(w for _, w in cs) + " return $i/author"
        for i, cs in enumerate(conjunctions)
    }
    indexed = Router.compile(subscriptions, on_error="collect")
    plain = Router.compile(subscriptions, shared_selection=False, on_error="collect")
    assert indexed.errors.keys() == plain.errors.keys()
    assert indexed.route(document) == plain.route(document)


def count_evaluations(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the plans routing evaluates (a one-item list, updated)."""
    evaluated = [0]
    original = SubscriptionPlan.bindings

    def counted(self: SubscriptionPlan, ctx: object) -> list[int]:
        evaluated[0] += 1
        return original(self, ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(SubscriptionPlan, "bindings", counted)
    return evaluated


def test_a_subscription_is_filed_under_the_test_whose_site_has_the_most_constants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``@lang`` takes two values across the population, ``author`` forty: a document in English is
    a candidate for the subscriptions naming its author, not for every English one."""
    subscriptions = {f"s{i}": f"//item[@lang = '{('en', 'de')[i % 2]}'][author = 'A{i}']" for i in range(40)}
    router = Router.compile(subscriptions)
    document = b"<list><item lang='en'><author>A2</author></item></list>"
    evaluated = count_evaluations(monkeypatch)
    assert set(router.route(document)) == {"s2"}
    assert evaluated[0] == 1  # filed by @lang, 20 would have run
    assert "filed under path 2 field $2 (.) = 'A2'" in router.explain("s2")


def test_compile_refiles_what_was_added_before_the_statistics_said_so() -> None:
    """The first subscription is added when ``@lang`` and ``author`` have one constant each (a tie:
    its first test); once the population is in, it is filed by its author like the others."""
    subscriptions = {f"s{i}": f"//item[@lang = 'en'][author = 'A{i}']" for i in range(5)}
    one_by_one = Router()
    for sid, text in subscriptions.items():
        one_by_one.add(sid, text)
    assert "= 'en'" in one_by_one.explain("s0").split("shared selection")[1]
    one_by_one.reindex()
    compiled = Router.compile(subscriptions)
    for router in (one_by_one, compiled):
        assert "= 'A0'" in router.explain("s0").split("shared selection")[1]
        assert set(router.route(b"<item lang='en'><author>A0</author></item>")) == {"s0"}


def test_a_candidate_that_fails_its_other_test_is_not_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    subscriptions = {f"s{i}": f"//item[author = 'A{i}'][contains(title, 'w{i}')]" for i in range(10)}
    router = Router.compile(subscriptions)
    evaluated = count_evaluations(monkeypatch)
    assert router.route(b"<item><author>A3</author><title>w4</title></item>") == {}
    assert set(router.route(b"<item><author>A3</author><title>w3 w4</title></item>")) == {"s3"}
    assert evaluated[0] == 1


def test_the_site_statistics_forget_what_left() -> None:
    """A long-lived router whose subscriptions come and go keeps no statistics of the gone ones."""
    router = Router()
    for i in range(20):
        router.add(f"s{i}", f"//a{i}[@x = '{i}'][b = 'v']")
    assert router._index.spread(router._index._canonical[next(iter(router._index._canonical))]) == 1
    for i in range(20):
        router.remove(f"s{i}")
    assert router._index._offered == {} and router._index._canonical == {}
