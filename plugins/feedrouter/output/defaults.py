"""Attribute defaults a document declares in its internal subset, made part of its elements.

libxml2 leaves an attribute that a document's ``<!ATTLIST>`` defaults (and the element does not
carry) out of the tree, yet lxml's attribute look-up answers with the default: subscriptions match
on such attributes but the copies they deliver would lack them. XQuery processors (Saxon) see
defaulted attributes as ordinary ones, in tests and in results alike, so the router sets them on the
parsed tree before anything is evaluated or serialized.

lxml lists no attribute declaration of an element the DTD does not also declare, so the defaults
are read the way libxml2 applies them: the (rare) document whose internal subset may declare
attributes is parsed a second time with libxml2's attribute defaulting on, and the attributes that
parse adds are copied onto the routed tree, element by element. A document without a DOCTYPE (most
of them) is told by its parsed tree alone; one with a DOCTYPE in an encoding that spells ASCII as
ASCII (UTF-8, ISO-8859-1, ...) by a search of its bytes for ``<!ATTLIST``; one in UTF-16 or UCS-4,
whose bytes never hold that, is always parsed a second time. Setting an attribute looks through those
its element has, so the look-ups are counted and bounded (FR203 past
:data:`~feedrouter.limits.MAX_DEFAULTING_LOOKUPS`), as libxml2 bounds the defaults' amplification.

Only the document's own internal subset counts: the feed DTD's element declarations never reach
documents (see :class:`feedrouter.engine.document.DocumentParser`), as a processor reading the
document alone would not see them either. The second parse touches no file and no network: every
external subset or entity it asks for is answered with the feed's entity declarations or nothing.
"""

from __future__ import annotations

from lxml import etree

from feedrouter.engine.document import all_attributes, huge_tree_is_safe
from feedrouter.errors import DocumentError
from feedrouter.limits import MAX_DEFAULTING_LOOKUPS

_ATTLIST = b"<!ATTLIST"
_UTF8_BOM = b"\xef\xbb\xbf"
#: How a document in an encoding that spells ASCII as ASCII begins: an XML declaration, a DOCTYPE,
#: the document element or white space (XML 1.0, appendix F).
_ASCII_STARTS = (b"<", b" ", b"\t", b"\n", b"\r")


class _EntitiesOnly(etree.Resolver):
    """Answers every external request with the feed's general entities (or nothing)."""

    def __init__(self, entity_text: str | None) -> None:
        super().__init__()
        self._text = entity_text or ""

    # Unannotated: lxml-stubs 0.5 gives Resolver.resolve no context argument and resolve_string a
    # required base_url, neither of which lxml has.
    def resolve(self, system_url, public_id, context):
        return self.resolve_string(self._text, context)


def complete_attribute_defaults(
    root: etree._Element,
    document: bytes | bytearray | memoryview,
    entity_text: str | None = None,
    source: str | None = None,
) -> int:
    """Set on the elements of ``root`` (the parse of ``document``) the attributes its internal
    subset defaults and they do not carry; returns how many were set.

    Args:
        root: the routed tree's root, parsed from ``document``.
        document: the document's bytes.
        entity_text: the feed's general entity declarations, as the routed parse had them.
        source: the document's name, for the error refusing it.

    Raises:
        DocumentError: FR203 when setting the defaults would take more than
            :data:`~feedrouter.limits.MAX_DEFAULTING_LOOKUPS` attribute look-ups (nothing is set).
    """
    # Without a DOCTYPE (most documents) nothing is declared: told by the tree, the bytes unread.
    if not root.getroottree().docinfo.doctype:  # type: ignore[attr-defined]  # not in lxml-stubs 0.5
        return 0
    data = document if document.__class__ is bytes or isinstance(document, bytearray) else bytes(document)
    # Bytes in UTF-16 or UCS-4 never hold the ASCII ones: such a document is parsed again anyway.
    if _spells_ascii(data) and _ATTLIST not in data:
        return 0
    defaulted = _parse_with_defaults(data, entity_text)
    if defaulted is None:
        return 0
    missing = _missing_defaults(root, defaulted, source)
    for element, attributes in missing:
        for key, value in attributes:
            element.set(key, value)
    return sum(len(attributes) for _, attributes in missing)


_Defaults = list[tuple[etree._Element, list[tuple[str, str]]]]


def _missing_defaults(root: etree._Element, defaulted: etree._Element, source: str | None) -> _Defaults:
    """The elements of ``root`` that lack attributes their parse with defaults (``defaulted``) has,
    each with those attributes; found whole before any is set, so a refused document is left alone."""
    missing: _Defaults = []
    lookups = 0
    for element, full in zip(root.iter(etree.Element), defaulted.iter(etree.Element), strict=False):
        if full.tag != element.tag:  # never expected: the two parses disagree; leave the rest alone
            break
        carried = element.keys()  # not `in attrib`: lxml answers that from the DTD defaults too
        if len(full.keys()) == len(carried):
            continue
        present = set(carried)
        # not items(): it is quadratic on an element with many attributes
        attributes = [(key, value) for key, value in all_attributes(full) if key not in present]
        lookups += len(attributes) * (len(carried) + len(attributes))
        if lookups > MAX_DEFAULTING_LOOKUPS:
            raise _too_many_lookups(source)
        missing.append((element, attributes))
    return missing


def _too_many_lookups(source: str | None) -> DocumentError:
    return DocumentError(
        "the document's attribute defaults would take more than "
        f"{MAX_DEFAULTING_LOOKUPS} attribute look-ups to set (too many defaults on elements with "
        "many attributes)",
        code="FR203",
        source=source,
    )


def _spells_ascii(data: bytes | bytearray) -> bool:
    """Whether the document's bytes spell ASCII characters as ASCII does, told by its first bytes as
    XML's encoding detection tells (appendix F): UTF-16 and UCS-4 put zero bytes or their own byte
    order mark there, EBCDIC other bytes than an ASCII document may start with."""
    head = data[3:7] if data.startswith(_UTF8_BOM) else data[:4]
    return head[:1] in _ASCII_STARTS and b"\x00" not in head


def _parse_with_defaults(data: bytes | bytearray, entity_text: str | None) -> etree._Element | None:
    parser = etree.XMLParser(
        resolve_entities="internal",  # type: ignore[arg-type]  # lxml-stubs 0.5 allows only a bool, lxml also "internal"
        no_network=True,
        load_dtd=True,
        attribute_defaults=True,
        huge_tree=huge_tree_is_safe(),
        remove_blank_text=False,
    )
    parser.resolvers.add(_EntitiesOnly(entity_text))
    try:
        return etree.fromstring(bytes(data), parser)
    except etree.XMLSyntaxError:
        return None  # the routed parse succeeded; without the defaults the document still routes
