"""Records written while the container is read are the bytes lxml would serialize for them."""

from __future__ import annotations

import io

import pytest
from lxml import etree

from feedrouter.delivery import Splitter
from feedrouter.delivery.records import RecordWriter

CONTAINERS = {
    "escapes": (
        b"<c><rec a='x&lt;y&gt;z&amp;&quot;q&apos;' b='tab&#9;nl&#10;cr&#13;'>"
        b"1 &lt; 2 &gt; 0 &amp; &quot;q&quot; cr&#13;</rec></c>"
    ),
    "empty elements and whitespace": b"<c>\n <rec>\n  <e/>\n  <f></f>\n  <g> </g>\n </rec>\n</c>",
    "default namespace and prefixes": (
        b'<c xmlns="urn:d" xmlns:p="urn:p"><w xmlns:q="urn:q">'
        b'<rec p:a="1" q:b="2" c="3"><p:x/><q:y/><z xmlns=""><zz/></z></rec></w></c>'
    ),
    "prefix rebound inside the record": (
        b'<c xmlns:p="urn:one"><rec><p:x/><i xmlns:p="urn:two"><p:x p:a="1"/></i><p:x/></rec></c>'
    ),
    "default namespace undeclared outside": b'<c xmlns="urn:d"><w xmlns=""><rec><x/></rec></w></c>',
    "empty default namespace declared alone": b'<c xmlns=""><rec><x/></rec></c>',
    "xml namespace": b'<c><rec xml:lang="fr" xml:space="preserve"> a </rec></c>',
    "comments and processing instructions": (
        b"<c><!--out--><?out x?><rec><!-- in --><?target data here?><?bare?>t</rec></c>"
    ),
    "cdata": b"<c><rec><![CDATA[<not markup> & ]]]></rec></c>",
    "entities and non-ascii": (
        b'<!DOCTYPE c [<!ENTITY co "ACME &#38;amp; Co"><!ENTITY el "<b>bold</b>">]>'
        b"<c><rec n='&co;'>caf\xc3\xa9 &#x1F600; &co; &el;</rec></c>"
    ),
    "records inside records and in other elements": (
        b'<c><rec id="1"><rec id="inner"/></rec><w><rec id="2">t<rec/>u</rec></w></c>'
    ),
    "mixed content": b"<c><rec>a<b>b</b>c<d/>e<f>g<h/>i</f>j</rec>tail</c>",
}


def outermost(root: etree._Element, local: str) -> list[etree._Element]:
    found = []
    for element in root.iter(etree.Element):
        inside = any(etree.QName(a).localname == local for a in element.iterancestors())
        if etree.QName(element).localname == local and not inside:
            found.append(element)
    return found


@pytest.mark.parametrize("data", CONTAINERS.values(), ids=CONTAINERS.keys())
def test_records_are_what_lxml_serializes(data: bytes) -> None:
    root = etree.fromstring(data, etree.XMLParser(resolve_entities="internal", no_network=True))
    expected = [
        etree.tostring(el, encoding="UTF-8", xml_declaration=False, with_tail=False)
        for el in outermost(root, "rec")
    ]
    got = [m.data for m in Splitter("rec").messages("c.xml", io.BytesIO(data))]
    assert got == expected


def test_a_namespace_bound_to_two_prefixes_keeps_every_name() -> None:
    data = b'<c xmlns:a="urn:x" xmlns:b="urn:x"><rec><a:e b:f="1"/><b:g/></rec></c>'
    [message] = Splitter("rec").messages("c.xml", io.BytesIO(data))
    record = etree.fromstring(message.data)
    names = [(el.tag, dict(el.attrib)) for el in record.iter()]
    assert names == [("rec", {}), ("{urn:x}e", {"{urn:x}f": "1"}), ("{urn:x}g", {})]


def test_a_prefixed_record_name_matches_the_namespace_its_prefix_is_bound_to() -> None:
    data = (
        b'<c xmlns:n="urn:n"><n:rec>1</n:rec><m:rec xmlns:m="urn:n">2</m:rec><rec xmlns="urn:n">3</rec>'
        b'<rec>no</rec><p:rec xmlns:p="urn:p">no</p:rec><rec xmlns="urn:o">no</rec></c>'
    )
    found = [m.data for m in Splitter("n:rec").messages("c.xml", io.BytesIO(data))]
    assert found == [
        b'<n:rec xmlns:n="urn:n">1</n:rec>',
        b'<m:rec xmlns:n="urn:n" xmlns:m="urn:n">2</m:rec>',
        b'<rec xmlns:n="urn:n" xmlns="urn:n">3</rec>',
    ]


def test_a_record_is_dropped_as_soon_as_it_passes_the_limit() -> None:
    writer = RecordWriter("rec", max_bytes=100)
    parser = etree.XMLParser(target=writer)
    parser.feed(b"<c><rec>" + b"<v>x</v>" * 50_000)
    # far more than the limit was read, and nothing of it is held
    assert len(writer._buffer) == 0 and writer._pieces == [] and writer._oversized
    parser.feed(b"</rec><rec>ok</rec></c>")
    parser.close()
    assert list(writer.take()) == [None, b"<rec>ok</rec>"]


def test_a_record_at_the_limit_is_kept() -> None:
    record = b"<rec>" + b"x" * 89 + b"</rec>"
    assert len(record) == 100
    messages = list(
        Splitter("rec", max_message_bytes=100).messages("c.xml", io.BytesIO(b"<c>" + record + b"</c>"))
    )
    assert [m.data for m in messages] == [record]
    messages = list(
        Splitter("rec", max_message_bytes=99).messages("c.xml", io.BytesIO(b"<c>" + record + b"</c>"))
    )
    assert messages[0].error is not None and messages[0].error.code == "FR201"
