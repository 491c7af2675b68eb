"""Parse untrusted XML documents safely and feed their element events to the runtime.

Documents come from partners and wires we do not control, so the parser is locked down: internal
entities (declared in the document or in the feed's DTD handed to the router) are expanded within
libxml2's amplification limits; external entities, external DTDs and the network are never touched;
size and depth are bounded. Any failure is a :class:`DocumentError` with line and column.

Three rules keep lxml memory-safe and lean here:

* A document is parsed whole into a tree first and only then walked. No element object exists
  while libxml2 parses, so when libxml2 rejects a document (and frees nodes it had built, e.g. the
  content of a malformed entity) nothing of ours still points at them.
* The size limit is checked before parsing, and within it libxml2's "huge" mode is on: its fixed
  10 MB buffer and text limits would otherwise refuse documents the configured limit allows. The
  entity amplification guard stays on in that mode (checked once per process, see
  :func:`huge_tree_is_safe`); the depth limit is ours (:class:`DocumentLimits.max_depth`).
* Events are yielded one at a time (an iterator, not a list of pairs).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Protocol, cast

from lxml import etree

from feedrouter.engine.nfa import is_namespace_wildcard, tag_matches
from feedrouter.errors import DocumentError, Span
from feedrouter.limits import DEFAULT_MAX_DEPTH, DEFAULT_MAX_DOCUMENT_BYTES, DocumentLimits
from feedrouter.schema.dtd import general_entity_declarations

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "DocumentLimits",
    "DocumentParser",
    "all_attributes",
    "huge_tree_is_safe",
    "locked_down_parser",
    "walk",
]

DEFAULT_MAX_BYTES = DEFAULT_MAX_DOCUMENT_BYTES
#: Bytes handed to libxml2 per call when the document is not a ``bytes`` object (no whole copy).
FEED_BYTES = 1 << 20

Events = Iterator[tuple[str, etree._Element]]

_PARSER_OPTION_HINT = re.compile(r",? *(?:use|try) XML_PARSE_HUGE(?: option)?")


class _FeedDtdResolver(etree.Resolver):
    """Answers any request for an external DTD subset with the feed's own DTD text.

    News documents name their DTD by a system id (``nitf-3-0.dtd``) that we must not fetch; the
    router knows the feed's DTD, so its entity declarations apply whatever the id says.
    """

    def __init__(self, dtd_text: str) -> None:
        super().__init__()
        self._dtd_text = dtd_text

    # Unannotated: lxml-stubs 0.5 gives Resolver.resolve no context argument and resolve_string a
    # required base_url, neither of which lxml has.
    def resolve(self, system_url, public_id, context):
        return self.resolve_string(self._dtd_text, context)


class ParseTarget(Protocol):
    """lxml's parser target interface as feedrouter's targets use it: the namespace declarations
    new on an element come to ``start_ns`` before its ``start`` (lxml 6.2 passes ``start`` an
    empty third argument when the target has no ``start_ns``)."""

    def start(self, tag: str, attrib: dict[str, str], nsmap: dict[str, str]) -> None: ...

    def end(self, tag: str) -> None: ...

    def data(self, text: str) -> None: ...

    def close(self) -> object: ...


def locked_down_parser(dtd_text: str | None, target: ParseTarget | None = None) -> etree.XMLParser:
    """A feed parser for untrusted bytes: internal entities only, no network, no file access.

    An external DTD request gets ``dtd_text`` (the feed DTD's general entities) or nothing.
    ``target`` receives the parse as callbacks instead of a tree (lxml's parser target interface).
    Every parser of untrusted documents in feedrouter comes from here.
    """
    parser = etree.XMLParser(
        # lxml-stubs 0.5's ParserTarget has no nsmap argument on start(), which lxml passes
        target=target,  # type: ignore[arg-type]
        resolve_entities="internal",  # type: ignore[arg-type]  # lxml-stubs 0.5 allows only a bool, lxml also "internal"
        no_network=True,
        load_dtd=dtd_text is not None,
        huge_tree=huge_tree_is_safe(),
        remove_blank_text=False,
    )
    if dtd_text is not None:
        parser.resolvers.add(_FeedDtdResolver(dtd_text))
    return parser


@functools.cache
def huge_tree_is_safe() -> bool:
    """Whether libxml2 keeps refusing entity amplification with its huge-tree option on.

    libxml2 before 2.11 switched every entity check off in huge mode; from 2.11 on the
    amplification limit holds regardless. Asked once per process with a small amplifying document
    (3 MB expanded from 20 KB, harmless even where it expands); without the guard huge mode stays
    off and documents keep libxml2's 10 MB buffer limit.
    """
    probe = f'<!DOCTYPE a [<!ENTITY e "{"x" * 1000}">]><a>{"&e;" * 3000}</a>'.encode()
    parser = etree.XMLParser(
        resolve_entities="internal",  # type: ignore[arg-type]  # lxml-stubs 0.5 allows only a bool, lxml also "internal"
        no_network=True,
        load_dtd=False,
        huge_tree=True,
    )
    try:
        etree.fromstring(probe, parser)
    except etree.XMLSyntaxError as exc:
        return "amplification" in str(exc).lower()
    return False


class DocumentParser:
    """Turns document bytes into start/end element events, or a :class:`DocumentError`."""

    def __init__(self, dtd_text: str | None = None, limits: DocumentLimits | None = None) -> None:
        # Only the feed DTD's general entities reach documents: parameter entities would not expand
        # in a subset loaded with external entities off, and element declarations would add
        # attribute defaults that XQuery processors reading the document alone would not see.
        self.dtd_text = general_entity_declarations(dtd_text) if dtd_text is not None else None
        self.limits = limits or DocumentLimits()

    def events(self, data: bytes | bytearray | memoryview, source: str | None = None) -> Events:
        """Parse ``data`` completely, then yield its element events in document order.

        Parse errors, an oversized or empty document raise here; a document nested deeper than
        ``limits.max_depth`` raises (FR202) while the events are read.
        """
        view = _byte_view(data, source)
        self._check_size(view, source)
        root = self._parse(view, source)
        return walk(root, self.limits.max_depth, source)

    def _check_size(self, view: memoryview, source: str | None) -> None:
        if view.nbytes > self.limits.max_bytes:
            raise DocumentError(
                f"the document has {view.nbytes} bytes, more than the limit of {self.limits.max_bytes}",
                code="FR201",
                source=source,
            )
        if not bytes(view[:1024]).strip() and not bytes(view).strip():
            raise DocumentError("the document is empty", source=source)

    def _parse(self, view: memoryview, source: str | None) -> etree._Element:
        parser = locked_down_parser(self.dtd_text)
        try:
            for chunk in _chunks(view):
                parser.feed(chunk)
            return parser.close()
        except etree.XMLSyntaxError as exc:
            raise _document_error(exc, source) from None


def _byte_view(data: object, source: str | None) -> memoryview:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DocumentError("a document must be given as bytes", source=source)
    view = memoryview(data)
    if not view.contiguous:
        return memoryview(view.tobytes())
    return view if view.ndim == 1 and view.itemsize == 1 else view.cast("B")


def _chunks(view: memoryview) -> Iterator[bytes]:
    """The document as libxml2 takes it (``bytes`` only), one :data:`FEED_BYTES` copy at a time:
    never a second whole copy, and libxml2's push buffer keeps only what it has not parsed yet."""
    for start in range(0, view.nbytes, FEED_BYTES):
        yield view[start : start + FEED_BYTES].tobytes()


def walk(root: etree._Element, max_depth: int, source: str | None = None) -> Events:
    """The start/end events of the elements under ``root`` (comments and PIs skipped), one at a time;
    an element deeper than ``max_depth`` raises FR202 before its start event."""
    depth = 0
    for event, element in etree.iterwalk(root, events=("start", "end"), tag=etree.Element):
        if event == "start":
            depth += 1
            if depth > max_depth:
                raise DocumentError(
                    f"the document nests elements deeper than {max_depth} levels", code="FR202", source=source
                )
        else:
            depth -= 1
        yield event, element


def _document_error(exc: etree.XMLSyntaxError, source: str | None) -> DocumentError:
    message = str(exc.msg or exc).split(" (<string>", 1)[0].strip()
    message = _PARSER_OPTION_HINT.sub("", message)  # libxml2's advice is for its API users, not ours
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


#: ``@*``: every attribute of an element (``*:*`` as a Clark name test).
ANY_ATTRIBUTE = "{*}*"


def is_attribute_wildcard(clark: str) -> bool:
    """Whether an attribute name test is ``@*``, ``@*:local`` or ``@prefix:*`` (no XML name has a ``*``)."""
    return clark == ANY_ATTRIBUTE or is_namespace_wildcard(clark)


def attribute_items(element: etree._Element, clark: str) -> list[tuple[str, str]]:
    """The attributes an attribute name test selects on an element, as (Clark name, value), in the
    document's order; a plain name selects at most one."""
    if not is_attribute_wildcard(clark):
        single = element.get(clark)
        return [] if single is None else [(clark, single)]
    if clark == ANY_ATTRIBUTE:
        return all_attributes(element)
    return [(name, text) for name, text in all_attributes(element) if tag_matches(clark, name)]


#: Up to this many attributes lxml's ``items()`` is the fastest read of an element's attributes;
#: past it, its look-up of each value by name from the first attribute makes it quadratic.
FEW_ATTRIBUTES = 64


def all_attributes(element: etree._Element) -> list[tuple[str, str]]:
    """The attributes of an element as (Clark name, value), in the document's order, in time linear
    in their number (a document may give one element 50,000 of them)."""
    # lxml's stubs allow bytes for names and values; a parsed document gives str only.
    if len(element.attrib) <= FEW_ATTRIBUTES:
        return cast(list[tuple[str, str]], element.items())
    # XPath reads each attribute node's value once, in the order ``keys()`` names them.
    values = cast(list[str], element.xpath("@*", smart_strings=False))
    return list(zip(cast(list[str], element.keys()), values, strict=True))


def attribute_values(element: etree._Element, clark: str) -> list[str]:
    """The values of the attributes an attribute name test selects (see :func:`attribute_items`)."""
    if not is_attribute_wildcard(clark):
        value = element.get(clark)
        return [] if value is None else [value]
    return [value for _, value in attribute_items(element, clark)]
