"""Which values each DTD node carries, shared by the document and the subscription generators.

Both generators must agree on it: a subscription may compare a node with a numeric literal only when
every document gives that node a number (otherwise XQuery raises FORG0001, which tests must not rely
on). So the kind of a node is a pure function of its DTD declaration and name:

* enumerated or ``#FIXED`` attributes take their declared values ("enum");
* ``ID`` attributes take unique names ("id"), ``IDREF``/``ENTITY`` attributes are never compared ("ref");
* ``NMTOKEN(S)`` attributes take numbers or single-token words ("number" / "token");
* other attributes and ``(#PCDATA)`` elements take numbers or words ("number" / "word"), decided by
  name hints (``price``, ``year``, ``id`` ... are numbers; ``title``, ``type``, ``area`` ... words), and
  by a stable hash of the name otherwise;
* elements with mixed content or ANY are "mixed" (their string value joins several texts), elements
  without text are "none".

Numbers are the integers 1..max_value written in decimal, so predicate selectivity follows MaxValue
(paper 000, section 6.1).
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Literal

from feedrouter.schema import DtdGraph

Kind = Literal["number", "word", "token", "enum", "id", "ref", "mixed", "none"]

#: Plain words: valid NMTOKENs, safe everywhere. "SF", "Stock" and "en" match the papers' examples.
WORDS: tuple[str, ...] = ("alpha", "beta", "gamma", "delta", "Stock", "SF", "news", "en", "red", "blue")
#: Words with spaces, markup characters, quotes and non-ASCII text: they test escaping and codepoints.
SPECIAL_WORDS: tuple[str, ...] = (
    "XML processing",
    "AT&T",
    "a < b",
    "x > y",
    'say "hi"',
    "it's",
    "café",
    "Zürich",
    "news\u2014wire",
    "Le\u00a0Monde",
    "東京",
)

_NUMERIC_HINTS = frozenset(
    [
        "id",
        "year",
        "price",
        "width",
        "height",
        "num",
        "count",
        "size",
        "length",
        "sequence",
        "page",
        "version",
        "level",
        "rank",
        "score",
        "value",
        "difficulty",
        "urg",
        "norm",
        "code",
        "td",
    ]
)
_WORD_HINTS = frozenset(
    [
        "title",
        "name",
        "type",
        "area",
        "lang",
        "source",
        "first",
        "last",
        "author",
        "editor",
        "publisher",
        "subject",
        "city",
        "country",
        "person",
        "org",
        "caption",
        "credit",
        "tagline",
        "affiliation",
        "keyword",
        "hl1",
        "hl2",
        "em",
        "p",
        "content",
        "style",
        "matter",
        "string",
        "units",
    ]
)
_TOKEN_SPLIT = re.compile(r"[.\-_:]")


@dataclass(frozen=True)
class Domain:
    """The kind of value a node carries and, for "enum", the values it can take."""

    kind: Kind
    values: tuple[str, ...] = ()

    @property
    def comparable(self) -> bool:
        """True when predicates may compare the node with a literal."""
        return self.kind in ("number", "word", "token", "enum")


def numeric_name(name: str) -> bool:
    """Whether a CDATA attribute or text element named ``name`` carries numbers (see module doc)."""
    local = name.rsplit(":", 1)[-1].lower()
    tokens = set(_TOKEN_SPLIT.split(local))
    if tokens & _NUMERIC_HINTS:
        return True
    if tokens & _WORD_HINTS:
        return False
    # A stable hash (not hash(), which is salted per process) keeps both generators in agreement.
    return zlib.crc32(local.encode("utf-8")) % 2 == 0


def attribute_domain(graph: DtdGraph, element: str, attr: str) -> Domain:
    """The values attribute ``attr`` of ``element`` takes in generated documents."""
    decl = graph.attribute(element, attr)
    if decl is None:
        return Domain("none")
    if decl.default == "fixed" and decl.default_value is not None:
        return Domain("enum", (decl.default_value,))
    if decl.type in ("enumeration", "notation"):
        return Domain("enum", decl.values)
    if decl.type == "id":
        return Domain("id")
    if decl.type in ("idref", "idrefs", "entity", "entities"):
        return Domain("ref")
    if numeric_name(attr):
        return Domain("number")
    return Domain("token" if decl.type.startswith("nmtoken") else "word")


def element_domain(graph: DtdGraph, element: str) -> Domain:
    """The values the string value of ``element`` takes in generated documents."""
    decl = graph.declaration(element)
    if decl.text_only:
        return Domain("number" if numeric_name(element) else "word")
    return Domain("mixed" if graph.has_text(element) else "none")


def is_namespace_attribute(name: str) -> bool:
    """``xmlns`` and ``xmlns:p`` are declarations, not attributes, in the XPath data model."""
    return name == "xmlns" or name.startswith("xmlns:")
