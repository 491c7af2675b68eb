"""Parse untrusted XML documents safely and feed their element events to the runtime.

Documents come from partners and wires we do not control, so the parser is locked down: internal
entities (declared in the document or in the feed's DTD handed to the router) are expanded within
libxml2's amplification limits; external entities, external DTDs and the network are never touched;
size and depth are bounded. Any failure is a :class:`DocumentError` with line and column.
"""

from __future__ import annotations

from collections.abc import Iterator

from lxml import etree

from feedrouter.errors import DocumentError, Span
from feedrouter.limits import DEFAULT_MAX_DEPTH, DEFAULT_MAX_DOCUMENT_BYTES, DocumentLimits
from feedrouter.schema.dtd import general_entity_declarations

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_DEPTH", "DocumentLimits", "DocumentParser"]

DEFAULT_MAX_BYTES = DEFAULT_MAX_DOCUMENT_BYTES


class _FeedDtdResolver(etree.Resolver):
    """Answers any request for an external DTD subset with the feed's own DTD text.

    News documents name their DTD by a system id (``nitf-3-0.dtd``) that we must not fetch; the
    router knows the feed's DTD, so its entity declarations apply whatever the id says.
    """

    def __init__(self, dtd_text: str) -> None:
        super().__init__()
        self._dtd_text = dtd_text

    def resolve(self, system_url, public_id, context):  # type: ignore[no-untyped-def]
        return self.resolve_string(self._dtd_text, context)


def locked_down_parser(dtd_text: str | None) -> etree.XMLPullParser:
    """An incremental start/end parser for untrusted bytes: internal entities only, no network, no
    file access, lxml's size limits on; an external DTD request gets ``dtd_text`` (the feed DTD's
    general entities) or nothing. Every parser of untrusted documents in feedrouter comes from here.
    """
    parser = etree.XMLPullParser(
        events=("start", "end"),
        resolve_entities="internal",
        no_network=True,
        load_dtd=dtd_text is not None,
        huge_tree=False,
        remove_blank_text=False,
    )
    if dtd_text is not None:
        parser.resolvers.add(_FeedDtdResolver(dtd_text))
    return parser


class DocumentParser:
    """Turns document bytes into start/end element events, or a :class:`DocumentError`."""

    def __init__(self, dtd_text: str | None = None, limits: DocumentLimits | None = None) -> None:
        # Only the feed DTD's general entities reach documents: parameter entities would not expand
        # in a subset loaded with external entities off, and element declarations would add
        # attribute defaults that XQuery processors reading the document alone would not see.
        self.dtd_text = general_entity_declarations(dtd_text) if dtd_text is not None else None
        self.limits = limits or DocumentLimits()

    def _new_parser(self) -> etree.XMLPullParser:
        return locked_down_parser(self.dtd_text)

    def events(self, data: bytes, source: str | None = None) -> list[tuple[str, etree._Element]]:
        """Parse ``data`` completely and return its element events in document order."""
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DocumentError("a document must be given as bytes", source=source)
        if len(data) > self.limits.max_bytes:
            raise DocumentError(
                f"the document has {len(data)} bytes, more than the limit of {self.limits.max_bytes}",
                code="FR201",
                source=source,
            )
        if not bytes(data[:1024]).strip():
            raise DocumentError("the document is empty", source=source)
        parser = self._new_parser()
        try:
            parser.feed(data)
            parser.close()
        except etree.XMLSyntaxError as exc:
            raise _document_error(exc, source) from None
        return list(parser.read_events())


def _document_error(exc: etree.XMLSyntaxError, source: str | None) -> DocumentError:
    message = str(exc.msg or exc).split(" (<string>", 1)[0]
    line, column = exc.position if exc.position else (0, 0)
    return DocumentError(
        message, code=_code_for(message), span=Span(line, column) if line else None, source=source
    )


def _code_for(message: str) -> str:
    lowered = message.lower()
    if "depth" in lowered:
        return "FR202"
    if "amplification" in lowered or "entity" in lowered:
        return "FR203"
    if "encoding" in lowered or "utf-8" in lowered:
        return "FR204"
    return "FR200"


def iter_text_nodes(element: etree._Element) -> Iterator[tuple[int, str]]:
    """The text node children of an element as (index, text): XDM text nodes, never empty.

    lxml keeps the text before the first child in ``.text`` and each later run in a child's ``.tail``
    (comments and processing instructions included), which is exactly how XDM splits text nodes.
    """
    if element.text:
        yield 0, element.text
    for index, child in enumerate(element, start=1):
        if child.tail:
            yield index, child.tail
