"""complete_attribute_defaults: a document's internal-subset attribute defaults become attributes of
its elements (issue 18, item 12), with no file or network access."""

from __future__ import annotations

from pathlib import Path

from lxml import etree

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
