"""The abstract syntax of subscriptions (see SUBSCRIPTIONS.md).

Names are resolved against the prolog while parsing, so every element and attribute name here is a
:class:`QName` with its namespace URI. All nodes are frozen dataclasses: plain data that pickles
cleanly and compares by value (identical paths are found by equality).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from feedrouter.errors import Span


class Axis(Enum):
    CHILD = "/"
    DESCENDANT = "//"


class CompOp(Enum):
    EQ = "="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="

    @property
    def flipped(self) -> CompOp:
        """The operator with its operands swapped: ``5 < @a`` is ``@a > 5``."""
        return _FLIPPED[self]


_FLIPPED = {
    CompOp.EQ: CompOp.EQ,
    CompOp.NE: CompOp.NE,
    CompOp.LT: CompOp.GT,
    CompOp.LE: CompOp.GE,
    CompOp.GT: CompOp.LT,
    CompOp.GE: CompOp.LE,
}


@dataclass(frozen=True)
class QName:
    """A resolved name; ``uri`` is "" for no namespace."""

    uri: str
    local: str
    prefix: str = field(default="", compare=False)

    @property
    def clark(self) -> str:
        """The name as lxml spells element and attribute names: ``{uri}local`` or ``local``."""
        return f"{{{self.uri}}}{self.local}" if self.uri else self.local

    def __str__(self) -> str:
        return f"{self.prefix}:{self.local}" if self.prefix else self.local


@dataclass(frozen=True)
class Literal:
    """A string or numeric literal; numeric ones compare as xs:double, as XQuery does with untyped data."""

    value: str | float
    span: Span | None = field(default=None, compare=False)

    @property
    def numeric(self) -> bool:
        return isinstance(self.value, float)


@dataclass(frozen=True)
class AttributeTest:
    """A final ``@name`` step."""

    name: QName


@dataclass(frozen=True)
class TextTest:
    """A final ``text()`` step."""


Tail = AttributeTest | TextTest


@dataclass(frozen=True)
class Step:
    """One element location step: axis, name test (``None`` is the wildcard ``*``) and predicates."""

    axis: Axis
    name: QName | None
    predicates: tuple[Condition, ...] = ()
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RelPath:
    """A path relative to a context node (a predicate's ``.`` or a FLWR's bound variable).

    ``.`` or ``$s`` alone has no steps and no tail; ``@a`` and ``text()`` have only a tail.
    """

    steps: tuple[Step, ...] = ()
    tail: Tail | None = None
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AbsPath:
    """An absolute path of element steps (``/a//b[...]``): binding paths and filter subscriptions."""

    steps: tuple[Step, ...]
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Comparison:
    """``path op literal``: existential over the nodes ``path`` selects, as a general comparison."""

    path: RelPath
    op: CompOp
    literal: Literal
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Exists:
    """A path used as a condition: true when it selects at least one node."""

    path: RelPath
    span: Span | None = field(default=None, compare=False)


Condition = Comparison | Exists


@dataclass(frozen=True)
class Enclosed:
    """``{ $s/a, $s//b }`` inside a constructor: paths relative to the bound variable."""

    paths: tuple[RelPath, ...]
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class TextContent:
    """Literal character data written inside a constructor (boundary whitespace already dropped)."""

    text: str


@dataclass(frozen=True)
class Constructor:
    """A direct element constructor ``<name>…</name>`` without attributes."""

    name: QName
    content: tuple[Constructor | Enclosed | TextContent, ...] = ()
    span: Span | None = field(default=None, compare=False)


Return = Constructor | RelPath


@dataclass(frozen=True)
class Flwr:
    """``for $var in binding [where c1 and c2 ...] return ret``, optionally inside one constant element."""

    var: str
    binding: AbsPath
    where: tuple[Condition, ...]
    ret: Return
    wrapper: QName | None = None
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Filter:
    """A filter subscription: one absolute path; its result is the nodes it selects, in document order."""

    path: AbsPath
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Subscription:
    """A parsed subscription text with its namespace prolog."""

    body: Flwr | Filter
    namespaces: tuple[tuple[str, str], ...] = ()
    default_element_namespace: str = ""
    text: str = field(default="", compare=False)
