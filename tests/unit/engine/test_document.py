"""Untrusted documents: hostile ones are refused with a DocumentError and leak nothing."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest
from lxml import etree

from feedrouter.engine.document import (
    DocumentLimits,
    DocumentParser,
    attribute_items,
    attribute_values,
    locked_down_parser,
)
from feedrouter.errors import DocumentError

NEWS_ENTITIES = '<!ENTITY nbsp "&#160;"><!ENTITY mdash "&#8212;"><!ELEMENT story (#PCDATA)>'


def parse(data: bytes, dtd: str | None = None, **limits: int) -> list:
    return list(
        DocumentParser(dtd, DocumentLimits(**limits) if limits else None).events(data, source="doc-1")
    )


def billion_laughs(levels: int = 10) -> bytes:
    decls = ['<!ENTITY l0 "lol">'] + [f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, levels)]
    return f"<!DOCTYPE a [{''.join(decls)}]><a>&l{levels - 1};</a>".encode()


def test_entity_expansion_bomb_is_refused() -> None:
    with pytest.raises(DocumentError) as err:
        parse(billion_laughs())
    assert err.value.code == "FR203"
    assert "doc-1" in str(err.value)


def test_quadratic_blowup_is_refused() -> None:
    big = "x" * 100_000
    doc = f'<!DOCTYPE a [<!ENTITY e "{big}">]><a>{"&e;" * 2000}</a>'.encode()
    with pytest.raises(DocumentError):
        parse(doc)


def test_external_entity_pointing_at_a_local_file_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    doc = f'<!DOCTYPE a [<!ENTITY x SYSTEM "file://{secret}">]><a>&x;</a>'.encode()
    with pytest.raises(DocumentError) as err:
        parse(doc)
    assert "TOP-SECRET" not in str(err.value)


def test_external_parameter_entity_is_not_read(tmp_path: Path) -> None:
    evil = tmp_path / "evil.dtd"
    evil.write_text('<!ENTITY leak "LEAKED">')
    doc = f'<!DOCTYPE a [<!ENTITY % p SYSTEM "file://{evil}"> %p;]><a>&leak;</a>'.encode()
    with pytest.raises(DocumentError):
        parse(doc)


class _Recorder(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        _Recorder.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'<!ENTITY x "FROM-NETWORK">')

    def log_message(self, *args: object) -> None:
        pass


def test_no_network_access_for_entities_or_dtds() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        hostile = [
            f'<!DOCTYPE a [<!ENTITY x SYSTEM "{url}/e">]><a>&x;</a>',
            f'<!DOCTYPE a SYSTEM "{url}/d.dtd"><a>&x;</a>',
            f'<!DOCTYPE a [<!ENTITY % p SYSTEM "{url}/p"> %p;]><a/>',
        ]
        for doc in hostile:
            try:
                events = parse(doc.encode())
            except DocumentError:
                continue
            assert all("FROM-NETWORK" not in (el.text or "") for _, el in events)
        # with a feed DTD configured, a DOCTYPE pointing at a URL gets the feed's DTD instead
        events = parse(
            f'<!DOCTYPE story SYSTEM "{url}/d.dtd"><story>a&nbsp;b</story>'.encode(), NEWS_ENTITIES
        )
        assert events[0][1].text == "a\u00a0b"
    finally:
        server.shutdown()
    assert _Recorder.hits == []


def test_deep_nesting_is_refused() -> None:
    doc = b"<a>" * 10_000 + b"</a>" * 10_000
    with pytest.raises(DocumentError) as err:
        parse(doc)
    assert err.value.code == "FR202"


def test_our_own_depth_limit_applies_below_the_parser_limit() -> None:
    from feedrouter.engine.nfa import Nfa
    from feedrouter.engine.runtime import LazyDfa, run

    events = parse(b"<a>" * 20 + b"</a>" * 20)
    with pytest.raises(DocumentError) as err:
        run(LazyDfa(Nfa()), events, max_depth=10)
    assert err.value.code == "FR202"


def test_invalid_utf8_is_refused_with_its_position() -> None:
    with pytest.raises(DocumentError) as err:
        parse(b"<a>ok</a>"[:3] + b"\xff\xfe" + b"</a>")
    assert err.value.code == "FR204"
    assert err.value.line == 1


def test_malformed_document_reports_line_and_column() -> None:
    with pytest.raises(DocumentError) as err:
        parse(b"<a>\n  <b>text</c>\n</a>")
    assert err.value.line == 2 and err.value.column is not None
    assert "line 2" in str(err.value)


def test_oversized_document_is_refused_before_parsing() -> None:
    with pytest.raises(DocumentError) as err:
        parse(b"<a>" + b"x" * 2000 + b"</a>", max_bytes=1000)
    assert err.value.code == "FR201"


@pytest.mark.parametrize("data", [b"", b"   \n"])
def test_empty_document_is_refused(data: bytes) -> None:
    with pytest.raises(DocumentError, match="empty"):
        parse(data)


def test_character_entities_declared_by_the_feed_dtd_expand() -> None:
    doc = b'<!DOCTYPE story SYSTEM "story.dtd"><story>a&nbsp;b&mdash;c</story>'
    events = parse(doc, NEWS_ENTITIES)
    assert events[0][1].text == "a\u00a0b\u2014c"


def test_entities_declared_in_the_document_itself_expand() -> None:
    doc = b'<!DOCTYPE a [<!ENTITY co "ACME &amp; Co">]><a>&co;</a>'
    assert parse(doc)[0][1].text == "ACME & Co"


def test_a_feed_dtd_with_parameter_entities_still_gives_documents_its_entities() -> None:
    dtd = (
        '<!ENTITY % common "id CDATA #IMPLIED"><!ENTITY nbsp "&#160;">'
        "<!ELEMENT story (#PCDATA)><!ATTLIST story %common; lang CDATA 'en'>"
    )
    events = parse(b'<!DOCTYPE story SYSTEM "story.dtd"><story>a&nbsp;b</story>', dtd)
    assert events[0][1].text == "a\u00a0b"
    assert events[0][1].get("lang") is None  # no attribute defaults from the feed DTD


def test_an_invalid_feed_dtd_is_a_compile_error() -> None:
    from feedrouter.errors import CompileError

    with pytest.raises(CompileError):
        DocumentParser("<!ENTITY broken")


# -- attribute name tests read every attribute once, however many an element has ---------------------

XML_NS = "{http://www.w3.org/XML/1998/namespace}"


def wide_element(count: int) -> tuple[etree._Element, list[tuple[str, str]]]:
    """An element with ``count`` plain attributes after a few special ones (entities, references,
    namespaces, normalized whitespace), and its attributes as (Clark name, value) in document order."""
    plain = " ".join(f'k{i}="v{i}"' for i in range(count))
    document = (
        '<!DOCTYPE r [<!ENTITY e "E&#38;#38;x">]><r xmlns:p="urn:p">'
        f'<a x="1&e;2" z="&#10;&lt;&amp;&#9;" p:q="n" {plain} p:w="w" xml:lang="en"/></r>'
    )
    element = parse_tree(document.encode())[0]
    expected = [("x", "1E&x2"), ("z", "\n<&\t"), ("{urn:p}q", "n")]
    expected += [(f"k{i}", f"v{i}") for i in range(count)]
    expected += [("{urn:p}w", "w"), (XML_NS + "lang", "en")]
    return element, expected


def parse_tree(data: bytes) -> etree._Element:
    return etree.fromstring(data, locked_down_parser(None))


@pytest.mark.parametrize("count", [0, 5, 200])
def test_attribute_name_tests_select_the_attributes_of_an_element_in_document_order(count: int) -> None:
    element, expected = wide_element(count)
    assert attribute_items(element, "{*}*") == expected == element.items()
    assert attribute_items(element, "{urn:p}*") == [("{urn:p}q", "n"), ("{urn:p}w", "w")]
    assert attribute_items(element, "{*}lang") == [(XML_NS + "lang", "en")]
    assert attribute_items(element, "x") == [("x", "1E&x2")]
    assert attribute_values(element, "{*}*") == [value for _, value in expected]


def test_an_element_with_fifty_thousand_attributes_has_them_all_selected() -> None:
    element, expected = wide_element(50_000)  # reading each by name from the first took 10 s
    assert attribute_items(element, "{*}*") == expected
    assert attribute_values(element, "{urn:p}*") == ["n", "w"]
