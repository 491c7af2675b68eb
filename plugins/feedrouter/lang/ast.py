"""The abstract syntax of subscriptions (see SUBSCRIPTIONS.md).

Names are resolved against the prolog while parsing, so every element and attribute name here is a
:class:`QName` with its namespace URI. All nodes are frozen dataclasses: plain data that pickles
cleanly and compares by value (identical paths are found by equality).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum

from feedrouter.errors import Span


class Axis(Enum):
    """A step's axis, spelled as the printer writes it before the name test. The backward axes
    (issue 15) select elements only, except ``..`` (``parent::node()``), which selects the document
    node above the root element; the planner turns them into forward constraints
    (:mod:`feedrouter.plan.backward`)."""

    CHILD = "/"
    DESCENDANT = "//"
    PARENT = "/parent::"
    PARENT_NODE = "/.."  # no name test: '..'
    ANCESTOR = "/ancestor::"
    ANCESTOR_OR_SELF = "/ancestor-or-self::"

    @property
    def backward(self) -> bool:
        return self in _BACKWARD


_BACKWARD = frozenset({Axis.PARENT, Axis.PARENT_NODE, Axis.ANCESTOR, Axis.ANCESTOR_OR_SELF})


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


#: The wildcard part of a name test: ``QName(ANY, "creator")`` is ``*:creator`` (any namespace, or
#: none), ``QName(uri, ANY)`` is ``p:*`` (any name in ``uri``). Their Clark names are lxml's own
#: spellings, ``{*}creator`` and ``{uri}*``. A plain ``*`` step stays ``Step.name is None``; the parser
#: refuses a prolog binding a prefix to the URI "*", so the marker is never a real namespace.
ANY = "*"

#: The namespace of ``xml:lang`` and ``xml:space``, bound to ``xml`` everywhere.
XML_NAMESPACE = "http://www.w3.org/XML/1998/namespace"


@dataclass(frozen=True)
class QName:
    """A resolved name; ``uri`` is "" for no namespace."""

    uri: str
    local: str
    prefix: str = field(default="", compare=False)

    @property
    def clark(self) -> str:
        """The name as lxml spells element and attribute names: ``{uri}local`` or ``local``; ``{}*``
        is ``Q{}*``, any name in no namespace (``*`` alone is any name at all)."""
        return f"{{{self.uri}}}{self.local}" if self.uri or self.local == ANY else self.local

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
    # the variable a join subscription's path starts from (``$book/title``); "" elsewhere, where a
    # FLWR has one variable. Not compared: paths are shared by what they select from their context.
    var: str = field(default="", compare=False)


@dataclass(frozen=True)
class AbsPath:
    """An absolute path of element steps (``/a//b[...]``): binding paths and filter subscriptions.
    A filter's path may end in ``text()`` (``tail``): it delivers those text nodes."""

    steps: tuple[Step, ...]
    span: Span | None = field(default=None, compare=False)
    tail: TextTest | None = None


@dataclass(frozen=True)
class Union:
    """``p1 | p2 | ...`` of absolute paths as a filter subscription: the nodes any of them selects,
    each once, in document order (XQuery's ``|``)."""

    paths: tuple[AbsPath, ...]
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Comparison:
    """``path op literal``: existential over the nodes ``path`` selects, as a general comparison.

    A comparison with a literal sequence (``category = ("Sport", "Culture")``) is parsed into an
    :class:`Or` of comparisons, one per literal: general comparisons are existential on both sides,
    so the two are the same for every operator.
    """

    path: RelPath
    op: CompOp
    literal: Literal
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Exists:
    """A path used as a condition: true when it selects at least one node. ``exists(p)`` and a union
    of relative paths used as a condition (``[a | b]``, parsed as an :class:`Or` of these) too."""

    path: RelPath
    span: Span | None = field(default=None, compare=False)


#: Functions of one string argument (a path, ``.``, or nothing for ``.``) giving a string or number.
STRING_FUNCTIONS = ("lower-case", "upper-case", "normalize-space", "string-length", "string")
#: Functions testing a string argument against a literal: ``contains(headline, "merger")``;
#: ``matches`` takes an optional third literal, its flags.
MATCH_FUNCTIONS = ("contains", "starts-with", "ends-with", "matches")


@dataclass(frozen=True)
class Call:
    """A function call on one argument path. ``name`` is one of :data:`STRING_FUNCTIONS`,
    :data:`MATCH_FUNCTIONS` or ``count``.

    ``arg`` is relative to the context (``.`` is ``RelPath()``; in a where clause, to the bound
    variable), or absolute where the text says so (``count(//p)``); an argument may itself be a call
    (``contains(lower-case(title), "x")``).
    ``literals`` are the further arguments of a match function (the needle; the pattern and its
    flags). The argument of a string function must be at most one item in XQuery (XPTY0004 otherwise,
    a dynamic error), which feedrouter treats like FORG0001: that call's condition does not hold.
    Every function of the subset gives exactly one value, the empty argument included
    (``lower-case(())`` is ``""``, ``string-length(())`` is 0).
    """

    name: str
    arg: RelPath | AbsPath | Call
    literals: tuple[Literal, ...] = ()
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class BooleanCall:
    """A boolean function used as a condition: ``contains(headline, "merger")``, ``matches(., "^a", "i")``."""

    call: Call
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class CallComparison:
    """``call op literal``: ``lower-case(@lang) = "en"``, ``string-length(title) > 5``,
    ``count(.//p) > 3``. The parser checks that a string function is compared with a string and a
    numeric one with a number (XPTY0004 in XQuery otherwise)."""

    call: Call
    op: CompOp
    literal: Literal
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Position:
    """``position() op n`` in a step predicate: ``[1]`` is ``Position(EQ, 1.0)``, ``[last()]`` is
    ``Position(EQ, None)`` (``None`` stands for ``last()``), ``[position() <= 3]`` is
    ``Position(LE, 3.0)``. Positions count the step's matches from its context node after the
    step's earlier predicates (XPath's rule); for ``//p[1]`` that is among its parent's children."""

    op: CompOp
    index: float | None
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SelfTest:
    """``self::name`` where it tests the context node itself: ``//*[self::a or self::b]``; ``name``
    None is ``self::*``. A ``self::`` step after another step narrows that step instead, and
    ``descendant-or-self::`` becomes a ``self::`` and a ``//`` alternative (the parser rewrites both)."""

    name: QName | None
    span: Span | None = field(default=None, compare=False)
    # a join's variable whose node it tests (``$b/self::item``); "" elsewhere (as RelPath.var)
    var: str = field(default="", compare=False)


@dataclass(frozen=True)
class Member:
    """The context node is among the nodes an absolute path selects. The planner writes backward
    steps as these (``[../title]`` on a ``p`` is ``p`` being in ``//*[title]/p``): an x-dag edge
    made forward, joined on the node; it never comes from the parser."""

    path: AbsPath
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class UpStep:
    """(planner's) one backward step walked over the parent ids the run recorded: its axis, its name
    test and its predicates in order, each a :class:`Member` (the node among a forward path's) or a
    :class:`Position` (counted nearest first, as reverse axes count)."""

    axis: Axis
    name: QName | None
    filters: tuple[Member | Position, ...] = ()


@dataclass(frozen=True)
class UpwardTest:
    """(planner's) a condition path starting with backward steps that carry positions
    (``[ancestor::sec[1]/title = "x"]``): the upper nodes are walked from the recorded parent ids,
    and one of them must be among ``below``'s nodes (the rest of the path as a forward path
    ``//sec[title = "x"]``; None: any upper node will do)."""

    steps: tuple[UpStep, ...]
    below: Member | None = None
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class ReachedFrom:
    """(planner's) the node is one that backward steps with positions reach from the nodes of an
    absolute path (``//p/ancestor::sec[1]``: the nearest ``sec`` of some ``p``): per document, the
    steps are walked over the recorded parents from each of ``source``'s nodes."""

    source: Member
    steps: tuple[UpStep, ...]
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Not:
    """``not(c)``; ``empty(p)`` is ``Not(Exists(p))``."""

    operand: Condition
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class And:
    """``c1 and c2 ...`` where it is nested (under ``or`` or ``not``); a predicate's or a ``where``'s
    top-level conjuncts stay a plain tuple of conditions, as before."""

    terms: tuple[Condition, ...]
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Or:
    """``c1 or c2 ...``: the planner turns these into disjunctive normal form where it may."""

    terms: tuple[Condition, ...]
    span: Span | None = field(default=None, compare=False)


#: The library module a join subscription imports (``import module namespace fr = "…";``); feedrouter
#: ships it (``feedrouter/join/stream.xq``), so that Saxon runs a join subscription's text unchanged.
STREAM_MODULE = "urn:feedrouter:stream:1"


class TemporalKind(Enum):
    """The one temporal term of a join (paper 001): ``fr:followed-by($a, $b, d)`` is
    ``0 < t(b) - t(a) <= d``; ``fr:within($a, $b, d)`` is ``|t(b) - t(a)| <= d``, different documents."""

    FOLLOWED_BY = "followed-by"
    WITHIN = "within"


@dataclass(frozen=True)
class ValueJoin:
    """``$blog/author = $book/author``: some node of one path has the string value of some node of
    the other (a general comparison); ``left`` is from the join's first variable."""

    left: RelPath
    right: RelPath
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Temporal:
    """``fr:followed-by($a, $b, "PT6H")`` or ``fr:within(...)``: ``first`` and ``second`` are the
    variables in the order written, ``window`` the duration's text."""

    kind: TemporalKind
    first: str
    second: str
    window: str
    span: Span | None = field(default=None, compare=False)


Condition = (
    Comparison
    | Exists
    | BooleanCall
    | CallComparison
    | Position
    | SelfTest
    | Member
    | UpwardTest
    | ReachedFrom
    | Not
    | And
    | Or
    | ValueJoin
    | Temporal
)


def mentions(node: object, kind: type) -> bool:
    """Whether a syntax tree (a subscription, or any node of one) holds a node of class ``kind``."""
    if isinstance(node, kind):
        return True
    if isinstance(node, tuple):
        return any(mentions(item, kind) for item in node)
    if is_dataclass(node) and not isinstance(node, type):
        return any(mentions(getattr(node, f.name), kind) for f in fields(node) if f.compare)
    return False


def is_positional(condition: Condition) -> bool:
    """Whether a condition reads the context position or size (a Position anywhere in it)."""
    if isinstance(condition, Position):
        return True
    if isinstance(condition, (And, Or)):
        return any(is_positional(t) for t in condition.terms)
    if isinstance(condition, Not):
        return is_positional(condition.operand)
    return False


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
class CommentContent:
    """A direct comment constructor ``<!-- text -->`` inside a constructor."""

    text: str


@dataclass(frozen=True)
class AttributeConstructor:
    """``name="value"`` on a direct element constructor. ``parts`` is the attribute value template:
    literal strings (references resolved, ``{{``/``}}`` unescaped, literal whitespace normalized to
    spaces, as XQuery does) and enclosed paths (``year="{ $b/@year }"``) whose values are joined by
    single spaces. A constant value is one string."""

    name: QName
    parts: tuple[str | Enclosed, ...]

    @property
    def constant(self) -> str | None:
        """The value when it has no enclosed expression, else None."""
        return (
            "".join(p for p in self.parts if isinstance(p, str))
            if all(isinstance(p, str) for p in self.parts)
            else None
        )


@dataclass(frozen=True)
class Constructor:
    """A direct element constructor ``<name a="v">…</name>``."""

    name: QName
    content: tuple[Constructor | Enclosed | TextContent | CommentContent, ...] = ()
    span: Span | None = field(default=None, compare=False)
    attributes: tuple[AttributeConstructor, ...] = ()
    # xmlns="uri" and xmlns:p="uri" as written, ("" for the default): in scope for the element's
    # name, attributes and content (paths in its enclosed expressions too), and serialized on it
    namespaces: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Items:
    """``return ($i/title, $i/link)`` or ``return (<a/>, $i/b)``: the items in order, concatenated."""

    items: tuple[Constructor | RelPath, ...]
    span: Span | None = field(default=None, compare=False)


Return = Constructor | RelPath | Items


@dataclass(frozen=True)
class OrderSpec:
    """One ``order by`` key: a path from the bound variable (``$s/@date``, ``$s/price``, ``$s``),
    compared as strings by codepoint or, when the text wrote ``number(...)``, as doubles (NaN for a
    value that is not a number). ``empty_greatest`` is ``empty greatest``; ties keep document order."""

    path: RelPath
    descending: bool = False
    empty_greatest: bool = False
    numeric: bool = False
    # the planner's: a key starting upward (``$s/ancestor::sec[1]/@id``) walks these steps from the
    # bound node over the recorded parents, and ``path`` is the rest from there
    upward: tuple[UpStep, ...] = ()


@dataclass(frozen=True)
class Flwr:
    """``for $var in binding [where c1 and c2 ...] return ret``, optionally inside one constant element
    (``wrapper``: its name, constant attributes and namespace declarations; no content)."""

    var: str
    binding: AbsPath
    where: tuple[Condition, ...]
    ret: Return
    wrapper: Constructor | None = None
    span: Span | None = field(default=None, compare=False)
    order: tuple[OrderSpec, ...] = ()


@dataclass(frozen=True)
class Filter:
    """A filter subscription: an absolute path or a union of them; its result is the nodes selected,
    each once, in document order."""

    path: AbsPath | Union
    span: Span | None = field(default=None, compare=False)
    # the planner's: the document node is selected too when one of these selects something (the
    # root element under ``//a/..``); the parser never sets it
    document_if: tuple[AbsPath, ...] = ()


@dataclass(frozen=True)
class StreamBinding:
    """One side of a join: ``$book in fr:stream()//book`` (``feed`` "": the subscription's own feed)
    with the where conditions that read only this variable (its *block*, paper 001)."""

    var: str
    feed: str
    path: AbsPath
    where: tuple[Condition, ...] = ()
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class JoinFlwr:
    """An inter-document join subscription (issue 16): two stream bindings, equality value joins
    between them, one temporal term, and a return built from both variables (one result per
    qualifying pair of nodes, in the order of XQuery's nested ``for``)."""

    left: StreamBinding
    right: StreamBinding
    joins: tuple[ValueJoin, ...]
    temporal: Temporal
    ret: Return
    span: Span | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Subscription:
    """A parsed subscription text with its namespace prolog."""

    body: Flwr | Filter | JoinFlwr
    namespaces: tuple[tuple[str, str], ...] = ()
    default_element_namespace: str = ""
    text: str = field(default="", compare=False)
    version: str = ""  # the version declaration's (``xquery version "3.1";``), "" without one
    stream_prefix: str = ""  # the prefix a join subscription imports the stream module under
