"""The DTD rewrites where the DTD uses prefixes or fixes a default namespace: names are rewritten with
their namespace, or not at all when the DTD leaves it open; results agree with Saxon on valid documents."""

from __future__ import annotations

import pytest
from lxml import etree

from feedrouter.lang import parse
from feedrouter.plan.optimize import Optimize, RuleContext
from feedrouter.plan.patterns import PathPattern, absolute_pattern, format_pattern
from feedrouter.plan.rules import Rule
from feedrouter.plan.rules.resolve_wildcards import resolve_wildcards
from feedrouter.plan.rules.rewrite_descendants import rewrite_descendants
from feedrouter.schema import DtdGraph
from feedrouter.schema.dtd import load_dtd
from tests.unit.schema.test_dtd_namespaces import DEFAULT_NAMESPACE, DUBLIN_CORE

DC = "declare namespace dc = 'urn:dc'; "
BIB = "declare default element namespace 'urn:bib'; "


@pytest.fixture(scope="module")
def dublin_core() -> DtdGraph:
    return DtdGraph.from_text(DUBLIN_CORE, root="r")


@pytest.fixture(scope="module")
def default_namespace() -> DtdGraph:
    return DtdGraph.from_text(DEFAULT_NAMESPACE)


def pattern(text: str) -> PathPattern:
    return absolute_pattern(parse(text).body.path)


def rewritten(rule: Rule, text: str, graph: DtdGraph) -> str:
    return format_pattern(rule(pattern(text), RuleContext(Optimize.DTD, graph)))


def test_a_wildcard_resolves_to_the_prefixed_child_with_its_namespace(dublin_core: DtdGraph) -> None:
    assert rewritten(resolve_wildcards, "//a/*", dublin_core) == "//a/{urn:dc}title"
    assert rewritten(resolve_wildcards, "/*/a/*", dublin_core) == "/r/a/{urn:dc}title"
    assert rewritten(resolve_wildcards, DC + "//dc:title/*", dublin_core) == "//{urn:dc}title/*"


def test_a_descendant_step_expands_with_namespaced_chains(dublin_core: DtdGraph) -> None:
    assert rewritten(rewrite_descendants, "//title", dublin_core) == "/r/title"
    assert rewritten(rewrite_descendants, DC + "//dc:title", dublin_core) == "/r/a/{urn:dc}title"
    assert rewritten(rewrite_descendants, DC + "//a//dc:title", dublin_core) == "/r/a/{urn:dc}title"
    assert rewritten(rewrite_descendants, "//a//title", dublin_core) == "/r/a//title"  # never matches


def test_a_fixed_default_namespace_keeps_wildcards(default_namespace: DtdGraph) -> None:
    assert rewritten(resolve_wildcards, "/*", default_namespace) == "/*"
    assert rewritten(resolve_wildcards, "/*/*", default_namespace) == "/*/*"
    assert rewritten(resolve_wildcards, BIB + "/*/book", default_namespace) == "/*/{urn:bib}book"
    assert rewritten(resolve_wildcards, BIB + "/bib/*", default_namespace) == "/{urn:bib}bib/*"


def test_a_fixed_default_namespace_keeps_descendant_steps(default_namespace: DtdGraph) -> None:
    assert rewritten(rewrite_descendants, "//title", default_namespace) == "//title"
    assert rewritten(rewrite_descendants, BIB + "//title", default_namespace) == "//{urn:bib}title"
    # title is a child of book only: no name in between to guess the namespace of
    assert rewritten(rewrite_descendants, BIB + "//book//title", default_namespace) == (
        "//{urn:bib}book/{urn:bib}title"
    )
    assert rewritten(rewrite_descendants, "//book//title", default_namespace) == "//book/title"


# Each document is valid against its DTD; Saxon's answers are the reference.
DUBLIN_CORE_DOCUMENTS = [
    b'<r xmlns:dc="urn:dc"><a><dc:title>inner</dc:title></a><title>outer</title></r>',
]
DEFAULT_NAMESPACE_DOCUMENTS = [
    b'<bib xmlns="urn:bib"><book year="1"><title>T</title></book></bib>',
    b'<bib><book year="2"><title>U</title></book><book><title>V</title></book></bib>',
]
DUBLIN_CORE_SUBSCRIPTIONS = [
    "//a/*",
    "/r/a/*",
    "/*/*/*",
    "//a//*",
    "//title",
    "//*:title",
    "for $a in //a return <x>{$a/*}</x>",
    DC + "//a/dc:title",
    DC + "//dc:title",
    DC + "/*/*/dc:title",
    DC + "for $t in //dc:title return <x>{$t/text()}</x>",
]
# a -> x:b -> a: nested a's, so '//a//c' has duplicate tuples (Claim 2 must not drop DupElim)
PREFIXED_LOOP = """<!ELEMENT r (a)> <!ATTLIST r xmlns:x CDATA #FIXED "urn:x">
<!ELEMENT a (x:b?, c)> <!ELEMENT x:b (a?, b?)> <!ELEMENT b EMPTY> <!ELEMENT c (#PCDATA)>"""
PREFIXED_LOOP_DOCUMENTS = [b'<r xmlns:x="urn:x"><a><x:b><a><c>in</c></a><b/></x:b><c>out</c></a></r>']
PREFIXED_LOOP_SUBSCRIPTIONS = ["//a//c", "for $a in //a return <x>{$a//c}</x>", "//a/*", "//c", "/*/*/*/*/c"]
DEFAULT_NAMESPACE_SUBSCRIPTIONS = [
    "/*",
    "/*/*",
    "/*/*/*",
    "//title",
    "//book/*",
    "//*:title",
    "/bib/book",
    BIB + "/*/book",
    BIB + "//book/*",
    BIB + "//title",
    BIB + "for $b in /*/book return <x>{$b/title/text()}</x>",
]


@pytest.mark.differential
@pytest.mark.parametrize(
    ("dtd", "root", "documents", "texts"),
    [
        (DUBLIN_CORE, "r", DUBLIN_CORE_DOCUMENTS, DUBLIN_CORE_SUBSCRIPTIONS),
        (DEFAULT_NAMESPACE, "bib", DEFAULT_NAMESPACE_DOCUMENTS, DEFAULT_NAMESPACE_SUBSCRIPTIONS),
        (PREFIXED_LOOP, "r", PREFIXED_LOOP_DOCUMENTS, PREFIXED_LOOP_SUBSCRIPTIONS),
    ],
    ids=["prefixed-content-model", "fixed-default-namespace", "loop-through-a-prefixed-name"],
)
def test_namespaced_dtds_agree_with_saxon(
    dtd: str, root: str, documents: list[bytes], texts: list[str]
) -> None:
    from tests.differential.oracle import SaxonOracle
    from tests.differential.test_against_saxon import compare_with_saxon

    graph = DtdGraph.from_text(dtd, root=root)
    validator = load_dtd(dtd.encode())
    # the rewrites serve valid documents only, so the documents must be valid for the test to mean anything
    assert all(validator.validate(etree.fromstring(data)) for data in documents)
    subscriptions = [(f"s{i}", text) for i, text in enumerate(texts)]
    counts = compare_with_saxon(SaxonOracle(), subscriptions, documents, dtd=graph)
    assert counts["matches"] > 0, counts
