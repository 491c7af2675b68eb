"""Plan optimizations: Claims 1-5, DTD rewrites of '//' and '*', never-match warnings, levels."""

from __future__ import annotations

from pathlib import Path

import pytest

from feedrouter import CompileError, Router
from feedrouter.lang import parse
from feedrouter.plan.claims import no_duplicates, no_duplicates_on, ordered_on
from feedrouter.plan.optimize import Optimize, RuleContext
from feedrouter.plan.patterns import PathPattern, absolute_pattern
from feedrouter.plan.rules import RULES, rewrite
from feedrouter.plan.rules.resolve_wildcards import resolve_wildcards
from feedrouter.plan.rules.rewrite_descendants import rewrite_descendants
from feedrouter.schema import DtdGraph
from tests.unit.engine.test_nfa import nav

# section nests in section (a loop); figure and title do not
BOOK = DtdGraph.from_text(
    """<!ELEMENT book (title, section+)>
    <!ELEMENT section (title, (p | figure | section)*)>
    <!ATTLIST section id CDATA #IMPLIED>
    <!ELEMENT figure (title, image)>
    <!ELEMENT title (#PCDATA)>
    <!ELEMENT p (#PCDATA)>
    <!ELEMENT image EMPTY>"""
)


def test_claim_1_one_descendant_step_gives_no_duplicates() -> None:
    assert no_duplicates(nav("/book//figure/title"), None) == "Claim 1"
    assert no_duplicates(nav("//section//title"), None) is None


def test_claim_2_the_dtd_proves_no_duplicates_when_earlier_descendant_steps_are_off_loops() -> None:
    assert no_duplicates(nav("//figure//image"), BOOK) == "Claim 2"
    assert no_duplicates(nav("//section//title"), BOOK) is None  # section is on a loop


def test_claim_3_splits_the_return_path_at_the_binding_field() -> None:
    assert no_duplicates_on(nav("//section/figure//title"), 1, None) == "Claim 3"
    assert no_duplicates_on(nav("//section//figure//title"), 0, None) is None


def test_claim_4_and_5_ordering_on_a_field() -> None:
    assert ordered_on(nav("/book/section//title"), 1, None) == "Claim 4"
    assert ordered_on(nav("//section//figure"), 0, None) is None
    # paper's example: //section//figure is ordered on figure's field: figure is on no loop with section
    assert ordered_on(nav("//section//figure/title"), 1, BOOK) == "Claim 5"
    assert ordered_on(nav("//section//section"), 1, BOOK) is None


# no loops: every element has one chain of parents
BIB = DtdGraph.from_text(
    """<!ELEMENT bib (book*, article*)>
    <!ELEMENT book (title, author+, publisher?)>
    <!ELEMENT article (title, author+)>
    <!ELEMENT publisher (name, address?)>
    <!ELEMENT address (city)>
    <!ELEMENT title (#PCDATA)> <!ELEMENT author (#PCDATA)> <!ELEMENT name (#PCDATA)>
    <!ELEMENT city (#PCDATA)>"""
)


def pattern(path: str) -> PathPattern:
    return absolute_pattern(parse(path).body.path)  # type: ignore[union-attr]


def dtd_context(graph: DtdGraph) -> RuleContext:
    return RuleContext(Optimize.DTD, graph)


def test_superfluous_descendant_steps_become_child_steps() -> None:
    context = dtd_context(BOOK)
    rewritten = rewrite_descendants(pattern("//book//section//figure//image"), context)
    # sections nest, so book//section and section//figure keep their '//'
    assert rewritten.nav == nav("/book//section//figure/image")
    assert len(context.applied()) == 2


def test_a_descendant_step_with_one_chain_expands_into_child_steps() -> None:
    context = dtd_context(BIB)
    rewritten = rewrite_descendants(pattern("//book[@id]//city[. = 'Oslo']"), context)
    assert rewritten.nav == nav("/bib/book/publisher/address/city")
    # the tests moved with their steps: book to field 2, city to field 5
    assert [str(t) for t in rewritten.tests[1]] == ["@id"]
    assert [str(t) for t in rewritten.tests[4]] == [". = 'Oslo'"]
    assert rewritten.tested_fields == (1, 4)
    assert context.applied()[-1].startswith("rewrite: //city -> /publisher/address/city")
    # title has two chains (book/title, article/title): it keeps its '//'
    assert rewrite_descendants(pattern("//title"), context).nav == nav("//title")
    # below a '//' on a loop the chain is not unique
    assert rewrite_descendants(pattern("/book//figure"), dtd_context(BOOK)).nav == nav("/book//figure")


def test_branches_are_rewritten_with_their_parent_and_joined_on_the_new_fields() -> None:
    rewritten = rewrite_descendants(pattern("//book[.//city]/title"), dtd_context(BIB))
    (branch,) = rewritten.branches
    assert rewritten.nav == nav("/bib/book/title")
    assert branch.field == 1 and branch.pattern.nav == nav("/bib/book/publisher/address/city")
    assert branch.pattern.base == 2


def test_the_rules_share_one_signature_and_run_in_order() -> None:
    assert (resolve_wildcards, rewrite_descendants) == RULES
    context = dtd_context(BIB)
    # the wildcard names the context of the '//' step after it: resolved first, '//city' has one chain
    assert rewrite(pattern("/*//city"), context).nav == nav("/bib/book/publisher/address/city")
    assert [n.split(" (")[0] for n in context.applied()] == [
        "rewrite: /* -> /bib",
        "rewrite: //city -> /book/publisher/address/city",
    ]
    # in reverse order the '//' sees a wildcard before it and stays
    backwards = rewrite(pattern("/*//city"), dtd_context(BIB), rules=RULES[::-1])
    assert backwards.nav == nav("/bib//city")


@pytest.mark.parametrize("level", [Optimize.NONE, Optimize.QUERY])
def test_below_the_dtd_level_no_rule_rewrites(level: Optimize) -> None:
    context = RuleContext(level, BIB)
    original = pattern("/*//city")
    assert context.graph is None
    assert rewrite(original, context) is original and context.applied() == []


def test_notes_follow_the_pattern_tree_then_the_rules_order() -> None:
    """The pattern's own rewrites first, then each branch's, as when every pattern ran both rules."""
    router = Router.compile([("s", "//publisher[address/*]//name")], dtd=BIB, optimize="dtd")
    notes = [line.strip() for line in router.explain("s").splitlines() if "rewrite:" in line]
    assert [n.split(" (")[0] for n in notes] == [
        "rewrite: //publisher -> /bib/book/publisher",
        "rewrite: //name -> /name",
        "rewrite: /* -> /city",  # the branch's; its '//publisher' is the same rewrite, noted once
    ]


def test_expanded_paths_keep_their_tests_branches_and_fields() -> None:
    subscriptions = {
        "filter": "//book[.//city = 'Oslo']//name",
        "flwr": "for $b in //book where $b//city = 'Oslo' return <r>{ $b//name }{ $b/title }</r>",
        "same": "/bib/book[publisher/address/city = 'Oslo']/publisher/name",
    }
    document = (
        b"<bib><book><title>A</title><author>x</author><publisher><name>P</name>"
        b"<address><city>Oslo</city></address></publisher></book>"
        b"<book><title>B</title><author>y</author><publisher><name>Q</name>"
        b"<address><city>Rome</city></address></publisher></book></bib>"
    )
    expected = {
        "filter": b"<name>P</name>",
        "flwr": b"<r><name>P</name><title>A</title></r>",
        "same": b"<name>P</name>",
    }
    for optimize in ("none", "query", "dtd"):
        for strategy in ("F", "FW", "FWR"):
            router = Router.compile(subscriptions, dtd=BIB, optimize=optimize, strategy=strategy)
            assert router.route(document) == expected, (optimize, strategy)
    router = Router.compile(subscriptions, dtd=BIB, optimize="dtd")
    assert "-> /publisher/address/city" in router.explain("flwr")
    # the filter and its hand-expanded twin now lower to one plan
    assert "shares its whole plan and result with 1 other" in router.explain("same")


def test_wildcards_the_dtd_fixes_are_resolved() -> None:
    context = dtd_context(BOOK)
    assert resolve_wildcards(pattern("/*/section/figure/*"), context).nav == nav("/book/section/figure/*")
    assert resolve_wildcards(pattern("/book/section/figure/title/*"), context).nav == nav(
        "/book/section/figure/title/*"
    )


def test_rewritten_paths_share_one_nfa_path() -> None:
    router = Router.compile([("a", "//figure//image"), ("b", "//figure/image")], dtd=BOOK, optimize="dtd")
    assert router.nfa.path_count == 1
    assert "rewrite: //image -> /image" in router.explain("a")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("/book/figure", "no 'figure' as a child of book"),
        ("//image[@src = 'a']", "no attribute 'src' on image"),
        ("//section[figure/image/text() = 'x']", "no text content"),
        ("for $f in //figure where $f/p = 1 return $f", "no 'p' as a child of figure"),
    ],
)
def test_subscriptions_that_can_never_match_are_accepted_with_a_warning(text: str, reason: str) -> None:
    router = Router.compile([("s", text), ("ok", "//section[@id = 1]")], dtd=BOOK)
    assert "s" in router and [w.subscription_id for w in router.warnings] == ["s"]
    assert reason in router.warnings[0].message and router.warnings[0].code == "FR304"
    assert "warning: can never match" in router.explain("s")


def test_levels_change_the_operators_and_are_explained() -> None:
    text = "for $s in //section where $s/figure/title = 'x' return <r>{ $s//title }</r>"
    # without shared post-processing each plan pushes its selection below its own semijoin
    none = Router.compile([("q", text)], optimize="none", shared_selection=False).explain("q")
    query = Router.compile([("q", text)], optimize="query", shared_selection=False).explain("q")
    assert "DupElim[scan]" in none and "SemiJoin[hash]" in none
    assert "Claim 1" in query and "SemiJoin[hash]" in query  # '//section' first: not ordered by Claim 4
    dtd = Router.compile([("q", text)], dtd=BOOK, optimize="dtd").explain("q")
    assert "optimize dtd" in dtd
    # with it, the selection is pulled up over the join shared by every constant of the signature
    shared = Router.compile([("q", text)], optimize="query").explain("q")
    assert "SharedSelection[hash]($3 . = 'x') over SharedJoin($1 with path 1)" in shared
    assert "SemiJoin" not in shared


def test_dtd_level_needs_a_dtd_and_unknown_levels_are_refused() -> None:
    with pytest.raises(CompileError, match="needs the feed's DTD"):
        Router.compile([("q", "//a")], optimize="dtd")
    with pytest.raises(CompileError, match="unknown optimization level"):
        Router.compile([("q", "//a")], optimize="max")


def test_the_planner_runs_the_never_match_check() -> None:
    from feedrouter.engine.nfa import Nfa
    from feedrouter.plan.planner import Planner, Strategy

    tree = parse("/book/figure")
    warned = Planner(Nfa(), Strategy.FWR, Optimize.DTD, BOOK).plan("s", tree).warning
    assert warned is not None and warned.code == "FR304" and warned.subscription_id == "s"
    assert "no 'figure' as a child of book" in warned.message
    assert Planner(Nfa(), Strategy.FWR, Optimize.QUERY, BOOK).plan("s", tree).warning is None


def test_the_rules_package_holds_only_rewrite_rules() -> None:
    """One module per rule, named after its function, each in RULES; claims, levels and checks live
    beside the package."""
    import feedrouter.plan.rules as package

    modules = {path.stem for path in Path(package.__file__).parent.glob("*.py")} - {"__init__"}
    assert modules == {rule.__name__ for rule in RULES}
    assert all(rule.__module__ == f"feedrouter.plan.rules.{rule.__name__}" for rule in RULES)
