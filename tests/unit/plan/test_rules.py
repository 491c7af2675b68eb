"""Plan optimizations: Claims 1-5, DTD rewrites of '//' and '*', never-match warnings, levels."""

from __future__ import annotations

import pytest

from feedrouter import CompileError, Router
from feedrouter.plan.rules.claims import no_duplicates, no_duplicates_on, ordered_on
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


def test_superfluous_descendant_steps_become_child_steps() -> None:
    rewritten, positions, notes = rewrite_descendants(nav("//book//section//figure//image"), BOOK)
    # sections nest, so book//section and section//figure keep their '//'
    assert rewritten == nav("/book//section//figure/image")
    assert positions == (0, 1, 2, 3)
    assert len(notes) == 2


def test_a_descendant_step_with_one_chain_expands_into_child_steps() -> None:
    rewritten, positions, notes = rewrite_descendants(nav("//book//city"), BIB)
    assert rewritten == nav("/bib/book/publisher/address/city")
    assert positions == (1, 4)  # book moved to field 2, city to field 5
    assert notes[-1].startswith("rewrite: //city -> /publisher/address/city")
    # title has two chains (book/title, article/title): it keeps its '//'
    assert rewrite_descendants(nav("//title"), BIB)[0] == nav("//title")
    # below a '//' on a loop the chain is not unique
    assert rewrite_descendants(nav("/book//figure"), BOOK)[0] == nav("/book//figure")


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
    assert resolve_wildcards(nav("/*/section/figure/*"), BOOK)[0] == nav("/book/section/figure/*")
    assert resolve_wildcards(nav("/book/section/figure/title/*"), BOOK)[0] == nav(
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
