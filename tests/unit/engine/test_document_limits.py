"""The document limits are the configured ones: large documents parse, oversized ones are refused
before parsing (FR201), malformed ones are FR200, and every other guard still holds in huge mode."""

from __future__ import annotations

import io

import pytest

from feedrouter import Router
from feedrouter.delivery import Splitter
from feedrouter.delivery.messages import CountingReader
from feedrouter.engine import document
from feedrouter.engine.document import DocumentLimits, DocumentParser
from feedrouter.errors import DocumentError
from feedrouter.limits import MIB

ITEM = (
    b"<item id='%d'><title>headline %d</title><body>"
    + b"Lorem ipsum dolor sit amet. " * 70
    + b"</body></item>"
)


def news(megabytes: int) -> bytes:
    count = megabytes * MIB // len(ITEM % (0, 0))
    return b"<feed>" + b"".join(ITEM % (i, i) for i in range(count)) + b"</feed>"


def codes(data: bytes, **limits: int) -> str:
    try:
        list(DocumentParser(limits=DocumentLimits(**limits)).events(data, source="d"))
    except DocumentError as exc:
        return exc.code
    return "ok"


def test_a_20_mb_document_routes() -> None:
    # libxml2's 10 MB buffer limit refused it as malformed (FR200) under a documented 64 MiB limit
    data = news(20)
    assert len(data) > 20 * MIB
    results = Router.compile([("last", "//item[@id = '10000']/title")]).route(data)
    assert results == {"last": b"<title>headline 10000</title>"}


def test_a_text_node_over_10_mb_parses() -> None:
    assert codes(b"<a>" + b"x" * (11 * MIB) + b"</a>") == "ok"


def test_an_oversized_document_is_refused_before_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_parsing(*args: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr(DocumentParser, "_parse", no_parsing)
    data = b"<a>" + b"x" * (65 * MIB) + b"</a>"
    with pytest.raises(DocumentError) as err:
        DocumentParser().events(data, source="big.xml")
    assert err.value.code == "FR201" and "big.xml" in str(err.value)


def test_an_oversized_stream_is_refused_after_reading_one_byte_past_the_limit() -> None:
    reader = CountingReader(io.BytesIO(b"<a>" + b"x" * (65 * MIB) + b"</a>"))
    [message] = Splitter().messages("big.xml", reader)  # type: ignore[arg-type]
    assert message.error is not None and message.error.code == "FR201"
    assert reader.count == 64 * MIB + 1


def test_a_large_malformed_document_is_fr200_with_its_position() -> None:
    data = news(20)[:-3]
    with pytest.raises(DocumentError) as err:
        list(DocumentParser().events(data, source="d"))
    assert err.value.code == "FR200" and err.value.line == 1


def test_libxml2_keeps_its_amplification_guard_in_huge_mode() -> None:
    assert document.huge_tree_is_safe()


BILLION_LAUGHS = "".join(
    ['<!DOCTYPE a [<!ENTITY l0 "lol">'] + [f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10)]
)
BOMBS = {
    "billion laughs": BILLION_LAUGHS + "]><a>&l9;</a>",
    "quadratic blowup": '<!DOCTYPE a [<!ENTITY e "' + "x" * 100_000 + '">]><a>' + "&e;" * 2000 + "</a>",
    "attribute values": '<!DOCTYPE a [<!ENTITY e "'
    + "y" * 1000
    + '">]><a>'
    + '<b c="&e;&e;&e;&e;"/>' * 3000
    + "</a>",
}


@pytest.mark.parametrize("bomb", BOMBS.values(), ids=BOMBS.keys())
def test_entity_bombs_are_still_refused_in_huge_mode(bomb: str) -> None:
    assert codes(bomb.encode()) == "FR203"


def test_without_the_guard_huge_mode_stays_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(document, "huge_tree_is_safe", lambda: False)
    assert codes(b"<a>" + b"x" * (11 * MIB) + b"</a>") == "FR200"


def test_our_depth_limit_holds_without_the_runtime() -> None:
    nested = b"<a>" * 11 + b"</a>" * 11
    assert codes(nested, max_depth=11) == "ok"
    assert codes(nested, max_depth=10) == "FR202"
    # huge mode lets libxml2 nest 2048 levels: the default limit (256) is ours to keep
    assert codes(b"<a>" * 257 + b"</a>" * 257) == "FR202"


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview], ids=lambda k: k.__name__)
def test_bytes_bytearray_and_memoryview_are_documents(kind: type) -> None:
    data = b"<a><b>x</b></a>"
    assert Router.compile([("s", "//b")]).route(kind(data)) == {"s": b"<b>x</b>"}


def test_large_bytearrays_are_fed_a_slice_at_a_time() -> None:
    data = bytearray(news(3))
    events = DocumentParser().events(memoryview(data)[: len(data)], source="d")
    assert sum(1 for event, _ in events if event == "start") == 1 + 3 * (3 * MIB // len(ITEM % (0, 0)))


def test_events_come_one_at_a_time() -> None:
    events = DocumentParser().events(b"<a><b/><c/></a>")
    assert iter(events) is events
    assert [(event, el.tag) for event, el in events] == [
        ("start", "a"),
        ("start", "b"),
        ("end", "b"),
        ("start", "c"),
        ("end", "c"),
        ("end", "a"),
    ]


def test_a_document_with_leading_blank_space_over_a_kilobyte_is_not_empty() -> None:
    assert codes(b" " * 2000 + b"<a/>") == "ok"
