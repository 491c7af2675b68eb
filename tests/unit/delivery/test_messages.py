"""Cutting input objects into messages: plain and gzip'd objects, container files by record."""

from __future__ import annotations

import gzip
import io

from feedrouter.delivery import Message, Splitter
from feedrouter.delivery.messages import CountingReader, dtd_text_of
from feedrouter.router import Router

NEWS_DTD = '<!ENTITY eacute "&#233;"><!ELEMENT nitf (#PCDATA)>'


def cut(splitter: Splitter, source: str, data: bytes) -> list[Message]:
    return list(splitter.messages(source, io.BytesIO(data)))


def test_a_plain_object_is_one_message_and_gzip_is_undone() -> None:
    [plain] = cut(Splitter(), "a.xml", b"<a/>")
    [zipped] = cut(Splitter(), "b.xml.gz", gzip.compress(b"<b/>"))
    assert (plain.source, plain.index, plain.data, plain.error) == ("a.xml", 0, b"<a/>", None)
    assert zipped.data == b"<b/>" and zipped.label == "b.xml.gz#0"


def test_an_oversized_message_is_refused_unread() -> None:
    [message] = cut(Splitter(max_message_bytes=10), "a.xml", b"<a>" + b"x" * 20 + b"</a>")
    assert message.data == b"" and message.error is not None and message.error.code == "FR201"


def test_a_broken_gzip_stream_fails_the_rest_of_the_object() -> None:
    [message] = cut(Splitter(), "a.xml.gz", b"not gzip at all")
    assert message.whole_object and message.error is not None and message.error.code == "FR206"


def test_containers_give_every_outermost_record_in_order() -> None:
    data = b"<batch><hdr/><item id='1'><item id='inner'/></item>\n<item id='2'>two</item></batch>"
    messages = cut(Splitter("item"), "c.xml", data)
    assert [m.data for m in messages] == [
        b'<item id="1"><item id="inner"/></item>',
        b'<item id="2">two</item>',
    ]
    assert [m.index for m in messages] == [0, 1] and all(m.error is None for m in messages)


def test_records_keep_their_namespaces_and_prefixed_names_match_the_prefix() -> None:
    data = b'<b xmlns:n="urn:n" xmlns="urn:d"><n:item>a</n:item><item>b</item><m:item xmlns:m="urn:m"/></b>'
    prefixed = cut(Splitter("n:item"), "c.xml", data)
    plain = cut(Splitter("item"), "c.xml", data)
    assert [m.data for m in prefixed] == [b'<n:item xmlns:n="urn:n" xmlns="urn:d">a</n:item>']
    assert len(plain) == 3  # a plain name matches the local name in any namespace


def test_the_feed_dtd_declares_the_entities_of_a_container() -> None:
    data = b'<!DOCTYPE batch SYSTEM "news.dtd"><batch><nitf>Caf&eacute;</nitf></batch>'
    [message] = cut(Splitter("nitf", NEWS_DTD), "c.xml", data)
    assert message.data == "<nitf>Café</nitf>".encode()


def test_a_container_broken_half_way_keeps_the_records_before_the_fault() -> None:
    data = b"<batch><item>1</item>\n<item>2</item>\n<item><oops></item></batch>"
    first, second, broken = cut(Splitter("item"), "c.xml", data)
    assert (first.data, second.data) == (b"<item>1</item>", b"<item>2</item>")
    assert broken.whole_object and broken.index == 2 and broken.data == b""
    assert broken.error is not None and broken.error.line == 3 and broken.error.code == "FR200"


def test_a_container_is_read_in_chunks(monkeypatch) -> None:
    from feedrouter.delivery import messages

    monkeypatch.setattr(messages, "CHUNK_BYTES", 64)
    records = b"".join(b"<item>%d</item>" % i for i in range(200))
    reader = CountingReader(io.BytesIO(b"<batch>" + records + b"</batch>"))
    found = messages.Splitter("item").messages("c.xml", reader)  # type: ignore[arg-type]
    first = next(found)
    # the first record comes out after the first chunks, not after the whole file was read
    assert first.data == b"<item>0</item>" and reader.count <= 128
    rest = list(found)
    assert rest[-1].data == b"<item>199</item>" and len(rest) == 199


def test_a_hostile_container_is_refused_with_its_position() -> None:
    bomb = b'<!DOCTYPE b [<!ENTITY a "aaaaaaaaaa">' + b"".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">'.encode() for i in range(8)
    )
    [message] = cut(Splitter("item"), "c.xml", bomb + b"]><b><item>&i;</item></b>")
    assert message.error is not None and message.error.code == "FR203" and message.whole_object


def test_counting_reader_and_dtd_text_of() -> None:
    reader = CountingReader(io.BytesIO(b"12345"))
    assert reader.read(2) + reader.read() == b"12345" and reader.count == 5
    assert dtd_text_of(Router.compile([("s", "//x")], dtd=NEWS_DTD)) is not None
    assert dtd_text_of(Router.compile([("s", "//x")])) is None
