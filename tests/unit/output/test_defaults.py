"""complete_attribute_defaults: a document's internal-subset attribute defaults become attributes of
its elements (issue 18, item 12), with no file or network access."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from feedrouter import Router
from feedrouter.errors import DocumentError
from feedrouter.output.defaults import complete_attribute_defaults


def completed(document: bytes, entity_text: str | None = None) -> tuple[int, bytes]:
    root = etree.fromstring(document, etree.XMLParser(resolve_entities="internal", no_network=True))
    added = complete_attribute_defaults(root, document, entity_text)
    return added, etree.tostring(root)


def test_defaults_and_fixed_values_are_set_where_the_element_lacks_them() -> None:
    document = b"""<!DOCTYPE r [
<!ATTLIST a k CDATA "v" f CDATA #FIXED "F" i CDATA #IMPLIED r CDATA #REQUIRED>]>
<r><a/><a k="x"/><b/></r>"""
    assert completed(document) == (3, b'<r><a k="v" f="F"/><a k="x" f="F"/><b/></r>')


def test_prefixed_and_xml_attributes_are_set_in_their_namespaces() -> None:
    document = b"""<!DOCTYPE r [<!ATTLIST p:a p:k CDATA "v" xml:lang CDATA "en">]>
<r xmlns:p="urn:p"><p:a/></r>"""
    added, data = completed(document)
    assert added == 2 and data == b'<r xmlns:p="urn:p"><p:a p:k="v" xml:lang="en"/></r>'


def test_documents_without_attlist_are_left_alone() -> None:
    for document in (b"<r><a/></r>", b'<!DOCTYPE r [<!ENTITY e "x">]><r>&e;</r>'):
        root = etree.fromstring(document)
        before = etree.tostring(root)
        assert complete_attribute_defaults(root, memoryview(document)) == 0
        assert etree.tostring(root) == before


def test_the_second_parse_reads_no_external_subset_or_entity(tmp_path: Path) -> None:
    external = tmp_path / "ext.dtd"
    external.write_text('<!ATTLIST a leaked CDATA "from-a-file">')
    document = f'<!DOCTYPE r SYSTEM "{external.as_uri()}" [<!ATTLIST a k CDATA "v">]><r><a/></r>'.encode()
    _, data = completed(document)
    assert b"from-a-file" not in data and data == b'<r><a k="v"/></r>'


# -- the document's encoding: the declarations are found however its bytes spell them ---------------

DECLARED = '<!DOCTYPE r [<!ATTLIST a kind CDATA "dflt">]><r><a>1</a><a kind="own"/></r>'
COMPLETED = b'<r><a kind="dflt">1</a><a kind="own"/></r>'


def declared_as(encoding: str) -> str:
    return f'<?xml version="1.0" encoding="{encoding}"?>' + DECLARED


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(b"\xff\xfe" + declared_as("UTF-16").encode("utf-16-le"), id="utf-16-le-bom"),
        pytest.param(b"\xfe\xff" + declared_as("UTF-16").encode("utf-16-be"), id="utf-16-be-bom"),
        pytest.param(declared_as("UTF-16").encode("utf-16-le"), id="utf-16-le"),
        pytest.param(declared_as("UTF-16").encode("utf-16-be"), id="utf-16-be"),
        pytest.param(b"\xff\xfe" + DECLARED.encode("utf-16-le"), id="utf-16-bom-undeclared"),
        pytest.param(declared_as("UCS-4").encode("utf-32-be"), id="ucs-4"),
        pytest.param(b"\xef\xbb\xbf" + DECLARED.encode(), id="utf-8-bom"),
        pytest.param(declared_as("ISO-8859-1").encode("latin-1"), id="latin-1"),
    ],
)
def test_defaults_are_set_whatever_the_encoding_of_the_document(document: bytes) -> None:
    assert completed(document) == (1, COMPLETED)


@pytest.mark.parametrize(
    "document",
    [
        pytest.param(b'<!DOCTYPE r SYSTEM "r.dtd" [<!ENTITY e "x">]><r><a>&e;</a></r>', id="utf-8"),
        pytest.param(
            b"\xff\xfe" + '<!DOCTYPE r [<!ENTITY e "x">]><r><a>&e;</a></r>'.encode("utf-16-le"), id="utf-16"
        ),
    ],
)
def test_documents_whose_doctype_declares_no_attributes_are_left_alone(document: bytes) -> None:
    assert completed(document) == (0, b"<r><a>x</a></r>")


def test_declarations_quoted_in_the_content_declare_nothing() -> None:
    document = b'<r><!-- <!ATTLIST a k CDATA "v"> --><a><![CDATA[<!ATTLIST a k CDATA "v">]]></a></r>'
    assert completed(document)[0] == 0


def test_a_default_is_set_on_an_element_with_fifty_thousand_attributes() -> None:
    plain = " ".join(f'k{i}="v{i}"' for i in range(50_000))  # reading them by name took seconds
    document = f'<!DOCTYPE r [<!ATTLIST a kind CDATA "dflt">]><r><a {plain}/></r>'.encode()
    assert completed(document) == (1, f'<r><a {plain} kind="dflt"/></r>'.encode())


def test_a_routed_utf16_document_has_its_defaults_in_tests_and_results() -> None:
    router = Router.compile(
        [
            ("copy", "//a"),
            ("wild", "//a[@* = 'dflt']"),
            ("named", "//a[@kind = 'dflt']"),
            ("attributes", "for $a in //a return <x>{$a/@*}{$a/text()}</x>"),
            ("value", "for $a in //a return <x k='{$a/@kind}'>{$a/text()}</x>"),
        ]
    )
    document = b"\xff\xfe" + declared_as("UTF-16").replace('<a kind="own"/>', "").encode("utf-16-le")
    assert router.route(document) == {
        "copy": b'<a kind="dflt">1</a>',
        "wild": b'<a kind="dflt">1</a>',
        "named": b'<a kind="dflt">1</a>',
        "attributes": b'<x kind="dflt">1</x>',
        "value": b'<x k="dflt">1</x>',
    }


def test_defaults_that_would_take_too_long_to_set_refuse_the_document() -> None:
    # Each attribute set looks through those its element has: 30,000 defaults on one element took
    # seconds, and a 64 MB document could declare millions.
    declarations = " ".join(f'k{i} CDATA "v"' for i in range(30_000))
    document = f"<!DOCTYPE r [<!ATTLIST a {declarations}>]><r><a/></r>".encode()
    root = etree.fromstring(document)
    with pytest.raises(DocumentError) as refused:
        complete_attribute_defaults(root, document, source="wide.xml")
    assert refused.value.code == "FR203" and "wide.xml" in str(refused.value)
    assert "attribute defaults" in str(refused.value) and root[0].keys() == []
