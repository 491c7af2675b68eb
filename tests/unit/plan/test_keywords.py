"""The selection index's keyword sites: contains() by one automaton, starts-with/ends-with by the
needle lengths, lower-case() equality by hash; a subscription runs only when its keyword occurs."""

from __future__ import annotations

import pickle

import pytest

from feedrouter import Router
from feedrouter.plan.index import _Site

DOC = b"<r><s><t>Merger talks</t><p>a</p><p>b</p></s><s><t>other</t></s></r>"


@pytest.mark.parametrize(
    ("name", "needles", "values", "expected"),
    [
        ("contains", ["rg", "zz", "talk", "Me"], ["Merger talks"], {"rg", "talk", "Me"}),
        ("contains", ["", "q"], ["abc"], {""}),  # every value contains the empty string
        ("starts-with", ["Me", "Merger t", "er", "x"], ["Merger talks", "xy"], {"Me", "Merger t", "x"}),
        ("ends-with", ["ks", "talks", "Merger"], ["Merger talks"], {"ks", "talks"}),
        ("ends-with", ["abc"], ["bc"], set()),
    ],
)
def test_every_needle_of_a_site_is_matched_in_one_pass(
    name: str, needles: list[str], values: list[str], expected: set[str]
) -> None:
    site: _Site[str] = _Site()
    site.equal = {n: [f"sub-{n}"] for n in needles}
    assert set(site.keyword_hits(name, values)) == {f"sub-{n}" for n in expected}


def test_keyword_subscriptions_are_filed_by_keyword_and_route_like_without_the_index() -> None:
    subs = [
        ("c1", '//s[contains(t, "rg")]'),
        ("c2", '//s[contains(t, "zz")]'),
        ("c3", '//s[contains(t, "")]'),
        ("s1", '//s[starts-with(t, "Me")]'),
        ("e1", '//s[ends-with(t, "ks")]'),
        ("l1", '//s[lower-case(t) = "merger talks"]'),
        ("l2", '//s[lower-case(t) = "x"]'),
        ("m", '//s[contains(p, "a")]'),  # two p: XPTY0004 in XQuery, no match here
    ]
    indexed, each = Router.compile(subs), Router.compile(subs, shared_selection=False)
    assert sorted(indexed.route(DOC)) == sorted(each.route(DOC)) == ["c1", "c3", "e1", "l1", "s1"]
    assert "shared selection (keywords)" in indexed.explain("c1")
    assert "(lower-case()) = 'merger talks'" in indexed.explain("l1")
    restored = pickle.loads(pickle.dumps(indexed))  # the automaton is rebuilt, not pickled
    assert sorted(restored.route(DOC)) == ["c1", "c3", "e1", "l1", "s1"]
    indexed.remove("c1")
    indexed.add("c4", '//s[contains(t, "oth")]')
    assert sorted(indexed.route(DOC)) == ["c3", "c4", "e1", "l1", "s1"]
