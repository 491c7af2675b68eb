"""Residual conditions: what the NFA and the path-tuple operators leave to a look at the tree.

Conditions the shared operators do not decide (string functions, ``count()``, negations and
disjunctions that cannot be split, positional predicates) are evaluated here on the document tree,
after the NFA has found the candidate nodes: :func:`holds` checks a condition with a node as its
context item, :func:`survives` whether a node passes its step's positional predicates. Both follow
XQuery 3.1: general comparisons are existential; a string function whose argument holds more than one
item raises XPTY0004 in XQuery, and here that call's condition does not hold (the same deliberate
difference as FORG0001, see :mod:`feedrouter.plan.values`).

Every element looked at is charged to the document's work budget, so a hostile subscription on a
big document is refused (FR205) rather than left to run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from lxml import etree

from feedrouter.engine.document import attribute_values, iter_text_nodes
from feedrouter.engine.nfa import tag_matches
from feedrouter.lang import ast
from feedrouter.lang.ast import Axis, is_positional
from feedrouter.lang.regex import RegexTimeout
from feedrouter.plan.functions import STRING_FUNCTIONS, matches_literal
from feedrouter.plan.values import OPERATORS, compare

#: A document may abandon this many regular-expression searches before it is refused (FR205).
REGEX_TIMEOUTS_PER_DOCUMENT = 8

if TYPE_CHECKING:  # the context imports this module to check residual tests
    from feedrouter.plan.context import DocumentContext

Element = etree._Element
_ANY_ELEMENT = etree.Element  # lxml's tag filter for "elements only"
_ORDER = OPERATORS  # general comparisons of one value with one value


class CardinalityError(Exception):
    """A string function's argument held more than one item (XPTY0004 in XQuery)."""


def holds(
    ctx: DocumentContext, element: Element, condition: ast.Condition, position: int = 0, size: int = 0
) -> bool:
    """Whether ``condition`` is true with ``element`` as the context item (and, in a step's
    predicate, the context position and size)."""
    kind = condition.__class__
    if kind is ast.Comparison:
        assert isinstance(condition, ast.Comparison)
        return any(compare(v, condition.op, condition.literal) for v in values(ctx, element, condition.path))
    if kind is ast.Exists:
        assert isinstance(condition, ast.Exists)
        return bool(values(ctx, element, condition.path))
    if kind is ast.And:
        assert isinstance(condition, ast.And)
        return all(holds(ctx, element, t, position, size) for t in condition.terms)
    if kind is ast.Or:
        assert isinstance(condition, ast.Or)
        return any(holds(ctx, element, t, position, size) for t in condition.terms)
    if kind is ast.Not:
        assert isinstance(condition, ast.Not)
        return not holds(ctx, element, condition.operand, position, size)
    if kind is ast.ReachedFrom:
        assert isinstance(condition, ast.ReachedFrom)
        return ctx.id_of(element) in ctx.reached_set(condition)
    if kind is ast.UpwardTest:  # inside or/not: the same walk of the recorded parents
        assert isinstance(condition, ast.UpwardTest)
        return ctx.upward_holds(ctx.id_of(element), condition)
    if kind is ast.Member:  # inside or/not: the same shared node set, by the element's id
        assert isinstance(condition, ast.Member)
        return ctx.id_of(element) in ctx.member_set(condition.path)
    if kind is ast.SelfTest:
        assert isinstance(condition, ast.SelfTest)
        return condition.name is None or tag_matches(condition.name.clark, element.tag)
    if kind is ast.Position:
        assert isinstance(condition, ast.Position)
        bound = size if condition.index is None else condition.index
        return _ORDER[condition.op](position, bound)
    try:
        if kind is ast.BooleanCall:
            assert isinstance(condition, ast.BooleanCall)
            call = condition.call
            literals = tuple(str(lit.value) for lit in call.literals)
            return matches_literal(call.name, string_argument(ctx, element, call), literals)
        assert isinstance(condition, ast.CallComparison)
        value = call_value(ctx, element, condition.call)
        return _ORDER[condition.op](value, condition.literal.value)
    except CardinalityError:
        return False
    except RegexTimeout:
        # the search was abandoned; charged as a large share of the budget, so that a pathological
        # pattern gets the document refused (FR205) after a few nodes instead of stalling the task
        ctx.charge(max(1, ctx.max_work // REGEX_TIMEOUTS_PER_DOCUMENT))
        return False


def call_value(ctx: DocumentContext, element: Element, call: ast.Call) -> str | float:
    """The one value a string function or ``count()`` gives for ``element``."""
    if call.name == "count":
        arg = call.arg
        if isinstance(arg, ast.Call):
            return 1.0
        return float(len(values(ctx, element, arg)))
    return STRING_FUNCTIONS[call.name](string_argument(ctx, element, call))


def string_argument(ctx: DocumentContext, element: Element, call: ast.Call) -> str:
    """A string function's argument atomized: "" for the empty sequence, XPTY0004 past one item."""
    arg = call.arg
    if isinstance(arg, ast.Call):
        value = call_value(ctx, element, arg)
        return value if isinstance(value, str) else _number_string(value)
    found = values(ctx, element, arg)
    if len(found) > 1:
        raise CardinalityError
    return found[0] if found else ""


def _number_string(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


# -- paths -------------------------------------------------------------------------------------------


def values(ctx: DocumentContext, element: Element, path: ast.RelPath | ast.AbsPath) -> list[str]:
    """The atomized values of the nodes ``path`` selects from ``element``: one per distinct node
    (an element's string value, an attribute's value, a text node's text)."""
    if isinstance(path, ast.AbsPath):
        nodes = _from_document(ctx, element, path.steps)
        tail: ast.Tail | None = None
    else:
        nodes = [element]
        for step in path.steps:
            nodes = _step(ctx, nodes, step)
            if not nodes:
                return []
        tail = path.tail
    if tail is None:
        return [ctx.string_value(ctx.id_of(node)) for node in nodes]
    if isinstance(tail, ast.AttributeTest):
        name = tail.name.clark
        return [v for node in nodes for v in attribute_values(node, name)]
    return [text for node in nodes for _, text in iter_text_nodes(node)]


def _from_document(ctx: DocumentContext, element: Element, steps: tuple[ast.Step, ...]) -> list[Element]:
    """An absolute path's elements: its first step from the document node, then the rest."""
    root = element.getroottree().getroot()
    first = steps[0]
    tag = _tag(first)
    if first.axis is Axis.CHILD:
        candidates: Iterable[Element] = [root] if tag is _ANY_ELEMENT or tag_matches(tag, root.tag) else []
    else:
        candidates = root.iter(tag)
    found = list(candidates)
    ctx.charge(len(found) + 1)
    nodes = _filtered(ctx, found, first)
    for step in steps[1:]:
        nodes = _step(ctx, nodes, step)
    return nodes


def _step(ctx: DocumentContext, contexts: list[Element], step: ast.Step) -> list[Element]:
    """The distinct elements one step selects from the context elements."""
    tag = _tag(step)
    found: dict[Element, None] = {}
    for node in contexts:
        candidates = node.iterdescendants(tag) if step.axis is Axis.DESCENDANT else node.iterchildren(tag)
        found.update(dict.fromkeys(candidates))
    ctx.charge(len(found) + len(contexts))
    return _filtered(ctx, list(found), step)


def _filtered(ctx: DocumentContext, nodes: list[Element], step: ast.Step) -> list[Element]:
    if not step.predicates:
        return nodes
    if any(is_positional(p) for p in step.predicates):
        return [node for node in nodes if survives(ctx, node, step)]
    return [node for node in nodes if all(holds(ctx, node, p) for p in step.predicates)]


def _tag(step: ast.Step) -> Any:
    return _ANY_ELEMENT if step.name is None else step.name.clark


# -- positions -----------------------------------------------------------------------------------


def survives(ctx: DocumentContext, element: Element, step: ast.Step) -> bool:
    """Whether ``element`` is among what ``step`` (its name test and all its predicates) selects
    from its parent: positions count the parent's children that match the name test and passed the
    step's earlier predicates. That is XPath's rule for ``a/p[1]`` and for ``//p[1]`` alike, since
    ``//`` abbreviates ``/descendant-or-self::node()/``. Computed once per (step, parent) and document."""
    parent = element.getparent()
    memo = ctx.caches.survivors
    key = (id(step), parent)  # None: the root element, the document node's only element child
    kept = memo.get(key)
    if kept is None:
        kept = memo[key] = _survivors(ctx, parent, element, step)
    return element in kept


def recorded_survives(step: ast.Step) -> Callable[[DocumentContext, int], bool] | None:
    """:func:`survives` for an element the NFA matched (by id), from the sibling positions the run
    recorded while streaming (``Matches.ordinals``): for a step whose first predicate is its only
    positional one and whose name test is a name or ``*``, the element's position is its ordinal
    among its parent's children of that name (or all its element children) and the size their count.
    None where that does not hold (``p[@n][1]``, ``*:p[1]``): the tree is walked then."""
    first, rest = step.predicates[0], step.predicates[1:]
    name = step.name
    if not is_positional(first) or any(is_positional(p) for p in rest):
        return None
    if name is not None and ast.ANY in (name.uri, name.local):
        return None
    by_name = name is not None
    bounds = _position_bounds(first)

    def check(ctx: DocumentContext, nid: int) -> bool:
        matches = ctx.matches
        ordinals = matches.ordinals if by_name else matches.element_ordinals
        if ordinals is None:  # a run without positions (a router unpickled from an older version)
            return survives(ctx, ctx.nodes[nid], step)
        counts = matches.child_counts[matches.parents[nid]]
        size = counts[matches.tags[nid]] if by_name else counts[""]
        position = ordinals[nid]
        ctx.charge(1)
        if bounds is not None:  # [1], [last()], [position() <= 3]: no look at the element at all
            if not all(_ORDER[op](position, size if index is None else index) for op, index in bounds):
                return False
            if not rest:
                return True
        element = ctx.nodes[nid]
        if bounds is None and not holds(ctx, element, first, position, size):
            return False
        return all(holds(ctx, element, p) for p in rest)

    return check


def _position_bounds(condition: ast.Condition) -> tuple[tuple[ast.CompOp, float | None], ...] | None:
    """A predicate of positions only (``[2]``, ``[position() > 1 and position() < 4]``) as its
    (operator, bound) pairs, ``None`` standing for ``last()``; None for any other predicate."""
    terms = condition.terms if isinstance(condition, ast.And) else (condition,)
    if not all(isinstance(t, ast.Position) for t in terms):
        return None
    return tuple((t.op, t.index) for t in terms if isinstance(t, ast.Position))


def _survivors(
    ctx: DocumentContext, parent: Element | None, element: Element, step: ast.Step
) -> set[Element]:
    current = [element] if parent is None else list(parent.iterchildren(_tag(step)))
    ctx.charge(len(current) + 1)
    for predicate in step.predicates:
        size = len(current)
        current = [node for i, node in enumerate(current, 1) if holds(ctx, node, predicate, i, size)]
    return set(current)
