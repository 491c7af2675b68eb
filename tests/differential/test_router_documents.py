"""Documents the router must answer as Saxon does (issue 18, item 12).

* Attribute defaults a document declares in its internal subset are attributes like any other:
  subscriptions match on them and the copies they deliver carry them.
* DTD-driven optimizations hold for documents valid against the feed DTD only. With the Bib DTD,
  ``//title`` is rewritten to ``/bib/book/title``; a ``<bib>`` holding an ``<article><title>`` is not
  valid, and routing it with the rewritten plan would silently drop that title. Such a document is
  routed by the DTD-free plans (``invalid_documents="fallback"``) or refused with FR207
  (``"quarantine"``).
"""

from __future__ import annotations

import pytest

from feedrouter import DocumentError, Router
from feedrouter.workload import dtds
from tests.differential.oracle import SaxonOracle, canonical
from tests.differential.test_against_saxon import compare_with_saxon

pytestmark = pytest.mark.differential

DEFAULTS = [
    b"""<!DOCTYPE r [<!ATTLIST a kind CDATA "dflt" fixed CDATA #FIXED "F" opt CDATA #IMPLIED>]>
<r><a>1</a><a kind="x">2</a><b><a opt="o">3</a></b></r>""",
    b"""<!DOCTYPE r [<!ELEMENT r ANY><!ELEMENT p:a ANY>
<!ATTLIST p:a p:rank CDATA "9" xml:lang CDATA "en" tok NMTOKEN "  t1  ">
<!ATTLIST r xmlns:p CDATA #FIXED "urn:p">]>
<r><p:a>one</p:a><p:a p:rank="1" xml:lang="de">two</p:a></r>""",
]

DEFAULT_CASES = [
    "//a",
    '//a[@kind = "dflt"]',
    '//b[a/@fixed = "F"]',
    "/r",
    "//b",
    "for $a in //a return <hit>{ $a }</hit>",
    "for $a in //a where $a/@kind = 'x' return $a",
    "declare namespace p = 'urn:p'; //p:a",
    "declare namespace p = 'urn:p'; //p:a[@p:rank = 9]",
    "declare namespace p = 'urn:p'; for $a in //p:a return <x>{ $a/text() }</x>",
]


@pytest.fixture(scope="module")
def oracle() -> SaxonOracle:
    return SaxonOracle()


def test_internal_subset_attribute_defaults_are_delivered_as_saxon_does(oracle: SaxonOracle) -> None:
    subscriptions = [(f"s{i}", text) for i, text in enumerate(DEFAULT_CASES)]
    counts = compare_with_saxon(oracle, subscriptions, DEFAULTS)
    assert counts["matches"] >= 8 * 8, counts  # the cases match under every configuration


BIB_VALID = (
    b'<bib><book year="1994"><title>TCP/IP</title><author><last>S</last><first>W</first></author>'
    b"<publisher>AW</publisher><price>65.95</price></book></bib>"
)
BIB_ARTICLE = BIB_VALID.replace(b"</bib>", b"<article><title>Art</title></article></bib>")
BIB_UNKNOWN_ROOT = b"<library><book><title>Lost</title></book></library>"
BIB_CASES = [
    "//title",
    "//book/title",
    "for $t in //title return <t>{ $t/text() }</t>",
    "//last",
    "/bib//title",
    "//*[title]",
]


@pytest.mark.parametrize(
    "document", [BIB_VALID, BIB_ARTICLE, BIB_UNKNOWN_ROOT], ids=["valid", "article", "root"]
)
def test_documents_the_dtd_does_not_validate_get_saxons_answer_with_fallback(
    oracle: SaxonOracle, document: bytes
) -> None:
    subscriptions = [(f"s{i}", text) for i, text in enumerate(BIB_CASES)]
    router = Router.compile(subscriptions, dtd=dtds.load("bib"), optimize="dtd", invalid_documents="fallback")
    assert "/bib/book/title" in router.explain("s0")  # the rewrite that assumes a valid document
    got = router.route(document)
    sdoc = oracle.document(document)
    for sid, text in subscriptions:
        expected = oracle.run(text, sdoc).encode()
        assert (sid in got) == bool(expected), (sid, text)
        if expected:
            assert canonical(got[sid]) == canonical(expected), (sid, text)
    assert (router._fallback is None) == (document is BIB_VALID)  # built for invalid documents only


def test_the_article_title_saxon_returns_is_delivered_with_fallback(oracle: SaxonOracle) -> None:
    router = Router.compile([("titles", "//title")], dtd=dtds.load("bib"), invalid_documents="fallback")
    expected = oracle.run("//title", oracle.document(BIB_ARTICLE)).encode()
    assert b"Art" in expected
    assert canonical(router.route(BIB_ARTICLE)["titles"]) == canonical(expected)


@pytest.mark.parametrize("document", [BIB_ARTICLE, BIB_UNKNOWN_ROOT], ids=["article", "root"])
def test_documents_the_dtd_does_not_validate_are_fr207_with_quarantine(document: bytes) -> None:
    router = Router.compile([("titles", "//title")], dtd=dtds.load("bib"), invalid_documents="quarantine")
    with pytest.raises(DocumentError) as caught:
        router.route(document, source="in/doc.xml")
    assert caught.value.code == "FR207" and caught.value.source == "in/doc.xml"
    assert "not valid against the feed DTD" in caught.value.message
    assert router.route(BIB_VALID) == {"titles": b"<title>TCP/IP</title>"}
