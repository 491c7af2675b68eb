"""Generated documents: valid against their DTD, deterministic, shaped by the workload parameters."""

from __future__ import annotations

import io

import pytest
from lxml import etree

from feedrouter.schema import DtdGraph
from feedrouter.workload import dtds, generate_documents

NAMES = ["bib", "book", "news"]


def validator(name: str) -> etree.DTD:
    return etree.DTD(io.StringIO(dtds.text(name)))


def depth(root: etree._Element) -> int:
    return max(len(list(e.iterancestors())) + 1 for e in root.iter() if isinstance(e.tag, str))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("doctype", [False, True])
def test_documents_are_valid(name: str, doctype: bool) -> None:
    dtd = validator(name)
    docs = generate_documents(
        dtds.load(name), 120, seed=NAMES.index(name), doctype=doctype, comment_prob=0.2, special_prob=0.3
    )
    for doc in docs:
        root = etree.fromstring(doc)
        assert dtd.validate(root), (dtd.error_log.filter_from_errors(), doc)
        assert doc.startswith(b"<!DOCTYPE") == doctype


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_documents(name: str) -> None:
    graph = dtds.load(name)
    first = generate_documents(graph, 10, seed=5)
    assert generate_documents(graph, 10, seed=5) == first
    assert generate_documents(graph, 4, seed=5) == first[:4]  # document i depends on (seed, i) only
    assert generate_documents(graph, 10, seed=6) != first


def test_doc_depth_bounds_nesting() -> None:
    book = dtds.load("book")
    deep = [depth(etree.fromstring(d)) for d in generate_documents(book, 40, seed=1, doc_depth=9)]
    assert max(deep) <= 9 and max(deep) >= 7  # section recursion is exercised
    shallow = [depth(etree.fromstring(d)) for d in generate_documents(book, 40, seed=1, doc_depth=4)]
    assert max(shallow) <= 4
    # The DTD forces book/section/title: a smaller bound is exceeded only as little as the DTD needs.
    assert max(depth(etree.fromstring(d)) for d in generate_documents(book, 10, seed=1, doc_depth=1)) == 3


def test_max_repeats_per_element() -> None:
    bib = dtds.load("bib")
    for doc in generate_documents(bib, 30, seed=2, max_repeats={"book": 6, "*": 1}):
        root = etree.fromstring(doc)
        assert len(root.findall("book")) <= 6
        assert all(len(book.findall("author")) <= 1 for book in root.iter("book"))
    counts = [
        len(etree.fromstring(d).findall("book")) for d in generate_documents(bib, 30, seed=2, max_repeats=6)
    ]
    assert max(counts) == 6


def test_values_follow_max_value() -> None:
    values = set()
    for doc in generate_documents(dtds.load("bib"), 40, seed=3, max_value=5):
        root = etree.fromstring(doc)
        values |= {int(p) for p in root.xpath("//price/text() | //book/@year")}
    assert values == {1, 2, 3, 4, 5}


def test_escaping_non_ascii_comments_and_mixed_text() -> None:
    docs = generate_documents(
        dtds.load("book"), 60, seed=4, special_prob=0.5, comment_prob=0.3, charref_prob=0.3, mixed_text_prob=1
    )
    joined = b"".join(docs).decode("utf-8")
    for needle in ("&amp;", "&lt;", "&gt;", "<!--", "&#"):
        assert needle in joined
    texts = "".join(etree.fromstring(d).xpath("string()") for d in docs)
    assert "é" in texts or "ü" in texts or "東京" in texts
    assert any(etree.fromstring(d).xpath("//p[em and text()[normalize-space()]]") for d in docs)


def test_doctype_and_entity_references() -> None:
    docs = generate_documents(dtds.load("news"), 60, seed=5, doctype=True, special_prob=1, entity_prob=1)
    joined = b"".join(docs)
    assert b"<!ENTITY eacute" in docs[0]
    assert any(ref in joined for ref in (b"&eacute;", b"&mdash;", b"&nbsp;"))
    plain = b"".join(generate_documents(dtds.load("news"), 60, seed=5, special_prob=1, entity_prob=1))
    assert b"<!DOCTYPE" not in plain and b"&eacute;" not in plain and b"&nbsp;" not in plain


def test_id_and_idref_attributes() -> None:
    text = """
    <!ELEMENT list (item+, link*)>
    <!ELEMENT item EMPTY> <!ATTLIST item key ID #REQUIRED>
    <!ELEMENT link EMPTY> <!ATTLIST link to IDREF #REQUIRED also IDREFS #IMPLIED>
    """
    dtd = etree.DTD(io.StringIO(text))
    for doc in generate_documents(DtdGraph.from_text(text), 30, seed=6):
        assert dtd.validate(etree.fromstring(doc)), (dtd.error_log.filter_from_errors(), doc)


def test_namespaced_dtd() -> None:
    text = """
    <!ELEMENT w:feed (w:item*)>
    <!ATTLIST w:feed xmlns:w CDATA #FIXED "urn:wire">
    <!ELEMENT w:item (#PCDATA)>
    <!ATTLIST w:item w:rank CDATA #IMPLIED>
    """
    dtd = etree.DTD(io.StringIO(text))
    for doc in generate_documents(DtdGraph.from_text(text), 10, seed=7):
        root = etree.fromstring(doc)
        assert root.tag == "{urn:wire}feed" and dtd.validate(root)


def test_max_elements_caps_size() -> None:
    small = generate_documents(dtds.load("news"), 10, seed=8, max_repeats=6, doc_depth=10, max_elements=30)
    assert max(len(etree.fromstring(d).xpath("//*")) for d in small) < 80


@pytest.mark.shared_data
@pytest.mark.parametrize("path", ["xquery-usecases/book.dtd", "xquery-usecases/bib.dtd", "nitf/nitf-3-0.dtd"])
def test_documents_for_public_dtds_are_valid(shared_data, path: str) -> None:  # type: ignore[no-untyped-def]
    raw = (shared_data / path).read_bytes()
    dtd = etree.DTD(io.BytesIO(raw))
    for doc in generate_documents(DtdGraph.from_text(raw, source=path), 15, seed=9):
        assert dtd.validate(etree.fromstring(doc)), (dtd.error_log.filter_from_errors(), doc)
