"""Input objects as messages: one message per plain object, or one per record of a container file.

A feed's objects are ``.xml`` or ``.xml.gz``. Without a record element each object is one message,
read (and gunzipped) up to the message limit and no further. With one (``feeds.record_element``),
each object is a container and every outermost element of that name is a message.

A container is streamed, never held: lxml's parser reports it to :class:`_RecordWriter` as
callbacks (its parser target interface), chunk by chunk. No tree is built and no element object
exists, so nothing outside a record costs memory, and nothing of ours points into libxml2's nodes
when it rejects malformed input (the entity content it frees). Each record is written out as
UTF-8 bytes while it is read, with every namespace in scope declared on its root, entities
expanded and the rest as lxml would serialize it; a record that passes the message limit is
dropped on the spot (FR201) and the container goes on. Memory is bounded by the largest record
allowed plus one chunk.

The container parser is locked down like the document parser (:mod:`feedrouter.engine.document`):
internal entities only (the feed's DTD supplies their declarations), no network. A container that
turns out malformed half-way keeps the records before the fault; what is left is one failed message
whose bytes cannot be cut out (``whole_object``). A corrupt or truncated ``.gz`` ends the same way
with FR206; a compressed plain object that expands past the limit is FR206 as well.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from lxml import etree

from feedrouter.delivery.records import RecordWriter
from feedrouter.engine.document import DEFAULT_MAX_BYTES, _document_error, locked_down_parser
from feedrouter.errors import DocumentError

CHUNK_BYTES = 1 << 20

#: What reading a damaged gzip stream raises: a bad header or CRC, a truncated member, bad deflate data.
GZIP_ERRORS = (gzip.BadGzipFile, EOFError, zlib.error)


class ByteReader(Protocol):
    """What a message is read from: an object's stream, or the gunzipping reader around it."""

    def read(self, size: int = -1, /) -> bytes: ...


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

    def __init__(self, raw: ByteReader) -> None:
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
            matches that local name in the namespace the prefix is bound to where the element
            stands, a plain name any element with that local name); None: each object is one message.
        dtd_text: the feed's DTD, whose entity declarations apply inside containers.
        max_message_bytes: larger messages are refused (FR201) and not kept.
    """

    record_element: str | None = None
    dtd_text: str | None = field(default=None, repr=False)
    max_message_bytes: int = DEFAULT_MAX_BYTES

    def messages(self, source: str, stream: ByteReader) -> Iterator[Message]:
        """The messages of the object ``source`` read from ``stream`` (gunzipped for ``.gz``).

        Never raises for what the object holds: a broken container or gzip stream ends the object
        with a failed message, after the records read before the fault.
        """
        compressed = source.endswith(".gz")
        reader = stream
        if compressed:
            # typeshed asks the gzip file object for seek(), which GzipFile calls only to rewind
            reader = gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[call-overload]
        cutter = _RecordCutter(self, source)
        try:
            if self.record_element is None:
                yield self._whole(source, reader, compressed)
            else:
                yield from cutter.records(reader)
        except GZIP_ERRORS as exc:
            yield Message(source, cutter.index, b"", unreadable_gzip(source, exc), whole_object=True)

    def _whole(self, source: str, reader: ByteReader, compressed: bool) -> Message:
        data = read_up_to(reader, self.max_message_bytes + 1)
        if len(data) <= self.max_message_bytes:
            return Message(source, 0, data)
        if compressed:
            error = DocumentError(
                f"the object expands to more than the message limit of {self.max_message_bytes} bytes "
                "when gunzipped; the rest was not decompressed",
                code="FR206",
                source=f"{source}#0",
            )
            return Message(source, 0, b"", error)
        return Message(source, 0, b"", self.oversized(source, 0))

    def oversized(self, source: str, index: int) -> DocumentError:
        return DocumentError(
            f"the message has more than the limit of {self.max_message_bytes} bytes",
            code="FR201",
            source=f"{source}#{index}",
        )

    def container_parser(self, writer: RecordWriter) -> etree.XMLParser:
        """An incremental parser with the document parser's lock-down that reports to ``writer``."""
        return locked_down_parser(self.dtd_text, target=writer)


def unreadable_gzip(source: str, exc: BaseException) -> DocumentError:
    """FR206 for a gzip stream that cannot be read to its end (the reason from zlib or gzip)."""
    return DocumentError(
        f"not a readable gzip stream ({type(exc).__name__}: {exc})", code="FR206", source=source
    )


class _RecordCutter:
    """The state of one container being cut: the parser, its record writer and the next index."""

    def __init__(self, splitter: Splitter, source: str) -> None:
        self.splitter = splitter
        self.source = source
        self.index = 0
        self._writer = RecordWriter(splitter.record_element or "", splitter.max_message_bytes)
        self._progress = 0  # the writer's callback count when last looked at
        self._unreported = 0  # bytes fed since the parser last reported anything

    def records(self, reader: ByteReader) -> Iterator[Message]:
        parser = self.splitter.container_parser(self._writer)
        # a gzip reader's read1 hands over what one step decompressed: read() would fill its chunk
        # first, and a fault further on would lose the records decompressed before it
        read = reader.read1 if isinstance(reader, gzip.GzipFile) else reader.read
        try:
            for chunk in iter(lambda: read(CHUNK_BYTES), b""):
                parser.feed(chunk)
                yield from self._take()
                if self._stalled(len(chunk)):
                    yield self._token_too_large()
                    return
            parser.close()
        except etree.XMLSyntaxError as exc:
            yield from self._take()  # records that ended before the fault in the same chunk
            yield Message(self.source, self.index, b"", _document_error(exc, self.source), whole_object=True)
            return
        yield from self._take()

    def _stalled(self, fed: int) -> bool:
        """Whether libxml2 has buffered more than a message's worth of input without reporting
        anything: one markup construct longer than any message could be (a bomb's giant attribute
        value), which would otherwise be held whole before it is parsed."""
        if self._writer.progress != self._progress:
            self._progress, self._unreported = self._writer.progress, 0
            return False
        self._unreported += fed
        return self._unreported > self.splitter.max_message_bytes + CHUNK_BYTES

    def _take(self) -> Iterator[Message]:
        for data in self._writer.take():
            index, self.index = self.index, self.index + 1
            if data is None:
                yield Message(self.source, index, b"", self.splitter.oversized(self.source, index))
            else:
                yield Message(self.source, index, data)

    def _token_too_large(self) -> Message:
        """The object ends here: the construct being buffered cannot be cut out or skipped."""
        limit = self.splitter.max_message_bytes
        error = DocumentError(
            f"one piece of markup (a tag, comment, processing instruction or the DOCTYPE) runs past "
            f"{limit} bytes, the message limit; the rest of the object was not read",
            code="FR201",
            source=f"{self.source}#{self.index}",
        )
        return Message(self.source, self.index, b"", error, whole_object=True)


def read_up_to(stream: ByteReader, limit: int) -> bytes:
    """Read until ``limit`` bytes or the end of ``stream`` (network streams may return short reads).

    Memory stays at about what was read: the chunks go into one growing buffer, handed back as is.
    """
    buffer = io.BytesIO()
    remaining = limit
    while remaining > 0:
        chunk = stream.read(min(remaining, CHUNK_BYTES))
        if not chunk:
            break
        buffer.write(chunk)
        remaining -= len(chunk)
    return buffer.getvalue()


def dtd_text_of(router: object) -> str | None:
    """The DTD text a router was compiled with (text, bytes or a DtdGraph), or None."""
    dtd = getattr(router, "dtd", None)
    text = getattr(dtd, "text", dtd)
    if isinstance(text, bytes):
        return text.decode("utf-8")
    return text if isinstance(text, str) else None
