"""Attribute defaults a document declares in its internal subset, made part of its elements.

libxml2 leaves an attribute that a document's ``<!ATTLIST>`` defaults (and the element does not
carry) out of the tree, yet lxml's attribute look-up answers with the default: subscriptions match
on such attributes but the copies they deliver would lack them. XQuery processors (Saxon) see
defaulted attributes as ordinary ones, in tests and in results alike, so the router sets them on the
parsed tree before anything is evaluated or serialized.

lxml lists no attribute declaration of an element the DTD does not also declare, so the defaults
are read the way libxml2 applies them: the (rare) document whose bytes hold ``<!ATTLIST`` is parsed
a second time with libxml2's attribute defaulting on, and the attributes that parse adds are copied
onto the routed tree, element by element. Every other document costs one substring search.

Only the document's own internal subset counts: the feed DTD's element declarations never reach
documents (see :class:`feedrouter.engine.document.DocumentParser`), as a processor reading the
document alone would not see them either. The second parse touches no file and no network: every
external subset or entity it asks for is answered with the feed's entity declarations or nothing.
"""

from __future__ import annotations

from lxml import etree

from feedrouter.engine.document import huge_tree_is_safe

_ATTLIST = b"<!ATTLIST"


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
    root: etree._Element, document: bytes | bytearray | memoryview, entity_text: str | None = None
) -> int:
    """Set on the elements of ``root`` (the parse of ``document``) the attributes its internal
    subset defaults and they do not carry; returns how many were set.

    Args:
        root: the routed tree's root, parsed from ``document``.
        document: the document's bytes.
        entity_text: the feed's general entity declarations, as the routed parse had them.
    """
    data = document if document.__class__ is bytes or isinstance(document, bytearray) else bytes(document)
    if _ATTLIST not in data:
        return 0
    defaulted = _parse_with_defaults(data, entity_text)
    if defaulted is None:
        return 0
    added = 0
    for element, full in zip(root.iter(etree.Element), defaulted.iter(etree.Element), strict=False):
        if full.tag != element.tag:  # never expected: the two parses disagree; leave the rest alone
            break
        carried = element.keys()  # not `in attrib`: lxml answers that from the DTD defaults too
        if len(full.keys()) == len(carried):
            continue
        present = set(carried)
        for key, value in full.items():
            if key not in present:
                element.set(key, value)
                added += 1
    return added


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
