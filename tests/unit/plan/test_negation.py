"""not()/empty() of a path: an anti-semijoin on the branch's shared stream, never an index entry."""

from __future__ import annotations

import pytest

from feedrouter import Router

DOC = b'<r><s l="en"><t>xy</t><p>1</p></s><s l="de"/><s l="fr"><t>a</t><t>x</t></s></r>'


@pytest.mark.parametrize("strategy", ["F", "FW", "FWR"])
def test_negated_paths_keep_the_nodes_without_a_match(strategy: str) -> None:
    router = Router.compile(
        [
            ("no-a", '//s[not(t[. = "a"])]'),
            ("no-p", "for $s in //s where empty($s/p) return $s"),
            ("not-xy", '//s[not(t = "xy")][@l]'),
            ("both", "//s[t][not(p)]"),
        ],
        strategy=strategy,
    )
    got = router.route(DOC)
    assert got["no-a"] == b'<s l="en"><t>xy</t><p>1</p></s><s l="de"/>'
    assert got["no-p"] == got["not-xy"] == b'<s l="de"/><s l="fr"><t>a</t><t>x</t></s>'
    assert got["both"] == b'<s l="fr"><t>a</t><t>x</t></s>'


def test_the_plan_is_an_anti_semijoin_sharing_the_branch_stream() -> None:
    router = Router.compile([("no", '//s[not(t = "a")]'), ("yes", '//s[t = "a"]')], shared_selection=False)
    text = router.explain("no")
    assert "AntiSemiJoin[hash]($1, //s/t[. = 'a'])" in text
    assert router.stats()["distinct_paths"] == 2  # //s and //s/t, shared by both


def test_a_negated_test_is_never_where_the_index_files_a_subscription() -> None:
    router = Router.compile([("no", '//s[not(t = "a")]')])
    assert "shared selection" not in router.explain("no")
    assert set(router.route(DOC)) == {"no"}
