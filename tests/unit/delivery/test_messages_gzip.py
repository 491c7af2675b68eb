"""A damaged .gz object is one failed message (FR206) naming it; nothing propagates."""

from __future__ import annotations

import gzip
import io
import random

import pytest

from feedrouter.delivery import Message, Splitter

DOCUMENT = b"<a>" + "".join(random.Random(13).choice("abcdef ") for _ in range(50_000)).encode() + b"</a>"
DAMAGE = {
    "truncated (EOFError)": lambda z: z[: len(z) // 2],
    "bad deflate data (zlib.error)": lambda z: z[:10] + b"\x07" + z[11:],
    "bad CRC (BadGzipFile)": lambda z: z[:-8] + b"\0\0\0\0" + z[-4:],
}
DAMAGED = {name: damage(gzip.compress(DOCUMENT, mtime=0)) for name, damage in DAMAGE.items()}
DAMAGED["not gzip (BadGzipFile)"] = DOCUMENT


def cut(splitter: Splitter, source: str, data: bytes) -> list[Message]:
    return list(splitter.messages(source, io.BytesIO(data)))


@pytest.mark.parametrize("data", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_damaged_plain_object_is_one_fr206_message(data: bytes) -> None:
    [message] = cut(Splitter(), "wire/a.xml.gz", data)
    assert message.error is not None and message.error.code == "FR206" and message.whole_object
    assert "wire/a.xml.gz" in str(message.error) and message.data == b""


@pytest.mark.parametrize("data", [b"", gzip.compress(b"")], ids=["zero bytes", "gzip of nothing"])
def test_an_empty_gz_object_is_an_empty_message_not_a_gzip_fault(data: bytes) -> None:
    [message] = cut(Splitter(), "a.xml.gz", data)
    assert message.error is None and message.data == b""  # routing refuses it as empty (FR200)


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_container_keeps_the_records_before_the_damage(damage) -> None:
    records = b"".join(b"<r>%d</r>" % i for i in range(20_000))
    messages = cut(Splitter("r"), "c.xml.gz", damage(gzip.compress(b"<c>" + records + b"</c>", mtime=0)))
    *good, last = messages
    assert last.error is not None and last.error.code == "FR206" and last.whole_object
    assert "c.xml.gz" in str(last.error) and last.index == len(good)
    assert [m.data for m in good] == [b"<r>%d</r>" % i for i in range(len(good))]


def test_a_gzip_bomb_stops_one_byte_past_the_limit() -> None:
    bomb = gzip.compress(b"<a>" + b"a" * 5_000_000 + b"</a>")
    [message] = cut(Splitter(max_message_bytes=1000), "b.xml.gz", bomb)
    assert message.error is not None and message.error.code == "FR206" and not message.whole_object
    assert "expands to more than" in str(message.error)
