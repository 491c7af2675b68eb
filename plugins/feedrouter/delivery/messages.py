"""Input objects as messages: one message per plain object, or one per record of a container file.

A feed's objects are ``.xml`` or ``.xml.gz``. Without a record element each object is one message.
With one (``feeds.record_element``), each object is a container and every outermost element of
that name is a message: the container is streamed through lxml's incremental parser (chunk by
chunk, never loaded whole), each record is serialized when its end tag arrives and then cleared
with the siblings before it, so memory holds one record at a time.

The container parser is locked down like the document parser (:mod:`feedrouter.engine.document`):
internal entities only (the feed's DTD supplies their declarations), no network, no huge trees.
A container that turns out malformed half-way keeps the records before the fault; what is left is
one failed message whose bytes cannot be cut out (``whole_object``).
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from lxml import etree

from feedrouter.engine.document import DEFAULT_MAX_BYTES, _document_error, locked_down_parser
from feedrouter.errors import DocumentError

CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class Message:
    """One message of an input object: its bytes, or why it cannot be routed.

    Attributes:
        source: the input key (relative to the hour's prefix).
        index: the message's position in its object, from 0.
        data: the message bytes (empty when they were not kept: an oversized message).
        error: set when the message failed before routing (too large, a broken container).
        whole_object: the failure concerns the rest of the object, not one cut-out message.
    """

    source: str
    index: int
    data: bytes
    error: DocumentError | None = None
    whole_object: bool = False

    @property
    def digest(self) -> str:
        """SHA-256 of the message bytes, hex: the provenance a delivered result carries."""
        return hashlib.sha256(self.data).hexdigest()

    @property
    def label(self) -> str:
        """How errors name the message: ``key#index``."""
        return f"{self.source}#{self.index}"


class CountingReader:
    """A read-only stream wrapper that counts the bytes read (the stored size of an object)."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.count += len(data)
        return data

    def readable(self) -> bool:
        return True


@dataclass(frozen=True)
class Splitter:
    """Cuts input objects into messages.

    Args:
        record_element: the element that delimits messages in container files (``prefix:name``
            matches that prefix and local name, a plain name any element with that local name);
            None: each object is one message.
        dtd_text: the feed's DTD, whose entity declarations apply inside containers.
        max_message_bytes: larger messages are refused (FR201) and not kept.
    """

    record_element: str | None = None
    dtd_text: str | None = field(default=None, repr=False)
    max_message_bytes: int = DEFAULT_MAX_BYTES

    def messages(self, source: str, stream: BinaryIO) -> Iterator[Message]:
        """The messages of the object ``source`` read from ``stream`` (gunzipped for ``.gz``)."""
        reader: BinaryIO = gzip.GzipFile(fileobj=stream, mode="rb") if source.endswith(".gz") else stream
        cutter = _RecordCutter(self, source)
        try:
            if self.record_element is None:
                yield self._whole(source, reader)
            else:
                yield from cutter.records(reader)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            error = DocumentError(f"not a readable gzip stream: {exc}", code="FR200", source=source)
            yield Message(source, cutter.index, b"", error, whole_object=True)

    def _whole(self, source: str, reader: BinaryIO) -> Message:
        data = read_up_to(reader, self.max_message_bytes + 1)
        if len(data) > self.max_message_bytes:
            return Message(source, 0, b"", self.oversized(source, 0))
        return Message(source, 0, data)

    def oversized(self, source: str, index: int) -> DocumentError:
        return DocumentError(
            f"the message has more than the limit of {self.max_message_bytes} bytes",
            code="FR201",
            source=f"{source}#{index}",
        )

    def pull_parser(self) -> etree.XMLPullParser:
        """An incremental parser with the document parser's lock-down."""
        return locked_down_parser(self.dtd_text)


class _RecordCutter:
    """The state of one container being cut: the open record and the next message index."""

    def __init__(self, splitter: Splitter, source: str) -> None:
        self.splitter = splitter
        self.source = source
        self.index = 0
        self._open: etree._Element | None = None
        self._prefix, _, self._local = (splitter.record_element or "").rpartition(":")

    def records(self, reader: BinaryIO) -> Iterator[Message]:
        parser = self.splitter.pull_parser()
        try:
            for chunk in iter(lambda: reader.read(CHUNK_BYTES), b""):
                parser.feed(chunk)
                yield from self._take(parser)
            parser.close()
            yield from self._take(parser)
        except etree.XMLSyntaxError as exc:
            error = _document_error(exc, self.source)
            yield from self._take(parser)  # records that ended before the fault in the same chunk
            yield Message(self.source, self.index, b"", error, whole_object=True)

    def _take(self, parser: etree.XMLPullParser) -> Iterator[Message]:
        for event, element in parser.read_events():
            if event == "start" and self._open is None and self._is_record(element):
                self._open = element
            elif event == "end" and element is self._open:
                self._open = None
                yield self._cut(element)

    def _is_record(self, element: etree._Element) -> bool:
        if not isinstance(element.tag, str):
            return False
        if etree.QName(element).localname != self._local:
            return False
        return not self._prefix or element.prefix == self._prefix

    def _cut(self, element: etree._Element) -> Message:
        data = etree.tostring(element, encoding="UTF-8", xml_declaration=False, with_tail=False)
        _release(element)
        index, self.index = self.index, self.index + 1
        if len(data) > self.splitter.max_message_bytes:
            return Message(self.source, index, b"", self.splitter.oversized(self.source, index))
        return Message(self.source, index, data)


def _release(element: etree._Element) -> None:
    """Free a serialized record and the siblings before it: the tree never grows with the file."""
    element.clear(keep_tail=False)
    parent = element.getparent()
    if parent is None:
        return
    while element.getprevious() is not None:
        del parent[0]


def read_up_to(stream: BinaryIO, limit: int) -> bytes:
    """Read until ``limit`` bytes or the end of ``stream`` (network streams may return short reads)."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = stream.read(min(remaining, CHUNK_BYTES))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def dtd_text_of(router: object) -> str | None:
    """The DTD text a router was compiled with (text, bytes or a DtdGraph), or None."""
    dtd = getattr(router, "dtd", None)
    text = getattr(dtd, "text", dtd)
    if isinstance(text, bytes):
        return text.decode("utf-8")
    return text if isinstance(text, str) else None
