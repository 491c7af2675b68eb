"""Disjunctive normal form: which 'or' split into alternatives, and which stay one residual test."""

from __future__ import annotations

import pytest

from feedrouter import Router
from feedrouter.lang import ast, parse, to_xquery
from feedrouter.plan.dnf import MAX_DISJUNCTS, alternatives


def split(text: str) -> list[str]:
    """The alternatives of a filter subscription, printed as filters."""
    sub = parse(text)
    assert isinstance(sub.body, ast.Filter)
    return [to_xquery(ast.Subscription(ast.Filter(path))) for path, _ in alternatives(sub.body.path, ())]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("//a[@x = 1 or @x = 2]", ["//a[@x = 1]", "//a[@x = 2]"]),
        ('//a[b = ("s", "t")]/c', ['//a[b = "s"]/c', '//a[b = "t"]/c']),
        ("//a[b | c]", ["//a[b]", "//a[c]"]),
        # existential quantifiers distribute over 'or'
        ("//a[b[c or d]]", ["//a[b[c]]", "//a[b[d]]"]),
        ("//a[(b or c) and (d or e)]", ["//a[b][d]", "//a[b][e]", "//a[c][d]", "//a[c][e]"]),
        ("//a[b or c]//d[e or f]", ["//a[b]//d[e]", "//a[b]//d[f]", "//a[c]//d[e]", "//a[c]//d[f]"]),
        # under not() an 'or' is a conjunction: one residual test
        ("//a[not(b or c)]", ["//a[not(b or c)]"]),
        # positions count the survivors of the earlier predicates: no split on that step
        ("//a[b or c][1]", ["//a[b or c][1]"]),
        ("//a[1]/d[e or f]", ["//a[1]/d[e]", "//a[1]/d[f]"]),
        ('//a[contains(b, "x") or c]', ['//a[contains(b, "x")]', "//a[c]"]),
        # self:: tests name the step: two shared NFA paths instead of a test of every element
        ("//*[self::a or self::b]/c", ["//a/c", "//b/c"]),
        ("//x[.//*[self::a or self::b]]", ["//x[.//a]", "//x[.//b]"]),
        ("//a[self::a or self::b]", ["//a"]),  # a[self::b] selects nothing
        ("//*:a[self::b]", ["//*:a[self::b]"]),  # a wildcard name keeps the test
        ("//*[1][self::a]", ["//*[1][self::a]"]),  # a position counts every element: no renaming
    ],
)
def test_alternatives(text: str, expected: list[str]) -> None:
    assert split(text) == expected


def test_past_the_bound_nothing_is_split() -> None:
    text = "//a" + "".join(f"[b{i} or c{i}]" for i in range(7))  # 2^7 = 128 alternatives
    assert MAX_DISJUNCTS < 2**7
    assert split(text) == [to_xquery(parse(text))]


def test_where_alternatives_combine_with_the_binding() -> None:
    sub = parse("for $s in //s[@l = 'en' or @l = 'fr'] where $s/t or $s/p return $s")
    assert isinstance(sub.body, ast.Flwr)
    found = alternatives(sub.body.binding, sub.body.where)  # type: ignore[arg-type]
    assert len(found) == 4


def test_a_union_plan_is_indexed_once_per_alternative_and_given_once() -> None:
    router = Router.compile([("b", '//s[@l = "en" or @l = "fr" or t = "z"]'), ("en", '//s[@l = "en"]')])
    text = router.explain("b")
    assert "split into 3 conjunctive alternatives" in text
    assert text.count("shared selection (hashed)") == 3
    doc = b'<r><s l="en"><t>z</t></s><s l="de"/><s l="fr"/></r>'
    assert router.route(doc)["b"] == b'<s l="en"><t>z</t></s><s l="fr"/>'
    router.remove("b")
    assert set(router.route(doc)) == {"en"}


def test_a_flwr_binding_keeps_its_names_and_where_self_tests_name_filters_only() -> None:
    flwr = parse("for $x in //*[self::a or self::b] where $x/self::a return $x/c").body
    assert isinstance(flwr, ast.Flwr)
    kept = alternatives(flwr.binding, flwr.where, rename=False)
    assert {p.steps[-1].name for p, _ in kept} == {None}  # returns are planned from '//*'
    renamed = alternatives(flwr.binding, flwr.where)
    assert [(p.steps[-1].name.local, w) for p, w in renamed] == [("a", ())]  # type: ignore[union-attr]
